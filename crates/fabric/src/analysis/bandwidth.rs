//! Utilised bandwidth from byte estimates (thesis 4.2: "with the packet size and a rough idea
//! of time, we can actually estimate the utilized bandwidth of link C ... using packet arrival
//! time as an estimate for the time that the packet crossed link C").

/// Gb/s carried by `bytes` over `span_ps` picoseconds; 0 for an empty span (one arrival gives
/// no rate).
pub fn gbps(bytes: f64, span_ps: u64) -> f64 {
    if span_ps == 0 {
        return 0.0;
    }
    // bits per picosecond is Tb/s; times 1000 gives Gb/s.
    bytes * 8.0 / span_ps as f64 * 1000.0
}

/// The bytes a subset of jobs put through a port when only the all-jobs total is known
/// exactly (the ground truth counts bytes per port, packets per job and port): the subset's
/// share of the packets. Exact when the jobs use the same packet sizes on that port.
pub fn share_of_bytes(total_bytes: f64, selected_packets: f64, all_packets: f64) -> f64 {
    if all_packets > 0.0 {
        total_bytes * selected_packets / all_packets
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_rate_arithmetic() {
        // 100 Gb/s is 12.5 bytes per ns: 12 500 bytes in 1 us.
        assert!((gbps(12_500.0, 1_000_000) - 100.0).abs() < 1e-9);
        // Thesis 4.2: 101.9 Gb/s from e.g. 2 490 packets of 4 KiB in 800 us.
        let bytes = 2_490.0 * 4096.0;
        assert!((gbps(bytes, 800_000_000) - 101.99).abs() < 0.01);
        assert_eq!(gbps(4096.0, 0), 0.0);
    }

    #[test]
    fn byte_share_follows_packets() {
        assert_eq!(share_of_bytes(8000.0, 1.0, 4.0), 2000.0);
        assert_eq!(share_of_bytes(8000.0, 0.0, 0.0), 0.0);
    }
}
