//! Never healthy unless judged (DESIGN 4.3, exit status 3): links Algorithm 1 leaves
//! uncertain make a report inconclusive, never healthy, and `not_judged` says what and why;
//! an RNIC whose service traffic fills its line rate overloads its own link.

mod common;

use analyze::{analyze, History, Input, NoFollowUp};
use common::*;
use model::report::Verdict;
use model::{Cause, HostSnapshot, LinkStatus, Mode, NotJudgedReason, Thresholds};

fn reasons(r: &model::Report) -> Vec<NotJudgedReason> {
    r.not_judged.iter().map(|n| n.reason).collect()
}

#[test]
fn a_healthy_idle_host_with_a_full_baseline_is_judged_and_healthy() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    let r = m.quick();
    assert!(r.healthy, "{:?}", r.not_judged);
    assert!(!r.inconclusive);
    assert!(r.not_judged.is_empty(), "{:?}", r.not_judged);
    assert!(r.links.iter().all(|l| l.status == LinkStatus::Normal));
    assert_eq!(r.verdict(), Verdict::Healthy);
}

#[test]
fn an_empty_baseline_judges_nothing_even_with_a_slow_path() {
    // gpu4's link keeps 30 %: rnic2->gpu4 reads 60 Gb/s, but there is nothing to compare
    // it with.
    let mut m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic2" && e == "gpu4").then_some((60.0, lat))
    });
    m.baseline.paths.clear();
    let r = m.quick();
    assert!(!r.healthy);
    assert!(r.inconclusive);
    assert!(r.diagnoses.is_empty());
    assert_eq!(reasons(&r), [NotJudgedReason::NoBaseline]);
    let n = &r.not_judged[0];
    assert_eq!(n.paths.len(), 40);
    assert!(n.paths.contains(&"rnic2->gpu4".to_string()));
    assert_eq!(n.links.len(), m.host.links().len());
    assert!(n.detail.contains("hostping baseline"), "{}", n.detail);
    assert_eq!(r.verdict(), Verdict::Inconclusive);
}

#[test]
fn a_baseline_of_one_path_names_the_other_39() {
    let mut m = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    m.baseline
        .paths
        .retain(|p| p.rnic.as_str() == "rnic0" && p.endpoint.as_str() == "mem0");
    let r = m.quick();
    assert!(r.inconclusive && !r.healthy);
    assert_eq!(reasons(&r), [NotJudgedReason::NoBaseline]);
    let n = &r.not_judged[0];
    assert_eq!(n.paths.len(), 39);
    assert!(!n.paths.contains(&"rnic0->mem0".to_string()));
    // What rnic0->mem0 judged is not listed.
    for judged in ["rnic0--lsw0", "lsw0--usw0", "usw0--cpu0", "mem0--cpu0"] {
        assert!(!n.links.iter().any(|l| l.as_str() == judged), "{judged}");
    }
    assert!(n.links.iter().any(|l| l.as_str() == "gpu4--lsw4"));
}

#[test]
fn a_path_missing_from_the_baseline_whose_links_others_judge_is_named_but_not_inconclusive() {
    let mut m = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    m.baseline
        .paths
        .retain(|p| !(p.rnic.as_str() == "rnic0" && p.endpoint.as_str() == "mem1"));
    let r = m.quick();
    assert!(r.healthy && !r.inconclusive);
    assert_eq!(r.not_judged.len(), 1);
    assert_eq!(r.not_judged[0].paths, ["rnic0->mem1"]);
    assert!(r.not_judged[0].links.is_empty());
}

#[test]
fn a_host_model_with_no_memory_and_no_gpu_has_no_path_and_is_inconclusive() {
    let text = r#"
name = "nic-only"
[[component]]
id = "cpu0"
kind = "cpu"
[[component]]
id = "rnic0"
kind = "rnic"
line_rate_gbps = 200
[[link]]
down = "rnic0"
up = "cpu0"
pcie = "gen4x16"
"#;
    let host = model::hostfile::parse("nic-only.toml", text).unwrap();
    assert!(host.paths().is_empty());
    let run = model::ProbeRun {
        host: host.name.clone(),
        provenance: model::Provenance::Simulated,
        mode: Mode::Idle,
        started_ns: 0,
        finished_ns: 1,
        paths: Vec::new(),
    };
    let baseline = model::Baseline {
        host: host.name.clone(),
        provenance: model::Provenance::Simulated,
        runs: 1,
        paths: Vec::new(),
        measured_with: Default::default(),
    };
    let r = analyze(
        &Input {
            host: &host,
            run: &run,
            baseline: &baseline,
            snapshot: &HostSnapshot::default(),
            thresholds: &Thresholds::default(),
            history: &History::new(8),
            run_index: 0,
        },
        &mut NoFollowUp,
    );
    assert!(!r.healthy && r.inconclusive);
    assert_eq!(reasons(&r), [NotJudgedReason::NotProbed]);
    assert_eq!(r.not_judged[0].links.len(), 1);
    assert!(r.not_judged[0].detail.contains("has no path"));
    assert_eq!(r.verdict(), Verdict::Inconclusive);
}

#[test]
fn a_failed_probe_that_alone_judged_a_link_is_a_finding_and_leaves_it_unjudged() {
    // gpu0--lsw0 is judged only by paths to gpu0; fail the affinitive one (rnic0->gpu0):
    // the others reach gpu0 latency-bound and cannot call its link normal.
    let mut m = Matrix::with("dgx-a100", Mode::Idle, |_, _, _| None);
    m.fail("rnic0", "gpu0", "ibv_poll_cq: work completion in error");
    let r = m.quick();
    assert!(!r.healthy && r.inconclusive);
    assert!(reasons(&r).contains(&NotJudgedReason::ProbeFailed));
    let failed = r
        .not_judged
        .iter()
        .find(|n| n.reason == NotJudgedReason::ProbeFailed)
        .unwrap();
    assert_eq!(failed.paths, ["rnic0->gpu0"]);
    assert!(failed.links.iter().any(|l| l.as_str() == "gpu0--lsw0"));
    // A failed probe is a finding in its own right: exit 1, not 3.
    assert_eq!(r.verdict(), Verdict::Findings);
}

#[test]
fn a_busy_rnics_own_link_cannot_be_judged_by_its_probes() {
    // rnic0 carries 150 Gb/s of service traffic, below Util_high: its paths are judged only
    // against each other (Hostping 4.3), so nothing can call rnic0--lsw0 normal.
    let m = Matrix::with("dgx-a100", Mode::Busy, |r, _, (bw, lat)| {
        (r == "rnic0").then_some((bw * 0.25, lat * 1.5))
    });
    let snap = m.snap().busy("rnic0", 150.0).build();
    let r = m.analyze(&snap, &History::new(8), &mut NoFollowUp);
    assert!(r.diagnoses.is_empty(), "{:?}", r.diagnoses);
    assert!(!r.healthy && r.inconclusive);
    let n = r
        .not_judged
        .iter()
        .find(|n| n.reason == NotJudgedReason::NotMeasurable)
        .unwrap();
    assert!(n.links.iter().any(|l| l.as_str() == "rnic0--lsw0"));
    assert!(
        n.paths.iter().all(|p| p.starts_with("rnic0->")),
        "{:?}",
        n.paths
    );
    // Busy mode probes affinitive paths only: the rest were not probed.
    assert!(reasons(&r).contains(&NotJudgedReason::NotProbed));
    assert_eq!(r.verdict(), Verdict::Inconclusive);
    // The report says what kept the host busy, and the words of what it left unjudged too.
    let busy = "rnic0 carries 150.0 Gb/s of other traffic (75 % of its 200 Gb/s";
    assert_eq!(r.busy.len(), 1, "{:?}", r.busy);
    assert!(r.busy[0].starts_with(busy), "{:?}", r.busy);
    for n in &r.not_judged {
        assert!(
            n.detail.contains(&format!("the host is busy: {busy}")),
            "{}",
            n.detail
        );
    }
    // An idle host has nothing to say there, and its JSON reads as before.
    let idle = m.quick();
    assert!(idle.busy.is_empty());
    assert!(serde_json::to_value(&idle).unwrap().get("busy").is_none());
}

#[test]
fn an_rnic_at_line_rate_without_pauses_overloads_its_own_link() {
    // Exactly line rate, no pause, no drop: the probes read ~40 of 200 Gb/s on every path.
    let m = Matrix::with("dgx-a100", Mode::Busy, |r, _, (_, lat)| {
        (r == "rnic0").then_some((40.0, lat * 3.0))
    });
    let snap = m.snap().busy("rnic0", 200.0).build();
    let r = m.analyze(&snap, &History::new(8), &mut NoFollowUp);
    assert_eq!(
        summary(&r),
        [(Cause::LinkOverloaded, links(&["rnic0--lsw0"]), None, None)]
    );
    let evidence = &r.diagnoses[0].evidence;
    assert!(evidence.contains("RNIC counters of rnic0"), "{evidence}");
    assert!(evidence.contains("read 40 Gb/s"), "{evidence}");
    assert!(!r.healthy);
    // Its links are still unjudged: both a finding and inconclusive, and the finding wins.
    assert!(r.inconclusive);
    assert_eq!(r.verdict(), Verdict::Findings);
}

#[test]
fn an_rnic_below_util_high_is_not_overloaded() {
    let m = Matrix::with("dgx-a100", Mode::Busy, |r, _, (_, lat)| {
        (r == "rnic0").then_some((40.0, lat * 3.0))
    });
    // 89 % of line rate: under Util_high (90 %, Hostping 5).
    let snap = m.snap().busy("rnic0", 178.0).build();
    let r = m.analyze(&snap, &History::new(8), &mut NoFollowUp);
    assert!(r.diagnoses.is_empty(), "{:?}", r.diagnoses);
}

#[test]
fn links_only_latency_bound_paths_cross_are_judged_down_to_their_bound() {
    // amd-2s (issue 38, 2): no RNIC sits under sw1 or sw3, and the narrow xGMI keeps every
    // remote path below line rate, so seven links have only latency-bound paths (Hostping
    // 3.2.2). Idle and healthy, they are judged normal down to the loss those paths could
    // have shown, and the host is judged: healthy, not inconclusive.
    let m = Matrix::with("amd-2s", Mode::Idle, |_, _, _| None);
    let r = m.quick();
    assert!(r.healthy && !r.inconclusive, "{:?}", r.not_judged);
    assert_eq!(r.verdict(), Verdict::Healthy);
    assert!(r.links.iter().all(|l| l.status == LinkStatus::Normal));
    let mut bounded: Vec<&str> = r
        .links
        .iter()
        .filter(|l| l.bound.is_some())
        .map(|l| l.id.as_str())
        .collect();
    bounded.sort();
    assert_eq!(
        bounded,
        [
            "cpu0--cpu1",
            "gpu2--sw1",
            "gpu3--sw1",
            "gpu6--sw3",
            "gpu7--sw3",
            "sw1--cpu0",
            "sw3--cpu1"
        ]
    );
    // rnic0->gpu2 carries 125.5 Gb/s: below 0.8 x 125.5 = 100.4 Gb/s it is abnormal, which a
    // 252 Gb/s PCIe Gen4 x16 link reaches once it loses 60 %.
    let b = link(&r, "gpu2--sw1").bound.as_ref().unwrap();
    assert_eq!(b.path, "rnic0->gpu2");
    assert_eq!(b.paths, ["rnic0->gpu2", "rnic1->gpu2"]);
    assert!((b.below_gbps - 100.4).abs() < 1e-9, "{b:?}");
    assert!(
        (b.loss_above - (1.0 - 100.4 / 252.06)).abs() < 1e-3,
        "{b:?}"
    );
    // The xGMI (144 Gb/s) is what caps remote memory (140 Gb/s): a loss above 22 % shows.
    let x = link(&r, "cpu0--cpu1").bound.as_ref().unwrap();
    assert!((x.loss_above - (1.0 - 112.0 / 144.0)).abs() < 1e-9, "{x:?}");
    // A link judged at line rate carries no bound.
    assert!(link(&r, "gpu0--sw0").bound.is_none());
}

#[test]
fn a_link_with_a_line_rate_path_is_not_judged_by_a_bound_when_that_path_failed() {
    // gpu0--sw0 has a line-rate path (rnic0->gpu0): with it failed, the latency-bound
    // rnic1->gpu0 does not stand in for it, and the link stays unjudged.
    let mut m = Matrix::with("amd-2s", Mode::Idle, |_, _, _| None);
    m.fail("rnic0", "gpu0", "ibv_poll_cq: work completion in error");
    let r = m.quick();
    assert!(r.inconclusive);
    assert_eq!(link(&r, "gpu0--sw0").status, LinkStatus::Uncertain);
    assert!(link(&r, "gpu0--sw0").bound.is_none());
}

#[test]
fn a_loss_beyond_the_bound_on_a_latency_bound_link_is_found() {
    // gpu2--sw1 keeps 30 % (75.6 Gb/s): both paths to gpu2 fall below 80 % of baseline.
    let m = Matrix::with("amd-2s", Mode::Idle, |_, e, (_, lat)| {
        (e == "gpu2").then_some((75.6, lat))
    });
    let r = m.quick();
    assert_eq!(r.verdict(), Verdict::Findings);
    assert!(r.diagnoses.iter().any(
        |d| d.cause == Cause::LinkFailure && d.links.iter().any(|l| l.as_str() == "gpu2--sw1")
    ));
    assert!(link(&r, "gpu2--sw1").bound.is_none());
    assert_eq!(link(&r, "gpu2--sw1").status, LinkStatus::Abnormal);
}
