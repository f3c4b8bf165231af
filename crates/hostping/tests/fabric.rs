//! `hostping fabric ...` through the binary: what a user types and what the folder, the
//! output and the exit status say. The simulator's own behaviour is tested in the `fabric`
//! crate; here: the command's contract (files, JSON, exit codes, one-line input errors), the
//! thesis' case studies at full size, the peer benchmark and the Slurm-style merge.

mod common;

use common::{hostping, stderr, stdout, temp_dir};
use std::path::{Path, PathBuf};

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/traffic")
        .join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The pattern the suggest and merge tests share: a 16 x 8 stencil on radix8, into `out`.
const SMALL_STENCIL: &str = "stencil:16x8,bytes=8KiB";

/// `hostping fabric sim` of [`SMALL_STENCIL`] under `mapping`, which must not be an input error.
fn sim_small_stencil(mapping: &str, out: &Path) {
    let o = hostping(&[
        "fabric",
        "sim",
        "--topology",
        "radix8",
        "--workload",
        SMALL_STENCIL,
        "--mapping",
        mapping,
        "--out",
        s(out),
    ]);
    assert!(o.status.code() != Some(2), "{}", stderr(&o));
}

/// The error is one line naming the file and the line, and the exit status is 2.
fn assert_input_error(args: &[&str], file: &Path, line: Option<usize>) {
    let out = hostping(args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let expected = match line {
        Some(line) => format!("{}:{line}: ", file.display()),
        None => format!("{}: ", file.display()),
    };
    assert!(err.contains(&expected), "expected {expected:?} in {err}");
}

#[test]
fn sim_writes_summary_ports_diagnosis_and_plots() {
    let dir = temp_dir("fabric-sim");
    let out = dir.join("run");
    let o = hostping(&[
        "fabric",
        "sim",
        "--topology",
        "radix8",
        "--workload",
        "reduction:naive,ranks=64,arrays=8",
        "--packet-bytes",
        "1024",
        "--out",
        s(&out),
        "--plot",
        "split",
        "--window",
        "20us",
    ]);
    // The naive reduction congests its root: exit 1 (congestion found).
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("diagnosis: communication_pattern"), "{text}");
    assert!(text.contains("simulated"), "{text}");

    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["simulated"], true);
    assert_eq!(summary["topology"], "radix8");
    assert_eq!(summary["cause"], "communication_pattern");
    assert_eq!(summary["diagnosis"]["cause"], "communication_pattern");
    let job = &summary["jobs"][0];
    assert_eq!(job["ranks"], 64);
    assert_eq!(job["finished"], true);
    assert_eq!(job["messages_delivered"], 63 * 8);
    // Every file the summary lists exists: split plots (up and down), window plots, CSV.
    let files: Vec<PathBuf> = summary["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| PathBuf::from(f.as_str().unwrap()))
        .collect();
    for f in &files {
        assert!(f.exists(), "{}", f.display());
    }
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "congested-fraction-up.svg",
        "congested-fraction-down.png",
        "ports.csv",
        "diagnosis.txt",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not in {names:?}"
        );
    }
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("congested-fraction-w000")),
        "{names:?}"
    );

    // ports.csv: one row per switch output port (radix8: 80 switches x 8 ports), and the
    // root node's link (leaf 0 port 0) congested for most packets.
    let csv = std::fs::read_to_string(out.join("ports.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 80 * 8);
    let header: Vec<&str> = rows[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let root: Vec<&str> = rows[1].split(',').collect();
    assert!(root[col("link")].contains("node 0"), "{}", rows[1]);
    assert!(
        root[col("congested_fraction")].parse::<f64>().unwrap() > 0.9,
        "{}",
        rows[1]
    );
    let packets: f64 = root[col("packets")].parse().unwrap();
    assert_eq!(
        packets,
        (63 * 8 * 4) as f64,
        "every packet to the root crosses its link"
    );
}

/// Same inputs and seed, same result; another seed, another one.
#[test]
fn sim_is_deterministic_per_seed() {
    let dir = temp_dir("fabric-seed");
    let run = |seed: &str, name: &str| {
        let out = dir.join(name);
        let o = hostping(&[
            "fabric",
            "sim",
            "--topology",
            "radix8",
            "--workload",
            "uniform,load=0.7,bytes=2KiB",
            "--end",
            "10us",
            "--seed",
            seed,
            "--out",
            s(&out),
        ]);
        assert!(o.status.code() != Some(2), "{}", stderr(&o));
        std::fs::read_to_string(out.join("ports.csv")).unwrap()
    };
    let a = run("5", "a");
    assert_eq!(a, run("5", "b"));
    assert_ne!(a, run("6", "c"));
}

#[test]
fn bad_input_files_name_the_file_and_line() {
    let dir = temp_dir("fabric-bad");
    let out = dir.join("o");
    let topo = dir.join("tree.toml");
    std::fs::write(
        &topo,
        "radix = 8\nnodes_per_leaf = 4\nleaves = 32\nleaves_per_pod = 4\naggs_per_pod = \"four\"\n",
    )
    .unwrap();
    assert_input_error(
        &[
            "fabric",
            "sim",
            "--topology",
            s(&topo),
            "--workload",
            "ring",
            "--out",
            s(&out),
        ],
        &topo,
        Some(5),
    );
    let impossible = dir.join("impossible.toml");
    std::fs::write(
        &impossible,
        "radix = 8\nnodes_per_leaf = 4\nleaves = 30\nleaves_per_pod = 4\naggs_per_pod = 4\n",
    )
    .unwrap();
    assert_input_error(
        &[
            "fabric",
            "sim",
            "--topology",
            s(&impossible),
            "--workload",
            "ring",
            "--out",
            s(&out),
        ],
        &impossible,
        None,
    );
    let workload = fixture("workload_bad_unit.txt");
    assert_input_error(
        &[
            "fabric",
            "sim",
            "--topology",
            "radix8",
            "--workload",
            s(&workload),
            "--out",
            s(&out),
        ],
        &workload,
        Some(3),
    );
    let mapping = fixture("mapping_bad_duplicate_node.txt");
    assert_input_error(
        &[
            "fabric",
            "sim",
            "--topology",
            "radix8",
            "--workload",
            "ring,ranks=3",
            "--mapping",
            s(&mapping),
            "--out",
            s(&out),
        ],
        &mapping,
        Some(3),
    );
    let matrix = fixture("matrix_bad_self.txt");
    assert_input_error(
        &[
            "fabric",
            "suggest-mapping",
            "--topology",
            "radix8",
            "--matrix",
            s(&matrix),
        ],
        &matrix,
        Some(2),
    );
    let missing = dir.join("nope.toml");
    assert_input_error(
        &[
            "fabric",
            "sim",
            "--topology",
            s(&missing),
            "--workload",
            "ring",
            "--out",
            s(&out),
        ],
        &missing,
        None,
    );
    // Bad settings are usage errors that say which setting.
    for (flag, value, says) in [
        ("--tag-fraction", "0", "tag_fraction"),
        (
            "--congestion",
            "queue-above:lots",
            "--congestion queue-above:lots",
        ),
        ("--packet-bytes", "131072", "does not fit"),
    ] {
        let o = hostping(&[
            "fabric",
            "sim",
            "--topology",
            "radix8",
            "--workload",
            "ring",
            flag,
            value,
            "--out",
            s(&out),
        ]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&o).contains(says), "{flag} {value}: {}", stderr(&o));
    }
    // A bad spec (not a file) is a usage error with the valid forms.
    let o = hostping(&[
        "fabric",
        "sim",
        "--topology",
        "radix8",
        "--workload",
        "stencil:0x3",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// suggest-mapping writes a mapping file that `--mapping` accepts, and the suggested mapping
/// shortens the paths of a grid pattern.
#[test]
fn suggested_mapping_is_usable_and_better() {
    let dir = temp_dir("fabric-suggest");
    let map = dir.join("tiled.map");
    let o = hostping(&[
        "fabric",
        "suggest-mapping",
        "--topology",
        "radix8",
        "--workload",
        SMALL_STENCIL,
        "-o",
        s(&map),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["mapping"].as_str().unwrap().starts_with("tiling"), "{v}");
    let before = v["row_major"]["average_path_length"].as_f64().unwrap();
    let after = v["suggested"]["average_path_length"].as_f64().unwrap();
    assert!(after < before, "{before} -> {after}");
    let summary_of = |mapping: &str, name: &str| {
        let out = dir.join(name);
        sim_small_stencil(mapping, &out);
        json(&out.join("summary.json"))
    };
    let tiled = summary_of(s(&map), "tiled");
    let row_major = summary_of("row-major", "rm");
    let path = |v: &serde_json::Value| v["jobs"][0]["average_path_length"].as_f64().unwrap();
    assert!(
        (path(&tiled) - after).abs() < 1e-9,
        "the simulation's path length is the one promised"
    );
    assert!(path(&tiled) < path(&row_major));
}

/// `hostping fabric bench cases` at the thesis' sizes: every claim of chapter 4 reproduced
/// (Table 4.1's ordering and path lengths, the reduction's root > 0.99 and unchanged when it
/// moves, the tree's speed-up, background traffic told apart), exit 0.
#[test]
fn bench_cases_reproduce_the_thesis() {
    let dir = temp_dir("fabric-cases");
    let o = hostping(&[
        "fabric",
        "bench",
        "cases",
        "--format",
        "json",
        "--out",
        s(&dir),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    // Each of the 12 runs is kept with its plot.
    let kept: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 12, "{kept:?}");
    for run in &kept {
        assert!(
            run.join("run.json").exists() && run.join("congested-fraction.png").exists(),
            "{}",
            run.display()
        );
    }
    let reports: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 3);
    for r in reports {
        for c in r["checks"].as_array().unwrap() {
            assert_eq!(c["pass"], true, "{c}");
        }
    }
    let stencil = &reports[0]["table"]["rows"];
    assert_eq!(stencil.as_array().unwrap().len(), 6);
    assert!(
        stencil[0]["reference"]["average_path_length"]
            .as_f64()
            .unwrap()
            > 4.6
    );
}

/// The peer benchmark runs a workload in a child process, the peer's exact workload (CODES'
/// load unit, no link delay), and prints its physical results and cost beside CODES'.
#[test]
fn bench_peer_runs_the_peers_workload_and_prints_both() {
    let o = hostping(&[
        "fabric",
        "bench",
        "peer",
        "--workload",
        "B",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let row = &rows[0];
    let ours = &row["hostping"];
    assert_eq!(ours["workload"], "B");
    assert_eq!(ours["nodes"], 128);
    assert_eq!(ours["load"], 0.536870912);
    assert_eq!(ours["link_latency_ns"], 0.0);
    assert!((ours["simulated_us"].as_f64().unwrap() - 100.0).abs() < 1e-6);
    // The same offered load as CODES' 167,165 messages: within a percent (the generators
    // draw different random numbers; one standard deviation is 0.25 %).
    let packets = ours["packets_delivered"].as_f64().unwrap();
    assert!((packets / 167_165.0 - 1.0).abs() < 0.01, "{packets}");
    let difference = row["packets_difference_percent"].as_f64().unwrap();
    assert!((difference - (packets / 167_165.0 - 1.0) * 100.0).abs() < 1e-9);
    // CODES: 0.72 us; a 5-hop path of 512 B packets costs at least 5 x (41 + 90) ns.
    let latency = ours["mean_latency_us"].as_f64().unwrap();
    assert!((0.6..0.85).contains(&latency), "{latency}");
    let hops = ours["mean_hops"].as_f64().unwrap();
    assert!((4.6..4.8).contains(&hops), "{hops}");
    let events = ours["events"].as_f64().unwrap();
    assert!((ours["events_per_packet"].as_f64().unwrap() - events / packets).abs() < 1e-9);
    assert!(ours["peak_rss_mb"].as_f64().unwrap() > 0.0);
    assert_eq!(row["codes"]["wall_seconds"][0], 2.36);
    let wall = ours["wall_seconds"].as_f64().unwrap();
    assert!((row["speedup_vs_best"].as_f64().unwrap() - 2.36 / wall).abs() < 1e-9);

    let o = hostping(&["fabric", "bench", "peer", "--workload", "A"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for expected in [
        "CODES --load=0.04 = 0.042949673 of line rate, link latency 0 ns",
        "packets delivered",
        "mean hops",
        "speed-up",
        "not run by this benchmark",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
}

/// A sweep's folders merge into one table; a failed task is named, the others still shown.
#[test]
fn merge_collects_runs_and_names_a_broken_one() {
    let dir = temp_dir("fabric-merge");
    let mut runs = Vec::new();
    for (i, mapping) in ["row-major", "random"].iter().enumerate() {
        let out = dir.join(format!("run-{i}"));
        sim_small_stencil(mapping, &out);
        runs.push(out);
    }
    let args: Vec<&str> = ["fabric", "merge", "--format", "csv"]
        .into_iter()
        .chain(runs.iter().map(|p| s(p)))
        .collect();
    let o = hostping(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = stdout(&o);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[1].contains("row-major") && lines[2].contains("random"),
        "{csv}"
    );

    let broken = dir.join("run-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("summary.json"), "{\n  \"topology\": 3\n}\n").unwrap();
    let mut args = vec!["fabric", "merge"];
    args.extend(runs.iter().map(|p| s(p)));
    args.push(s(&broken));
    let o = hostping(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("row-major"),
        "the good runs are still printed"
    );
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}:", broken.join("summary.json").display())),
        "{err}"
    );
}
