//! PMU discovery: the PMUs the kernel registered below `sys/bus/event_source/devices/`,
//! their `format/` fields, `events/` aliases, cpumasks and IIO root buses, and the parsers
//! for those files. No counting here (that is [`super::counting`]).

use super::DEVICES;
use crate::sysfs::{DiscoverError, ParseError, SysRoot};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

// ---------------------------------------------------------------------------------------
// Parsers

/// The `perf_event_attr` word a format field lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
}

impl ConfigWord {
    fn name(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
        }
    }
}

/// A `format/<field>` file: which bits of one config word hold the field
/// (`config:8-15,24-27` is bits 8 to 15 and 24 to 27 of `config`). Displays in the same
/// syntax, ranges merged and sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatField {
    /// The word.
    pub word: ConfigWord,
    /// The field's bits in it; never zero.
    pub mask: u64,
}

impl FormatField {
    /// The field's bits holding `value`: value bit i goes to the i-th lowest bit of the mask
    /// (perf's `pmu_format_value`). `None` when the value has more bits than the field.
    fn deposit(&self, value: u64) -> Option<u64> {
        let width = self.mask.count_ones();
        if width < 64 && value >> width != 0 {
            return None;
        }
        let mut rest = value;
        let mut bits = 0;
        for bit in (0..64).filter(|b| self.mask >> b & 1 == 1) {
            bits |= (rest & 1) << bit;
            rest >>= 1;
        }
        Some(bits)
    }
}

impl FromStr for FormatField {
    type Err = ParseError;

    /// Parses `config:0-7`, `config:18`, `config1:8-15,24-27` (ranges are inclusive bit
    /// numbers, 0 to 63). `config3` (Linux 6.3+, some Arm PMUs) is refused: counters are
    /// opened with the attribute layout that ends at `config2`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let bad = || ParseError::new(s, "a perf format like config:0-7 or config1:8-15,24-27");
        let bit = |t: &str| {
            (!t.is_empty() && t.len() <= 2 && t.bytes().all(|b| b.is_ascii_digit()))
                .then(|| t.parse::<u32>().ok())
                .flatten()
                .filter(|b| *b < 64)
                .ok_or_else(bad)
        };
        let (word, ranges) = s.split_once(':').ok_or_else(bad)?;
        let word = match word {
            "config" => ConfigWord::Config,
            "config1" => ConfigWord::Config1,
            "config2" => ConfigWord::Config2,
            _ => return Err(bad()),
        };
        let mut mask = 0u64;
        for range in ranges.split(',') {
            let (lo, hi) = match range.split_once('-') {
                Some((lo, hi)) => (bit(lo)?, bit(hi)?),
                None => (bit(range)?, bit(range)?),
            };
            if lo > hi {
                return Err(bad());
            }
            mask |= (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
        }
        Ok(FormatField { word, mask })
    }
}

impl fmt::Display for FormatField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.word.name())?;
        let mut bit = 0;
        let mut sep = "";
        while bit < 64 {
            if self.mask >> bit & 1 == 0 {
                bit += 1;
                continue;
            }
            let lo = bit;
            while bit < 64 && self.mask >> bit & 1 == 1 {
                bit += 1;
            }
            match bit - 1 {
                hi if hi == lo => write!(f, "{sep}{lo}")?,
                hi => write!(f, "{sep}{lo}-{hi}")?,
            }
            sep = ",";
        }
        Ok(())
    }
}

/// One term of an event string: `umask=0x03`, or a bare name (`edge`), which perf reads as
/// the event alias of that name or else as `name=1`. Displays as `name=0x3` or `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Field, alias or built-in word (`config`, `config1`, `config2`).
    pub name: String,
    /// The value, when given.
    pub value: Option<u64>,
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(v) => write!(f, "{}={v:#x}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Parses an event string, `event=0x04,umask=0x03` (the syntax of `events/<name>` and of
/// perf's `pmu/terms/`): comma-separated terms, values in hex (`0x`) or decimal.
pub fn parse_terms(s: &str) -> Result<Vec<Term>, ParseError> {
    let bad = || ParseError::new(s, "an event string like event=0x04,umask=0x03");
    s.split(',')
        .map(|term| {
            let term = term.trim();
            let (name, value) = match term.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (term, None),
            };
            let name_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
            if !name_ok {
                return Err(bad());
            }
            let value = match value {
                None => None,
                Some(v) => Some(parse_number(v).ok_or_else(bad)?),
            };
            Ok(Term {
                name: name.to_string(),
                value,
            })
        })
        .collect()
}

/// `0x1f` (hex) or `31` (decimal).
fn parse_number(v: &str) -> Option<u64> {
    let (digits, radix) = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (v, 10),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// CPU numbers above this are refused: the kernel's `NR_CPUS` is at most 8192, and a
/// corrupt range must not make us allocate gigabytes.
const MAX_CPU: u32 = 1 << 16;

/// Parses a cpulist as the kernel prints it (`cpumap_print_list_to_buf`): `0,64`,
/// `0-3,8-11`; empty is no CPU. Returns the CPUs sorted, without repeats.
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, ParseError> {
    let bad = || ParseError::new(s, "a CPU list like 0,64 or 0-3,8-11");
    let cpu = |t: &str| {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse::<u32>().ok())
            .flatten()
            .filter(|c| *c < MAX_CPU)
            .ok_or_else(bad)
    };
    let mut cpus = BTreeSet::new();
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    for item in s.trim().split(',') {
        let (lo, hi) = match item.split_once('-') {
            Some((lo, hi)) => (cpu(lo)?, cpu(hi)?),
            None => (cpu(item)?, cpu(item)?),
        };
        if lo > hi {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    Ok(cpus.into_iter().collect())
}

/// A PCIe root bus, `SSSS:BB` (segment and bus, as `uncore_iio_<n>/die<X>` and the host
/// bridge folder `pciSSSS:BB` name it). Ordered by segment, then bus.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RootBus {
    /// PCI segment (domain).
    pub domain: u32,
    /// Bus number.
    pub bus: u8,
}

impl FromStr for RootBus {
    type Err = ParseError;

    /// Parses `0000:17`: a segment of 4 to 8 hex digits, a bus of 2.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let bad = || ParseError::new(s, "a root bus like 0000:17");
        let hex = |t: &str, min: usize, max: usize| {
            ((min..=max).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(t, 16).ok())
                .flatten()
                .ok_or_else(bad)
        };
        let (domain, bus) = s.split_once(':').ok_or_else(bad)?;
        Ok(RootBus {
            domain: hex(domain, 4, 8)?,
            bus: hex(bus, 2, 2)? as u8,
        })
    }
}

impl fmt::Display for RootBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}", self.domain, self.bus)
    }
}

impl fmt::Debug for RootBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RootBus({self})")
    }
}

impl Serialize for RootBus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

// ---------------------------------------------------------------------------------------
// PMUs

/// An `events/<name>` alias with its `.scale` and `.unit`.
#[derive(Debug, Clone, PartialEq)]
pub struct EventAlias {
    /// The event string (`event=0x04,umask=0x0f`).
    pub terms: String,
    /// `.scale`: count x scale is the value in `unit`.
    pub scale: Option<f64>,
    /// `.unit` (`MiB`).
    pub unit: Option<String>,
}

impl EventAlias {
    /// Bytes per count: scale x the unit in bytes, for the byte units perf uses (`B`,
    /// `KiB`, `MiB`, `GiB`); `None` for any other unit or none.
    pub fn bytes_per_count(&self) -> Option<f64> {
        let unit = match self.unit.as_deref()? {
            "B" | "Bytes" | "bytes" => 1.0,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            _ => return None,
        };
        Some(self.scale.unwrap_or(1.0) * unit)
    }
}

/// One PMU's folder, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Pmu {
    /// Folder name (`uncore_imc_0`).
    pub name: String,
    /// `type`: `perf_event_attr.type`.
    pub type_id: u32,
    /// `cpumask`: the CPUs to open counters on; empty when the file is absent.
    pub cpus: Vec<u32>,
    /// `format/*`.
    pub formats: BTreeMap<String, FormatField>,
    /// `events/*`.
    pub events: BTreeMap<String, EventAlias>,
    /// `die<X>` files: die X to the root bus of this IIO stack.
    pub die_buses: BTreeMap<u32, RootBus>,
}

/// An event's attribute files, not events themselves.
const EVENT_SUFFIXES: [&str; 4] = [".scale", ".unit", ".per-pkg", ".snapshot"];

/// The PMUs under `sys/bus/event_source/devices`, sorted; empty when the folder is absent
/// (a kernel without perf events).
pub fn pmu_names(root: &SysRoot) -> Result<Vec<String>, DiscoverError> {
    Ok(root.list_dir(&root.path(DEVICES))?.unwrap_or_default())
}

impl Pmu {
    /// Reads PMU `name` (see the module doc for the files and their policy).
    pub fn load(root: &SysRoot, name: &str) -> Result<Pmu, DiscoverError> {
        let dir = root.path(&format!("{DEVICES}/{name}"));
        let type_id = root.parse_required(&dir.join("type"), |s| {
            s.parse::<u32>()
                .map_err(|_| ParseError::new(s, "a PMU type number"))
        })?;
        let cpus = root
            .parse_optional(&dir.join("cpumask"), parse_cpulist)?
            .unwrap_or_default();

        let mut formats = BTreeMap::new();
        let format_dir = dir.join("format");
        for field in root.list_dir(&format_dir)?.unwrap_or_default() {
            let spec = root.parse_required(&format_dir.join(&field), FormatField::from_str)?;
            formats.insert(field, spec);
        }

        let mut events = BTreeMap::new();
        let events_dir = dir.join("events");
        for event in root.list_dir(&events_dir)?.unwrap_or_default() {
            if EVENT_SUFFIXES.iter().any(|s| event.ends_with(s)) {
                continue;
            }
            let alias = EventAlias {
                terms: root.read_required(&events_dir.join(&event))?,
                scale: root.parse_optional(&events_dir.join(format!("{event}.scale")), |s| {
                    s.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v > 0.0)
                        .ok_or_else(|| ParseError::new(s, "a positive scale like 6.103515625e-5"))
                })?,
                unit: root.read_optional(&events_dir.join(format!("{event}.unit")))?,
            };
            events.insert(event, alias);
        }

        let mut die_buses = BTreeMap::new();
        for entry in root.list_dir(&dir)?.unwrap_or_default() {
            if let Some(die) = numbered(&entry, "die") {
                die_buses.insert(
                    die,
                    root.parse_required(&dir.join(&entry), RootBus::from_str)?,
                );
            }
        }
        Ok(Pmu {
            name: name.to_string(),
            type_id,
            cpus,
            formats,
            events,
            die_buses,
        })
    }

    /// The config words of an event string: each term's value written into its
    /// `format/` field (a later term replaces an earlier one's bits); a bare term that
    /// names an `events/` alias stands for the alias's terms; `config`, `config1` and
    /// `config2` set a whole word. Errors name the PMU and the term: an unknown field, a
    /// value wider than its field, a malformed alias.
    pub fn config(&self, event: &str) -> Result<EventConfig, ConfigError> {
        let error = |term: &str, reason: String| ConfigError {
            pmu: self.name.clone(),
            term: term.to_string(),
            reason,
        };
        let terms = parse_terms(event).map_err(|e| error(event, e.to_string()))?;
        let mut config = EventConfig::default();
        for term in &terms {
            match self.events.get(&term.name).filter(|_| term.value.is_none()) {
                Some(alias) => {
                    let inner = parse_terms(&alias.terms)
                        .map_err(|e| error(&term.name, format!("events/{}: {e}", term.name)))?;
                    for t in &inner {
                        self.apply(&mut config, t)?;
                    }
                }
                None => self.apply(&mut config, term)?,
            }
        }
        Ok(config)
    }

    fn apply(&self, config: &mut EventConfig, term: &Term) -> Result<(), ConfigError> {
        let error = |reason: String| ConfigError {
            pmu: self.name.clone(),
            term: term.to_string(),
            reason,
        };
        let field = match (self.formats.get(&term.name), term.name.as_str()) {
            (Some(field), _) => *field,
            (None, "config") => whole(ConfigWord::Config),
            (None, "config1") => whole(ConfigWord::Config1),
            (None, "config2") => whole(ConfigWord::Config2),
            (None, _) => {
                let known: Vec<&str> = self.formats.keys().map(String::as_str).collect();
                return Err(error(format!(
                    "no such field (format/ has: {})",
                    if known.is_empty() {
                        "nothing".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        };
        let value = term.value.unwrap_or(1);
        let bits = field.deposit(value).ok_or_else(|| {
            error(format!(
                "{value:#x} does not fit in the {} bits of {}",
                field.mask.count_ones(),
                field
            ))
        })?;
        let word = match field.word {
            ConfigWord::Config => &mut config.config,
            ConfigWord::Config1 => &mut config.config1,
            ConfigWord::Config2 => &mut config.config2,
        };
        *word = (*word & !field.mask) | bits;
        Ok(())
    }
}

/// A whole config word, for the built-in terms `config`, `config1`, `config2`.
fn whole(word: ConfigWord) -> FormatField {
    FormatField {
        word,
        mask: u64::MAX,
    }
}

/// `prefix<digits>` -> the number (`uncore_imc_12` with `uncore_imc_` -> 12).
pub(super) fn numbered(name: &str, prefix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The config words of one event (`perf_event_attr.config`, `config1`, `config2`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EventConfig {
    /// `config`.
    pub config: u64,
    /// `config1`.
    pub config1: u64,
    /// `config2`.
    pub config2: u64,
}

/// An event string that does not fit a PMU's formats.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pmu}: `{term}`: {reason}")]
pub struct ConfigError {
    /// The PMU.
    pub pmu: String,
    /// The term at fault (the whole string when it does not parse).
    pub term: String,
    /// What is wrong.
    pub reason: String,
}
