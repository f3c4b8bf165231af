//! The peer benchmark: workloads A to D that the CODES fat-tree model (on ROSS) was measured
//! with on this project's machine kind (`../shared/reference/codes-peer.md`), and its
//! figures, so that `hostping fabric bench peer` can run the same traffic on this simulator
//! and print both side by side. CODES is not run by the benchmark: its figures are quoted
//! from its measured runs (see [`CodesFigures`]).
//!
//! All four: uniform random destinations, 512 B messages with exponential inter-arrival
//! times until 100 us of simulated time, 100 Gb/s links, 64 KiB port buffers, credit-based
//! flow control, adaptive routing up and deterministic down.
//!
//! Like for like (codes-peer.md, "Remeasured side by side"): CODES' synthetic driver turns
//! its `--load L` into a send interval with GiB/s (2^30 B/s) while its links serialise at
//! 10^9-based rates, so it offers L * 2^30 / 10^9 of line rate ([`codes_offered_load`]);
//! and its links have no propagation delay (a hop costs serialisation plus the router delay
//! only), so the workloads here run with a link latency of 0.
//!
//! Each workload runs in a process of its own, so that its cost is its own: its
//! [`PeerFigures`] come back to the parent, which puts them beside CODES' ([`PeerRow`]) and
//! prints them ([`render_text`]).

use serde::{Deserialize, Serialize};

use crate::sim::{SimConfig, SimResult};
use crate::telemetry::{TelemetryConfig, TelemetryKind};
use crate::topology::{FatTreeParams, Topology};

/// One workload of codes-peer.md with the CODES sequential figures measured for it.
#[derive(Clone, Debug, Serialize)]
pub struct PeerWorkload {
    /// The workload's letter in codes-peer.md (`A` to `D`).
    pub id: &'static str,
    /// The tree it runs on.
    pub topology: FatTreeParams,
    /// Router delay of a switch, ns.
    pub switch_latency_ns: f64,
    /// CODES "chunk": the flow-control unit.
    pub flow_unit_bytes: u32,
    /// The `--load` CODES was run with.
    pub codes_load: f64,
    /// What that offers per node, as a fraction of link bandwidth ([`codes_offered_load`]):
    /// the load this simulator runs with.
    pub load: f64,
    /// What CODES measured for it.
    pub codes: CodesFigures,
}

/// Fraction of line rate that CODES' `--load` offers: its driver computes the send interval
/// with GiB/s (2^30 B) while links run at 12.5 GB/s (10^9), codes-peer.md "The load unit".
pub fn codes_offered_load(codes_load: f64) -> f64 {
    codes_load * f64::from(1u32 << 30) / 1e9
}

/// CODES sequential runs (one process) on this machine kind, quoted from codes-peer.md:
/// measured there, not by this benchmark.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CodesFigures {
    /// When and where they were measured.
    pub measured: String,
    /// Wall time of each run, seconds, fastest first.
    pub wall_seconds: Vec<f64>,
    /// Peak resident memory, MB.
    pub peak_rss_mb: f64,
    /// Packets (CODES: messages of one 512 B packet each) delivered.
    pub packets: u64,
    /// Mean and largest message latency, microseconds, where codes-peer.md gives them as
    /// whole-packet latencies (C's is per 32 B chunk, not comparable).
    pub mean_latency_us: Option<f64>,
    /// Largest message latency, us (see `mean_latency_us`).
    pub max_latency_us: Option<f64>,
    /// Switches crossed per packet, on average.
    pub mean_hops: Option<f64>,
    /// Committed events (counted differently from this simulator's).
    pub events: u64,
}

impl CodesFigures {
    /// The fastest run.
    pub fn best_wall_seconds(&self) -> f64 {
        self.wall_seconds[0]
    }

    /// The median run (the upper middle one for an even count).
    pub fn median_wall_seconds(&self) -> f64 {
        self.wall_seconds[self.wall_seconds.len() / 2]
    }
}

/// Message size of all four workloads, bytes.
pub const MESSAGE_BYTES: u64 = 512;
/// Simulated end time of all four workloads: 100 us, in ps.
pub const END_PS: u64 = 100_000_000;

const REMEASURED: &str =
    "2026-11-23, Debian 12, 2 cores, 24 GiB (ROSS dc3a6a0, CODES a5958cfa, -O3), sequential";
const FIRST_MEASUREMENT: &str =
    "2026-11-21, Debian 12, 2 cores, 24 GiB (first measurement of codes-peer.md), sequential";

/// Workloads A to D with the CODES figures measured for them.
pub fn workloads() -> Vec<PeerWorkload> {
    let workload =
        |id, topology, switch_latency_ns, flow_unit_bytes, codes_load, codes| PeerWorkload {
            id,
            topology,
            switch_latency_ns,
            flow_unit_bytes,
            codes_load,
            load: codes_offered_load(codes_load),
            codes,
        };
    vec![
        workload(
            "A",
            FatTreeParams::radix8(),
            90.0,
            512,
            0.04,
            CodesFigures {
                measured: FIRST_MEASUREMENT.into(),
                wall_seconds: vec![0.67],
                peak_rss_mb: 105.0,
                packets: 12_862,
                mean_latency_us: Some(0.66),
                max_latency_us: None,
                mean_hops: None,
                events: 311_214,
            },
        ),
        workload(
            "B",
            FatTreeParams::radix8(),
            90.0,
            512,
            0.5,
            CodesFigures {
                measured: FIRST_MEASUREMENT.into(),
                wall_seconds: vec![2.36],
                peak_rss_mb: 116.0,
                packets: 167_165,
                mean_latency_us: Some(0.72),
                max_latency_us: None,
                mean_hops: None,
                events: 4_041_820,
            },
        ),
        workload(
            "C",
            FatTreeParams::full(),
            60.0,
            32,
            0.04,
            // 373,055 messages of 512 B (5.97 M chunks of 32 B); its 0.329 us latency is
            // per chunk, pipelined hop by hop.
            CodesFigures {
                measured: REMEASURED.into(),
                wall_seconds: vec![70.8],
                peak_rss_mb: 2072.0,
                packets: 373_055,
                mean_latency_us: None,
                max_latency_us: None,
                mean_hops: Some(4.806),
                events: 106_804_087,
            },
        ),
        workload(
            "D",
            FatTreeParams::full(),
            60.0,
            512,
            0.5,
            CodesFigures {
                measured: REMEASURED.into(),
                wall_seconds: vec![137.7, 139.5, 145.3],
                peak_rss_mb: 2360.0,
                packets: 4_640_956,
                mean_latency_us: Some(0.590),
                max_latency_us: Some(1.209),
                mean_hops: Some(4.807),
                events: 113_768_270,
            },
        ),
    ]
}

impl PeerWorkload {
    /// The simulator settings that match the peer's: no link propagation delay and
    /// telemetry off, since CODES has neither.
    pub fn config(&self, seed: u64) -> SimConfig {
        SimConfig {
            link_gbps: 100.0,
            link_latency_ns: 0.0,
            switch_latency_ns: self.switch_latency_ns,
            packet_bytes: MESSAGE_BYTES as u32,
            flow_unit_bytes: self.flow_unit_bytes,
            buffer_bytes: 64 * 1024,
            end_ps: Some(END_PS),
            seed,
            adaptive: true,
            telemetry: TelemetryConfig {
                kind: TelemetryKind::Off,
                ..TelemetryConfig::default()
            },
            ..SimConfig::default()
        }
    }

    /// The traffic, as a `--workload` spec.
    pub fn workload_spec(&self) -> String {
        format!("uniform,load={},bytes={}", self.load, MESSAGE_BYTES)
    }
}

/// One workload's figures, measured in its own process: the work done (what the network
/// did, simulated) and what it cost (measured).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerFigures {
    /// The workload's id (`A` to `D`).
    pub workload: String,
    /// Nodes of its tree.
    pub nodes: u32,
    /// Offered load, fraction of line rate (CODES' `--load` converted, see `fabric::peer`).
    pub load: f64,
    /// Link propagation delay, ns (0, as CODES' links have none).
    pub link_latency_ns: f64,
    /// Simulated time, us.
    pub simulated_us: f64,
    /// Packets delivered.
    pub packets_delivered: u64,
    /// Mean message latency, us.
    pub mean_latency_us: f64,
    /// Largest message latency, us.
    pub max_latency_us: f64,
    /// Mean path length, hops.
    pub mean_hops: f64,
    /// Simulator events processed.
    pub events: u64,
    /// Events per packet delivered.
    pub events_per_packet: f64,
    /// Events per wall-clock second.
    pub events_per_second: f64,
    /// Wall-clock time of the run, s.
    pub wall_seconds: f64,
    /// CPU time of the process (on a shared machine the wall time includes waiting for a core).
    pub cpu_seconds: f64,
    /// Packets delivered per wall-clock second.
    pub packets_per_wall_second: f64,
    /// Peak resident memory of the process, MB.
    pub peak_rss_mb: f64,
}

impl PeerFigures {
    /// The figures of `workload`'s run `result` on `topology`, with `link_latency_ns` of its
    /// configuration and what the process cost (CPU seconds, peak resident memory in bytes,
    /// measured by the caller). `None` when the run has not exactly one job.
    pub fn of_run(
        workload: &PeerWorkload,
        topology: &Topology,
        link_latency_ns: f64,
        result: &SimResult,
        cpu_seconds: f64,
        peak_rss_bytes: u64,
    ) -> Option<PeerFigures> {
        let [job] = result.jobs.as_slice() else {
            return None;
        };
        let packets = result.packets_delivered;
        Some(PeerFigures {
            workload: workload.id.to_string(),
            nodes: topology.num_nodes(),
            load: workload.load,
            link_latency_ns,
            simulated_us: result.end_ps as f64 / 1e6,
            packets_delivered: packets,
            mean_latency_us: job.mean_message_latency_ns / 1000.0,
            max_latency_us: job.max_message_latency_ns / 1000.0,
            mean_hops: job.average_path_length(),
            events: result.events,
            events_per_packet: result.events as f64 / packets.max(1) as f64,
            events_per_second: result.events as f64 / result.wall_seconds,
            wall_seconds: result.wall_seconds,
            cpu_seconds,
            packets_per_wall_second: packets as f64 / result.wall_seconds,
            peak_rss_mb: peak_rss_bytes as f64 / 1e6,
        })
    }
}

/// One workload: this simulator's run beside CODES' quoted figures, and the ratios.
#[derive(Debug, Serialize)]
pub struct PeerRow {
    /// The workload's id.
    pub workload: String,
    /// The `--load` CODES ran with (its GiB/s unit), against `hostping.load` of line rate.
    pub codes_load: f64,
    /// This simulator's figures.
    pub hostping: PeerFigures,
    /// CODES' quoted figures.
    pub codes: CodesFigures,
    /// hostping's packets delivered against CODES', percent.
    pub packets_difference_percent: f64,
    /// CODES wall time / hostping wall time, against CODES' fastest run.
    pub speedup_vs_best: f64,
    /// The same against CODES' median run.
    pub speedup_vs_median: f64,
    /// hostping peak RSS / CODES peak RSS.
    pub memory_ratio: f64,
}

impl PeerRow {
    /// `figures` of `workload` beside CODES' quoted figures for it, and the ratios.
    pub fn new(workload: PeerWorkload, figures: PeerFigures) -> PeerRow {
        let codes = workload.codes;
        PeerRow {
            workload: workload.id.to_string(),
            codes_load: workload.codes_load,
            packets_difference_percent: (figures.packets_delivered as f64 / codes.packets as f64
                - 1.0)
                * 100.0,
            speedup_vs_best: codes.best_wall_seconds() / figures.wall_seconds,
            speedup_vs_median: codes.median_wall_seconds() / figures.wall_seconds,
            memory_ratio: figures.peak_rss_mb / codes.peak_rss_mb,
            codes,
            hostping: figures,
        }
    }
}

/// Each workload as a two-column block, hostping beside CODES, the work done first (so that a
/// reader sees both simulators did the same) and its cost after.
pub fn render_text(rows: &[PeerRow]) -> String {
    let optional = |v: Option<f64>, precision: usize| match v {
        Some(v) => format!("{v:.precision$}"),
        None => "-".to_string(),
    };
    let mut out = String::new();
    for r in rows {
        let (h, c) = (&r.hostping, &r.codes);
        out += &format!(
            "workload {}: {} nodes, {} us, CODES --load={} = {:.9} of line rate, link latency {} ns, telemetry off\n",
            r.workload, h.nodes, h.simulated_us, r.codes_load, h.load, h.link_latency_ns
        );
        out += &format!(
            "  {:<20} {:>24} {:>22}\n",
            "", "hostping (simulated)", "CODES (quoted)"
        );
        let mut line = |what: &str, ours: String, theirs: String| {
            out += &format!("  {what:<20} {ours:>24} {theirs:>22}\n");
        };
        line(
            "packets delivered",
            format!(
                "{} ({:+.3} %)",
                h.packets_delivered, r.packets_difference_percent
            ),
            c.packets.to_string(),
        );
        line(
            "mean latency us",
            format!("{:.3}", h.mean_latency_us),
            optional(c.mean_latency_us, 3),
        );
        line(
            "max latency us",
            format!("{:.3}", h.max_latency_us),
            optional(c.max_latency_us, 3),
        );
        line(
            "mean hops",
            format!("{:.3}", h.mean_hops),
            optional(c.mean_hops, 3),
        );
        line(
            "wall s",
            format!("{:.2}", h.wall_seconds),
            c.wall_seconds
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
        );
        line("cpu s", format!("{:.2}", h.cpu_seconds), "-".to_string());
        line(
            "peak RSS MB",
            format!("{:.0}", h.peak_rss_mb),
            format!("{:.0}", c.peak_rss_mb),
        );
        line("events", h.events.to_string(), c.events.to_string());
        line(
            "events/s",
            format!("{:.3e}", h.events_per_second),
            format!("{:.3e}", c.events as f64 / c.best_wall_seconds()),
        );
        line(
            "events/packet",
            format!("{:.2}", h.events_per_packet),
            format!("{:.2}", c.events as f64 / c.packets as f64),
        );
        line(
            "packets/wall s",
            format!("{:.3e}", h.packets_per_wall_second),
            format!("{:.3e}", c.packets as f64 / c.best_wall_seconds()),
        );
        out += &format!(
            "  speed-up {:.1}x (CODES' best run), {:.1}x (its median); memory {:.3}x\n  CODES measured {}\n\n",
            r.speedup_vs_best, r.speedup_vs_median, r.memory_ratio, c.measured
        );
    }
    out += "hostping: simulated and timed here. CODES is not run by this benchmark: its sequential runs\n\
            are quoted from CODES' own runs on this project's build machine (Debian 12, 2 cores). The simulators\n\
            count events differently; packets, latency and hops show that both did the same work.\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// codes-peer.md: `--load=0.5` offers 0.5369 of line rate, a mean gap of 76.29 ns for
    /// 512 B instead of 81.92 ns.
    #[test]
    fn codes_load_unit_is_gibibytes_per_second() {
        let d = &workloads()[3];
        assert_eq!(d.load, 0.536870912);
        let gap_ns = 512.0 * 8.0 / (d.load * 100.0);
        assert!((gap_ns - 76.29).abs() < 0.01, "{gap_ns}");
        assert!((workloads()[2].load - 0.04294967296).abs() < 1e-15);
        assert_eq!(d.config(1).link_latency_ns, 0.0);
        assert_eq!(d.codes.best_wall_seconds(), 137.7);
        assert_eq!(d.codes.median_wall_seconds(), 139.5);
    }
}
