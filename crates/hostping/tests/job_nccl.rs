//! `hostping job --nccl DIR` (DESIGN 4.8, issue 39): the job's own collectives, read from
//! a dump directory as NCCL's Inspector plugin writes it (one file per process, v4.0 JSON
//! objects pretty-printed one after another), judged alone and beside a simulated cluster.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::{hostping, stderr, stdout, temp_dir};
use serde_json::Value;

/// Hosts of the written job, and GPUs (ranks) on each.
const HOSTS: [&str; 4] = ["node001", "node002", "node003", "node004"];
const GPUS: u32 = 4;
/// The world communicator and each host's own (rank `g` of host `h`'s is its GPU `g`).
const WORLD: &str = "0x5a0000000004";
/// One all-reduce a second for two minutes, 256 MiB, 20 ms when healthy.
const COLLECTIVES: u64 = 120;
const BYTES: u64 = 256 << 20;
const HEALTHY_US: f64 = 20_000.0;
const START_US: u64 = 1_795_000_000_000_000;

/// How the written job behaves: a rank that arrives `late_us` late at every world
/// collective from the `from`-th on.
#[derive(Clone, Copy)]
struct Late {
    rank: u32,
    from: u64,
    late_us: f64,
}

/// Writes one file per process, as the plugin does; returns the directory.
fn write_job(name: &str, late: Option<Late>, extra: &str) -> PathBuf {
    let dir = temp_dir(name).join("nccl-inspector-4242");
    std::fs::create_dir_all(&dir).unwrap();
    for (h, host) in HOSTS.iter().enumerate() {
        for gpu in 0..GPUS {
            let rank = h as u32 * GPUS + gpu;
            let pid = 1000 + rank;
            let mut text = String::new();
            for sn in 0..COLLECTIVES {
                let late_here = late.filter(|l| sn >= l.from);
                // The late rank's own kernel runs only the transfer; the others wait for it.
                let exec_us = match late_here {
                    Some(l) if l.rank == rank => HEALTHY_US,
                    Some(l) => HEALTHY_US + l.late_us,
                    None => HEALTHY_US,
                } + f64::from((rank * 7 + sn as u32) % 5) * 20.0;
                let n = HOSTS.len() as u32 * GPUS;
                record(&mut text, WORLD, rank, n, 4, host, pid, sn, exec_us);
                // The host's own communicator: rank = the GPU, always healthy (NVLink).
                let local = format!("0x7a00000000{h:02}");
                record(&mut text, &local, gpu, GPUS, 1, host, pid, sn, 2_000.0);
            }
            if rank == 0 {
                text.push_str(extra);
            }
            std::fs::write(dir.join(format!("{host}-{pid}.log")), text).unwrap();
        }
    }
    dir
}

/// One v4.0 record, pretty-printed as the plugin writes it.
#[allow(clippy::too_many_arguments)]
fn record(
    out: &mut String,
    comm: &str,
    rank: u32,
    n_ranks: u32,
    nnodes: u32,
    host: &str,
    pid: u32,
    sn: u64,
    exec_us: f64,
) {
    let algobw = BYTES as f64 / (exec_us * 1e-6) / 1e9;
    let busbw = algobw * 2.0 * f64::from(n_ranks - 1) / f64::from(n_ranks);
    let dump = START_US + sn * 1_000_000 + exec_us as u64 + 300;
    let _ = write!(
        out,
        r#"{{
  "header": {{
    "id": "{comm}",
    "rank": {rank},
    "n_ranks": {n_ranks},
    "nnodes": {nnodes}
  }},
  "metadata": {{
    "inspector_output_format_version": "v4.0",
    "git_rev": "",
    "rec_mechanism": "profiler_plugin",
    "dump_timestamp_us": {dump},
    "hostname": "{host}",
    "pid": {pid}
  }},
  "coll_perf": {{
    "coll": "AllReduce",
    "coll_sn": {sn},
    "coll_msg_size_bytes": {BYTES},
    "coll_exec_time_us": {exec_us:.0},
    "coll_algobw_gbs": {algobw:.6},
    "coll_busbw_gbs": {busbw:.6}
  }}
}}
"#
    );
}

fn job_json(args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["job", "--format", "json"];
    all.extend_from_slice(args);
    let out = hostping(&all);
    let code = out.status.code().unwrap_or(-1);
    let json = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    (code, json, stderr(&out))
}

fn dir_arg(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

#[test]
fn a_straggler_names_its_host_and_gpu_from_the_records_alone() {
    let late = Late {
        rank: 6,
        from: 60,
        late_us: 40_000.0,
    };
    let dir = write_job("nccl-straggler", Some(late), "");
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
    let dir = write_job("nccl-healthy", None, "");
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
    let dir = write_job("nccl-skipped", None, extra);
    let (code, report, err) = job_json(&["--nccl", dir_arg(&dir)]);
    assert_eq!(code, 3, "{err}");
    let skipped = &report["symptom"]["skipped"];
    assert_eq!(skipped["unknown_records"], 2, "{skipped}");
    assert_eq!(report["symptom"]["records"], 16 * 2 * COLLECTIVES);
}

#[test]
fn a_straggler_off_the_jobs_nodes_is_not_blamed() {
    let late = Late {
        rank: 6,
        from: 0,
        late_us: 40_000.0,
    };
    let dir = write_job("nccl-off-nodes", Some(late), "");
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
    let late = Late {
        rank: 6,
        from: 60,
        late_us: 40_000.0,
    };
    let dir = write_job("nccl-sim", Some(late), "");
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
    // The cluster's RNICs (200 Gb/s HDR) bound a communicator across hosts.
    assert_eq!(report["symptom"]["busbw_gbs"]["expected"], 25.0);
}

#[test]
fn a_textfile_snapshot_is_read_as_the_plugin_writes_it() {
    // NCCL_INSPECTOR_PROM_DUMP=1: one file per GPU, rewritten with the latest collective
    // of each communicator (the plugin's inspector_prom.cc labels, `nranks`).
    let dir = temp_dir("nccl-textfile").join("nccl_inspector");
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
    let late = Late {
        rank: 6,
        from: 60,
        late_us: 40_000.0,
    };
    let dir = write_job("nccl-words", Some(late), "");
    let out = hostping(&["job", "--nccl", dir_arg(&dir)]);
    let text = stdout(&out);
    assert!(text.contains("NCCL Inspector"), "{text}");
    assert!(text.contains("straggler: rank 6"), "{text}");
    assert!(text.contains("slow since"), "{text}");
}

#[test]
fn bad_directories_are_refused_naming_them() {
    let missing = temp_dir("nccl-missing").join("no-such-dir");
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
    let dir = write_job("nccl-collector", None, "");
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
