//! Each memory node's bandwidth from the uncore IMC counters, split into the DMA of the RNICs
//! local to the node (their port data counters: received data is written to memory, sent
//! data read from it) and the rest, the cores' (HotNets'22 3.2: the cores win the larger
//! share of a congested memory bus).
//!
//! The IMC PMUs count a socket's memory controllers, and sysfs does not say which channels
//! serve which NUMA node. A socket with several memory nodes (NPS2/NPS4, SNC) is therefore
//! read as one: each of its nodes gets the socket's traffic against the socket's capacity
//! (its nodes' summed), with the other nodes named, rather than the whole socket's traffic
//! against one node's capacity.

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
        let channels: Vec<_> = host
            .links()
            .iter()
            .filter(|l| l.kind == LinkKind::MemoryChannel)
            .collect();
        channels
            .iter()
            .map(|channel| {
                let cpu = &channel.up;
                let socket: Vec<_> = channels.iter().filter(|c| &c.up == cpu).collect();
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
                    capacity_gbps: Some(socket.iter().map(|c| c.capacity_gbps).sum()),
                    total_gbps,
                    rnic_dma_gbps: rnic_dma,
                    measured_with: socket
                        .iter()
                        .filter(|c| c.down != channel.down)
                        .map(|c| c.down.clone())
                        .collect(),
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
        assert!(got.iter().all(|b| b.measured_with.is_empty()));
    }

    /// NPS2 on socket 0: the counters count the socket, so both of its nodes get the
    /// socket's traffic against the socket's capacity, each naming the other; the node alone
    /// on socket 1 keeps its own.
    #[test]
    fn the_nodes_of_one_socket_are_read_together() {
        let m = dgx();
        let host = model::hostfile::parse(
            "nps2",
            r#"
name = "nps2"
description = "two sockets, socket 0 in NPS2"
[[component]]
id = "cpu0"
kind = "cpu"
[[component]]
id = "cpu1"
kind = "cpu"
[[component]]
id = "mem0"
kind = "memory"
[[component]]
id = "mem1"
kind = "memory"
[[component]]
id = "mem2"
kind = "memory"
[[component]]
id = "rnic0"
kind = "rnic"
line_rate_gbps = 200
[[link]]
down = "mem0"
up = "cpu0"
capacity_gbps = 800
[[link]]
down = "mem1"
up = "cpu0"
capacity_gbps = 800
[[link]]
down = "mem2"
up = "cpu1"
capacity_gbps = 1600
[[link]]
down = "cpu1"
up = "cpu0"
capacity_gbps = 500
[[link]]
down = "rnic0"
up = "cpu0"
pcie = "gen4x16"
"#,
        )
        .unwrap();
        let rates = [
            rate(BusMetric::MemoryRead { socket: 0 }, Some(100.0)),
            rate(BusMetric::MemoryWrite { socket: 0 }, Some(50.0)),
            rate(BusMetric::MemoryRead { socket: 1 }, Some(10.0)),
            rate(BusMetric::MemoryWrite { socket: 1 }, Some(10.0)),
        ];
        let dma: BTreeMap<ComponentId, Option<f64>> = [(ComponentId::new("rnic0"), Some(40.0))]
            .into_iter()
            .collect();
        let got = m.memory_bandwidth(&host, Some(&rates), &dma);
        let node = |id: &str| got.iter().find(|b| b.node.as_str() == id).unwrap();
        for (id, other) in [("mem0", "mem1"), ("mem1", "mem0")] {
            let b = node(id);
            assert_eq!(b.total_gbps, Some(1200.0));
            // The socket's 1600 Gb/s, not the node's 800: 75 % used, not 150 %.
            assert_eq!(b.capacity_gbps, Some(1600.0));
            assert_eq!(b.rnic_dma_gbps, Some(40.0));
            assert_eq!(b.measured_with, [ComponentId::new(other)]);
        }
        let alone = node("mem2");
        assert_eq!(
            (alone.total_gbps, alone.capacity_gbps),
            (Some(160.0), Some(1600.0))
        );
        assert!(alone.measured_with.is_empty());
    }
}
