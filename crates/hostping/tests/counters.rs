//! `hostping counters` and `hostping lint` through the binary: fixture trees, this
//! machine's real /sys (no RDMA), the virtual host, and a source that fails.

mod common;

use common::{hostping, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> String {
    format!(
        "{}/../rdma/testdata/hosts/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn status_of<'a>(report: &'a Value, source: &str) -> &'a str {
    report["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == source)
        .unwrap_or_else(|| panic!("no {source}: {report:#}"))["status"]
        .as_str()
        .unwrap()
}

#[test]
fn lint_finds_each_risk_planted_in_the_dgx_fixture() {
    let o = hostping(&[
        "lint",
        "--sysfs-root",
        &fixture("dgx-a100"),
        "--format",
        "json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let found: Vec<(String, String)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().into(),
                f["subject"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("acs_redirect", "sw4"),
        ("ats_off", "rnic3"),
        ("downtrained_link", "gpu5--sw8"),
        ("iommu_without_hugepages", "iommu"),
        // DMA-FQ groups with no huge page reserved and THP `never`: 4 KiB IOMMU pages.
        ("iommu_4k_pages", "rnic0"),
        ("iommu_4k_pages", "rnic1"),
        ("iommu_4k_pages", "rnic2"),
        ("iommu_4k_pages", "rnic3"),
    ];
    assert_eq!(found, want.map(|(a, b)| (a.to_string(), b.to_string())));
    let acs = &v["findings"][0];
    assert!(
        acs["detail"].as_str().unwrap().contains("0000:34:00.0"),
        "{acs:#}"
    );
    assert!(
        acs["detail"].as_str().unwrap().contains("rnic1-gpu2"),
        "{acs:#}"
    );
    assert_eq!(acs["source"], "Hostping 2.1, 3.2.2, 6 #7");
    assert!(!acs["why"].as_str().unwrap().is_empty());
}

#[test]
fn lint_on_a_virtual_host_follows_its_faults() {
    let o = hostping(&["lint", "--sim", "dgx-a100"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no risky configuration found"));
    let o = hostping(&[
        "lint",
        "--sim",
        "dgx-a100",
        "--inject",
        "acs:lsw2",
        "--inject",
        "ats-off:rnic0",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["provenance"], "simulated");
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["acs_redirect", "ats_off"]);
    // Faults that are not configuration do not show.
    let o = hostping(&[
        "lint",
        "--sim",
        "dgx-a100",
        "--inject",
        "degrade:gpu4--lsw4:0.5",
    ]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn counters_of_the_dgx_fixture_map_to_the_model() {
    let o = hostping(&[
        "counters",
        "--sysfs-root",
        &fixture("dgx-a100"),
        "--format",
        "json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    assert_eq!(v["provenance"], "measured");
    for (source, status) in [
        ("rnic", "ok"),
        ("pcie", "ok"),
        ("memory", "ok"),
        ("ethtool", "unavailable"),
        ("gpu", "unavailable"),
        ("uncore", "unavailable"),
    ] {
        assert_eq!(status_of(&v, source), status, "{source}");
    }
    assert_eq!(v["monitor"]["rnics"].as_array().unwrap().len(), 4);
    // 12 switch links, 8 GPU links, 4 RNIC links.
    assert_eq!(v["config"]["links"].as_array().unwrap().len(), 24);
    assert_eq!(v["config"]["iommu"]["translated"], true);
    assert_eq!(v["config"]["iommu"]["mode"], "DMA-FQ");
    // The interconnect facts: what a captured tree has is filled, the rest is said.
    for (source, status) in [
        ("iotlb", "unavailable"),
        ("transport", "ok"),
        ("memory bandwidth", "unavailable"),
        ("odp", "unavailable"),
    ] {
        assert_eq!(status_of(&v, source), status, "{source}");
    }
    let iommu = &v["monitor"]["iommu"][0];
    assert_eq!(iommu["rnic"], "rnic0");
    assert_eq!(
        (&iommu["translated"], &iommu["page_bytes"]),
        (&Value::from(true), &Value::from(4096))
    );
    assert!(
        iommu["iotlb_lookups"].is_null(),
        "absent is not zero: {iommu:#}"
    );
    let groups = v["config"]["iommu_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4);
    assert_eq!(groups[1]["kind"], "DMA-FQ");
    // Two readings of an unchanging tree: counted, and nothing moved.
    let transport = &v["monitor"]["transport"][1];
    assert_eq!(transport["rnic"], "rnic1");
    assert_eq!(transport["local_ack_timeout_err"], 0);
    assert_eq!(transport["packet_seq_err"], 0);
    // No IMC counts from a captured tree: each node has its capacity, no total.
    let mem0 = &v["monitor"]["memory"][0];
    assert_eq!(mem0["node"], "mem0");
    assert!(mem0["total_gbps"].is_null(), "{mem0:#}");
    assert_eq!(v["config"]["transport_timeouts"][3]["floor_ms"], 500.0);
    let table = hostping(&["counters", "--sysfs-root", &fixture("dgx-a100")]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("24 PCIe links read (1 downtrained)"),
        "{text}"
    );
    assert!(text.contains("IOMMU per RNIC:"), "{text}");
    assert!(text.contains("rnic0          15 DMA-FQ"), "{text}");
    assert!(text.contains("transport errors:"), "{text}");
    assert!(text.contains("memory bandwidth:"), "{text}");
    assert!(
        text.contains("rnic2 transport timeout floor 500 ms"),
        "{text}"
    );
}

#[test]
fn counters_on_this_machine_say_there_is_no_rdma_and_read_the_rest() {
    let o = hostping(&["counters", "--format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    assert_eq!(status_of(&v, "rnic"), "unavailable");
    let rnic = v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "rnic")
        .unwrap();
    assert!(rnic["detail"]
        .as_str()
        .unwrap()
        .contains("no RDMA device found"));
    assert_eq!(status_of(&v, "memory"), "ok");
    assert!(v["host"].is_null());
}

#[test]
fn counters_of_the_captured_rxe_guest_show_rxe_hw_counters() {
    let o = hostping(&[
        "counters",
        "--sysfs-root",
        &fixture("rxe-guest"),
        "--format",
        "json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let rnic = v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "rnic")
        .unwrap();
    let port = &rnic["readings"][0];
    assert_eq!(port["device"], "rxe0");
    assert!(port["hw_counters"]["sent_pkts"].is_u64(), "{port:#}");
    // rxe has no PMA counters: no throughput, rather than a made-up zero.
    assert!(v["monitor"]["rnics"][0]["throughput_gbps"].is_null());
    // rxe counts duplicate requests but names its other transport counters its own way.
    let t = &v["monitor"]["transport"][0];
    assert_eq!(t["duplicate_request"], 0);
    assert!(t["local_ack_timeout_err"].is_null(), "{t:#}");
    let unavailable = v["config"]["unavailable"].as_array().unwrap();
    assert!(
        unavailable
            .iter()
            .any(|u| u == "transport timeout floor of rnic0: not known for a software RNIC"),
        "{unavailable:?}"
    );
}

fn copy_tree(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn a_failing_source_is_named_after_everything_else_is_printed() {
    let dir = temp_dir("counters-failing-source");
    let tree: PathBuf = dir.join("rxe-guest");
    copy_tree(Path::new(&fixture("rxe-guest")), &tree);
    // A counter that cannot be read (a folder where the kernel has a file: EISDIR, which
    // root cannot read either).
    let file = tree.join("sys/devices/virtual/infiniband/rxe0/ports/1/hw_counters/sent_pkts");
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let o = hostping(&[
        "counters",
        "--sysfs-root",
        tree.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sent_pkts") && err.starts_with("hostping: error: rnic:"),
        "{err}"
    );
    let v = json(&o);
    assert_eq!(status_of(&v, "rnic"), "error");
    assert_eq!(
        status_of(&v, "memory"),
        "ok",
        "the other sources are still read"
    );
}

#[test]
fn virtual_counters_come_from_the_virtual_host() {
    let o = hostping(&[
        "counters",
        "--sim",
        "dgx-a100",
        "--inject",
        "service:rnic0:250",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["provenance"], "simulated");
    let pause = v["monitor"]["rnics"][0]["tx_pause_ratio"].as_f64().unwrap();
    assert!((pause - 0.2).abs() < 1e-6, "{pause}");
    let text =
        String::from_utf8_lossy(&hostping(&["counters", "--sim", "dgx-a100"]).stdout).into_owned();
    assert!(text.contains("SIMULATED"), "{text}");
}
