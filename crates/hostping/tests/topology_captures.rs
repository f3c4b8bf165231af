//! `hostping topology --sysfs-root` on real machines' sysfs (rdma's
//! `testdata/captures/`, sources in its SOURCES.md): what a user sees of the sockets,
//! memory nodes, inter-socket links and the devices discovery skipped.

mod common;

use common::{hostping, stderr, stdout, temp_dir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rdma/testdata/captures")
        .join(name)
}

#[test]
fn an_amd_capture_shows_four_sockets_of_two_nodes_in_a_full_mesh() {
    let dir = temp_dir("topology-48amd64");
    let status = Command::new("tar")
        .arg("-xjf")
        .arg(capture("48amd64-4pa2n6c-sparse.tar.bz2"))
        .arg("-C")
        .arg(&dir)
        .status()
        .expect("tar runs");
    assert!(status.success());
    let root = dir.join("48amd64-4d2n6c-sparse");
    let o = hostping(&[
        "topology",
        "--sysfs-root",
        root.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["sockets"],
        json!({
            "sockets": [
                {"package": 0, "memory_nodes": [0, 1]},
                {"package": 1, "memory_nodes": [2, 33]},
                {"package": 2, "memory_nodes": [34, 45]},
                {"package": 3, "memory_nodes": [72, 73]},
            ],
            "links": [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]],
        })
    );
    assert_eq!(v["virtual_machine"], false);
    assert_eq!(
        v["numa_nodes"][3]["distance"],
        json!([22, 16, 16, 10, 16, 16, 22, 22])
    );
    assert_eq!(v["host"], Value::Null);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_xeon_phi_host_shows_its_sockets_and_the_skipped_scif0() {
    let root = capture("32em64t-2n8c+1mic");
    let o = hostping(&["topology", "--sysfs-root", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for line in [
        "sockets (2)",
        "  cpu0     memory node0",
        "  cpu1     memory node1",
        "  inter-socket links: cpu0--cpu1",
        "  - scif0 in sys/class/infiniband has no ports folder (not an RDMA port device: a Xeon Phi's scif0 registers there): skipped",
    ] {
        assert!(text.lines().any(|l| l == line), "`{line}` missing from:\n{text}");
    }
}
