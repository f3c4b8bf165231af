//! One reading of the sources that change, and the pair of readings a rate needs.

use super::{is_live, HostMonitor, WINDOW};
use crate::counters::{ethtool, nvml, rnic, uncore};
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
        let gpus = match &self.nvml {
            Ok(n) => n.read_all(throughput).unwrap_or_else(|e| vec![Err(e)]),
            Err(_) => Vec::new(),
        };
        let uncore = self.uncore.as_ref().ok().map(|u| u.read());
        Sample {
            at: Instant::now(),
            ports,
            port_errors: errors.iter().map(|e| e.to_string()).collect(),
            ethtool,
            gpus,
            uncore,
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
