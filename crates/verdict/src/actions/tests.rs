use super::*;
use model::action::WinsBackSource;
use model::job::{FollowUp, JobHostSummary};
use proptest::prelude::*;
use std::path::Path;

fn policy(text: &str) -> Policy {
    Policy::parse(Path::new("actions.toml"), text).unwrap()
}

/// The policy of most tests: acts on drains and alerts, one window.
fn acting() -> Policy {
    policy(
        "mode = \"act\"\nconfirm = 1\nalertmanager = \"http://127.0.0.1:9093\"\n\
         [limits]\nper_hour = 10\ndrained_share = 0.5",
    )
}

fn culprit(layer: Layer, host: Option<&str>, component: &str, cause: &str, score: f64) -> Culprit {
    Culprit {
        layer,
        host: host.map(str::to_string),
        component: Some(component.to_string()),
        cause: cause.to_string(),
        score,
        evidence: format!("{cause} at {component}"),
        candidates: Vec::new(),
        action: String::new(),
    }
}

fn report(culprits: Vec<Culprit>) -> JobReport {
    let mut r: JobReport = serde_json::from_value(serde_json::json!({
        "job": "77", "nodes": ["node005", "node006"], "verdict": "host", "culprits": [],
        "pairs": [], "not_judged": [], "simulated": true, "summary": "", "not_the_jobs": [],
        "hosts": [], "ports": [], "what_if": null, "follow_ups": []}))
    .unwrap();
    r.culprits = culprits;
    r
}

/// node005's culprit, raised by its own check and confirmed by a recheck of node005.
fn host_report() -> JobReport {
    let mut r = report(vec![culprit(
        Layer::Host,
        Some("node005"),
        "gpu4--lsw4",
        "pcie_downgraded",
        0.9,
    )]);
    r.hosts.push(JobHostSummary {
        host: "node005".into(),
        healthy: Some(false),
        causes: vec!["pcie_downgraded".into()],
        job_paths_healthy: Some(false),
        unjudged_links: Vec::new(),
        judged: String::new(),
    });
    r.follow_ups.push(recheck(
        "node005",
        "checked (run 13): pcie_downgraded at gpu4--lsw4",
    ));
    r
}

fn recheck(host: &str, outcome: &str) -> FollowUp {
    FollowUp {
        kind: "recheck".into(),
        target: format!("{host} loopback"),
        why: String::new(),
        outcome: outcome.into(),
        round: None,
    }
}

fn partitions(nodes: usize, drained: &[&str]) -> Vec<Partition> {
    vec![Partition {
        name: "batch".into(),
        nodes: (1..=nodes).map(|i| format!("node{i:03}")).collect(),
        drained: drained.iter().map(|s| s.to_string()).collect(),
    }]
}

#[test]
fn a_confirmed_host_culprit_is_drained_and_alerted_with_slurms_reason() {
    let parts = partitions(8, &[]);
    let history = History {
        partitions: Some(&parts),
        ..Default::default()
    };
    let actions = decide(&acting(), &host_report(), &history);
    let kinds: Vec<ActionKind> = actions.iter().map(|a| a.kind).collect();
    assert_eq!(kinds, vec![ActionKind::Drain, ActionKind::Alert]);
    for a in &actions {
        assert_eq!(a.state, ActionState::Taken, "{a:?}");
        assert_eq!(a.reason, "hostping: pcie_downgraded gpu4--lsw4 job 77");
        assert_eq!(a.host.as_deref(), Some("node005"));
        assert!(
            a.why.contains(
                "confirmed by recheck node005 loopback: checked (run 13): pcie_downgraded at \
                 gpu4--lsw4"
            ),
            "{}",
            a.why
        );
        assert_eq!(a.wins_back, None, "no what-if ran");
    }
}

#[test]
fn a_dry_run_proposes_and_takes_nothing() {
    let p = policy("confirm = 1\nkinds = [\"drain\"]\n[limits]\ndrained_share = 0.5");
    let parts = partitions(8, &[]);
    let history = History {
        partitions: Some(&parts),
        ..Default::default()
    };
    let actions = decide(&p, &host_report(), &history);
    assert_eq!(actions.len(), 1);
    assert_eq!(actions[0].state, ActionState::Proposed);
}

#[test]
fn a_culprit_the_follow_ups_cleared_never_acts() {
    let mut r = host_report();
    r.follow_ups
        .push(recheck("node005", "checked (run 12): healthy"));
    assert!(matches!(
        confirmation(&r, &r.culprits[0]),
        Confirmation::Cleared(_)
    ));
    assert!(decide(&acting(), &r, &History::default()).is_empty());
}

#[test]
fn an_unconfirmed_culprit_never_acts() {
    // A straggler: the job's collectives name it; no loopback found its cause.
    let r = report(vec![culprit(
        Layer::Host,
        Some("node005"),
        "gpu2",
        "straggler",
        0.99,
    )]);
    assert_eq!(confirmation(&r, &r.culprits[0]), Confirmation::Unconfirmed);
    assert!(decide(&acting(), &r, &History::default()).is_empty());
}

#[test]
fn only_a_recheck_after_the_verdict_confirms_a_host_culprit() {
    let mut r = host_report();
    r.follow_ups.clear();
    // The check that raised it (the host's own, in `hosts`) cannot second itself, nor can
    // the check the collector asked of a host without one.
    r.follow_ups.push(FollowUp {
        kind: "loopback".into(),
        ..recheck("node005", "checked (run 8): pcie_downgraded at gpu4--lsw4")
    });
    assert_eq!(confirmation(&r, &r.culprits[0]), Confirmation::Unconfirmed);
    assert!(decide(&acting(), &r, &History::default()).is_empty());

    r.follow_ups.push(recheck(
        "node005",
        "checked (run 9): pcie_downgraded at gpu4--lsw4",
    ));
    r.follow_ups
        .push(recheck("node006", "checked (run 10): healthy"));
    let Confirmation::Confirmed(by) = confirmation(&r, &r.culprits[0]) else {
        panic!("not confirmed");
    };
    assert_eq!(
        by,
        vec!["recheck node005 loopback: checked (run 9): pcie_downgraded at gpu4--lsw4"]
    );
    // A recheck that found another cause there, and not this one, clears this one.
    r.follow_ups[1].outcome = "checked (run 9): link_failure at rnic0--lsw0".into();
    assert!(matches!(
        confirmation(&r, &r.culprits[0]),
        Confirmation::Cleared(_)
    ));
    // One that did not run, or found the host not healthy without saying why, says nothing.
    for outcome in [
        "not run: no agent registered it",
        "checked (run 9): not healthy",
    ] {
        r.follow_ups[1].outcome = outcome.into();
        assert_eq!(confirmation(&r, &r.culprits[0]), Confirmation::Unconfirmed);
    }
}

#[test]
fn layers_causes_and_scores_outside_the_policy_do_not_act() {
    let cases = [
        "mode = \"act\"\nconfirm = 1\nkinds = [\"drain\"]\nlayers = [\"fabric\"]",
        "mode = \"act\"\nconfirm = 1\nkinds = [\"drain\"]\ncauses = [\"link_degraded\"]",
        "mode = \"act\"\nconfirm = 1\nkinds = [\"drain\"]\nmin_score = 0.95",
    ];
    for text in cases {
        assert!(
            decide(&policy(text), &host_report(), &History::default()).is_empty(),
            "{text}"
        );
    }
}

#[test]
fn a_culprit_acts_once_it_was_confirmed_in_confirm_windows() {
    let p = policy("mode = \"act\"\nconfirm = 3\nkinds = [\"drain\"]");
    let r = host_report();
    let key = CulpritKey::of(&r.culprits[0]);
    let once: Vec<BTreeSet<CulpritKey>> = vec![BTreeSet::from([key.clone()])];
    let history = History {
        earlier: &once,
        ..Default::default()
    };
    assert!(decide(&p, &r, &history).is_empty(), "2 windows of 3");
    let other = CulpritKey {
        cause: "straggler".into(),
        ..key.clone()
    };
    let twice = vec![
        BTreeSet::from([key.clone()]),
        BTreeSet::from([other]),
        BTreeSet::from([key]),
    ];
    let history = History {
        earlier: &twice,
        ..Default::default()
    };
    let actions = decide(&p, &r, &history);
    assert_eq!(actions.len(), 1);
    assert!(
        actions[0].why.contains("confirmed in 3 verdicts"),
        "{}",
        actions[0].why
    );
    assert!(actions[0].why.contains("limits.drained_share not checked"));
}

#[test]
fn the_limits_refuse_and_say_which() {
    let p = policy(
        "mode = \"act\"\nconfirm = 1\nkinds = [\"drain\"]\n[limits]\nper_hour = 2\n\
         drained_share = 0.25",
    );
    // One of four drained already: a second would be half.
    let parts = partitions(4, &["node002"]);
    let history = History {
        partitions: Some(&parts),
        ..Default::default()
    };
    let mut r = host_report();
    r.culprits[0].host = Some("node001".into());
    r.hosts[0].host = "node001".into();
    r.follow_ups[0].target = "node001 loopback".into();
    let a = decide(&p, &r, &history);
    assert_eq!(a[0].state, ActionState::Refused);
    assert_eq!(
        a[0].refused_by.as_deref(),
        Some(
            "limits.drained_share: draining node001 would leave 2 of the 4 nodes of partition \
             batch drained (0.50), over 0.25"
        )
    );
    // The node itself drained by someone else: left alone.
    let a = decide(
        &p,
        &r,
        &History {
            partitions: Some(&partitions(4, &["node001"])),
            ..Default::default()
        },
    );
    assert!(a[0]
        .refused_by
        .as_deref()
        .unwrap()
        .contains("drained already, not by hostping"));
    // Two actions in the last hour: the most.
    let a = decide(
        &p,
        &r,
        &History {
            last_hour: 2,
            ..Default::default()
        },
    );
    assert_eq!(
        a[0].refused_by.as_deref(),
        Some("limits.per_hour: 2 actions in the last hour, the most the policy allows is 2")
    );
}

#[test]
fn an_action_in_force_is_not_repeated() {
    let r = host_report();
    let first = decide(&acting(), &r, &History::default());
    assert_eq!(first.len(), 2);
    let again = decide(
        &acting(),
        &r,
        &History {
            in_force: &first,
            ..Default::default()
        },
    );
    assert!(again.is_empty(), "{again:?}");
}

fn cable_report(outcome: &str) -> JobReport {
    let mut r = report(vec![culprit(
        Layer::Fabric,
        None,
        "leaf2/33",
        "link_degraded",
        0.94,
    )]);
    r.verdict = model::job::Verdict::Network;
    r.follow_ups.push(FollowUp {
        kind: "pair".into(),
        target: "node005/rnic0<->node020/rnic0".into(),
        why: "crosses leaf2/33 and not spine1/2".into(),
        outcome: outcome.into(),
        round: None,
    });
    r.pairs.push(
        serde_json::from_value(serde_json::json!({
            "a": {"host": "node005", "rnic": "rnic0"}, "b": {"host": "node020", "rnic": "rnic0"},
            "latency_us": 3.0, "bandwidth_gbps": 90.0, "host_a_us": 1.0, "host_b_us": 1.0,
            "network_us": 1.0,
            "route": ["leaf2/1", "leaf2/33", "spine1/2", "spine1/7", "leaf4/33", "leaf4/4"],
            "status": "abnormal", "host_a_status": "normal", "host_b_status": "normal",
            "network_status": "abnormal", "endpoint_a": "gpu0", "endpoint_b": "gpu0",
            "cables": ["leaf2/1", "leaf2/33", "leaf4/33", "leaf4/4"],
            "retransmitted_packets": 0, "reason": null}))
        .unwrap(),
    );
    r.what_if = Some(model::job::WhatIf {
        traffic: "ring all-reduce".into(),
        scenarios: [
            ("observed", 2700.0),
            ("healthy", 1400.0),
            ("background_only", 1500.0),
        ]
        .into_iter()
        .map(|(name, time_us)| model::job::WhatIfScenario {
            name: name.into(),
            setting: String::new(),
            time_us,
            packets: 1,
        })
        .collect(),
        explains: "element".into(),
        element: Some("leaf2/33".into()),
        suggested_mapping: Vec::new(),
        evidence: String::new(),
        simulated: true,
    });
    r
}

#[test]
fn a_cable_is_alerted_never_drained_naming_both_ends_and_its_hosts() {
    let r = cable_report("network part abnormal: 40 % of the bandwidth");
    let actions = decide(&acting(), &r, &History::default());
    assert_eq!(actions.len(), 1, "{actions:?}");
    let a = &actions[0];
    assert_eq!(a.kind, ActionKind::Alert);
    assert_eq!(a.host, None);
    assert_eq!(a.ends, vec!["leaf2/33", "spine1/2"]);
    assert_eq!(a.hosts, vec!["node005", "node020"]);
    assert_eq!(
        a.wins_back,
        Some(model::action::WinsBack {
            from_us: 2700.0,
            to_us: 1500.0,
            source: WinsBackSource::WhatIf,
        })
    );
    assert!(
        a.why
            .contains("mending leaf2/33 returns the job to 1.5 ms from 2.7 ms"),
        "{}",
        a.why
    );
    // A host's cable end.
    assert_eq!(
        cable::ends(&r.pairs, "leaf2/1"),
        vec!["leaf2/1", "node005/rnic0"]
    );
    assert_eq!(
        cable::ends(&r.pairs, "leaf4/4"),
        vec!["leaf4/4", "node020/rnic0"]
    );
    // The pair found the network part normal: cleared.
    let cleared = cable_report("network part normal");
    assert!(decide(&acting(), &cleared, &History::default()).is_empty());
    let not_run = cable_report("not run: the agent did not answer");
    assert!(decide(&acting(), &not_run, &History::default()).is_empty());
}

#[test]
fn wins_back_is_never_invented() {
    let mut r = cable_report("network part abnormal");
    // The what-if put the time on another cable.
    r.what_if.as_mut().unwrap().element = Some("spine1/7".into());
    assert_eq!(wins_back::wins_back(&r, &r.culprits[0]), None);
    r.what_if = None;
    assert_eq!(wins_back::wins_back(&r, &r.culprits[0]), None);
    // A host culprit: only when the fabric explains none of it.
    let mut h = host_report();
    h.what_if = cable_report("").what_if;
    assert_eq!(wins_back::wins_back(&h, &h.culprits[0]), None);
    h.what_if.as_mut().unwrap().explains = "unexplained".into();
    assert_eq!(
        wins_back::wins_back(&h, &h.culprits[0]),
        Some(model::action::WinsBack {
            from_us: 2700.0,
            to_us: 1400.0,
            source: WinsBackSource::WhatIf,
        })
    );
}

/// A symptom whose 16-rank all-reduce of 64 MiB on `hosts` held 60 GB/s of bus bandwidth
/// before the onset at t = 100 s, and `during` GB/s after.
fn slowed(hosts: &[&str], during: f64) -> model::inspector::Symptom {
    let series: Vec<(f64, f64)> = (0..20)
        .map(|i| (f64::from(i) * 10.0, if i < 10 { 60.0 } else { during }))
        .collect();
    model::inspector::Symptom {
        source: "nccl_inspector".into(),
        records: 1000,
        slow: true,
        since: Some(100.0),
        busbw_gbs: Default::default(),
        communicators: vec![model::inspector::CommunicatorSymptom {
            id: "0x1".into(),
            collective: "AllReduce".into(),
            bytes: 64 << 20,
            ranks: 16,
            nnodes: 4,
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            slow: true,
            busbw_gbs: during,
            since: Some(100.0),
            series,
            places: Vec::new(),
            rail: None,
        }],
        stragglers: Vec::new(),
        skipped: Default::default(),
    }
}

#[test]
fn a_hosts_drain_wins_back_its_slow_collective_at_the_level_before_the_onset() {
    // The what-if replays the fabric only: a host's fault leaves it at the healthy time.
    let mut h = host_report();
    h.symptom = Some(slowed(&["node004", "node005"], 30.0));
    let w = wins_back::wins_back(&h, &h.culprits[0]).expect("from the collectives");
    assert_eq!(w.source, WinsBackSource::Collectives);
    // 64 MiB x 2 x 15/16 over 30 and 60 GB/s.
    let us = |gbs: f64| (64u64 << 20) as f64 * 2.0 * 15.0 / 16.0 / (gbs * 1e3);
    assert!((w.from_us - us(30.0)).abs() < 1e-6, "{w:?}");
    assert!((w.to_us - us(60.0)).abs() < 1e-6, "{w:?}");
    assert!(wins_back::in_words(&w)
        .ends_with("(the job's own collectives, their level before the onset)"));
    // Not on the culprit's host, or not slower than before: nothing.
    h.symptom = Some(slowed(&["node004", "node006"], 30.0));
    assert_eq!(wins_back::wins_back(&h, &h.culprits[0]), None);
    h.symptom = Some(slowed(&["node005"], 60.0));
    assert_eq!(wins_back::wins_back(&h, &h.culprits[0]), None);
    // A cable is never estimated from the collectives (which do not say which cable).
    let mut c = cable_report("network part abnormal");
    c.what_if = None;
    c.symptom = Some(slowed(&["node005", "node020"], 30.0));
    assert_eq!(wins_back::wins_back(&c, &c.culprits[0]), None);
}

/// `n` confirmed host culprits, one a host of node001.. .
fn burst(n: usize) -> JobReport {
    let mut r = report(Vec::new());
    for i in 1..=n {
        let host = format!("node{i:03}");
        r.culprits.push(culprit(
            Layer::Host,
            Some(&host),
            "gpu0--lsw0",
            "pcie_downgraded",
            0.9,
        ));
        r.hosts.push(JobHostSummary {
            host: host.clone(),
            healthy: Some(false),
            causes: vec!["pcie_downgraded".into()],
            job_paths_healthy: Some(false),
            unjudged_links: Vec::new(),
            judged: String::new(),
        });
        r.follow_ups.push(recheck(
            &host,
            "checked (run 1): pcie_downgraded at gpu0--lsw0",
        ));
    }
    r
}

proptest! {
    /// Whatever the burst, the drains taken stay within the share of the partition and the
    /// actions within the hour's count; the rest are refused, each naming its limit.
    #[test]
    fn a_burst_never_passes_the_limits(
        culprits in 1usize..40,
        nodes in 1usize..40,
        already in 0usize..10,
        per_hour in 0u32..20,
        last_hour in 0usize..20,
        share in 0.01f64..=1.0,
        alert in any::<bool>(),
    ) {
        let kinds = if alert { "[\"drain\", \"alert\"]" } else { "[\"drain\"]" };
        let p = policy(&format!(
            "mode = \"act\"\nconfirm = 1\nkinds = {kinds}\nalertmanager = \"http://a:9093\"\n\
             [limits]\nper_hour = {per_hour}\ndrained_share = {share}"
        ));
        let nodes = nodes.max(culprits);
        let already = already.min(nodes);
        // The last `already` nodes are drained by someone else.
        let drained: Vec<String> =
            (nodes - already + 1..=nodes).map(|i| format!("node{i:03}")).collect();
        let parts = vec![Partition {
            name: "batch".into(),
            nodes: (1..=nodes).map(|i| format!("node{i:03}")).collect(),
            drained: drained.clone(),
        }];
        let history = History { last_hour, partitions: Some(&parts), ..Default::default() };
        let actions = decide(&p, &burst(culprits), &history);
        let taken: Vec<&Action> =
            actions.iter().filter(|a| a.state == ActionState::Taken).collect();
        prop_assert!(last_hour + taken.len() <= (per_hour as usize).max(last_hour));
        if last_hour >= per_hour as usize {
            prop_assert!(taken.is_empty());
        }
        let drains = taken.iter().filter(|a| a.kind == ActionKind::Drain).count();
        let share_after = (already + drains) as f64 / nodes as f64;
        prop_assert!(drains == 0 || share_after <= share + 1e-9, "{share_after} > {share}");
        for a in &actions {
            if a.state == ActionState::Refused {
                let by = a.refused_by.as_deref().unwrap_or_default();
                prop_assert!(by.starts_with("limits.") || by.starts_with("slurm: "), "{by}");
            } else {
                prop_assert!(a.refused_by.is_none());
            }
        }
        // Every culprit had its say: one drain each, taken or refused.
        prop_assert_eq!(
            actions.iter().filter(|a| a.kind == ActionKind::Drain).count(),
            culprits
        );
    }
}

#[test]
fn a_cable_named_alone_is_confirmed_by_a_pair_measuring_it_again() {
    let mut r = cable_report("network part abnormal");
    r.follow_ups[0].why = format!("crosses leaf2/33{}", crate::follow_up::RECHECK_SUFFIX);
    assert!(matches!(
        confirmation(&r, &r.culprits[0]),
        Confirmation::Confirmed(_)
    ));
    r.follow_ups[0].outcome = "network part normal".into();
    assert!(matches!(
        confirmation(&r, &r.culprits[0]),
        Confirmation::Cleared(_)
    ));
    // A pair measuring another cable says nothing of this one.
    r.follow_ups[0].why = format!("crosses leaf2/3{}", crate::follow_up::RECHECK_SUFFIX);
    assert_eq!(confirmation(&r, &r.culprits[0]), Confirmation::Unconfirmed);
}

#[test]
fn a_flapping_link_is_not_cleared_by_a_measurement_in_its_healthy_phase() {
    // A host's: its recheck found it healthy, then met its degraded phase.
    let mut r = report(vec![culprit(
        Layer::Host,
        Some("node005"),
        "gpu1--lsw1",
        "link_flapping",
        0.9,
    )]);
    r.follow_ups
        .push(recheck("node005", "checked (run 4): healthy"));
    assert_eq!(confirmation(&r, &r.culprits[0]), Confirmation::Unconfirmed);
    r.follow_ups.push(recheck(
        "node005",
        "checked (run 5): link_failure at gpu1--lsw1",
    ));
    assert!(matches!(
        confirmation(&r, &r.culprits[0]),
        Confirmation::Confirmed(_)
    ));
    // A cable's: normal in one round of its pair, abnormal in the other.
    let mut c = cable_report("network part abnormal");
    c.culprits[0].cause = "link_flapping".into();
    let mut normal = c.follow_ups[0].clone();
    normal.outcome = "network part normal".into();
    c.follow_ups.push(normal);
    assert!(matches!(
        confirmation(&c, &c.culprits[0]),
        Confirmation::Confirmed(_)
    ));
    c.follow_ups.remove(0);
    assert_eq!(confirmation(&c, &c.culprits[0]), Confirmation::Unconfirmed);
}
