//! Counter sampling against in-packet reservoir sampling on the case studies (small scale):
//! what each finds of the ground truth's congestion-tree roots, and how a sampler's windows
//! are cut from the run's counter snapshots.

use fabric::cases::Scale;
use fabric::roots_study::{render_text, roots_study, windows, RootsRow, FINEST_PS, RATES_HZ};
use fabric::sim::{CounterSnapshot, PortCounters, SimConfig, SimResult, Simulation};
use fabric::topology::Topology;
use fabric::traffic::JobPlan;

fn run(_: &str, topology: &Topology, plans: Vec<JobPlan>, config: SimConfig) -> SimResult {
    let jobs = plans.into_iter().map(JobPlan::into_job).collect();
    Simulation::new(topology, config, jobs)
        .expect("valid case")
        .run(&mut |_| {})
}

fn row<'a>(rows: &'a [RootsRow], run: &str) -> &'a RootsRow {
    rows.iter().find(|r| r.run == run).expect(run)
}

#[test]
fn counters_at_ldms_rates_miss_the_roots_reservoir_sampling_finds() {
    let rows = roots_study(Scale::Small, 1, &mut run).unwrap();
    let table = render_text(&rows);
    assert_eq!(
        rows.len(),
        12,
        "6 stencil mappings, 3 reductions, 3 background runs\n{table}"
    );
    for r in &rows {
        // Reservoir sampling finds nearly every true root, with few false ones.
        let truth = r.truth.len();
        assert!(
            r.reservoir.true_roots * 100 >= truth * 85,
            "{}\n{table}",
            r.run
        );
        assert!(
            r.reservoir.roots <= truth + truth / 5 + 1,
            "{}\n{table}",
            r.run
        );
        // Every run lasts well under 10 ms: at 1 to 100 Hz a window holds the whole run
        // diluted over 10 ms or more, under the counters' levels, so nothing is found.
        assert!(r.simulated_us < 10_000.0);
        for c in r.counters.iter().filter(|c| c.hz <= 100) {
            assert_eq!(
                (c.windows, c.found.roots),
                (1, 0),
                "{} at {} Hz\n{table}",
                r.run,
                c.hz
            );
        }
    }
    // The naive reduction's endpoint congestion (2 ms at the root's node port) is seen by
    // counters from 1 kHz, by reservoir sampling, and is the one true root.
    let naive = row(&rows, "naive reduction to rank 0");
    assert_eq!(naive.truth.len(), 1, "{table}");
    assert!(naive.truth[0].ends_with("-> node 0"), "{:?}", naive.truth);
    for c in &naive.counters {
        let expected = if c.hz >= 1_000 { 1 } else { 0 };
        assert_eq!(c.found.true_roots, expected, "{} Hz\n{table}", c.hz);
    }
    // A mapping's congestion (row-major stencil) is queueing at line rate, not credit
    // starvation: counters find none of its roots even over exactly the run.
    let row_major = row(&rows, "stencil 16x12 row-major");
    assert!(row_major.truth.len() >= 10, "{table}");
    assert_eq!(row_major.counters_whole_run.true_roots, 0, "{table}");
}

fn snapshot(at_ps: u64, bytes: u64, wait: u64) -> CounterSnapshot {
    CounterSnapshot {
        at_ps,
        ports: vec![
            PortCounters {
                xmit_bytes: bytes,
                xmit_wait_ps: wait,
                ..Default::default()
            };
            2
        ],
    }
}

#[test]
fn windows_cut_a_sampler_rate_out_of_the_snapshots() {
    // Snapshots every 100 us and at the end (350 us): 10 bytes and 1 us of waiting per 100 us.
    let snaps: Vec<CounterSnapshot> = [100, 200, 300, 350]
        .iter()
        .map(|&us| snapshot(us * 1_000_000, us / 10, us * 10_000))
        .collect();
    assert_eq!(FINEST_PS, 100_000_000);
    let at_10k = windows(&snaps, FINEST_PS);
    assert_eq!(at_10k.len(), 4);
    assert_eq!(
        at_10k.iter().map(|w| w.xmit_bytes[0]).collect::<Vec<_>>(),
        [10, 10, 10, 5]
    );
    assert!(at_10k.iter().all(|w| w.window_ps == FINEST_PS));
    // A 1 kHz sampler: one window of 1 ms holding the whole run; the counters sum exactly.
    let at_1k = windows(&snaps, 1_000_000_000);
    assert_eq!(at_1k.len(), 1);
    assert_eq!(
        (at_1k[0].xmit_bytes[1], at_1k[0].xmit_wait_ps[1]),
        (35, 3_500_000)
    );
    assert!(windows(&[], FINEST_PS).is_empty());
    assert!(RATES_HZ
        .iter()
        .all(|hz| (1_000_000_000_000 / u64::from(*hz)) % FINEST_PS == 0));
}
