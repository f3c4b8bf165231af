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
fn the_suite_has_the_twelve_cases_and_two_healthy_hosts() {
    let cases: Vec<String> = suite().iter().map(|s| s.case.clone()).collect();
    let mut want: Vec<String> = (1..=12).map(|i| format!("#{i}")).collect();
    want.extend(["healthy-idle".to_string(), "healthy-busy".to_string()]);
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
