/*!
CPU-side bus traffic from the perf uncore PMUs (linux-counters.md 6): bytes through each
socket's memory channels, over the inter-socket links, and into and out of each PCIe root
bus (IIO stack). These are the links of Hostping 3.2 that no RNIC or GPU counter sees.

# Discovery

Every PMU the kernel registered is a folder `sys/bus/event_source/devices/<pmu>/`
([`pmu_names`], [`Pmu::load`]):

| file | meaning | policy |
|---|---|---|
| `type` | decimal `perf_event_attr.type` | required |
| `cpumask` | cpulist, one CPU per socket or die (`0,64`); open one counter per CPU | optional (core PMUs have none) |
| `format/<field>` | the config bits of a field: `config:0-7`, `config:8-15,24-27`, `config1:0-31` ([`FormatField`]) | required, each |
| `events/<name>` | an alias: `event=0x04,umask=0x03` ([`parse_terms`]) | required, each |
| `events/<name>.scale`, `.unit` | count x scale = value in unit (`6.103515625e-5` `MiB`: 64 B) | optional |
| `die<X>` (`uncore_iio_<n>`) | `SSSS:BB`, the root bus of stack n on die X ([`RootBus`]; Linux 5.10+, `Documentation/ABI/testing/sysfs-devices-mapping`) | optional: a stack without PCIe has none |
| `sys/devices/system/cpu/cpu<N>/topology/physical_package_id` | the socket of a cpumask CPU | required for a PMU that is counted |

A config word is built by writing each term's value into its field's bits, lowest value bit
into the lowest field bit, as perf does ([`Pmu::config`]).

# Metrics

| [`BusMetric`] | PMU | event | bytes per count |
|---|---|---|---|
| `MemoryRead`/`MemoryWrite{socket}` | Intel `uncore_imc_<n>` | aliases `cas_count_read`, `cas_count_write` (the kernel's encoding for this CPU) | `.scale` x `.unit` (64) |
| same | AMD `amd_umc_<n>` (Linux 6.8+, Zen 4) | `event=0x0a,rdwrmask=1` / `2` | 64 |
| `InterSocketTx{socket, pmu}` | Intel `uncore_upi_<n>` | `UNC_UPI_TxL_FLITS.ALL_DATA` `event=0x02,umask=0x0f` | 64/9 |
| `RootPortIn`/`RootPortOut{root_bus}` | Intel `uncore_iio_free_running_<n>` | aliases `bw_in_port<k>` / `bw_out_port<k>`, summed over the stack's ports | `.scale` x `.unit` (4 or 32) |

A socket is the `physical_package_id` of the cpumask CPU that counts it. The free-running
IIO PMU n counts the same stack as `uncore_iio_<n>`, whose `die<X>` files name its root bus
(the kernel sets the mapping attributes on `uncore_iio` only, arch/x86/events/intel/
uncore_snbep.c; a free-running PMU's own `die<X>` files are used if it has any); the k-th CPU of a cpumask serves die k (the
cpumask holds the first CPU of each die, and dies are numbered in the order their first CPU
came up). Where a PMU is missing the metric is a [`Gap`] saying why: virtual machines have
no uncore PMUs at all (only `cpu`, `software`, `tracepoint`, `breakpoint`, `kprobe`,
`uprobe`, maybe `msr`), AMD has no perf PMU for xGMI or root ports, Ice Lake counts root
ports inbound only.

# Counting

[`Counter::open`] is `perf_event_open(attr, pid -1, cpu, group -1, PERF_FLAG_FD_CLOEXEC)`,
system-wide on one CPU, with `read_format` `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` so a
multiplexed count can be scaled by enabled/running. That needs
`/proc/sys/kernel/perf_event_paranoid` <= 0 or `CAP_PERFMON` (`CAP_SYS_ADMIN` before Linux
5.8); without it the whole monitor is [`Unavailable`], naming the setting's value. Hardware
counters are 48 bits wide and wrap, so [`rates`] takes differences modulo 2^48 (the
kernel's 64-bit running totals give the same difference, as no interval moves 2^48 counts).
*/

use crate::sysfs::{DiscoverError, ParseError, SysRoot};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::str::FromStr;

/// Where the kernel lists its PMUs, below the root.
const DEVICES: &str = "sys/bus/event_source/devices";

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
fn numbered(name: &str, prefix: &str) -> Option<u32> {
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

// ---------------------------------------------------------------------------------------
// Metrics

/// What a counter measures, in bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BusMetric {
    /// Read from the socket's memory channels (DRAM CAS reads).
    MemoryRead {
        /// `physical_package_id`.
        socket: u32,
    },
    /// Written to the socket's memory channels.
    MemoryWrite {
        /// `physical_package_id`.
        socket: u32,
    },
    /// Data sent by the socket over one inter-socket link.
    InterSocketTx {
        /// The sending socket.
        socket: u32,
        /// The link's PMU (`uncore_upi_1`).
        pmu: String,
    },
    /// Device traffic entering the stack of a root bus (DMA writes to memory, read
    /// completions), all its ports together.
    RootPortIn {
        /// The stack's root bus.
        root_bus: RootBus,
    },
    /// Traffic leaving the stack of a root bus towards its devices.
    RootPortOut {
        /// The stack's root bus.
        root_bus: RootBus,
    },
}

impl BusMetric {
    /// The family the metric belongs to.
    pub fn family(&self) -> BusFamily {
        match self {
            BusMetric::MemoryRead { .. } | BusMetric::MemoryWrite { .. } => BusFamily::Memory,
            BusMetric::InterSocketTx { .. } => BusFamily::InterSocket,
            BusMetric::RootPortIn { .. } => BusFamily::RootPortIn,
            BusMetric::RootPortOut { .. } => BusFamily::RootPortOut,
        }
    }
}

impl fmt::Display for BusMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusMetric::MemoryRead { socket } => write!(f, "memory read, socket {socket}"),
            BusMetric::MemoryWrite { socket } => write!(f, "memory write, socket {socket}"),
            BusMetric::InterSocketTx { socket, pmu } => {
                write!(f, "inter-socket tx, socket {socket}, {pmu}")
            }
            BusMetric::RootPortIn { root_bus } => write!(f, "root bus {root_bus} inbound"),
            BusMetric::RootPortOut { root_bus } => write!(f, "root bus {root_bus} outbound"),
        }
    }
}

/// A kind of link, as far as counting it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BusFamily {
    /// Memory channels, read and write.
    Memory,
    /// Inter-socket links.
    InterSocket,
    /// Root ports, inbound.
    RootPortIn,
    /// Root ports, outbound.
    RootPortOut,
}

impl fmt::Display for BusFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BusFamily::Memory => "memory channels",
            BusFamily::InterSocket => "inter-socket links",
            BusFamily::RootPortIn => "root ports inbound",
            BusFamily::RootPortOut => "root ports outbound",
        })
    }
}

/// A family (or one metric of it) that cannot be counted here, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// The family.
    pub family: BusFamily,
    /// Why, naming the PMU, file or call.
    pub reason: String,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: unavailable: {}", self.family, self.reason)
    }
}

/// No CPU-bus counter can be used on this host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unavailable: {reason}")]
pub struct Unavailable {
    /// Why, naming the PMUs present, the file or the setting.
    pub reason: String,
}

/// One counter to open: an event of a PMU on one CPU, and what it measures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterSpec {
    /// What the counter adds to.
    pub metric: BusMetric,
    /// The PMU (`uncore_imc_0`).
    pub pmu: String,
    /// The alias or event string (`cas_count_read`, `event=0x02,umask=0x0f`).
    pub event: String,
    /// `perf_event_attr.type`.
    pub pmu_type: u32,
    /// The CPU to open it on (from the PMU's cpumask).
    pub cpu: u32,
    /// `perf_event_attr.config*`.
    pub config: EventConfig,
    /// Bytes per count.
    pub bytes_per_count: f64,
}

impl fmt::Display for CounterSpec {
    /// `uncore_imc_0/cas_count_read/ on CPU 64`, as perf would name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/ on CPU {}", self.pmu, self.event, self.cpu)
    }
}

/// What can be counted on a host, before anything is opened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Every PMU the kernel lists, sorted.
    pub pmus: Vec<String>,
    /// The counters, grouped by family.
    pub counters: Vec<CounterSpec>,
    /// Families that cannot be counted.
    pub gaps: Vec<Gap>,
    /// What was skipped inside a family that can be counted.
    pub notes: Vec<String>,
}

/// `UNC_UPI_TxL_FLITS.ALL_DATA` (tools/perf/pmu-events, Skylake-SP to Sapphire Rapids).
const UPI_TX_DATA: &str = "event=0x02,umask=0x0f";
/// A data flit carries 64/9 bytes (linux-counters.md 6).
const UPI_BYTES_PER_FLIT: f64 = 64.0 / 9.0;
/// AMD UMC CAS commands, reads and writes (`rdwrmask` 1 and 2; arch/x86/events/amd/uncore.c).
const UMC_READ: &str = "event=0x0a,rdwrmask=0x1";
const UMC_WRITE: &str = "event=0x0a,rdwrmask=0x2";
/// One CAS moves a 64-byte line.
const BYTES_PER_CAS: f64 = 64.0;

/// Finds what can be counted below `root`. `Err` only when nothing can: no PMU folder, or
/// none of the families (the reason lists the PMUs present).
pub fn plan(root: &SysRoot) -> Result<Plan, Unavailable> {
    let pmus = pmu_names(root).map_err(|e| Unavailable {
        reason: e.to_string(),
    })?;
    if pmus.is_empty() {
        return Err(Unavailable {
            reason: format!("no {DEVICES} (a kernel without perf events)"),
        });
    }
    let mut plan = Plan {
        pmus,
        counters: Vec::new(),
        gaps: Vec::new(),
        notes: Vec::new(),
    };
    let memory = plan_memory(root, &plan.pmus);
    let inter_socket = plan_inter_socket(root, &plan.pmus);
    let (port_in, port_out) = plan_root_ports(root, &plan.pmus, &mut plan.notes);
    for (family, result) in [
        (BusFamily::Memory, memory),
        (BusFamily::InterSocket, inter_socket),
        (BusFamily::RootPortIn, port_in),
        (BusFamily::RootPortOut, port_out),
    ] {
        match result {
            Ok(specs) => plan.counters.extend(specs),
            Err(reason) => plan.gaps.push(Gap { family, reason }),
        }
    }
    if plan.counters.is_empty() {
        let uncore = plan
            .pmus
            .iter()
            .any(|p| p.starts_with("uncore_") || p.starts_with("amd_"));
        let why = if uncore {
            let gaps: Vec<String> = plan.gaps.iter().map(Gap::to_string).collect();
            gaps.join("; ")
        } else {
            "no uncore PMU for memory, inter-socket or root-port traffic \
             (a virtual machine, or a kernel without uncore drivers)"
                .to_string()
        };
        return Err(Unavailable {
            reason: format!("{why}; PMUs here: {}", plan.pmus.join(", ")),
        });
    }
    Ok(plan)
}

/// The PMUs `prefix<n>`, loaded, in numeric order.
fn load_numbered(root: &SysRoot, pmus: &[String], prefix: &str) -> Result<Vec<Pmu>, String> {
    let mut found: Vec<(u32, &String)> = pmus
        .iter()
        .filter_map(|p| numbered(p, prefix).map(|n| (n, p)))
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(_, name)| Pmu::load(root, name).map_err(|e| e.to_string()))
        .collect()
}

/// `physical_package_id` of a CPU.
fn socket_of(root: &SysRoot, cpu: u32) -> Result<u32, String> {
    let path = root.path(&format!(
        "sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
    ));
    root.parse_required(&path, |s| {
        s.parse::<u32>()
            .map_err(|_| ParseError::new(s, "a package id"))
    })
    .map_err(|e| e.to_string())
}

/// One counter of `event` per CPU of `pmu`'s cpumask, measuring `metric(socket)`.
fn per_socket(
    root: &SysRoot,
    pmu: &Pmu,
    event: &str,
    bytes_per_count: f64,
    metric: impl Fn(u32) -> BusMetric,
) -> Result<Vec<CounterSpec>, String> {
    if pmu.cpus.is_empty() {
        return Err(format!("{}: no cpumask", pmu.name));
    }
    let config = pmu.config(event).map_err(|e| e.to_string())?;
    pmu.cpus
        .iter()
        .map(|&cpu| {
            Ok(CounterSpec {
                metric: metric(socket_of(root, cpu)?),
                pmu: pmu.name.clone(),
                event: event.to_string(),
                pmu_type: pmu.type_id,
                cpu,
                config,
                bytes_per_count,
            })
        })
        .collect()
}

/// The bytes per count of alias `event` of `pmu`.
fn alias_bytes(pmu: &Pmu, event: &str) -> Result<f64, String> {
    let alias = pmu
        .events
        .get(event)
        .ok_or_else(|| format!("{} has no events/{event}", pmu.name))?;
    alias.bytes_per_count().ok_or_else(|| {
        format!(
            "{}/events/{event}.unit is {:?}, not a byte unit",
            pmu.name, alias.unit
        )
    })
}

/// Memory channels: Intel IMC CAS counts (the kernel's aliases), else AMD UMC.
fn plan_memory(root: &SysRoot, pmus: &[String]) -> Result<Vec<CounterSpec>, String> {
    let imcs = load_numbered(root, pmus, "uncore_imc_")?;
    let umcs = load_numbered(root, pmus, "amd_umc_")?;
    let mut specs = Vec::new();
    for pmu in &imcs {
        let read = alias_bytes(pmu, "cas_count_read")?;
        let write = alias_bytes(pmu, "cas_count_write")?;
        specs.extend(per_socket(root, pmu, "cas_count_read", read, |socket| {
            BusMetric::MemoryRead { socket }
        })?);
        specs.extend(per_socket(root, pmu, "cas_count_write", write, |socket| {
            BusMetric::MemoryWrite { socket }
        })?);
    }
    if !imcs.is_empty() {
        return Ok(specs);
    }
    for pmu in &umcs {
        specs.extend(per_socket(root, pmu, UMC_READ, BYTES_PER_CAS, |socket| {
            BusMetric::MemoryRead { socket }
        })?);
        specs.extend(per_socket(root, pmu, UMC_WRITE, BYTES_PER_CAS, |socket| {
            BusMetric::MemoryWrite { socket }
        })?);
    }
    if !specs.is_empty() {
        Ok(specs)
    } else if pmus.iter().any(|p| p == "amd_df") {
        Err(
            "amd_df is present, but DRAM channel counts need amd_umc_<n> PMUs \
             (Linux 6.8+ on Zen 4 and later)"
                .into(),
        )
    } else {
        Err("no uncore_imc_<n> or amd_umc_<n> PMU".into())
    }
}

/// Inter-socket links: Intel UPI data flits sent.
fn plan_inter_socket(root: &SysRoot, pmus: &[String]) -> Result<Vec<CounterSpec>, String> {
    let upis = load_numbered(root, pmus, "uncore_upi_")?;
    if upis.is_empty() {
        return Err(
            "no uncore_upi_<n> PMU (one socket, AMD xGMI, which has no perf PMU, or an \
             Intel CPU older than Skylake-SP)"
                .into(),
        );
    }
    let mut specs = Vec::new();
    for pmu in &upis {
        specs.extend(per_socket(
            root,
            pmu,
            UPI_TX_DATA,
            UPI_BYTES_PER_FLIT,
            |socket| BusMetric::InterSocketTx {
                socket,
                pmu: pmu.name.clone(),
            },
        )?);
    }
    Ok(specs)
}

type Planned = Result<Vec<CounterSpec>, String>;

/// Root ports: the free-running IIO bandwidth counters, inbound and outbound, of every
/// stack whose root bus is known.
fn plan_root_ports(root: &SysRoot, pmus: &[String], notes: &mut Vec<String>) -> (Planned, Planned) {
    let free_running = match load_numbered(root, pmus, "uncore_iio_free_running_") {
        Ok(found) => found,
        Err(e) => return (Err(e.clone()), Err(e)),
    };
    if free_running.is_empty() {
        let why = if pmus.iter().any(|p| numbered(p, "uncore_iio_").is_some()) {
            "uncore_iio_<n> exist but no uncore_iio_free_running_<n> (the programmable IIO \
             events are not used: their encodings differ per CPU generation)"
        } else {
            "no uncore_iio_free_running_<n> PMU (AMD has no perf PMU for root ports)"
        };
        return (Err(why.into()), Err(why.into()));
    }
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for pmu in &free_running {
        let index = numbered(&pmu.name, "uncore_iio_free_running_").expect("matched by name");
        let dies = match die_buses(root, pmus, pmu, index) {
            Ok(dies) => dies,
            Err(e) => return (Err(e.clone()), Err(e)),
        };
        for (die, &cpu) in pmu.cpus.iter().enumerate() {
            let Some(&root_bus) = dies.get(&(die as u32)) else {
                notes.push(format!(
                    "{}: no root bus for die {die} (no uncore_iio_{index}/die{die}: a stack \
                     without PCIe, or a kernel before 5.10): not counted",
                    pmu.name
                ));
                continue;
            };
            for (event, alias) in &pmu.events {
                let (list, metric) = if numbered(event, "bw_in_port").is_some() {
                    (&mut ins, BusMetric::RootPortIn { root_bus })
                } else if numbered(event, "bw_out_port").is_some() {
                    (&mut outs, BusMetric::RootPortOut { root_bus })
                } else {
                    continue;
                };
                let spec = alias
                    .bytes_per_count()
                    .ok_or_else(|| format!("{}/events/{event}: not in bytes", pmu.name))
                    .and_then(|bytes| {
                        let config = pmu.config(event).map_err(|e| e.to_string())?;
                        Ok(CounterSpec {
                            metric,
                            pmu: pmu.name.clone(),
                            event: event.clone(),
                            pmu_type: pmu.type_id,
                            cpu,
                            config,
                            bytes_per_count: bytes,
                        })
                    });
                match spec {
                    Ok(spec) => list.push(spec),
                    Err(e) => return (Err(e.clone()), Err(e)),
                }
            }
        }
    }
    let some = |specs: Vec<CounterSpec>, why: &str| {
        if specs.is_empty() {
            Err(why.to_string())
        } else {
            Ok(specs)
        }
    };
    (
        some(
            ins,
            "no bw_in_port<k> event on a stack with a known root bus",
        ),
        some(
            outs,
            "no bw_out_port<k> event on uncore_iio_free_running_<n> \
             (Ice Lake-SP counts inbound only)",
        ),
    )
}

/// The die -> root bus files of free-running IIO PMU `index`: its own, else those of
/// `uncore_iio_<index>`, which counts the same stack.
fn die_buses(
    root: &SysRoot,
    pmus: &[String],
    pmu: &Pmu,
    index: u32,
) -> Result<BTreeMap<u32, RootBus>, String> {
    let iio = format!("uncore_iio_{index}");
    if !pmu.die_buses.is_empty() || !pmus.contains(&iio) {
        return Ok(pmu.die_buses.clone());
    }
    Pmu::load(root, &iio)
        .map(|p| p.die_buses)
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------
// perf_event_open

/// `struct perf_event_attr` up to `config2` (`PERF_ATTR_SIZE_VER1`, 72 bytes; every
/// kernel since 2.6.33 takes it and zero-fills the rest), from
/// include/uapi/linux/perf_event.h:
///
/// | offset | field |
/// |---|---|
/// | 0 | `__u32 type` |
/// | 4 | `__u32 size` |
/// | 8 | `__u64 config` |
/// | 16 | `__u64 sample_period` (union with `sample_freq`) |
/// | 24 | `__u64 sample_type` |
/// | 32 | `__u64 read_format` |
/// | 40 | `__u64` flag bits (`disabled`, `inherit`, ..., `exclude_*`): all 0 here |
/// | 48 | `__u32 wakeup_events` |
/// | 52 | `__u32 bp_type` |
/// | 56 | `__u64 config1` (union with `bp_addr`) |
/// | 64 | `__u64 config2` (union with `bp_len`) |
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
}

const PERF_ATTR_SIZE_VER1: u32 = 72;
const _: () = {
    assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER1 as usize);
    assert!(std::mem::offset_of!(PerfEventAttr, read_format) == 32);
    assert!(std::mem::offset_of!(PerfEventAttr, config1) == 56);
};

/// `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING`: `read()` gives
/// `{ value, time_enabled, time_running }`.
const READ_FORMAT: u64 = 1 | 2;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// One open perf counter, closed on drop.
#[derive(Debug)]
pub struct Counter {
    file: File,
}

/// One read of a [`Counter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CounterValue {
    /// Events counted while the counter ran.
    pub count: u64,
    /// Nanoseconds the counter was enabled.
    pub time_enabled_ns: u64,
    /// Nanoseconds it was on the hardware (less than enabled when multiplexed).
    pub time_running_ns: u64,
}

impl Counter {
    /// `perf_event_open` of an event of PMU type `pmu_type`, counting system-wide on `cpu`.
    pub fn open(pmu_type: u32, config: EventConfig, cpu: u32) -> io::Result<Counter> {
        let attr = PerfEventAttr {
            type_: pmu_type,
            size: PERF_ATTR_SIZE_VER1,
            config: config.config,
            read_format: READ_FORMAT,
            config1: config.config1,
            config2: config.config2,
            ..PerfEventAttr::default()
        };
        let cpu = libc::c_int::try_from(cpu)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "CPU number too large"))?;
        // SAFETY: attr is a valid perf_event_attr of the size it states; pid -1 with a CPU
        // and no group is a system-wide counter; the fd returned is ours.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                -1 as libc::pid_t,
                cpu,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        Ok(Counter {
            file: File::from(fd),
        })
    }

    /// The current count and times.
    pub fn read(&self) -> io::Result<CounterValue> {
        let mut buf = [0u8; 24];
        (&self.file).read_exact(&mut buf)?;
        let word = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
        Ok(CounterValue {
            count: word(0),
            time_enabled_ns: word(1),
            time_running_ns: word(2),
        })
    }
}

/// The sysctl that gates system-wide counters.
const PARANOID: &str = "proc/sys/kernel/perf_event_paranoid";

/// Why `perf_event_open` of `what` failed, in words. Permission errors name the value of
/// `/proc/sys/kernel/perf_event_paranoid` (read below `root`).
pub fn open_failure(root: &SysRoot, what: &str, e: &io::Error) -> Unavailable {
    let reason = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            let value = match root.read_optional(&root.path(PARANOID)) {
                Ok(Some(v)) => v,
                _ => "unreadable".to_string(),
            };
            format!(
                "perf_event_open({what}): {e}: system-wide counters need \
                 /proc/sys/kernel/perf_event_paranoid <= 0 (it is {value}) or CAP_PERFMON \
                 (CAP_SYS_ADMIN before Linux 5.8), and a seccomp profile that allows \
                 perf_event_open"
            )
        }
        Some(libc::ENOENT) => {
            format!("perf_event_open({what}): {e}: the kernel has no such PMU type or event")
        }
        _ => format!("perf_event_open({what}): {e}"),
    };
    Unavailable { reason }
}

// ---------------------------------------------------------------------------------------
// The monitor

/// Open counters for every metric of a host's [`Plan`].
#[derive(Debug)]
pub struct UncoreMonitor {
    counters: Vec<(CounterSpec, Counter)>,
    gaps: Vec<Gap>,
    notes: Vec<String>,
}

impl UncoreMonitor {
    /// Plans and opens every counter. A metric whose counter will not open becomes a
    /// [`Gap`] (all its counters are closed: a partial sum would be wrong); a permission
    /// error, or nothing left to count, makes the whole monitor [`Unavailable`].
    pub fn open(root: &SysRoot) -> Result<UncoreMonitor, Unavailable> {
        let plan = plan(root)?;
        let mut failed: BTreeMap<BusMetric, String> = BTreeMap::new();
        let mut counters = Vec::new();
        for spec in plan.counters {
            if failed.contains_key(&spec.metric) {
                continue;
            }
            match Counter::open(spec.pmu_type, spec.config, spec.cpu) {
                Ok(counter) => counters.push((spec, counter)),
                Err(e) => {
                    let why = open_failure(root, &spec.to_string(), &e);
                    if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
                        return Err(why);
                    }
                    failed.insert(spec.metric, why.reason);
                }
            }
        }
        counters.retain(|(spec, _)| !failed.contains_key(&spec.metric));
        let mut gaps = plan.gaps;
        gaps.extend(failed.into_iter().map(|(metric, reason)| Gap {
            family: metric.family(),
            reason: format!("{metric}: {reason}"),
        }));
        if counters.is_empty() {
            let gaps: Vec<String> = gaps.iter().map(Gap::to_string).collect();
            return Err(Unavailable {
                reason: gaps.join("; "),
            });
        }
        Ok(UncoreMonitor {
            counters,
            gaps,
            notes: plan.notes,
        })
    }

    /// The open counters.
    pub fn counters(&self) -> impl Iterator<Item = &CounterSpec> {
        self.counters.iter().map(|(spec, _)| spec)
    }

    /// What cannot be counted, and why.
    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// What was skipped inside the families that are counted.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Reads every counter.
    pub fn read(&self) -> io::Result<UncoreSample> {
        let counters = self
            .counters
            .iter()
            .map(|(spec, counter)| {
                let value = counter
                    .read()
                    .map_err(|e| io::Error::new(e.kind(), format!("read {spec}: {e}")))?;
                Ok(SampledCounter {
                    metric: spec.metric.clone(),
                    bytes_per_count: spec.bytes_per_count,
                    value,
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(UncoreSample { counters })
    }
}

/// One counter's value in a sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledCounter {
    /// What it measures.
    pub metric: BusMetric,
    /// Bytes per count.
    pub bytes_per_count: f64,
    /// The value read.
    pub value: CounterValue,
}

/// Every counter of a monitor, read once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UncoreSample {
    /// In the monitor's order.
    pub counters: Vec<SampledCounter>,
}

/// Cumulative bytes of one metric since its counters opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BusReading {
    /// What.
    pub metric: BusMetric,
    /// Bytes, summed over the metric's counters, each scaled by enabled/running.
    pub bytes: u64,
}

/// Bytes per second of one metric over an interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BusRate {
    /// What.
    pub metric: BusMetric,
    /// `None` when a counter of the metric never ran in the interval (or the interval is
    /// not positive): absent, not zero.
    pub bytes_per_s: Option<f64>,
}

/// `count` scaled for multiplexing: x enabled / running when the counter ran part time.
fn scaled(count: u64, enabled: u64, running: u64) -> f64 {
    if running > 0 && enabled > running {
        count as f64 * enabled as f64 / running as f64
    } else {
        count as f64
    }
}

impl UncoreSample {
    /// Cumulative bytes per metric, sorted by metric.
    pub fn readings(&self) -> Vec<BusReading> {
        let mut sums: BTreeMap<&BusMetric, f64> = BTreeMap::new();
        for c in &self.counters {
            let v = c.value;
            *sums.entry(&c.metric).or_default() +=
                scaled(v.count, v.time_enabled_ns, v.time_running_ns) * c.bytes_per_count;
        }
        sums.into_iter()
            .map(|(metric, bytes)| BusReading {
                metric: metric.clone(),
                bytes: bytes.round() as u64,
            })
            .collect()
    }
}

/// Counter width of the uncore PMUs used here.
const COUNTER_MASK: u64 = (1 << 48) - 1;

/// Bytes per second per metric between two samples of one monitor, `interval_s` apart,
/// sorted by metric. Each counter's difference is taken modulo 2^48 (a wrapped 48-bit
/// counter; the kernel's 64-bit totals give the same difference) and scaled by the
/// enabled/running times of the interval. Counters that do not pair up (samples of two
/// different monitors) are left out.
pub fn rates(prev: &UncoreSample, cur: &UncoreSample, interval_s: f64) -> Vec<BusRate> {
    let mut sums: BTreeMap<&BusMetric, Option<f64>> = BTreeMap::new();
    for (p, c) in prev.counters.iter().zip(&cur.counters) {
        if p.metric != c.metric {
            continue;
        }
        let count = c.value.count.wrapping_sub(p.value.count) & COUNTER_MASK;
        let enabled = c
            .value
            .time_enabled_ns
            .saturating_sub(p.value.time_enabled_ns);
        let running = c
            .value
            .time_running_ns
            .saturating_sub(p.value.time_running_ns);
        let bytes = (running > 0).then(|| scaled(count, enabled, running) * c.bytes_per_count);
        let sum = sums.entry(&c.metric).or_insert(Some(0.0));
        *sum = sum.zip(bytes).map(|(a, b)| a + b);
    }
    let valid = interval_s.is_finite() && interval_s > 0.0;
    sums.into_iter()
        .map(|(metric, bytes)| BusRate {
            metric: metric.clone(),
            bytes_per_s: bytes.filter(|_| valid).map(|b| b / interval_s),
        })
        .collect()
}
