//! The caps on every size a user gives the host layer: fault settings (`--inject`), host
//! models (`--sim FILE`) and command-line numbers. Each is checked where the value is
//! parsed, and a value above its cap is refused with [`AboveCap`], whose message names the
//! cap ("odp flood QPs 4294967295 is above the cap of 4096"); the commands exit 2 on it.
//!
//! Why caps: the virtual host and the check flow spend time and memory in proportion to
//! these numbers (one ODP region per flooding QP, one path per RNIC x endpoint, one sample
//! per iteration), so an unbounded number is an abort or a run of hours, not an answer.
//! Each cap sits well above what real hardware has, so no real host or real setting is
//! refused; the doc comment of each says what that is. The fabric layer has its own caps
//! in the `fabric` crate, in the same style.

use std::fmt;

// ---- Fault settings (DESIGN 4.2) ----

/// QPs of `odp:<rnic>:flood:<qps>`, and the largest `odp-bench flood --qps`. ISPASS'21's
/// flood micro-benchmark sweeps a few tens of QPs and is already a storm at 8; real ODP
/// users (MPI, UCX) open one RC QP per peer process, and 4096 peers per RNIC is a large
/// job. The flood's counters grow linearly in QPs, so more QPs show nothing new.
pub const ODP_FLOOD_QPS: u64 = 4096;

/// Bytes of `tx-window:<rnic>:<bytes>`, the per-QP in-flight limit: 1 GiB. A healthy
/// RNIC's window is 4 MiB ([`crate::hostfile::defaults::RNIC_QP_WINDOW_BYTES`]), and an
/// 800 Gb/s RNIC (ConnectX-8) keeps only 1 MB in flight over a 10 us loop, so a window of a
/// GiB already limits nothing.
pub const TX_WINDOW_BYTES: u64 = 1 << 30;

/// Gb/s of `service:<rnic>:<gbps>`: twice the fastest RNIC port (ConnectX-8, 800 Gb/s).
/// Service traffic offered above an RNIC's line rate is meaningful (the wire carries line
/// rate and the senders are paused for the rest: a saturated RNIC), but twice the fastest
/// port is a typo, not a load.
pub const SERVICE_GBPS: f64 = 1600.0;

/// MiB of `iommu:<rnic>:<working_set_mib>`, and the largest `check --iotlb-max-mib`: 1 TiB,
/// the DRAM of a large two-socket server (32 x 32 GiB DIMMs); an RNIC's buffers cannot
/// span more memory than the host has.
pub const IOMMU_WORKING_SET_MIB: f64 = 1_048_576.0;

// ---- Host models (`--sim FILE`, docs/host-model.md) ----

/// CPU sockets of a host model: 32, the largest single-image x86 servers (HPE Superdome
/// Flex scales to 32 sockets); servers with RNICs and GPUs have 1 to 8.
pub const SOCKETS: usize = 32;

/// Memory nodes of a host model: 64, two per socket of the largest machine (AMD NPS2 /
/// Intel SNC2 across 32 sockets), or NPS4 on 8 sockets with CXL and HBM nodes besides.
pub const MEMORY_NODES: usize = 64;

/// GPUs of a host model: 32. The densest GPU servers hold 16 (DGX-2, HGX-2) to 20
/// single-slot cards; DGX A100/H100/B200 hold 8.
pub const GPUS: usize = 32;

/// RNICs of a host model: 32. A DGX H100 has 8 compute ConnectX-7 ports and 2 storage
/// ports; one RNIC per GPU on the densest GPU server is 20.
pub const RNICS: usize = 32;

/// PCIe switches of a host model: 128. A DGX A100 has 12 (Hostping Fig. 2: 4 upper and 8
/// leaf), a DGX H100 about as many; two levels per GPU on a 32-GPU host is 64.
pub const PCIE_SWITCHES: usize = 128;

/// Links of a host model: 1024. A tree over the components above needs one link per
/// component (at most 288), and a full mesh of 32 sockets adds 496 inter-socket links.
pub const LINKS: usize = 1024;

/// Components of a host model: the sum of the caps of each class above (288).
pub const COMPONENTS: usize = SOCKETS + MEMORY_NODES + GPUS + RNICS + PCIE_SWITCHES;

/// Gb/s of one link's capacity or one RNIC's line rate in a host model: 20 Tb/s. The
/// widest link of a real host is a memory node's: 12 channels of DDR5-6400 carry 4.9 Tb/s,
/// HBM on a CPU (Xeon Max) about 8 Tb/s; PCIe Gen6 x16 is 968 Gb/s.
pub const LINK_GBPS: f64 = 20_000.0;

// ---- Command-line numbers ----

/// Runs of `check --runs` and `baseline --runs`: 10,000, five weeks of the agent's idle
/// cadence (5 min); flapping needs 6 runs (Hostping 5).
pub const RUNS: u64 = 10_000;

/// Timed iterations per message size per path (`--iterations`): one million. Hostping's
/// probe takes 1000 (4.1.1); a million samples pin the 99th percentile to well under a
/// percent.
pub const ITERATIONS: u64 = 1_000_000;

/// Re-probe rounds in an idle run (`--reprobe-rounds`): 100, ten seconds of rounds 100 ms
/// apart; a flap half-period of seconds (Hostping 6 #6) is covered several times.
pub const REPROBE_ROUNDS: u64 = 100;

/// QPs of the streaming test (`--stream-qps`): as many as an ODP flood may use
/// ([`ODP_FLOOD_QPS`]); `ib_write_bw` users run 1 to 16.
pub const STREAM_QPS: u64 = ODP_FLOOD_QPS;

/// Outstanding work requests per QP (`--stream-depth`): 65,536, the largest send queue a
/// ConnectX device offers (`max_qp_wr` is 32,768 to 65,536).
pub const STREAM_DEPTH: u64 = 65_536;

/// Milliseconds of the streaming test per path (`--stream-ms`): one minute; `ib_write_bw`
/// runs 5 s by default, and a check streams on every path.
pub const STREAM_MS: f64 = 60_000.0;

/// Relative noise of the virtual host (`--noise`): 0.5. Real loopback probes vary by a few
/// percent (Hostping 4.1.1); at 50 % a sample says nothing.
pub const NOISE: f64 = 0.5;

/// Milliseconds to wait for one work completion (`--timeout-ms`): 10 minutes. An ODP
/// damming stall lasts about 500 ms (ISPASS'21), and a completion still missing after
/// minutes is a hung path, better called failed than waited on.
pub const TIMEOUT_MS: u64 = 600_000;

/// Microseconds between the two READs of `odp-bench damming --intervals`: 10 s, twenty
/// times ISPASS'21's 500 ms firmware timeout floor (the paper sweeps 0.5 to 4.5 ms).
pub const ODP_INTERVAL_US: u64 = 10_000_000;

/// Healthy runs per built-in model of `bench scenarios --healthy-runs`: 100,000, enough to
/// measure a false-alarm rate of 1e-4 from ten alarms; each is a full-mesh check.
pub const HEALTHY_RUNS: u64 = 100_000;

/// Repeats of `bench check` and `bench counters --repeat`: 100,000 timed runs.
pub const BENCH_REPEATS: u64 = 100_000;

/// Wall seconds `bench agent` measures: one hour, 3600 one-second snapshots of the agent.
pub const BENCH_AGENT_SECONDS: u64 = 3600;

/// Simulated hosts of `bench collector --hosts`: 100,000, ten times the largest GPU
/// clusters' server count (about 10,000 servers of 8 GPUs).
pub const BENCH_HOSTS: u64 = 100_000;

/// Days of history of `bench collector --days`: 90, a quarter of the fleet's runs.
pub const BENCH_DAYS: u64 = 90;

/// Concurrent senders of `bench collector --clients`: 1024 agents posting at once.
pub const BENCH_CLIENTS: u64 = 1024;

/// Reads of each kind of `bench collector --queries`: 100,000.
pub const BENCH_QUERIES: u64 = 100_000;

/// Host names one Slurm hostlist (`--nodes node[001-016]`) may stand for: 65,536, six times
/// the largest GPU clusters' server count (about 10,000 servers); `node[0-99999999]` would
/// otherwise be a hundred million names held in memory.
pub const HOSTLIST_NAMES: u64 = 65_536;

/// Bytes each rank reduces in a what-if all-reduce (`job --what-if --bytes`, the collector's
/// `bytes=`): 1 GiB, the collector's cap since its first what-if. The replay's cost grows
/// with the packets it moves (8 GiB over pod-32 takes 13 s on a simulated cluster, a
/// thousand times that runs for hours), and NCCL's own benchmarks stop at a few GiB.
pub const WHAT_IF_BYTES: u64 = 1 << 30;

/// A number above its cap, in one line naming the cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {value} is above the cap of {cap}")]
pub struct AboveCap {
    /// What the number counts (`odp flood QPs`).
    pub what: String,
    /// The number as given.
    pub value: String,
    /// The cap.
    pub cap: String,
}

/// `value` if it is at most `cap`, else [`AboveCap`] naming `what`.
///
/// ```
/// use model::limits::{at_most, ODP_FLOOD_QPS};
/// assert_eq!(at_most("odp flood QPs", 16, ODP_FLOOD_QPS), Ok(16));
/// let e = at_most("odp flood QPs", 4_294_967_295, ODP_FLOOD_QPS).unwrap_err();
/// assert_eq!(e.to_string(), "odp flood QPs 4294967295 is above the cap of 4096");
/// ```
pub fn at_most<T: PartialOrd + fmt::Display>(what: &str, value: T, cap: T) -> Result<T, AboveCap> {
    if value <= cap {
        Ok(value)
    } else {
        Err(above(what, &value, &cap))
    }
}

/// The error for `value` above `cap`, for values compared elsewhere (a count of records, a
/// number too large to parse).
pub fn above(what: &str, value: &dyn fmt::Display, cap: &dyn fmt::Display) -> AboveCap {
    AboveCap {
        what: what.to_string(),
        value: value.to_string(),
        cap: cap.to_string(),
    }
}

/// A number flag or field that is not a whole number in its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WholeError {
    /// Not digits, or below the range's start.
    #[error("{what} must be a whole number from {min}, got `{text}`")]
    NotWhole {
        /// What the number counts (`runs`).
        what: String,
        /// The smallest number allowed.
        min: u64,
        /// The text as given.
        text: String,
    },
    /// Above the cap (or too large even to parse).
    #[error(transparent)]
    AboveCap(#[from] AboveCap),
}

/// Parses a whole number from `min` up to `cap`; `what` names it in errors. A number too
/// large even to parse is reported as above the cap, not as "not a number".
///
/// ```
/// use model::limits::whole;
/// assert_eq!(whole("runs", "7", 1, 10), Ok(7));
/// assert_eq!(whole("runs", "0", 1, 10).unwrap_err().to_string(),
///            "runs must be a whole number from 1, got `0`");
/// assert_eq!(whole("runs", "99999999999999999999999", 1, 10).unwrap_err().to_string(),
///            "runs 99999999999999999999999 is above the cap of 10");
/// ```
pub fn whole(what: &str, text: &str, min: u64, cap: u64) -> Result<u64, WholeError> {
    // Digits only: `u64::from_str` would also take a leading `+`.
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u64>() {
        Ok(v) if digits && v >= min => Ok(at_most(what, v, cap)?),
        Err(_) if digits => Err(above(what, &text, &cap).into()),
        _ => Err(WholeError::NotWhole {
            what: what.to_string(),
            min,
            text: text.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_itself_is_allowed_and_one_more_is_not() {
        assert_eq!(at_most("x", ODP_FLOOD_QPS, ODP_FLOOD_QPS), Ok(4096));
        let e = at_most("odp flood QPs", ODP_FLOOD_QPS + 1, ODP_FLOOD_QPS).unwrap_err();
        assert_eq!(e.to_string(), "odp flood QPs 4097 is above the cap of 4096");
        assert!(at_most("gbps", SERVICE_GBPS + 0.5, SERVICE_GBPS).is_err());
    }

    #[test]
    fn whole_numbers_are_read_strictly() {
        for bad in ["", "-1", "1.5", "1e3", " 3", "+3", "0x10"] {
            let e = whole("qps", bad, 1, 4096).unwrap_err().to_string();
            assert!(
                e.starts_with("qps must be a whole number from 1"),
                "{bad}: {e}"
            );
        }
        assert_eq!(whole("qps", "4096", 1, 4096), Ok(4096));
        assert_eq!(
            whole("qps", "18446744073709551616", 1, 4096)
                .unwrap_err()
                .to_string(),
            "qps 18446744073709551616 is above the cap of 4096"
        );
    }

    proptest::proptest! {
        /// Any text gives a number within [min, cap] or an error naming what was read.
        #[test]
        fn whole_never_panics_and_stays_within_the_cap(text in "\\PC{0,24}", min in 0u64..3) {
            match whole("qps", &text, min, 4096) {
                Ok(v) => proptest::prop_assert!((min..=4096).contains(&v)),
                Err(e) => proptest::prop_assert!(e.to_string().starts_with("qps "), "{}", e),
            }
        }
    }
}
