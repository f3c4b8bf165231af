//! The caps of `model::limits` and meaningless fault settings, as a user meets them: every
//! size above its cap and every contradictory or out-of-range fault exits 2 with one line
//! naming the input and the cap or the reason (issue 26, section 4).

mod common;

use common::{hostping, stderr, temp_dir};
use std::process::Output;
use std::time::{Duration, Instant};

/// Exit status 2, and stderr holding every one of `want`.
fn assert_refused(o: &Output, want: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for w in want {
        assert!(err.contains(w), "`{w}` missing from: {err}");
    }
}

fn check(extra: &[&str]) -> Output {
    let mut args = vec!["check", "--sim", "dgx-a100", "--format", "json"];
    args.extend_from_slice(extra);
    hostping(&args)
}

#[test]
fn an_odp_flood_above_the_cap_is_refused_not_allocated() {
    // Before the cap this allocated 481 GB of ODP regions and aborted (exit 134).
    let o = check(&["--inject", "odp:rnic0:flood:4294967295"]);
    assert_refused(
        &o,
        &[
            "odp:rnic0:flood:4294967295",
            "odp flood QPs 4294967295 is above the cap of 4096",
        ],
    );
    let o = check(&["--inject", "odp:rnic0:flood:100000000"]);
    assert_refused(&o, &["odp flood QPs 100000000 is above the cap of 4096"]);
}

#[test]
fn an_odp_flood_at_the_cap_is_diagnosed_in_seconds() {
    let started = Instant::now();
    let o = check(&["--inject", "odp:rnic0:flood:4096"]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let odp = report["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["cause"] == "odp_stall")
        .expect("the flood is diagnosed");
    assert_eq!(odp["rnic"], "rnic0");
    // Seconds even in a debug build on a shared machine (it was minutes at 1e8 QPs).
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn other_fault_sizes_above_their_caps_are_refused_naming_the_cap() {
    for (fault, says) in [
        (
            "tx-window:rnic0:1099511627776",
            "tx-window bytes 1099511627776 is above the cap of 1073741824",
        ),
        (
            "service:rnic0:1e6",
            "service gbps 1000000 is above the cap of 1600",
        ),
        (
            "iommu:rnic0:1e9",
            "iommu working set MiB 1000000000 is above the cap of 1048576",
        ),
    ] {
        let o = check(&["--inject", fault]);
        assert_refused(&o, &[&format!("bad fault `{fault}`"), says]);
    }
}

#[test]
fn meaningless_fractions_are_refused() {
    for f in ["0", "1.5", "NaN", "-0.2", "inf"] {
        let fault = format!("degrade:gpu4--lsw4:{f}");
        let o = check(&["--inject", &fault]);
        assert_refused(&o, &[&format!("bad fault `{fault}`"), "fraction"]);
    }
}

#[test]
fn two_degrades_on_one_link_are_refused_naming_both() {
    let o = check(&[
        "--inject",
        "degrade:gpu4--lsw4:0.5",
        "--inject",
        "degrade:gpu4--lsw4:0.3",
    ]);
    assert_refused(
        &o,
        &[
            "bad fault `degrade:gpu4--lsw4:0.3`",
            "`degrade:gpu4--lsw4:0.5`",
            "one degrade or flap per link",
        ],
    );
    // Contradictions are refused by every command that takes faults.
    let o = hostping(&[
        "counters",
        "--sim",
        "dgx-a100",
        "--inject",
        "odp:rnic1:damming",
        "--inject",
        "odp:rnic1:flood:8",
    ]);
    assert_refused(&o, &["`odp:rnic1:damming`", "one odp per RNIC"]);
}

#[test]
fn service_above_line_rate_saturates_the_rnic_and_is_not_refused() {
    // 250 Gb/s offered to a 200 Gb/s RNIC: the wire carries 200, the senders wait.
    let o = check(&["--inject", "service:rnic0:250"]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let o = check(&["--inject", "degrade:gpu4--lsw9:0.5"]);
    assert_refused(&o, &["no link `gpu4--lsw9` in dgx-a100 (links: mem0--cpu0"]);
    let o = check(&["--inject", "odp:rnic9:damming"]);
    assert_refused(&o, &["(rnics: rnic0, rnic1, rnic2, rnic3)"]);
}

#[test]
fn a_host_model_above_the_caps_is_refused_naming_the_cap() {
    let dir = temp_dir("caps-model");
    let file = dir.join("gpus.toml");
    let mut text = String::from(
        "name = \"many-gpus\"\n\
         [[component]]\nid = \"cpu0\"\nkind = \"cpu\"\n\
         [[component]]\nid = \"mem0\"\nkind = \"memory\"\n\
         [[component]]\nid = \"sw0\"\nkind = \"pcie_switch\"\n\
         [[component]]\nid = \"rnic0\"\nkind = \"rnic\"\nline_rate_gbps = 200\n\
         [[link]]\ndown = \"mem0\"\nup = \"cpu0\"\ncapacity_gbps = 800\n\
         [[link]]\ndown = \"sw0\"\nup = \"cpu0\"\npcie = \"gen4x16\"\n\
         [[link]]\ndown = \"rnic0\"\nup = \"sw0\"\npcie = \"gen4x16\"\n",
    );
    for g in 0..1000 {
        text.push_str(&format!(
            "[[component]]\nid = \"gpu{g}\"\nkind = \"gpu\"\n\
             [[link]]\ndown = \"gpu{g}\"\nup = \"sw0\"\npcie = \"gen4x16\"\n"
        ));
    }
    std::fs::write(&file, &text).unwrap();
    let o = hostping(&["topology", "--sim", file.to_str().unwrap()]);
    assert_refused(
        &o,
        &["gpus.toml", "components 1004 is above the cap of 288"],
    );
}

#[test]
fn command_line_numbers_above_their_caps_are_refused_naming_the_cap() {
    for (flag, value, says) in [
        ("--runs", "10001", "runs 10001 is above the cap of 10000"),
        (
            "--iterations",
            "99999999999",
            "iterations 99999999999 is above the cap of 1000000",
        ),
        (
            "--stream-qps",
            "5000",
            "stream QPs 5000 is above the cap of 4096",
        ),
        (
            "--stream-ms",
            "1e9",
            "stream ms 1000000000 is above the cap of 60000",
        ),
        ("--noise", "0.75", "noise 0.75 is above the cap of 0.5"),
        (
            "--reprobe-rounds",
            "101",
            "reprobe rounds 101 is above the cap of 100",
        ),
    ] {
        let o = check(&[&format!("{flag}={value}")]);
        assert_refused(&o, &[flag, says]);
    }
    for (flag, value, says) in [
        ("--stream-ms", "0", "stream ms must be above 0, got 0"),
        ("--noise", "-1", "noise must be 0 or more"),
        ("--noise", "NaN", "noise `NaN` is not a number"),
        ("--runs", "0", "runs must be a whole number from 1, got `0`"),
    ] {
        let o = check(&[&format!("{flag}={value}")]);
        assert_refused(&o, &[flag, says]);
    }
    let o = hostping(&[
        "odp-bench",
        "flood",
        "--sim",
        "dgx-a100",
        "--qps",
        "4294967295",
    ]);
    assert_refused(&o, &["odp flood QPs 4294967295 is above the cap of 4096"]);
    let o = hostping(&[
        "baseline",
        "--sim",
        "dgx-a100",
        "--runs",
        "20000",
        "-o",
        "/dev/null",
    ]);
    assert_refused(&o, &["runs 20000 is above the cap of 10000"]);
}

#[test]
fn a_scheduled_fault_contradicting_an_injected_one_is_refused_before_the_agent_starts() {
    let dir = temp_dir("caps-agent");
    let db = dir.join("runs.db");
    let o = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--db",
        db.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--inject",
        "degrade:gpu4--lsw4:0.5",
        "--schedule",
        "1m=degrade:gpu4--lsw4:0.3",
        "--run-for",
        "2m",
    ]);
    assert_refused(
        &o,
        &[
            "--schedule `1m=degrade:gpu4--lsw4:0.3`",
            "`degrade:gpu4--lsw4:0.5`",
            "one degrade or flap per link",
        ],
    );
}
