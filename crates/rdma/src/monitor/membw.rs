//! Each memory node's bandwidth from the uncore IMC counters, split into the DMA of the RNICs
//! local to the node (their port data counters: received data is written to memory, sent
//! data read from it) and the rest, the cores' (HotNets'22 3.2: the cores win the larger
//! share of a congested memory bus).

use super::HostMonitor;
use crate::counters::uncore;
use model::{ComponentId, HostTopology, LinkKind, MemoryBandwidth};
use std::collections::BTreeMap;

impl HostMonitor {
    /// The bandwidth of every memory node of `host`: the IMC total where both its read and
    /// write rates were counted, and the RNIC share where every RNIC local to the node has
    /// a DMA rate (`rnic_dma_gbps`, receive plus transmit, Gb/s; one unknown RNIC makes the
    /// share unknown: absent is not zero).
    pub(super) fn memory_bandwidth(
        &self,
        host: &HostTopology,
        rates: Option<&[uncore::BusRate]>,
        rnic_dma_gbps: &BTreeMap<ComponentId, Option<f64>>,
    ) -> Vec<MemoryBandwidth> {
        let channels = host
            .links()
            .iter()
            .filter(|l| l.kind == LinkKind::MemoryChannel);
        channels
            .map(|channel| {
                let cpu = &channel.up;
                let mut total = rates.map(|_| (None, None));
                for r in rates.unwrap_or_default() {
                    let (socket, is_read) = match r.metric {
                        uncore::BusMetric::MemoryRead { socket } => (socket, true),
                        uncore::BusMetric::MemoryWrite { socket } => (socket, false),
                        _ => continue,
                    };
                    if self.discovery.bindings.cpu(socket) != Some(cpu) {
                        continue;
                    }
                    let gbps = r.bytes_per_s.map(|b| b * 8.0 / 1e9);
                    if let Some((read, write)) = total.as_mut() {
                        *(if is_read { read } else { write }) = Some(gbps);
                    }
                }
                let total_gbps = total.and_then(|(r, w)| Some(r.flatten()? + w.flatten()?));
                let local: Vec<&Option<f64>> = rnic_dma_gbps
                    .iter()
                    .filter(|(rnic, _)| rnic_cpu(host, rnic) == Some(cpu))
                    .map(|(_, g)| g)
                    .collect();
                let rnic_dma = local.iter().try_fold(0.0, |sum, g| Some(sum + (**g)?));
                MemoryBandwidth {
                    node: channel.down.clone(),
                    capacity_gbps: Some(channel.capacity_gbps),
                    total_gbps,
                    rnic_dma_gbps: rnic_dma,
                }
            })
            .collect()
    }
}

/// The CPU whose root complex an RNIC hangs off (its DMA goes to that socket's memory).
fn rnic_cpu<'h>(host: &'h HostTopology, rnic: &ComponentId) -> Option<&'h ComponentId> {
    let top = host.links_to_cpu(rnic).last().cloned()?;
    Some(&host.link(&top)?.up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::dgx_fixture as dgx;
    use uncore::{BusMetric, BusRate};

    fn rate(metric: BusMetric, gbytes: Option<f64>) -> BusRate {
        BusRate {
            metric,
            bytes_per_s: gbytes.map(|g| g * 1e9),
        }
    }

    #[test]
    fn memory_bandwidth_is_split_into_local_rnic_dma_and_the_cores() {
        let m = dgx();
        let host = m.host().unwrap().clone();
        let rates = [
            rate(BusMetric::MemoryRead { socket: 0 }, Some(120.0)),
            rate(BusMetric::MemoryWrite { socket: 0 }, Some(60.0)),
            rate(BusMetric::MemoryRead { socket: 1 }, Some(10.0)),
            rate(BusMetric::MemoryWrite { socket: 1 }, None),
        ];
        // rnic0 and rnic1 hang off socket 0, rnic2 and rnic3 off socket 1 (README).
        let dma: BTreeMap<ComponentId, Option<f64>> = [
            ("rnic0", Some(190.0)),
            ("rnic1", Some(10.0)),
            ("rnic2", Some(5.0)),
            ("rnic3", None),
        ]
        .into_iter()
        .map(|(id, g)| (ComponentId::new(id), g))
        .collect();
        let got = m.memory_bandwidth(&host, Some(&rates), &dma);
        let mem0 = got.iter().find(|b| b.node.as_str() == "mem0").unwrap();
        assert_eq!(mem0.total_gbps, Some(180.0 * 8.0));
        assert_eq!(mem0.rnic_dma_gbps, Some(200.0));
        assert_eq!(mem0.cores_gbps(), Some(1240.0));
        assert_eq!(mem0.capacity_gbps, Some(1638.4));
        let mem1 = got.iter().find(|b| b.node.as_str() == "mem1").unwrap();
        // Writes did not count, and rnic3's rate is unknown: both unknown, not partial.
        assert_eq!((mem1.total_gbps, mem1.rnic_dma_gbps), (None, None));
        // Without the uncore PMUs there is no total at all, but the RNIC share is still read.
        let none = m.memory_bandwidth(&host, None, &dma);
        assert_eq!(none[0].total_gbps, None);
        assert_eq!(none[0].rnic_dma_gbps, Some(200.0));
    }
}
