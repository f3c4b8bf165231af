//! Other tools' topology files as host models through the binary (issue 38, section 4):
//! `check --sim FILE` and a cluster file's `model`, on the real files of
//! `crates/model/testdata/hosts` (provenance in its README).

mod common;

use common::{hostping, stderr, stdout, temp_dir};
use serde_json::Value;

fn fixture(name: &str) -> String {
    format!(
        "{}/../model/testdata/hosts/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn check_sim_runs_the_simulated_check_on_an_nccl_topology_dump() {
    let file = fixture("nccl-ibm-h100-vsi-topo.xml");
    let o = hostping(&["check", "--sim", &file, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["healthy"], true);
    // 8 RNICs x (2 memory nodes + 8 GPUs), with the switches the dump holds.
    assert_eq!(v["paths"].as_array().unwrap().len(), 80);
    let links: Vec<&str> = v["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["id"].as_str())
        .collect();
    for id in ["rnic0--sw7", "gpu7--sw7", "sw7--cpu1", "cpu0--cpu1"] {
        assert!(links.contains(&id), "{id} missing from {links:?}");
    }
}

#[test]
fn check_sim_on_azure_ndv4_turns_each_gpu_nic_pair_around_at_its_virtual_switch() {
    // Each ffff:ff bridge is the switch its two GPUs and two RNICs share (issue 38
    // section 4): GPUDirect between them never reaches the CPU.
    let file = fixture("nccl-azure-ndv4-topo.xml");
    let o = hostping(&["check", "--sim", &file, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["healthy"], true);
    let links: Vec<&str> = v["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["id"].as_str())
        .collect();
    for id in [
        "rnic0--sw1",
        "gpu0--sw1",
        "sw1--cpu1",
        "rnic2--sw0",
        "gpu2--sw0",
    ] {
        assert!(links.contains(&id), "{id} missing from {links:?}");
    }
}

#[test]
fn check_sim_finds_a_fault_injected_on_an_hwloc_host() {
    let file = fixture("hwloc-32em64t-2n8c2t-pci-wholeio.xml");
    let o = hostping(&[
        "check",
        "--sim",
        &file,
        "--inject",
        "degrade:rnic0--cpu1:0.3",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = v["diagnoses"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["cause"], "link_failure");
    assert_eq!(d[0]["links"], serde_json::json!(["rnic0--cpu1"]));
}

#[test]
fn a_topology_without_an_rnic_is_refused_in_one_line_naming_the_file() {
    let file = fixture("hwloc-nvidia-dgx2.xml");
    let o = hostping(&["check", "--sim", &file]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("hwloc-nvidia-dgx2.xml: rnic: "), "{err}");
    assert!(err.contains("names no RDMA NIC"), "{err}");
}

#[test]
fn a_cluster_file_names_an_nccl_dump_as_its_host_model() {
    let dir = temp_dir("host-files-cluster");
    std::fs::copy(fixture("nccl-ibm-h100-vsi-topo.xml"), dir.join("vsi.xml")).unwrap();
    let cluster = dir.join("lab.toml");
    std::fs::write(
        &cluster,
        "name = \"vsi\"\n[[hosts]]\nnames = \"vsi[1-4]\"\nmodel = \"vsi.xml\"\n[fabric]\nradix = 16\n",
    )
    .unwrap();
    let o = hostping(&[
        "mesh",
        "--sim-cluster",
        cluster.to_str().unwrap(),
        "--endpoint",
        "memory",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("mesh of vsi: 4 hosts"), "{out}");
    assert!(out.contains("every pair normal"), "{out}");
    // The dump's 8 ConnectX-7 ports are every host's RNICs.
    assert!(out.contains("vsi1/rnic0") && out.contains("rnic7"), "{out}");
}
