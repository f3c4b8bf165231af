//! One reading of the sources that change, and the pair of readings a rate needs.

use super::{is_live, HostMonitor, WINDOW};
use crate::counters::{ethtool, iotlb, nvml, rnic, uncore};
use crate::sysfs;
use std::collections::BTreeMap;
use std::time::Instant;

/// One reading of the sources that change.
pub(super) struct Sample {
    pub(super) at: Instant,
    pub(super) ports: Vec<rnic::PortCounters>,
    pub(super) port_errors: Vec<String>,
    /// Per netdev.
    pub(super) ethtool: BTreeMap<String, Result<ethtool::PauseDrops, ethtool::EthtoolError>>,
    pub(super) gpus: Vec<Result<nvml::GpuReading, nvml::NvmlError>>,
    pub(super) uncore: Option<std::io::Result<uncore::UncoreSample>>,
    /// Per RNIC whose IOTLB counters are open.
    pub(super) iotlb: BTreeMap<model::ComponentId, std::io::Result<iotlb::IotlbSample>>,
}

impl HostMonitor {
    /// The RoCE netdevs whose ethtool statistics carry pause and drops.
    fn netdevs(ports: &[rnic::PortCounters]) -> Vec<String> {
        let mut out: Vec<String> = ports
            .iter()
            .filter(|p| p.link_layer == sysfs::LinkLayer::Ethernet)
            .filter_map(|p| p.netdev.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn sample(&self, throughput: nvml::Throughput) -> Sample {
        let mut s = self.sample_at(Instant::now());
        s.gpus = match &self.nvml {
            Ok(n) => n.read_all(throughput).unwrap_or_else(|e| vec![Err(e)]),
            Err(_) => Vec::new(),
        };
        s
    }

    /// A reading of everything but NVML, stamped `at`.
    pub(super) fn sample_at(&self, at: Instant) -> Sample {
        let (ports, errors) = rnic::read_ports_lenient(&self.root);
        let ethtool = if is_live(&self.root) {
            Self::netdevs(&ports)
                .into_iter()
                .map(|n| {
                    let stats =
                        ethtool::read_stats(&n).map(|s| ethtool::PauseDrops::from_stats(&s));
                    (n, stats)
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        let uncore = self.uncore.as_ref().ok().map(|u| u.read());
        let iotlb = self
            .iotlb
            .iter()
            .filter_map(|(id, m)| Some((id.clone(), m.as_ref().ok()?.read())))
            .collect();
        Sample {
            at,
            ports,
            port_errors: errors.iter().map(|e| e.to_string()).collect(),
            ethtool,
            gpus: Vec::new(),
            uncore,
            iotlb,
        }
    }

    /// A new sample, with the previous one (taken [`WINDOW`] ago when there was none).
    pub(super) fn advance(&mut self, throughput: nvml::Throughput) -> (Sample, Sample) {
        let prev = match self.prev.take() {
            Some(p) => p,
            None => {
                let first = self.sample(nvml::Throughput::Skip);
                std::thread::sleep(WINDOW);
                first
            }
        };
        let cur = self.sample(throughput);
        (prev, cur)
    }
}

impl HostMonitor {
    /// The readings of an RNIC's port in both samples.
    pub(super) fn port_pair<'s>(
        &self,
        prev: &'s Sample,
        cur: &'s Sample,
        id: &model::ComponentId,
    ) -> Option<(&'s rnic::PortCounters, &'s rnic::PortCounters)> {
        let (_, b) = self
            .discovery
            .bindings
            .rnics
            .iter()
            .find(|(r, _)| r == id)?;
        let find = |s: &'s Sample| {
            s.ports
                .iter()
                .find(|p| p.device == b.device && p.port == b.port)
        };
        Some((find(prev)?, find(cur)?))
    }
}
