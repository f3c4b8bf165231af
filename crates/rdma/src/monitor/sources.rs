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

impl HostMonitor {
    /// Each RNIC's IOTLB over the interval, or why it is not counted; counts of a whole
    /// unit (a PMU that cannot filter by requester) are marked so, since they include
    /// every other device behind the unit.
    pub(super) fn iotlb_source(&self, prev: &Sample, cur: &Sample) -> SourceReport {
        let mut readings = BTreeMap::new();
        let mut gaps = Vec::new();
        for (id, m) in &self.iotlb {
            if let Err(why) = m {
                gaps.push(why.to_string());
                continue;
            }
            let read = prev.iotlb.get(id).zip(cur.iotlb.get(id));
            match read {
                Some((Ok(p), Ok(c))) => match c.since(p) {
                    Some(r) => {
                        if !r.per_device {
                            gaps.push(format!(
                                "IOTLB of {id}: the counts are its IOMMU unit's, every device \
                                 behind the unit included (the PMU cannot filter by requester)"
                            ));
                        }
                        readings.insert(id.to_string(), serde_json::json!(r));
                    }
                    None => gaps.push(format!("IOTLB of {id}: a counter did not run")),
                },
                Some((Err(e), _)) | Some((_, Err(e))) => {
                    gaps.push(format!("IOTLB of {id}: {e}"));
                }
                None => gaps.push(format!("IOTLB of {id}: no reading yet")),
            }
        }
        if readings.is_empty() {
            return SourceReport::unavailable(
                "iotlb",
                if gaps.is_empty() {
                    "no RNIC".to_string()
                } else {
                    gaps.join("; ")
                },
            );
        }
        let mut report = SourceReport::ok("iotlb", readings);
        report.detail = (!gaps.is_empty()).then(|| gaps.join("; "));
        report
    }

    /// The transport counters' gaps (the values are in the monitor view).
    pub(super) fn transport_source(&self, cur: &Sample) -> SourceReport {
        let gaps = self.transport_gaps(cur);
        if gaps.len() == self.discovery.bindings.rnics.len() {
            let why = if gaps.is_empty() {
                "no RNIC".to_string()
            } else {
                gaps.join("; ")
            };
            return SourceReport::unavailable("transport", why);
        }
        let mut report = SourceReport::ok("transport", super::transport::TRANSPORT_COUNTERS);
        report.detail = (!gaps.is_empty()).then(|| gaps.join("; "));
        report
    }

    /// Why memory bandwidth has no total or no RNIC share (the values are in the monitor
    /// view).
    pub(super) fn membw_source(&self, monitor: &model::HostSnapshot) -> SourceReport {
        if monitor.memory.is_empty() {
            return SourceReport::unavailable("memory bandwidth", "no memory node in the model");
        }
        if monitor.memory.iter().all(|m| m.total_gbps.is_none()) {
            let why = match &self.uncore {
                Err(u) => format!("no IMC counts: {}", u.reason),
                Ok(_) => "no IMC counts in this interval (a counter did not run)".into(),
            };
            return SourceReport::unavailable("memory bandwidth", why);
        }
        let mut gaps: Vec<String> = Vec::new();
        for m in &monitor.memory {
            if m.total_gbps.is_none() {
                gaps.push(format!("{}: IMC reads or writes not counted", m.node));
            }
            if m.rnic_dma_gbps.is_none() {
                gaps.push(format!(
                    "{}: an RNIC local to it has no data counters",
                    m.node
                ));
            }
        }
        let mut report = SourceReport::ok("memory bandwidth", &monitor.memory);
        report.detail = (!gaps.is_empty()).then(|| gaps.join("; "));
        report
    }
}
