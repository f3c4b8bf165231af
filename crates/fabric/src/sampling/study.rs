//! The paper's two experiments on the simulated testbed (all figures simulated):
//!
//! - **Spread** (the paper's Figure 4): samplers sweep 36, 72 or 108 ports (their own leaf,
//!   the core one hop away, the far leaf two hops away, the leaf and the core, all three),
//!   one sampler or all 16 compute nodes reading the same ports relative to themselves
//!   (redundant), on an idle fabric and under a bandwidth test. Each cell reports the mean,
//!   smallest and largest spread over every sweep of every sampler.
//! - **Application bandwidth** (Figure 5): a bandwidth test's throughput with 1 sampler, 16
//!   redundant samplers and the Delegator's split over 16 samplers, each reading the whole
//!   fabric (108 ports) at 1, 10 and 100 Hz, against the same run without sampling.
//!
//! Samplers start their sweeps together (LDMS synchronous sampling, aligned to the period:
//! the worst case for redundant samplers), the first 1 ms into the run, when the bandwidth
//! test has reached its rate.

use std::time::Instant;

use serde::Serialize;

use super::{delegate, switch_at_hops, switch_ports, switches_by_distance, testbed_nodes};
use crate::sim::{SamplerSpec, SimConfig, SimError, SimResult, Simulation};
use crate::telemetry::{TelemetryConfig, TelemetryKind};
use crate::topology::{NodeId, PortRef, SwitchId, Topology};
use crate::traffic::{Job, Op, Program};

/// When the samplers' first sweep starts.
pub const FIRST_SWEEP_PS: u64 = 1_000_000_000;

/// The paper's link: 4x QDR, 40 Gb/s signalling, 32 Gb/s of data after 8b/10b coding.
pub const QDR_DATA_GBPS: f64 = 32.0;

/// The bandwidth test's messages (the paper's `ib_send_bw` used 64 KiB).
pub const TEST_MESSAGE_BYTES: u64 = 64 * 1024;

/// How the study runs.
#[derive(Clone, Debug, Serialize)]
pub struct StudyConfig {
    /// The simulator's settings (QDR links, telemetry off, the MAD model's defaults).
    pub sim: SimConfig,
    /// Sweep rate of the spread experiment.
    pub spread_hz: f64,
    /// Sweeps each sampler makes in a spread cell.
    pub spread_sweeps: u32,
    /// Simulated length of each bandwidth run.
    pub bandwidth_ps: u64,
    /// Sweep rates of the bandwidth experiment, Hz (the paper's 1, 10 and 100).
    pub frequencies: Vec<f64>,
}

impl Default for StudyConfig {
    fn default() -> Self {
        StudyConfig {
            sim: SimConfig {
                link_gbps: QDR_DATA_GBPS,
                telemetry: TelemetryConfig {
                    kind: TelemetryKind::Off,
                    ..TelemetryConfig::default()
                },
                ..SimConfig::default()
            },
            spread_hz: 100.0,
            spread_sweeps: 20,
            bandwidth_ps: 3_000_000_000_000,
            frequencies: vec![1.0, 10.0, 100.0],
        }
    }
}

/// Which switches each sampler reads, relative to its own node.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Targets {
    /// Its own leaf (36 ports).
    Local,
    /// The core, one hop away (36).
    OneHop,
    /// The other leaf, two hops away (36).
    TwoHops,
    /// Its leaf and the core (72).
    LocalAndCore,
    /// All three switches, nearest first (108).
    All,
}

impl Targets {
    /// Every choice, in the order the spread table lists them.
    pub const ALL: [Targets; 5] = [
        Targets::Local,
        Targets::OneHop,
        Targets::TwoHops,
        Targets::LocalAndCore,
        Targets::All,
    ];

    /// The choice in a table's words (`core (1 hop)`).
    pub fn label(self) -> &'static str {
        match self {
            Targets::Local => "local leaf",
            Targets::OneHop => "core (1 hop)",
            Targets::TwoHops => "far leaf (2 hops)",
            Targets::LocalAndCore => "leaf + core",
            Targets::All => "all 3 switches",
        }
    }

    /// The switches a sampler on `node` reads, in the order it reads them.
    pub fn switches(self, topology: &Topology, node: NodeId) -> Vec<SwitchId> {
        let at = |hops| switch_at_hops(topology, node, hops).expect("testbed switch");
        match self {
            Targets::Local => vec![at(0)],
            Targets::OneHop => vec![at(1)],
            Targets::TwoHops => vec![at(2)],
            Targets::LocalAndCore => vec![at(0), at(1)],
            Targets::All => switches_by_distance(topology, node),
        }
    }

    /// The port list of a sampler on `node`.
    pub fn ports(self, topology: &Topology, node: NodeId) -> Vec<PortRef> {
        self.switches(topology, node)
            .into_iter()
            .flat_map(|s| switch_ports(topology, s))
            .collect()
    }
}

/// Who samples in a bandwidth run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// One sampler (the first compute node) reads all 108 ports.
    One,
    /// Every compute node reads all 108 ports.
    Redundant,
    /// The 16 compute nodes split the ports by the Delegator's rule.
    Delegated,
}

impl Sampling {
    /// Every choice, in the order the bandwidth table lists them.
    pub const ALL: [Sampling; 3] = [Sampling::One, Sampling::Redundant, Sampling::Delegated];

    /// The choice in a table's words (`16 redundant`).
    pub fn label(self) -> &'static str {
        match self {
            Sampling::One => "1 sampler",
            Sampling::Redundant => "16 redundant",
            Sampling::Delegated => "16 delegated",
        }
    }

    /// The samplers, each with its port list, sweeping every `period_ps`.
    pub fn samplers(self, topology: &Topology, period_ps: u64) -> Vec<SamplerSpec> {
        let nodes = testbed_nodes(topology);
        let all = |node| Targets::All.ports(topology, node);
        let lists: Vec<(NodeId, Vec<PortRef>)> = match self {
            Sampling::One => vec![(nodes[0], all(nodes[0]))],
            Sampling::Redundant => nodes.iter().map(|&n| (n, all(n))).collect(),
            Sampling::Delegated => {
                let switches: Vec<SwitchId> = (0..topology.num_switches()).map(SwitchId).collect();
                nodes
                    .iter()
                    .copied()
                    .zip(delegate(topology, &nodes, &switches))
                    .filter(|(_, ports)| !ports.is_empty())
                    .collect()
            }
        };
        lists
            .into_iter()
            .map(|(node, ports)| SamplerSpec {
                node,
                ports,
                period_ps,
                first_sweep_ps: FIRST_SWEEP_PS,
            })
            .collect()
    }
}

/// The bandwidth test: rank 0 streams messages to rank 1 back to back until the run ends.
struct BandwidthTest;

impl Program for BandwidthTest {
    fn next_op(&mut self, rank: u32, _rng: &mut dyn rand::RngCore) -> Option<Op> {
        (rank == 0).then_some(Op::Send {
            dst: 1,
            bytes: TEST_MESSAGE_BYTES,
            not_before_ps: 0,
        })
    }
}

/// The bandwidth test between the first compute node of each leaf (its path crosses the
/// first node's leaf, the core and the other leaf).
pub fn bandwidth_test(topology: &Topology) -> Job {
    let nodes = testbed_nodes(topology);
    let per_leaf = nodes.len() / 2;
    Job {
        name: "bandwidth test".to_string(),
        placement: vec![nodes[0], nodes[per_leaf]],
        program: Box::new(BandwidthTest),
    }
}

/// The cost of a run, printed beside its figures so that they can be seen to come from work
/// done.
#[derive(Copy, Clone, Debug, Default, Serialize)]
pub struct Work {
    /// Finished sweeps over all samplers.
    pub sweeps: u64,
    /// Queries sent (each answered by one MAD back).
    pub queries: u64,
    /// MAD transmissions over all links.
    pub mad_hops: u64,
    /// Data packets delivered.
    pub packets: u64,
    /// Simulator events processed.
    pub events: u64,
    /// Wall-clock time of the run, s.
    pub wall_seconds: f64,
}

/// Spread statistics over the finished sweeps of a run, microseconds.
#[derive(Copy, Clone, Debug, Default, Serialize)]
pub struct Spread {
    /// Mean spread: from a sweep's first query to its last answer.
    pub mean_us: f64,
    /// Smallest spread.
    pub min_us: f64,
    /// Largest spread.
    pub max_us: f64,
}

/// One cell of the spread experiment.
#[derive(Clone, Debug, Serialize)]
pub struct SpreadCell {
    /// Which switches each sampler reads.
    pub targets: Targets,
    /// Ports each sampler reads.
    pub ports: usize,
    /// Samplers sweeping at once (1, or 16 reading redundantly).
    pub samplers: usize,
    /// Whether the bandwidth test ran during the sweeps.
    pub loaded: bool,
    /// Spread over every sweep of every sampler.
    pub spread: Spread,
    /// What the run cost.
    pub work: Work,
}

/// One cell of the bandwidth experiment.
#[derive(Clone, Debug, Serialize)]
pub struct BandwidthCell {
    /// Sweep rate of every sampler, Hz.
    pub hz: f64,
    /// Who samples.
    pub sampling: Sampling,
    /// Samplers with ports (the Delegator may leave some without).
    pub samplers: usize,
    /// The bandwidth test's throughput, Gb/s.
    pub gbps: f64,
    /// Change against the run without sampling, percent.
    pub change_pct: f64,
    /// Spread over every sweep of every sampler.
    pub spread: Spread,
    /// What the run cost.
    pub work: Work,
}

/// Both experiments' results, and the baseline bandwidth.
#[derive(Clone, Debug, Serialize)]
pub struct StudyResult {
    /// How the study ran.
    pub config: StudyConfig,
    /// The spread experiment (Figure 4), one cell per targets, sampler count and load.
    pub spread: Vec<SpreadCell>,
    /// The bandwidth test's throughput without sampling, Gb/s.
    pub baseline_gbps: f64,
    /// What that run cost.
    pub baseline_work: Work,
    /// The bandwidth experiment (Figure 5), one cell per rate and sampling.
    pub bandwidth: Vec<BandwidthCell>,
}

fn run(
    topology: &Topology,
    config: &SimConfig,
    end_ps: u64,
    jobs: Vec<Job>,
    samplers: Vec<SamplerSpec>,
) -> Result<(SimResult, Work), SimError> {
    let config = SimConfig {
        end_ps: Some(end_ps),
        ..config.clone()
    };
    let started = Instant::now();
    let result = Simulation::with_samplers(topology, config, jobs, samplers)?.run(&mut |_| {});
    let sampling = result.sampling.as_ref();
    let samplers = sampling.map_or(&[][..], |s| &s.samplers[..]);
    let work = Work {
        sweeps: samplers.iter().map(|s| s.sweeps.len() as u64).sum(),
        queries: samplers.iter().map(|s| s.queries_sent).sum(),
        mad_hops: sampling.map_or(0, |s| s.mad_hops),
        packets: result.packets_delivered,
        events: result.events,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    Ok((result, work))
}

/// Mean, smallest and largest spread of every finished sweep of a run.
pub fn spread_of(result: &SimResult) -> Spread {
    let spreads: Vec<f64> = result
        .sampling
        .iter()
        .flat_map(|s| &s.samplers)
        .flat_map(|s| &s.sweeps)
        .map(|sweep| sweep.spread_ps as f64 / 1e6)
        .collect();
    if spreads.is_empty() {
        return Spread::default();
    }
    Spread {
        mean_us: spreads.iter().sum::<f64>() / spreads.len() as f64,
        min_us: spreads.iter().copied().fold(f64::INFINITY, f64::min),
        max_us: spreads.iter().copied().fold(0.0, f64::max),
    }
}

fn period_ps(hz: f64) -> u64 {
    (1e12 / hz).round() as u64
}

/// The application's throughput over the run, Gb/s.
fn gbps(result: &SimResult) -> f64 {
    result.jobs[0].bytes_delivered as f64 * 8.0 / (result.end_ps as f64 / 1e12) / 1e9
}

/// One spread cell: `samplers` (1 or 16) read `targets`, with or without the bandwidth test.
pub fn spread_cell(
    config: &StudyConfig,
    topology: &Topology,
    targets: Targets,
    samplers: usize,
    loaded: bool,
) -> Result<SpreadCell, SimError> {
    let period = period_ps(config.spread_hz);
    let specs: Vec<SamplerSpec> = testbed_nodes(topology)
        .into_iter()
        .take(samplers)
        .map(|node| SamplerSpec {
            node,
            ports: targets.ports(topology, node),
            period_ps: period,
            first_sweep_ps: FIRST_SWEEP_PS,
        })
        .collect();
    let ports = specs[0].ports.len();
    let jobs = if loaded {
        vec![bandwidth_test(topology)]
    } else {
        Vec::new()
    };
    // Just before the sweep after the last would start.
    let end = FIRST_SWEEP_PS + u64::from(config.spread_sweeps) * period - 1;
    let (result, work) = run(topology, &config.sim, end, jobs, specs)?;
    Ok(SpreadCell {
        targets,
        ports,
        samplers,
        loaded,
        spread: spread_of(&result),
        work,
    })
}

/// The whole study, calling `progress` with a label before each run.
pub fn run_study(
    config: &StudyConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<StudyResult, SimError> {
    let topology = super::testbed();
    let mut spread = Vec::new();
    for loaded in [false, true] {
        for samplers in [1, 16] {
            for targets in Targets::ALL {
                progress(&format!(
                    "spread: {} sampler(s), {}, {}",
                    samplers,
                    targets.label(),
                    if loaded { "loaded" } else { "idle" }
                ));
                spread.push(spread_cell(config, &topology, targets, samplers, loaded)?);
            }
        }
    }
    progress("bandwidth: no sampling");
    let end = config.bandwidth_ps;
    let (baseline, baseline_work) = run(
        &topology,
        &config.sim,
        end,
        vec![bandwidth_test(&topology)],
        Vec::new(),
    )?;
    let baseline_gbps = gbps(&baseline);
    let mut bandwidth = Vec::new();
    for &hz in &config.frequencies {
        for sampling in Sampling::ALL {
            progress(&format!("bandwidth: {} at {hz} Hz", sampling.label()));
            let samplers = sampling.samplers(&topology, period_ps(hz));
            let active = samplers.len();
            let (result, work) = run(
                &topology,
                &config.sim,
                end,
                vec![bandwidth_test(&topology)],
                samplers,
            )?;
            let gbps = gbps(&result);
            bandwidth.push(BandwidthCell {
                hz,
                sampling,
                samplers: active,
                gbps,
                change_pct: (gbps - baseline_gbps) / baseline_gbps * 100.0,
                spread: spread_of(&result),
                work,
            });
        }
    }
    Ok(StudyResult {
        config: config.clone(),
        spread,
        baseline_gbps,
        baseline_work,
        bandwidth,
    })
}

/// The study's two tables, its set-up above them and the work done beside every figure.
pub fn render_text(r: &StudyResult) -> String {
    let c = &r.config;
    let sim = &c.sim;
    let ms = |ps: u64| ps as f64 / 1e9;
    let mut out = String::new();
    out += "Switch-port sampling on the simulated LDMS ibfabric testbed (SIMULATED; paper: \
            Measuring Minimum Switch Port Metric Retrieval Time and Impact for Multi-Layer \
            InfiniBand Fabrics)\n";
    out += &format!(
        "fabric: 2 leaf switches and 1 core of 36 ports, 2 links leaf-core; links {} Gb/s \
         (4x QDR data rate), {} ns; switches {} ns; MTU {} B\n",
        sim.link_gbps, sim.link_latency_ns, sim.switch_latency_ns, sim.packet_bytes
    );
    out += &format!(
        "MADs: {} B on VL15 (strict priority, no credits); one management processor per switch, \
         {} ns per query, FIFO\n",
        sim.mads.mad_bytes, sim.mads.service_ns
    );
    out += &format!(
        "samplers: the first 8 nodes under each leaf (16), reading all 36 port numbers of each \
         switch one query after another; sweeps start together, the first {} ms in\n",
        ms(FIRST_SWEEP_PS)
    );
    out += &format!(
        "load: a bandwidth test from the first sampler node (leaf 1) to the first node of leaf 2, \
         {} KiB messages back to back\n\n",
        TEST_MESSAGE_BYTES / 1024
    );
    out += &format!(
        "Spread, us: mean / min / max over every sweep of every sampler; {} sweeps per sampler at \
         {} Hz per cell\n",
        c.spread_sweeps, c.spread_hz
    );
    out += &format!(
        "  {:<18} {:>5}  {:>24} {:>24} {:>24} {:>24}\n",
        "targets",
        "ports",
        "1 sampler idle",
        "1 sampler loaded",
        "16 redundant idle",
        "16 redundant loaded"
    );
    let cell = |targets: Targets, samplers: usize, loaded: bool| {
        r.spread
            .iter()
            .find(|s| s.targets == targets && s.samplers == samplers && s.loaded == loaded)
    };
    let mut total = Work::default();
    for targets in Targets::ALL {
        let mut line = String::new();
        let mut ports = 0;
        for (samplers, loaded) in [(1, false), (1, true), (16, false), (16, true)] {
            let text = match cell(targets, samplers, loaded) {
                Some(s) => {
                    ports = s.ports;
                    add_work(&mut total, &s.work);
                    format!(
                        "{:.1} / {:.1} / {:.1}",
                        s.spread.mean_us, s.spread.min_us, s.spread.max_us
                    )
                }
                None => "-".to_string(),
            };
            line += &format!(" {text:>24}");
        }
        out += &format!("  {:<18} {:>5} {line}\n", targets.label(), ports);
    }
    out += &format!("  work: {}\n\n", work_text(&total));
    out += &format!(
        "Bandwidth test throughput with sampling of all 108 ports, {} ms simulated per run; \
         without sampling {:.4} Gb/s ({})\n",
        ms(c.bandwidth_ps),
        r.baseline_gbps,
        work_text(&r.baseline_work)
    );
    out += &format!(
        "  {:>6}  {:<14} {:>8} {:>10} {:>9} {:>18}  work\n",
        "Hz", "sampling", "samplers", "Gb/s", "change %", "spread mean/max us"
    );
    for b in &r.bandwidth {
        out += &format!(
            "  {:>6}  {:<14} {:>8} {:>10.4} {:>+9.4} {:>18}  {}\n",
            b.hz,
            b.sampling.label(),
            b.samplers,
            b.gbps,
            b.change_pct,
            format!("{:.1} / {:.1}", b.spread.mean_us, b.spread.max_us),
            work_text(&b.work)
        );
    }
    out += "\nAll figures are simulated. The Delegator never splits a switch: with 3 switches it \
            gives one to each of 3 samplers and none to the other 13.\n";
    out
}

/// Adds `w` to `total`.
fn add_work(total: &mut Work, w: &Work) {
    total.sweeps += w.sweeps;
    total.queries += w.queries;
    total.mad_hops += w.mad_hops;
    total.packets += w.packets;
    total.events += w.events;
    total.wall_seconds += w.wall_seconds;
}

/// The work done, in words.
fn work_text(w: &Work) -> String {
    format!(
        "{} sweeps, {} queries, {} MAD hops, {} data packets, {} events, {:.2} s wall",
        w.sweeps, w.queries, w.mad_hops, w.packets, w.events, w.wall_seconds
    )
}
