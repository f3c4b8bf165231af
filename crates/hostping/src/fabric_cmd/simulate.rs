//! Running the fabric simulator for the commands that do (`fabric sim`, `fabric bench`):
//! the jobs built and checked, and the run under a progress bar of simulated time on stderr.

use anyhow::Result;
use fabric::analysis::UniformLoad;
use fabric::sim::{Progress, SimConfig, SimResult, Simulation};
use fabric::topology::Topology;
use fabric::traffic::{self, MappingSpec, WorkloadSpec};
use indicatif::ProgressBar;
use std::time::Instant;

/// A duration in the simulator's picoseconds.
pub fn duration_ps(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos().saturating_mul(1000)).unwrap_or(u64::MAX)
}

/// Simulated time and events per second, on stderr, while a simulation runs.
pub fn progress_bar(label: &str, end_ps: Option<u64>) -> (ProgressBar, impl FnMut(Progress)) {
    let bar = match end_ps {
        Some(end) => crate::progress::counted(end / 1_000_000, label, "us simulated"),
        None => crate::progress::spinner(label),
    };
    let started = Instant::now();
    let handle = bar.clone();
    let update = move |p: Progress| {
        let rate = p.events as f64 / started.elapsed().as_secs_f64().max(1e-9);
        handle.set_position(p.sim_ps / 1_000_000);
        handle.set_message(format!(
            "t = {:.1} us, {:.1} M events/s, {} packets delivered",
            p.sim_ps as f64 / 1e6,
            rate / 1e6,
            p.packets_delivered
        ));
    };
    (bar, update)
}

/// The jobs of `workload` mapped by `mapping`, ready to run: every input checked. With
/// them, what a workload of uniform random traffic alone offers the fabric, which no
/// placement changes and the diagnosis judges oversubscription by
/// (`fabric::analysis::judge_uniform`); `None` for any other workload.
pub fn prepare(
    topology: &Topology,
    workload: &WorkloadSpec,
    mapping: &MappingSpec,
    config: SimConfig,
) -> Result<(Simulation, Option<UniformLoad>)> {
    let jobs = traffic::build_jobs(workload, mapping, topology, &config.job_settings())?;
    let uniform = match (workload, &jobs[..]) {
        (WorkloadSpec::Uniform { load, .. }, [job]) => Some(UniformLoad {
            placement: job.placement.clone(),
            rank_gbps: load * config.link_gbps,
        }),
        _ => None,
    };
    Ok((Simulation::new(topology, config, jobs)?, uniform))
}

/// Runs a simulation with a progress bar on stderr.
pub fn run_with_progress(simulation: Simulation, label: &str, end_ps: Option<u64>) -> SimResult {
    let (bar, mut update) = progress_bar(label, end_ps);
    let result = simulation.run(&mut update);
    bar.finish_and_clear();
    result
}
