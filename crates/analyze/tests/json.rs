//! The report's JSON shape is the DESIGN 4.3 contract: these names never change.

mod common;

use common::*;
use model::{Cause, Mode};
use serde_json::Value;

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(|k| k.as_str()).collect()
}

fn has_all(v: &Value, want: &[&str]) {
    let got = keys(v);
    for k in want {
        assert!(got.contains(k), "missing `{k}` in {got:?}");
    }
}

#[test]
fn report_has_the_design_4_3_keys() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, (_, lat)| {
        (r == "rnic2" && e == "gpu4").then_some((120.0, lat))
    });
    let report = m.quick();
    let v = serde_json::to_value(&report).unwrap();
    has_all(
        &v,
        &["host", "mode", "healthy", "paths", "links", "diagnoses"],
    );
    assert_eq!(v["host"], "dgx-a100");
    assert_eq!(v["mode"], "idle");
    assert_eq!(v["healthy"], false);

    let paths = v["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 40);
    for p in paths {
        has_all(
            p,
            &[
                "rnic",
                "endpoint",
                "latency_us",
                "bandwidth_gbps",
                "baseline_latency_us",
                "baseline_bandwidth_gbps",
                "status",
            ],
        );
    }
    let p = paths
        .iter()
        .find(|p| p["rnic"] == "rnic2" && p["endpoint"] == "gpu4")
        .unwrap();
    assert_eq!(p["status"], "abnormal");
    assert_eq!(p["bandwidth_gbps"], 120.0);
    assert_eq!(p["baseline_bandwidth_gbps"], 199.0);
    assert!(paths.iter().any(|p| p["status"] == "uncertain"));
    assert!(paths.iter().any(|p| p["status"] == "normal"));

    let links = v["links"].as_array().unwrap();
    assert_eq!(links.len(), 27);
    for l in links {
        has_all(l, &["id", "kind", "status", "abnormal_cnt"]);
    }
    let l = links.iter().find(|l| l["id"] == "gpu4--lsw4").unwrap();
    assert_eq!(l["kind"], "gpu_pcie");
    assert_eq!(l["status"], "abnormal");
    assert_eq!(l["abnormal_cnt"], 1);

    let d = &v["diagnoses"][0];
    has_all(d, &["cause", "links", "rnic", "evidence"]);
    assert_eq!(d["cause"], "link_failure");
    assert_eq!(d["links"], serde_json::json!(["gpu4--lsw4"]));
    assert_eq!(d["rnic"], Value::Null);
    assert!(d["evidence"].as_str().unwrap().contains("gpu4"));
}

#[test]
fn misconfiguration_names_its_setting_and_rnic() {
    let m = Matrix::with("dgx-a100", Mode::Idle, |r, e, _| {
        (r == "rnic0" && (e == "gpu0" || e == "gpu1")).then_some((125.0, 2.2))
    });
    let v = serde_json::to_value(m.quick()).unwrap();
    let d = &v["diagnoses"][0];
    assert_eq!(d["cause"], "pcie_misconfiguration");
    assert_eq!(d["setting"], "ats_off");
    assert_eq!(d["rnic"], "rnic0");
}

#[test]
fn cause_strings_are_snake_case() {
    let all = [
        (Cause::LinkFailure, "link_failure"),
        (Cause::LinkFlapping, "link_flapping"),
        (Cause::LinkOverloaded, "link_overloaded"),
        (Cause::PcieMisconfiguration, "pcie_misconfiguration"),
        (Cause::RnicMisconfiguration, "rnic_misconfiguration"),
        (Cause::IommuCongestion, "iommu_congestion"),
        (Cause::MemoryBusCongestion, "memory_bus_congestion"),
        (Cause::OdpStall, "odp_stall"),
    ];
    for (cause, name) in all {
        assert_eq!(serde_json::to_value(cause).unwrap(), name);
        assert_eq!(cause.as_str(), name);
    }
}

#[test]
fn a_healthy_report_is_healthy_with_no_diagnoses() {
    let v = serde_json::to_value(Matrix::with("single-socket", Mode::Idle, |_, _, _| None).quick())
        .unwrap();
    assert_eq!(v["healthy"], true);
    assert_eq!(v["diagnoses"], serde_json::json!([]));
    assert_eq!(v["host"], "single-socket");
}
