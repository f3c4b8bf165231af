//! Re-probes within an idle run of the paths that alone judge a link, and the flaps they
//! show (analyze's `reprobe` and `flap_within`).

mod common;

use analyze::History;
use common::*;
use model::{Cause, Mode, PathStatus};

/// dgx-a100 with gpu6--lsw6 at 80 Gb/s in the run's probe of rnic3->gpu6 (its only judged
/// path).
fn gpu6_slow() -> Matrix {
    Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic3" && e == "gpu6").then_some((80.0, lat))
    })
}

/// Healthy bandwidth of every re-probe on dgx-a100, except `slow(label, k)`.
fn reprobes(slow: impl Fn(&str, usize) -> bool + 'static) -> Reprobes {
    reprobes_on("dgx-a100", slow)
}

/// Healthy bandwidth of every re-probe on `model`, except `slow(label, k)` (at 40 %).
fn reprobes_on(model: &str, slow: impl Fn(&str, usize) -> bool + 'static) -> Reprobes {
    let host = host(model);
    Reprobes::new(move |label, k| {
        let (r, e) = label.split_once("->").unwrap();
        let p = host.path(&r.into(), &e.into()).unwrap();
        let (bw, _) = healthy(&host, p);
        Some(if slow(label, k) { bw * 0.4 } else { bw })
    })
}

#[test]
fn a_gpu_link_that_changes_level_within_the_run_flaps() {
    let m = gpu6_slow();
    let mut f = reprobes(|l, k| l == "rnic3->gpu6" && k % 2 == 1);
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut f);
    assert_eq!(
        summary(&r),
        [(Cause::LinkFlapping, links(&["gpu6--lsw6"]), None, None)]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains("rnic3->gpu6 abnormal in 6 and normal in 5 of 11 probes"),
        "{e}"
    );
    assert!(e.contains("rnic3->mem1 normal in all 11"), "{e}");
    // Its re-probes are in the report; the witness over rnic3--lsw6 stayed normal.
    let p = path(&r, "rnic3", "gpu6");
    assert_eq!(p.reprobes.len(), 10);
    assert_eq!(p.reprobes[0], PathStatus::Normal);
    assert_eq!(p.reprobes[1], PathStatus::Abnormal);
    // Each round starts after 100 ms of idle time, and rounds re-probe the same paths.
    let rounds: Vec<&(String, u64)> = f.asked.iter().filter(|(_, ns)| *ns > 0).collect();
    assert_eq!(rounds.len(), 10);
    assert!(rounds.iter().all(|(_, ns)| *ns == 100_000_000));
    assert_eq!(f.asked.len() % 10, 0);
}

#[test]
fn a_gpu_link_slow_in_every_reprobe_has_failed() {
    let m = gpu6_slow();
    let mut f = reprobes(|l, _| l == "rnic3->gpu6");
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut f);
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["gpu6--lsw6"]), None, None)]
    );
}

#[test]
fn a_healthy_host_reprobes_the_lone_gpu_paths_and_their_witnesses_and_stays_healthy() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    let mut f = reprobes(|_, _| false);
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut f);
    assert!(r.healthy, "{:?}", r.diagnoses);
    let mut reprobed: Vec<String> = r
        .paths
        .iter()
        .filter(|p| !p.reprobes.is_empty())
        .map(|p| format!("{}->{}", p.rnic, p.endpoint))
        .collect();
    reprobed.sort();
    // Each GPU's PCIe link is judged by its affinitive RNIC alone (the others reach it through
    // a root complex, uncertain); witnesses over each other link of those paths are the
    // RNIC's other affinitive paths. Nothing else is re-probed.
    for g in 0..8 {
        let p = format!("rnic{}->gpu{g}", g / 2);
        assert!(reprobed.contains(&p), "{p} not in {reprobed:?}");
    }
    assert!(r
        .paths
        .iter()
        .all(|p| p.reprobes.is_empty() || p.affinitive));
    assert_eq!(reprobed.len(), 16, "{reprobed:?}");
    assert!(r
        .paths
        .iter()
        .all(|p| p.reprobes.iter().all(|s| *s == PathStatus::Normal)));
}

#[test]
fn busy_runs_and_runs_without_an_engine_reprobe_nothing() {
    let m = Matrix::with("dgx-a100", Mode::Busy, |_, _, _| None);
    let mut f = reprobes(|_, _| false);
    let r = m.analyze(
        &m.snap().busy("rnic0", 150.0).build(),
        &History::new(8),
        &mut f,
    );
    assert!(f.asked.is_empty());
    assert!(r.paths.iter().all(|p| p.reprobes.is_empty()));
    let idle = gpu6_slow().quick();
    assert_eq!(
        summary(&idle),
        [(Cause::LinkFailure, links(&["gpu6--lsw6"]), None, None)]
    );
}

#[test]
fn an_rnic_link_that_flaps_moves_its_witnesses_too_and_is_named_not_the_gpu_link() {
    // rnic0's link flaps: the run saw rnic0->gpu0 slow and rnic0's other paths fast, so
    // Algorithm 1 blames gpu0--lsw0; in the re-probes every rnic0 path changes level.
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic0" && e == "gpu0").then_some((80.0, lat))
    });
    let mut f = reprobes(|l, k| l.starts_with("rnic0->") && k % 2 == 1);
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut f);
    assert_eq!(
        summary(&r),
        [(Cause::LinkFlapping, links(&["rnic0--lsw0"]), None, None)]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains("withdrawn, as explained by the flap: link_failure on gpu0--lsw0"),
        "{e}"
    );
}

#[test]
fn a_flap_seen_within_a_run_is_named_in_the_later_runs_of_the_window() {
    let mut history = History::new(5);
    let m = gpu6_slow();
    let first = m.analyze(
        &m.snap().build(),
        &history,
        &mut reprobes(|l, k| l == "rnic3->gpu6" && k % 2 == 1),
    );
    history.record(&first);
    // The next run meets the link healthy throughout, probe and re-probes.
    let healthy = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    let next = healthy.analyze(
        &healthy.snap().build(),
        &history,
        &mut reprobes(|_, _| false),
    );
    assert_eq!(
        summary(&next),
        [(Cause::LinkFlapping, links(&["gpu6--lsw6"]), None, None)]
    );
    let e = &next.diagnoses[0].evidence;
    assert!(e.contains("within run 1"), "{e}");
    assert!(e.contains("run 2 saw no change of level"), "{e}");
    // Beyond the window it is forgotten.
    for _ in 0..5 {
        let r = healthy.analyze(
            &healthy.snap().build(),
            &history,
            &mut reprobes(|_, _| false),
        );
        history.record(&r);
    }
    let late = healthy.analyze(
        &healthy.snap().build(),
        &history,
        &mut reprobes(|_, _| false),
    );
    assert!(late.healthy, "{:?}", late.diagnoses);
}

/// amd-2s after a run whose re-probes saw gpu1--sw0 flap: this run meets rnic0->gpu1 (its
/// affinitive path) healthy, and the paths in `slow` degraded.
fn amd_after_a_gpu1_flap(slow: &'static [(&'static str, &'static str)]) -> model::Report {
    let mut history = History::new(5);
    let first = Matrix::with("amd-2s", Mode::Idle, |r, e, (bw, lat)| {
        (r == "rnic0" && e == "gpu1").then_some((bw * 0.4, lat))
    });
    let seen = first.analyze(
        &first.snap().build(),
        &history,
        &mut reprobes_on("amd-2s", |l, k| l == "rnic0->gpu1" && k % 2 == 1),
    );
    assert_eq!(
        summary(&seen),
        [(Cause::LinkFlapping, links(&["gpu1--sw0"]), None, None)]
    );
    history.record(&seen);
    let next = Matrix::with("amd-2s", Mode::Idle, move |r, e, (bw, lat)| {
        slow.contains(&(r, e)).then_some((bw * 0.6, lat))
    });
    next.analyze(
        &next.snap().build(),
        &history,
        &mut reprobes_on("amd-2s", |_, _| false),
    )
}

#[test]
fn a_failure_that_only_paths_over_a_flapping_link_show_is_the_flap() {
    // rnic1->gpu1 crosses the inter-socket link and gpu1--sw0; probed in the degraded phase
    // while rnic0->gpu1 met the healthy one, it alone would blame cpu0--cpu1.
    let r = amd_after_a_gpu1_flap(&[("rnic1", "gpu1")]);
    assert_eq!(
        summary(&r),
        [(Cause::LinkFlapping, links(&["gpu1--sw0"]), None, None)]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains(
            "every abnormal path behind it crosses the flapping link: link_failure on cpu0--cpu1"
        ),
        "{e}"
    );
    // A path off the flapping link that is abnormal too keeps the failure.
    let r = amd_after_a_gpu1_flap(&[("rnic1", "gpu1"), ("rnic1", "gpu0")]);
    let causes: Vec<(Cause, Vec<String>)> = r
        .diagnoses
        .iter()
        .map(|d| (d.cause, d.links.iter().map(|l| l.to_string()).collect()))
        .collect();
    assert!(
        causes.contains(&(Cause::LinkFailure, links(&["cpu0--cpu1"]))),
        "{causes:?}"
    );
}

#[test]
fn one_abnormal_look_in_eleven_is_an_outlier_and_two_are_a_flap() {
    let healthy = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    let once = healthy.analyze(
        &healthy.snap().build(),
        &History::new(8),
        &mut reprobes(|l, k| l == "rnic3->gpu6" && k == 3),
    );
    assert_eq!(
        path(&once, "rnic3", "gpu6")
            .reprobes
            .iter()
            .filter(|s| **s == PathStatus::Abnormal)
            .count(),
        1
    );
    assert!(once.healthy, "{:?}", once.diagnoses);
    let twice = healthy.analyze(
        &healthy.snap().build(),
        &History::new(8),
        &mut reprobes(|l, k| l == "rnic3->gpu6" && (k == 3 || k == 7)),
    );
    assert_eq!(
        summary(&twice),
        [(Cause::LinkFlapping, links(&["gpu6--lsw6"]), None, None)]
    );
}

#[test]
fn no_rounds_no_reprobes() {
    let m = gpu6_slow();
    let mut f = reprobes(|l, k| l == "rnic3->gpu6" && k % 2 == 1);
    let thresholds = model::Thresholds {
        reprobe_rounds: 0,
        ..model::Thresholds::default()
    };
    let r = m.analyze_with(&m.snap().build(), &History::new(8), &mut f, &thresholds);
    assert!(f.asked.is_empty(), "{:?}", f.asked);
    assert!(r.paths.iter().all(|p| p.reprobes.is_empty()));
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["gpu6--lsw6"]), None, None)]
    );
}
