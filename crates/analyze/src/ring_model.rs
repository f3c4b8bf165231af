//! What a healthy ring collective reaches at its size: NCCL's own cost model
//! (`src/graph/tuning.cc`, `ncclTopoTuneModel` and `ncclTopoGetAlgoTime`), a latency plus
//! the bytes over the algorithm bandwidth. Large collectives approach the links' rate; small
//! ones are bound by the ring's latency, so a rate the topology allows is no yardstick for
//! them (DESIGN 4.8's `expected`, issue 39 item 2).
//!
//! The model's constants are NCCL's for a ring of its Simple protocol, the one large
//! collectives run with; the hops within a host are taken as PCIe, the slower of its two
//! intra-host kinds, so that the model errs towards expecting less.

/// NCCL's base latency of a Simple ring, us (`baseLat[RING][SIMPLE]`).
pub const BASE_LATENCY_US: f64 = 8.4;
/// A ring step within a host over PCIe, us (`hwLat[PCI][RING][SIMPLE]`).
pub const INTRA_HOST_STEP_US: f64 = 5.7;
/// A ring step across hosts, us (`hwLat[NET][RING][SIMPLE]`).
pub const INTER_HOST_STEP_US: f64 = 9.6;
/// NCCL's "plateau effect of ring": a multi-host all-reduce's latency grows by this much.
pub const RING_PLATEAU: f64 = 1.9;

/// The bus bandwidth, GB/s, that NCCL's model gives a ring `collective` (the Inspector's
/// name: `AllReduce`, `AllGather`, ...) of `bytes` over `ranks` ranks on `nodes` hosts
/// whose links allow `bound_gbs` of bus bandwidth: `bound_gbs` for a large collective,
/// less for a small one. `None` for a ring of fewer than two ranks.
pub fn ring_busbw_gbs(
    bound_gbs: f64,
    collective: &str,
    bytes: u64,
    ranks: u32,
    nodes: u32,
) -> Option<f64> {
    if ranks < 2 || bytes == 0 || !(bound_gbs.is_finite() && bound_gbs > 0.0) {
        return None;
    }
    let steps = |n: u32| -> f64 {
        let n = f64::from(n.max(1));
        match collective {
            "AllReduce" => 2.0 * (n - 1.0),
            "AllGather" | "ReduceScatter" => n - 1.0,
            _ => n,
        }
    };
    let (n_steps, inter_steps) = (steps(ranks), steps(nodes));
    let mut latency_us = BASE_LATENCY_US
        + (n_steps - inter_steps) * INTRA_HOST_STEP_US
        + inter_steps * INTER_HOST_STEP_US;
    if collective == "AllReduce" && nodes > 1 {
        latency_us *= RING_PLATEAU;
    }
    // NCCL's ring moves the bus bandwidth's bytes in `n_steps` of `ranks` shares: its
    // algorithm bandwidth is the bus bandwidth times ranks over steps.
    let ratio = f64::from(ranks) / n_steps;
    let algo_gbs = bound_gbs * ratio;
    // GB/s are bytes per ns: bytes over (GB/s x 1000) is us.
    let time_us = latency_us + bytes as f64 / (algo_gbs * 1e3);
    Some(bytes as f64 / (time_us * 1e3) / ratio)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_large_all_reduce_nears_the_bound_and_a_small_one_does_not() {
        // 32 ranks on 4 hosts (the simulated pod's job), 100 GB/s of links.
        let at = |bytes| ring_busbw_gbs(100.0, "AllReduce", bytes, 32, 4).unwrap();
        // 8 GiB: the latency (732 us) is a twentieth of the transfer.
        assert!((95.0..100.0).contains(&at(8 << 30)), "{}", at(8 << 30));
        // 256 MiB: the transfer is 5.2 ms of 5.9.
        assert!((85.0..90.0).contains(&at(256 << 20)), "{}", at(256 << 20));
        // 1 MiB: latency-bound.
        assert!(at(1 << 20) < 3.0, "{}", at(1 << 20));
    }

    #[test]
    fn nothing_is_expected_of_a_ring_of_one() {
        assert_eq!(ring_busbw_gbs(100.0, "AllReduce", 1 << 20, 1, 1), None);
        assert_eq!(ring_busbw_gbs(0.0, "AllReduce", 1 << 20, 8, 1), None);
    }

    proptest! {
        #[test]
        fn the_rate_grows_with_the_size_and_never_passes_the_bound(
            bound in 1.0f64..1000.0,
            ranks in 2u32..1024,
            per_node in 1u32..16,
            bytes in 1u64..(1 << 36),
            collective in prop::sample::select(vec!["AllReduce", "AllGather", "ReduceScatter", "Broadcast"]),
        ) {
            let nodes = ranks.div_ceil(per_node);
            let at = |b| ring_busbw_gbs(bound, collective, b, ranks, nodes).unwrap();
            prop_assert!(at(bytes) > 0.0 && at(bytes) < bound);
            prop_assert!(at(bytes * 2) > at(bytes));
        }
    }
}
