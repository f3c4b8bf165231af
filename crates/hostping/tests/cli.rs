//! The binary as a user meets it: exit statuses, one-line errors, the JSON contract.

mod common;

use common::{hostping, stderr, stdout, temp_dir};
use serde_json::Value;
use std::process::Output;

/// A usage or input error: status 2 and exactly one line on stderr.
fn assert_input_error(o: &Output, must_contain: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for m in must_contain {
        assert!(err.contains(m), "`{m}` missing from: {err}");
    }
}

#[test]
fn a_failed_gpu_link_is_found_and_reported_as_the_contract_says() {
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "degrade:gpu4--lsw4:0.5",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "bottleneck found: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["host"], "dgx-a100");
    assert_eq!(v["mode"], "idle");
    assert_eq!(v["healthy"], false);
    assert_eq!(v["provenance"], "simulated");
    assert_eq!(v["paths"].as_array().unwrap().len(), 40);
    let p = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rnic"] == "rnic2" && p["endpoint"] == "gpu4")
        .unwrap();
    for key in [
        "latency_us",
        "bandwidth_gbps",
        "baseline_latency_us",
        "baseline_bandwidth_gbps",
    ] {
        assert!(p[key].is_f64(), "{key}: {p}");
    }
    assert_eq!(p["status"], "abnormal");
    let link = v["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == "gpu4--lsw4")
        .unwrap();
    assert_eq!(
        (
            link["kind"].as_str(),
            link["status"].as_str(),
            link["abnormal_cnt"].as_u64()
        ),
        (Some("gpu_pcie"), Some("abnormal"), Some(1))
    );
    let d = v["diagnoses"].as_array().unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["cause"], "link_failure");
    assert_eq!(d[0]["links"], serde_json::json!(["gpu4--lsw4"]));
    assert!(d[0]["rnic"].is_null());
    assert!(d[0]["evidence"].as_str().unwrap().len() > 20);
}

#[test]
fn a_healthy_host_exits_zero_with_no_diagnosis() {
    let o = hostping(&["check", "--sim", "single-socket", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["healthy"], true);
    assert_eq!(v["diagnoses"], serde_json::json!([]));
}

#[test]
fn several_runs_print_json_lines_and_the_last_one_carries_flapping() {
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "flap:mem1--cpu1:0.15",
        "--runs",
        "4",
        "--seed",
        "106",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines
            .iter()
            .map(|l| l["run"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    let last = &lines[3]["diagnoses"];
    assert_eq!(last[0]["cause"], "link_flapping", "{last}");
    assert_eq!(last[0]["links"], serde_json::json!(["mem1--cpu1"]));
}

#[test]
fn the_table_shows_the_matrix_and_the_diagnosis_in_words() {
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "degrade:mem0--cpu0:0.15",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("SIMULATED"), "{out}");
    let header = out.lines().find(|l| l.starts_with("Gb/s")).unwrap();
    assert!(
        header.contains("mem0") && header.contains("gpu7"),
        "{header}"
    );
    let rnic1 = out.lines().find(|l| l.starts_with("rnic1")).unwrap();
    assert!(
        rnic1.contains('*'),
        "rnic1's path to mem0 is marked abnormal: {rnic1}"
    );
    assert!(out.contains("link_failure on mem0--cpu0"), "{out}");
    assert!(!out.contains("\x1b["), "no colour when not a terminal");
}

#[test]
fn bad_fault_strings_are_one_line_errors() {
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "degrade:nosuch--link:0.5",
    ]);
    assert_input_error(&o, &["--inject", "nosuch--link"]);
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "degrade:gpu4--lsw4:1.5",
    ]);
    assert_input_error(&o, &["degrade:gpu4--lsw4:1.5"]);
    let o = hostping(&["check", "--sim", "dgx-a100", "--inject", "explode:gpu4"]);
    assert_input_error(&o, &["explode"]);
}

#[test]
fn a_malformed_model_file_names_file_field_and_reason() {
    let dir = temp_dir("model");
    let file = dir.join("bad.toml");
    let good = model::builtin::source("single-socket").unwrap();
    std::fs::write(
        &file,
        good.replace("line_rate_gbps = 200", "line_rate_gbps = \"fast\""),
    )
    .unwrap();
    let o = hostping(&["topology", "--sim", file.to_str().unwrap()]);
    assert_input_error(&o, &["bad.toml", "line_rate_gbps", "component["]);
    let o = hostping(&["check", "--sim", dir.join("missing.toml").to_str().unwrap()]);
    assert_input_error(&o, &["missing.toml", "dgx-a100"]);
}

#[test]
fn a_malformed_scenario_file_names_file_field_and_reason() {
    let dir = temp_dir("scenario");
    let file = dir.join("01-bad.toml");
    std::fs::write(&file, "case = \"#x\"\ntitle = \"t\"\nhost = \"dgx-a100\"\ninject = [\"degrade:gpu4--lsw4:zero\"]\n[expect]\nhealthy = true\n").unwrap();
    let o = hostping(&[
        "bench",
        "scenarios",
        "--dir",
        dir.to_str().unwrap(),
        "--healthy-runs",
        "1",
    ]);
    assert_input_error(&o, &["01-bad.toml", "inject[0]"]);
    std::fs::write(&file, "case = \"#x\"\ntitle = \"t\"\nhost = \"dgx-a100\"\n[expect]\nhealthy = true\nsurprise = 1\n").unwrap();
    let o = hostping(&[
        "bench",
        "scenarios",
        "--dir",
        dir.to_str().unwrap(),
        "--healthy-runs",
        "1",
    ]);
    assert_input_error(&o, &["01-bad.toml", "expect", "surprise"]);
}

fn fixture(host: &str) -> String {
    format!(
        "{}/../rdma/testdata/hosts/{host}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_host_without_rdma_says_so_points_to_sim_and_still_shows_memory_nodes() {
    let root = fixture("no-rdma");
    let o = hostping(&["check", "--sysfs-root", &root]);
    assert_input_error(
        &o,
        &["no RDMA device found", "infiniband", "--sim dgx-a100"],
    );
    let o = hostping(&["topology", "--sysfs-root", &root]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("node0"), "{text}");
    assert!(text.contains("RDMA ports (0)"), "{text}");
    assert!(text.contains("no host model"), "{text}");
}

#[test]
fn topology_shows_the_model_discovered_from_sysfs() {
    let o = hostping(&[
        "topology",
        "--sysfs-root",
        &fixture("dgx-a100"),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["host"]["name"]
            .as_str()
            .unwrap()
            .starts_with("2s-4rnic200-8gpu-"),
        "{v:#}"
    );
    assert_eq!(v["host"]["paths"].as_array().unwrap().len(), 40);
    assert_eq!(
        v["rdma_ports"].as_array().unwrap().len(),
        5,
        "the DOWN port is listed"
    );
    assert_eq!(
        v["bindings"]["rnics"].as_array().unwrap().len(),
        4,
        "but not probed"
    );
}

#[test]
fn probing_a_captured_tree_fails_per_path_or_names_the_missing_library() {
    // The fixture's mlx5 devices do not exist here: with libibverbs installed every path
    // fails and says why; without it the check cannot start and says that.
    let o = hostping(&[
        "check",
        "--sysfs-root",
        &fixture("dgx-a100"),
        "--iterations",
        "5",
        "--format",
        "json",
    ]);
    match o.status.code() {
        Some(1) => {
            let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
            assert_eq!(v["provenance"], "measured");
            let paths = v["paths"].as_array().unwrap();
            assert_eq!(paths.len(), 40);
            for p in paths {
                let e = p["error"].as_str().unwrap();
                assert!(e.contains("mlx5_"), "{e}");
            }
        }
        _ => assert_input_error(&o, &["RDMA devices found (mlx5_0", "libibverbs"]),
    }
}

#[test]
fn flags_of_one_backend_are_refused_on_the_other() {
    let o = hostping(&[
        "check",
        "--sysfs-root",
        &fixture("no-rdma"),
        "--inject",
        "acs:all",
    ]);
    assert_input_error(&o, &["--inject needs a simulated host"]);
    let o = hostping(&["check", "--sim", "dgx-a100", "--verbs-fault", "hang:mem0"]);
    assert_input_error(&o, &["--verbs-fault", "--inject"]);
    let o = hostping(&["check", "--sim", "dgx-a100", "--sysfs-root", "/"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(
        hostping(&["check", "--runs", "0", "--sim", "dgx-a100"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(hostping(&["frobnicate"]).status.code(), Some(2));
    let help = hostping(&["check", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout(&help).contains("degrade:<link>:<fraction>"));
}

#[test]
fn a_recorded_baseline_is_used_and_checked_against_the_host() {
    let dir = temp_dir("baseline");
    let file = dir.join("dgx.json");
    let o = hostping(&[
        "baseline",
        "--sim",
        "dgx-a100",
        "--runs",
        "2",
        "--iterations",
        "200",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(b["paths"].as_array().unwrap().len(), 40);
    assert_eq!(b["provenance"], "simulated");
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--baseline",
        file.to_str().unwrap(),
        // Measured as the baseline was (a baseline measured another way is refused).
        "--iterations",
        "200",
        "--inject",
        "degrade:usw0--cpu0:0.5",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["diagnoses"][0]["links"],
        serde_json::json!(["usw0--cpu0"])
    );
    let baseline_bw = v["paths"][0]["baseline_bandwidth_gbps"].as_f64().unwrap();
    assert_eq!(
        baseline_bw,
        b["paths"][0]["bandwidth_gbps"].as_f64().unwrap(),
        "the file's numbers are the ones used"
    );
    let o = hostping(&[
        "check",
        "--sim",
        "amd-2s",
        "--baseline",
        file.to_str().unwrap(),
    ]);
    assert_input_error(&o, &["dgx.json", "dgx-a100", "amd-2s"]);
    std::fs::write(&file, "{\"host\": 3}").unwrap();
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--baseline",
        file.to_str().unwrap(),
    ]);
    assert_input_error(&o, &["dgx.json", "host"]);
}

#[test]
fn topology_lists_paths_and_affinity() {
    let o = hostping(&["topology", "--sim", "amd-2s", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["affinity"]["rnic0"],
        serde_json::json!(["mem0", "gpu0", "gpu1"])
    );
    let p = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rnic"] == "rnic0" && p["endpoint"] == "mem1")
        .unwrap();
    assert_eq!(
        p["links"],
        serde_json::json!(["rnic0--sw0", "sw0--cpu0", "cpu0--cpu1", "mem1--cpu1"])
    );
    assert_eq!(p["affinitive"], false);
    let o = hostping(&["topology", "--sim", "dgx-a100"]);
    let out = stdout(&o);
    assert!(
        out.contains("rnic0--lsw0") && out.contains("rnic_pcie") && out.contains("252.1 Gb/s"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("rnic3") && l.contains("mem0 mem1 gpu6 gpu7")),
        "{out}"
    );
}

#[test]
fn a_streaming_test_with_chosen_qps_and_depth_is_reported_per_path() {
    let o = hostping(&[
        "check",
        "--sim",
        "single-socket",
        "--stream-qps",
        "4",
        "--stream-depth",
        "8",
        "--stream-ms",
        "2",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for p in v["paths"].as_array().unwrap() {
        let s = &p["stream"];
        assert_eq!(
            (s["qps"].as_u64(), s["depth"].as_u64()),
            (Some(4), Some(8)),
            "{p}"
        );
        let bw = s["bandwidth_gbps"].as_f64().unwrap();
        // Four QPs are not window-bound: the stream lands near the path's eq.-3 bandwidth.
        let eq3 = p["bandwidth_gbps"].as_f64().unwrap();
        assert!((bw - eq3).abs() / eq3 < 0.05, "{bw} vs {eq3}");
    }
    let plain = hostping(&["check", "--sim", "single-socket", "--format", "json"]);
    assert!(
        !stdout(&plain).contains("\"stream\""),
        "no stream unless asked"
    );
}

#[test]
fn on_this_machine_without_rdma_check_exits_two_and_topology_shows_memory_nodes() {
    if std::path::Path::new("/sys/class/infiniband").exists() {
        eprintln!("this machine has RDMA devices: covered by the Soft-RoCE guest test");
        return;
    }
    let o = hostping(&["check"]);
    assert_input_error(&o, &["no RDMA device found", "--sim"]);
    let o = hostping(&["topology", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(!v["numa_nodes"].as_array().unwrap().is_empty(), "{v:#}");
    assert!(v["host"].is_null());
}

#[test]
fn check_iotlb_on_a_translated_rnic_prints_the_simulated_curve_with_its_knees() {
    let args = [
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "iommu:rnic0:4096:4k",
        "--iotlb",
    ];
    let o = hostping(&args);
    assert_eq!(o.status.code(), Some(1), "iommu_congestion: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("IOTLB sweep (simulated"), "{out}");
    // 4 KiB pages: reach 128 x 4 KiB = 512 KiB; 2 MiB pages: 256 MiB (HotNets'22 3.1).
    assert!(
        out.contains("rnic0 -> mem0 4k: falls off between 256 KiB and 1 MiB (IOTLB reach 512 KiB)"),
        "{out}"
    );
    assert!(
        out.contains("rnic0 -> mem0 2m: falls off between 256 MiB and 1 GiB (IOTLB reach 256 MiB)"),
        "{out}"
    );
    assert!(out.contains("rnic1: DMA not translated"), "{out}");

    let o = hostping(&[&args[..], &["--format", "json"]].concat());
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The contract's fields stay; `iotlb` is added.
    assert_eq!(v["host"], "dgx-a100");
    assert!(v["paths"].is_array());
    let sweep = &v["iotlb"];
    assert_eq!(sweep["provenance"], "simulated");
    let curves = sweep["curves"].as_array().unwrap();
    assert_eq!(curves.len(), 4, "rnic0 x 2 memory nodes x 2 page sizes");
    for c in curves {
        let points = c["points"].as_array().unwrap();
        assert!(points.len() >= 8, "{c}");
        let first = points[0]["gbps"].as_f64().unwrap();
        let last = points[points.len() - 1]["gbps"].as_f64().unwrap();
        assert!(last < first * 0.9, "falls off past reach: {c}");
        assert!(
            c["knee"]["first_low_bytes"].as_u64().unwrap() > c["reach_bytes"].as_u64().unwrap()
        );
    }
}

#[test]
fn check_json_without_iotlb_has_no_iotlb_field() {
    let o = hostping(&["check", "--sim", "single-socket", "--format", "json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v.get("iotlb").is_none(), "{v}");
}

#[test]
fn odp_bench_argument_errors_exit_two() {
    for (args, expect) in [
        (&["odp-bench"][..], "<KIND>"),
        (&["odp-bench", "storm"][..], "storm"),
        (&["odp-bench", "flood", "--qps", "0"][..], "--qps"),
        (
            &["odp-bench", "damming", "--intervals", "500,x"][..],
            "--intervals",
        ),
        (
            &["odp-bench", "damming", "--intervals", "0"][..],
            "--intervals",
        ),
        (
            &["odp-bench", "flood", "--inject", "odp:rnic0:flood"][..],
            "--inject",
        ),
    ] {
        let o = hostping(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn odp_bench_on_this_machine_without_rdma_exits_two_and_says_so() {
    if std::path::Path::new("/sys/class/infiniband").exists() {
        eprintln!("this machine has RDMA devices: covered by the Soft-RoCE guest test");
        return;
    }
    // No libibverbs, or no device: either is named, and nothing is measured.
    let o = hostping(&["odp-bench", "damming"]);
    assert_input_error(&o, &["odp-bench"]);
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let o = hostping(&["odp-bench", "flood", "--device", "mlx5_9"]);
    assert_input_error(&o, &["odp-bench"]);
}

/// `hostping mesh` on the built-in `pod-32` (DESIGN 4.6): the JSON contract, the exit
/// status, and a degraded cable found on exactly the pairs whose routes cross it.
#[test]
fn a_one_host_job_is_inconclusive_on_the_network_and_judged_on_its_host() {
    let o = hostping(&["job", "--sim-cluster", "pod-32", "--nodes", "node001"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{}", stderr(&o));
    assert!(out.contains("inconclusive"), "{out}");
    assert!(
        out.contains("one host: no pair between hosts to probe; the network was not judged"),
        "{out}"
    );
    // The host's own check still counts: its fault is named as the host's.
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node001",
        "--inject",
        "node001:degrade:gpu2--lsw2:0.5",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["verdict"], "host", "{v}");
    assert_eq!(v["culprits"][0]["host"], "node001", "{v}");
}

#[test]
fn a_jobs_pairs_are_counted_once_and_its_follow_ups_name_their_rounds() {
    let o = hostping(&["job", "--sim-cluster", "pod-32", "--nodes", "node[001-008]"]);
    let out = stdout(&o);
    assert!(
        out.contains("8 host(s), 46 pair(s) probed, 92 probes in 2 rounds"),
        "{out}"
    );
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node[001-016]",
        "--inject",
        "fabric:flap:leaf1/9:0.25",
        "--probe",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains(" follow-ups in 2 rounds)"), "{out}");
    for round in ["round 1 of 2 (follow-up): ", "round 2 of 2 (follow-up): "] {
        assert!(out.contains(round), "`{round}` missing from: {out}");
    }
}

#[test]
fn mesh_finds_a_degraded_cable_on_the_pairs_across_it_as_the_contract_says() {
    let o = hostping(&[
        "mesh",
        "--sim-cluster",
        "pod-32",
        "--inject",
        "fabric:degrade:spine1/2:0.5",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["simulated"], true);
    let pairs = v["pairs"].as_array().unwrap();
    assert!(pairs.len() > 100, "{}", pairs.len());
    let mut abnormal = 0;
    for p in pairs {
        for end in ["a", "b"] {
            assert!(p[end]["host"].as_str().unwrap().starts_with("node"), "{p}");
            assert!(p[end]["rnic"].as_str().unwrap().starts_with("rnic"), "{p}");
        }
        for key in [
            "latency_us",
            "bandwidth_gbps",
            "host_a_us",
            "host_b_us",
            "network_us",
        ] {
            assert!(p[key].is_f64(), "{key}: {p}");
        }
        let sum = ["host_a_us", "host_b_us", "network_us"]
            .iter()
            .map(|k| p[k].as_f64().unwrap())
            .sum::<f64>();
        assert!(
            (p["latency_us"].as_f64().unwrap() - sum).abs() < 1e-6,
            "{p}"
        );
        // spine1's port 2 is leaf2's port 9: either end names the cable.
        let crosses = ["route", "route_back"].iter().any(|k| {
            p[k].as_array()
                .unwrap()
                .iter()
                .any(|hop| hop == "leaf2/9" || hop == "spine1/2")
        });
        assert_eq!(p["status"] == "abnormal", crosses, "{p}");
        if crosses {
            abnormal += 1;
            assert_eq!(p["network_status"], "abnormal", "{p}");
            assert_eq!(
                (&p["host_a_status"], &p["host_b_status"]),
                (&"normal".into(), &"normal".into())
            );
        }
    }
    assert!(abnormal > 0);
}

#[test]
fn mesh_of_a_healthy_cluster_file_exits_0_and_says_it_is_simulated() {
    let dir = temp_dir("mesh-file");
    let file = dir.join("lab.toml");
    std::fs::write(
        &file,
        "name = \"lab\"\n[[hosts]]\nnames = \"gpu[01-06]\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\n",
    )
    .unwrap();
    let o = hostping(&[
        "mesh",
        "--sim-cluster",
        file.to_str().unwrap(),
        "--endpoint",
        "memory",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("mesh of lab: 6 hosts"), "{out}");
    assert!(
        out.contains("SIMULATED") && out.contains("every pair normal"),
        "{out}"
    );
    assert!(out.contains("gpu01/rnic0"), "{out}");
}

#[test]
fn mesh_refuses_bad_input_in_one_line() {
    let mesh = |extra: &[&str]| {
        let mut args = vec!["mesh", "--sim-cluster", "pod-32"];
        args.extend_from_slice(extra);
        hostping(&args)
    };
    assert_input_error(
        &mesh(&["--inject", "fabric:degrade:leaf2/99:0.5"]),
        &["leaf2/99", "ports 1..16"],
    );
    assert_input_error(
        &mesh(&["--inject", "node040:degrade:gpu4--lsw4:0.5"]),
        &["node040"],
    );
    assert_input_error(
        &mesh(&["--inject", "fabric:background:3"]),
        &["outside (0, 1]"],
    );
    assert_input_error(&mesh(&["--nodes", "node[001-002],gpu7"]), &["gpu7"]);
    // Flags that do not parse are clap's usage errors: status 2, the value named.
    for (args, says) in [
        (["--nodes", "node[002-001]"], "runs backwards"),
        (["--duration", "0"], "duration must be above 0"),
    ] {
        let o = mesh(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    assert_input_error(
        &hostping(&["mesh", "--sim-cluster", "pod-64"]),
        &["pod-64", "pod-32"],
    );
}

/// A cluster file on a real fabric as cabled (an SX6036 fat tree's ibnetdiscover capture,
/// crates/fabric/testdata/ibnetdiscover/SOURCES.md): each host's RNIC is its CA, switch ports
/// carry the fabric's own names and numbers, and a degraded cable is found on the pairs
/// across it.
#[test]
fn mesh_runs_on_a_real_fabric_named_as_its_switches_name_themselves() {
    let dir = temp_dir("mesh-real");
    let capture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/ibnetdiscover/loginoff-sx6036-fattree.topo");
    let cluster = |names: &str| {
        let file = dir.join(format!("{}.toml", names.len()));
        let text = format!(
            "[[hosts]]\nnames = \"{names}\"\nmodel = \"single-socket\"\n[fabric]\ntopology = \"{}\"\n",
            capture.display()
        );
        std::fs::write(&file, text).unwrap();
        file.to_str().unwrap().to_string()
    };
    let file = cluster("stage[1-135]");
    let cable = "MF0;ib7:SX6036/U1/4";
    let inject = format!("fabric:degrade:{cable}:0.4");
    let o = hostping(&[
        "mesh",
        "--sim-cluster",
        &file,
        "--inject",
        &inject,
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let pairs = v["pairs"].as_array().unwrap();
    assert!(pairs.len() > 100);
    let hops = |p: &Value, k: &str| -> Vec<String> {
        p[k].as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap().to_string())
            .collect()
    };
    // The cable's far end, read off a route that crosses it.
    let far = pairs
        .iter()
        .flat_map(|p| [hops(p, "route"), hops(p, "route_back")])
        .find_map(|r| {
            r.iter()
                .position(|h| h == cable)
                .map(|i| r[if i % 2 == 1 { i + 1 } else { i - 1 }].clone())
        })
        .expect("some route crosses the cable");
    for p in pairs {
        let crosses = ["route", "route_back"]
            .iter()
            .any(|k| hops(p, k).iter().any(|h| *h == cable || *h == far));
        assert_eq!(p["status"] == "abnormal", crosses, "{p}");
        // The cable (FDR10, 40 Gb/s) keeps 40 % of its rate, 16 Gb/s: the pairs across it
        // get about half of what the healthy fabric gives them (the hosts' QDR links, 32
        // Gb/s, bound it), the others at least 80 %.
        let ratio =
            p["bandwidth_gbps"].as_f64().unwrap() / p["baseline_network_gbps"].as_f64().unwrap();
        assert!(
            if crosses { ratio < 0.55 } else { ratio > 0.8 },
            "{ratio}: {p}"
        );
    }
    let o = hostping(&[
        "mesh",
        "--sim-cluster",
        &file,
        "--inject",
        "fabric:down:MF0;ib7:SX6036/U1/12",
    ]);
    // After the reader's note on the hosts above the leaves, the error in one line.
    let error_line = |o: &Output| {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
        stderr(o).trim_end().lines().last().unwrap().to_string()
    };
    let line = error_line(&o);
    assert!(
        line.contains("`MF0;ib7:SX6036/U1` has cabled ports 1,2,3,4,5,6,7,8,17"),
        "{line}"
    );
    let o = hostping(&["mesh", "--sim-cluster", &cluster("stage[1-136]")]);
    let line = error_line(&o);
    assert!(
        line.contains("stage136") && line.contains("no CA on the fabric"),
        "{line}"
    );
}

/// `hostping pair` without the device it names: exit 2, one line naming the device, before
/// any peer is contacted.
#[test]
fn pair_probe_names_a_missing_device_in_one_line() {
    let o = hostping(&[
        "pair",
        "probe",
        "--device",
        "nosuch",
        "--peer",
        "127.0.0.1:1",
    ]);
    assert_input_error(&o, &["--device nosuch", "no RDMA device of that name"]);
    let o = hostping(&[
        "pair",
        "serve",
        "--device",
        "nosuch",
        "--listen",
        "127.0.0.1",
        "--port",
        "0",
    ]);
    assert_input_error(&o, &["--device nosuch", "no RDMA device of that name"]);
}

/// `pair probe --baseline` reads its file before anything is probed: a missing file, or one
/// that is not a pair probe's JSON, is named in one line (exit 2), whatever the device.
#[test]
fn pair_probe_reads_its_baseline_before_probing() {
    let dir = temp_dir("pair-baseline");
    let missing = dir.join("missing.json");
    let probe = |baseline: &std::path::Path| {
        hostping(&[
            "pair",
            "probe",
            "--device",
            "nosuch",
            "--peer",
            "127.0.0.1:1",
            "--baseline",
            baseline.to_str().unwrap(),
        ])
    };
    let o = probe(&missing);
    assert_input_error(&o, &["--baseline", "missing.json", "cannot read"]);
    // A report of another kind (a mesh's) is not a pair probe's.
    let other = dir.join("mesh.json");
    std::fs::write(&other, r#"{"pairs": [], "simulated": true}"#).unwrap();
    let o = probe(&other);
    assert_input_error(
        &o,
        &[
            "--baseline",
            "mesh.json",
            "not the JSON of `hostping pair probe",
        ],
    );
}
