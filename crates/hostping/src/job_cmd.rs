//! `hostping job`: the job verdict (DESIGN 4.7). On a simulated cluster the evidence comes
//! from the `simcluster` crate; on real hosts (`--collector`) from the collector
//! (`GET /api/jobs/verdict`, [`real`]). `analyze::job` judges both the same way, and
//! [`words`] prints both for people.

mod nccl;
mod real;
mod sim_records;
pub mod words;

use anyhow::Result;
use model::job::{CollectiveEvidence, JobEvidence, JobReport};
use simcluster::mesh::MeshSettings;
use simcluster::whatif::JobTraffic;
use simcluster::{Cluster, ClusterFaults, Endpoint};
use verdict::actions::{History, Policy};

use crate::cli::job::JobArgs;
use crate::mesh_cmd::read_fabric;
use crate::output::{print_to, Outcome};
use crate::progress;

/// Runs `hostping job`.
pub fn run(args: JobArgs) -> Result<Outcome> {
    // A bad policy file is refused before anything is measured.
    let policy = args
        .actions
        .as_deref()
        .map(verdict::actions::Policy::load)
        .transpose()?;
    let policy = policy.as_ref();
    if policy.is_some() && !args.probe {
        // DESIGN 4.9: only a culprit follow-up probes confirmed acts.
        eprintln!(
            "hostping job: --actions without --probe: no follow-up probe runs, so no culprit \
             is confirmed and the policy would do nothing (add --probe)"
        );
    }
    // Posted to a collector, the summaries are bounded as an agent's post is.
    let cap = args
        .collector
        .as_ref()
        .map(|_| collector::collectives::MAX_SUMMARIES);
    let read = args
        .nccl
        .as_deref()
        .map(|dir| nccl::read(dir, cap))
        .transpose()?;
    // Records a simulation wrote (`--nccl-out`) keep the verdict simulated wherever read
    // (`CollectiveEvidence::simulated`).
    let collectives = read;
    let Some(sim_cluster) = &args.sim_cluster else {
        return match (collectives, &args.collector) {
            (Some(collectives), None) => collectives_alone(&args, collectives, policy),
            (collectives, _) => real::run(&args, collectives, policy),
        };
    };
    let cluster = Cluster::resolve(sim_cluster, &|path, routes| Ok(read_fabric(path, routes)?))?;
    let faults = ClusterFaults::parse(&args.inject, &cluster)?;
    // The simulated job's own records, written and read back as a dump directory.
    let (collectives, faults) = match &args.nccl_out {
        Some(dir) => {
            let settings = simcluster::collectives::StepSettings {
                steps: args.steps,
                step_ms: args.step_ms,
                bytes: args.bytes,
                seed: args.seed,
            };
            let (read, at_end) = sim_records::write_and_read(
                &cluster,
                &faults,
                args.nodes.as_ref().map(|n| n.0.as_slice()),
                &settings,
                dir,
            )?;
            (Some(read), at_end)
        }
        None => (collectives, faults),
    };
    let settings = MeshSettings {
        nodes: args.nodes.map(|n| n.0),
        endpoint: Endpoint::Gpu,
        seed: args.seed,
        noise: args.noise,
        ..MeshSettings::default()
    };
    let bar = progress::counted(0, "job", "pairs simulated");
    let options = simcluster::job::JobOptions {
        probe: args.probe,
        what_if: if args.what_if {
            Some(traffic(&args.traffic, args.bytes)?)
        } else {
            None
        },
        collectives,
    };
    let mut report =
        simcluster::job::run(&cluster, &faults, &settings, &options, &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?
        .report;
    bar.finish_and_clear();
    propose(&mut report, policy);
    print_to(args.output.as_deref(), args.format, &report, |r, style| {
        words::render(r, words::Observed::Simulated, style)
    })?;
    Ok(outcome(&report))
}

/// `--nccl` with no cluster: the verdict from the job's collectives alone (DESIGN 4.8): a
/// straggler names its host; anything else is inconclusive, the symptom reported, as no
/// host or cable was measured. The job's hosts are --nodes, else those the records name.
/// Records a simulation wrote make the verdict `simulated`.
fn collectives_alone(
    args: &JobArgs,
    collectives: CollectiveEvidence,
    policy: Option<&Policy>,
) -> Result<Outcome> {
    let simulated = collectives.simulated;
    let nodes = match &args.nodes {
        Some(nodes) => nodes.0.clone(),
        None => hosts_in_rank_order(&collectives),
    };
    let evidence = JobEvidence {
        nodes,
        collectives: Some(collectives),
        ..JobEvidence::default()
    };
    let mut report = analyze::job::judge(&evidence);
    propose(&mut report, policy);
    let observed = if simulated {
        words::Observed::Simulated
    } else {
        words::Observed::Measured
    };
    print_to(args.output.as_deref(), args.format, &report, |r, style| {
        words::render(r, observed, style)
    })?;
    Ok(outcome(&report))
}

/// `--actions`: what `policy` would do with `report`'s culprits, as its `actions`: this
/// verdict alone (no earlier window, nothing in force, no hour's count), Slurm not asked.
pub(crate) fn propose(report: &mut JobReport, policy: Option<&Policy>) {
    if let Some(policy) = policy {
        report.actions = verdict::actions::decide(policy, report, &History::default());
    }
}

/// The hosts the records name, in the rank order of the communicator spanning the most
/// hosts (the job's world), then any other in name order.
pub(crate) fn hosts_in_rank_order(collectives: &CollectiveEvidence) -> Vec<String> {
    let widest = collectives
        .summaries
        .iter()
        .max_by_key(|s| (s.n_nodes, s.n_ranks))
        .map(|s| s.communicator.clone());
    let mut ranked: Vec<(u32, &str)> = collectives
        .summaries
        .iter()
        .filter(|s| Some(&s.communicator) == widest.as_ref())
        .map(|s| (s.rank, s.hostname.as_str()))
        .collect();
    ranked.sort();
    let mut nodes: Vec<String> = Vec::new();
    for (_, host) in ranked {
        if !nodes.iter().any(|n| n == host) {
            nodes.push(host.to_string());
        }
    }
    let mut others: Vec<&str> = collectives
        .summaries
        .iter()
        .map(|s| s.hostname.as_str())
        .filter(|h| !nodes.iter().any(|n| n == h))
        .collect();
    others.sort();
    others.dedup();
    nodes.extend(others.into_iter().map(String::from));
    nodes
}

/// DESIGN 4.7's exit status as an outcome: 0 neither, 1 host / network / both, 3
/// inconclusive.
pub fn outcome(report: &JobReport) -> Outcome {
    match report.verdict.exit_code() {
        0 => Outcome::Healthy,
        3 => Outcome::Inconclusive,
        _ => Outcome::Findings,
    }
}

/// `--traffic ring|tree|FILE`.
fn traffic(text: &str, bytes: u64) -> Result<JobTraffic> {
    use fleet_api::job::Collective;
    Ok(match text.parse() {
        Ok(Collective::Ring) => JobTraffic::RingAllReduce { bytes },
        Ok(Collective::Tree) => JobTraffic::TreeAllReduce { bytes },
        Err(()) => JobTraffic::File(fabric::traffic::WorkloadFile::load(std::path::Path::new(
            text,
        ))?),
    })
}
