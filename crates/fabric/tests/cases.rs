//! The case studies of thesis chapter 4 on small trees: the same shapes as
//! `hostping fabric bench cases` (whose thesis-size run the CLI tests check), each claim of the
//! thesis checked against the simulation.

use fabric::cases::{self, CaseReport, Scale};
use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::topology::Topology;
use fabric::traffic::JobPlan;

fn run(_label: &str, topology: &Topology, plans: Vec<JobPlan>, config: SimConfig) -> SimResult {
    let jobs = plans.into_iter().map(JobPlan::into_job).collect();
    Simulation::new(topology, config, jobs)
        .expect("valid case")
        .run(&mut |_| {})
}

fn assert_passes(report: &CaseReport) {
    assert!(report.passed(), "{}", report.render_text());
}

#[test]
fn stencil_mappings_order_as_in_table_4_1() {
    let report = cases::stencil(Scale::Small, 1, &mut run).unwrap();
    assert_passes(&report);
    assert_eq!(report.table.rows.len(), 6);
    // Tiling removes the congestion that row-major causes (Figure 4.9 vs 4.1).
    let row = |label: &str| {
        report
            .table
            .rows
            .iter()
            .find(|r| r.label.starts_with(label))
            .unwrap()
    };
    assert!(row("row-major").congested_hop_fraction > 10.0 * row("tiling").congested_hop_fraction);
}

#[test]
fn naive_reduction_is_the_pattern_and_a_tree_fixes_it() {
    let report = cases::reduction(Scale::Small, 1, &mut run).unwrap();
    assert_passes(&report);
}

#[test]
fn background_traffic_is_told_from_the_ring_s_own_samples() {
    let report = cases::background(Scale::Small, 1, &mut run).unwrap();
    assert_passes(&report);
}
