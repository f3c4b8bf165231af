//! Static configuration checks (`hostping lint`): risky settings found without a probe,
//! each with why it matters and where the reason comes from.
//!
//! | rule | what | source |
//! |---|---|---|
//! | `acs_redirect` | ACS Request/Completion Redirect on a switch port that RNIC-GPU traffic turns in | Hostping 2.1, 6 #7 |
//! | `ats_off` | ATS disabled on an RNIC that reaches GPUs peer-to-peer | Hostping 6 #8 |
//! | `downtrained_link` | a PCIe link running below its speed or width | Hostping 6 #1, #2 |
//! | `iommu_without_hugepages` | the IOMMU translates RNIC DMA and buffers can only use 4 KiB pages | HotNets'22 3.1, Fig. 4 |
//! | `iommu_4k_pages` | an RNIC's IOMMU group translates its DMA in 4 KiB pages: the IOTLB reaches 128 x 4 KiB | HotNets'22 3.1, Fig. 4 |
//! | `odp_timeout_floor` | ODP memory regions in use on an RNIC whose transport timeout floor is ~500 ms or more | ISPASS'21 (damming) |
//! | `gpu_without_local_rnic` | a GPU with no RNIC under its root port: all its GDR crosses the root complex | Hostping 3.2.2 |
//!
//! Checks run only on what was read: a value in `HostConfig::unavailable` is not a finding.

use model::{ComponentClass, ComponentId, HostConfig, HostTopology, Turnaround};
use serde::Serialize;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A layout that limits performance by design; worth knowing, not fixing tonight.
    Notice,
    /// A setting or failure that costs bandwidth or latency now.
    Warning,
}

/// One risky configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LintFinding {
    /// The rule (stable id, see the module table).
    pub rule: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// The component or link it is about.
    pub subject: String,
    /// What was found, with the values read.
    pub detail: String,
    /// Why it matters.
    pub why: &'static str,
    /// The paper section the reason comes from.
    pub source: &'static str,
}

const ACS_WHY: &str = "ACS redirect sends GPUDirect traffic that should turn around in the \
    PCIe switch up to the CPU root complex: RNIC-GPU latency rises from about 1.0 us to 2.2 us \
    and bandwidth falls to about 125 Gb/s. Bridges often come back with ACS on after a reboot.";
const ATS_WHY: &str = "Without ATS the RNIC cannot translate addresses itself, so every GPUDirect \
    packet goes to the root complex for translation, as with ACS on.";
const DOWNTRAINED_WHY: &str = "A link that trained below its speed or width has lost bandwidth \
    (loose connector, dust on the fingers, failing hardware): every path across it is slower.";
const IOMMU_WHY: &str = "With the IOMMU translating RNIC DMA, each IOTLB miss adds a page-table \
    walk to a DMA; with 4 KiB pages the IOTLB covers little memory and NIC-to-memory throughput \
    falls (over 30 % with hugepages disabled) while drops rise.";
const IOMMU_4K_WHY: &str = "With 4 KiB mappings the IOTLB maps only its entries x 4 KiB of the \
    RNIC's buffers; a working set beyond that misses on most DMA writes, and each miss adds a \
    page-table walk to a write that holds a PCIe credit: NIC-to-memory throughput is bounded by \
    C * pkt / (T_base + M * T_miss). 2 MiB pages shrink the working set 512x.";
const ODP_FLOOR_WHY: &str = "An RNIC page fault on an ODP region can lose a packet; the \
    requester then waits out the transport timeout, which firmware will not set below ~500 ms \
    (packet damming), and client-side ODP over many QPs can set off a retransmission storm \
    (packet flood). Pin the memory of latency-sensitive traffic instead.";
/// A transport timeout floor at or above this, ms, makes an ODP page fault a stall of
/// hundreds of ms (ISPASS'21: 500 ms on ConnectX).
pub const ODP_FLOOR_MS: f64 = 100.0;
const ACROSS_WHY: &str = "GPUDirect RDMA between an RNIC and a GPU under different root ports \
    crosses the CPU root complex (or the inter-socket bus): about 2.2 us and 125 Gb/s instead of \
    line rate. Jobs on this GPU cannot reach an RNIC at line rate by GDR.";

/// Every finding for `host` given its configuration, warnings first.
pub fn lint(host: &HostTopology, config: &HostConfig) -> Vec<LintFinding> {
    let mut out = Vec::new();
    acs_redirect(host, config, &mut out);
    ats_off(host, config, &mut out);
    downtrained(config, &mut out);
    iommu_without_hugepages(config, &mut out);
    iommu_4k_pages(host, config, &mut out);
    odp_timeout_floor(config, &mut out);
    gpu_without_local_rnic(host, &mut out);
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// RNIC-GPU paths that turn around in a PCIe switch and cross `switch` on the way.
fn gdr_paths_through<'a>(
    host: &'a HostTopology,
    switch: &'a ComponentId,
) -> impl Iterator<Item = &'a model::Path> + 'a {
    host.paths().iter().filter(move |p| {
        matches!(p.turnaround, Turnaround::Switch(_))
            && p.links.iter().any(|l| {
                host.link(l)
                    .is_some_and(|l| &l.up == switch || &l.down == switch)
            })
    })
}

fn pairs(paths: &[&model::Path]) -> String {
    paths
        .iter()
        .map(|p| format!("{}-{}", p.rnic, p.endpoint))
        .collect::<Vec<_>>()
        .join(", ")
}

fn acs_redirect(host: &HostTopology, config: &HostConfig, out: &mut Vec<LintFinding>) {
    let mut switches: Vec<&ComponentId> = config
        .acs
        .iter()
        .filter(|p| p.redirect)
        .map(|p| &p.switch)
        .collect();
    switches.dedup();
    for switch in switches {
        let affected: Vec<_> = gdr_paths_through(host, switch).collect();
        if affected.is_empty() {
            continue;
        }
        let ports: Vec<String> = config
            .acs
            .iter()
            .filter(|p| &p.switch == switch && p.redirect)
            .map(|p| format!("{} ({})", p.port, p.control))
            .collect();
        out.push(LintFinding {
            rule: "acs_redirect",
            severity: Severity::Warning,
            subject: switch.to_string(),
            detail: format!(
                "ACS redirect on {}; GPUDirect paths detoured: {}",
                ports.join("; "),
                pairs(&affected)
            ),
            why: ACS_WHY,
            source: "Hostping 2.1, 3.2.2, 6 #7",
        });
    }
}

fn ats_off(host: &HostTopology, config: &HostConfig, out: &mut Vec<LintFinding>) {
    for ats in config.ats.iter().filter(|a| !a.enabled) {
        let is_rnic = host
            .component(&ats.device)
            .is_some_and(|c| c.class() == ComponentClass::Rnic);
        let affected: Vec<_> = host
            .paths_of(&ats.device)
            .filter(|p| matches!(p.turnaround, Turnaround::Switch(_)))
            .collect();
        if !is_rnic || affected.is_empty() {
            continue;
        }
        out.push(LintFinding {
            rule: "ats_off",
            severity: Severity::Warning,
            subject: ats.device.to_string(),
            detail: format!(
                "ATS disabled on {}; its GPUDirect paths: {}",
                ats.device,
                pairs(&affected)
            ),
            why: ATS_WHY,
            source: "Hostping 6 #8",
        });
    }
}

fn downtrained(config: &HostConfig, out: &mut Vec<LintFinding>) {
    for t in config.links.iter().filter(|t| t.downtrained()) {
        let function = t
            .function
            .as_deref()
            .map(|f| format!(" ({f})"))
            .unwrap_or_default();
        out.push(LintFinding {
            rule: "downtrained_link",
            severity: Severity::Warning,
            subject: t.link.to_string(),
            detail: format!(
                "{}{function} runs at {} GT/s x{} of {} GT/s x{}",
                t.link, t.current_gts, t.current_width, t.max_gts, t.max_width
            ),
            why: DOWNTRAINED_WHY,
            source: "Hostping 6 #1, #2",
        });
    }
}

fn iommu_without_hugepages(config: &HostConfig, out: &mut Vec<LintFinding>) {
    let Some(iommu) = &config.iommu else { return };
    let thp_never = iommu.thp.as_deref() == Some("never");
    if iommu.translated == Some(true) && iommu.hugepages_total == Some(0) && thp_never {
        out.push(LintFinding {
            rule: "iommu_without_hugepages",
            severity: Severity::Warning,
            subject: "iommu".into(),
            detail: format!(
                "IOMMU in translated mode ({}) with no huge pages reserved and transparent huge \
                 pages `never`",
                iommu.mode
            ),
            why: IOMMU_WHY,
            source: "HotNets'22 (002_f1357b3c485fb040) 3.1, Fig. 4",
        });
    }
}

fn iommu_4k_pages(host: &HostTopology, config: &HostConfig, out: &mut Vec<LintFinding>) {
    for g in &config.iommu_groups {
        let is_rnic = host
            .component(&g.device)
            .is_some_and(|c| c.class() == ComponentClass::Rnic);
        if !is_rnic || g.translated != Some(true) || g.page_bytes != Some(model::iommu::PAGE_4K) {
            continue;
        }
        let group = g.group.map(|n| format!(" {n}")).unwrap_or_default();
        let kind = g.kind.as_deref().unwrap_or("translated");
        let reach = host.iommu.reach_bytes(model::iommu::PAGE_4K) / 1024;
        out.push(LintFinding {
            rule: "iommu_4k_pages",
            severity: Severity::Warning,
            subject: g.device.to_string(),
            detail: format!(
                "{}'s IOMMU group{group} ({kind}) translates its DMA in 4 KiB pages: an IOTLB of \
                 {} entries reaches {reach} KiB",
                g.device, host.iommu.iotlb_entries
            ),
            why: IOMMU_4K_WHY,
            source: "HotNets'22 (002_f1357b3c485fb040) 3.1, Fig. 4",
        });
    }
}

fn odp_timeout_floor(config: &HostConfig, out: &mut Vec<LintFinding>) {
    let mut rnics: Vec<&ComponentId> = config.odp.iter().map(|r| &r.rnic).collect();
    rnics.sort();
    rnics.dedup();
    for rnic in rnics {
        let floor = config.transport_timeouts.iter().find(|t| &t.rnic == rnic);
        let Some((ms, source)) = floor.and_then(|t| t.floor_ms.map(|ms| (ms, &t.source))) else {
            continue;
        };
        if ms < ODP_FLOOR_MS {
            continue;
        }
        let regions: Vec<_> = config.odp.iter().filter(|r| &r.rnic == rnic).collect();
        let mut owners: Vec<String> = regions
            .iter()
            .map(|r| match (&r.process, r.pid) {
                (Some(n), Some(p)) => format!("{n} (pid {p})"),
                (Some(n), None) => n.clone(),
                (None, Some(p)) => format!("pid {p}"),
                (None, None) => "an unknown process".into(),
            })
            .collect();
        owners.sort();
        owners.dedup();
        out.push(LintFinding {
            rule: "odp_timeout_floor",
            severity: Severity::Warning,
            subject: rnic.to_string(),
            detail: format!(
                "{} ODP memory region{} in use on {rnic} (owned by {}), whose transport timeout \
                 floor is {ms:.0} ms ({source})",
                regions.len(),
                if regions.len() == 1 { "" } else { "s" },
                owners.join(", ")
            ),
            why: ODP_FLOOR_WHY,
            source: "ISPASS'21 (001_50e040594ebebbef), packet damming and flood",
        });
    }
}

fn gpu_without_local_rnic(host: &HostTopology, out: &mut Vec<LintFinding>) {
    if host.rnics().next().is_none() {
        return;
    }
    for gpu in host
        .components()
        .iter()
        .filter(|c| c.class() == ComponentClass::Gpu)
    {
        let local = host
            .rnics()
            .filter(|r| {
                host.path(&r.id, &gpu.id)
                    .is_some_and(|p| !p.p2p_through_cpu)
            })
            .count();
        if local > 0 {
            continue;
        }
        let root = host
            .root_port_above(&gpu.id)
            .map(|l| format!(" (root port {l})"))
            .unwrap_or_default();
        out.push(LintFinding {
            rule: "gpu_without_local_rnic",
            severity: Severity::Notice,
            subject: gpu.id.to_string(),
            detail: format!("no RNIC shares {}'s root port{root}", gpu.id),
            why: ACROSS_WHY,
            source: "Hostping 3.2.2",
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{AcsPort, AtsState, IommuConfig, LinkTraining};

    fn dgx() -> HostTopology {
        model::builtin::load("dgx-a100").unwrap().unwrap()
    }

    fn rules(f: &[LintFinding]) -> Vec<(&str, String)> {
        f.iter().map(|f| (f.rule, f.subject.clone())).collect()
    }

    #[test]
    fn translated_4k_groups_of_rnics_are_flagged() {
        let group = |device: &str, translated, page| model::IommuGroup {
            device: device.into(),
            group: Some(7),
            kind: Some(if translated { "DMA" } else { "identity" }.into()),
            translated: Some(translated),
            page_bytes: page,
        };
        let config = HostConfig {
            iommu_groups: vec![
                group("rnic0", true, Some(4096)),
                group("rnic1", true, Some(2 * 1024 * 1024)),
                group("rnic2", false, None),
                group("gpu0", true, Some(4096)),
            ],
            ..HostConfig::default()
        };
        let found = lint(&dgx(), &config);
        assert_eq!(rules(&found), [("iommu_4k_pages", "rnic0".to_string())]);
        assert!(
            found[0]
                .detail
                .contains("group 7 (DMA) translates its DMA in 4 KiB pages: an IOTLB of 128 entries reaches 512 KiB"),
            "{}",
            found[0].detail
        );
    }

    #[test]
    fn odp_regions_on_a_500_ms_floor_are_flagged_once_per_rnic() {
        let region = |rnic: &str| model::OdpRegion {
            rnic: rnic.into(),
            kind: model::OdpKind::Explicit,
            bytes: Some(1 << 20),
            page_faults: Some(3),
            page_invalidations: Some(0),
            pid: Some(99),
            process: Some("kv-store".into()),
        };
        let floor = |rnic: &str, ms| model::TransportTimeout {
            rnic: rnic.into(),
            floor_ms: Some(ms),
            source: "firmware".into(),
        };
        let config = HostConfig {
            odp: vec![region("rnic2"), region("rnic2"), region("rnic3")],
            transport_timeouts: vec![floor("rnic2", 500.0), floor("rnic3", 8.0)],
            ..HostConfig::default()
        };
        let found = lint(&dgx(), &config);
        assert_eq!(rules(&found), [("odp_timeout_floor", "rnic2".to_string())]);
        assert_eq!(
            found[0].detail,
            "2 ODP memory regions in use on rnic2 (owned by kv-store (pid 99)), whose transport \
             timeout floor is 500 ms (firmware)"
        );
        // A floor that was not read is no finding: unknown is not "fine", nor a fault.
        let unknown = HostConfig {
            odp: vec![region("rnic2")],
            ..HostConfig::default()
        };
        assert!(lint(&dgx(), &unknown).is_empty());
    }

    #[test]
    fn a_clean_reference_host_has_no_findings() {
        assert_eq!(lint(&dgx(), &HostConfig::default()), vec![]);
    }

    #[test]
    fn acs_redirect_counts_only_on_switches_that_gdr_turns_in() {
        let host = dgx();
        let port = |switch: &str, redirect| AcsPort {
            switch: switch.into(),
            port: format!("{switch}-dsp"),
            redirect,
            control: if redirect {
                "ReqRedir+ CmpltRedir+"
            } else {
                "ReqRedir- CmpltRedir-"
            }
            .into(),
        };
        let config = HostConfig {
            acs: vec![port("lsw0", true), port("lsw2", false), port("lsw1", true)],
            ..HostConfig::default()
        };
        let found = lint(&host, &config);
        // lsw0 holds rnic0 and gpu0 (rnic0-gpu0 turns in lsw0); lsw1 holds gpu1 only, but
        // rnic0-gpu1 turns in usw0 after crossing lsw1: both are detoured.
        assert_eq!(
            rules(&found),
            [
                ("acs_redirect", "lsw0".into()),
                ("acs_redirect", "lsw1".into())
            ]
        );
        assert!(
            found[0].detail.contains("rnic0-gpu0"),
            "{}",
            found[0].detail
        );
        assert!(
            found[1].detail.contains("rnic0-gpu1"),
            "{}",
            found[1].detail
        );
        assert!(
            !found[1].detail.contains("rnic0-gpu0"),
            "{}",
            found[1].detail
        );
    }

    #[test]
    fn ats_off_matters_on_rnics_with_peer_to_peer_gpus() {
        let config = HostConfig {
            ats: vec![
                AtsState {
                    device: "rnic1".into(),
                    enabled: false,
                },
                AtsState {
                    device: "rnic0".into(),
                    enabled: true,
                },
                AtsState {
                    device: "gpu3".into(),
                    enabled: false,
                },
            ],
            ..HostConfig::default()
        };
        let found = lint(&dgx(), &config);
        assert_eq!(rules(&found), [("ats_off", "rnic1".into())]);
        assert!(found[0].detail.contains("rnic1-gpu2") && found[0].detail.contains("rnic1-gpu3"));
    }

    #[test]
    fn downtrained_links_name_both_speeds() {
        let training = |link: &str, cur: (f64, u32)| LinkTraining {
            link: link.into(),
            function: Some("0000:16:00.0".into()),
            current_gts: cur.0,
            current_width: cur.1,
            max_gts: 16.0,
            max_width: 16,
        };
        let config = HostConfig {
            links: vec![
                training("gpu4--lsw4", (16.0, 8)),
                training("gpu5--lsw5", (16.0, 16)),
                training("rnic1--lsw2", (8.0, 16)),
            ],
            ..HostConfig::default()
        };
        let found = lint(&dgx(), &config);
        assert_eq!(
            rules(&found),
            [
                ("downtrained_link", "gpu4--lsw4".into()),
                ("downtrained_link", "rnic1--lsw2".into())
            ]
        );
        assert_eq!(
            found[0].detail,
            "gpu4--lsw4 (0000:16:00.0) runs at 16 GT/s x8 of 16 GT/s x16"
        );
    }

    #[test]
    fn iommu_risk_needs_translation_and_no_large_pages() {
        let iommu = |translated, huge, thp: &str| HostConfig {
            iommu: Some(IommuConfig {
                translated: Some(translated),
                mode: if translated { "DMA-FQ" } else { "identity" }.into(),
                hugepages_total: Some(huge),
                thp: Some(thp.into()),
            }),
            ..HostConfig::default()
        };
        let host = dgx();
        assert_eq!(
            rules(&lint(&host, &iommu(true, 0, "never"))),
            [("iommu_without_hugepages", "iommu".into())]
        );
        assert!(lint(&host, &iommu(true, 512, "never")).is_empty());
        assert!(lint(&host, &iommu(true, 0, "madvise")).is_empty());
        assert!(lint(&host, &iommu(false, 0, "never")).is_empty());
        // Unreadable huge-page counts are not "none reserved".
        let mut unknown = iommu(true, 0, "never");
        unknown.iommu.as_mut().unwrap().hugepages_total = None;
        assert!(lint(&host, &unknown).is_empty());
    }

    #[test]
    fn gpus_without_an_rnic_under_their_root_port_are_noticed() {
        // amd-2s: check which GPUs share no root port with an RNIC, from the model itself.
        for name in model::builtin::names() {
            let host = model::builtin::load(name).unwrap().unwrap();
            let found = lint(&host, &HostConfig::default());
            for gpu in host
                .components()
                .iter()
                .filter(|c| c.class() == ComponentClass::Gpu)
            {
                let lonely = host
                    .rnics()
                    .all(|r| host.path(&r.id, &gpu.id).unwrap().p2p_through_cpu);
                let noticed = found
                    .iter()
                    .any(|f| f.rule == "gpu_without_local_rnic" && f.subject == gpu.id.as_str());
                assert_eq!(lonely, noticed, "{name} {}", gpu.id);
            }
        }
        assert!(
            lint(&dgx(), &HostConfig::default()).is_empty(),
            "every dgx-a100 GPU has a local RNIC"
        );
    }
}
