//! Never healthy unless judged (issue 26 section 1, DESIGN 4.3): exit status 3 and
//! `inconclusive` when links could not be judged, an RNIC saturated by service traffic,
//! baselines that say how they were measured, and READ refused on the virtual host.

mod common;

use common::{hostping, stderr, stdout, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// A usage or input error: status 2, one line naming each of `must_contain`.
fn assert_input_error(o: &Output, must_contain: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for m in must_contain {
        assert!(err.contains(m), "`{m}` missing from: {err}");
    }
}

/// A baseline of the virtual dgx-a100 recorded by `hostping baseline` with `extra` flags.
fn record_baseline(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let file = dir.join(name);
    let mut args = vec![
        "baseline",
        "--sim",
        "dgx-a100",
        "--runs",
        "1",
        "--output",
        file.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = hostping(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    file
}

/// `file` rewritten by `edit` on its JSON.
fn edit_baseline(file: &Path, edit: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn check(baseline: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "check",
        "--sim",
        "dgx-a100",
        "--baseline",
        baseline.to_str().unwrap(),
        "--inject",
        "degrade:gpu4--lsw4:0.3",
    ];
    args.extend(extra);
    hostping(&args)
}

fn not_judged_paths(v: &Value, reason: &str) -> Vec<String> {
    v["not_judged"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["reason"] == reason)
        .unwrap_or_else(|| panic!("no {reason} in {}", v["not_judged"]))["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_baseline_without_paths_is_inconclusive_exit_3_naming_all_40_paths() {
    let dir = temp_dir("verdict-empty");
    let b = record_baseline(&dir, "b.json", &[]);
    edit_baseline(&b, |v| v["paths"] = Value::Array(Vec::new()));
    let o = check(&b, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["healthy"], false);
    assert_eq!(v["inconclusive"], true);
    assert_eq!(v["diagnoses"].as_array().unwrap().len(), 0);
    let paths = not_judged_paths(&v, "no_baseline");
    assert_eq!(paths.len(), 40);
    assert!(paths.contains(&"rnic2->gpu4".to_string()));

    // The same run for people: the word, what was not judged, what to do.
    let o = check(&b, &[]);
    assert_eq!(o.status.code(), Some(3));
    let text = stdout(&o);
    assert!(text.contains("inconclusive"), "{text}");
    assert!(text.contains("no_baseline"), "{text}");
    assert!(text.contains("paths (40)"), "{text}");
    assert!(text.contains("hostping baseline"), "{text}");
    assert!(!text.contains("healthy:"), "{text}");
}

#[test]
fn a_baseline_of_one_path_names_the_other_39() {
    let dir = temp_dir("verdict-one");
    let b = record_baseline(&dir, "b.json", &[]);
    edit_baseline(&b, |v| {
        let first = v["paths"][0].clone();
        v["paths"] = Value::Array(vec![first]);
    });
    let o = check(&b, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(
        (v["healthy"].as_bool(), v["inconclusive"].as_bool()),
        (Some(false), Some(true))
    );
    assert_eq!(not_judged_paths(&v, "no_baseline").len(), 39);
}

#[test]
fn a_series_ends_inconclusive_and_its_last_line_decides() {
    let dir = temp_dir("verdict-series");
    let b = record_baseline(&dir, "b.json", &[]);
    edit_baseline(&b, |v| v["paths"] = Value::Array(Vec::new()));
    let o = check(
        &b,
        &["--runs", "3", "--reprobe-rounds", "0", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let text = stdout(&o);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert_eq!(last["inconclusive"], true);
    assert_eq!(last["healthy"], false);
}

#[test]
fn a_full_baseline_still_finds_the_degraded_link() {
    let dir = temp_dir("verdict-full");
    let b = record_baseline(&dir, "b.json", &[]);
    let o = check(&b, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    assert!(v.get("inconclusive").is_none(), "written only when true");
    assert_eq!(v["diagnoses"][0]["cause"], "link_failure");
    assert_eq!(v["diagnoses"][0]["links"][0], "gpu4--lsw4");
}

#[test]
fn a_host_model_without_memory_or_gpu_is_inconclusive_not_healthy() {
    let dir = temp_dir("verdict-nopaths");
    let model = dir.join("nic-only.toml");
    std::fs::write(
        &model,
        r#"name = "nic-only"
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
"#,
    )
    .unwrap();
    let o = hostping(&[
        "check",
        "--sim",
        model.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["healthy"], false);
    assert_eq!(v["inconclusive"], true);
    assert_eq!(v["not_judged"][0]["reason"], "not_probed");
    assert_eq!(v["not_judged"][0]["links"][0], "rnic0--cpu0");
    let o = hostping(&["check", "--sim", model.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stdout(&o).contains("inconclusive"), "{}", stdout(&o));
}

#[test]
fn an_rnic_whose_service_traffic_fills_its_line_rate_overloads_its_link() {
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "service:rnic0:200",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["mode"], "busy");
    assert_eq!(v["healthy"], false);
    let d = &v["diagnoses"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["cause"], "link_overloaded");
    assert_eq!(d[0]["links"][0], "rnic0--lsw0");
    // Its links stay unjudged (a busy RNIC's probes cannot call them normal): the finding
    // and "inconclusive" together, and the finding's exit status.
    assert_eq!(v["inconclusive"], true);
}

#[test]
fn a_healthy_busy_host_is_inconclusive_never_healthy() {
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "service:rnic0:150",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["healthy"], false);
    assert_eq!(v["diagnoses"].as_array().unwrap().len(), 0);
    let measurable = not_judged_paths(&v, "not_measurable");
    assert!(
        measurable.iter().all(|p| p.starts_with("rnic0->")),
        "{measurable:?}"
    );
}

#[test]
fn a_healthy_idle_host_is_judged_and_healthy() {
    let o = hostping(&["check", "--sim", "dgx-a100", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["healthy"], true);
    assert!(v.get("inconclusive").is_none(), "written only when true");
    assert!(v.get("not_judged").is_none(), "{}", v["not_judged"]);
}

#[test]
fn a_baseline_measured_another_way_is_refused_naming_each_difference() {
    let dir = temp_dir("verdict-measured");
    let b = record_baseline(&dir, "b.json", &["--iterations", "100"]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    assert_eq!(v["measured_with"]["op"], "write");
    assert_eq!(v["measured_with"]["iterations"], 100);
    assert_eq!(v["measured_with"]["large_bytes"], 131072);
    let o = check(&b, &[]);
    assert_input_error(
        &o,
        &[
            "b.json",
            "baseline measured with --iterations 100, this check uses --iterations 1000",
        ],
    );
    assert_eq!(check(&b, &["--iterations", "100"]).status.code(), Some(1));

    // A baseline recorded with READ on a real host, checked with WRITE.
    edit_baseline(&b, |v| {
        v["measured_with"]["op"] = "read".into();
        v["measured_with"]["iterations"] = 1000.into();
    });
    assert_input_error(
        &check(&b, &[]),
        &["baseline measured with --op read, this check uses --op write"],
    );
}

#[test]
fn a_baseline_file_from_before_measured_with_reads_as_todays_defaults() {
    let dir = temp_dir("verdict-old");
    let b = record_baseline(&dir, "b.json", &[]);
    edit_baseline(&b, |v| {
        v.as_object_mut().unwrap().remove("measured_with");
    });
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--baseline",
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_input_error(&check(&b, &["--iterations", "10"]), &["--iterations 1000"]);
}

#[test]
fn read_is_refused_on_the_virtual_host_which_models_write_only() {
    let o = hostping(&["check", "--sim", "dgx-a100", "--op", "read"]);
    assert_input_error(&o, &["--op read", "Hostping 3.2.2", "--op write"]);
    let dir = temp_dir("verdict-read");
    let file = dir.join("b.json");
    let o = hostping(&[
        "baseline",
        "--sim",
        "dgx-a100",
        "--op",
        "read",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert_input_error(&o, &["--op read"]);
    assert!(!file.exists());
}

#[test]
fn every_built_in_model_healthy_and_idle_is_judged() {
    // Issue 38, 2: amd-2s used to exit 3 whatever its health, its seven links crossed
    // only by latency-bound GDR paths (Hostping 3.2.2). They are judged down to a bound.
    for name in model::builtin::names() {
        let o = hostping(&["check", "--sim", name, "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stdout(&o));
        let v = json(&o);
        assert_eq!(v["healthy"], true, "{name}");
        assert!(v.get("not_judged").is_none(), "{name}: {}", v["not_judged"]);
        for l in v["links"].as_array().unwrap() {
            assert_eq!(l["status"], "normal", "{name}: {l}");
        }
    }
    let o = hostping(&["check", "--sim", "amd-2s", "--format", "json"]);
    let v = json(&o);
    let bounded: Vec<&str> = v["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l.get("bound").is_some())
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(bounded.len(), 7, "{bounded:?}");
    let gpu2 = v["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == "gpu2--sw1")
        .unwrap();
    let loss = gpu2["bound"]["loss_above"].as_f64().unwrap();
    assert!(loss > 0.0 && loss < 1.0, "{gpu2}");
    // In words too.
    let o = hostping(&["check", "--sim", "amd-2s"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("judged down to a bound"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_degraded_link_that_only_latency_bound_paths_cross_is_found() {
    // Beyond the loss its paths could see: the GPU link behind amd-2s's RNIC-less root port,
    // and the narrow xGMI (which caps remote memory itself, so half its width shows).
    for (fault, link) in [
        ("degrade:gpu2--sw1:0.3", "gpu2--sw1"),
        ("degrade:cpu0--cpu1:0.5", "cpu0--cpu1"),
    ] {
        let o = hostping(&[
            "check", "--sim", "amd-2s", "--inject", fault, "--format", "json",
        ]);
        assert_eq!(o.status.code(), Some(1), "{fault}: {}", stdout(&o));
        let v = json(&o);
        let named = v["diagnoses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["links"].as_array().unwrap().iter().any(|l| l == link));
        assert!(named, "{fault}: {}", v["diagnoses"]);
    }
}
