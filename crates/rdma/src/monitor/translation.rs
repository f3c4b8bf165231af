//! Each RNIC's IOMMU translation in model ids: its group and whether the IOMMU translates its
//! DMA (`HostConfig::iommu_groups`), and the IOTLB of the unit that does, counted over the
//! monitor's interval where a perf PMU exists (`HostSnapshot::iommu`; HotNets'22 3.1).

use super::sample::Sample;
use super::{is_live, HostMonitor};
use crate::counters::iommu::{self, MemoryConfig, RnicTranslation};
use crate::counters::iotlb::{self, IotlbGap, IotlbMonitor};
use crate::counters::rnic;
use crate::counters::uncore::Unavailable;
use crate::sysfs::{DiscoverError, PciAddr, SysRoot};
use model::{ComponentId, IommuActivity, IommuGroup};
use std::path::PathBuf;

/// 4 KiB, bytes.
const PAGE_4K: u64 = 4096;

/// The page size of an RNIC's DMA mappings when it can be known: 4 KiB when the RNIC's DMA
/// is translated and either no huge page can back a buffer (none reserved, THP off) or the
/// IOMMU's page tables have no larger page. Otherwise which page an application's buffers
/// use is up to the application, so `None` (absent is not 4 KiB).
pub(super) fn page_bytes(t: &RnicTranslation) -> Option<u64> {
    let only_4k = t.buffer_pages_kib == [4] || t.iommu_pages_kib.as_deref() == Some(&[4]);
    (t.translated == Some(true) && only_4k).then_some(PAGE_4K)
}

/// The group an RNIC's DMA goes through, as lint reads it.
pub(super) fn group_of(device: &ComponentId, t: &RnicTranslation) -> IommuGroup {
    IommuGroup {
        device: device.clone(),
        group: t.group,
        kind: t.group_type.map(|k| k.to_string()),
        translated: t.translated,
        page_bytes: page_bytes(t),
    }
}

/// Why an RNIC's IOMMU translation could not be read; each names the RNIC.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum TranslationError {
    /// The RNIC has no PCI function to look its group up by.
    #[error("IOMMU group of {rnic}: no PCI function")]
    NoPciFunction {
        /// The RNIC.
        rnic: ComponentId,
    },
    /// The host's IOMMU configuration could not be read.
    #[error("IOMMU group of {rnic}: {source}")]
    MemoryConfig {
        /// The RNIC.
        rnic: ComponentId,
        /// Why.
        source: DiscoverError,
    },
    /// The RNIC's `iommu` link could not be read.
    #[error("IOMMU group of {rnic} ({pci}): {source}")]
    Group {
        /// The RNIC.
        rnic: ComponentId,
        /// Its PCI function.
        pci: PciAddr,
        /// Why.
        source: DiscoverError,
    },
}

/// Why no IOMMU PMU of this host can be counted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum PmusUnavailable {
    /// The PMUs could not be listed.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// A captured tree: perf_event counts the running kernel's PMUs, not the tree's.
    #[error(
        "IOTLB PMUs of the captured tree {} are not counted (perf_event counts this kernel)",
        .tree.display()
    )]
    CapturedTree {
        /// The tree's root.
        tree: PathBuf,
    },
}

/// Why an RNIC's IOTLB is not counted; each names the RNIC.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum IotlbError {
    /// Its translation is unknown.
    #[error(transparent)]
    Translation(#[from] TranslationError),
    /// No IOMMU PMU can be counted.
    #[error("IOTLB of {rnic}: {source}")]
    Pmus {
        /// The RNIC.
        rnic: ComponentId,
        /// Why.
        source: PmusUnavailable,
    },
    /// Its DMA bypasses the IOMMU.
    #[error("IOTLB of {rnic}: its DMA is not translated (group type {group_type})")]
    NotTranslated {
        /// The RNIC.
        rnic: ComponentId,
        /// Its group's type, or `unknown`.
        group_type: String,
    },
    /// Its unit's PMU cannot count it.
    #[error("IOTLB of {rnic}: {source}")]
    Plan {
        /// The RNIC.
        rnic: ComponentId,
        /// Why.
        source: IotlbGap,
    },
    /// The counters could not be opened.
    #[error("IOTLB of {rnic}: {}", .source.reason)]
    Open {
        /// The RNIC.
        rnic: ComponentId,
        /// Why.
        #[source]
        source: Unavailable,
    },
}

/// Each RNIC's translation, or why it could not be read.
pub(super) type Translations = Vec<(ComponentId, Result<RnicTranslation, TranslationError>)>;

/// The IOTLB counters of each RNIC, or why they cannot be opened.
pub(super) type IotlbCounters = Vec<(ComponentId, Result<IotlbMonitor, IotlbError>)>;

impl HostMonitor {
    /// Each RNIC with its PCI function (for rxe, its parent netdev's), in binding order.
    pub(super) fn rnic_functions(&self) -> Vec<(ComponentId, Option<PciAddr>)> {
        self.discovery
            .bindings
            .rnics
            .iter()
            .map(|(id, b)| {
                let pci = self
                    .discovery
                    .rdma_ports
                    .iter()
                    .find(|p| p.device == b.device && p.port == b.port)
                    .and_then(|p| p.pci);
                (id.clone(), pci)
            })
            .collect()
    }

    /// Each RNIC's translation from `memory`, or why it could not be read.
    pub(super) fn translations(&self, memory: &MemoryConfig) -> Translations {
        self.rnic_functions()
            .into_iter()
            .map(|(rnic, pci)| {
                let t = match pci {
                    None => Err(TranslationError::NoPciFunction { rnic: rnic.clone() }),
                    Some(pci) => {
                        iommu::rnic_translation(&self.root, memory, pci).map_err(|source| {
                            TranslationError::Group {
                                rnic: rnic.clone(),
                                pci,
                                source,
                            }
                        })
                    }
                };
                (rnic, t)
            })
            .collect()
    }

    /// Each RNIC's `IommuActivity` from the translations read at open and the IOTLB
    /// samples: lookups and misses only where both samples were read.
    pub(super) fn iommu_activity(&self, prev: &Sample, cur: &Sample) -> Vec<IommuActivity> {
        let interval_ns = cur.at.duration_since(prev.at).as_nanos() as u64;
        self.translations
            .iter()
            .map(|(id, t)| {
                let t = t.as_ref().ok();
                let reading = prev
                    .iotlb
                    .get(id)
                    .zip(cur.iotlb.get(id))
                    .and_then(|(p, c)| c.as_ref().ok()?.since(p.as_ref().ok()?));
                IommuActivity {
                    rnic: id.clone(),
                    translated: t.and_then(|t| t.translated),
                    page_bytes: t.and_then(page_bytes),
                    working_set_bytes: None,
                    interval_ns: reading.map(|_| interval_ns),
                    dma_packets: reading.and_then(|_| {
                        let (p, c) = self.port_pair(prev, cur, id)?;
                        rnic::counter_delta(p, c, "port_rcv_packets")
                    }),
                    iotlb_lookups: reading.map(|r| r.lookups.round() as u64),
                    iotlb_misses: reading.map(|r| r.misses.round() as u64),
                }
            })
            .collect()
    }
}

/// Opens the IOTLB counters of each translated RNIC on the running system; for a captured
/// tree, or an RNIC whose unit has no PMU, the reason instead.
pub(super) fn open_iotlb(root: &SysRoot, translations: &Translations) -> IotlbCounters {
    let pmus = if is_live(root) {
        iotlb::iommu_pmus(root).map_err(PmusUnavailable::from)
    } else {
        Err(PmusUnavailable::CapturedTree {
            tree: root.root().to_path_buf(),
        })
    };
    translations
        .iter()
        .map(|(id, t)| {
            let rnic = id.clone();
            let monitor = match (t, &pmus) {
                (Err(why), _) => Err(why.clone().into()),
                (_, Err(why)) => Err(IotlbError::Pmus {
                    rnic,
                    source: why.clone(),
                }),
                (Ok(t), Ok(_)) if t.translated == Some(false) => Err(IotlbError::NotTranslated {
                    rnic,
                    group_type: t.group_type.map_or("unknown".into(), |k| k.to_string()),
                }),
                (Ok(t), Ok(pmus)) => match iotlb::plan(pmus, t.rnic, t.unit.as_deref()) {
                    Err(source) => Err(IotlbError::Plan { rnic, source }),
                    Ok(specs) => IotlbMonitor::open(root, specs)
                        .map_err(|source| IotlbError::Open { rnic, source }),
                },
            };
            (id.clone(), monitor)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::dgx_fixture as dgx;

    fn translation(
        translated: Option<bool>,
        buffers: &[u64],
        unit: Option<&[u64]>,
    ) -> RnicTranslation {
        RnicTranslation {
            rnic: "0000:15:00.0".parse().unwrap(),
            unit: Some("dmar0".into()),
            group: Some(15),
            group_type: None,
            translated,
            buffer_pages_kib: buffers.to_vec(),
            iommu_pages_kib: unit.map(<[u64]>::to_vec),
        }
    }

    #[test]
    fn the_page_size_is_known_only_when_nothing_larger_can_back_a_buffer() {
        assert_eq!(page_bytes(&translation(Some(true), &[4], None)), Some(4096));
        assert_eq!(
            page_bytes(&translation(Some(true), &[4, 2048], Some(&[4]))),
            Some(4096)
        );
        assert_eq!(
            page_bytes(&translation(Some(true), &[4, 2048], Some(&[4, 2048]))),
            None
        );
        assert_eq!(page_bytes(&translation(Some(true), &[4, 2048], None)), None);
        assert_eq!(page_bytes(&translation(Some(false), &[4], None)), None);
        assert_eq!(page_bytes(&translation(None, &[4], None)), None);
    }

    #[test]
    fn the_fixture_rnics_are_translated_on_4k_pages_and_their_iotlb_is_not_counted() {
        let mut m = dgx();
        let config = m.config();
        let groups: Vec<_> = config
            .iommu_groups
            .iter()
            .map(|g| {
                (
                    g.device.as_str(),
                    g.kind.as_deref(),
                    g.translated,
                    g.page_bytes,
                )
            })
            .collect();
        // DMA-FQ groups, no huge page reserved and THP `never`: 4 KiB pages (README).
        assert_eq!(groups.len(), 4, "{groups:?}");
        for g in &groups {
            assert_eq!(
                (g.1, g.2, g.3),
                (Some("DMA-FQ"), Some(true), Some(4096)),
                "{g:?}"
            );
        }
        let report = m.read();
        assert_eq!(report.monitor.iommu.len(), 4);
        for a in &report.monitor.iommu {
            assert_eq!((a.translated, a.page_bytes), (Some(true), Some(4096)));
            assert_eq!(
                (a.iotlb_lookups, a.iotlb_misses),
                (None, None),
                "absent is not zero"
            );
        }
        let iotlb = report.sources.iter().find(|s| s.source == "iotlb").unwrap();
        assert_eq!(iotlb.status, model::SourceStatus::Unavailable);
        assert!(
            iotlb.detail.as_deref().unwrap().contains("captured tree"),
            "{iotlb:?}"
        );
    }
}
