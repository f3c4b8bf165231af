//! The real backends on a real verbs device: boots the Soft-RoCE (rdma_rxe) QEMU guest of
//! `scripts/guest/`, runs `scripts/guest/softroce-check.sh` in it (discovery, the loopback
//! matrix, the error paths, perftest), and asserts on what came back.
//!
//! `pair_serve_and_probe_on_soft_roce` reads the same boot's `hostping pair serve|probe`
//! between two more rxe devices joined by a veth pair, healthy, with netem delay and loss;
//! `mesh_through_the_collector_on_soft_roce` a real mesh over that pair, and
//! `job_verdict_on_soft_roce` the job verdict on it as a two-node job.
//!
//! A second test boots the guest from a `git clone` of this repository under /tmp, which
//! the guest covers with its own /tmp: it must see the checkout through its own mount point.
//!
//! They need QEMU and a Debian kernel (set up and cached by `scripts/guest/setup.sh`) and
//! take a minute or two, so they are `#[ignore]`d in a plain `cargo test`; `./test.sh` (the
//! README's test command, which CI runs) runs them with `--ignored`.

mod common;

use common::{read, try_guest_run};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Boots the guest once (for every test of this file that reads its results) and returns
/// the folder of results. A failed boot fails every test that reads it, without booting
/// again (each boot may take its whole timeout).
fn guest_results() -> PathBuf {
    static RESULTS: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    RESULTS
        .get_or_init(|| {
            // About 9 minutes on the machine its steps were sized on, over 20 on one whose
            // emulated guest runs at half that speed (perftest's own latencies doubled): the
            // bound leaves room for twice that, so a slow machine is not a failure.
            try_guest_run("default", 2400, "scripts/guest/softroce-check.sh", &["3"])
                .map(|out| out.join("softroce"))
        })
        .clone()
        .unwrap_or_else(|why| panic!("{why}"))
}

fn status(dir: &Path, step: &str) -> i32 {
    read(dir, &format!("{step}.status")).trim().parse().unwrap()
}

fn json(dir: &Path, step: &str) -> Value {
    let text = read(dir, &format!("{step}.out"));
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{step}.out is not one JSON document ({e}); stderr: {}",
            read(dir, &format!("{step}.err"))
        )
    })
}

/// One document per line (`--runs N`).
fn json_lines(dir: &Path, step: &str) -> Vec<Value> {
    read(dir, &format!("{step}.out"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn path<'a>(report: &'a Value, endpoint: &str) -> &'a Value {
    report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rnic"] == "rnic0" && p["endpoint"] == endpoint)
        .unwrap_or_else(|| panic!("no rnic0->{endpoint} in {report:#}"))
}

fn assert_measured(p: &Value, large_bytes: u64) {
    assert!(p["error"].is_null(), "{p:#}");
    assert!(p["latency_us"].as_f64().unwrap() > 0.0, "{p:#}");
    assert!(p["bandwidth_gbps"].as_f64().unwrap() > 0.0, "{p:#}");
    assert_eq!(p["verified_bytes"].as_u64(), Some(large_bytes), "{p:#}");
}

fn error_of(p: &Value) -> &str {
    p["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected a failed path: {p:#}"))
}

fn median(v: Vec<f64>) -> f64 {
    analyze::robust::median(v).expect("at least one run")
}

#[test]
#[ignore = "boots a QEMU guest (a minute or two); ./test.sh runs it"]
fn real_backends_on_soft_roce() {
    let dir = guest_results();
    println!("guest results in {}", dir.display());

    // Discovery: rxe0 on the virtio NIC behind a PCIe switch, two NUMA nodes, a model.
    assert_eq!(
        status(&dir, "topology"),
        0,
        "{}",
        read(&dir, "topology.err")
    );
    let topo = json(&dir, "topology");
    let ports = topo["rdma_ports"].as_array().unwrap();
    assert_eq!(ports.len(), 1, "{topo:#}");
    assert_eq!(ports[0]["device"], "rxe0");
    assert_eq!(ports[0]["software"], true);
    assert_eq!(topo["numa_nodes"].as_array().unwrap().len(), 2);
    let paths = topo["host"]["paths"].as_array().unwrap();
    let endpoints: Vec<&str> = paths
        .iter()
        .map(|p| p["endpoint"].as_str().unwrap())
        .collect();
    assert_eq!(endpoints, ["mem0", "mem1"], "{topo:#}");
    assert!(read(&dir, "topology-table.out").contains("rxe0"));

    // The loopback matrix: every path measured (not simulated), data verified.
    for step in ["check-write", "check-read"] {
        // 0, 1 or 3: a soft RNIC on a TCG guest may show a finding, or leave a link it
        // cannot judge (then the report must say which, and why).
        let code = status(&dir, step);
        assert!(
            [0, 1, 3].contains(&code),
            "{step} exit {code}: {}",
            read(&dir, &format!("{step}.err"))
        );
        let report = json(&dir, step);
        assert_eq!(
            code == 3,
            report["inconclusive"] == true && report["not_judged"].is_array(),
            "{step}: exit {code} and the report must agree: {report:#}"
        );
        assert_eq!(report["provenance"], "measured", "{report:#}");
        assert_eq!(report["baseline"], "relative");
        assert_eq!(report["paths"].as_array().unwrap().len(), 2, "{report:#}");
        for ep in ["mem0", "mem1"] {
            assert_measured(path(&report, ep), 131072);
        }
    }
    let read_report = json(&dir, "check-read");
    for ep in ["mem0", "mem1"] {
        let stream = &path(&read_report, ep)["stream"];
        assert_eq!(stream["qps"], 2, "{read_report:#}");
        assert!(stream["bandwidth_gbps"].as_f64().unwrap() > 0.0);
    }
    assert!(read(&dir, "check-table.out").contains("MEASURED"));

    // A baseline recorded on the host and used by a later check.
    assert_eq!(
        status(&dir, "baseline"),
        0,
        "{}",
        read(&dir, "baseline.err")
    );
    let baseline: Value = serde_json::from_str(&read(&dir, "baseline.json")).unwrap();
    assert_eq!(baseline["provenance"], "measured");
    assert_eq!(baseline["paths"].as_array().unwrap().len(), 2);
    assert_eq!(json(&dir, "check-baseline")["baseline"], "recorded");

    // Error paths: the failed path says why, the other path is still measured, exit 1.
    let cases = [
        (
            "fault-reg-mr",
            "mem1",
            "cannot register memory on mem1: ibv_reg_mr",
            "mem0",
        ),
        ("fault-hang", "mem0", "timed out after 1000 ms", "mem1"),
        ("fault-bad-rkey", "mem1", "remote access error", "mem0"),
    ];
    for (step, failed, message, fine) in cases {
        assert_eq!(
            status(&dir, step),
            1,
            "{step}: {}",
            read(&dir, &format!("{step}.err"))
        );
        let report = json(&dir, step);
        let err = error_of(path(&report, failed));
        assert!(err.contains(message), "{step}: {err}");
        assert_measured(path(&report, fine), 131072);
    }

    // RLIMIT_MEMLOCK: refused registrations name the cause; a limit that fits one path's
    // regions holds a whole series, so nothing stays pinned between paths.
    assert_eq!(
        status(&dir, "memlock-64k"),
        1,
        "{}",
        read(&dir, "memlock-64k.err")
    );
    let refused = json(&dir, "memlock-64k");
    for ep in ["mem0", "mem1"] {
        assert!(error_of(path(&refused, ep)).contains("cannot register memory"));
    }
    let series = json_lines(&dir, "memlock-1m");
    assert_eq!(series.len(), 3, "{}", read(&dir, "memlock-1m.err"));
    for report in &series {
        for ep in ["mem0", "mem1"] {
            assert_measured(path(report, ep), 131072);
        }
    }

    // Beside perftest on the same device, same boot: printed for BENCHMARKS.md. TCG is
    // too noisy for a pass mark; the figures must exist and be positive.
    let runs = json_lines(&dir, "hostping-bench");
    let lat = median(
        runs.iter()
            .map(|r| path(r, "mem0")["latency_us"].as_f64().unwrap())
            .collect(),
    );
    let bw = median(
        runs.iter()
            .map(|r| {
                path(r, "mem0")["stream"]["bandwidth_gbps"]
                    .as_f64()
                    .unwrap()
            })
            .collect(),
    );
    let read_runs = json_lines(&dir, "hostping-bench-read");
    let read_lat = median(
        read_runs
            .iter()
            .map(|r| path(r, "mem0")["latency_us"].as_f64().unwrap())
            .collect(),
    );
    assert!(lat > 0.0 && bw > 0.0 && read_lat > 0.0);

    // Counter sources on the real rxe device, after the probes moved packets.
    assert_eq!(
        status(&dir, "counters"),
        0,
        "{}",
        read(&dir, "counters.err")
    );
    let counters = json(&dir, "counters");
    let source = |name: &str| {
        counters["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["source"] == name)
            .unwrap_or_else(|| panic!("no {name} source: {counters:#}"))
            .clone()
    };
    let rnic = source("rnic");
    assert_eq!(rnic["status"], "ok", "{rnic:#}");
    let port = &rnic["readings"][0];
    assert_eq!(port["device"], "rxe0");
    assert_eq!(port["pma"], "absent", "rxe has no counters/ directory");
    let sent = port["hw_counters"]["sent_pkts"].as_u64().unwrap();
    assert!(sent > 1000, "the probes sent packets through rxe0: {sent}");
    assert_ne!(
        source("ethtool")["status"],
        "error",
        "{:#}",
        source("ethtool")
    );
    assert_eq!(
        source("uncore")["status"],
        "unavailable",
        "no uncore PMUs under TCG"
    );
    assert_eq!(source("gpu")["status"], "unavailable");
    assert_eq!(counters["monitor"]["rnics"][0]["id"], "rnic0");
    // The guest has a virtual VT-d IOMMU (`scripts/guest/run.sh`, `intel_iommu=on`): the
    // kernel puts every PCI device in a translated (DMA or DMA-FQ) group, rxe0's virtio NIC
    // (0000:81:00.0) included, and discovery must read it so.
    let memory = source("memory");
    let iommu = &memory["readings"]["iommu"];
    assert!(
        iommu["units"].as_array().is_some_and(|u| !u.is_empty()),
        "a VT-d unit (dmar0): {iommu:#}"
    );
    let translated = |t: &Value| t == "DMA" || t == "DMA-FQ";
    let nic_group = iommu["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["devices"].to_string().contains("0000:81:00.0"))
        .unwrap_or_else(|| panic!("no IOMMU group holds the NIC: {iommu:#}"));
    assert!(translated(&nic_group["kind"]), "{nic_group:#}");
    // The host-wide summary reads the mode, but counts hardware RNICs only (a software
    // RNIC's "DMA" is the CPU's copy): with rxe0 alone, whether RNIC DMA is translated stays
    // unknown rather than false.
    assert_eq!(counters["config"]["iommu"]["mode"], "DMA-FQ");
    assert!(
        counters["config"]["iommu"]["translated"].is_null(),
        "{:#}",
        counters["config"]["iommu"]
    );
    // The monitor carries it per RNIC, and reads the (empty: rxe on 6.1 has no ODP) list of
    // ODP memory regions from RDMA netlink, saying so rather than leaving it unread.
    let group = &counters["config"]["iommu_groups"][0];
    assert_eq!(
        (&group["device"], &group["translated"]),
        (&Value::from("rnic0"), &Value::from(true)),
        "{group:#}"
    );
    assert!(translated(&group["kind"]), "{group:#}");
    let odp = source("odp");
    assert_eq!(odp["status"], "ok", "{odp:#}");
    assert!(
        counters["monitor"]["odp"].is_null(),
        "no ODP region: {:#}",
        counters["monitor"]
    );
    let lint_code = status(&dir, "lint");
    assert!(
        lint_code == 0 || lint_code == 1,
        "{}",
        read(&dir, "lint.err")
    );
    assert!(json(&dir, "lint")["findings"].is_array());

    // The agent on the real host: an idle-triggered full mesh through rxe0, stored.
    assert_eq!(status(&dir, "agent"), 0, "{}", read(&dir, "agent.err"));
    assert!(
        read(&dir, "agent.err").contains("stopped;"),
        "{}",
        read(&dir, "agent.err")
    );
    let db = store::Store::open_read_only(&dir.join("agent.db")).unwrap();
    db.integrity_check().unwrap();
    let stored = db.runs(&store::RunQuery::default()).unwrap();
    let first = stored
        .last()
        .unwrap_or_else(|| panic!("no agent run: {}", read(&dir, "agent.err")));
    assert_eq!(first.trigger, "idle");
    assert_eq!(first.provenance, "measured");
    assert_eq!(first.paths, 2, "rnic0 x mem0, mem1");
    println!("hostping on rxe0 (medians of {} runs): WRITE 1 B post-to-completion {lat:.2} us, READ 1 B {read_lat:.2} us, 1-QP depth-128 64 KiB WRITE stream {bw:.3} Gb/s", runs.len());
    assert_eq!(
        status(&dir, "perftest"),
        0,
        "{}",
        read(&dir, "perftest.err")
    );
    let perftest: Value =
        serde_json::from_str(&read(&dir.join("../perftest"), "summary.json")).unwrap();
    let figure = |variant: &str, key: &str| {
        perftest["medians"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["variant"] == variant)
            .and_then(|m| m[key].as_f64())
            .unwrap_or_else(|| panic!("no {variant} {key} in {perftest:#}"))
    };
    let write_lat = figure("write_lat_1", "t_typical_us");
    let read_lat_pt = figure("read_lat_1", "t_typical_us");
    let write_bw = figure("write_bw_64k", "bw_avg_gbps");
    println!("| figure | hostping | perftest | ratio |");
    println!("|---|---|---|---|");
    println!("| 1 B READ latency, post to completion (us) | {read_lat:.2} | {read_lat_pt:.2} (ib_read_lat) | {:.2} |", read_lat / read_lat_pt);
    println!("| 1 B WRITE latency (us) | {lat:.2} (post to completion) | {write_lat:.2} (ib_write_lat, half a ping-pong) | {:.2} |", lat / write_lat);
    println!("| 64 KiB WRITE bandwidth, 1 QP, depth 128 (Gb/s) | {bw:.3} | {write_bw:.3} (ib_write_bw) | {:.2} |", bw / write_bw);

    // The loopback engine's 1 B READ beside ib_read_lat (issue 38 asks for 10 %). The medians
    // above are too noisy for a bound: TCG's speed flips from one test to the next
    // (a QP's 1,000 READs take about 62 us each, the next QP's 130 us, in the same process
    // too), and the flips only ever add time. So each tool's floor over the same number of
    // tests, run in turn, is compared: the same fastest test of each, the third where both
    // met the fast state three times (`analyze::robust::floors`). Per round one `check` (two paths, mem0 and mem1, each its
    // own QP) and two ib_read_lat runs (scripts/guest/read-pass-mark.sh).
    assert_eq!(
        status(&dir, "read-pass-mark"),
        0,
        "{}",
        read(&dir, "read-pass-mark.err")
    );
    let (mut hp_read, mut pt_read) = (Vec::new(), Vec::new());
    let rounds = std::fs::read_dir(dir.join("read-pass-mark"))
        .unwrap()
        .count();
    for round in 1..=rounds {
        let at = dir.join(format!("read-pass-mark/{round}"));
        let hostping: Option<Value> = std::fs::read_to_string(at.join("hostping.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(report) = hostping {
            hp_read.extend(
                ["mem0", "mem1"]
                    .iter()
                    .filter_map(|m| path(&report, m)["latency_us"].as_f64()),
            );
        }
        let perftest: Option<Value> = std::fs::read_to_string(at.join("perftest/summary.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(runs) = perftest.as_ref().and_then(|p| p["runs"].as_array()) {
            pt_read.extend(runs.iter().filter_map(|r| r["t_typical_us"].as_f64()));
        }
    }
    println!(
        "read pass mark: {rounds} rounds, hostping {hp_read:.2?} us, ib_read_lat {pt_read:.2?} us"
    );
    assert!(
        rounds >= 16 && hp_read.len() * 4 >= rounds * 6 && pt_read.len() * 4 >= rounds * 6,
        "most tests gave a figure (two per round for each tool): {hp_read:?} {pt_read:?}\n{}",
        read(&dir, "read-pass-mark.err")
    );
    let floors = analyze::robust::floors(&hp_read, &pt_read).expect("runs of both");
    let read_ratio = floors.a / floors.b;
    println!(
        "| 1 B READ latency, floor (run number {} from the fastest) of {} and {} tests in turn, {} and {} in the fast state (us) | {:.2} | {:.2} (ib_read_lat) | {read_ratio:.2} |",
        floors.k,
        hp_read.len(),
        pt_read.len(),
        floors.quiet.0,
        floors.quiet.1,
        floors.a,
        floors.b
    );
    // Issue 38's pass mark: within 10 % (BENCHMARKS.md, "READ pass mark"). The engine posts
    // from the CPUs of rxe0's NUMA node; ib_read_lat runs unpinned, as by default.
    assert!(
        read_ratio <= 1.10,
        "the loopback READ's floor is {read_ratio:.3} of ib_read_lat's: {hp_read:?} {pt_read:?}"
    );

    // ODP micro-benchmarks (ISPASS'21): rxe of Linux 6.1 has no ODP (it landed in 6.14), so
    // odp-bench names the device and what it lacks, measures nothing, and exits 2.
    let odp_err = read(&dir, "odp-bench-damming.err");
    assert_eq!(status(&dir, "odp-bench-damming"), 2, "{odp_err}");
    assert!(
        odp_err.contains("odp-bench damming: rxe0 has no on-demand paging"),
        "{odp_err}"
    );
    assert!(
        odp_err.contains("general_odp_caps: NO SUPPORT"),
        "{odp_err}"
    );
    assert!(read(&dir, "odp-bench-damming.out").is_empty());

    // The IOTLB sweep through rxe0 (the mechanics: a virtual IOMMU gives no IOTLB drop
    // under emulation): every working set of the short sweep measured to both memory nodes.
    let iotlb_status = status(&dir, "check-iotlb");
    assert!(
        iotlb_status == 0 || iotlb_status == 1,
        "{}",
        read(&dir, "check-iotlb.err")
    );
    let sweep = &json(&dir, "check-iotlb")["iotlb"];
    assert_eq!(sweep["provenance"], "measured", "{sweep:#}");
    let curves = sweep["curves"].as_array().unwrap();
    assert_eq!(
        read(&dir, "hugepages")
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["6", "6"],
        "the guest reserved 2 MiB pages on both nodes"
    );
    let mut kinds: Vec<(String, String)> = curves
        .iter()
        .map(|c| {
            (
                c["endpoint"].as_str().unwrap().to_string(),
                c["page"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("mem0", "2m"),
            ("mem0", "4k"),
            ("mem1", "2m"),
            ("mem1", "4k")
        ]
        .map(|(e, p)| (e.to_string(), p.to_string())),
        "rnic0 x mem0, mem1 x 4 KiB and 2 MiB pages: {sweep:#}"
    );
    for c in curves {
        let sizes: Vec<u64> = c["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                assert!(p["gbps"].as_f64().unwrap() > 0.0, "{p}");
                p["working_set_bytes"].as_u64().unwrap()
            })
            .collect();
        assert_eq!(
            sizes,
            [16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20],
            "{c}"
        );
    }
    // rxe0's parent NIC sits in a translated group, but the CPU moves rxe's data: the
    // sweep must not suggest an IOTLB in its path.
    assert!(
        sweep["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("rnic0: a software RNIC"),
        "{sweep:#}"
    );
}

/// Runs `command` in `dir` and panics with its output unless it succeeds.
fn run_ok(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what}: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `git clone` of this repository into /tmp (as a user does with `git clone ... /tmp/hostping`),
/// the guest step run from there: `scripts/guest/run.sh` of the clone, the clone as working
/// directory and the clone's binary given by its absolute /tmp path.
#[test]
#[ignore = "boots a QEMU guest (about 30 s); ./test.sh runs it"]
fn guest_sees_a_checkout_under_tmp() {
    let _one_guest = common::one_guest_at_a_time();
    let clone = PathBuf::from(format!("/tmp/hostping-clone-{}", std::process::id()));
    let out = PathBuf::from(format!("/tmp/hostping-clone-out-{}", std::process::id()));
    for dir in [&clone, &out] {
        let _ = std::fs::remove_dir_all(dir);
    }
    std::fs::create_dir_all(&out).unwrap();
    run_ok(
        Command::new("git")
            .args(["clone", "--quiet"])
            .arg(workspace())
            .arg(&clone),
        "git clone of the workspace into /tmp",
    );
    // The clone holds the last commit; the guest scripts of the working tree are what is
    // under test, so they replace the clone's (an uncommitted edit is tested too).
    run_ok(
        Command::new("cp")
            .args(["-R", "--"])
            .arg(workspace().join("scripts/."))
            .arg(clone.join("scripts")),
        "copying scripts/ into the clone",
    );
    // A build in the clone would take minutes: the binary built for this test stands in
    // for it, where cargo would have put it.
    let binary = clone.join("target/debug/hostping");
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_hostping"), &binary).unwrap();

    // The job records where it runs and what it was given, then runs the clone's binary.
    let job = r#"pwd >"$HOSTPING_GUEST_OUT/pwd"
printf '%s\n' "$1" >"$HOSTPING_GUEST_OUT/binary"
"$1" topology --format json >"$HOSTPING_GUEST_OUT/topology.json" &&
    "$1" check --format json --iterations 20 >"$HOSTPING_GUEST_OUT/check.json"
status=$?
# 1: a finding on a TCG guest is still a measured run; 3: so is one that could not judge
[ "$status" -le 1 ] || [ "$status" -eq 3 ] || exit "$status"
"#;
    let status = Command::new("bash")
        .current_dir(&clone)
        .arg(clone.join("scripts/guest/run.sh"))
        .arg("--out")
        .arg(&out)
        .args(["--timeout", "600", "--", "bash", "-c", job, "job"])
        .arg(&binary)
        .status()
        .expect("bash runs");
    assert!(
        status.success(),
        "the guest run from {} failed ({status}); see {}/serial.log",
        clone.display(),
        out.display()
    );

    assert_eq!(read(&out, "pwd").trim(), "/run/hostping/checkout");
    assert_eq!(
        read(&out, "binary").trim(),
        "/run/hostping/checkout/target/debug/hostping"
    );
    let topo: Value = serde_json::from_str(&read(&out, "topology.json")).unwrap();
    assert_eq!(topo["rdma_ports"][0]["device"], "rxe0", "{topo:#}");
    let report: Value = serde_json::from_str(&read(&out, "check.json")).unwrap();
    assert_eq!(report["provenance"], "measured", "{report:#}");
    for ep in ["mem0", "mem1"] {
        assert_measured(path(&report, ep), 131072);
    }
    for dir in [&clone, &out] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// The three `pair probe` reports of one condition (`pair-base`, `pair-delay`,
/// `pair-loss`, `mesh-pair`), in round order, each checked: finished, data verified, every
/// part measured, DESIGN 4.6's fields; `judged`: run with `--baseline` (the first healthy
/// probe), so the pair is abnormal (exit 1) for its network part.
fn pair_runs(dir: &Path, condition: &str, judged: bool) -> Vec<Value> {
    (1..=3)
        .map(|i| {
            let step = format!("{condition}-{i}");
            let err = read(dir, &format!("{step}.err"));
            assert_eq!(status(dir, &step), i32::from(judged), "{step}: {err}");
            let r = json(dir, &step);
            assert_eq!(r["simulated"], false, "{r:#}");
            assert_eq!(r["a"]["rnic"], "rxe_a", "{r:#}");
            assert_eq!(r["b"]["rnic"], "rxe_b", "{r:#}");
            assert!(
                r["a"]["host"].as_str().is_some_and(|h| !h.is_empty()),
                "{r:#}"
            );
            assert_eq!(r["a"]["host"], r["b"]["host"], "one guest: {r:#}");
            assert_eq!(r["verified"], true, "{r:#}");
            if judged {
                // What moved is the network: its part is abnormal and the reason says why
                // (the host parts are checked for steadiness by the caller).
                assert_eq!(r["status"], "abnormal", "{r:#}");
                assert_eq!(r["network_status"], "abnormal", "{r:#}");
                let reason = r["reason"].as_str().unwrap();
                assert!(
                    ["network part", "p99 half round trip", "bandwidth"]
                        .iter()
                        .any(|w| reason.contains(w)),
                    "{r:#}"
                );
            } else {
                assert_eq!(r["status"], "uncertain", "{r:#}");
            }
            assert_eq!(r["route"], serde_json::json!([]), "{r:#}");
            assert_eq!(r["route_source"], "none", "{r:#}");
            for field in [
                "latency_us",
                "bandwidth_gbps",
                "host_a_us",
                "host_b_us",
                "network_us",
            ] {
                assert!(r[field].is_f64(), "{step}: no {field}: {r:#}");
            }
            let (lat, a, b, net) = (
                r["latency_us"].as_f64().unwrap(),
                r["host_a_us"].as_f64().unwrap(),
                r["host_b_us"].as_f64().unwrap(),
                r["network_us"].as_f64().unwrap(),
            );
            assert_split_adds_up(&r, (lat, a, b, net));
            assert!(a > 0.0 && b > 0.0, "{r:#}");
            r
        })
        .collect()
}

/// The latency less both host parts is the network part, floored at 0: a time is never
/// negative (issue 38). Where the difference is inside its noise the report says so in
/// `network_note`, with the noise in `network_noise_us`.
fn assert_split_adds_up(r: &Value, (lat, a, b, net): (f64, f64, f64, f64)) {
    let difference = lat - a - b;
    assert!(net >= 0.0, "a negative time: {r:#}");
    assert!(
        (difference.max(0.0) - net).abs() < 1e-6,
        "the split adds up: {r:#}"
    );
    let noise = r["network_noise_us"]
        .as_f64()
        .unwrap_or_else(|| panic!("no network_noise_us: {r:#}"));
    assert_eq!(
        r["network_note"].is_string(),
        difference <= noise,
        "within noise is said where the difference is inside its noise: {r:#}"
    );
}

/// The median of one field over a condition's runs.
fn median_field(runs: &[Value], field: &str) -> f64 {
    median(runs.iter().map(|r| r[field].as_f64().unwrap()).collect())
}

/// `hostping pair serve` on rxe_b, `hostping pair probe` from rxe_a (the two-veth setup of
/// scripts/guest/pair-net.sh): the split of the latency into both hosts' parts and the
/// network, healthy, with a longer cable (netem delay) and with a lossy one (netem loss).
#[test]
#[ignore = "boots a QEMU guest (a minute or two); ./test.sh runs it"]
fn pair_serve_and_probe_on_soft_roce() {
    let dir = guest_results();
    assert_eq!(
        status(&dir, "pair-net"),
        0,
        "{}",
        read(&dir, "pair-net.err")
    );
    let serve = read(&dir, "pair-serve.out");
    assert!(
        serve.starts_with("pair serve: rxe_b on ") && serve.contains(" listening on 192.168.77.2:"),
        "port 0 picks a port and prints it: {serve}"
    );
    let base = pair_runs(&dir, "pair-base", false);
    let delay = pair_runs(&dir, "pair-delay", true);
    let loss = pair_runs(&dir, "pair-loss", true);
    for r in &delay {
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.contains("network part"),
            "the delay is the network's: {r:#}"
        );
    }
    let figures = |runs: &[Value]| {
        [
            "latency_us",
            "host_a_us",
            "host_b_us",
            "network_us",
            "bandwidth_gbps",
        ]
        .map(|f| median_field(runs, f))
    };
    let p99 = |runs: &[Value]| {
        median(
            runs.iter()
                .map(|r| r["latency"]["p99_us"].as_f64().unwrap())
                .collect(),
        )
    };
    let [lat0, a0, b0, net0, bw0] = figures(&base);
    let [lat1, a1, b1, net1, bw1] = figures(&delay);
    let [lat2, a2, b2, net2, bw2] = figures(&loss);
    let (p99_0, p99_2) = (p99(&base), p99(&loss));
    let row = |name: &str, [lat, a, b, net, bw]: [f64; 5], p99: f64| {
        println!("| {name} | {lat:.2} | {a:.2} | {b:.2} | {net:.2} | {p99:.2} | {bw:.3} |")
    };
    println!("pair figures: hostping pair probe rxe_a -> pair serve rxe_b, medians of 3 rounds (1000 pings of 2 B, 300 WRITEs of 64 KiB at depth 16):");
    println!("| veth_a | latency (us) | host A (us) | host B (us) | network (us) | p99 half RTT (us) | bandwidth (Gb/s) |");
    println!("|---|---|---|---|---|---|---|");
    row("healthy", [lat0, a0, b0, net0, bw0], p99_0);
    row("netem delay 200us", [lat1, a1, b1, net1, bw1], p99(&delay));
    row("netem loss 2%", [lat2, a2, b2, net2, bw2], p99_2);
    println!("pair netem: {}", read(&dir, "pair-netem.txt").trim());

    // The host parts are rxe's local loopback: its packets never reach the veth, so netem
    // cannot move them. Each round probed healthy, delayed and lossy in turn (the guest
    // script), so every change is taken within its round, where the host's load fell on
    // all three alike: under TCG a loopback's p50 wanders by 10-20 % from probe to probe,
    // and by 5-10 us when the host takes a vCPU for a while, so the medians of two
    // conditions taken minutes apart differ by tens of us (a CI run: latency +301 us,
    // network +257 us between the medians, host parts 44 us apart).
    let in_round = |runs: &[Value], field: &str| -> Vec<f64> {
        runs.iter()
            .zip(&base)
            .map(|(r, b)| r[field].as_f64().unwrap() - b[field].as_f64().unwrap())
            .collect()
    };
    let part_change = |runs: &[Value], field: &str| median(in_round(runs, field));

    // netem delays what veth_a sends, one way: the round trip grows by 200 us, the half
    // round trip (the latency) by 100 us at least; under TCG the guest's timers fire late
    // and the rdma guest test saw +220..250 us on perftest's and the engine's half RTT
    // alike (BENCHMARKS.md); on a loaded host a delayed packet waits for the next guest
    // timer tick (about 4 ms). So: the network part rises by 90 us at least, and it is what
    // rose: in the median round, 80 % of the latency's rise at least is the network's, and
    // each host part moved by under a fifth of the network's rise.
    let (rise, net_rise) = (
        part_change(&delay, "latency_us"),
        part_change(&delay, "network_us"),
    );
    let share = median(
        in_round(&delay, "network_us")
            .iter()
            .zip(in_round(&delay, "latency_us"))
            .map(|(net, lat)| net / lat)
            .collect(),
    );
    let moved_with_delay = ["host_a_us", "host_b_us"].map(|f| (f, part_change(&delay, f)));
    println!(
        "pair netem delay (within rounds): latency +{rise:.2} us, network part +{net_rise:.2} us, network's share {share:.2}"
    );
    for (field, moved) in moved_with_delay {
        println!("pair netem delay: {field} moved {moved:+.2} us within its rounds");
    }
    assert!(
        net_rise >= 90.0,
        "the network part rose by {net_rise:.2} us"
    );
    assert!(
        share >= 0.8,
        "the network carried {share:.2} of the latency's rise (latency +{rise:.2} us, network +{net_rise:.2} us)"
    );
    for (field, moved) in moved_with_delay {
        assert!(
            moved.abs() < 0.2 * net_rise,
            "{field} moved {moved:+.2} us with the delay, the network part {net_rise:+.2} us"
        );
    }

    // With loss, RC recovers every packet: the probes finished with their data verified
    // (pair_runs). A lost ping waits for the ACK timeout (67 ms), a lost WRITE packet for
    // a go-back-N; 2 % of the pings is beyond the median but not the p99, and a stream of
    // 64-packet messages loses some packet of most of them. What grew is the network's:
    // its tail, or the stream's time; the host parts did not move (below).
    println!(
        "pair netem loss: p99 {p99_0:.2} -> {p99_2:.2} us, bandwidth {bw0:.3} -> {bw2:.3} Gb/s, network part (p50) {net0:.2} -> {net2:.2} us"
    );
    assert!(
        p99_2 > 2.0 * p99_0 || bw2 < 0.8 * bw0,
        "neither the tail nor the bandwidth shows the loss: p99 {p99_0:.2} -> {p99_2:.2} us, {bw0:.3} -> {bw2:.3} Gb/s"
    );
    // A lost packet costs a retransmission timeout (67 ms) or a go-back-N, thousands of us;
    // a host part that carried any of it would grow far beyond its own size. Within their
    // rounds, each moved by less than twice its healthy value, or 50 us, whichever is
    // larger: one guest's two vCPUs carry both hosts and the netem'd traffic, and a run on
    // a CI-kind machine saw host B's loopback go 21 -> 41-47 us in the rounds with netem
    // (delay and loss alike) while its p99 rose by 31 ms.
    let moved_with_loss = [("host_a_us", a0), ("host_b_us", b0)]
        .map(|(field, healthy)| (field, healthy, part_change(&loss, field)));
    for (field, _, moved) in moved_with_loss {
        println!("pair netem loss: {field} moved {moved:+.2} us within its rounds");
    }
    for (field, healthy, moved) in moved_with_loss {
        assert!(
            moved.abs() < (2.0 * healthy).max(50.0),
            "{field} moved {moved:+.2} us with the loss (healthy {healthy:.2} us)"
        );
    }
}

/// A real `hostping mesh` through the collector (scripts/guest/mesh-agents.sh, same boot):
/// agent node01 on rxe_a and node02 on rxe_b register with a collector on PostgreSQL in the
/// guest, node03 registered and stopped. The node01-node02 pair is measured through the
/// agents' API, as `pair probe` measures it (latency close to `pair probe`'s in the same
/// rounds, both host parts, network = latency - parts, data verified); node03's pairs are unreachable,
/// and the measured pair is kept beside them.
#[test]
#[ignore = "boots a QEMU guest (a minute or two); ./test.sh runs it"]
fn mesh_through_the_collector_on_soft_roce() {
    let dir = guest_results();
    assert_eq!(status(&dir, "mesh"), 0, "{}", read(&dir, "mesh.err"));
    println!("mesh time: {}", read(&dir, "mesh-time.txt").trim());
    let registered: Value = serde_json::from_str(&read(&dir, "mesh-registered.json")).unwrap();
    let rnics = |host: &str| {
        registered
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["host"] == host)
            .unwrap_or_else(|| panic!("{host} not registered: {registered:#}"))["rnics"]
            .clone()
    };
    // --devices: each agent owns one device, as rnic0.
    assert_eq!(rnics("node01"), serde_json::json!(["rnic0"]));
    assert_eq!(rnics("node02"), serde_json::json!(["rnic0"]));
    // Three rounds, each a `pair probe` then the mesh between the same devices.
    let lats: Vec<f64> = (1..=3).map(|i| mesh_round(&dir, i)).collect();
    let mesh = median(lats.clone());
    // Close to `pair probe` between the same devices in the same rounds: under TCG a
    // probe's p50 wanders by 10-20 % from run to run, and a starved vCPU adds more (both
    // are run again when a round came out starved): the medians within half of the pair
    // probes' or 15 us, whichever is larger.
    let probes = pair_runs(&dir, "mesh-pair", false);
    let base = median_field(&probes, "latency_us");
    println!(
        "mesh pair node01-node02, median of 3 rounds: {mesh:.2} us ({lats:.2?}); pair probe in the same rounds: {base:.2} us; bandwidth {:.3} Gb/s against {:.3}",
        median(
            (1..=3)
                .map(|i| measured_pair(&json(&dir, &format!("mesh-agents-{i}")))["bandwidth_gbps"]
                    .as_f64()
                    .unwrap())
                .collect()
        ),
        median_field(&probes, "bandwidth_gbps")
    );
    assert!(
        (mesh - base).abs() <= (0.5 * base).max(15.0),
        "mesh {mesh:.2} us against pair probe {base:.2} us in the same rounds"
    );
}

fn between(p: &Value, x: &str, y: &str) -> bool {
    (p["a"]["host"] == x && p["b"]["host"] == y) || (p["a"]["host"] == y && p["b"]["host"] == x)
}

/// The node01-node02 pair of a mesh answer.
fn measured_pair(mesh: &Value) -> &Value {
    mesh["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| between(p, "node01", "node02"))
        .unwrap_or_else(|| panic!("no node01-node02 pair: {mesh:#}"))
}

/// Round `i` of the mesh (`mesh-agents-i`), checked: node03's pairs unreachable, the
/// node01-node02 pair measured and split; its latency.
fn mesh_round(dir: &Path, i: u32) -> f64 {
    let step = format!("mesh-agents-{i}");
    // 1: node03's pairs are unreachable.
    assert_eq!(
        status(dir, &step),
        1,
        "{}",
        read(dir, &format!("{step}.err"))
    );
    let mesh = json(dir, &step);
    assert_eq!(mesh["simulated"], false, "{mesh:#}");
    let pairs = mesh["pairs"].as_array().unwrap();
    // Rail rnic0 holds all three hosts: a ring of three pairs; node03's rnic1..3 pair with
    // nobody (never two RNICs of one host).
    assert_eq!(pairs.len(), 3, "{mesh:#}");
    let measured = measured_pair(&mesh);
    assert_eq!(measured["status"], "uncertain", "{measured:#}");
    assert_eq!(measured["verified"], true, "{measured:#}");
    assert_eq!(measured["simulated"], false, "{measured:#}");
    assert_eq!(measured["route"], Value::Null, "{measured:#}");
    assert!(measured["route_reason"].is_string(), "{measured:#}");
    let devices = [&measured["a"]["device"], &measured["b"]["device"]];
    assert!(
        devices == [&Value::from("rxe_a"), &Value::from("rxe_b")]
            || devices == [&Value::from("rxe_b"), &Value::from("rxe_a")],
        "{measured:#}"
    );
    let field = |f: &str| {
        measured[f]
            .as_f64()
            .unwrap_or_else(|| panic!("no {f}: {measured:#}"))
    };
    let (lat, a, b, net) = (
        field("latency_us"),
        field("host_a_us"),
        field("host_b_us"),
        field("network_us"),
    );
    assert!(a > 0.0 && b > 0.0, "{measured:#}");
    assert_split_adds_up(measured, (lat, a, b, net));
    assert!(field("bandwidth_gbps") > 0.0, "{measured:#}");
    for p in pairs.iter().filter(|p| !between(p, "node01", "node02")) {
        assert_eq!(p["status"], "unreachable", "{p:#}");
        let error = p["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("node03's agent is unreachable: "),
            "{p:#}"
        );
        assert!(p["latency_us"].is_null(), "{p:#}");
    }
    lat
}

/// The job verdict on the same boot's two-node "job" (scripts/guest/job-agents.sh): node01's
/// agent on rxe_a, node02's on rxe_b, each judging its checks against its own host baseline,
/// the pair judged against the baseline the collector recorded, and `hostping job --probe`
/// asked in three windows: healthy, `netem loss` on veth_a (node01's end), and node01's
/// agent starved in a CPU cgroup.
#[test]
#[ignore = "boots a QEMU guest (a minute or two); ./test.sh runs it"]
fn job_verdict_on_soft_roce() {
    let dir = guest_results();
    assert_eq!(status(&dir, "mesh"), 0, "{}", read(&dir, "mesh.err"));
    assert_eq!(status(&dir, "job"), 0, "{}", read(&dir, "job.err"));
    println!("job time: {}", read(&dir, "job-time.txt").trim());
    for node in ["node01", "node02"] {
        let step = format!("job-baseline-{node}");
        assert_eq!(
            status(&dir, &step),
            0,
            "{}",
            read(&dir, &format!("{step}.err"))
        );
    }
    // The healthy pair recorded as its own baseline: measured, not judged (exit 3).
    let recorded = json(&dir, "job-record");
    assert_eq!(status(&dir, "job-record"), 3, "{recorded:#}");
    assert_eq!(recorded["baselines_recorded"], 1, "{recorded:#}");
    assert_eq!(recorded["pairs"][0]["baseline"], "recorded", "{recorded:#}");

    // Every window's figures first, so that one wrong verdict shows the others too.
    for name in ["healthy", "loss", "host"] {
        let report = json(&dir, &format!("job-{name}"));
        let pair = &report["pairs"][0];
        println!(
            "job {name}: {} ({}); pair {} latency {} us, host A {} us, host B {} us, \
             network {} us, {} Gb/s: {}",
            report["verdict"],
            report["summary"],
            pair["status"],
            pair["latency_us"],
            pair["host_a_us"],
            pair["host_b_us"],
            pair["network_us"],
            pair["bandwidth_gbps"],
            pair["reason"]
        );
    }
    let window = |name: &str, exit: i32, verdict: &str| -> Value {
        let step = format!("job-{name}");
        let report = json(&dir, &step);
        let pair = &report["pairs"][0];
        assert_eq!(report["simulated"], false, "{report:#}");
        assert_eq!(report["verdict"], verdict, "{step}: {report:#}");
        assert_eq!(
            status(&dir, &step),
            exit,
            "{step}: {}\n{report:#}",
            read(&dir, &format!("{step}.err"))
        );
        // Without a fabric the pair crosses its RNICs' own cables, named by their hosts.
        assert_eq!(
            pair["cables"],
            serde_json::json!(["node01/rxe_a", "node02/rxe_b"]),
            "{report:#}"
        );
        report
    };

    // Healthy: both hosts within their baselines, and the pair's network part within its
    // own. A host part of the pair is a loopback measured beside the probe: under TCG it
    // wanders by half its value at times (54 us against a 36 us baseline, on a machine
    // running the guest at half speed), and the verdict sets such a pair aside as host
    // noise, which is what the window is for: no culprit, nothing unjudged.
    let healthy = window("healthy", 0, "neither");
    assert_eq!(
        healthy["pairs"][0]["network_status"], "normal",
        "{healthy:#}"
    );
    assert!(
        healthy["culprits"].as_array().unwrap().is_empty(),
        "{healthy:#}"
    );
    assert!(
        healthy["not_judged"].as_array().unwrap().is_empty(),
        "{healthy:#}"
    );

    // Loss on veth_a: the network, node01's cable first; node02's stays a candidate.
    let loss = window("loss", 1, "network");
    let top = &loss["culprits"][0];
    assert_eq!(top["layer"], "fabric", "{loss:#}");
    assert_eq!(top["component"], "node01/rxe_a", "{loss:#}");
    assert_eq!(
        top["candidates"],
        serde_json::json!(["node01/rxe_a", "node02/rxe_b"]),
        "{loss:#}"
    );
    assert!(
        top["evidence"]
            .as_str()
            .unwrap()
            .contains("packets from node01 to node02 were lost"),
        "{loss:#}"
    );
    assert_eq!(loss["pairs"][0]["network_status"], "abnormal", "{loss:#}");

    // node01 starved: the host, named first; the pair's slowness is its noise, not the
    // network's. A window whose node01 check did not see the starvation measured no starved
    // host and is run again (job-agents.sh, `unfelt`). node02 shares the guest's two vCPUs with the starved agent's cgroup, and
    // its own check once found a path abnormal in this window (a fresh-clone run of
    // 2026-11-30; alone it passed): named, it must come after node01.
    let host = window("host", 1, "host");
    let culprits = host["culprits"].as_array().unwrap();
    assert_eq!(culprits[0]["host"], "node01", "{host:#}");
    assert!(culprits.iter().all(|c| c["layer"] != "fabric"), "{host:#}");
    let score = |c: &Value| c["score"].as_f64().unwrap();
    for c in culprits.iter().filter(|c| c["host"] == "node02") {
        println!("job host: node02 named too, by its own check: {c}");
        assert!(score(c) <= score(&culprits[0]), "{host:#}");
    }
}
