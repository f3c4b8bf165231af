//! Each RNIC's transport error counters over the monitor's interval, from its port's
//! `hw_counters` as mlx5 names them: ODP damming shows as `local_ack_timeout_err`, a flood
//! as `packet_seq_err`, `out_of_sequence` and `duplicate_request` (ISPASS'21, "The first
//! pitfall: packet damming", "The second pitfall: packet flood").

use super::sample::Sample;
use super::HostMonitor;
use crate::counters::rnic::PortCounters;
use model::TransportCounters;

/// The counters `TransportCounters` carries, by their `hw_counters` names.
pub(super) const TRANSPORT_COUNTERS: [&str; 4] = [
    "local_ack_timeout_err",
    "packet_seq_err",
    "out_of_sequence",
    "duplicate_request",
];

/// How far a port's `hw_counters/<name>` moved; `None` when either reading lacks it or it
/// went backwards (a driver reset: not a count).
fn moved(prev: &PortCounters, cur: &PortCounters, name: &str) -> Option<u64> {
    cur.hw_counters
        .get(name)?
        .checked_sub(*prev.hw_counters.get(name)?)
}

impl HostMonitor {
    /// Every RNIC's transport counters; an RNIC whose driver has none of them (rxe names
    /// its own) gets `None` in each, and [`HostMonitor::transport_gaps`] says so.
    pub(super) fn transport(&self, prev: &Sample, cur: &Sample) -> Vec<TransportCounters> {
        let interval_ns = cur.at.duration_since(prev.at).as_nanos() as u64;
        self.discovery
            .bindings
            .rnics
            .iter()
            .map(|(id, _)| {
                let pair = self.port_pair(prev, cur, id);
                let get = |name| pair.and_then(|(p, c)| moved(p, c, name));
                TransportCounters {
                    rnic: id.clone(),
                    interval_ns: pair.map(|_| interval_ns),
                    local_ack_timeout_err: get("local_ack_timeout_err"),
                    packet_seq_err: get("packet_seq_err"),
                    out_of_sequence: get("out_of_sequence"),
                    duplicate_request: get("duplicate_request"),
                }
            })
            .collect()
    }

    /// One line per RNIC port that lacks some of the transport counters.
    pub(super) fn transport_gaps(&self, cur: &Sample) -> Vec<String> {
        self.discovery
            .bindings
            .rnics
            .iter()
            .filter_map(|(id, b)| {
                let port = cur
                    .ports
                    .iter()
                    .find(|p| p.device == b.device && p.port == b.port);
                let Some(port) = port else {
                    return Some(format!(
                        "{id} ({} port {}): port not read",
                        b.device, b.port
                    ));
                };
                let missing: Vec<&str> = TRANSPORT_COUNTERS
                    .into_iter()
                    .filter(|n| !port.hw_counters.contains_key(*n))
                    .collect();
                (!missing.is_empty()).then(|| {
                    format!(
                        "{id} ({} port {}): no hw_counters/{} (the driver does not count them)",
                        b.device,
                        b.port,
                        missing.join(", hw_counters/")
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::monitor::dgx_fixture as dgx;
    use crate::monitor::sample::Sample;
    use std::time::{Duration, Instant};

    /// Two samples of the fixture 1 s apart, with rnic1's (mlx5_1) transport counters
    /// moved as an ODP flood moves them and mlx5_2's `packet_seq_err` gone backwards.
    fn samples() -> (Sample, Sample) {
        let m = dgx();
        let mut prev = m.sample_at(Instant::now());
        let mut cur = m.sample_at(prev.at + Duration::from_secs(1));
        for p in &mut cur.ports {
            let bump = |p: &mut crate::counters::rnic::PortCounters, name: &str, by: u64| {
                *p.hw_counters.get_mut(name).unwrap() += by;
            };
            match p.device.as_str() {
                "mlx5_1" => {
                    bump(p, "packet_seq_err", 120);
                    bump(p, "out_of_sequence", 7);
                    bump(p, "duplicate_request", 3);
                }
                "mlx5_2" => {
                    p.hw_counters.remove("duplicate_request");
                }
                _ => {}
            }
        }
        let before = prev
            .ports
            .iter_mut()
            .find(|p| p.device == "mlx5_2")
            .unwrap();
        before.hw_counters.insert("packet_seq_err".into(), 5);
        (prev, cur)
    }

    #[test]
    fn transport_counters_move_forward_or_are_unknown() {
        let m = dgx();
        let (prev, cur) = samples();
        let t = m.transport(&prev, &cur);
        let by = |id: &str| t.iter().find(|c| c.rnic.as_str() == id).unwrap();
        let r1 = by("rnic1");
        assert_eq!(r1.interval_ns, Some(1_000_000_000));
        assert_eq!(
            (
                r1.local_ack_timeout_err,
                r1.packet_seq_err,
                r1.out_of_sequence,
                r1.duplicate_request
            ),
            (Some(0), Some(120), Some(7), Some(3))
        );
        let r2 = by("rnic2");
        // Backwards (a reset) or missing is unknown, never zero.
        assert_eq!((r2.packet_seq_err, r2.duplicate_request), (None, None));
        assert_eq!(r2.out_of_sequence, Some(0));
        let gaps = m.transport_gaps(&cur);
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert!(gaps[0].starts_with("rnic2 (mlx5_2 port 1): no hw_counters/duplicate_request"));
    }
}
