//! The monitor view in model ids: RNIC activity from PMA and ethtool counters, GPU activity
//! from NVML, and link utilisation from the bus monitor (uncore PMUs).

use super::sample::Sample;
use super::HostMonitor;
use crate::counters::{ethtool, rnic, uncore};
use model::{
    ComponentId, GpuActivity, HostSnapshot, HostTopology, LinkKind, LinkUtilisation, RnicActivity,
};
use std::collections::BTreeMap;

impl HostMonitor {
    /// The monitor view in model ids, from two samples.
    pub(super) fn monitor(&self, prev: &Sample, cur: &Sample) -> HostSnapshot {
        let mut snapshot = HostSnapshot::default();
        let Some(host) = self.host() else {
            return snapshot;
        };
        let bindings = &self.discovery.bindings;
        let dt = cur.at.duration_since(prev.at).as_secs_f64();
        let port = |s: &'_ Sample, device: &str, port: u8| {
            s.ports
                .iter()
                .find(|p| p.device == device && p.port == port)
                .cloned()
        };
        // Each RNIC's DMA to memory: received data is written, sent data read (Gb/s).
        let mut rnic_dma: BTreeMap<ComponentId, Option<f64>> = BTreeMap::new();
        for (id, b) in &bindings.rnics {
            let (Some(p), Some(c)) = (port(prev, &b.device, b.port), port(cur, &b.device, b.port))
            else {
                rnic_dma.insert(id.clone(), None);
                snapshot.rnics.push(RnicActivity {
                    id: id.clone(),
                    throughput_gbps: None,
                    tx_pause_ratio: None,
                    drops: None,
                });
                continue;
            };
            let rx = rnic::rcv_gbps(&p, &c, dt);
            let tx = rnic::xmit_gbps(&p, &c, dt);
            rnic_dma.insert(id.clone(), rx.zip(tx).map(|(a, b)| a + b));
            let throughput = match (rx, tx) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            let eth = c.netdev.as_ref().and_then(|n| {
                let before = prev.ethtool.get(n)?.as_ref().ok()?;
                let after = cur.ethtool.get(n)?.as_ref().ok()?;
                Some((before, after))
            });
            let pause = eth.and_then(|(a, b)| ethtool::tx_pause_ratio(a, b, dt));
            let drops = match (
                rnic::drops_delta(&p, &c),
                eth.and_then(|(a, b)| ethtool::drops_delta(a, b)),
            ) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            snapshot.rnics.push(RnicActivity {
                id: id.clone(),
                throughput_gbps: throughput,
                tx_pause_ratio: pause,
                drops,
            });
            if let (Some(gbps), Some(link)) = (throughput, upstream_link(host, id)) {
                snapshot.links.push(LinkUtilisation {
                    id: link.id.clone(),
                    utilisation: Some(gbps / link.capacity_gbps),
                });
            }
        }
        for (id, addr) in &bindings.gpus {
            let reading = cur
                .gpus
                .iter()
                .filter_map(|g| g.as_ref().ok())
                .find(|g| g.bus_id == *addr);
            snapshot.gpus.push(GpuActivity {
                id: id.clone(),
                busy: reading.and_then(|r| r.utilisation_gpu_pct).map(|u| u > 0),
            });
            let pcie = reading.and_then(|r| Some(r.pcie_tx_kbps?.max(r.pcie_rx_kbps?)));
            if let (Some(kbps), Some(link)) = (pcie, upstream_link(host, id)) {
                snapshot.links.push(LinkUtilisation {
                    id: link.id.clone(),
                    utilisation: Some(kbps as f64 * 8e3 / 1e9 / link.capacity_gbps),
                });
            }
        }
        let rates = match (&prev.uncore, &cur.uncore) {
            (Some(Ok(p)), Some(Ok(c))) => Some(uncore::rates(p, c, dt)),
            _ => None,
        };
        if let Some(rates) = &rates {
            snapshot.links.extend(self.bus_utilisation(host, rates));
        }
        snapshot.memory = self.memory_bandwidth(host, rates.as_deref(), &rnic_dma);
        snapshot.iommu = self.iommu_activity(prev, cur);
        snapshot.transport = self.transport(prev, cur);
        snapshot
    }

    /// Memory-channel, inter-socket and root-port utilisation from the uncore rates
    /// (Hostping 5: "Intel's and AMD's API for CPU root ports, memory channels, and
    /// inter-socket buses").
    fn bus_utilisation(
        &self,
        host: &HostTopology,
        rates: &[uncore::BusRate],
    ) -> Vec<LinkUtilisation> {
        // Per link, `None` once any of its counters has no rate: a sum or maximum without
        // one of its parts would understate the load (absent is not zero).
        let mut gbps: BTreeMap<model::LinkId, Option<f64>> = BTreeMap::new();
        let root_buses = self.root_port_buses(host);
        for r in rates {
            let link = match &r.metric {
                uncore::BusMetric::MemoryRead { socket }
                | uncore::BusMetric::MemoryWrite { socket } => {
                    let cpu = self.discovery.bindings.cpu(*socket);
                    host.links()
                        .iter()
                        .find(|l| l.kind == LinkKind::MemoryChannel && Some(&l.up) == cpu)
                }
                uncore::BusMetric::InterSocketTx { socket, .. } => {
                    let cpu = self.discovery.bindings.cpu(*socket);
                    host.links().iter().find(|l| {
                        l.kind == LinkKind::InterSocket
                            && (Some(&l.up) == cpu || Some(&l.down) == cpu)
                    })
                }
                uncore::BusMetric::RootPortIn { root_bus }
                | uncore::BusMetric::RootPortOut { root_bus } => {
                    root_buses.get(root_bus).and_then(|l| host.link(l))
                }
            };
            if let Some(l) = link {
                let g = r.bytes_per_s.map(|bytes| bytes * 8.0 / 1e9);
                let entry = gbps.entry(l.id.clone()).or_insert(Some(0.0));
                // Memory: read + write share the channels; the others: the busier direction.
                *entry = match r.metric.family() {
                    uncore::BusFamily::Memory => entry.zip(g).map(|(a, b)| a + b),
                    _ => entry.zip(g).map(|(a, b)| a.max(b)),
                };
            }
        }
        gbps.into_iter()
            .filter_map(|(id, g)| {
                let cap = host.link(&id)?.capacity_gbps;
                Some(LinkUtilisation {
                    id,
                    utilisation: g.map(|g| g / cap),
                })
            })
            .collect()
    }

    /// Root-port links by the root bus of the function below them (`pciDDDD:BB` in its
    /// sysfs path), which is how IIO stacks name what they serve (linux-counters.md 6).
    fn root_port_buses(&self, host: &HostTopology) -> BTreeMap<uncore::RootBus, model::LinkId> {
        let mut out = BTreeMap::new();
        for (link, addr) in &self.discovery.bindings.pcie_links {
            if host.link(link).map(|l| l.kind) != Some(LinkKind::RootPort) {
                continue;
            }
            let path = self.root.path(&format!("sys/bus/pci/devices/{addr}"));
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            let bus = real
                .components()
                .filter_map(|c| c.as_os_str().to_str())
                .find_map(|c| c.strip_prefix("pci")?.parse::<uncore::RootBus>().ok());
            if let Some(bus) = bus {
                out.insert(bus, link.clone());
            }
        }
        out
    }
}

/// The link above a device in the model.
fn upstream_link<'a>(host: &'a HostTopology, id: &ComponentId) -> Option<&'a model::Link> {
    host.link(host.links_to_cpu(id).first()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uncore::{BusMetric, BusRate};

    use crate::monitor::dgx_fixture as dgx;

    #[test]
    fn the_bus_monitor_puts_uncore_rates_on_the_model_links() {
        let c = dgx();
        let host = c.host().unwrap().clone();
        let rate = |metric, gbytes: f64| BusRate {
            metric,
            bytes_per_s: Some(gbytes * 1e9),
        };
        let bus = |s: &str| s.parse::<uncore::RootBus>().unwrap();
        let rates = [
            rate(BusMetric::MemoryRead { socket: 0 }, 120.0),
            rate(BusMetric::MemoryWrite { socket: 0 }, 64.8),
            rate(
                BusMetric::InterSocketTx {
                    socket: 1,
                    pmu: "uncore_upi_0".into(),
                },
                30.0,
            ),
            rate(
                BusMetric::InterSocketTx {
                    socket: 1,
                    pmu: "uncore_upi_1".into(),
                },
                10.0,
            ),
            rate(
                BusMetric::RootPortIn {
                    root_bus: bus("0000:90"),
                },
                28.35,
            ),
            rate(
                BusMetric::RootPortOut {
                    root_bus: bus("0000:90"),
                },
                1.0,
            ),
        ];
        let got: BTreeMap<String, f64> = c
            .bus_utilisation(&host, &rates)
            .into_iter()
            .map(|l| (l.id.to_string(), l.utilisation.unwrap()))
            .collect();
        // Memory: read + write over 8 x DDR4-3200 (1638.4 Gb/s).
        assert!(
            (got["mem0--cpu0"] - 184.8 * 8.0 / 1638.4).abs() < 1e-9,
            "{got:?}"
        );
        // Inter-socket: the busiest of the two UPI PMUs of socket 1.
        assert!((got["cpu0--cpu1"] - 240.0 / 537.6).abs() < 1e-9, "{got:?}");
        // Root port of bus 0x90 (socket 1's first root port): the busier direction, over the
        // Gen4 x16 link of the switch below it.
        let root = host
            .links()
            .iter()
            .find(|l| l.kind == LinkKind::RootPort && got.contains_key(l.id.as_str()))
            .expect("a root-port link got a reading");
        assert_eq!(root.up.as_str(), "cpu1");
        assert!((got[root.id.as_str()] - 226.8 / root.capacity_gbps).abs() < 1e-9);
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn a_link_with_a_counter_that_did_not_run_has_no_utilisation() {
        let c = dgx();
        let host = c.host().unwrap().clone();
        // Reads counted, writes not (the counter never ran in the interval): the memory
        // channel's load is unknown, not the reads alone.
        let rates = [
            BusRate {
                metric: BusMetric::MemoryRead { socket: 0 },
                bytes_per_s: Some(120e9),
            },
            BusRate {
                metric: BusMetric::MemoryWrite { socket: 0 },
                bytes_per_s: None,
            },
            BusRate {
                metric: BusMetric::MemoryRead { socket: 1 },
                bytes_per_s: Some(10e9),
            },
        ];
        let got: BTreeMap<String, Option<f64>> = c
            .bus_utilisation(&host, &rates)
            .into_iter()
            .map(|l| (l.id.to_string(), l.utilisation))
            .collect();
        assert_eq!(got["mem0--cpu0"], None);
        let mem1 = got["mem1--cpu1"].expect("socket 1 has its reads");
        assert!((mem1 - 80.0 / 1638.4).abs() < 1e-9, "{got:?}");
    }
}
