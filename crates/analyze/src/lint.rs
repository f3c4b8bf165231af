//! Static configuration checks (`hostping lint`): risky settings found without a probe,
//! each with why it matters and where the reason comes from.
//!
//! | rule | what | source |
//! |---|---|---|
//! | `acs_redirect` | ACS Request/Completion Redirect on a switch port that RNIC-GPU traffic turns in | Hostping 2.1, 6 #7 |
//! | `ats_off` | ATS disabled on an RNIC that reaches GPUs peer-to-peer | Hostping 6 #8 |
//! | `downtrained_link` | a PCIe link running below its speed or width | Hostping 6 #1, #2 |
//! | `iommu_without_hugepages` | the IOMMU translates RNIC DMA and buffers can only use 4 KiB pages | HotNets'22 3.1, Fig. 4 |
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
