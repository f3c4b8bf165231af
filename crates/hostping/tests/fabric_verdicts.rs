//! Issue 26 for `hostping fabric sim` through the binary: a run that delivered nothing exits 3
//! (inconclusive, DESIGN 4.3) and says why in `summary.json`; estimated fractions in
//! `ports.csv` are at most 1 and carry their standard deviations; sizes above the caps of
//! `fabric::limits` exit 2 naming the cap.

mod common;

use common::{hostping, stderr, temp_dir};
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn sim(out: &Path, workload: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "fabric",
        "sim",
        "--topology",
        "radix8",
        "--workload",
        workload,
        "--out",
        s(out),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    hostping(&args)
}

#[test]
fn a_run_that_delivered_nothing_exits_3_inconclusive() {
    let dir = temp_dir("fabric-nothing");
    let o = sim(&dir, "stencil:16x8,bytes=8KiB", &["--end", "0us"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["packets_delivered"], 0);
    assert_eq!(summary["inconclusive"], true);
    assert_eq!(summary["cause"], "inconclusive");
    let reason = summary["inconclusive_reason"].as_str().unwrap();
    assert!(reason.contains("hold no packet"), "{reason}");
    assert_eq!(summary["diagnosis"]["not_judged"]["reason"], reason);
    // The JSON on stdout is the same document.
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(printed["inconclusive"], true);
}

#[test]
fn ports_csv_fractions_are_at_most_1_with_their_deviation() {
    let dir = temp_dir("fabric-fractions");
    // A naive reduction congests its root (a verdict: exit 1); a third of the packets tagged
    // gives the estimates a visible spread.
    let o = sim(
        &dir,
        "reduction:naive,ranks=64,arrays=8,bytes=4KiB",
        &["--tag-fraction", "0.3"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let csv = std::fs::read_to_string(dir.join("ports.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let fraction = column("est_congested_fraction");
    let sd = column("est_congested_fraction_sd");
    // The contract's columns keep their places; the deviations are added after them.
    assert_eq!(fraction, 10);
    assert_eq!(
        &header[12..],
        [
            "est_count_sd",
            "est_congested_sd",
            "est_congested_fraction_sd"
        ]
    );
    let mut spread = 0;
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let f: f64 = fields[fraction].parse().unwrap();
        let d: f64 = fields[sd].parse().unwrap();
        assert!((0.0..=1.0).contains(&f), "{line}");
        assert!(d >= 0.0, "{line}");
        spread += usize::from(d > 0.0);
    }
    assert!(spread > 0, "sampled estimates have a spread");
}

#[test]
fn sizes_above_the_caps_exit_2_naming_the_cap() {
    let dir = temp_dir("fabric-caps");
    let tree = dir.join("huge.toml");
    std::fs::write(
        &tree,
        "radix = 65535\nnodes_per_leaf = 32767\nleaves = 2\nleaves_per_pod = 2\naggs_per_pod = 1\n",
    )
    .unwrap();
    let out = dir.join("out");
    for (args, expected) in [
        (
            vec!["--topology", s(&tree), "--workload", "stencil:4x4"],
            "radix 65535 is above the cap of 256 ports",
        ),
        (
            vec!["--topology", "radix8", "--workload", "stencil:1000x1000"],
            "a grid of 1000000 is above the cap of 49151 ranks",
        ),
        (
            vec![
                "--topology",
                "radix8",
                "--workload",
                "stencil:4x4",
                "--end",
                "2s",
            ],
            "is above the cap of 1000000 us of simulated time",
        ),
    ] {
        let mut all = vec!["fabric", "sim", "--out", s(&out)];
        all.extend(args);
        let o = hostping(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(expected), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}
