//! The peer benchmark: workloads A to D that the CODES fat-tree model (on ROSS) was measured
//! with on this project's machine kind (`../shared/reference/codes-peer.md`), and its
//! figures, so that `hostping fabric bench peer` can run the same traffic on this simulator
//! and print both side by side.
//!
//! All four: uniform random destinations, 512 B messages with exponential inter-arrival
//! times until 100 us of simulated time, 100 Gb/s links, 64 KiB port buffers, credit-based
//! flow control, adaptive routing up and deterministic down.

use serde::{Deserialize, Serialize};

use crate::sim::SimConfig;
use crate::telemetry::{TelemetryConfig, TelemetryKind};
use crate::topology::FatTreeParams;

/// One workload of codes-peer.md with the CODES sequential figures measured for it.
#[derive(Clone, Debug, Serialize)]
pub struct PeerWorkload {
    pub id: &'static str,
    pub topology: FatTreeParams,
    pub switch_latency_ns: f64,
    /// CODES "chunk": the flow-control unit.
    pub flow_unit_bytes: u32,
    /// Offered load per node, as a fraction of link bandwidth. "About 4 %" for A and C.
    pub load: f64,
    pub codes: CodesFigures,
}

/// CODES sequential run (one process) on this machine kind, from codes-peer.md.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct CodesFigures {
    pub wall_seconds: f64,
    pub peak_rss_mb: f64,
    /// Packets (CODES: messages of one packet each; C counted in 32 B chunks, see below)
    /// delivered, from "what the network did".
    pub packets: f64,
}

impl CodesFigures {
    pub fn packets_per_wall_second(&self) -> f64 {
        self.packets / self.wall_seconds
    }
}

/// Message size and simulated end time shared by all four workloads.
pub const MESSAGE_BYTES: u64 = 512;
pub const END_PS: u64 = 100_000_000;

pub fn workloads() -> Vec<PeerWorkload> {
    let codes = |wall_seconds, peak_rss_mb, packets| CodesFigures {
        wall_seconds,
        peak_rss_mb,
        packets,
    };
    vec![
        PeerWorkload {
            id: "A",
            topology: FatTreeParams::radix8(),
            switch_latency_ns: 90.0,
            flow_unit_bytes: 512,
            load: 0.04,
            codes: codes(0.67, 105.0, 12_862.0),
        },
        PeerWorkload {
            id: "B",
            topology: FatTreeParams::radix8(),
            switch_latency_ns: 90.0,
            flow_unit_bytes: 512,
            load: 0.5,
            codes: codes(2.36, 116.0, 167_165.0),
        },
        PeerWorkload {
            id: "C",
            topology: FatTreeParams::full(),
            switch_latency_ns: 60.0,
            flow_unit_bytes: 32,
            load: 0.04,
            // 355,661 messages of 512 B (5.69 M chunks of 32 B).
            codes: codes(89.7, 2020.0, 355_661.0),
        },
        PeerWorkload {
            id: "D",
            topology: FatTreeParams::full(),
            switch_latency_ns: 60.0,
            flow_unit_bytes: 512,
            load: 0.5,
            codes: codes(157.8, 2300.0, 4_640_000.0),
        },
    ]
}

impl PeerWorkload {
    /// The simulator settings that match the peer's: telemetry off, since CODES has none.
    pub fn config(&self, seed: u64) -> SimConfig {
        SimConfig {
            link_gbps: 100.0,
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
}
