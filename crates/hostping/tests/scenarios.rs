//! The scenario suite of Hostping Section 6: every case must be diagnosed as expected, and
//! healthy noisy hosts must raise no alarm.

use hostping::bench;
use hostping::scenario::Scenario;
use std::path::Path;

fn suite() -> Vec<Scenario> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    Scenario::load_dir(&dir).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_suite_has_the_twelve_cases_two_healthy_hosts_and_the_issue_11_cases() {
    let cases: Vec<String> = suite().iter().map(|s| s.case.clone()).collect();
    let mut want: Vec<String> = (1..=12).map(|i| format!("#{i}")).collect();
    want.extend(
        [
            "healthy-idle",
            "healthy-busy",
            "gpu-link-flapping",
            "rnic-saturated",
            "rnic-link-flapping",
        ]
        .map(String::from),
    );
    assert_eq!(cases, want);
}

#[test]
fn every_scenario_is_diagnosed_as_expected() {
    let scenarios = suite();
    let rows = bench::run_scenarios(&scenarios, &mut |_| {});
    let failed: Vec<String> = rows
        .iter()
        .filter(|(r, _)| !r.pass)
        .map(|(r, _)| {
            format!(
                "{} {}: expected {}, got {}",
                r.case, r.title, r.expected, r.got
            )
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn healthy_noisy_hosts_raise_no_false_alarm() {
    for name in model::builtin::names() {
        let host = model::builtin::load(name).unwrap().unwrap();
        let f = bench::false_alarms(&host, 200, &mut || {});
        assert_eq!(f.false_alarms, 0, "{name}: {f:?}");
    }
}

fn scenario(case: &str) -> Scenario {
    suite()
        .into_iter()
        .find(|s| s.case == case)
        .unwrap_or_else(|| panic!("no scenario {case}"))
}

#[test]
fn a_saturated_rnic_is_overloaded_not_failed_for_every_seed() {
    let base = scenario("rnic-saturated");
    for seed in 1..=30 {
        let s = Scenario {
            seed,
            ..base.clone()
        };
        let out = s.run();
        assert!(out.pass, "seed {seed}: got {}", out.got_summary());
    }
}

/// The level of `link` in each report: Some(true) abnormal, Some(false) normal.
fn levels(reports: &[model::Report], link: &str) -> Vec<Option<bool>> {
    reports
        .iter()
        .map(|r| {
            let l = r.links.iter().find(|l| l.id.as_str() == link)?;
            match l.status {
                model::LinkStatus::Abnormal => Some(true),
                model::LinkStatus::Normal => Some(false),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn a_flapping_gpu_link_is_named_flapping_once_it_alternates_for_every_seed() {
    // `check --inject flap:gpu6--lsw6:0.4 --runs 4` over seeds 1..=30: each run meets the flap
    // at its own phase, so the link is abnormal in some runs and normal in others.
    let base = scenario("gpu-link-flapping");
    let link = "gpu6--lsw6";
    let mut flapping_last = 0;
    let mut phases_seen = std::collections::BTreeSet::new();
    for seed in 1..=30 {
        let s = Scenario {
            seed,
            runs: 4,
            ..base.clone()
        };
        let reports = hostping::pipeline::check_virtual(
            &s.host,
            s.faults.clone(),
            seed,
            &hostping::baseline::simulated(
                &s.host,
                hostping::baseline::DEFAULT_RUNS,
                seed,
                &Default::default(),
                vhost::VhostConfig::default().noise,
            ),
            &hostping::pipeline::CheckSettings {
                runs: 4,
                ..Default::default()
            },
        );
        let seen = levels(&reports, link);
        phases_seen.insert(seen.clone());
        for (i, r) in reports.iter().enumerate() {
            // Only the flapping link is ever named, as a failure or a flap.
            for d in &r.diagnoses {
                assert_eq!(
                    d.links,
                    [link.into()] as [model::LinkId; 1],
                    "seed {seed} run {i}"
                );
                assert!(
                    matches!(
                        d.cause,
                        model::Cause::LinkFailure | model::Cause::LinkFlapping
                    ),
                    "seed {seed} run {i}: {:?}",
                    d.cause
                );
            }
            // Two changes of level so far: flapping, never a failure.
            let judged: Vec<bool> = seen[..=i].iter().flatten().copied().collect();
            let changes = judged.windows(2).filter(|w| w[0] != w[1]).count();
            let causes: Vec<model::Cause> = r.diagnoses.iter().map(|d| d.cause).collect();
            if changes >= 2 {
                assert_eq!(
                    causes,
                    [model::Cause::LinkFlapping],
                    "seed {seed} run {i}: {seen:?}"
                );
            } else if seen[i] == Some(true) {
                assert_eq!(
                    causes,
                    [model::Cause::LinkFailure],
                    "seed {seed} run {i}: {seen:?}"
                );
            } else {
                assert!(r.healthy, "seed {seed} run {i}: {seen:?}");
            }
        }
        if reports[3]
            .diagnoses
            .iter()
            .any(|d| d.cause == model::Cause::LinkFlapping)
        {
            flapping_last += 1;
        }
    }
    // The runs meet the flap at independent phases: the series differ from seed to seed.
    assert!(phases_seen.len() >= 5, "{phases_seen:?}");
    // Measured 17 of 30 (BENCHMARKS.md); a series that met the flap in one phase throughout
    // cannot tell it from a failure or from health.
    assert!(flapping_last >= 15, "{flapping_last} of 30");
}

#[test]
fn a_flapping_rnic_link_is_named_flapping_not_its_gpu_links_for_every_seed() {
    // Within a run the RNIC's fast paths clear its link, so single runs blame a GPU link;
    // across 4 runs every abnormal path crosses the RNIC link.
    let base = scenario("rnic-link-flapping");
    let mut exact = 0;
    for seed in 1..=30 {
        let s = Scenario {
            seed,
            ..base.clone()
        };
        let out = s.run();
        let d = &out.report.diagnoses;
        assert_eq!(d.len(), 1, "seed {seed}: {}", out.got_summary());
        assert_eq!(d[0].cause, model::Cause::LinkFlapping, "seed {seed}");
        // The flapping link is named; links it cannot be told apart from in these runs
        // (they lie on the same abnormal paths) may be named with it.
        assert!(
            d[0].links.contains(&"rnic1--lsw2".into()),
            "seed {seed}: {}",
            out.got_summary()
        );
        if out.pass {
            exact += 1;
        }
    }
    // Measured 16 of 30 named alone (BENCHMARKS.md).
    assert!(exact >= 12, "{exact} of 30");
}
