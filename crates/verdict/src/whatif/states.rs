//! The fabric's link states a what-if replays: cables degraded, flapping, down or corrupting
//! packets, and other jobs' traffic; from injected faults or from the culprits a verdict found.

use model::job::{Culprit, JobEvidence, JobPair, Layer};
use model::pair::PartStatus;

use crate::links::FabricFault;
use crate::spec::{Cable, Cluster};
use crate::PlanError;

/// The state of the fabric's links in one scenario.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkStates {
    /// Cables running at a share of their rate, both ways.
    pub degraded: Vec<(Cable, f64)>,
    /// Cables alternating between healthy and a share of their rate; replayed in the
    /// degraded phase (a job of milliseconds meets one phase, and the what-if asks whether
    /// the cable can explain the time).
    pub flapping: Vec<(Cable, f64)>,
    /// Cables down: the subnet manager routes around a switch cable; a host's cable takes
    /// its RNIC off the fabric.
    pub down: Vec<Cable>,
    /// Cables corrupting packets, errors a second.
    pub errors: Vec<(Cable, f64)>,
    /// Other jobs' traffic, a share of line rate.
    pub background: Option<f64>,
}

impl LinkStates {
    /// The states the fabric faults of `--inject` set (host faults are no link's).
    pub fn from_faults(faults: &[FabricFault]) -> LinkStates {
        let mut states = LinkStates::default();
        for fault in faults {
            match *fault {
                FabricFault::Degrade { cable, fraction } => states.degraded.push((cable, fraction)),
                FabricFault::Flap { cable, fraction } => states.flapping.push((cable, fraction)),
                FabricFault::Errors { cable, per_second } => {
                    states.errors.push((cable, per_second))
                }
                FabricFault::Down { cable } => states.down.push(cable),
                FabricFault::Background { load } => states.background = Some(load),
            }
        }
        states
    }

    /// The states a verdict's fabric culprits imply, sized from the evidence they came
    /// from: a degraded or flapping cable keeps the share of line rate of the slowest pair
    /// probed across it; a corrupting cable the errors a second its ports counted (symbol
    /// errors, receive errors, discards); background traffic takes the share of line rate
    /// the median pair it slowed lost (of every pair probed, when none was slowed). Culprits of other layers are
    /// skipped; a fabric culprit the evidence cannot size is an error naming it.
    pub fn from_culprits(
        cluster: &Cluster,
        culprits: &[Culprit],
        evidence: &JobEvidence,
    ) -> Result<LinkStates, PlanError> {
        let rate = cluster.fabric.link_gbps;
        let mut states = LinkStates::default();
        for culprit in culprits.iter().filter(|c| c.layer == Layer::Fabric) {
            let unsized_culprit = |reason: &str| {
                PlanError::Fabric(format!(
                    "what-if: culprit `{}`{}: {reason}",
                    culprit.cause,
                    culprit
                        .component
                        .as_ref()
                        .map_or(String::new(), |c| format!(" at `{c}`"))
                ))
            };
            if culprit.cause == "background_traffic" {
                // Other jobs share some of the job's links, not all: the pairs they slowed
                // (the network part abnormal) say how much, where there are such pairs.
                let slowed: Vec<&JobPair> = evidence
                    .pairs
                    .iter()
                    .filter(|p| p.parts.network_status == PartStatus::Abnormal)
                    .collect();
                let sizing = if slowed.is_empty() {
                    evidence.pairs.iter().collect()
                } else {
                    slowed
                };
                let mut bandwidths: Vec<f64> = sizing
                    .iter()
                    .filter_map(|p| p.parts.bandwidth_gbps)
                    .collect();
                if bandwidths.is_empty() {
                    return Err(unsized_culprit(
                        "no pair measured a bandwidth to size it by",
                    ));
                }
                bandwidths.sort_by(f64::total_cmp);
                let median = bandwidths[bandwidths.len() / 2];
                states.background = Some((1.0 - median / rate).clamp(0.05, 1.0));
                continue;
            }
            let label = culprit
                .component
                .as_deref()
                .ok_or_else(|| unsized_culprit("it names no cable"))?;
            let cable = cluster
                .parse_port(label)
                .map(|port| cluster.cable_at(port))
                .map_err(|e| unsized_culprit(&e.to_string()))?;
            let label = cluster.cable_label(cable);
            let share = || {
                evidence
                    .pairs
                    .iter()
                    .filter(|p| p.cables.contains(&label))
                    .filter_map(|p| p.parts.bandwidth_gbps)
                    .map(|gbps| (gbps / rate).clamp(0.01, 0.99))
                    .min_by(f64::total_cmp)
                    .ok_or_else(|| unsized_culprit("no pair measured a bandwidth across it"))
            };
            match culprit.cause.as_str() {
                "link_degraded" => states.degraded.push((cable, share()?)),
                "link_flapping" => states.flapping.push((cable, share()?)),
                "link_down" => states.down.push(cable),
                "link_errors" => {
                    let per_second = evidence
                        .ports
                        .iter()
                        .filter(|p| p.cable == label && p.during_s > 0.0)
                        .map(|p| {
                            let c = &p.during;
                            (c.symbol_errors + c.rcv_errors + c.xmit_discards) as f64 / p.during_s
                        })
                        .max_by(f64::total_cmp)
                        .filter(|&r| r > 0.0)
                        .ok_or_else(|| unsized_culprit("no port of the cable counted errors"))?;
                    states.errors.push((cable, per_second));
                }
                other => return Err(unsized_culprit(&format!("`{other}` is no fabric cause"))),
            }
        }
        Ok(states)
    }

    /// Whether any cable is in a bad state.
    pub fn has_elements(&self) -> bool {
        !(self.degraded.is_empty()
            && self.flapping.is_empty()
            && self.down.is_empty()
            && self.errors.is_empty())
    }

    /// The cables in a bad state, each once, with the state's name.
    pub(crate) fn elements(&self) -> Vec<(Cable, &'static str)> {
        let mut elements: Vec<(Cable, &'static str)> = Vec::new();
        elements.extend(self.degraded.iter().map(|&(c, _)| (c, "degraded")));
        elements.extend(self.flapping.iter().map(|&(c, _)| (c, "flapping")));
        elements.extend(self.down.iter().map(|&c| (c, "down")));
        elements.extend(self.errors.iter().map(|&(c, _)| (c, "corrupting")));
        elements
    }

    /// These states with only the cables in a bad state (no other jobs' traffic).
    pub(crate) fn elements_only(&self) -> LinkStates {
        LinkStates {
            background: None,
            ..self.clone()
        }
    }

    /// These states with only other jobs' traffic.
    pub(crate) fn background_only(&self) -> LinkStates {
        LinkStates {
            background: self.background,
            ..LinkStates::default()
        }
    }

    /// Only `cable`'s own state.
    pub(crate) fn only(&self, cable: Cable) -> LinkStates {
        let keep =
            |list: &[(Cable, f64)]| list.iter().copied().filter(|&(c, _)| c == cable).collect();
        LinkStates {
            degraded: keep(&self.degraded),
            flapping: keep(&self.flapping),
            down: self.down.iter().copied().filter(|&c| c == cable).collect(),
            errors: keep(&self.errors),
            background: None,
        }
    }

    /// The cables' states as the simulator's rates: degraded and flapping cables at their
    /// share, down cables removed, and a corrupting cable at the goodput its losses leave.
    /// The simulator has no loss, so each packet is lost with probability `per_second` x
    /// its time on the wire (a symbol error hits the packet then, as the simulated
    /// cluster's `network` models it), and the RC transport's go-back-N resends on average
    /// half of a message of `message_packets` (IBA 9.7.6): goodput
    /// 1 / (1 + p x message_packets / 2).
    pub(crate) fn as_faults(
        &self,
        link_gbps: f64,
        packet_bytes: u32,
        message_packets: u64,
    ) -> Vec<FabricFault> {
        let mut faults = Vec::new();
        for &(cable, fraction) in self.degraded.iter().chain(&self.flapping) {
            faults.push(FabricFault::Degrade { cable, fraction });
        }
        faults.extend(self.down.iter().map(|&cable| FabricFault::Down { cable }));
        for &(cable, per_second) in &self.errors {
            let loss = (per_second * f64::from(packet_bytes) * 8.0 / (link_gbps * 1e9)).min(1.0);
            let goodput = 1.0 / (1.0 + loss * message_packets as f64 / 2.0);
            faults.push(FabricFault::Degrade {
                cable,
                fraction: goodput.clamp(1e-3, 1.0 - 1e-9),
            });
        }
        // One rate per cable: the worst of its states.
        faults.sort_by(|a, b| {
            (a.cable(), fraction(a))
                .partial_cmp(&(b.cable(), fraction(b)))
                .expect("fractions are numbers")
        });
        faults.dedup_by(|later, earlier| later.cable() == earlier.cable());
        faults
    }
}

fn fraction(fault: &FabricFault) -> f64 {
    match *fault {
        FabricFault::Degrade { fraction, .. } => fraction,
        _ => 0.0,
    }
}
