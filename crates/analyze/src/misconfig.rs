//! PCIe misconfigurations: ACS redirect on, ATS off (Hostping 6 #7, #8), judged first.
//!
//! Hostping 4.3: "If the PCIe link connected to a GPU is marked as abnormal, the analyzer
//! will further check the path latency between the GPU and its affinitive RNIC. If the
//! latency is also abnormal, a misconfiguration (e.g., enabling ACS) may be the root cause."
//! Both settings send GDR traffic that should turn around in a PCIe switch up to the root
//! complex (3.2.2: 1.0 us becomes 2.2 us and the bandwidth falls to about 125 Gb/s), so the
//! symptom is the small-message latency of a GPU path that does not cross the CPU. Such
//! paths are collected whether their bandwidth is abnormal or not, diagnosed here, and left
//! out of link localisation.
//!
//! Telling ACS from ATS (beyond the paper, by the pattern across paths): ATS is an RNIC
//! setting and detours *all* of that RNIC's GPU paths that turn in a switch; ACS is set per
//! switch port and detours the paths that turn around at that switch.
//! - Only some of an RNIC's same-root-port GPU paths are slow: ACS, on the switches where
//!   the slow ones turn (`rnic` null).
//! - All of them, for more than one RNIC or for every RNIC that has such paths: ACS
//!   everywhere (`rnic` null). ACS is enabled by default on every bridge after a reboot
//!   (Hostping 7); ATS off on every RNIC would look the same, and config space tells them
//!   apart.
//! - All of them, for exactly one RNIC while another RNIC's are fine: ATS off on that RNIC
//!   (`rnic` set); ACS on every switch between it and its GPUs would look the same.
//!
//! A host with a single RNIC that has GPUs under its root port falls in the second case:
//! nothing contrasts it with another RNIC, and ACS-after-reboot is the common cause.

use crate::evidence;
use crate::facts::Facts;
use model::{Cause, ComponentClass, ComponentId, Diagnosis, LinkId, LinkKind, Setting, Turnaround};
use std::collections::BTreeSet;

/// One RNIC's GPU paths that turn around in a PCIe switch.
struct SwitchGdr {
    rnic: ComponentId,
    /// Observed paths measured, GPU endpoint, not through the CPU.
    paths: Vec<usize>,
    /// Those whose latency is abnormal.
    slow: Vec<usize>,
}

impl SwitchGdr {
    fn all_slow(&self) -> bool {
        !self.paths.is_empty() && self.slow.len() == self.paths.len()
    }
    fn some_slow(&self) -> bool {
        !self.slow.is_empty() && self.slow.len() < self.paths.len()
    }
}

/// Rule 5: diagnoses ACS/ATS and removes the paths it explains from `remaining`.
pub(crate) fn diagnose(f: &Facts<'_>, remaining: &mut BTreeSet<usize>) -> Vec<Diagnosis> {
    let per_rnic: Vec<SwitchGdr> = f
        .host
        .rnics()
        .map(|r| {
            let paths: Vec<usize> = (0..f.observed.len())
                .filter(|&j| {
                    let v = f.verdict(j);
                    v.rnic == r.id
                        && v.error.is_none()
                        && v.path.is_some_and(|p| !p.p2p_through_cpu)
                        && f.host.component(&v.endpoint).map(|c| c.class())
                            == Some(ComponentClass::Gpu)
                })
                .collect();
            let slow = paths
                .iter()
                .copied()
                .filter(|&j| f.verdict(j).latency_abnormal)
                .collect();
            SwitchGdr {
                rnic: r.id.clone(),
                paths,
                slow,
            }
        })
        .collect();
    for g in &per_rnic {
        for j in &g.slow {
            remaining.remove(j);
        }
    }

    let with_paths = per_rnic.iter().filter(|g| !g.paths.is_empty()).count();
    let full: Vec<&SwitchGdr> = per_rnic.iter().filter(|g| g.all_slow()).collect();
    let everywhere = full.len() > 1 || (full.len() == 1 && with_paths == 1);

    let mut out = Vec::new();
    let mut acs_links: Vec<LinkId> = Vec::new();
    let mut acs_parts: Vec<String> = Vec::new();
    if everywhere {
        let slow: Vec<usize> = full.iter().flat_map(|g| g.slow.iter().copied()).collect();
        acs_links.extend(slow.iter().filter_map(|&j| gpu_link(f, j)));
        let rnics: Vec<&ComponentId> = full.iter().map(|g| &g.rnic).collect();
        let switches = turn_switches(f, &slow);
        acs_parts.push(format!(
            "every GPU path of {} that should turn around in a PCIe switch is slow: {}; with ACS \
             redirect on, peer-to-peer requests climb to the root complex instead of turning at {} \
             (Hostping 6 #7), and ACS is enabled by default on every bridge after a reboot \
             (Hostping 7). ATS disabled on every RNIC would look the same: read the ACS control of \
             the switch ports and the ATS capability of the RNICs in config space to tell them apart",
            evidence::list(&rnics),
            describe_slow(f, &slow),
            evidence::list(&switches),
        ));
    } else if let [only] = full.as_slice() {
        let others: Vec<&ComponentId> = per_rnic
            .iter()
            .filter(|g| !g.paths.is_empty() && g.rnic != only.rnic)
            .map(|g| &g.rnic)
            .collect();
        let switches = between_switches(f, &only.slow);
        let links = Facts::sorted(only.slow.iter().filter_map(|&j| gpu_link(f, j)));
        out.push(Diagnosis {
            cause: Cause::PcieMisconfiguration,
            links,
            rnic: Some(only.rnic.clone()),
            setting: Some(Setting::AtsOff),
            evidence: format!(
                "ATS off on {rnic}: all of {rnic}'s GPU paths that should turn around in a PCIe \
                 switch are slow ({}) while {} {} the GPUs under {} root ports at baseline \
                 latency; with ATS disabled the RNIC sends every GDR request to the root complex \
                 for address translation (Hostping 6 #8). ACS redirect on every switch between \
                 {rnic} and its GPUs ({}) would look the same: read their ACS control in config \
                 space to tell them apart",
                describe_slow(f, &only.slow),
                evidence::list(&others),
                if others.len() == 1 {
                    "reaches"
                } else {
                    "reach"
                },
                if others.len() == 1 { "its" } else { "their" },
                evidence::list(&switches),
                rnic = only.rnic,
            ),
        });
    }
    for g in per_rnic.iter().filter(|g| g.some_slow()) {
        acs_links.extend(g.slow.iter().filter_map(|&j| gpu_link(f, j)));
        let fine: Vec<String> = g
            .paths
            .iter()
            .filter(|j| !g.slow.contains(j))
            .map(|&j| {
                let v = f.verdict(j);
                format!(
                    "{} is at {}{}",
                    v.label(),
                    v.latency_us.map_or("?".into(), evidence::us),
                    v.baseline_latency_us.map_or(String::new(), |b| format!(
                        " (baseline {})",
                        evidence::us(b)
                    ))
                )
            })
            .collect();
        acs_parts.push(format!(
            "only some of {}'s GPU paths that turn around in a PCIe switch are slow: {}, while {}; \
             the slow ones turn around at {}, so ACS redirect is on there (Hostping 6 #7); ATS is \
             an RNIC setting and would slow all of them",
            g.rnic,
            describe_slow(f, &g.slow),
            evidence::list(&fine),
            evidence::list(&turn_switches(f, &g.slow)),
        ));
    }
    if !acs_parts.is_empty() {
        out.push(Diagnosis {
            cause: Cause::PcieMisconfiguration,
            links: Facts::sorted(acs_links),
            rnic: None,
            setting: Some(Setting::Acs),
            evidence: format!("ACS redirect on: {}", acs_parts.join("; ")),
        });
    }
    out
}

/// The GPU PCIe link at the endpoint end of observed path `j`.
fn gpu_link(f: &Facts<'_>, j: usize) -> Option<LinkId> {
    let v = f.verdict(j);
    v.path?
        .links
        .iter()
        .find(|l| {
            f.host
                .link(l)
                .is_some_and(|l| l.kind == LinkKind::GpuPcie && l.down == v.endpoint)
        })
        .cloned()
}

/// The switches where the paths turn around, in host order.
fn turn_switches(f: &Facts<'_>, paths: &[usize]) -> Vec<ComponentId> {
    let turns: BTreeSet<&ComponentId> = paths
        .iter()
        .filter_map(|&j| match &f.verdict(j).path?.turnaround {
            Turnaround::Switch(s) => Some(s),
            Turnaround::RootComplex(_) => None,
        })
        .collect();
    in_host_order(f, turns)
}

/// Every switch on the paths (between the RNIC and its GPUs), in host order.
fn between_switches(f: &Facts<'_>, paths: &[usize]) -> Vec<ComponentId> {
    let mut on = BTreeSet::new();
    for &j in paths {
        let Some(p) = f.verdict(j).path else { continue };
        for l in p.links.iter().filter_map(|l| f.host.link(l)) {
            for c in [&l.down, &l.up] {
                if f.host.component(c).map(|c| c.class()) == Some(ComponentClass::PcieSwitch) {
                    on.insert(c);
                }
            }
        }
    }
    in_host_order(f, on)
}

fn in_host_order(f: &Facts<'_>, set: BTreeSet<&ComponentId>) -> Vec<ComponentId> {
    f.host
        .components()
        .iter()
        .filter(|c| set.contains(&c.id))
        .map(|c| c.id.clone())
        .collect()
}

/// `rnic0->gpu0 at 2.20 us vs 1.00 us (+120 %) and 125 Gb/s vs 199 Gb/s`, for each path.
fn describe_slow(f: &Facts<'_>, paths: &[usize]) -> String {
    let parts: Vec<String> = paths
        .iter()
        .map(|&j| {
            let v = f.verdict(j);
            let mut s = v.label();
            if let Some(l) = v.latency_us {
                s += &format!(" at {}", evidence::us(l));
                if let Some(b) = v.baseline_latency_us {
                    s += &format!(" vs {} ({})", evidence::us(b), evidence::change(l, b));
                }
            }
            if let Some(bw) = v.bandwidth_gbps {
                s += &format!(" and {}", evidence::gbps(bw));
                if let Some(b) = v.baseline_bandwidth_gbps {
                    s += &format!(" vs {}", evidence::gbps(b));
                }
            }
            s
        })
        .collect();
    evidence::list_capped(&parts, 4)
}
