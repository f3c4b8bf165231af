//! Intra-host latency and the limits on a probe's bandwidth (Hostping 3.2.2, 4.1.1).
//!
//! - **Lat_host** (round trip) is twice the sum of the one-way hop latencies of the path
//!   (every hop is crossed once by the read and once by the write back), plus the
//!   endpoint's access time, plus the root complex's P2P forwarding time when a GPU is
//!   reached through the CPU (or the path is detoured there by ACS / ATS off), plus
//!   queueing: each crossing of a hop adds `latency_ns * min(rho / (1 - rho), 10)`, where
//!   `rho` is the utilisation of that hop's direction by traffic other than the probe
//!   (an M/M/1-like wait, capped so a saturated link does not give infinite latency). The
//!   model's default hop latencies make a same-switch GPU 1.0 us, a GPU across root ports
//!   2.2 us and across the socket link 2.4 us on `dgx-a100` (Hostping 3.2.2).
//! - **Bandwidth** is the smallest of: the probe's max-min fair share of the links
//!   ([`crate::net`], which includes the RNIC line rate), the line rate, the DMA read
//!   window over Lat_host (Little's law: the RNIC keeps only so many read bytes
//!   outstanding, which caps GDR across the root complex at ~125.5 Gb/s at 2.2 us and ~115
//!   at 2.4 us, Hostping 3.2.2), and the per-QP window over one round trip
//!   (`qps * min(qp_window, depth * message) * 8 / (Lat_host + T_proc)`, Hostping 6 #10).

/// Queueing is capped at this many times a hop's latency.
pub(crate) const QUEUE_CAP: f64 = 10.0;

/// Extra wait at a hop whose direction is `rho` busy, in units of its latency:
/// `min(rho / (1 - rho), 10)`; a full or overfull link waits the cap.
pub(crate) fn queueing(rho: f64) -> f64 {
    if rho >= 1.0 || rho.is_nan() {
        return QUEUE_CAP;
    }
    (rho.max(0.0) / (1.0 - rho)).min(QUEUE_CAP)
}

/// What bounds one probe's rate besides the links.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RnicLimits {
    /// Line rate, Gb/s.
    pub line_rate_gbps: f64,
    /// T_proc, ns.
    pub proc_ns: f64,
    /// Outstanding DMA read bytes.
    pub read_window_bytes: f64,
    /// Per-QP in-flight bytes (the Tx window).
    pub qp_window_bytes: f64,
}

impl RnicLimits {
    /// The probe's bandwidth, Gb/s: its fair share, capped by the line rate, the read
    /// window over Lat_host, and `qps` QPs each with `per_qp_bytes` (before the Tx window)
    /// in flight over one round trip.
    pub(crate) fn bandwidth_gbps(
        &self,
        share_gbps: f64,
        lat_host_ns: f64,
        qps: u32,
        per_qp_bytes: f64,
    ) -> f64 {
        let read = self.read_window_bytes * 8.0 / lat_host_ns;
        let in_flight = self.qp_window_bytes.min(per_qp_bytes) * f64::from(qps);
        let window = in_flight * 8.0 / (lat_host_ns + self.proc_ns);
        share_gbps.min(self.line_rate_gbps).min(read).min(window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CX6: RnicLimits = RnicLimits {
        line_rate_gbps: 200.0,
        proc_ns: 1500.0,
        read_window_bytes: 34_512.0,
        qp_window_bytes: 4194304.0,
    };

    #[test]
    fn queueing_grows_then_caps() {
        assert_eq!(queueing(0.0), 0.0);
        assert!((queueing(0.5) - 1.0).abs() < 1e-12);
        assert!((queueing(0.9) - 9.0).abs() < 1e-9);
        assert_eq!(queueing(0.95), QUEUE_CAP);
        assert_eq!(queueing(1.0), QUEUE_CAP);
        assert_eq!(queueing(3.0), QUEUE_CAP);
        assert_eq!(queueing(-0.1), 0.0);
    }

    #[test]
    fn read_window_gives_the_gdr_numbers_of_3_2_2() {
        let bw = |lat| CX6.bandwidth_gbps(f64::INFINITY, lat, 1, 131072.0);
        assert_eq!(bw(1000.0), 200.0);
        assert!((bw(2200.0) - 125.5).abs() < 0.1, "{}", bw(2200.0));
        assert!((bw(2400.0) - 116.4).abs() / 116.4 < 0.02, "{}", bw(2400.0));
    }

    #[test]
    fn tx_window_limits_one_qp_but_not_eight() {
        let small = RnicLimits {
            qp_window_bytes: 16384.0,
            ..CX6
        };
        let one = small.bandwidth_gbps(200.0, 600.0, 1, 131072.0);
        assert!((one - 16384.0 * 8.0 / 2100.0).abs() < 1e-9, "{one}");
        assert_eq!(small.bandwidth_gbps(200.0, 600.0, 8, 1048576.0), 200.0);
        // Few bytes in flight bound a stream too (depth x message below the window).
        let shallow = CX6.bandwidth_gbps(200.0, 600.0, 1, 4096.0);
        assert!((shallow - 4096.0 * 8.0 / 2100.0).abs() < 1e-9);
    }

    #[test]
    fn fair_share_binds_when_smallest() {
        assert_eq!(CX6.bandwidth_gbps(126.0, 1000.0, 1, 131072.0), 126.0);
    }
}
