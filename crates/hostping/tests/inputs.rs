//! Inputs as a user gives them (issue 38, section 1): every size has a cap checked when it is
//! parsed, a flag that does not apply or a host named twice is refused, the commands that
//! print a report take `-o/--output`, `pair serve` listens on ADDR:PORT, and the messages
//! say each thing once and in the right words. Each refusal exits 2 naming the input.

mod common;

use common::{hostping, stderr, stdout, temp_dir};
use serde_json::Value;
use std::process::Output;

/// Exit status 2, one line on stderr holding every one of `want`.
fn assert_refused(o: &Output, want: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for w in want {
        assert!(err.contains(w), "`{w}` missing from: {err}");
    }
}

#[test]
fn what_if_bytes_are_capped_at_the_collectors_gib_and_above_zero() {
    // Before the cap, 1099511627776000 bytes replayed for more than 300 s.
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--what-if",
        "--bytes",
        "1099511627776000",
    ]);
    assert_refused(
        &o,
        &[
            "--bytes",
            "bytes 1099511627776000 is above the cap of 1073741824",
        ],
    );
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--what-if",
        "--bytes",
        "0",
    ]);
    assert_refused(
        &o,
        &["--bytes", "bytes must be a whole number from 1, got `0`"],
    );
}

#[test]
fn an_error_rate_above_any_cables_packets_is_refused() {
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node[001-002]",
        "--inject",
        "fabric:errors:leaf2/9:1e300",
    ]);
    assert_refused(
        &o,
        &["--inject `fabric:errors:leaf2/9:1e300`: errors per second 1e300 is above the cap of 10000000000"],
    );
}

/// A cluster file of 60,000 hosts is refused from its host lists, before any host is built
/// (it took 12 s); a link rate of 1e12 Gb/s names its cap.
#[test]
fn a_cluster_file_above_its_caps_is_refused_naming_the_cap() {
    let dir = temp_dir("inputs-cluster-caps");
    let big = dir.join("big.toml");
    std::fs::write(
        &big,
        "[[hosts]]\nnames = \"n[00001-60000]\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 64\n",
    )
    .unwrap();
    let o = hostping(&["mesh", "--sim-cluster", big.to_str().unwrap()]);
    assert_refused(
        &o,
        &["big.toml: [[hosts]]: hosts 60000 is above the cap of 49151 (one LID each)"],
    );
    let fast = dir.join("fast.toml");
    std::fs::write(
        &fast,
        "[[hosts]]\nnames = \"n[1-2]\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\nlink_gbps = 1e12\n",
    )
    .unwrap();
    let o = hostping(&["mesh", "--sim-cluster", fast.to_str().unwrap()]);
    assert_refused(
        &o,
        &["fast.toml: fabric.link_gbps: link rate 1000000000000 is above the cap of 16000 Gb/s"],
    );
}

/// Flags of real hosts (`--slurm`, the tokens, the window, the real mesh's budget) are
/// refused on a simulated cluster rather than ignored.
#[test]
fn flags_of_real_hosts_are_refused_on_a_simulated_cluster() {
    for (command, flag, value) in [
        ("job", "--slurm", "99999"),
        ("job", "--token-file", "/nonexistent"),
        ("job", "--token", "t"),
        ("job", "--since", "1795787165"),
        ("mesh", "--token-file", "/nonexistent"),
        ("mesh", "--bw-iterations", "10"),
    ] {
        let o = hostping(&[command, "--sim-cluster", "pod-32", flag, value]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{command} {flag}: {err}");
        assert!(
            err.contains(&format!("'{flag} <"))
                && err.contains("'--sim-cluster <NAME|FILE>'")
                && err.contains("cannot be used with"),
            "{command} {flag}: {err}"
        );
    }
}

/// A host named twice is refused, naming it, on every command that takes `--nodes`.
#[test]
fn a_host_named_twice_is_refused_naming_it() {
    let dup = "node[001-003],node002,node001";
    for args in [
        vec!["mesh", "--sim-cluster", "pod-32", "--nodes", dup],
        vec!["job", "--sim-cluster", "pod-32", "--nodes", dup],
        vec!["fleet", "hosts", "--nodes", dup],
    ] {
        let o = hostping(&args);
        assert_refused(
            &o,
            &[
                "--nodes",
                "hostlist `node[001-003],node002,node001`: node[002,001] named more than once",
            ],
        );
    }
}

/// `job`, `mesh` and `pair probe` take `-o/--output` as the top-level help promises.
#[test]
fn job_mesh_and_pair_write_their_report_to_output() {
    let dir = temp_dir("inputs-output");
    let job = dir.join("job.json");
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node[001-002]",
        "--format",
        "json",
        "-o",
        job.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&job).unwrap()).unwrap();
    assert_eq!(report["nodes"], serde_json::json!(["node001", "node002"]));
    let mesh = dir.join("mesh.txt");
    let o = hostping(&[
        "mesh",
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node[001-002]",
        "--output",
        mesh.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&mesh).unwrap();
    assert!(text.starts_with("mesh of pod-32: 2 hosts"), "{text}");
    assert!(!text.contains('\u{1b}'), "no colour in a file: {text}");
    let help = stdout(&hostping(&["pair", "probe", "--help"]));
    assert!(help.contains("-o, --output <FILE>"), "{help}");
}

/// A host's bad fault on a cluster names `--inject` once; a port on no switch lists the
/// cluster's switches and hosts as hostlists, each series on its own.
#[test]
fn fault_messages_say_each_thing_once_and_list_names_properly() {
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--inject",
        "node007:degrade:gpu9--lsw4:0.5",
    ]);
    assert_refused(
        &o,
        &["hostping: error: --inject `node007:degrade:gpu9--lsw4:0.5`: bad fault `degrade:gpu9--lsw4:0.5`: no link `gpu9--lsw4` in dgx-a100"],
    );
    assert_eq!(stderr(&o).matches("--inject").count(), 1, "{}", stderr(&o));
    let o = hostping(&[
        "mesh",
        "--sim-cluster",
        "pod-32",
        "--inject",
        "fabric:down:leafx/1",
    ]);
    assert_eq!(
        stderr(&o).trim_end(),
        "hostping: error: --inject `fabric:down:leafx/1`: `leafx` is neither a switch nor a \
         host of cluster `pod-32` (switches leaf[1-16],spine[1-8], hosts node[001-032])"
    );
}

/// Without a Slurm controller (here: Debian's scontrol and sacct with no configuration, as
/// captured in crates/slurm/testdata), `--slurm` says scontrol reached none, with its words,
/// rather than that it does not know the job.
#[test]
fn without_a_slurm_controller_the_slurm_flag_says_so() {
    let dir = temp_dir("inputs-no-slurmctld");
    let captured = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../slurm/testdata/slurm");
    for tool in ["scontrol", "sacct"] {
        let stderr_file = captured.join(format!("{tool}-no-controller.stderr"));
        let script = dir.join(tool);
        std::fs::write(
            &script,
            format!("#!/bin/sh\ncat '{}' >&2\nexit 1\n", stderr_file.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hostping"))
        .args([
            "job",
            "--slurm",
            "12345",
            "--collector",
            "http://127.0.0.1:1",
        ])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(
            "hostping: error: --slurm 12345: scontrol could not reach a Slurm controller \
             (scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host; "
        ),
        "{err}"
    );
    assert!(!err.contains("does not know the job"), "{err}");
}
