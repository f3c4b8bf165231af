//! The engine's own timing of one peer workload (`hostping fabric bench peer` runs the same
//! traffic and prints it beside CODES; this builds only the fabric crate, for profiling the
//! engine): `cargo bench -p fabric --bench peer -- [WORKLOAD] [SEED] [END_US]`, workload D,
//! seed 1 and the full 100 us by default. Prints the delivered traffic beside the cost, so
//! that a faster run is seen to do the same work.

use std::str::FromStr;
use std::time::Instant;

use fabric::peer;
use fabric::sim::Simulation;
use fabric::topology::Topology;
use fabric::traffic::{build_jobs, MappingSpec, WorkloadSpec};

fn main() {
    // `cargo bench` passes `--bench`; positional arguments are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let id = args.first().map_or("D", String::as_str);
    let seed: u64 = args
        .get(1)
        .map_or(1, |s| s.parse().expect("seed: an integer"));
    let workload = peer::workloads()
        .into_iter()
        .find(|w| w.id.eq_ignore_ascii_case(id))
        .unwrap_or_else(|| panic!("workload {id}: expected A, B, C or D"));
    let mut config = workload.config(seed);
    if let Some(end_us) = args.get(2) {
        let end_us: u64 = end_us.parse().expect("end: microseconds");
        config.end_ps = Some(end_us * 1_000_000);
    }
    let topology = Topology::new(workload.topology.clone()).expect("peer topology");
    let spec = WorkloadSpec::from_str(&workload.workload_spec()).expect("peer workload");
    let jobs = build_jobs(
        &spec,
        &MappingSpec::RowMajor,
        &topology,
        &config.job_settings(),
    )
    .expect("peer jobs");
    let simulation = Simulation::new(&topology, config, jobs).expect("peer simulation");
    let started = Instant::now();
    let result = simulation.run(&mut |_| {});
    let wall = started.elapsed().as_secs_f64();
    let job = &result.jobs[0];
    println!(
        "workload {} seed {seed}: {} events, {} packets ({:.3} events/packet), mean hops {:.4}, \
         mean latency {:.4} us, max {:.4} us; {wall:.3} s wall, {:.2} M events/s",
        workload.id,
        result.events,
        result.packets_delivered,
        result.events as f64 / result.packets_delivered.max(1) as f64,
        job.average_path_length(),
        job.mean_message_latency_ns / 1000.0,
        job.max_message_latency_ns / 1000.0,
        result.events as f64 / wall / 1e6,
    );
}
