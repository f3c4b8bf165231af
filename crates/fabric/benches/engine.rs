//! The engine against the CODES fat-tree model (`../shared/reference/codes-peer.md`):
//! workloads A to D (uniform random destinations, 512 B messages, exponential inter-arrival
//! times, 100 us simulated) and one round of the thesis' 2-D stencil on `tapered` (4.2: a
//! 64 x 72 grid, row-major, 128 KiB to each neighbour in turn, 4 KiB packets).
//!
//! `cargo bench -p fabric --bench engine [A B C D stencil]` prints, per workload, the wall
//! time, the CPU time of the simulating thread (on a shared machine the wall time includes
//! waiting for a core), simulated time, events, packets delivered per wall second and peak
//! RSS (VmHWM, reset before each workload), next to CODES' sequential figures where it has
//! them.

use std::time::Instant;

use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{FatTreeParams, NodeId, Topology};
use fabric::traffic::{Job, Op, Program};
use rand::{Rng, RngCore};
use rand_distr::{Distribution, Exp};

const END_PS: u64 = 100_000_000;
const MESSAGE_BYTES: u64 = 512;

/// Every rank sends `bytes` to uniformly random other ranks, with exponential gaps that load
/// its link to `load`, until `end_ps`.
struct Uniform {
    ranks: u32,
    bytes: u64,
    gap: Exp<f64>,
    end_ps: u64,
    next_ps: Vec<u64>,
}

impl Uniform {
    fn new(ranks: u32, bytes: u64, load: f64, link_gbps: f64, end_ps: u64) -> Self {
        let mean_gap_ps = bytes as f64 * 8000.0 / (link_gbps * load);
        Uniform {
            ranks,
            bytes,
            gap: Exp::new(1.0 / mean_gap_ps).expect("positive rate"),
            end_ps,
            next_ps: vec![0; ranks as usize],
        }
    }
}

impl Program for Uniform {
    fn next_op(&mut self, rank: u32, rng: &mut dyn RngCore) -> Option<Op> {
        let at = self.next_ps[rank as usize] + self.gap.sample(rng).round() as u64;
        if at >= self.end_ps {
            return None;
        }
        self.next_ps[rank as usize] = at;
        let other = rng.gen_range(0..self.ranks - 1);
        let dst = if other >= rank { other + 1 } else { other };
        Some(Op::Send {
            dst,
            bytes: self.bytes,
            not_before_ps: at,
        })
    }
}

/// One round of the 2-D stencil: +x, -x, +y, -y neighbours in turn (edges skip the missing
/// ones), then wait for the neighbours' messages.
struct Stencil {
    width: u32,
    height: u32,
    bytes: u64,
    step: Vec<u8>,
}

impl Stencil {
    fn neighbours(&self, rank: u32) -> Vec<u32> {
        let (x, y) = (rank % self.width, rank / self.width);
        let mut out = Vec::new();
        if x + 1 < self.width {
            out.push(rank + 1);
        }
        if x > 0 {
            out.push(rank - 1);
        }
        if y + 1 < self.height {
            out.push(rank + self.width);
        }
        if y > 0 {
            out.push(rank - self.width);
        }
        out
    }
}

impl Program for Stencil {
    fn next_op(&mut self, rank: u32, _rng: &mut dyn RngCore) -> Option<Op> {
        let neighbours = self.neighbours(rank);
        let step = usize::from(self.step[rank as usize]);
        self.step[rank as usize] += 1;
        match step.cmp(&neighbours.len()) {
            std::cmp::Ordering::Less => Some(Op::Send {
                dst: neighbours[step],
                bytes: self.bytes,
                not_before_ps: 0,
            }),
            std::cmp::Ordering::Equal => Some(Op::AwaitReceived {
                total: neighbours.len() as u64,
            }),
            std::cmp::Ordering::Greater => None,
        }
    }
}

struct Workload {
    name: &'static str,
    what: &'static str,
    topology: Topology,
    config: SimConfig,
    program: Box<dyn Program>,
    /// CODES sequential wall seconds and peak RSS in MB (codes-peer.md), where measured.
    codes: Option<(f64, f64)>,
}

fn uniform(
    name: &'static str,
    what: &'static str,
    topology: Topology,
    switch_latency_ns: f64,
    flow_unit_bytes: u32,
    load: f64,
    codes: (f64, f64),
) -> Workload {
    let config = SimConfig {
        link_gbps: 100.0,
        switch_latency_ns,
        packet_bytes: MESSAGE_BYTES as u32,
        flow_unit_bytes,
        buffer_bytes: 64 * 1024,
        end_ps: Some(END_PS),
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Off,
            ..TelemetryConfig::default()
        },
        ..SimConfig::default()
    };
    let program = Uniform::new(
        topology.num_nodes(),
        MESSAGE_BYTES,
        load,
        config.link_gbps,
        END_PS,
    );
    Workload {
        name,
        what,
        topology,
        config,
        program: Box::new(program),
        codes: Some(codes),
    }
}

fn workloads() -> Vec<Workload> {
    let radix8 = || Topology::new(FatTreeParams::radix8()).expect("built-in tree");
    let (width, height) = (64, 72);
    vec![
        uniform(
            "A",
            "radix8, 4 % load",
            radix8(),
            90.0,
            512,
            0.04,
            (0.67, 105.0),
        ),
        uniform(
            "B",
            "radix8, 50 % load",
            radix8(),
            90.0,
            512,
            0.5,
            (2.36, 116.0),
        ),
        uniform(
            "C",
            "full, 4 %, 32 B unit",
            Topology::full(),
            60.0,
            32,
            0.04,
            (89.7, 2020.0),
        ),
        uniform(
            "D",
            "full, 50 % load",
            Topology::full(),
            60.0,
            512,
            0.5,
            (157.8, 2300.0),
        ),
        Workload {
            name: "stencil",
            what: "tapered, 64x72 row-major, 128 KiB x 4",
            topology: Topology::tapered(),
            config: SimConfig {
                packet_bytes: 4096,
                telemetry: TelemetryConfig {
                    kind: TelemetryKind::Off,
                    ..TelemetryConfig::default()
                },
                ..SimConfig::default()
            },
            program: Box::new(Stencil {
                width,
                height,
                bytes: 128 * 1024,
                step: vec![0; (width * height) as usize],
            }),
            codes: None,
        },
    ]
}

/// Peak resident set of this process since the last reset, MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU time this thread has run, seconds (the scheduler's own count, in nanoseconds).
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// Makes VmHWM start again from the current resident set (Linux `clear_refs`, value 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

struct Measured {
    result: SimResult,
    wall_s: f64,
    cpu_s: f64,
    rss_mb: f64,
}

fn run(workload: Workload) -> Measured {
    let nodes = workload.topology.num_nodes();
    let job = Job {
        name: workload.name.to_string(),
        placement: (0..nodes).map(NodeId).collect(),
        program: workload.program,
    };
    reset_peak_rss();
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    let sim =
        Simulation::new(&workload.topology, workload.config, vec![job]).expect("valid workload");
    let result = sim.run(&mut |_| {});
    Measured {
        result,
        wall_s: started.elapsed().as_secs_f64(),
        cpu_s: cpu_seconds() - cpu_before,
        rss_mb: peak_rss_mb(),
    }
}

fn main() {
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    println!(
        "{:<8} {:<38} {:>7} {:>7} {:>7} {:>10} {:>9} {:>10} {:>8} {:>7} {:>5}  CODES seq wall / RSS",
        "workload", "", "sim us", "wall s", "cpu s", "events", "packets", "packets/s", "mean ns",
        "RSS MB", "done"
    );
    for workload in workloads() {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == workload.name) {
            continue;
        }
        let (name, what, codes) = (workload.name, workload.what, workload.codes);
        let m = run(workload);
        let job = &m.result.jobs[0];
        let codes = codes.map_or(String::new(), |(s, mb)| format!("{s:.2} s / {mb:.0} MB"));
        println!(
            "{:<8} {:<38} {:>7.1} {:>7.2} {:>7.2} {:>10} {:>9} {:>10.0} {:>8.0} {:>7.0} {:>5}  {}",
            name,
            what,
            m.result.end_ps as f64 / 1e6,
            m.wall_s,
            m.cpu_s,
            m.result.events,
            m.result.packets_delivered,
            m.result.packets_delivered as f64 / m.wall_s,
            job.mean_message_latency_ns,
            m.rss_mb,
            job.finished,
            codes
        );
    }
}
