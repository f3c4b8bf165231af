//! Event tables: which PMU event measures which bus metric, with how many bytes per count,
//! and the [`plan`] of counters a host can open (nothing is opened here).

use super::discovery::{numbered, pmu_names, ConfigError, EventConfig, Pmu, RootBus};
use super::DEVICES;
use crate::sysfs::{DiscoverError, ParseError, SysRoot};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

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

/// Why one family of counters cannot be planned. Each message names the PMU, file or
/// event at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A PMU folder or a CPU topology file could not be read or parsed.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// An event string does not fit the PMU's formats.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The PMU has no `cpumask`, so no CPU to count on.
    #[error("{pmu}: no cpumask")]
    NoCpumask {
        /// The PMU.
        pmu: String,
    },
    /// The PMU lacks an alias the table needs.
    #[error("{pmu} has no events/{event}")]
    NoAlias {
        /// The PMU.
        pmu: String,
        /// The alias (`cas_count_read`).
        event: String,
    },
    /// An alias's `.unit` is not a byte unit.
    #[error("{pmu}/events/{event}.unit is {unit:?}, not a byte unit")]
    NotBytes {
        /// The PMU.
        pmu: String,
        /// The alias.
        event: String,
        /// The `.unit` file's text, when there is one.
        unit: Option<String>,
    },
    /// No PMU of the family exists here; says which were looked for and why they may be
    /// missing.
    #[error("{0}")]
    NoPmu(&'static str),
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
            Err(reason) => plan.gaps.push(Gap {
                family,
                reason: reason.to_string(),
            }),
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
fn load_numbered(root: &SysRoot, pmus: &[String], prefix: &str) -> Result<Vec<Pmu>, PlanError> {
    let mut found: Vec<(u32, &String)> = pmus
        .iter()
        .filter_map(|p| numbered(p, prefix).map(|n| (n, p)))
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(_, name)| Ok(Pmu::load(root, name)?))
        .collect()
}

/// `physical_package_id` of a CPU.
fn socket_of(root: &SysRoot, cpu: u32) -> Result<u32, DiscoverError> {
    let path = root.path(&format!(
        "sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
    ));
    root.parse_required(&path, |s| {
        s.parse::<u32>()
            .map_err(|_| ParseError::new(s, "a package id"))
    })
}

/// One counter of `event` per CPU of `pmu`'s cpumask, measuring `metric(socket)`.
fn per_socket(
    root: &SysRoot,
    pmu: &Pmu,
    event: &str,
    bytes_per_count: f64,
    metric: impl Fn(u32) -> BusMetric,
) -> Result<Vec<CounterSpec>, PlanError> {
    if pmu.cpus.is_empty() {
        return Err(PlanError::NoCpumask {
            pmu: pmu.name.clone(),
        });
    }
    let config = pmu.config(event)?;
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
fn alias_bytes(pmu: &Pmu, event: &str) -> Result<f64, PlanError> {
    let alias = pmu.events.get(event).ok_or_else(|| PlanError::NoAlias {
        pmu: pmu.name.clone(),
        event: event.to_string(),
    })?;
    alias.bytes_per_count().ok_or_else(|| PlanError::NotBytes {
        pmu: pmu.name.clone(),
        event: event.to_string(),
        unit: alias.unit.clone(),
    })
}

/// Memory channels: Intel IMC CAS counts (the kernel's aliases), else AMD UMC.
fn plan_memory(root: &SysRoot, pmus: &[String]) -> Result<Vec<CounterSpec>, PlanError> {
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
        Err(PlanError::NoPmu(
            "amd_df is present, but DRAM channel counts need amd_umc_<n> PMUs \
             (Linux 6.8+ on Zen 4 and later)",
        ))
    } else {
        Err(PlanError::NoPmu("no uncore_imc_<n> or amd_umc_<n> PMU"))
    }
}

/// Inter-socket links: Intel UPI data flits sent.
fn plan_inter_socket(root: &SysRoot, pmus: &[String]) -> Result<Vec<CounterSpec>, PlanError> {
    let upis = load_numbered(root, pmus, "uncore_upi_")?;
    if upis.is_empty() {
        return Err(PlanError::NoPmu(
            "no uncore_upi_<n> PMU (one socket, AMD xGMI, which has no perf PMU, or an \
             Intel CPU older than Skylake-SP)",
        ));
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

type Planned = Result<Vec<CounterSpec>, PlanError>;

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
        return (Err(PlanError::NoPmu(why)), Err(PlanError::NoPmu(why)));
    }
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for pmu in &free_running {
        let index = numbered(&pmu.name, "uncore_iio_free_running_").expect("matched by name");
        let dies = match die_buses(root, pmus, pmu, index) {
            Ok(dies) => dies,
            Err(e) => return (Err(e.clone().into()), Err(e.into())),
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
            for event in pmu.events.keys() {
                let (list, metric) = if numbered(event, "bw_in_port").is_some() {
                    (&mut ins, BusMetric::RootPortIn { root_bus })
                } else if numbered(event, "bw_out_port").is_some() {
                    (&mut outs, BusMetric::RootPortOut { root_bus })
                } else {
                    continue;
                };
                let spec = alias_bytes(pmu, event).and_then(|bytes| {
                    let config = pmu.config(event)?;
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
    let some = |specs: Vec<CounterSpec>, why: &'static str| {
        if specs.is_empty() {
            Err(PlanError::NoPmu(why))
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
) -> Result<BTreeMap<u32, RootBus>, DiscoverError> {
    let iio = format!("uncore_iio_{index}");
    if !pmu.die_buses.is_empty() || !pmus.contains(&iio) {
        return Ok(pmu.die_buses.clone());
    }
    Pmu::load(root, &iio).map(|p| p.die_buses)
}
