//! What the job's hosts' faults of DESIGN 4.2 leave of its ranks' paths: how much longer a
//! simulated job's collectives take on its hosts as they are than on healthy ones
//! (`crate::collectives`).
//!
//! - **Across hosts.** A rank's data leaves and enters its host through its GPU's nearest
//!   RNIC (the affinitive one over the fewest links, as NCCL picks the NIC nearest a GPU),
//!   so its transfer cannot go faster than that GPU<->RNIC path carries. The path's rate is
//!   the virtual host's loopback stream on it, as the mesh takes a host part's bandwidth from
//!   the host's loopback (`crate::mesh`, Hostping 4.1.1); without noise, and over one whole
//!   flap period so that a flapping link counts at its average. The fabric replay already
//!   runs each rail at what a healthy host delivers, so a rank's factor is the healthy path's
//!   rate over the faulted one's, each capped at the RNIC's line rate: 1 for a healthy host,
//!   `line rate / path` for a path below the line rate. In a ring all-reduce every rank
//!   waits for the slowest link (NCCL's busbw "approaches the slowest link's speed",
//!   `shared/reference/nccl-inspector.md`), so the job's factor is the largest of its ranks'.
//! - **Within a host.** The host's own communicator rings over PCIe through every GPU's own
//!   link, at `collectives::INTRA_HOST_BUSBW_GBS` (Gen4 x16 less its overhead); a GPU whose
//!   link keeps a share of its capacity (`degrade`, `flap` at its average over a period,
//!   `overload`'s free share) holds the ring to that share, so the factor is one over the
//!   least share a GPU's link keeps.
//!
//! Every rate here is the virtual host's model, simulated: nothing is measured.

use std::collections::BTreeMap;

use model::topology::{ComponentClass, LinkKind};
use model::{ComponentId, HostTopology, LinkId};
use probe::{ProbeEngine, StreamSpec};
use vhost::{Fault, VhostConfig, VirtualHost};

use verdict::spec::Cluster;

/// How much longer the job's collectives take than on healthy hosts: factors of their
/// times, each at least 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Slowdown {
    /// The job's communicator across hosts: its transfer time's factor.
    pub across: f64,
    /// Each job host's own communicator (by index in the job's hosts).
    pub within: Vec<f64>,
}

/// The slowdown of a job over `nodes` (host indices, rank order) whose hosts hold `faults`
/// (host index to its faults present now; hosts outside the job are ignored).
pub fn slowdown(
    cluster: &Cluster,
    nodes: &[usize],
    faults: &BTreeMap<usize, Vec<Fault>>,
) -> Slowdown {
    let mut across: f64 = 1.0;
    let mut within = vec![1.0; nodes.len()];
    for (job_host, &h) in nodes.iter().enumerate() {
        let Some(host_faults) = faults.get(&h).filter(|f| !f.is_empty()) else {
            continue;
        };
        let host = &cluster.hosts[h];
        let model = host.model();
        for gpu in model
            .components()
            .iter()
            .filter(|c| c.class() == ComponentClass::Gpu)
        {
            let Some(rnic) = nearest_rnic(model, &host.rnics, &gpu.id) else {
                continue;
            };
            // An RNIC of unknown rate leaves the path alone to bound the rank.
            let line = model
                .component(rnic)
                .and_then(|c| c.rnic())
                .map_or(f64::INFINITY, |r| r.line_rate_gbps);
            let healthy = path_gbps(model, &[], rnic, &gpu.id).min(line);
            let faulted = path_gbps(model, host_faults, rnic, &gpu.id).min(line);
            if faulted > 0.0 && healthy > faulted {
                across = across.max(healthy / faulted);
            }
        }
        let share = pcie_share(model, host_faults);
        if share > 0.0 && share < 1.0 {
            within[job_host] = 1.0 / share;
        }
    }
    Slowdown { across, within }
}

/// The RNIC, of those cabled to the fabric (`rnics`), nearest `gpu`: an affinitive path
/// first, then the fewest links, then the first in model order.
fn nearest_rnic<'a>(
    model: &HostTopology,
    rnics: &'a [ComponentId],
    gpu: &ComponentId,
) -> Option<&'a ComponentId> {
    rnics
        .iter()
        .filter_map(|r| model.path(r, gpu).map(|p| (r, p)))
        .min_by_key(|(_, p)| (!p.affinitive, p.links.len()))
        .map(|(r, _)| r)
}

/// What the loopback stream from `rnic` to `endpoint` carries on a virtual host of `model`
/// with `faults`, Gb/s: noise off, over one whole flap period (two half-periods), so that
/// a flapping link counts at its average and any seed gives the same rate. 0 when the
/// stream fails.
fn path_gbps(
    model: &HostTopology,
    faults: &[Fault],
    rnic: &ComponentId,
    endpoint: &ComponentId,
) -> f64 {
    let config = VhostConfig {
        noise: 0.0,
        ..VhostConfig::default()
    };
    let Some(path) = model.path(rnic, endpoint) else {
        return 0.0;
    };
    let spec = StreamSpec {
        duration_us: 2.0 * config.flap_half_period_ns as f64 / 1e3,
        ..StreamSpec::default()
    };
    let mut host = VirtualHost::new(model.clone(), faults.to_vec(), config);
    host.stream(path, &spec).map_or(0.0, |s| s.bandwidth_gbps)
}

/// The least share of its capacity a GPU's own PCIe link keeps under `faults`: a degraded
/// link's fraction, a flapping one's average over a period (half healthy, half degraded),
/// an overloaded one's free share; 1 when no GPU link is faulted.
fn pcie_share(model: &HostTopology, faults: &[Fault]) -> f64 {
    let gpu_link = |link: &LinkId| {
        model
            .link(link)
            .is_some_and(|l| l.kind == LinkKind::GpuPcie)
    };
    faults
        .iter()
        .filter_map(|f| match f {
            Fault::Degrade { link, fraction } if gpu_link(link) => Some(*fraction),
            Fault::Flap { link, fraction } if gpu_link(link) => Some((1.0 + fraction) / 2.0),
            Fault::Overload { link, utilization } if gpu_link(link) => Some(1.0 - utilization),
            _ => None,
        })
        .fold(1.0, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Cluster {
        Cluster::builtin("pod-32").unwrap().unwrap()
    }

    /// node001 and node009, node009 holding `faults`.
    fn of(faults: &[&str]) -> Slowdown {
        let pod = pod();
        let model = pod.hosts[8].model();
        let parsed = vhost::parse_faults(faults, model).unwrap();
        slowdown(&pod, &[0, 8], &BTreeMap::from([(8, parsed)]))
    }

    #[test]
    fn healthy_hosts_do_not_slow_the_job() {
        assert_eq!(
            of(&[]),
            Slowdown {
                across: 1.0,
                within: vec![1.0, 1.0]
            }
        );
        // A fault the collectives' paths never cross: the RNIC's ODP pitfall shows in its
        // counters only.
        assert_eq!(of(&["odp:rnic0:damming"]).across, 1.0);
    }

    #[test]
    fn a_gpus_degraded_link_holds_the_ring_to_its_path() {
        let s = of(&["degrade:gpu0--lsw0:0.3"]);
        // gpu0's PCIe Gen4 x16 link at 30 % carries about 75 Gb/s of the RNIC's 200.
        assert!((2.2..3.0).contains(&s.across), "{s:?}");
        // Its host's own ring waits for that link: 1 / 0.3.
        assert!((s.within[1] - 1.0 / 0.3).abs() < 1e-9, "{s:?}");
        assert_eq!(s.within[0], 1.0);
        // A flap is half the time healthy: a milder factor; an RNIC's link slows the job
        // across hosts but not the GPUs' own ring.
        let flap = of(&["flap:gpu0--lsw0:0.3"]);
        assert!(1.0 < flap.across && flap.across < s.across, "{flap:?}");
        let rnic = of(&["degrade:rnic0--lsw0:0.3"]);
        assert!(rnic.across > 2.0, "{rnic:?}");
        assert_eq!(rnic.within, [1.0, 1.0]);
    }
}
