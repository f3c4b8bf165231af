//! `hostping job`: the job verdict (DESIGN 4.7). On a simulated cluster the evidence comes
//! from the `simcluster` crate; on real hosts (`--collector`) from the collector
//! (`GET /api/jobs/verdict`, [`real`]). `analyze::job` judges both the same way, and
//! [`words`] prints both for people.

mod real;
pub mod words;

use anyhow::Result;
use model::job::JobReport;
use simcluster::mesh::MeshSettings;
use simcluster::whatif::JobTraffic;
use simcluster::{Cluster, ClusterFaults, Endpoint};

use crate::cli::job::JobArgs;
use crate::mesh_cmd::read_fabric;
use crate::output::{print_to, Outcome};
use crate::progress;

/// Runs `hostping job`.
pub fn run(args: JobArgs) -> Result<Outcome> {
    let Some(sim_cluster) = &args.sim_cluster else {
        return real::run(&args);
    };
    let cluster = Cluster::resolve(sim_cluster, &|path, routes| Ok(read_fabric(path, routes)?))?;
    let faults = ClusterFaults::parse(&args.inject, &cluster)?;
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
    };
    let report = simcluster::job::run(&cluster, &faults, &settings, &options, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?
    .report;
    bar.finish_and_clear();
    print_to(args.output.as_deref(), args.format, &report, |r, style| {
        words::render(r, words::Observed::Simulated, style)
    })?;
    Ok(outcome(&report))
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
