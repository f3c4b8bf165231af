/*!
IOTLB counters of the IOMMU unit that translates an RNIC's DMA: how often a translation
misses the IOTLB and walks the page tables in memory, the per-packet cost of HotNets'22
section 3.1 (`shared/papers/002_f1357b3c485fb040.txt`: the NIC-to-memory bound
C * pkt / (T_base + M * T_miss), M the misses per packet).

# Discovery

Both vendors register one perf PMU per IOMMU unit below `sys/bus/event_source/devices/`,
read with [`uncore::Pmu::load`](super::uncore::Pmu::load) (`type`, `cpumask`, `format/`,
`events/`):

| vendor | PMU | unit (`sys/class/iommu/`) | events used | per-device filter (`format/`) | source |
|---|---|---|---|---|---|
| Intel VT-d | `dmar<N>` (Linux 6.3+, units with ECAP.PMS) | `dmar<N>` | `iotlb_lookup` `event_group=0x3,event=0x001`, `iotlb_hit` `event_group=0x3,event=0x002` | `filter_requester_id_en` `config1:0`, `filter_requester_id` `config1:16-31` (only where the unit can filter) | drivers/iommu/intel/perfmon.c |
| AMD-Vi | `amd_iommu_<N>` | `ivhd<N>` | `mem_iommu_tlb_pte_hit` `csource=0x06`, `_pte_mis` `0x07`, `mem_iommu_tlb_pde_hit` `0x08`, `_pde_mis` `0x09` | `devid` `config:8-23`, `devid_mask` `config1:0-15` | arch/x86/events/amd/iommu.c |

Intel lists only the events the unit supports (`evcap`); a unit without the two IOTLB
events is a [`IotlbGap`]. The unit of an RNIC is its `iommu` link
([`rnic_translation`](super::iommu::rnic_translation)). With a filter, the counters count
the RNIC's requests only (its requester ID, `bus << 8 | dev << 3 | fn`); without one, the
whole unit's, which the readings say. The AMD mask is written, as the kernel does, beside
the ID into the Counter Device ID Match register with its enable bit; a mask of `0xffff`
compares all 16 bits ⚠︎ (inferred from the register layout, not verified on hardware).

# Counting

Through [`uncore::Counter`](super::uncore::Counter) (system-wide on the PMU's cpumask CPU,
enabled/running times for multiplexing); the kernel keeps 64-bit totals for both PMUs
(perfmon.c shifts by the enumerated width, the AMD driver accumulates 48-bit reads), so
differences of two reads are plain differences.
*/

use super::uncore::{
    open_failure, pmu_names, scaled, ConfigError, Counter, CounterValue, EventConfig, Pmu,
    Unavailable,
};
use crate::sysfs::pci::PciAddr;
use crate::sysfs::{DiscoverError, SysRoot};
use serde::Serialize;
use std::fmt;

/// Whose IOMMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Vendor {
    /// Intel VT-d, PMU `dmar<N>`.
    Intel,
    /// AMD-Vi, PMU `amd_iommu_<N>`.
    Amd,
}

/// What one IOTLB counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IotlbEvent {
    /// Intel `iotlb_lookup`: translations looked up in the IOTLB.
    Lookup,
    /// Intel `iotlb_hit`: of which found.
    Hit,
    /// AMD `mem_iommu_tlb_pte_hit`: IOTLB hits on a leaf entry.
    PteHit,
    /// AMD `mem_iommu_tlb_pte_mis`: IOTLB misses (a page walk follows).
    PteMiss,
    /// AMD `mem_iommu_tlb_pde_hit`: page-directory cache hits during walks.
    PdeHit,
    /// AMD `mem_iommu_tlb_pde_mis`: page-directory cache misses.
    PdeMiss,
}

impl IotlbEvent {
    /// The `events/` alias.
    pub fn alias(self) -> &'static str {
        match self {
            IotlbEvent::Lookup => "iotlb_lookup",
            IotlbEvent::Hit => "iotlb_hit",
            IotlbEvent::PteHit => "mem_iommu_tlb_pte_hit",
            IotlbEvent::PteMiss => "mem_iommu_tlb_pte_mis",
            IotlbEvent::PdeHit => "mem_iommu_tlb_pde_hit",
            IotlbEvent::PdeMiss => "mem_iommu_tlb_pde_mis",
        }
    }
}

impl Vendor {
    /// The events counted, in order.
    pub fn events(self) -> &'static [IotlbEvent] {
        match self {
            Vendor::Intel => &[IotlbEvent::Lookup, IotlbEvent::Hit],
            Vendor::Amd => &[
                IotlbEvent::PteHit,
                IotlbEvent::PteMiss,
                IotlbEvent::PdeHit,
                IotlbEvent::PdeMiss,
            ],
        }
    }

    /// The `format/` fields of the per-device filter.
    fn filter_fields(self) -> [&'static str; 2] {
        match self {
            Vendor::Intel => ["filter_requester_id_en", "filter_requester_id"],
            Vendor::Amd => ["devid", "devid_mask"],
        }
    }

    /// The terms that restrict a counter to requester ID `rid`.
    fn filter_terms(self, rid: u16) -> String {
        match self {
            Vendor::Intel => format!("filter_requester_id_en=1,filter_requester_id={rid:#x}"),
            Vendor::Amd => format!("devid={rid:#x},devid_mask=0xffff"),
        }
    }
}

/// An IOMMU unit's PMU.
#[derive(Debug, Clone, PartialEq)]
pub struct IommuPmu {
    /// The unit as `sys/class/iommu/` names it (`dmar3`, `ivhd1`).
    pub unit: String,
    /// The vendor.
    pub vendor: Vendor,
    /// The PMU folder, read.
    pub pmu: Pmu,
}

impl IommuPmu {
    /// Whether the PMU can count one requester's translations.
    pub fn filters_by_device(&self) -> bool {
        self.vendor
            .filter_fields()
            .iter()
            .all(|f| self.pmu.formats.contains_key(*f))
    }

    /// The IOTLB events of [`Vendor::events`] the PMU lacks.
    pub fn missing_events(&self) -> Vec<&'static str> {
        self.vendor
            .events()
            .iter()
            .map(|e| e.alias())
            .filter(|a| !self.pmu.events.contains_key(*a))
            .collect()
    }
}

/// The unit name of an IOMMU PMU: `dmar3` for `dmar3`, `ivhd1` for `amd_iommu_1`.
fn unit_of(pmu: &str) -> Option<(String, Vendor)> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(n) = pmu.strip_prefix("dmar").filter(|n| digits(n)) {
        return Some((format!("dmar{n}"), Vendor::Intel));
    }
    if let Some(n) = pmu.strip_prefix("amd_iommu_").filter(|n| digits(n)) {
        return Some((format!("ivhd{n}"), Vendor::Amd));
    }
    None
}

/// Every IOMMU PMU below `root`, by PMU name; empty when there is none (no IOMMU, a kernel
/// before 6.3 on Intel, a unit without performance monitoring, a virtual machine).
pub fn iommu_pmus(root: &SysRoot) -> Result<Vec<IommuPmu>, DiscoverError> {
    let mut out = Vec::new();
    for name in pmu_names(root)? {
        if let Some((unit, vendor)) = unit_of(&name) {
            out.push(IommuPmu {
                unit,
                vendor,
                pmu: Pmu::load(root, &name)?,
            });
        }
    }
    Ok(out)
}

/// Why the IOTLB of an RNIC cannot be counted. Each names the RNIC and the unit or PMU.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IotlbGap {
    /// No IOMMU unit translates for the RNIC.
    #[error("{rnic}: no IOMMU unit (no iommu link): its DMA is not translated")]
    NoUnit {
        /// The RNIC.
        rnic: PciAddr,
    },
    /// The unit has no PMU here.
    #[error(
        "{rnic}: IOMMU unit {unit} has no perf PMU (Intel: Linux 6.3+ and a unit with \
         performance monitoring, ECAP.PMS; AMD: IOMMU performance counters); PMUs of IOMMUs \
         here: {present}"
    )]
    NoPmu {
        /// The RNIC.
        rnic: PciAddr,
        /// The unit.
        unit: String,
        /// The IOMMU PMUs that exist, or `none`.
        present: String,
    },
    /// The PMU does not list the IOTLB events.
    #[error("{pmu}: no events/{} (the unit does not count IOTLB lookups)", missing.join(", events/"))]
    NoEvents {
        /// The PMU.
        pmu: String,
        /// The aliases it lacks.
        missing: Vec<&'static str>,
    },
    /// The PMU has no cpumask to open counters on.
    #[error("{pmu}: no cpumask")]
    NoCpumask {
        /// The PMU.
        pmu: String,
    },
    /// An event string does not fit the PMU's formats.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// One IOTLB counter to open.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IotlbCounterSpec {
    /// The RNIC it is for.
    pub rnic: PciAddr,
    /// The unit (`dmar3`).
    pub unit: String,
    /// The PMU (`dmar3`, `amd_iommu_1`).
    pub pmu: String,
    /// What it counts.
    pub event: IotlbEvent,
    /// Whether it counts the RNIC's requests only (else the whole unit's).
    pub per_device: bool,
    /// `perf_event_attr.type`.
    pub pmu_type: u32,
    /// The CPU to open it on.
    pub cpu: u32,
    /// `perf_event_attr.config*`.
    pub config: EventConfig,
}

impl fmt::Display for IotlbCounterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/ on CPU {}",
            self.pmu,
            self.event.alias(),
            self.cpu
        )?;
        if self.per_device {
            write!(f, " for {}", self.rnic)?;
        }
        Ok(())
    }
}

/// PCI requester ID: bus, device, function (`bus << 8 | dev << 3 | fn`).
pub fn requester_id(addr: PciAddr) -> u16 {
    u16::from(addr.bus) << 8 | u16::from(addr.dev & 0x1f) << 3 | u16::from(addr.func & 0x7)
}

/// The counters of the IOTLB serving `rnic`, whose IOMMU unit is `unit` (from
/// [`rnic_translation`](super::iommu::rnic_translation)), filtered to the RNIC where the
/// PMU can.
pub fn plan(
    pmus: &[IommuPmu],
    rnic: PciAddr,
    unit: Option<&str>,
) -> Result<Vec<IotlbCounterSpec>, IotlbGap> {
    let unit = unit.ok_or(IotlbGap::NoUnit { rnic })?;
    let Some(found) = pmus.iter().find(|p| p.unit == unit) else {
        let present: Vec<&str> = pmus.iter().map(|p| p.pmu.name.as_str()).collect();
        return Err(IotlbGap::NoPmu {
            rnic,
            unit: unit.to_string(),
            present: if present.is_empty() {
                "none".into()
            } else {
                present.join(", ")
            },
        });
    };
    let missing = found.missing_events();
    if !missing.is_empty() {
        return Err(IotlbGap::NoEvents {
            pmu: found.pmu.name.clone(),
            missing,
        });
    }
    let cpu = *found.pmu.cpus.first().ok_or_else(|| IotlbGap::NoCpumask {
        pmu: found.pmu.name.clone(),
    })?;
    let per_device = found.filters_by_device();
    found
        .vendor
        .events()
        .iter()
        .map(|&event| {
            let mut terms = event.alias().to_string();
            if per_device {
                terms = format!("{terms},{}", found.vendor.filter_terms(requester_id(rnic)));
            }
            Ok(IotlbCounterSpec {
                rnic,
                unit: unit.to_string(),
                pmu: found.pmu.name.clone(),
                event,
                per_device,
                pmu_type: found.pmu.type_id,
                cpu,
                config: found.pmu.config(&terms)?,
            })
        })
        .collect()
}

/// Open IOTLB counters.
#[derive(Debug)]
pub struct IotlbMonitor {
    counters: Vec<(IotlbCounterSpec, Counter)>,
}

impl IotlbMonitor {
    /// Opens every planned counter; the first that will not open makes the monitor
    /// [`Unavailable`] (a partial set gives no miss ratio), naming it and, for a
    /// permission error, `perf_event_paranoid` below `root`.
    pub fn open(root: &SysRoot, specs: Vec<IotlbCounterSpec>) -> Result<IotlbMonitor, Unavailable> {
        let mut counters = Vec::new();
        for spec in specs {
            match Counter::open(spec.pmu_type, spec.config, spec.cpu) {
                Ok(c) => counters.push((spec, c)),
                Err(e) => return Err(open_failure(root, &spec.to_string(), &e)),
            }
        }
        Ok(IotlbMonitor { counters })
    }

    /// Reads every counter.
    pub fn read(&self) -> std::io::Result<IotlbSample> {
        self.counters
            .iter()
            .map(|(spec, c)| {
                let value = c
                    .read()
                    .map_err(|e| std::io::Error::new(e.kind(), format!("read {spec}: {e}")))?;
                Ok((spec.event, value))
            })
            .collect::<std::io::Result<_>>()
            .map(|values| IotlbSample {
                per_device: self.counters.iter().all(|(s, _)| s.per_device),
                values,
            })
    }
}

/// One read of a monitor's counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IotlbSample {
    /// Whether the counts are the RNIC's own.
    pub per_device: bool,
    /// Each event's value.
    pub values: Vec<(IotlbEvent, CounterValue)>,
}

/// IOTLB activity between two samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IotlbReading {
    /// Translations looked up (Intel `iotlb_lookup`; AMD PTE hits + misses).
    pub lookups: f64,
    /// Of which missed, each followed by a page walk (Intel lookups - hits; AMD PTE misses).
    pub misses: f64,
    /// AMD: page-directory cache misses during those walks (each one more memory read).
    pub walk_cache_misses: Option<f64>,
    /// Whether the counts are the RNIC's own or its unit's.
    pub per_device: bool,
}

impl IotlbReading {
    /// Misses per lookup; `None` without lookups.
    pub fn miss_ratio(&self) -> Option<f64> {
        (self.lookups > 0.0).then(|| self.misses / self.lookups)
    }
}

impl IotlbSample {
    /// The activity from `prev` to `self` (samples of one monitor), each count scaled by
    /// enabled/running for multiplexing; `None` when an event is missing from either or
    /// never ran in the interval.
    pub fn since(&self, prev: &IotlbSample) -> Option<IotlbReading> {
        let delta = |event: IotlbEvent| -> Option<f64> {
            let cur = self.values.iter().find(|(e, _)| *e == event)?.1;
            let old = prev.values.iter().find(|(e, _)| *e == event)?.1;
            let running = cur.time_running_ns.checked_sub(old.time_running_ns)?;
            let enabled = cur.time_enabled_ns.checked_sub(old.time_enabled_ns)?;
            (running > 0).then(|| scaled(cur.count.wrapping_sub(old.count), enabled, running))
        };
        let has = |e: IotlbEvent| self.values.iter().any(|(v, _)| *v == e);
        let (lookups, misses, walk_cache_misses) = if has(IotlbEvent::Lookup) {
            let lookups = delta(IotlbEvent::Lookup)?;
            (lookups, (lookups - delta(IotlbEvent::Hit)?).max(0.0), None)
        } else {
            let misses = delta(IotlbEvent::PteMiss)?;
            (
                delta(IotlbEvent::PteHit)? + misses,
                misses,
                delta(IotlbEvent::PdeMiss),
            )
        };
        Some(IotlbReading {
            lookups,
            misses,
            walk_cache_misses,
            per_device: self.per_device,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmu_names_map_to_their_units() {
        assert_eq!(unit_of("dmar3"), Some(("dmar3".into(), Vendor::Intel)));
        assert_eq!(unit_of("amd_iommu_1"), Some(("ivhd1".into(), Vendor::Amd)));
        for other in ["dmar", "dmarx", "amd_iommu_", "amd_df", "uncore_iio_0"] {
            assert_eq!(unit_of(other), None, "{other}");
        }
    }

    #[test]
    fn requester_ids_pack_bus_device_function() {
        let rid = |s: &str| requester_id(s.parse().unwrap());
        assert_eq!(rid("0000:38:00.0"), 0x3800);
        assert_eq!(rid("0000:41:00.1"), 0x4101);
        assert_eq!(rid("0000:ff:1f.7"), 0xffff);
    }

    fn value(count: u64, ns: u64) -> CounterValue {
        CounterValue {
            count,
            time_enabled_ns: ns,
            time_running_ns: ns,
        }
    }

    #[test]
    fn readings_give_lookups_misses_and_the_ratio() {
        let intel = |lookup, hit, ns| IotlbSample {
            per_device: true,
            values: vec![
                (IotlbEvent::Lookup, value(lookup, ns)),
                (IotlbEvent::Hit, value(hit, ns)),
            ],
        };
        let r = intel(1_000_100, 900_050, 2_000)
            .since(&intel(100, 50, 1_000))
            .unwrap();
        assert_eq!((r.lookups, r.misses), (1_000_000.0, 100_000.0));
        assert_eq!(r.miss_ratio(), Some(0.1));
        assert!(r.per_device && r.walk_cache_misses.is_none());
        // A counter that did not run in the interval: no reading, not zero.
        assert_eq!(intel(5, 5, 1_000).since(&intel(1, 1, 1_000)), None);

        let amd = |pte_hit, pte_mis, pde_mis| IotlbSample {
            per_device: false,
            values: vec![
                (IotlbEvent::PteHit, value(pte_hit, 10)),
                (IotlbEvent::PteMiss, value(pte_mis, 10)),
                (IotlbEvent::PdeHit, value(0, 10)),
                (IotlbEvent::PdeMiss, value(pde_mis, 10)),
            ],
        };
        let base = IotlbSample {
            per_device: false,
            values: amd(0, 0, 0)
                .values
                .into_iter()
                .map(|(e, _)| (e, value(0, 0)))
                .collect(),
        };
        let r = amd(600, 400, 40).since(&base).unwrap();
        assert_eq!(
            (r.lookups, r.misses, r.walk_cache_misses),
            (1000.0, 400.0, Some(40.0))
        );
        assert_eq!(r.miss_ratio(), Some(0.4));
        assert!(!r.per_device);
    }
}
