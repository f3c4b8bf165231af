//! `hostping job --nccl DIR` (DESIGN 4.8, issue 39): the job's own collectives, read from
//! a dump directory as NCCL's Inspector plugin writes it (one file per process, v4.0 JSON
//! objects pretty-printed one after another), judged alone, beside a simulated cluster, and
//! sent with the question to a real collector on PostgreSQL (`--collector`).

mod common;

use std::path::{Path, PathBuf};

use common::job::job_json;
use common::nccl::{write_job, Late, BYTES, COLLECTIVES, HOSTS, START_US, WORLD};
use common::{hostping, stderr, stdout, temp_dir, TestDir};
use serde_json::Value;

/// The job with rank 6 (node002's gpu2) 40 ms late at every collective from the `from`-th
/// on, written under a test folder named `name`.
fn straggler_job(name: &str, from: u64) -> (TestDir, PathBuf) {
    let late = Late {
        rank: 6,
        from,
        late_us: 40_000.0,
    };
    let root = temp_dir(name);
    let dir = write_job(&root.join("nccl-inspector-4242"), START_US, Some(late), "");
    (root, dir)
}

fn dir_arg(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

#[test]
fn a_straggler_names_its_host_and_gpu_from_the_records_alone() {
    let (_root, dir) = straggler_job("nccl-straggler", 60);
    let (code, report, err) = job_json(&["--nccl", dir_arg(&dir)]);
    assert_eq!(code, 1, "{err}\n{report:#}");
    assert_eq!(report["verdict"], "host", "{report:#}");
    let culprit = &report["culprits"][0];
    assert_eq!(culprit["cause"], "straggler", "{report:#}");
    assert_eq!(culprit["host"], "node002");
    assert_eq!(
        culprit["component"], "gpu2",
        "rank 6 is node002's third GPU"
    );
    let symptom = &report["symptom"];
    assert_eq!(symptom["source"], "nccl_inspector");
    // 16 processes, two communicators each, one record per collective.
    assert_eq!(symptom["records"], 16 * 2 * COLLECTIVES);
    let straggler = &symptom["stragglers"][0];
    assert_eq!(straggler["rank"], 6);
    assert_eq!(straggler["communicator"], WORLD);
    let late_us = straggler["late_us"].as_f64().unwrap();
    assert!((30_000.0..50_000.0).contains(&late_us), "{straggler}");
    // The others waited: the world's bus bandwidth fell from the onset on.
    assert_eq!(symptom["slow"], true, "{symptom:#}");
    let since = symptom["since"].as_f64().unwrap();
    let onset = (START_US + 60 * 1_000_000) as f64 / 1e6;
    assert!((since - onset).abs() <= 2.0, "since {since}, onset {onset}");
    assert_eq!(report["simulated"], false);
    // DESIGN 4.8's JSON: every documented key, with its type.
    for key in [
        "source",
        "records",
        "slow",
        "since",
        "busbw_gbs",
        "communicators",
    ] {
        assert!(!symptom[key].is_null(), "{key}: {symptom:#}");
    }
    for key in ["before", "during"] {
        assert!(symptom["busbw_gbs"][key].is_f64(), "{key}: {symptom:#}");
    }
    assert!(symptom["busbw_gbs"].get("expected").is_some());
    let comm = symptom["communicators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == WORLD)
        .unwrap();
    for key in [
        "collective",
        "ranks",
        "nnodes",
        "hosts",
        "slow",
        "busbw_gbs",
    ] {
        assert!(!comm[key].is_null(), "{key}: {comm:#}");
    }
    assert_eq!(
        (comm["ranks"].as_u64(), comm["nnodes"].as_u64()),
        (Some(16), Some(4))
    );
    for key in ["host", "gpu", "late_us", "collectives"] {
        assert!(!straggler[key].is_null(), "{key}: {straggler:#}");
    }
    for key in ["unknown_records", "bad_records"] {
        assert_eq!(symptom["skipped"][key], 0, "{key}");
    }
}

#[test]
fn a_healthy_job_alone_is_inconclusive_with_its_symptom_reported() {
    let root = temp_dir("nccl-healthy");
    let dir = write_job(&root.join("nccl-inspector-4242"), START_US, None, "");
    let (code, report, err) = job_json(&["--nccl", dir_arg(&dir)]);
    // No host or cable was measured: the records alone never vouch for the infrastructure.
    assert_eq!(code, 3, "{err}\n{report:#}");
    assert_eq!(report["verdict"], "inconclusive");
    assert_eq!(report["culprits"].as_array().unwrap().len(), 0);
    assert_eq!(report["symptom"]["slow"], false);
    assert!(report["symptom"]["stragglers"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(!report["not_judged"].as_array().unwrap().is_empty());
    let nodes: Vec<&str> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        nodes, HOSTS,
        "the hosts in the world communicator's rank order"
    );
}

#[test]
fn records_not_read_are_counted_and_the_rest_judged() {
    let extra = r#"{
  "header": {"id": "0x5a0000000004", "rank": 0, "n_ranks": 16, "nnodes": 4},
  "metadata": {"inspector_output_format_version": "v4.0", "hostname": "node001", "pid": 1000, "dump_timestamp_us": 1795000000000000},
  "p2p_perf": {"p2p": "Send", "p2p_sn": 3, "p2p_msg_size_bytes": 65536, "p2p_exec_time_us": 12}
}
{"dump_stats": {"dropped": 0}}
{ "header": { "id": "0x5a0000000004", "rank": 
"#;
    let root = temp_dir("nccl-skipped");
    let dir = write_job(&root.join("nccl-inspector-4242"), START_US, None, extra);
    let (code, report, err) = job_json(&["--nccl", dir_arg(&dir)]);
    assert_eq!(code, 3, "{err}");
    let skipped = &report["symptom"]["skipped"];
    assert_eq!(skipped["unknown_records"], 2, "{skipped}");
    assert_eq!(report["symptom"]["records"], 16 * 2 * COLLECTIVES);
}

#[test]
fn a_straggler_off_the_jobs_nodes_is_not_blamed() {
    let (_root, dir) = straggler_job("nccl-off-nodes", 0);
    let (code, report, err) = job_json(&[
        "--nccl",
        dir_arg(&dir),
        "--nodes",
        "node001,node003,node004",
    ]);
    assert_ne!(code, 2, "{err}");
    assert!(
        report["culprits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["host"] != "node002"),
        "{report:#}"
    );
}

#[test]
fn beside_a_simulated_cluster_the_straggler_joins_the_verdict() {
    let (_root, dir) = straggler_job("nccl-sim", 60);
    let (code, report, err) = job_json(&[
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node[001-004]",
        "--nccl",
        dir_arg(&dir),
    ]);
    assert_eq!(code, 1, "{err}\n{report:#}");
    assert_eq!(report["verdict"], "host");
    let straggler = report["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "straggler")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(straggler["host"], "node002");
    // The simulated hosts' own checks were judged: the evidence says the host's network
    // on the job's paths is healthy, so the straggler points at compute.
    let evidence = straggler["evidence"].as_str().unwrap();
    assert!(evidence.contains("compute"), "{evidence}");
    // node001-004 are dgx-a100s, four 200 Gb/s RNICs each: 100 GB/s across hosts, which
    // NCCL's model brings down to what a 256 MiB all-reduce of 16 ranks on 4 hosts reaches.
    let expected = analyze::ring_model::ring_busbw_gbs(100.0, "AllReduce", BYTES, 16, 4);
    assert_eq!(
        report["symptom"]["busbw_gbs"]["expected"].as_f64(),
        expected
    );
    assert!((90.0..95.0).contains(&expected.unwrap()));
}

#[test]
fn a_textfile_snapshot_is_read_as_the_plugin_writes_it() {
    // NCCL_INSPECTOR_PROM_DUMP=1: one file per GPU, rewritten with the latest collective
    // of each communicator (the plugin's inspector_prom.cc labels, `nranks`).
    let root = temp_dir("nccl-textfile");
    let dir = root.join("nccl_inspector");
    std::fs::create_dir_all(&dir).unwrap();
    for rank in 0..8u32 {
        let labels = format!(
            "comm_id=\"0xd152c00f111816\",collective=\"AllReduce\",hostname=\"pool0-0002\",\
             rank=\"{rank}\",slurm_job=\"train\",slurm_job_id=\"4242\",nranks=\"8\",n_nodes=\"1\",\
             coll_sn=\"228924\",timestamp=\"2025-10-17T03:31:47Z\",gpu_device_id=\"GPU{rank}\",\
             message_size=\"2.00GB\""
        );
        let text = format!(
            "# HELP nccl_bus_bandwidth_gbs NCCL bus bandwidth in GB/s\n\
             # TYPE nccl_bus_bandwidth_gbs gauge\n\
             nccl_bus_bandwidth_gbs{{{labels}}} 190.2\n\
             nccl_algorithm_bandwidth_gbs{{{labels}}} 108.7\n\
             nccl_collective_exec_time_microseconds{{{labels}}} 19755\n"
        );
        std::fs::write(dir.join(format!("nccl_inspector_GPU{rank}.prom")), text).unwrap();
    }
    let (code, report, err) = job_json(&["--nccl", dir_arg(&dir)]);
    assert_eq!(code, 3, "{err}\n{report:#}");
    let symptom = &report["symptom"];
    assert_eq!(symptom["records"], 8, "{symptom:#}");
    assert_eq!(symptom["skipped"]["bad_records"], 0);
    let comm = &symptom["communicators"][0];
    assert_eq!(comm["id"], "0xd152c00f111816");
    assert_eq!(comm["bytes"], 2u64 << 30, "the plugin's sizes are binary");
    assert_eq!(comm["busbw_gbs"], 190.2);
    assert_eq!(report["nodes"][0], "pool0-0002");
}

#[test]
fn the_words_show_the_symptom_and_the_straggler() {
    let (_root, dir) = straggler_job("nccl-words", 60);
    let out = hostping(&["job", "--nccl", dir_arg(&dir)]);
    let text = stdout(&out);
    assert!(text.contains("NCCL Inspector"), "{text}");
    assert!(text.contains("straggler: rank 6"), "{text}");
    assert!(text.contains("slow since"), "{text}");
}

#[test]
fn bad_directories_are_refused_naming_them() {
    let root = temp_dir("nccl-missing");
    let missing = root.join("no-such-dir");
    let out = hostping(&["job", "--nccl", dir_arg(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no-such-dir"), "{}", stderr(&out));

    let empty = temp_dir("nccl-empty");
    let out = hostping(&["job", "--nccl", dir_arg(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no file"), "{}", stderr(&out));

    let junk = temp_dir("nccl-junk");
    std::fs::write(junk.join("notes.txt"), "not a record\n").unwrap();
    let out = hostping(&["job", "--nccl", dir_arg(&junk)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no NCCL Inspector collective record"),
        "{}",
        stderr(&out)
    );

    // Not with a collector (yet: the collector judges there, from the agents' summaries).
    let root = temp_dir("nccl-collector");
    let dir = write_job(&root.join("nccl-inspector-4242"), START_US, None, "");
    let out = hostping(&[
        "job",
        "--nccl",
        dir_arg(&dir),
        "--collector",
        "http://127.0.0.1:9",
        "--nodes",
        "node001",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// With `--collector` the records go with the question (`POST /api/jobs/verdict`) and are
/// judged with the hosts' runs the collector holds; the job's hosts and window are the
/// records' when not given. node002 (the straggler's host) posted a healthy check inside
/// the records' span and node001 one ten minutes before it: the first is judged, the
/// second is outside the window (it would be inside the default hour before now).
#[test]
fn with_a_collector_the_records_go_with_the_question() {
    use common::job::{now_s, post_run, register, token};
    use common::postgres::{post_to, Collector, Postgres};
    let dir = temp_dir("job-nccl-collector");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens: Vec<(String, String)> = HOSTS.iter().map(|h| (h.to_string(), token(h))).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(h, t)| (h.as_str(), t.as_str()))
        .collect();
    let collector = Collector::start(&pg, &common::tokens_file(&dir, &pairs), &[]);
    let start_s = now_s() - 180;
    let late = Late {
        rank: 6,
        from: 60,
        late_us: 40_000.0,
    };
    let records = write_job(
        &dir.join("nccl-inspector-4242"),
        start_s as u64 * 1_000_000,
        Some(late),
        "",
    );
    let healthy = common::sim_report(&[]);
    for host in HOSTS {
        register(collector.addr, host, "mlx5_0");
    }
    post_run(collector.addr, "node002", 1, start_s + 90, &healthy);
    post_run(collector.addr, "node001", 1, start_s - 600, &healthy);

    let url = format!("http://{}", collector.addr);
    let (code, report, err) = job_json(&["--collector", &url, "--nccl", dir_arg(&records)]);
    assert_eq!(code, 1, "{err}\n{report:#}");
    assert_eq!(report["verdict"], "host", "{report:#}");
    assert_eq!(
        report["simulated"], true,
        "node002's run is a simulated host's"
    );
    let nodes: Vec<&str> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(nodes, HOSTS, "the records' hosts, in rank order");
    let culprit = &report["culprits"][0];
    assert_eq!(
        (&culprit["cause"], &culprit["host"], &culprit["component"]),
        (&"straggler".into(), &"node002".into(), &"gpu2".into()),
        "{report:#}"
    );
    let symptom = &report["symptom"];
    assert_eq!(symptom["slow"], true, "{symptom:#}");
    assert_eq!(
        symptom["records"].as_u64(),
        Some(HOSTS.len() as u64 * 4 * COLLECTIVES * 2),
        "every record, the world's and each host's own communicator's"
    );
    let judged = |host: &str| {
        report["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["host"] == host)
            .map(|h| h["healthy"].clone())
    };
    assert_eq!(judged("node002"), Some(true.into()), "{report:#}");
    assert_eq!(judged("node001"), Some(Value::Null), "{report:#}");

    // The collectives are checked as an agent's are: the field named.
    let mut bad = serde_json::json!({
        "job": null, "records": 1, "skipped": {"unknown_records": 0, "bad_records": 0},
        "summaries": [{"communicator": WORLD, "rank": 0, "n_ranks": 16, "n_nodes": 4,
                       "hostname": "node001", "pid": 1, "gpu": null, "collective": "AllReduce",
                       "bytes": 1, "start_s": 1.0, "width_s": 1.0, "count": 0, "first_seq": 0,
                       "last_seq": 0, "exec_us": 1.0, "busbw_gbs": 1.0}]
    });
    let path = "/api/jobs/verdict?nodes=node001,node002";
    let (status, answer) = post_to(collector.addr, path, None, bad.to_string().as_bytes());
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(error.starts_with("body.summaries[0].count: 0"), "{error}");
    bad["summaries"][0]["count"] = 1.into();
    let (status, answer) = post_to(collector.addr, path, None, bad.to_string().as_bytes());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["symptom"]["records"], 1, "{answer}");
}
