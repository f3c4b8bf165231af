//! The `--workload` argument: a built-in pattern with options, or a workload file.
//!
//! ```text
//! stencil[:WxH][,bytes=SIZE][,rounds=N]                      64x72, 128KiB, 1 (4.2)
//! reduction:naive|tree[,ranks=N][,arrays=N][,bytes=SIZE][,root=N]   1024, 50, 4KiB, 0 (4.3)
//! ring[,ranks=N][,bytes=SIZE][,rounds=N]                     every node, 128KiB, 1 (4.4)
//! uniform,load=F[,ranks=N][,bytes=SIZE][,messages=N]         every node, 128KiB (4.4)
//! ring+background[,bytes=SIZE][,rounds=N][,load=F][,messages=N]         128KiB, 0.5, 4 (4.4)
//! PATH                                                       a workload file
//! ```
//!
//! `ring+background` is the two-job scenario of 4.4: a ring on the primary nodes of
//! [`super::node_split`] and uniform random background traffic on the others, both with
//! `bytes` messages. The thesis gives neither the background's load nor its length; ours
//! default to half the link and 4 messages per rank, which keeps it running through the
//! ring's exchange. Uniform traffic stops after `messages` or at the run's end time.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::reduction::{Reduction, ReductionKind};
use super::ring::Ring;
use super::stencil::Stencil;
use super::tiling::parse_dimensions;
use super::uniform::Uniform;
use super::units::{format_bytes, parse_bytes};
use super::TrafficError;
use crate::limits::{above_cap, MAX_MESSAGES_PER_RANK, MAX_MESSAGE_BYTES, MAX_RANKS};

/// A `--workload` argument, parsed: one of the built-in patterns of thesis chapter 4 with its
/// options, or a workload file (see the module doc for the syntax and defaults).
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSpec {
    /// The nearest-neighbour stencil of thesis 4.2.
    Stencil(Stencil),
    /// The reduction of thesis 4.3, naive or as a tree.
    Reduction(Reduction),
    /// The ring exchange of thesis 4.4 alone; `ranks: None` fills the job's nodes.
    Ring {
        /// Ranks (`None`: every node of the job).
        ranks: Option<u32>,
        /// Bytes of each message.
        bytes: u64,
        /// Rounds of the ring.
        rounds: u32,
    },
    /// Uniform random traffic (the background of thesis 4.4) alone.
    Uniform {
        /// Ranks (`None`: every node of the job).
        ranks: Option<u32>,
        /// Bytes of each message.
        bytes: u64,
        /// Offered load per rank as a fraction of the link rate, in (0, 1].
        load: f64,
        /// Messages per rank; `None`: until the run's end time.
        messages: Option<u64>,
    },
    /// The two-job scenario of thesis 4.4: a ring on the primary nodes and uniform background
    /// traffic on the others.
    RingWithBackground {
        /// Bytes of each message, both jobs.
        bytes: u64,
        /// Rounds of the ring.
        rounds: u32,
        /// Offered load of the background per rank, fraction of the link rate.
        load: f64,
        /// Background messages per rank.
        messages: u64,
    },
    /// A workload file (`traffic::file`).
    File(PathBuf),
}

impl WorkloadSpec {
    /// The forms `--workload` accepts, for help and error messages.
    pub const FORMS: &'static str = "stencil[:WxH][,bytes=SIZE][,rounds=N], \
        reduction:naive|tree[,ranks=N][,arrays=N][,bytes=SIZE][,root=N], \
        ring[,ranks=N][,bytes=SIZE][,rounds=N], \
        uniform,load=F[,ranks=N][,bytes=SIZE][,messages=N], \
        ring+background[,bytes=SIZE][,rounds=N][,load=F][,messages=N], or a workload file";

    /// The thesis' ring alone took 33.6 us (4.4): about three 128 KiB messages at 100 Gb/s.
    pub const BACKGROUND_RING_ROUNDS: u32 = 3;
    /// Background load when `ring+background` gives none: half the link (the thesis gives
    /// none).
    pub const BACKGROUND_LOAD: f64 = 0.5;
    /// Background messages per rank when `ring+background` gives none: enough to keep it
    /// running through the ring's exchange.
    pub const BACKGROUND_MESSAGES: u64 = 4;
}

impl FromStr for WorkloadSpec {
    type Err = TrafficError;

    fn from_str(text: &str) -> Result<Self, TrafficError> {
        let text = text.trim();
        parse(text).map_err(|reason| TrafficError::Spec(format!("workload '{text}': {reason}")))
    }
}

fn parse(text: &str) -> Result<WorkloadSpec, String> {
    let (head, options) = text.split_once(',').unwrap_or((text, ""));
    let (name, argument) = match head.split_once(':') {
        Some((name, argument)) => (name, Some(argument)),
        None => (head, None),
    };
    let mut options = Options::parse(options)?;
    let spec = match (name, argument) {
        ("stencil", argument) => {
            let (width, height) = match argument {
                None => (Stencil::THESIS_WIDTH, Stencil::THESIS_HEIGHT),
                Some(dims) => {
                    let (w, h) = parse_dimensions(dims)
                        .ok_or_else(|| format!("bad grid '{dims}': expected WxH, both positive"))?;
                    let ranks = u64::from(w) * u64::from(h);
                    if ranks > u64::from(MAX_RANKS) {
                        return Err(format!(
                            "grid {dims}: {}",
                            above_cap("a grid of", ranks, MAX_RANKS, "ranks")
                        ));
                    }
                    (w, h)
                }
            };
            WorkloadSpec::Stencil(Stencil {
                width,
                height,
                bytes: options.bytes(Stencil::DEFAULT_BYTES)?,
                rounds: options.count("rounds", 1)?,
                phase_ps: 0,
            })
        }
        ("reduction", Some(kind)) => {
            let kind = match kind {
                "naive" => ReductionKind::Naive,
                "tree" => ReductionKind::Tree,
                _ => {
                    return Err(format!(
                        "unknown reduction '{kind}': expected naive or tree"
                    ))
                }
            };
            let ranks = options.ranks()?.unwrap_or(Reduction::THESIS_RANKS);
            let root = options.number("root", 0)?;
            if root >= ranks {
                return Err(format!("root {root} is not one of the {ranks} ranks"));
            }
            WorkloadSpec::Reduction(Reduction {
                kind,
                ranks,
                arrays: options.count("arrays", Reduction::THESIS_ARRAYS)?,
                bytes: options.bytes(Reduction::THESIS_BYTES)?,
                root,
            })
        }
        ("ring", None) => WorkloadSpec::Ring {
            ranks: options.ranks()?,
            bytes: options.bytes(Ring::DEFAULT_BYTES)?,
            rounds: options.count("rounds", 1)?,
        },
        ("uniform", None) => WorkloadSpec::Uniform {
            ranks: options.ranks()?,
            bytes: options.bytes(Uniform::DEFAULT_BYTES)?,
            load: options
                .load()?
                .ok_or("uniform needs load=F, the offered load as a fraction of the link")?,
            messages: options.optional_count("messages")?,
        },
        ("ring+background", None) => WorkloadSpec::RingWithBackground {
            bytes: options.bytes(Ring::DEFAULT_BYTES)?,
            rounds: options.count("rounds", WorkloadSpec::BACKGROUND_RING_ROUNDS)?,
            load: options.load()?.unwrap_or(WorkloadSpec::BACKGROUND_LOAD),
            messages: options
                .optional_count("messages")?
                .unwrap_or(WorkloadSpec::BACKGROUND_MESSAGES),
        },
        ("reduction", None) => {
            return Err("a reduction needs its kind: reduction:naive or reduction:tree".to_string())
        }
        ("ring" | "uniform" | "ring+background", Some(_)) => {
            return Err(format!("{name} takes no ':' argument"))
        }
        _ if Path::new(text).is_file() => return Ok(WorkloadSpec::File(PathBuf::from(text))),
        _ => {
            return Err(format!(
                "not a known workload nor a file: expected {}",
                WorkloadSpec::FORMS
            ))
        }
    };
    options.finish(name)?;
    Ok(spec)
}

impl fmt::Display for WorkloadSpec {
    /// The canonical form, every option spelled out; it parses back to the same spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ranks = |ranks: &Option<u32>| ranks.map(|r| format!(",ranks={r}")).unwrap_or_default();
        match self {
            WorkloadSpec::Stencil(s) => write!(
                f,
                "stencil:{}x{},bytes={},rounds={}",
                s.width,
                s.height,
                format_bytes(s.bytes),
                s.rounds
            ),
            WorkloadSpec::Reduction(r) => write!(
                f,
                "reduction:{},ranks={},arrays={},bytes={},root={}",
                match r.kind {
                    ReductionKind::Naive => "naive",
                    ReductionKind::Tree => "tree",
                },
                r.ranks,
                r.arrays,
                format_bytes(r.bytes),
                r.root
            ),
            WorkloadSpec::Ring {
                ranks: r,
                bytes,
                rounds,
            } => write!(
                f,
                "ring{},bytes={},rounds={rounds}",
                ranks(r),
                format_bytes(*bytes)
            ),
            WorkloadSpec::Uniform {
                ranks: r,
                bytes,
                load,
                messages,
            } => {
                write!(
                    f,
                    "uniform,load={load}{},bytes={}",
                    ranks(r),
                    format_bytes(*bytes)
                )?;
                match messages {
                    Some(m) => write!(f, ",messages={m}"),
                    None => Ok(()),
                }
            }
            WorkloadSpec::RingWithBackground {
                bytes,
                rounds,
                load,
                messages,
            } => write!(
                f,
                "ring+background,bytes={},rounds={rounds},load={load},messages={messages}",
                format_bytes(*bytes)
            ),
            WorkloadSpec::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The `key=value` options after the head, each taken at most once by the workload that
/// knows it; [`Options::finish`] rejects the rest.
struct Options<'a> {
    values: BTreeMap<&'a str, &'a str>,
    known: Vec<&'static str>,
}

impl<'a> Options<'a> {
    fn parse(text: &'a str) -> Result<Self, String> {
        let mut values = BTreeMap::new();
        for item in text.split(',').filter(|item| !item.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("option '{item}' is not key=value"))?;
            if values.insert(key.trim(), value.trim()).is_some() {
                return Err(format!("option '{key}' is given twice"));
            }
        }
        Ok(Options {
            values,
            known: Vec::new(),
        })
    }

    fn take(&mut self, key: &'static str) -> Option<&'a str> {
        self.known.push(key);
        self.values.remove(key)
    }

    fn invalid(key: &str, value: &str, expected: &str) -> String {
        format!("bad {key}='{value}': expected {expected}")
    }

    /// `bytes=SIZE`, positive.
    fn bytes(&mut self, default: u64) -> Result<u64, String> {
        let Some(value) = self.take("bytes") else {
            return Ok(default);
        };
        match parse_bytes(value) {
            Ok(0) => Err(Self::invalid("bytes", value, "a positive size")),
            Ok(bytes) if bytes > MAX_MESSAGE_BYTES => Err(above_cap(
                "bytes",
                value,
                MAX_MESSAGE_BYTES,
                "bytes per message",
            )),
            Ok(bytes) => Ok(bytes),
            Err(reason) => Err(format!("bad bytes='{value}': {reason}")),
        }
    }

    /// A whole number, zero allowed.
    fn number(&mut self, key: &'static str, default: u32) -> Result<u32, String> {
        match self.take(key) {
            None => Ok(default),
            Some(value) => value
                .parse()
                .map_err(|_| Self::invalid(key, value, "a whole number")),
        }
    }

    /// A message count per rank (arrays, rounds): positive, at most
    /// [`MAX_MESSAGES_PER_RANK`].
    fn count(&mut self, key: &'static str, default: u32) -> Result<u32, String> {
        Ok(self.optional_count(key)?.map_or(default, |n| n as u32))
    }

    /// A positive message count per rank of at most [`MAX_MESSAGES_PER_RANK`], when given.
    fn optional_count(&mut self, key: &'static str) -> Result<Option<u64>, String> {
        let Some(value) = self.take(key) else {
            return Ok(None);
        };
        match value.parse::<u64>() {
            Ok(n) if n > MAX_MESSAGES_PER_RANK => {
                Err(above_cap(key, n, MAX_MESSAGES_PER_RANK, "per rank"))
            }
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(Self::invalid(key, value, "a positive whole number")),
        }
    }

    /// `ranks=N`: at least 2 (a ring or random traffic needs someone else to send to), at
    /// most [`MAX_RANKS`].
    fn ranks(&mut self) -> Result<Option<u32>, String> {
        let Some(value) = self.take("ranks") else {
            return Ok(None);
        };
        match value.parse::<u64>() {
            Ok(n) if n > u64::from(MAX_RANKS) => Err(above_cap("ranks", n, MAX_RANKS, "ranks")),
            Ok(n) if n >= 2 => Ok(Some(n as u32)),
            _ => Err(Self::invalid("ranks", value, &format!("2 to {MAX_RANKS}"))),
        }
    }

    /// `load=F` in (0, 1].
    fn load(&mut self) -> Result<Option<f64>, String> {
        let Some(value) = self.take("load") else {
            return Ok(None);
        };
        match value.parse::<f64>() {
            Ok(load) if load > 0.0 && load <= 1.0 => Ok(Some(load)),
            _ => Err(Self::invalid(
                "load",
                value,
                "a fraction of the link in (0, 1]",
            )),
        }
    }

    fn finish(self, name: &str) -> Result<(), String> {
        match self.values.keys().next() {
            None => Ok(()),
            Some(key) => Err(format!(
                "unknown option '{key}' for {name}: expected {}",
                self.known.join(", ")
            )),
        }
    }
}
