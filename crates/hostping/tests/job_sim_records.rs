//! `hostping job --sim-cluster ... --nccl-out DIR` (issue 39 item 5, "Done when"): a
//! simulated job runs its collectives step by step on the packet simulator, a fault starting
//! mid-run, and writes NCCL Inspector records as the plugin does; the verdict judges them
//! beside the cluster's evidence, and `job --nccl DIR` alone reads the same folder. A
//! straggler host, a slow GPU and a starved host, a rail slowed by a cable, a host's
//! degraded GPU link, and a healthy job, each with its verdict.

mod common;

use std::path::{Path, PathBuf};

use common::job::job_json;
use common::{hostping, stderr, stdout, temp_dir, TestDir};
use serde_json::Value;

/// Four hosts, one on each rail-0 leaf of pod-32 (DESIGN 4.6): node017's rnic0 is leaf3's
/// port 1.
const NODES: &str = "node001,node009,node017,node025";
/// 90 steps of a 16 MiB all-reduce, 100 ms of compute between them: about 9 s of records
/// in buckets of about a step (`analyze::collectives::bucket_width_s`), the fault at 4 s.
const STEPS: &str = "90";
const BYTES: &str = "16777216";
/// `model::inspector`'s simulated job starts here (Unix s): `simcluster::collectives`.
const START_S: f64 = 1_795_000_000.0;

/// Runs the simulated job with `inject` (and `extra` flags), its records written under a
/// test folder `name`; returns the verdict and the folder.
fn simulate(name: &str, inject: &[&str], extra: &[&str]) -> (i32, Value, TestDir, PathBuf) {
    let root = temp_dir(name);
    let dir = root.join("nccl-inspector-sim");
    let mut args = vec![
        "--sim-cluster",
        "pod-32",
        "--nodes",
        NODES,
        "--nccl-out",
        dir.to_str().unwrap(),
        "--steps",
        STEPS,
        "--bytes",
        BYTES,
    ];
    for fault in inject {
        args.extend(["--inject", fault]);
    }
    args.extend_from_slice(extra);
    let (code, report, err) = job_json(&args);
    assert_ne!(code, 2, "{err}");
    assert!(err.contains("simulated NCCL Inspector records"), "{err}");
    (code, report, root, dir)
}

/// `job --nccl DIR` alone.
fn records_alone(dir: &Path) -> (i32, Value) {
    let (code, report, err) = job_json(&["--nccl", dir.to_str().unwrap()]);
    assert_ne!(code, 2, "{err}");
    (code, report)
}

fn culprits(report: &Value) -> &Vec<Value> {
    report["culprits"].as_array().unwrap()
}

#[test]
fn a_straggler_host_is_named_from_its_records_its_network_healthy() {
    let (code, report, _root, dir) =
        simulate("simrec-straggler", &["node009:straggler:gpu3:40ms@4s"], &[]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["simulated"], true);
    assert_eq!(report["verdict"], "host", "{report:#}");
    let top = &culprits(&report)[0];
    assert_eq!(top["cause"], "straggler", "{report:#}");
    assert_eq!(top["host"], "node009");
    assert_eq!(top["component"], "gpu3", "{report:#}");
    // Its host's own checks found nothing: no culprit of its network.
    assert!(
        culprits(&report)
            .iter()
            .all(|c| c["cause"] == "straggler" || c["host"] != "node009"),
        "{report:#}"
    );
    // One file per process, as the plugin writes them: 4 hosts x 8 GPUs.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 32);
    let symptom = &report["symptom"];
    assert_eq!(symptom["records"], 90 * 32 * 2, "{symptom:#}");
    let since = symptom["since"].as_f64().unwrap() - START_S;
    assert!(
        (3.0..=5.5).contains(&since),
        "onset {since} s, straggler from 4 s"
    );

    // The same folder alone: the records name the straggler without any probe, and say
    // they were simulated (their metadata's git_rev).
    let (code, alone) = records_alone(&dir);
    assert_eq!(code, 1, "{alone:#}");
    assert_eq!(alone["simulated"], true, "{alone:#}");
    assert_eq!(alone["verdict"], "host");
    assert_eq!(culprits(&alone)[0]["cause"], "straggler");
    assert_eq!(culprits(&alone)[0]["host"], "node009");
    let late_us = alone["symptom"]["stragglers"][0]["late_us"]
        .as_f64()
        .unwrap();
    assert!((35_000.0..45_000.0).contains(&late_us), "{alone:#}");
}

#[test]
fn a_slow_gpu_and_a_starved_host_are_named_as_what_is_late() {
    // node009's gpu3 at 60 % of its speed: 100 ms of compute take 167 ms, 67 ms late. Every
    // rank of node017 30 ms late: its CPUs are taken.
    let inject = [
        "node009:slow-gpu:gpu3:0.6@4s",
        "node017:cpu-starved:30ms@4s",
    ];
    let (code, report, _root, _dir) = simulate("simrec-slow-gpu", &inject, &[]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["verdict"], "host", "{report:#}");
    let named: Vec<(&str, Option<&str>)> = culprits(&report)
        .iter()
        .filter(|c| c["cause"] == "straggler")
        .map(|c| (c["host"].as_str().unwrap(), c["component"].as_str()))
        .collect();
    // The slow GPU by its index; the starved host once, as a whole: all its eight ranks
    // are late, so what they share is.
    assert!(named.contains(&("node009", Some("gpu3"))), "{report:#}");
    let starved: Vec<_> = named.iter().filter(|(h, _)| *h == "node017").collect();
    assert_eq!(starved, [&("node017", None)], "{report:#}");
    let evidence = culprits(&report)
        .iter()
        .find(|c| c["host"] == "node017")
        .unwrap()["evidence"]
        .as_str()
        .unwrap();
    assert!(evidence.contains("all 8 of its ranks"), "{evidence}");
    let late = |rank: u64| {
        report["symptom"]["stragglers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["rank"] == rank)
            .and_then(|s| s["late_us"].as_f64())
    };
    // node009's gpu3 is world rank 8 + 3; node017's ranks are 16..24.
    let slow_gpu = late(11).expect("rank 11 late");
    assert!((55_000.0..75_000.0).contains(&slow_gpu), "{slow_gpu}");
    for rank in 16..24 {
        let us = late(rank).unwrap_or_else(|| panic!("rank {rank} late: {report:#}"));
        assert!((25_000.0..35_000.0).contains(&us), "rank {rank}: {us}");
    }
}

#[test]
fn a_rail_slowed_by_a_cable_mid_run_is_named_by_its_cable() {
    let inject = ["fabric:degrade:node017/rnic0:0.3@4s"];
    // The mesh alone leaves the host's cable and its leaf's uplink as candidates.
    let (code, report, _, _) = simulate("simrec-slow-rail-mesh", &inject, &[]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["verdict"], "network", "{report:#}");
    let candidates = &culprits(&report)[0]["candidates"];
    assert!(
        candidates
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "leaf3/1"),
        "{report:#}"
    );
    // The follow-up probes split them.
    let (code, report, _root, dir) = simulate("simrec-slow-rail", &inject, &["--probe"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["verdict"], "network", "{report:#}");
    let top = &culprits(&report)[0];
    assert_eq!(top["layer"], "fabric", "{report:#}");
    assert_eq!(
        top["component"], "leaf3/1",
        "node017's rnic0 cable: {report:#}"
    );
    assert_eq!(top["cause"], "link_degraded");
    let symptom = &report["symptom"];
    assert_eq!(symptom["slow"], true, "{symptom:#}");
    assert!(symptom["stragglers"].as_array().unwrap().is_empty());

    // Alone, the records say since when the job is slow, and blame no host.
    let (code, alone) = records_alone(&dir);
    assert_eq!(code, 3, "nothing measured the cables: {alone:#}");
    let symptom = &alone["symptom"];
    assert_eq!(symptom["slow"], true);
    let since = symptom["since"].as_f64().unwrap() - START_S;
    assert!(
        (3.0..=5.5).contains(&since),
        "onset {since} s, cable from 4 s"
    );
    assert!(symptom["stragglers"].as_array().unwrap().is_empty());
    assert!(culprits(&alone).is_empty(), "{alone:#}");
    let before = symptom["busbw_gbs"]["before"].as_f64().unwrap();
    let during = symptom["busbw_gbs"]["during"].as_f64().unwrap();
    assert!(during < 0.6 * before, "busbw {before} -> {during}");
}

#[test]
fn a_healthy_simulated_job_has_no_culprit_and_is_not_slow() {
    let (code, report, _root, dir) = simulate("simrec-healthy", &[], &["--probe"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["verdict"], "neither", "{report:#}");
    assert!(culprits(&report).is_empty(), "{report:#}");
    assert_eq!(report["symptom"]["slow"], false);
    let (code, alone) = records_alone(&dir);
    assert_eq!(code, 3, "records alone never vouch for the infrastructure");
    assert_eq!(alone["symptom"]["slow"], false);
    assert!(culprits(&alone).is_empty());
}

#[test]
fn a_fault_starting_after_the_job_ended_is_not_measured() {
    // 90 steps of about 100 ms end near 9 s: a cable degraded at 600 s never touched it.
    let (code, report, _, _) = simulate(
        "simrec-after-end",
        &["fabric:degrade:node017/rnic0:0.3@600s"],
        &[],
    );
    assert_eq!(code, 0, "{report:#}");
    assert!(culprits(&report).is_empty(), "{report:#}");
}

#[test]
fn bad_steps_and_start_times_are_refused_naming_them() {
    let root = temp_dir("simrec-bad");
    let dir = root.join("out");
    let dir = dir.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--inject", "fabric:degrade:leaf1/9:0.5@30"],
            "--inject `fabric:degrade:leaf1/9:0.5@30`",
        ),
        (
            vec!["--inject", "node009:straggler:gpu3:40"],
            "--inject `node009:straggler:gpu3:40`",
        ),
        (vec!["--steps", "0"], "--steps"),
        (vec!["--steps", "1000000"], "--steps"),
        (vec!["--step-ms=-1"], "--step-ms"),
        (vec!["--step-ms", "1e9"], "--step-ms"),
    ] {
        let mut all = vec!["job", "--sim-cluster", "pod-32", "--nodes", NODES];
        all.extend(["--nccl-out", dir]);
        all.extend(args.iter().copied());
        let out = hostping(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    assert!(
        !Path::new(dir).exists(),
        "nothing written for a refused job"
    );
    // Too many records, or one host: refused before anything is written.
    for nodes in ["node[001-032]", "node001"] {
        let out = hostping(&[
            "job",
            "--sim-cluster",
            "pod-32",
            "--nodes",
            nodes,
            "--nccl-out",
            dir,
            "--steps",
            "100000",
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(!Path::new(dir).exists(), "{nodes}: nothing written");
    }
    // --steps without --nccl-out: nothing would be run.
    let out = hostping(&["job", "--sim-cluster", "pod-32", "--steps", "10"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn bench_job_passive_scores_each_class_with_and_without_probes() {
    let out = hostping(&[
        "bench",
        "job",
        "--passive",
        "--suite",
        "fast",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bench: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(bench["simulated"], true);
    let classes: Vec<&str> = bench["passive"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(
        classes,
        [
            "passive_straggler",
            "passive_slow_rail",
            "passive_background",
            "passive_healthy",
            "passive_host_link"
        ]
    );
    let class = |name: &str| {
        bench["passive"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == name)
            .unwrap()
            .clone()
    };
    let straggler = class("passive_straggler");
    assert_eq!(straggler["jobs"], 2);
    assert_eq!(straggler["top1_without_probes"], 1.0, "{straggler:#}");
    assert_eq!(straggler["top1_with_probes"], 1.0, "{straggler:#}");
    assert!(straggler["detection_s"].as_f64().unwrap().abs() <= 1.0);
    // The records alone never name a cable: the probes do.
    let rail = class("passive_slow_rail");
    assert_eq!(rail["top1_without_probes"], 0.0, "{rail:#}");
    assert_eq!(rail["top1_with_probes"], 1.0, "{rail:#}");
    assert_eq!(class("passive_healthy")["slow"], 0);
    assert!(rail["records"].as_u64().unwrap() > 0 && rail["packets"].as_u64().unwrap() > 0);
    // A host's slow GPU link: slow in the records, named only by the host's check.
    let host_link = class("passive_host_link");
    assert_eq!(host_link["slow"], 2, "{host_link:#}");
    assert_eq!(host_link["top1_without_probes"], 0.0, "{host_link:#}");
    assert_eq!(host_link["top1_with_probes"], 1.0, "{host_link:#}");
    assert_eq!(bench["cases"].as_array().unwrap().len(), 10);

    let out = hostping(&["bench", "job", "--passive", "--cluster", "pod-32"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_hosts_fault_is_measured_once_started_by_the_jobs_end() {
    let fault = "node009:degrade:rnic0--lsw0:0.3";
    let (_, before, _, _) = simulate("simrec-host-later", &[&format!("{fault}@600s")], &[]);
    assert!(culprits(&before).is_empty(), "{before:#}");
    let (code, during, _, _) = simulate("simrec-host-now", &[&format!("{fault}@2s")], &[]);
    assert_eq!(code, 1, "{during:#}");
    assert_eq!(culprits(&during)[0]["host"], "node009", "{during:#}");
}

#[test]
fn a_hosts_degraded_gpu_link_mid_run_slows_the_job_and_its_drain_wins_time_back() {
    let fault = "node009:degrade:gpu0--lsw0:0.3";
    let (code, report, _root, dir) = simulate("simrec-host-link", &[&format!("{fault}@4s")], &[]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["verdict"], "host", "{report:#}");
    let top = &culprits(&report)[0];
    assert_eq!(top["host"], "node009", "{report:#}");
    assert_eq!(top["component"], "gpu0--lsw0", "{report:#}");

    // The records alone: slow since the fault's start, no rank late, nothing to blame yet.
    let (code, alone) = records_alone(&dir);
    assert_eq!(code, 3, "nothing measured the hosts: {alone:#}");
    let symptom = &alone["symptom"];
    assert_eq!(symptom["slow"], true, "{symptom:#}");
    let since = symptom["since"].as_f64().unwrap() - START_S;
    assert!(
        (3.0..=5.5).contains(&since),
        "onset {since} s, the link from 4 s"
    );
    assert!(symptom["stragglers"].as_array().unwrap().is_empty());
    assert!(culprits(&alone).is_empty(), "{alone:#}");
    // The world communicator waits for gpu0's path (about 76 of rnic0's 200 Gb/s), and
    // node009's own ring for gpu0's link; the other hosts' own rings are untouched.
    for c in symptom["communicators"].as_array().unwrap() {
        let on_node009 = c["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "node009");
        assert_eq!(c["slow"], on_node009, "{c:#}");
        if c["nnodes"] == 4 {
            let series = c["series"].as_array().unwrap();
            let level = |from: f64, to: f64| {
                let points: Vec<f64> = series
                    .iter()
                    .filter(|p| (from..to).contains(&(p[0].as_f64().unwrap() - START_S)))
                    .map(|p| p[1].as_f64().unwrap())
                    .collect();
                points.iter().sum::<f64>() / points.len() as f64
            };
            let (before, during) = (level(0.0, 4.0), level(5.0, 100.0));
            assert!(
                (0.33..0.45).contains(&(during / before)),
                "busbw {before} -> {during}"
            );
        }
    }

    // The cluster measured (the link degraded by now) beside the records, follow-ups on,
    // and a dry-run policy: the host is the culprit, its recheck confirms it, and its drain
    // wins back the time the records lost.
    let policy_dir = temp_dir("simrec-host-link-policy");
    let policy = policy_dir.join("actions.toml");
    std::fs::write(
        &policy,
        "mode = \"dry-run\"\nconfirm = 1\nkinds = [\"drain\"]\n",
    )
    .unwrap();
    let (code, judged, err) = job_json(&[
        "--sim-cluster",
        "pod-32",
        "--nodes",
        NODES,
        "--inject",
        fault,
        "--nccl",
        dir.to_str().unwrap(),
        "--actions",
        policy.to_str().unwrap(),
        "--probe",
    ]);
    assert_eq!(code, 1, "{err}\n{judged:#}");
    assert_eq!(judged["verdict"], "host", "{judged:#}");
    let culprit: model::job::Culprit =
        serde_json::from_value(culprits(&judged)[0].clone()).unwrap();
    assert_eq!(culprit.host.as_deref(), Some("node009"), "{judged:#}");
    assert_eq!(
        culprit.component.as_deref(),
        Some("gpu0--lsw0"),
        "{judged:#}"
    );
    let parsed: model::job::JobReport = serde_json::from_value(judged.clone()).unwrap();
    let wins = verdict::actions::wins_back::wins_back(&parsed, &culprit)
        .expect("the job's collectives put the time on node009");
    assert!(
        wins.to_us > 0.0 && wins.to_us < 0.5 * wins.from_us,
        "{wins:?}"
    );
    let drain = judged["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["host"] == "node009" && a["kind"] == "drain")
        .unwrap_or_else(|| panic!("node009's drain proposed: {judged:#}"));
    assert_eq!(drain["state"], "proposed", "{drain:#}");
    let w = &drain["wins_back"];
    assert_eq!(w["source"], "collectives", "{drain:#}");
    assert_eq!(w["from_us"].as_f64(), Some(wins.from_us), "{drain:#}");
    assert_eq!(w["to_us"].as_f64(), Some(wins.to_us), "{drain:#}");
}
