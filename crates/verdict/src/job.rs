//! A job on a cluster, as its verdict reads it (DESIGN 4.7). The job is its hosts in rank
//! order. Its traffic runs rail by rail, as NCCL runs a rail-optimised cluster's
//! collectives: RNIC r of each host talks to RNIC r of the others, so the job's routes are
//! the routes between its hosts' RNICs of one rail, and its cables those they cross. On each
//! host, each GPU's data goes through its nearest RNIC (the job's paths; the nearest memory
//! node on a host without GPUs). A simulated job and a real one placed on the collector's
//! fabric are mapped alike.

use std::collections::{BTreeSet, HashSet};

use model::job::{
    least_known, ExpectedBusBandwidth, JobEvidence, JobPath, JobReport, NotJudgedItem,
};
use model::{ComponentClass, ComponentId};
use serde::Serialize;

use crate::spec::{Cable, Cluster, RnicPort};
use crate::whatif::{self, JobTraffic, LinkStates, Observed, WhatIfSettings};
use crate::PlanError;

/// Where the probes' data lives on each host.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// The GPU nearest each RNIC (GPUDirect RDMA, as a training job's collectives use);
    /// the nearest memory node on a host without GPUs.
    Gpu,
    /// The memory node nearest each RNIC (perftest's default).
    Memory,
}

/// The cables the job's routes cross on the healthy fabric: between every two of its hosts'
/// RNICs of one rail, both ways, with the RNICs' own cables.
pub fn job_cables(cluster: &Cluster, hosts: &[usize]) -> BTreeSet<Cable> {
    let cabled: HashSet<RnicPort> = cluster.rnic_ports().collect();
    let mut cables = BTreeSet::new();
    for (i, &a) in hosts.iter().enumerate() {
        for &b in &hosts[i + 1..] {
            let rails = cluster.hosts[a]
                .rnics
                .len()
                .min(cluster.hosts[b].rnics.len());
            for rnic in 0..rails {
                let (pa, pb) = (RnicPort { host: a, rnic }, RnicPort { host: b, rnic });
                if cabled.contains(&pa) && cabled.contains(&pb) {
                    cables.extend(cluster.cables_between(pa, pb));
                    cables.extend(cluster.cables_between(pb, pa));
                }
            }
        }
    }
    cables
}

/// On a host with GPUs, each GPU's data goes through the RNIC with the shortest path to it
/// (as NCCL picks a GPU's NIC by PCIe distance); otherwise each RNIC's data lives in its
/// nearest memory node.
pub fn job_paths(
    model: &model::HostTopology,
    rnics: &[ComponentId],
    endpoint: Endpoint,
) -> Vec<JobPath> {
    let gpus: Vec<&ComponentId> = model
        .components()
        .iter()
        .filter(|c| c.class() == ComponentClass::Gpu)
        .map(|c| &c.id)
        .collect();
    let path = |rnic: &ComponentId, to: &ComponentId| {
        model
            .paths_of(rnic)
            .find(|p| &p.endpoint == to)
            .map(|p| JobPath {
                rnic: rnic.to_string(),
                endpoint: to.to_string(),
                links: p.links.clone(),
            })
    };
    if endpoint == Endpoint::Gpu && !gpus.is_empty() {
        let mut out: Vec<JobPath> = gpus
            .iter()
            .filter_map(|&gpu| {
                rnics
                    .iter()
                    .filter_map(|r| path(r, gpu))
                    .min_by_key(|p| p.links.len())
            })
            .collect();
        out.sort_by(|a, b| (&a.rnic, &a.endpoint).cmp(&(&b.rnic, &b.endpoint)));
        return out;
    }
    rnics
        .iter()
        .filter_map(|r| path(r, &nearest_endpoint(model, r, Endpoint::Memory)))
        .collect()
}

/// What a job's hosts allow its communicators' bus bandwidth to reach (DESIGN 4.8's
/// `expected`), from their models, on the host that allows least:
/// - across hosts, the line rates of the RNICs its GPUs go through ([`job_paths`]), summed:
///   NCCL spreads a ring's channels over a host's NICs, and its model puts a ring's bus
///   bandwidth at its channels times their speed (`ncclTopoTuneModel`);
/// - within one host, its GPUs' slowest own link: a ring over them goes no faster.
///
/// A side is `None` when a host does not say it: no GPU, or a link of unknown capacity.
pub fn expected_busbw(models: &[&model::HostTopology]) -> ExpectedBusBandwidth {
    let hosts: Vec<ExpectedBusBandwidth> = models.iter().map(|m| host_allows(m)).collect();
    ExpectedBusBandwidth::least_of(&hosts)
}

/// What one host allows: its GPUs' RNICs' line rates summed, and its GPUs' slowest own link.
fn host_allows(m: &model::HostTopology) -> ExpectedBusBandwidth {
    let gpus = || {
        m.components()
            .iter()
            .filter(|c| c.class() == ComponentClass::Gpu)
    };
    ExpectedBusBandwidth {
        // Without a GPU no rank goes through an RNIC ([`job_paths`] then gives memory nodes).
        across_hosts: gpus().next().and_then(|_| rnics_gbs(m)),
        within_host: least_known(gpus().map(|c| own_link_gbs(m, &c.id))),
    }
}

/// The line rates of the RNICs a host's GPUs go through, summed, GB/s.
fn rnics_gbs(m: &model::HostTopology) -> Option<f64> {
    let rnics: Vec<ComponentId> = m.rnics().map(|c| c.id.clone()).collect();
    let used: BTreeSet<String> = job_paths(m, &rnics, Endpoint::Gpu)
        .into_iter()
        .map(|p| p.rnic)
        .collect();
    let gbps: f64 = m
        .rnics()
        .filter(|c| used.contains(c.id.as_str()))
        .filter_map(|c| c.rnic().map(|r| r.line_rate_gbps))
        .sum();
    (gbps > 0.0).then_some(gbps / 8.0)
}

/// What a component's own link (the first towards its CPU) carries, GB/s, when known.
fn own_link_gbs(m: &model::HostTopology, id: &ComponentId) -> Option<f64> {
    let link = m.link(m.links_to_cpu(id).first()?)?;
    link.capacity_known.then_some(link.capacity_gbps / 8.0)
}

/// The endpoint of `class` an RNIC reaches at line rate over the fewest links; the nearest
/// memory node when the host has no such GPU.
pub fn nearest_endpoint(
    model: &model::HostTopology,
    rnic: &ComponentId,
    endpoint: Endpoint,
) -> ComponentId {
    let nearest = |class: ComponentClass| {
        model
            .paths_of(rnic)
            .filter(|p| p.affinitive)
            .filter(|p| {
                model
                    .component(&p.endpoint)
                    .is_some_and(|c| c.class() == class)
            })
            .min_by_key(|p| p.links.len())
            .map(|p| p.endpoint.clone())
    };
    let memory = || {
        nearest(ComponentClass::Memory)
            .or_else(|| model.paths_of(rnic).next().map(|p| p.endpoint.clone()))
            .expect("a host model gives every RNIC a path")
    };
    match endpoint {
        Endpoint::Gpu => nearest(ComponentClass::Gpu).unwrap_or_else(memory),
        Endpoint::Memory => memory(),
    }
}

/// The cables a pair's routes cross both ways, by their labels, sorted: none when an end is
/// not an RNIC of `cluster` (`host`, `rnic` id).
pub fn pair_cables(cluster: &Cluster, a: (&str, &str), b: (&str, &str)) -> Vec<String> {
    let port_of = |(host, rnic): (&str, &str)| {
        let h = cluster.host_index(host)?;
        let r = cluster.hosts[h]
            .rnics
            .iter()
            .position(|x| x.as_str() == rnic)?;
        Some(RnicPort { host: h, rnic: r })
    };
    let mut cables: BTreeSet<String> = BTreeSet::new();
    if let (Some(a), Some(b)) = (port_of(a), port_of(b)) {
        for (x, y) in [(a, b), (b, a)] {
            cables.extend(
                cluster
                    .cables_between(x, y)
                    .into_iter()
                    .map(|c| cluster.cable_label(c)),
            );
        }
    }
    cables.into_iter().collect()
}

/// Replays `traffic` over the job's hosts (`evidence.nodes` in rank order, hosts of
/// `cluster`) under the link states `report`'s culprits name, compares with what was
/// `observed`, and judges `evidence` again with the what-if in it; the follow-ups `report`
/// ran stay in it. A what-if that cannot run is listed in `not_judged` and the verdict
/// stands. The pipeline's last step ([`crate::pipeline::run`]), for a simulated job and a
/// real one alike.
pub fn judge_with_what_if(
    cluster: &Cluster,
    traffic: &JobTraffic,
    observed: Observed,
    evidence: &mut JobEvidence,
    mut report: JobReport,
    settings: &WhatIfSettings,
) -> JobReport {
    let what_if = placement(cluster, &evidence.nodes).and_then(|placement| {
        let measured = LinkStates::from_culprits(cluster, &report.culprits, evidence)?;
        whatif::what_if(cluster, &placement, traffic, observed, &measured, settings)
    });
    let follow_ups = std::mem::take(&mut report.follow_ups);
    match what_if {
        Ok(w) => {
            evidence.what_if = Some(w);
            report = analyze::job::judge(evidence);
        }
        Err(e) => report.not_judged.push(NotJudgedItem {
            what: "what-if".to_string(),
            why: e.to_string(),
        }),
    }
    report.follow_ups = follow_ups;
    report
}

/// The job's hosts as indices of `cluster`, in rank order; a host the cluster does not hold
/// is an error rather than a rank left out of the replay.
fn placement(cluster: &Cluster, nodes: &[String]) -> Result<Vec<usize>, PlanError> {
    nodes
        .iter()
        .map(|n| {
            cluster.host_index(n).ok_or_else(|| {
                PlanError::Fabric(format!(
                    "what-if on cluster `{}`: the job's host `{n}` is not on it",
                    cluster.name
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(name: &str) -> model::HostTopology {
        model::builtin::load(name).unwrap().unwrap()
    }

    #[test]
    fn a_dgx_a100_allows_its_four_rnics_across_hosts_and_a_gpu_link_within() {
        let dgx = builtin("dgx-a100");
        let e = expected_busbw(&[&dgx]);
        // DESIGN 4.1: four 200 Gb/s RNICs, each nearest two of the eight GPUs.
        assert_eq!(e.across_hosts, Some(4.0 * 200.0 / 8.0));
        // Each GPU's own Gen4 x16 link.
        let gpu_link = dgx.link(&dgx.links_to_cpu(&"gpu0".into())[0]).unwrap();
        assert_eq!(e.within_host, Some(gpu_link.capacity_gbps / 8.0));
        assert!((25.0..33.0).contains(&e.within_host.unwrap()), "{e:?}");
    }

    #[test]
    fn the_host_that_allows_least_bounds_the_job_and_an_unknown_link_bounds_nothing() {
        // A single-socket host's two 200 Gb/s RNICs beside a dgx-a100's four.
        let (dgx, small) = (builtin("dgx-a100"), builtin("single-socket"));
        assert_eq!(expected_busbw(&[&dgx, &small]).across_hosts, Some(50.0));
        assert_eq!(expected_busbw(&[]), ExpectedBusBandwidth::default());
        // A virtual machine's GPU links say nothing of what they carry (IBM's H100 VSI, as
        // its NCCL topology file gives it).
        let vm = model::nccl_topo::parse(
            "nccl-ibm-h100-vsi-topo.xml",
            include_str!("../../model/testdata/hosts/nccl-ibm-h100-vsi-topo.xml"),
        )
        .unwrap();
        assert_eq!(expected_busbw(&[&dgx, &vm]).within_host, None);
    }
}
