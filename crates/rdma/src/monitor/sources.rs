//! Each source as `hostping counters` reports it: read, unavailable with the reason, or
//! failed with what was read kept.

use super::sample::Sample;
use super::{is_live, HostMonitor};
use crate::counters::{ethtool, pcie, uncore};
use crate::sysfs::PciAddr;
use model::SourceReport;
use std::collections::BTreeMap;

impl HostMonitor {
    pub(super) fn rnic_source(&self, cur: &Sample) -> SourceReport {
        let report = if cur.ports.is_empty() && cur.port_errors.is_empty() {
            SourceReport::unavailable(
                "rnic",
                format!(
                    "no RDMA device found: {} has no devices",
                    self.root.path("sys/class/infiniband").display()
                ),
            )
        } else {
            SourceReport::ok("rnic", &cur.ports)
        };
        if cur.port_errors.is_empty() {
            report
        } else {
            report.failed(cur.port_errors.join("; "))
        }
    }

    pub(super) fn ethtool_source(&self, cur: &Sample) -> SourceReport {
        if !is_live(&self.root) {
            return SourceReport::unavailable(
                "ethtool",
                "ethtool statistics come from the running kernel, not from a captured tree",
            );
        }
        if cur.ethtool.is_empty() {
            return SourceReport::unavailable(
                "ethtool",
                "no RoCE netdev to read pause and drops from",
            );
        }
        let readings: BTreeMap<&String, serde_json::Value> = cur
            .ethtool
            .iter()
            .map(|(n, r)| {
                let v = match r {
                    Ok(p) => serde_json::to_value(p).expect("serialises"),
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                };
                (n, v)
            })
            .collect();
        let report = SourceReport::ok("ethtool", readings);
        let failed: Vec<String> = cur
            .ethtool
            .values()
            .filter_map(|r| r.as_ref().err())
            .filter(|e| !matches!(e, ethtool::EthtoolError::NoStatistics { .. }))
            .map(|e| e.to_string())
            .collect();
        if failed.is_empty() {
            report
        } else {
            report.failed(failed.join("; "))
        }
    }

    /// The PCI functions on every RNIC and GPU path, root port first.
    pub(super) fn pcie_functions(&self) -> Vec<PciAddr> {
        let mut devices: Vec<PciAddr> = self
            .discovery
            .rdma_ports
            .iter()
            .filter(|p| !p.software)
            .filter_map(|p| p.pci)
            .chain(self.discovery.gpus.iter().map(|g| g.pci))
            .collect();
        devices.sort();
        devices.dedup();
        devices
    }

    pub(super) fn pcie_source(&self) -> SourceReport {
        let devices = self.pcie_functions();
        if devices.is_empty() {
            return SourceReport::unavailable("pcie", "no RNIC or GPU on a PCIe link");
        }
        let mut paths = BTreeMap::new();
        let mut errors = Vec::new();
        for d in devices {
            match pcie::read_path(&self.root, d) {
                Ok(p) => {
                    paths.insert(d.to_string(), p);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        let report = SourceReport::ok("pcie", &paths);
        if errors.is_empty() {
            report
        } else {
            report.failed(errors.join("; "))
        }
    }

    pub(super) fn gpu_source(&self, cur: &Sample) -> SourceReport {
        match &self.nvml {
            Err(why) => SourceReport::unavailable("gpu", why.to_string()),
            Ok(_) => {
                let readings: Vec<serde_json::Value> = cur
                    .gpus
                    .iter()
                    .map(|g| match g {
                        Ok(r) => serde_json::to_value(r).expect("serialises"),
                        Err(e) => serde_json::json!({ "error": e.to_string() }),
                    })
                    .collect();
                SourceReport::ok("gpu", readings)
            }
        }
    }

    pub(super) fn uncore_source(&self, prev: &Sample, cur: &Sample) -> SourceReport {
        let monitor = match &self.uncore {
            Err(why) => return SourceReport::unavailable("uncore", why.reason.clone()),
            Ok(m) => m,
        };
        let dt = cur.at.duration_since(prev.at).as_secs_f64();
        match (&prev.uncore, &cur.uncore) {
            (Some(Ok(p)), Some(Ok(c))) => {
                let mut report = SourceReport::ok("uncore", uncore::rates(p, c, dt));
                let gaps: Vec<String> = monitor.gaps().iter().map(|g| g.to_string()).collect();
                if !gaps.is_empty() {
                    report.detail = Some(gaps.join("; "));
                }
                report
            }
            (_, Some(Err(e))) | (Some(Err(e)), _) => {
                SourceReport::ok("uncore", serde_json::Value::Null).failed(e.to_string())
            }
            _ => SourceReport::unavailable("uncore", "no reading yet"),
        }
    }
}
