//! IOMMU-induced host congestion (HotNets'22 3.1): an RNIC whose DMA the IOMMU translates,
//! with a working set beyond the IOTLB's reach, is held below line rate by the bound
//! `C * pkt_size / (T_base + M * T_miss)`: "PCIe credits allow at most C packets in flight,
//! each PCIe write experiences a latency T_base + M * T_miss", M being the IOTLB misses per
//! packet.
//!
//! The rule runs before the link rules. For each RNIC whose IOMMU group is translated and
//! which has abnormal paths to memory nodes, it takes M from the IOTLB counters (misses per
//! DMA write over the last interval) or, where they were not read, from the working set
//! against the IOTLB's reach, and computes the bound with the host model's C, pkt_size,
//! T_base and T_miss. When the bound is below `1 - abnormal_th` of those paths' baseline,
//! IOTLB misses explain the drop: `iommu_congestion` on the RNIC's root port, where the
//! translation happens, and the paths are explained. A translated group whose bound stays
//! above the baseline explains nothing, and the link rules judge the paths as before.

use crate::evidence;
use crate::facts::Facts;
use model::{Cause, ComponentClass, Diagnosis, IommuActivity, IommuModel};
use std::collections::BTreeSet;

/// Diagnoses IOMMU congestion and removes the paths it explains from `remaining`.
pub(crate) fn diagnose(f: &Facts<'_>, remaining: &mut BTreeSet<usize>) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    for a in &f.snapshot.iommu {
        if a.translated != Some(true) {
            continue;
        }
        let to_memory: Vec<usize> = remaining
            .iter()
            .copied()
            .filter(|&j| {
                f.observed[j].rnic == a.rnic
                    && f.host.component(&f.observed[j].endpoint).map(|c| c.class())
                        == Some(ComponentClass::Memory)
            })
            .collect();
        if to_memory.is_empty() {
            continue;
        }
        let Some((m, m_words)) = misses_per_packet(a, &f.host.iommu) else {
            continue;
        };
        let model = &f.host.iommu;
        let bound = model.bound_gbps(m);
        let baselines: Vec<f64> = to_memory
            .iter()
            .filter_map(|&j| f.verdict(j).baseline_bandwidth_gbps)
            .collect();
        let Some(baseline) = baselines.iter().copied().reduce(f64::max) else {
            continue;
        };
        if bound >= (1.0 - f.th.abnormal_th) * baseline {
            continue;
        }
        let Some(root_port) = f.host.root_port_above(&a.rnic) else {
            continue;
        };
        let measured: Vec<f64> = to_memory
            .iter()
            .filter_map(|&j| f.verdict(j).bandwidth_gbps)
            .collect();
        let labels: Vec<String> = to_memory.iter().map(|&j| f.verdict(j).label()).collect();
        let gpu_normal = (0..f.observed.len())
            .filter(|&j| {
                f.observed[j].rnic == a.rnic
                    && f.host.component(&f.observed[j].endpoint).map(|c| c.class())
                        == Some(ComponentClass::Gpu)
            })
            .all(|j| f.observed[j].status != model::PathStatus::Abnormal);
        let gpu_words = if gpu_normal {
            ", while none of its paths to GPU memory (peer-to-peer, not translated) is abnormal"
        } else {
            ""
        };
        let evidence = format!(
            "the IOMMU translates {rnic}'s DMA ({pages}); {m_words}; with C = {c} posted writes \
             of {pkt} B in flight, T_base = {tb:.0} ns and T_miss = {tm:.0} ns, the NIC-to-memory \
             bound C * pkt / (T_base + M * T_miss) is {bound} (HotNets'22 3.1), below the \
             {base} baseline; {paths} measured {meas}{gpu_words}, so IOTLB misses at the root \
             port {root_port}, not a failed link, hold it back",
            rnic = a.rnic,
            pages = page_words(a, model),
            c = model.pcie_credits,
            pkt = model.packet_bytes,
            tb = model.t_base_ns,
            tm = model.t_miss_ns,
            bound = evidence::gbps(bound),
            base = evidence::gbps(baseline),
            paths = evidence::list(&labels),
            meas = if measured.is_empty() {
                "nothing".to_string()
            } else {
                evidence::gbps_range(&measured)
            },
        );
        remaining.retain(|j| !to_memory.contains(j));
        out.push(Diagnosis {
            cause: Cause::IommuCongestion,
            links: vec![root_port],
            rnic: Some(a.rnic.clone()),
            setting: None,
            evidence,
        });
    }
    out
}

/// M (IOTLB misses per DMA write) with the words that say where it comes from: the
/// counters when they were read, else the working set against the IOTLB's reach.
fn misses_per_packet(a: &IommuActivity, model: &IommuModel) -> Option<(f64, String)> {
    if let (Some(m), Some(ratio)) = (a.misses_per_packet(), a.miss_ratio()) {
        let over = a
            .interval_ns
            .map(|ns| format!(" over {}", evidence::duration(ns as f64 / 1000.0)))
            .unwrap_or_default();
        return Some((
            m,
            format!(
                "the IOTLB counters read {} misses in {} lookups{over} ({} miss rate), \
                 M = {m:.2} misses per DMA write",
                a.iotlb_misses.unwrap_or(0),
                a.iotlb_lookups.unwrap_or(0),
                evidence::percent(ratio)
            ),
        ));
    }
    let (ws, page) = (a.working_set_bytes?, a.page_bytes?);
    let ratio = model.miss_ratio(ws, page);
    let m = ratio * model.translations_per_packet(page);
    Some((
        m,
        format!(
            "no IOTLB counters were read; from the working set, {} of translations miss, \
             M = {m:.2} misses per DMA write",
            evidence::percent(ratio)
        ),
    ))
}

/// `4 KiB pages, a working set of 4096 MiB against an IOTLB reach of 128 x 4 KiB = 512 KiB`.
fn page_words(a: &IommuActivity, model: &IommuModel) -> String {
    let Some(page) = a.page_bytes else {
        return "page size not read".to_string();
    };
    let mut words = format!("{} pages", bytes(page));
    if let Some(ws) = a.working_set_bytes {
        words += &format!(
            ", a working set of {} against an IOTLB reach of {} x {} = {}",
            bytes(ws),
            model.iotlb_entries,
            bytes(page),
            bytes(model.reach_bytes(page))
        );
    }
    words
}

/// `4 KiB`, `2 MiB`, `4096 MiB`.
fn bytes(b: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if b >= MIB && b.is_multiple_of(MIB) {
        format!("{} MiB", b / MIB)
    } else if b >= KIB && b.is_multiple_of(KIB) {
        format!("{} KiB", b / KIB)
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity(misses: Option<u64>) -> IommuActivity {
        IommuActivity {
            rnic: "rnic1".into(),
            translated: Some(true),
            page_bytes: Some(4096),
            working_set_bytes: Some(4096 * 1024 * 1024),
            interval_ns: Some(1_000_000_000),
            dma_packets: Some(1000),
            iotlb_lookups: misses.map(|_| 2000),
            iotlb_misses: misses,
        }
    }

    #[test]
    fn counters_give_m_and_the_working_set_is_the_fallback() {
        let model = IommuModel::default();
        let (m, words) = misses_per_packet(&activity(Some(1500)), &model).unwrap();
        assert!((m - 1.5).abs() < 1e-12);
        assert!(words.contains("1500 misses in 2000 lookups over 1000 ms (75 % miss rate)"));
        let (m, words) = misses_per_packet(&activity(None), &model).unwrap();
        assert!((m - 2.0).abs() < 1e-3, "{m}");
        assert!(words.contains("from the working set"), "{words}");
        let unknown = IommuActivity {
            working_set_bytes: None,
            ..activity(None)
        };
        assert_eq!(misses_per_packet(&unknown, &model), None);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(2 * 1024 * 1024), "2 MiB");
        assert_eq!(bytes(4096 * 1024 * 1024), "4096 MiB");
        assert_eq!(bytes(100), "100 B");
        let words = page_words(&activity(None), &IommuModel::default());
        assert_eq!(
            words,
            "4 KiB pages, a working set of 4096 MiB against an IOTLB reach of 128 x 4 KiB = 512 KiB"
        );
    }
}
