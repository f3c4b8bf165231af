//! `hostping nccl replay` (issue 39 item 6): a simulated job's records (`job --sim-cluster
//! ... --nccl-out`) written into a dump folder as the plugin would, one simulated host played
//! by a node. What is written reads back as the simulated records moved in time and onto the
//! node, is judged the same, arrives no earlier than each collective's end, and a bad input
//! is refused naming it. The one-node Slurm's test (scripts/slurm/check-job.sh) runs it under
//! a real job with a real agent tailing the folder.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::job::job_json;
use common::{hostping, stderr, temp_dir, TestDir};
use model::inspector::{parse_json, record_json, CollectiveRecord};

/// Two hosts of pod-32; node002's gpu3 (world rank 8 + 3) starts late from 1 s on.
const NODES: &str = "node001,node002";
const STRAGGLER: &str = "node002:straggler:gpu3:40ms@1s";
/// The node that plays node002.
const NODE: &str = "gpu-a17";

/// Runs the simulated job (`steps` steps `step_ms` apart) with [`STRAGGLER`] into
/// `<name>/sim`; returns it.
fn simulate(name: &str, steps: &str, step_ms: &str) -> (TestDir, PathBuf) {
    simulate_with(name, steps, step_ms, &["--inject", STRAGGLER])
}

/// [`simulate`] with `faults` (`--inject` arguments, or none).
fn simulate_with(name: &str, steps: &str, step_ms: &str, faults: &[&str]) -> (TestDir, PathBuf) {
    let root = temp_dir(name);
    let sim = root.join("sim");
    let mut args = vec!["--sim-cluster", "pod-32", "--nodes", NODES];
    args.extend_from_slice(faults);
    args.extend([
        "--nccl-out",
        sim.to_str().unwrap(),
        "--steps",
        steps,
        "--step-ms",
        step_ms,
        "--bytes",
        "16777216",
    ]);
    let (code, report, err) = job_json(&args);
    assert_ne!(code, 2, "{err} {report:#}");
    (root, sim)
}

/// `nccl replay` from `from` into `to`, simulated host and node as `host` (SIM=NODE).
fn replay_to<'a>(from: &'a Path, to: &'a Path, host: &'a str) -> Vec<&'a str> {
    vec![
        "nccl",
        "replay",
        "--from",
        from.to_str().unwrap(),
        "--out-dir",
        to.to_str().unwrap(),
        "--host",
        host,
    ]
}

fn replay_args<'a>(from: &'a Path, to: &'a Path, history: &'a str) -> Vec<&'a str> {
    let mut args = replay_to(from, to, "node002=gpu-a17");
    args.extend(["--history", history]);
    args
}

/// A folder's files by name, each with its records.
fn records_by_file(dir: &Path) -> Vec<(String, Vec<CollectiveRecord>)> {
    let mut files: Vec<(String, Vec<CollectiveRecord>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let parsed = parse_json(&std::fs::read(&path).unwrap());
            assert_eq!(parsed.simulated_records, parsed.records.len() as u64);
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, parsed.records)
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

fn now_us() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as f64
}

#[test]
fn a_replayed_dump_is_the_simulated_hosts_moved_onto_the_node_and_judged_the_same() {
    let (_sim_root, sim) = simulate("replay-whole", "60", "50");
    let to = sim.with_file_name("nccl-inspector-42");
    // A history longer than the job: every record is written at once.
    let before = now_us();
    let out = hostping(&replay_args(&sim, &to, "3600"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not replayed here: node001"),
        "{}",
        stderr(&out)
    );

    // node002's 8 processes, each file named after the node, its records those of the
    // simulated file of the same pid: the same fields, the same order, the hostname the
    // node's and every time moved by one shift that dates the job an hour back.
    let written = records_by_file(&to);
    let simulated = records_by_file(&sim);
    let names: Vec<&str> = written.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<String> = (8..16)
        .map(|r| format!("{NODE}-{}.log", 10_000 + r))
        .collect();
    assert_eq!(names, want);
    let first = |files: &[(String, Vec<CollectiveRecord>)], host: &str| {
        files
            .iter()
            .filter(|(n, _)| n.starts_with(host))
            .flat_map(|(_, r)| r)
            .map(|r| r.at_us)
            .fold(f64::INFINITY, f64::min)
    };
    let shift = first(&written, NODE) - first(&simulated, "node002-");
    let started = first(&written, NODE) + 3600e6;
    assert!(
        (before..now_us()).contains(&started),
        "the job began an hour before the replay"
    );
    for (name, records) in &written {
        let pid = name.strip_prefix(&format!("{NODE}-")).unwrap();
        let (_, original) = simulated
            .iter()
            .find(|(n, _)| *n == format!("node002-{pid}"))
            .unwrap();
        let expected: Vec<CollectiveRecord> = original
            .iter()
            .map(|r| CollectiveRecord {
                hostname: NODE.into(),
                at_us: r.at_us + shift,
                kernel_start_us: r.kernel_start_us.map(|t| t + shift),
                ..r.clone()
            })
            .collect();
        assert_eq!(records, &expected, "{name}");
    }

    // Judged alone, the node's records name the straggler on the node: world rank 11, gpu3.
    let (code, report, err) = job_json(&["--nccl", to.to_str().unwrap()]);
    assert_eq!(code, 1, "{err} {report:#}");
    assert_eq!(report["simulated"], true, "still labelled simulated");
    let top = &report["culprits"][0];
    assert_eq!(
        (&top["host"], &top["component"], &top["cause"]),
        (&NODE.into(), &"gpu3".into(), &"straggler".into()),
        "{report:#}"
    );
    let straggler = &report["symptom"]["stragglers"][0];
    assert_eq!(straggler["rank"], 11, "{report:#}");
}

#[test]
fn a_live_replay_writes_each_record_once_its_collective_has_ended() {
    // About 1.5 s of collectives, none of them history.
    let (_sim_root, sim) = simulate("replay-live", "30", "50");
    let to = sim.with_file_name("nccl-inspector-43");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hostping"))
        .args(replay_args(&sim, &to, "0"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let total: usize = records_by_file(&sim)
        .iter()
        .filter(|(n, _)| n.starts_with("node002-"))
        .map(|(_, r)| r.len())
        .sum();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen_part = false;
    loop {
        let done = child.try_wait().unwrap();
        if to.is_dir() {
            let written: Vec<CollectiveRecord> = records_by_file(&to)
                .into_iter()
                .flat_map(|(_, r)| r)
                .collect();
            // Every record read had ended by the time it was read.
            let read_at = now_us();
            for r in &written {
                let ended = (r.at_us + r.exec_us).round();
                assert!(ended <= read_at, "written {} us early", ended - read_at);
            }
            seen_part |= !written.is_empty() && written.len() < total;
            if let Some(status) = done {
                assert!(status.success());
                assert_eq!(written.len(), total, "every record, in the end");
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the replay did not end within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen_part, "the records arrived over time, not all at once");
}

#[test]
fn a_bad_input_or_host_is_refused_naming_it_and_nothing_is_written() {
    let (_sim_root, sim) = simulate("replay-bad", "10", "50");
    let to = sim.with_file_name("nccl-inspector-44");
    let bad = sim.join("node002-10011.log");
    let text = std::fs::read_to_string(&bad).unwrap();
    let mut measured = parse_json(text.as_bytes()).records[0].clone();
    measured.seq = 99;
    for (content, says) in [
        (format!("{text}{{\n  \"header\": oops\n}}\n"), "1 malformed"),
        (
            format!("{text}{}", record_json(&measured)),
            "not labelled simulated",
        ),
    ] {
        std::fs::write(&bad, &content).unwrap();
        let out = hostping(&replay_args(&sim, &to, "0"));
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.contains(&bad.display().to_string()) && e.contains(says),
            "{e}"
        );
        assert!(!to.exists(), "nothing written: {e}");
    }
    std::fs::write(&bad, &text).unwrap();
    for (host, says) in [
        ("node005=n", "no record of host node005 under --from"),
        ("node002", "is not SIM=NODE"),
    ] {
        let mut args = replay_args(&sim, &to, "0");
        args[7] = host;
        let out = hostping(&args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    // A file already in the dump folder is another run's.
    std::fs::create_dir_all(&to).unwrap();
    std::fs::write(to.join(format!("{NODE}-10008.log")), "").unwrap();
    let out = hostping(&replay_args(&sim, &to, "0"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("{NODE}-10008.log")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn nodes_replaying_one_job_with_one_start_move_its_times_alike() {
    let (_sim_root, sim) = simulate_with("replay-started", "20", "50", &[]);
    // The job began an hour ago by one clock reading; the two nodes start their replays
    // a second apart, as two nodes' batch steps do.
    let started_s = (now_us() / 1e6 - 3600.0).floor();
    let started = started_s.to_string();
    let first = |files: Vec<(String, Vec<CollectiveRecord>)>, host: &str| {
        files
            .into_iter()
            .filter(|(n, _)| n.starts_with(host))
            .flat_map(|(_, r)| r)
            .map(|r| r.at_us)
            .fold(f64::INFINITY, f64::min)
    };
    let mut shifts = Vec::new();
    for (i, (sim_host, node)) in [("node001", "gpu-a16"), ("node002", "gpu-a17")]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        let to = sim.with_file_name(format!("dump-{node}"));
        let map = format!("{sim_host}={node}");
        let mut args = replay_to(&sim, &to, &map);
        args.extend(["--started", &started]);
        let out = hostping(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        shifts.push(first(records_by_file(&to), node) - first(records_by_file(&sim), sim_host));
    }
    assert_eq!(shifts[0], shifts[1], "one shift for the whole job");
    // The job's first collective at the start given.
    let simulated_first = first(records_by_file(&sim), "node");
    // (The shift is whole microseconds.)
    assert!(
        (simulated_first + shifts[0] - started_s * 1e6).abs() < 1.0,
        "the job began at --started"
    );

    // --started with --history, or more than a day back, is refused naming it.
    let to = sim.with_file_name("dump-refused");
    let day_ago = (now_us() / 1e6 - 2.0 * 86_400.0).to_string();
    for (extra, says) in [
        (
            ["--started", &started, "--history", "5"].as_slice(),
            "--history",
        ),
        (["--started", &day_ago].as_slice(), "--started"),
    ] {
        let mut args = replay_to(&sim, &to, "node001=gpu-a16");
        args.extend_from_slice(extra);
        let out = hostping(&args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert!(!to.exists(), "nothing written: {}", stderr(&out));
    }
}
