//! `hostping check --iotlb`: a stream from each translated RNIC to each memory node over a
//! working set swept from a few pages to beyond the IOTLB's reach, with 4 KiB and 2 MiB
//! pages, and where its throughput falls off: the shape of HotNets'22 Figures 3-5 (3.1:
//! once the working set exceeds `entries * page`, every DMA write waits for page-table
//! walks and the NIC-to-memory bound C * pkt / (T_base + M * T_miss) drops).
//!
//! Where a curve falls off is a judgement: `analyze::iotlb_knee` finds the knee of each.
//!
//! On a virtual host each point is a stream probe of the virtual host with the RNIC's
//! `iommu` fault set to that working set and page size (labelled simulated).

use analyze::iotlb_knee::{find_knee, Knee, KNEE_DROP};
use model::iommu::IotlbPoint;
use model::{ComponentClass, ComponentId, HostTopology, IommuGroup, Provenance};
use probe::{ProbeEngine, ProbeError, StreamSpec};
use rdma::memory::host::Pages;
use serde::Serialize;
use vhost::{Fault, PageSize, VhostConfig, VirtualHost};

/// The first working set of a sweep: 4 pages of 4 KiB.
const FIRST_BYTES: u64 = 16 * 1024;

/// The last working set of the standard sweep, MiB (16 GiB).
pub const DEFAULT_MAX_MIB: u64 = 16 * 1024;

/// The working sets a sweep measures, bytes, smallest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPlan {
    working_sets: Vec<u64>,
}

/// Why a sweep plan cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The smallest working set is 0 or above the largest.
    #[error("IOTLB sweep: working sets {first}..{last} bytes are empty or reversed")]
    Range {
        /// The smallest working set, bytes.
        first: u64,
        /// The largest working set, bytes.
        last: u64,
    },
    /// The growth factor does not grow.
    #[error("IOTLB sweep: factor {0} must be at least 2")]
    Factor(u64),
}

impl SweepPlan {
    /// Working sets `first`, `first * factor`, ... up to and including `last` (the last
    /// step is capped at `last`, so the sweep always ends there).
    pub fn geometric(first: u64, last: u64, factor: u64) -> Result<SweepPlan, PlanError> {
        if first == 0 || first > last {
            return Err(PlanError::Range { first, last });
        }
        if factor < 2 {
            return Err(PlanError::Factor(factor));
        }
        let mut working_sets = vec![first];
        let mut ws = first;
        while ws < last {
            ws = ws.saturating_mul(factor).min(last);
            working_sets.push(ws);
        }
        Ok(SweepPlan { working_sets })
    }

    /// The default sweep: 4 pages of 4 KiB (16 KiB) to 64 times the 2 MiB-page reach of a
    /// 128-entry IOTLB (16 GiB), by 4x: both knees of HotNets'22 3.1 (512 KiB with 4 KiB
    /// pages, 256 MiB with 2 MiB pages) fall inside, with points on both sides.
    pub fn standard() -> SweepPlan {
        SweepPlan::up_to(DEFAULT_MAX_MIB)
    }

    /// The standard sweep cut at `max_mib` MiB (at least the first point): a short sweep
    /// for a small machine.
    pub fn up_to(max_mib: u64) -> SweepPlan {
        let last = max_mib.saturating_mul(1024 * 1024).max(FIRST_BYTES);
        SweepPlan::geometric(FIRST_BYTES, last, 4).expect("valid plan")
    }

    /// The working sets, bytes.
    pub fn working_sets(&self) -> &[u64] {
        &self.working_sets
    }
}

/// The sweep of one RNIC to one memory node with one page size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IotlbCurve {
    /// The streaming RNIC.
    pub rnic: ComponentId,
    /// The memory node streamed to.
    pub endpoint: ComponentId,
    /// `4k` or `2m`.
    pub page: &'static str,
    /// The IOTLB's reach with these pages, bytes.
    pub reach_bytes: u64,
    /// The points, smallest working set first.
    pub points: Vec<IotlbPoint>,
    /// Where it falls off, if it does.
    pub knee: Option<Knee>,
}

/// What `check --iotlb` adds to a report (the `iotlb` field of its JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IotlbReport {
    /// Measured or simulated.
    pub provenance: Provenance,
    /// One curve per translated RNIC, memory node and page size.
    pub curves: Vec<IotlbCurve>,
    /// What was not swept, and why.
    pub notes: Vec<String>,
}

/// The stream of each point: RDMA WRITE of 64 KiB messages, 16 outstanding, 1 ms.
fn point_spec() -> StreamSpec {
    StreamSpec::default()
}

fn page_name(page: PageSize) -> &'static str {
    match page {
        PageSize::K4 => "4k",
        PageSize::M2 => "2m",
    }
}

/// The paths from `rnic` to the memory nodes: the ones a sweep measures.
fn memory_paths<'h>(
    host: &'h HostTopology,
    rnic: &'h ComponentId,
) -> impl Iterator<Item = &'h model::Path> {
    host.paths_of(rnic).filter(|p| {
        host.component(&p.endpoint)
            .is_some_and(|c| c.class() == ComponentClass::Memory)
    })
}

/// Sweeps the paths from each of `rnics` to each memory node with each of `pages`,
/// measuring each point with `measure`; a point that fails is left out with a note.
fn sweep<'h>(
    host: &'h HostTopology,
    rnics: impl Iterator<Item = &'h ComponentId>,
    pages: &[PageSize],
    plan: &SweepPlan,
    mut measure: impl FnMut(&model::Path, u64, PageSize) -> Result<f64, ProbeError>,
    notes: &mut Vec<String>,
) -> Vec<IotlbCurve> {
    let mut curves = Vec::new();
    for rnic in rnics {
        for path in memory_paths(host, rnic) {
            for &page in pages {
                let mut points = Vec::new();
                for &ws in plan.working_sets() {
                    match measure(path, ws, page) {
                        Ok(gbps) => points.push(IotlbPoint {
                            working_set_bytes: ws,
                            gbps,
                        }),
                        Err(e) => notes.push(format!(
                            "{} -> {} {} at {}: not measured: {e}",
                            path.rnic,
                            path.endpoint,
                            page_name(page),
                            size_text(ws)
                        )),
                    }
                }
                curves.push(IotlbCurve {
                    rnic: path.rnic.clone(),
                    endpoint: path.endpoint.clone(),
                    page: page_name(page),
                    reach_bytes: host.iommu.reach_bytes(page.bytes()),
                    knee: find_knee(&points, KNEE_DROP),
                    points,
                });
            }
        }
    }
    curves
}

/// The sweep on a virtual host of `host` with `faults`: only RNICs whose DMA an `iommu`
/// fault translates are swept (the others have no IOTLB in their path: a note says so).
pub fn simulate(
    host: &HostTopology,
    faults: &[Fault],
    config: &VhostConfig,
    plan: &SweepPlan,
) -> IotlbReport {
    let mut notes = Vec::new();
    let translated = |id: &ComponentId| {
        faults
            .iter()
            .any(|f| matches!(f, Fault::Iommu { rnic, .. } if rnic == id))
    };
    for rnic in host.rnics().filter(|c| !translated(&c.id)) {
        notes.push(format!(
            "{}: DMA not translated (IOMMU identity: no `iommu` fault), no IOTLB in its path",
            rnic.id
        ));
    }
    let rnics = host.rnics().map(|c| &c.id).filter(|id| translated(id));
    let curves = sweep(
        host,
        rnics,
        &[PageSize::K4, PageSize::M2],
        plan,
        |path, ws, page| simulated_point(host, faults, config, ws, page, path),
        &mut notes,
    );
    IotlbReport {
        provenance: Provenance::Simulated,
        curves,
        notes,
    }
}

/// What the reader must know of `rnic`'s IOMMU group to read its measured curve: a curve
/// only shows HotNets'22 3.1's fall-off where the IOMMU translates the RNIC's DMA, and a
/// software RNIC (rxe, siw) does no DMA of its own (the CPU copies), whatever its parent
/// NIC's group says.
fn translation_note(rnic: &ComponentId, software: bool, groups: &[IommuGroup]) -> String {
    if software {
        return format!(
            "{rnic}: a software RNIC: the CPU copies its data, no IOTLB in its path (the curve \
             checks the sweep's mechanics, not HotNets'22 3.1's fall-off)"
        );
    }
    let Some(g) = groups.iter().find(|g| g.device == *rnic) else {
        return format!(
            "{rnic}: IOMMU group unknown: whether its DMA is translated cannot be told"
        );
    };
    let group = g.group.map_or_else(
        || "its IOMMU group".to_string(),
        |n| format!("IOMMU group {n}"),
    );
    let kind = g.kind.as_deref().unwrap_or("of unknown type");
    match g.translated {
        Some(true) => format!(
            "{rnic}: {group} is {kind}: DMA translated, an IOTLB miss costs page-table walks"
        ),
        Some(false) => format!(
            "{rnic}: {group} is {kind}: DMA not translated, no IOTLB in its path (no fall-off \
             expected)"
        ),
        None => format!("{rnic}: {group} is {kind}: whether its DMA is translated is unknown"),
    }
}

/// Where a measured sweep stands: told before each point.
#[derive(Debug, Clone)]
pub struct PointProgress {
    /// Points measured.
    pub done: usize,
    /// Points in the sweep.
    pub total: usize,
    /// The point about to be measured, in words.
    pub point: String,
}

/// The sweep through the verbs engine of this host, from every RNIC to every memory node,
/// in 4 KiB base pages and in 2 MiB huge pages from the hugetlb pool, telling `progress`
/// before each point (a full sweep moves gigabytes per point). `groups` are the RNICs' IOMMU groups
/// and `software` the software RNICs: each RNIC's curve gets a note saying whether its DMA
/// is translated. A 2 MiB point needs free huge pages on its node: where there are too
/// few, the point is left out with a note naming the sysfs file that reserves them.
pub fn measure(
    engine: &mut rdma::engine::VerbsEngine,
    host: &HostTopology,
    groups: &[IommuGroup],
    software: &[ComponentId],
    plan: &SweepPlan,
    progress: &mut dyn FnMut(PointProgress),
) -> IotlbReport {
    let mut notes = Vec::new();
    notes.extend(
        host.rnics()
            .map(|c| translation_note(&c.id, software.contains(&c.id), groups)),
    );
    let memory_paths: usize = host
        .rnics()
        .map(|r| memory_paths(host, &r.id).count())
        .sum();
    let pages = [PageSize::K4, PageSize::M2];
    let total = memory_paths * pages.len() * plan.working_sets().len();
    let mut done = 0;
    let curves = sweep(
        host,
        host.rnics().map(|c| &c.id),
        &pages,
        plan,
        |path, ws, page| {
            progress(PointProgress {
                done,
                total,
                point: format!(
                    "{} -> {}, {}, {} pages",
                    path.rnic,
                    path.endpoint,
                    size_text(ws),
                    page_name(page)
                ),
            });
            let memory = match page {
                PageSize::K4 => Pages::Base,
                PageSize::M2 => Pages::Huge2M,
            };
            let gbps = engine
                .stream_over(path, &point_spec(), ws, memory)
                .map(|r| r.bandwidth_gbps);
            done += 1;
            gbps
        },
        &mut notes,
    );
    IotlbReport {
        provenance: Provenance::Measured,
        curves,
        notes,
    }
}

/// Why `check --iotlb` could not sweep.
#[derive(Debug, thiserror::Error)]
pub enum IotlbError {
    /// The host could not be probed.
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
    /// A real host without a model (no active RDMA port) has nothing to sweep.
    #[error("check --iotlb: no host model to sweep")]
    NoModel,
}

/// The IOTLB sweep of `check --iotlb` on `host` up to `max_mib`: the virtual host's curves
/// on a simulated host, streams through the verbs engine on a real one.
pub fn sweep_host(
    host: &mut crate::host::Host,
    probe: &crate::host::ProbeOptions,
    max_mib: u64,
    progress: &mut dyn FnMut(PointProgress),
) -> Result<IotlbReport, IotlbError> {
    let plan = SweepPlan::up_to(max_mib);
    if let crate::host::Host::Virtual { vhost, options } = host {
        let config = VhostConfig {
            seed: options.seed,
            noise: options.noise,
            ..VhostConfig::default()
        };
        return Ok(simulate(vhost.topology(), vhost.faults(), &config, &plan));
    }
    let model = host.model().cloned().ok_or(IotlbError::NoModel)?;
    let groups = host.config().iommu_groups;
    let software: Vec<ComponentId> = host.discovery().map_or_else(Vec::new, |d| {
        d.bindings
            .rnics
            .iter()
            .filter(|(_, b)| b.software)
            .map(|(id, _)| id.clone())
            .collect()
    });
    // A real host (the virtual one returned above) always has a verbs engine.
    let Some(engine) = host.verbs_engine(probe)? else {
        unreachable!("a real host probes through its verbs engine")
    };
    Ok(measure(engine, &model, &groups, &software, &plan, progress))
}

/// Gb/s of one stream on a virtual host whose RNIC translates a working set of
/// `working_set_bytes` in pages of `page` (the other faults kept).
fn simulated_point(
    host: &HostTopology,
    faults: &[Fault],
    config: &VhostConfig,
    working_set_bytes: u64,
    page: PageSize,
    path: &model::Path,
) -> Result<f64, ProbeError> {
    let mut faults = faults
        .iter()
        .filter(|f| !matches!(f, Fault::Iommu { rnic, .. } if *rnic == path.rnic))
        .cloned()
        .collect::<Vec<_>>();
    faults.push(Fault::Iommu {
        rnic: path.rnic.clone(),
        working_set_mib: working_set_bytes as f64 / (1024.0 * 1024.0),
        page,
    });
    let mut vhost = VirtualHost::new(host.clone(), faults, config.clone());
    vhost.stream(path, &point_spec()).map(|r| r.bandwidth_gbps)
}

/// A size in the largest binary unit that keeps it whole (16 KiB, 512 MiB, 16 GiB).
pub fn size_text(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    UNITS
        .iter()
        .find(|(_, u)| bytes >= *u && bytes.is_multiple_of(*u))
        .map_or(format!("{bytes} B"), |(name, u)| {
            format!("{} {name}", bytes / u)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(translated: Option<bool>, kind: &str) -> IommuGroup {
        IommuGroup {
            device: "rnic1".into(),
            group: Some(17),
            kind: Some(kind.to_string()),
            translated,
            page_bytes: Some(4096),
        }
    }

    #[test]
    fn each_rnic_is_told_translated_or_not_and_a_software_rnic_never_is() {
        let rnic1 = ComponentId::from("rnic1");
        let note = translation_note(&rnic1, false, &[group(Some(true), "DMA-FQ")]);
        assert!(
            note.starts_with("rnic1: IOMMU group 17 is DMA-FQ: DMA translated"),
            "{note}"
        );
        let note = translation_note(&rnic1, false, &[group(Some(false), "identity")]);
        assert!(note.contains("identity: DMA not translated"), "{note}");
        let note = translation_note(&rnic1, false, &[group(None, "unmanaged")]);
        assert!(note.contains("unknown"), "{note}");
        let note = translation_note(&rnic1, false, &[]);
        assert!(note.starts_with("rnic1: IOMMU group unknown"), "{note}");
        // rxe's parent NIC is translated, but the CPU moves rxe's data.
        let note = translation_note(&rnic1, true, &[group(Some(true), "DMA-FQ")]);
        assert!(note.starts_with("rnic1: a software RNIC"), "{note}");
    }

    #[test]
    fn the_standard_plan_brackets_both_reaches() {
        let plan = SweepPlan::standard();
        let ws = plan.working_sets();
        assert_eq!(ws.first(), Some(&(16 * 1024)));
        assert_eq!(ws.last(), Some(&(16u64 << 30)));
        assert!(ws.windows(2).all(|w| w[1] == w[0] * 4));
        let iommu = model::IommuModel::default();
        for page in [model::iommu::PAGE_4K, model::iommu::PAGE_2M] {
            let reach = iommu.reach_bytes(page);
            assert!(ws.iter().any(|&w| w <= reach) && ws.iter().any(|&w| w > reach));
        }
    }

    #[test]
    fn a_plan_ends_at_its_last_size_and_rejects_bad_ranges() {
        let plan = SweepPlan::geometric(4096, 100_000, 4).unwrap();
        assert_eq!(plan.working_sets(), &[4096, 16384, 65536, 100_000]);
        assert_eq!(SweepPlan::geometric(8, 8, 2).unwrap().working_sets(), &[8]);
        assert!(matches!(
            SweepPlan::geometric(0, 8, 2),
            Err(PlanError::Range { .. })
        ));
        assert!(matches!(
            SweepPlan::geometric(16, 8, 2),
            Err(PlanError::Range { .. })
        ));
        assert_eq!(SweepPlan::geometric(1, 8, 1), Err(PlanError::Factor(1)));
    }

    #[test]
    fn the_virtual_host_falls_off_past_each_reach() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let faults = crate::sim::parse_faults(&["iommu:rnic0:4096:4k".into()], &host).unwrap();
        let config = VhostConfig {
            noise: 0.0,
            ..VhostConfig::default()
        };
        let plan = SweepPlan::standard();
        let report = simulate(&host, &faults, &config, &plan);
        assert_eq!(report.provenance, Provenance::Simulated);
        assert!(report.curves.iter().all(|c| c.rnic.as_str() == "rnic0"));
        assert!(report.notes.iter().any(|n| n.starts_with("rnic1:")));
        for c in &report.curves {
            let knee = c.knee.unwrap_or_else(|| panic!("{c:?} has no knee"));
            // Within reach the stream is not bound by translation; past it, it is.
            assert!(knee.last_full_bytes <= c.reach_bytes, "{c:?}");
            assert!(knee.first_low_bytes > c.reach_bytes, "{c:?}");
        }
        let floor = |page| {
            report
                .curves
                .iter()
                .find(|c| c.page == page)
                .and_then(|c| c.knee)
                .unwrap()
                .floor_gbps
        };
        // 2 MiB pages keep more of the throughput far beyond reach (HotNets'22 Fig. 3).
        assert!(floor("2m") > floor("4k"));
    }

    #[test]
    fn sizes_print_in_whole_units() {
        assert_eq!(size_text(16 * 1024), "16 KiB");
        assert_eq!(size_text(256 << 20), "256 MiB");
        assert_eq!(size_text(16 << 30), "16 GiB");
        assert_eq!(size_text(1000), "1000 B");
    }
}
