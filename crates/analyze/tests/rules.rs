//! Every root-cause rule on a hand-built matrix of dgx-a100 (Hostping 4.3, 6).

mod common;

use analyze::{FollowUpTest, History, NoFollowUp};
use common::*;
use model::{Cause, LinkStatus, Mode, PathStatus, Setting, Thresholds};

/// rnic r's affinitive endpoints on dgx-a100.
fn affinitive(rnic: &str, endpoint: &str) -> bool {
    let r: u32 = rnic[4..].parse().unwrap();
    let gpus = [format!("gpu{}", 2 * r), format!("gpu{}", 2 * r + 1)];
    endpoint.starts_with("mem") || gpus.iter().any(|g| g == endpoint)
}

fn rnic0_slow() -> Matrix {
    Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic0" && affinitive(r, e)).then_some((if e == "mem1" { 127.0 } else { 126.0 }, lat))
    })
}

// ---- Scenario 1: link failures (Hostping 6 #1-#5) ----

#[test]
fn rnic_link_failure_blames_only_the_rnic_link() {
    let m = rnic0_slow();
    let mut streams = Streams {
        one_qp: Some(126.0),
        many_qps: Some(126.5),
        ..Streams::default()
    };
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut streams);
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["rnic0--lsw0"]), None, None)]
    );
    assert!(!r.healthy);
    // Both follow-ups were asked, on the best affinitive path, in order.
    assert_eq!(
        streams.asked,
        [
            ("rnic0->mem0".to_string(), FollowUpTest::LONG_ONE_QP),
            ("rnic0->mem0".to_string(), FollowUpTest::MANY_QPS)
        ]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains("126-127 Gb/s vs a baseline of 198-199 Gb/s (-36 %)"),
        "{e}"
    );
    assert!(e.contains("not slow start or a Tx window"), "{e}");
    assert!(
        e.contains("rnic0--lsw0 is the only link on every rnic0 path"),
        "{e}"
    );
    // Algorithm 1 still marks the links it shares paths with; the cover does not blame them.
    assert_eq!(link(&r, "rnic0--lsw0").status, LinkStatus::Abnormal);
    assert_eq!(link(&r, "usw0--cpu0").status, LinkStatus::Abnormal);
    assert_eq!(link(&r, "rnic0--lsw0").abnormal_cnt, 1);
    assert_eq!(path(&r, "rnic0", "gpu2").status, PathStatus::Uncertain);
}

#[test]
fn gpu_link_failure_with_normal_latency() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic2" && e == "gpu4").then_some((120.0, lat))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["gpu4--lsw4"]), None, None)]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains("rnic2->gpu4 at 120 Gb/s vs a baseline of 199 Gb/s (-40 %)"),
        "{e}"
    );
    assert!(e.contains("latency is normal"), "{e}");
    assert_eq!(path(&r, "rnic2", "gpu4").status, PathStatus::Abnormal);
    assert!(!path(&r, "rnic2", "gpu4").latency_abnormal);
}

#[test]
fn odd_gpu_link_is_named_with_its_indistinguishable_uplink() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic2" && e == "gpu5").then_some((110.0, lat))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [(
            Cause::LinkFailure,
            links(&["gpu5--lsw5", "lsw5--usw2"]),
            None,
            None
        )]
    );
    assert!(r.diagnoses[0]
        .evidence
        .contains("lie on exactly the same probed paths"));
}

#[test]
fn memory_channel_failure_is_marked_by_every_rnic() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |_, e, (_, lat)| {
        (e == "mem0").then_some((130.0, lat))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["mem0--cpu0"]), None, None)]
    );
    assert_eq!(link(&r, "mem0--cpu0").abnormal_cnt, 4);
    assert_eq!(link(&r, "mem0--cpu0").status, LinkStatus::Abnormal);
}

#[test]
fn upi_failure() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        let remote = matches!(
            (r, e),
            ("rnic0" | "rnic1", "mem1") | ("rnic2" | "rnic3", "mem0")
        );
        remote.then_some((140.0, lat))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["cpu0--cpu1"]), None, None)]
    );
    assert_eq!(link(&r, "cpu0--cpu1").abnormal_cnt, 4);
}

#[test]
fn root_port_failure() {
    // Hostping 6 #5: GPUs under the failed root port are fine, memory through it is not.
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic0" && e.starts_with("mem")).then_some((150.0, lat))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["usw0--cpu0"]), None, None)]
    );
}

#[test]
fn two_failures_are_both_found_and_sorted_by_links() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (e == "mem0" || (r == "rnic2" && e == "gpu4")).then_some((120.0, lat))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [
            (Cause::LinkFailure, links(&["gpu4--lsw4"]), None, None),
            (Cause::LinkFailure, links(&["mem0--cpu0"]), None, None)
        ]
    );
}

#[test]
fn failed_probe_is_uncertain_and_reported() {
    let mut m = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    m.fail("rnic1", "gpu3", "ibv_reg_mr on gpu3: Bad address");
    let r = m.quick();
    let p = path(&r, "rnic1", "gpu3");
    assert_eq!(p.status, PathStatus::Uncertain);
    assert_eq!(p.error.as_deref(), Some("ibv_reg_mr on gpu3: Bad address"));
    assert_eq!(p.latency_us, None);
    // A failed probe is a finding (the check cannot vouch for that path): never healthy.
    assert!(!r.healthy);
    assert_eq!(r.verdict(), model::report::Verdict::Findings);
    assert_eq!(r.not_judged[0].paths, ["rnic1->gpu3"]);
}

// ---- Scenario 2: misconfigurations (Hostping 6 #7-#10) ----

fn same_root_port_gpu(r: &str, e: &str) -> bool {
    e.starts_with("gpu") && affinitive(r, e)
}

#[test]
fn acs_everywhere_is_one_diagnosis() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, _| {
        same_root_port_gpu(r, e).then_some((125.0, 2.2))
    });
    let r = m.quick();
    let gpus: Vec<String> = (0..8).map(|g| format!("gpu{g}--lsw{g}")).collect();
    assert_eq!(
        summary(&r),
        [(Cause::PcieMisconfiguration, gpus, None, Some(Setting::Acs))]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains("rnic0->gpu0 at 2.20 us vs 1.00 us (+120 %) and 125 Gb/s vs 199 Gb/s"),
        "{e}"
    );
    assert!(
        e.contains("ATS disabled on every RNIC would look the same"),
        "{e}"
    );
    assert!(path(&r, "rnic0", "gpu1").latency_abnormal);
}

#[test]
fn ats_off_on_one_rnic() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, _| {
        (r == "rnic0" && same_root_port_gpu(r, e)).then_some((125.0, 2.2))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [(
            Cause::PcieMisconfiguration,
            links(&["gpu0--lsw0", "gpu1--lsw1"]),
            Some("rnic0".into()),
            Some(Setting::AtsOff)
        )]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains("ACS redirect on every switch between rnic0 and its GPUs (usw0, lsw0 and lsw1)"),
        "{e}"
    );
}

#[test]
fn acs_on_one_switch_names_the_gpu_behind_it() {
    // ACS on lsw0 only: rnic0->gpu0 turns at lsw0 and is detoured; rnic0->gpu1 turns at usw0.
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, _| {
        (r == "rnic0" && e == "gpu0").then_some((125.0, 2.2))
    });
    let r = m.quick();
    assert_eq!(
        summary(&r),
        [(
            Cause::PcieMisconfiguration,
            links(&["gpu0--lsw0"]),
            None,
            Some(Setting::Acs)
        )]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(e.contains("turn around at lsw0"), "{e}");
    assert!(
        e.contains("rnic0->gpu1 is at 1.10 us (baseline 1.10 us)"),
        "{e}"
    );
}

#[test]
fn slow_start_is_found_by_the_long_one_qp_stream() {
    let m = rnic0_slow();
    let mut streams = Streams {
        one_qp: Some(198.0),
        many_qps: Some(198.0),
        ..Streams::default()
    };
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut streams);
    assert_eq!(
        summary(&r),
        [(
            Cause::RnicMisconfiguration,
            vec![],
            Some("rnic0".into()),
            Some(Setting::SlowStart)
        )]
    );
    assert_eq!(streams.asked.len(), 1, "the 8-QP stream is not needed");
    assert!(r.diagnoses[0]
        .evidence
        .contains("a 100 ms stream on 1 QP reached 198 Gb/s"));
}

#[test]
fn tx_window_is_found_by_the_many_qp_stream() {
    let m = rnic0_slow();
    let mut streams = Streams {
        one_qp: Some(126.0),
        many_qps: Some(197.0),
        ..Streams::default()
    };
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut streams);
    assert_eq!(
        summary(&r),
        [(
            Cause::RnicMisconfiguration,
            vec![],
            Some("rnic0".into()),
            Some(Setting::TxWindow)
        )]
    );
    assert!(r.diagnoses[0]
        .evidence
        .contains("a 10 ms stream on 8 QPs reached 197 Gb/s"));
}

#[test]
fn a_tiny_tx_window_is_found_by_how_qps_scale() {
    // A window so small that 8 QPs stay below the baseline still scales with QPs; a failed
    // link would not (see rnic_link_failure_blames_only_the_rnic_link: 126 vs 126.5).
    let m = rnic0_slow();
    let mut streams = Streams {
        one_qp: Some(16.0),
        many_qps: Some(124.0),
        ..Streams::default()
    };
    let r = m.analyze(&m.snap().build(), &History::new(8), &mut streams);
    assert_eq!(
        summary(&r),
        [(
            Cause::RnicMisconfiguration,
            vec![],
            Some("rnic0".into()),
            Some(Setting::TxWindow)
        )]
    );
    assert!(
        r.diagnoses[0]
            .evidence
            .contains("8 QPs move 7.8x what one does"),
        "{}",
        r.diagnoses[0].evidence
    );
}

#[test]
fn without_follow_up_the_rnic_link_is_blamed_and_evidence_says_why() {
    let r = rnic0_slow().quick();
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["rnic0--lsw0"]), None, None)]
    );
    let e = &r.diagnoses[0].evidence;
    assert!(e.contains("could not run"), "{e}");
    assert!(e.contains("could not be ruled out"), "{e}");
}

#[test]
fn overloaded_rnic_link_in_idle_mode() {
    let m = rnic0_slow();
    let snap = m.snap().util("rnic0--lsw0", 0.95).build();
    let mut streams = Streams {
        one_qp: Some(126.0),
        many_qps: Some(126.0),
        ..Streams::default()
    };
    let r = m.analyze(&snap, &History::new(8), &mut streams);
    assert_eq!(
        summary(&r),
        [(Cause::LinkOverloaded, links(&["rnic0--lsw0"]), None, None)]
    );
}

// ---- Scenario 3: contention, busy mode (Hostping 6 #11, #12) ----

/// Busy rnic0 and rnic2 (150 Gb/s of service, paused) see every path at 150 Gb/s and 1.5x
/// latency; `low` paths are lower.
fn busy_matrix(low: &'static [(&'static str, &'static str, f64)]) -> Matrix {
    Matrix::with("dgx-a100", Mode::Busy, move |r, e, (bw, lat)| {
        let busy = r == "rnic0" || r == "rnic2";
        let v = low
            .iter()
            .find(|(lr, le, _)| *lr == r && *le == e)
            .map(|l| l.2);
        match (busy, v) {
            (true, v) => Some((v.unwrap_or(150.0), lat * 1.5)),
            (false, Some(v)) => Some((v, lat)),
            (false, None) => Some((bw, lat)),
        }
    })
}

fn busy_snap(m: &Matrix) -> common::Snap {
    m.snap()
        .busy("rnic0", 150.0)
        .paused("rnic0", 0.08)
        .busy("rnic2", 150.0)
        .paused("rnic2", 0.05)
}

#[test]
fn busy_overloaded_upi() {
    // Hostping 6 #11 / Fig. 10 (b).
    let m = busy_matrix(&[
        ("rnic0", "mem1", 100.0),
        ("rnic2", "mem0", 100.0),
        ("rnic1", "mem1", 140.0),
        ("rnic3", "mem0", 140.0),
    ]);
    assert_eq!(m.run.paths.len(), 16);
    let r = m.analyze(
        &busy_snap(&m).util("cpu0--cpu1", 0.97).build(),
        &History::new(8),
        &mut NoFollowUp,
    );
    assert_eq!(
        summary(&r),
        [(Cause::LinkOverloaded, links(&["cpu0--cpu1"]), None, None)]
    );
    assert_eq!(link(&r, "cpu0--cpu1").abnormal_cnt, 4);
    assert_eq!(path(&r, "rnic0", "mem1").status, PathStatus::Abnormal);
    assert_eq!(
        path(&r, "rnic0", "mem0").status,
        PathStatus::Uncertain,
        "a busy RNIC cannot vouch"
    );
    assert_eq!(
        path(&r, "rnic1", "mem0").status,
        PathStatus::Normal,
        "an idle RNIC can"
    );
    assert!(
        r.paths.iter().all(|p| !p.latency_abnormal),
        "busy latency is judged relatively"
    );
    let e = &r.diagnoses[0].evidence;
    assert!(
        e.contains("rnic0->mem1 at 100 Gb/s vs 150 Gb/s to mem0"),
        "{e}"
    );
    assert!(e.contains("97 %"), "{e}");
}

#[test]
fn busy_overloaded_memory_channel() {
    // Hostping 6 #12 / Fig. 10 (c).
    let m = busy_matrix(&[
        ("rnic0", "mem0", 100.0),
        ("rnic2", "mem0", 100.0),
        ("rnic1", "mem0", 140.0),
        ("rnic3", "mem0", 140.0),
    ]);
    let r = m.analyze(
        &busy_snap(&m).util("mem0--cpu0", 0.95).build(),
        &History::new(8),
        &mut NoFollowUp,
    );
    assert_eq!(
        summary(&r),
        [(Cause::LinkOverloaded, links(&["mem0--cpu0"]), None, None)]
    );
    assert_eq!(link(&r, "mem0--cpu0").abnormal_cnt, 4);
}

#[test]
fn busy_gpu_link_failure_judged_among_siblings() {
    // Hostping Fig. 10 (a): rnic2 is busy, yet its path to gpu4 is below its others.
    let m = Matrix::with("dgx-a100", Mode::Busy, |r, e, (_, lat)| match r {
        "rnic2" => Some((if e == "gpu4" { 90.0 } else { 150.0 }, lat * 1.4)),
        _ => None,
    });
    let snap = m.snap().busy("rnic2", 150.0).paused("rnic2", 0.1).build();
    let r = m.analyze(&snap, &History::new(8), &mut NoFollowUp);
    assert_eq!(
        summary(&r),
        [(Cause::LinkFailure, links(&["gpu4--lsw4"]), None, None)]
    );
    assert!(r.diagnoses[0]
        .evidence
        .contains("cannot tell a failure from a misconfiguration"));
}

#[test]
fn busy_abnormal_rnic_without_abnormal_link_suspects_its_own_link() {
    // Hostping 4.3, last paragraph: every path of the pausing RNIC is equally slow.
    let m = Matrix::with("dgx-a100", Mode::Busy, |r, _, (_, lat)| {
        (r == "rnic0").then_some((150.0, lat * 1.5))
    });
    let snap = m
        .snap()
        .busy("rnic0", 150.0)
        .paused("rnic0", 0.08)
        .util("rnic0--lsw0", 0.96)
        .build();
    let r = m.analyze(&snap, &History::new(8), &mut NoFollowUp);
    assert_eq!(
        summary(&r),
        [(Cause::LinkOverloaded, links(&["rnic0--lsw0"]), None, None)]
    );
    assert!(r.diagnoses[0]
        .evidence
        .contains("Tx paused 8.0 % of the time"));
}

// ---- Healthy hosts ----

#[test]
fn healthy_idle_host() {
    let r = Matrix::with("dgx-a100", Mode::Idle, |_, _, (bw, lat)| {
        Some((bw * 0.97, lat * 1.05))
    })
    .quick();
    assert!(r.healthy);
    assert!(r.diagnoses.is_empty());
    assert!(r
        .links
        .iter()
        .all(|l| l.status == LinkStatus::Normal && l.abnormal_cnt == 0));
    assert_eq!(r.paths.len(), 40);
    assert_eq!(
        path(&r, "rnic0", "gpu5").status,
        PathStatus::Uncertain,
        "latency-bound GDR is no evidence"
    );
}

#[test]
fn healthy_busy_host() {
    let m = Matrix::with("dgx-a100", Mode::Busy, |r, _, (bw, lat)| {
        Some(if r == "rnic1" {
            (150.0, lat * 1.3)
        } else {
            (bw, lat)
        })
    });
    let snap = m.snap().busy("rnic1", 150.0).build();
    let r = m.analyze(&snap, &History::new(8), &mut NoFollowUp);
    assert!(r.diagnoses.is_empty(), "{:?}", r.diagnoses);
    // No finding, but a busy RNIC's own link cannot be judged by its probes (Hostping 4.3:
    // "we have no idea whether other paths are normal"): inconclusive, never healthy.
    assert!(!r.healthy && r.inconclusive);
    assert!(link(&r, "rnic1--lsw2").status == LinkStatus::Uncertain);
    assert_eq!(r.mode, Mode::Busy);
}

// ---- Gray links and flapping (Hostping 4.3, 6 #6) ----

/// mem0--cpu0 flaps within a run: rnic1->mem0 is slow every run and one other path to mem0
/// per run, while the rest of mem0's paths are at baseline.
fn flapping_run(other: &'static str) -> Matrix {
    Matrix::with("dgx-a100", Mode::Idle, move |r, e, (_, lat)| {
        (e == "mem0" && (r == "rnic1" || r == other)).then_some((120.0, lat))
    })
}

#[test]
fn a_single_gray_run_is_unhealthy_without_a_diagnosis() {
    let r = flapping_run("rnic1").quick();
    assert!(!r.healthy);
    assert!(r.diagnoses.is_empty());
    assert_eq!(path(&r, "rnic1", "mem0").status, PathStatus::Abnormal);
    for l in ["rnic1--lsw2", "lsw2--usw1", "usw1--cpu0", "mem0--cpu0"] {
        assert_eq!(link(&r, l).status, LinkStatus::Gray, "{l}");
    }
    assert_eq!(
        r.links
            .iter()
            .filter(|l| l.status == LinkStatus::Gray)
            .count(),
        4
    );
}

#[test]
fn gray_in_three_runs_is_flapping_on_the_right_link_only() {
    let mut history = History::new(8);
    let mut reports = Vec::new();
    for (i, other) in ["rnic3", "rnic2", "rnic0"].into_iter().enumerate() {
        let m = flapping_run(other);
        let r = m.analyze_run(&m.snap().build(), &history, &mut NoFollowUp, i as u32);
        history.record(&r);
        reports.push(r);
    }
    assert!(reports[0].diagnoses.is_empty());
    assert!(reports[1].diagnoses.is_empty());
    // rnic1's links were gray in all three runs too, but only on rnic1->mem0, a strict
    // subset of the gray paths through mem0--cpu0.
    assert_eq!(
        summary(&reports[2]),
        [(Cause::LinkFlapping, links(&["mem0--cpu0"]), None, None)]
    );
    let e = &reports[2].diagnoses[0].evidence;
    assert!(
        e.contains("gray in each of the last 3 runs (1, 2 and 3)"),
        "{e}"
    );
    assert!(e.contains("rnic1->mem0 and rnic3->mem0 in run 1"), "{e}");
}

#[test]
fn links_gray_on_identical_paths_flap_as_a_group() {
    let mut history = History::new(8);
    let mut last = None;
    for i in 0..3 {
        let m = flapping_run("rnic1");
        let r = m.analyze_run(&m.snap().build(), &history, &mut NoFollowUp, i);
        history.record(&r);
        last = Some(r);
    }
    let r = last.unwrap();
    assert_eq!(
        summary(&r),
        [(
            Cause::LinkFlapping,
            links(&["lsw2--usw1", "mem0--cpu0", "rnic1--lsw2", "usw1--cpu0"]),
            None,
            None
        )]
    );
}

#[test]
fn abnormal_normal_abnormal_is_flapping_not_failure() {
    let broken = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic2" && e == "gpu4").then_some((120.0, lat))
    });
    let fine = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    let mut history = History::new(8);
    let mut reports = Vec::new();
    for (i, m) in [&broken, &fine, &broken].into_iter().enumerate() {
        let r = m.analyze_run(&m.snap().build(), &history, &mut NoFollowUp, i as u32);
        history.record(&r);
        reports.push(r);
    }
    assert_eq!(
        summary(&reports[0]),
        [(Cause::LinkFailure, links(&["gpu4--lsw4"]), None, None)]
    );
    assert!(reports[1].healthy);
    assert_eq!(
        summary(&reports[2]),
        [(Cause::LinkFlapping, links(&["gpu4--lsw4"]), None, None)]
    );
    let e = &reports[2].diagnoses[0].evidence;
    assert!(
        e.contains(
            "every abnormal path of the last 3 runs crosses gpu4--lsw4 (rnic2->gpu4 in run 1 and \
             rnic2->gpu4 in run 3), and none in run 2"
        ),
        "{e}"
    );
}

#[test]
fn normal_abnormal_normal_names_the_flap_in_the_run_that_sees_it_healthy() {
    let broken = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic2" && e == "gpu4").then_some((120.0, lat))
    });
    let fine = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    let mut history = History::for_thresholds(&Thresholds::default());
    let mut reports = Vec::new();
    for (i, m) in [&fine, &broken, &fine].into_iter().enumerate() {
        let r = m.analyze_run(&m.snap().build(), &history, &mut NoFollowUp, i as u32);
        history.record(&r);
        reports.push(r);
    }
    assert!(reports[0].healthy);
    assert_eq!(
        summary(&reports[1]),
        [(Cause::LinkFailure, links(&["gpu4--lsw4"]), None, None)],
        "normal then abnormal is a fresh failure"
    );
    assert!(!reports[2].healthy);
    assert_eq!(
        summary(&reports[2]),
        [(Cause::LinkFlapping, links(&["gpu4--lsw4"]), None, None)]
    );
}

#[test]
fn a_failure_older_than_the_window_does_not_make_a_flap() {
    let broken = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic2" && e == "gpu4").then_some((120.0, lat))
    });
    let fine = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    let mut history = History::for_thresholds(&Thresholds::default());
    // Abnormal once, repaired, healthy for six runs, then abnormal again: the first
    // failure has left the 6-run window, so the new one is a failure.
    let series = [&broken, &fine, &fine, &fine, &fine, &fine, &fine, &broken];
    let mut last = None;
    for (i, m) in series.into_iter().enumerate() {
        let r = m.analyze_run(&m.snap().build(), &history, &mut NoFollowUp, i as u32);
        history.record(&r);
        last = Some(r);
    }
    assert_eq!(
        summary(&last.unwrap()),
        [(Cause::LinkFailure, links(&["gpu4--lsw4"]), None, None)]
    );
}
