//! What a point of the micro-benchmarks counts besides time: packets on the port and the
//! transport counters (a reading of the port before and after), and the benchmark's own
//! MRs as RDMA netlink lists them (their ODP mark and `page_faults`).

use crate::counters::rnic::{counter_delta, read_ports_lenient, PortCounters};
use crate::netlink::{Device, MrEntry, MrStats, NetlinkError, Owner, RdmaNetlink};
use crate::sysfs::SysRoot;
use model::odp_bench::TransportDelta;
use std::time::Duration;

/// One port's counters at one moment; `None` when the port could not be read.
pub struct PortReading(Option<PortCounters>);

/// Reads `device` port `port` below `root`. The driver caches `hw_counters` for its
/// `lifespan` (rxe and mlx5: 10 ms; linux-counters.md 1.4), so the reading waits that long
/// first: a reading taken sooner could be the cached value from before the point's traffic.
pub fn read_port(root: &SysRoot, device: &str, port: u8) -> PortReading {
    let find = |ports: Vec<PortCounters>| {
        ports
            .into_iter()
            .find(|p| p.device == device && p.port == port)
    };
    let lifespan = find(read_ports_lenient(root).0).and_then(|p| p.lifespan_ms);
    if let Some(ms) = lifespan {
        std::thread::sleep(Duration::from_millis(ms + 1));
    }
    PortReading(find(read_ports_lenient(root).0))
}

/// How far `hw_counters/<name>` moved; `None` when either reading lacks it or it went
/// backwards (a reset).
fn hw_moved(before: &PortCounters, after: &PortCounters, name: &str) -> Option<u64> {
    after
        .hw_counters
        .get(name)?
        .checked_sub(*before.hw_counters.get(name)?)
}

/// Packets on the wire between two readings, both directions: the PMA's
/// `port_xmit_packets + port_rcv_packets` where the port has a PMA (`counters/`), else rxe's
/// `hw_counters/sent_pkts + rcvd_pkts`, the same two counts for a device without a PMA
/// (rxe_net.c counts each packet it hands to or takes from the network stack). On a QP
/// connected to itself every packet is both sent and received by the port, so it counts
/// twice, as it does in a port counter of the paper's two machines only once per side.
pub fn packets(before: &PortReading, after: &PortReading) -> Option<u64> {
    let (b, a) = (before.0.as_ref()?, after.0.as_ref()?);
    let pma = counter_delta(b, a, "port_xmit_packets")
        .zip(counter_delta(b, a, "port_rcv_packets"))
        .map(|(x, r)| x + r);
    pma.or_else(|| {
        hw_moved(b, a, "sent_pkts")
            .zip(hw_moved(b, a, "rcvd_pkts"))
            .map(|(x, r)| x + r)
    })
}

/// The transport counters between two readings, in mlx5's names. For rxe only what counts
/// the same event is mapped:
/// - `packet_seq_err` (requester: sequence-error NAKs received) is rxe's `rcvd_seq_err`;
/// - `out_of_sequence` (responder: requests with a PSN beyond the expected one) is rxe's
///   `out_of_seq_request`;
/// - `duplicate_request` has the same name and meaning on both;
/// - `local_ack_timeout_err` (requester: ACK timer expiries) has no rxe counterpart and is
///   left `None`: rxe's `completer_retry_err` counts every retry, after a sequence-error NAK
///   as well as after a timeout, and `retry_exceeded_err` counts QPs that ran out of
///   retries, not timeouts.
pub fn transport(before: &PortReading, after: &PortReading) -> TransportDelta {
    let (Some(b), Some(a)) = (before.0.as_ref(), after.0.as_ref()) else {
        return TransportDelta::default();
    };
    let either = |mlx5: &str, rxe: &str| hw_moved(b, a, mlx5).or_else(|| hw_moved(b, a, rxe));
    TransportDelta {
        local_ack_timeout_err: hw_moved(b, a, "local_ack_timeout_err"),
        packet_seq_err: either("packet_seq_err", "rcvd_seq_err"),
        out_of_sequence: either("out_of_sequence", "out_of_seq_request"),
        duplicate_request: hw_moved(b, a, "duplicate_request"),
    }
}

/// The benchmark's MRs as RDMA netlink lists them at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MrsSeen {
    /// Of the MRs asked about, how many the dump listed.
    pub listed: usize,
    /// How many of those the driver marks ODP (driver attribute `odp`).
    pub odp_marked: usize,
    /// Their `page_faults`, summed; `None` when none of them has the counter.
    pub page_faults: Option<u64>,
}

/// Picks `ours` out of a device's MR dump and statistics: by lkey when the dump has keys
/// (a reader with CAP_NET_ADMIN), else by owner (`pid`) and length.
pub fn our_mrs(mrs: &[MrEntry], stats: &[MrStats], ours: &[(u32, u64)], pid: u32) -> MrsSeen {
    let mut seen = MrsSeen::default();
    let mut claimed = Vec::new();
    for &(lkey, length) in ours {
        let found = mrs.iter().enumerate().find(|(i, m)| {
            !claimed.contains(i)
                && match m.lkey {
                    Some(k) => k == lkey,
                    None => m.owner == Owner::Process(pid) && m.length == length,
                }
        });
        let Some((i, mr)) = found else { continue };
        claimed.push(i);
        seen.listed += 1;
        if mr.odp().is_some() {
            seen.odp_marked += 1;
        }
        let faults = stats
            .iter()
            .find(|s| s.mrn == mr.mrn)
            .and_then(|s| s.counter("page_faults"));
        if let Some(f) = faults {
            seen.page_faults = Some(seen.page_faults.unwrap_or(0) + f);
        }
    }
    seen
}

/// RDMA netlink for one device, opened once for the sweep.
pub struct MrWatch {
    netlink: RdmaNetlink,
    device: Device,
}

impl MrWatch {
    /// Opens the socket and finds `device` in it; `None` when netlink does not list it.
    pub fn open(device: &str) -> Result<Option<MrWatch>, NetlinkError> {
        let mut netlink = RdmaNetlink::open(Duration::from_secs(2))?;
        let found = netlink.devices()?.into_iter().find(|d| d.name == device);
        Ok(found.map(|device| MrWatch { netlink, device }))
    }

    /// The MRs `ours` (lkey, length) as the device's dumps list them now.
    pub fn seen(&mut self, ours: &[(u32, u64)]) -> Result<MrsSeen, NetlinkError> {
        let mrs = self.netlink.memory_regions(&self.device)?;
        let stats = self.netlink.mr_statistics(&self.device)?;
        Ok(our_mrs(&mrs, &stats, ours, std::process::id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::mr::{DriverAttr, DriverValue};
    use crate::sysfs::{LinkLayer, PortState};
    use std::collections::BTreeMap;

    fn port(hw: &[(&str, u64)]) -> PortReading {
        PortReading(Some(PortCounters {
            device: "rxe0".into(),
            port: 1,
            state: PortState::Active,
            phys_state: None,
            rate_gbps: None,
            link_layer: LinkLayer::Ethernet,
            pci: None,
            netdev: None,
            pma: crate::counters::rnic::PmaTable::Absent,
            counters: BTreeMap::new(),
            hw_counters: hw.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            device_hw_counters: BTreeMap::new(),
            lifespan_ms: Some(10),
        }))
    }

    /// rxe's hw_counters names (drivers/infiniband/sw/rxe/rxe_hw_counters.c), as a 6.x
    /// guest lists them.
    fn rxe(sent: u64, rcvd: u64, seq: u64, oos: u64, dup: u64, retry: u64) -> PortReading {
        port(&[
            ("sent_pkts", sent),
            ("rcvd_pkts", rcvd),
            ("duplicate_request", dup),
            ("out_of_seq_request", oos),
            ("rcvd_rnr_err", 0),
            ("send_rnr_err", 0),
            ("rcvd_seq_err", seq),
            ("ack_deferred", 0),
            ("retry_exceeded_err", 0),
            ("retry_rnr_exceeded_err", 0),
            ("completer_retry_err", retry),
            ("send_err", 0),
            ("link_downed", 0),
            ("rdma_sends", 0),
            ("rdma_recvs", 0),
        ])
    }

    #[test]
    fn rxe_packets_and_the_counters_that_mean_the_same() {
        let before = rxe(100, 90, 1, 2, 3, 4);
        let after = rxe(140, 125, 1, 5, 3, 9);
        assert_eq!(packets(&before, &after), Some(40 + 35));
        let t = transport(&before, &after);
        assert_eq!(
            t,
            TransportDelta {
                local_ack_timeout_err: None,
                packet_seq_err: Some(0),
                out_of_sequence: Some(3),
                duplicate_request: Some(0),
            }
        );
    }

    #[test]
    fn mlx5_names_come_first_and_an_unread_port_counts_nothing() {
        let mlx = |t: u64| {
            port(&[
                ("local_ack_timeout_err", t),
                ("packet_seq_err", 7),
                ("out_of_sequence", 1),
                ("duplicate_request", 0),
            ])
        };
        let t = transport(&mlx(2), &mlx(5));
        assert_eq!(t.local_ack_timeout_err, Some(3));
        assert_eq!(t.packet_seq_err, Some(0));
        // No PMA and no rxe packet counters: unknown, never 0.
        assert_eq!(packets(&mlx(2), &mlx(5)), None);
        assert_eq!(packets(&PortReading(None), &mlx(5)), None);
        assert_eq!(
            transport(&PortReading(None), &mlx(5)),
            TransportDelta::default()
        );
        // A counter that went backwards is unknown too.
        assert_eq!(transport(&mlx(5), &mlx(2)).local_ack_timeout_err, None);
    }

    fn mr(mrn: u32, lkey: Option<u32>, pid: u32, length: u64, odp: bool) -> MrEntry {
        MrEntry {
            device: Device {
                index: 1,
                name: "mlx5_0".into(),
            },
            mrn,
            length,
            rkey: lkey,
            lkey,
            iova: None,
            pdn: Some(3),
            owner: Owner::Process(pid),
            driver: if odp {
                vec![DriverAttr {
                    name: "odp".into(),
                    value: DriverValue::Str("explicit".into()),
                    hex: false,
                }]
            } else {
                Vec::new()
            },
        }
    }

    fn stats(mrn: u32, faults: u64) -> MrStats {
        MrStats {
            device: Device {
                index: 1,
                name: "mlx5_0".into(),
            },
            mrn,
            counters: vec![
                ("page_faults".into(), faults),
                ("page_invalidations".into(), 0),
                ("page_prefetch".into(), 0),
            ],
        }
    }

    #[test]
    fn our_mrs_are_found_by_lkey_and_their_faults_summed() {
        let mrs = [
            mr(1, Some(0x100), 42, 8192, true),
            mr(2, Some(0x200), 42, 8192, true),
            mr(3, Some(0x300), 7, 8192, true),
        ];
        let st = [stats(1, 2), stats(2, 3), stats(3, 50)];
        let seen = our_mrs(&mrs, &st, &[(0x100, 8192), (0x200, 8192)], 42);
        assert_eq!(
            seen,
            MrsSeen {
                listed: 2,
                odp_marked: 2,
                page_faults: Some(5)
            }
        );
        // An MR the dump does not list is not counted.
        let seen = our_mrs(&mrs, &st, &[(0x999, 8192)], 42);
        assert_eq!(seen, MrsSeen::default());
    }

    #[test]
    fn without_keys_our_mrs_are_found_by_owner_and_length_once_each() {
        // rxe: no driver attribute, no per-MR counters; a reader without CAP_NET_ADMIN
        // gets no keys.
        let mrs = [
            mr(1, None, 42, 8192, false),
            mr(2, None, 42, 8192, false),
            mr(3, None, 7, 8192, false),
        ];
        let seen = our_mrs(&mrs, &[], &[(0x1, 8192), (0x2, 8192), (0x3, 8192)], 42);
        assert_eq!(
            seen,
            MrsSeen {
                listed: 2,
                odp_marked: 0,
                page_faults: None
            }
        );
    }
}
