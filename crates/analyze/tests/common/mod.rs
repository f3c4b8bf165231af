//! Hand-built probe runs, baselines and snapshots for built-in hosts (no vhost).
//!
//! The healthy numbers follow Hostping 3.2.2: a GPU behind the RNIC's own switch answers in
//! 1.0 us at line rate; through the root complex 2.2 us and 125.5 Gb/s; across UPI 2.4 us
//! and 116.4 Gb/s. Memory is at line rate where the model says it is affinitive.
#![allow(dead_code)]

use analyze::{analyze, FollowUp, FollowUpTest, History, Input, NoFollowUp};
use model::{
    Baseline, BaselinePath, Cause, ComponentClass, GpuActivity, HostSnapshot, HostTopology,
    LatencyStats, LinkId, LinkKind, LinkUtilisation, Mode, Op, Path, PathMeasurement, PathOutcome,
    PathProbe, ProbeRun, Provenance, Report, RnicActivity, Setting, StreamResult, Thresholds,
    Turnaround,
};

pub const LARGE: u64 = 131_072;

pub fn host(name: &str) -> HostTopology {
    model::builtin::load(name).unwrap().unwrap()
}

/// The healthy (bandwidth Gb/s, latency us) of a path.
pub fn healthy(host: &HostTopology, p: &Path) -> (f64, f64) {
    let crosses_sockets = p
        .links
        .iter()
        .any(|l| host.link(l).unwrap().kind == LinkKind::InterSocket);
    let is_gpu = host.component(&p.endpoint).unwrap().class() == ComponentClass::Gpu;
    let rnic_switch = &host.link(&p.links[0]).unwrap().up;
    match (is_gpu, p.p2p_through_cpu, crosses_sockets) {
        (true, false, _) => match &p.turnaround {
            Turnaround::Switch(s) if s == rnic_switch => (199.0, 1.0),
            _ => (198.0, 1.1),
        },
        (true, true, false) => (125.5, 2.2),
        (true, true, true) => (116.4, 2.4),
        (false, _, false) => (199.0, 1.6),
        (false, _, true) if p.affinitive => (199.0, 1.8),
        (false, _, true) => (140.0, 1.9),
    }
}

fn stats(us: f64) -> LatencyStats {
    LatencyStats {
        samples: 1000,
        min_us: us * 0.97,
        p50_us: us,
        p90_us: us * 1.02,
        p99_us: us * 1.05,
        max_us: us * 1.2,
    }
}

pub fn measured(bw: f64, lat: f64) -> PathOutcome {
    PathOutcome::Measured(PathMeasurement {
        op: Op::Write,
        small_bytes: 1,
        large_bytes: LARGE,
        small: stats(lat),
        large: stats(lat + LARGE as f64 * 8.0 / bw / 1000.0),
        bandwidth_gbps: bw,
        verified_bytes: None,
    })
}

/// A probe run and its baseline. Idle mode probes the full mesh, busy mode the affinitive
/// paths only (Hostping 4.3). `f` gets the path and its healthy (bandwidth, latency) and
/// returns what was measured.
pub struct Matrix {
    pub host: HostTopology,
    pub run: ProbeRun,
    pub baseline: Baseline,
}

impl Matrix {
    pub fn new(host_name: &str, mode: Mode, f: impl Fn(&Path, (f64, f64)) -> (f64, f64)) -> Matrix {
        let host = host(host_name);
        let planned: Vec<&Path> = host
            .paths()
            .iter()
            .filter(|p| mode == Mode::Idle || p.affinitive)
            .collect();
        let run = ProbeRun {
            host: host.name.clone(),
            provenance: Provenance::Simulated,
            mode,
            started_ns: 1_000,
            finished_ns: 2_000_000,
            paths: planned
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let (bw, lat) = f(p, healthy(&host, p));
                    PathProbe {
                        rnic: p.rnic.clone(),
                        endpoint: p.endpoint.clone(),
                        started_ns: 1_000 + i as u64 * 10_000,
                        outcome: measured(bw, lat),
                        stream: None,
                    }
                })
                .collect(),
        };
        let baseline = Baseline {
            host: host.name.clone(),
            provenance: Provenance::Simulated,
            runs: 5,
            paths: host
                .paths()
                .iter()
                .map(|p| {
                    let (bw, lat) = healthy(&host, p);
                    BaselinePath {
                        rnic: p.rnic.clone(),
                        endpoint: p.endpoint.clone(),
                        latency_us: lat,
                        bandwidth_gbps: bw,
                    }
                })
                .collect(),
            measured_with: Default::default(),
        };
        Matrix {
            host,
            run,
            baseline,
        }
    }

    /// Every path at its healthy numbers except those `change` returns `Some` for.
    pub fn with(
        host_name: &str,
        mode: Mode,
        change: impl Fn(&str, &str, (f64, f64)) -> Option<(f64, f64)>,
    ) -> Matrix {
        Matrix::new(host_name, mode, |p, h| {
            change(p.rnic.as_str(), p.endpoint.as_str(), h).unwrap_or(h)
        })
    }

    pub fn fail(&mut self, rnic: &str, endpoint: &str, error: &str) {
        let p = self
            .run
            .paths
            .iter_mut()
            .find(|p| p.rnic.as_str() == rnic && p.endpoint.as_str() == endpoint)
            .unwrap();
        p.outcome = PathOutcome::Failed {
            error: error.into(),
        };
    }

    pub fn analyze(
        &self,
        snapshot: &HostSnapshot,
        history: &History,
        follow_up: &mut dyn FollowUp,
    ) -> Report {
        self.analyze_run(snapshot, history, follow_up, history.len() as u32)
    }

    pub fn analyze_run(
        &self,
        snapshot: &HostSnapshot,
        history: &History,
        follow_up: &mut dyn FollowUp,
        run_index: u32,
    ) -> Report {
        self.analyze_full(
            snapshot,
            history,
            follow_up,
            run_index,
            &Thresholds::default(),
        )
    }

    /// [`Matrix::analyze`] with other thresholds.
    pub fn analyze_with(
        &self,
        snapshot: &HostSnapshot,
        history: &History,
        follow_up: &mut dyn FollowUp,
        thresholds: &Thresholds,
    ) -> Report {
        self.analyze_full(
            snapshot,
            history,
            follow_up,
            history.len() as u32,
            thresholds,
        )
    }

    fn analyze_full(
        &self,
        snapshot: &HostSnapshot,
        history: &History,
        follow_up: &mut dyn FollowUp,
        run_index: u32,
        thresholds: &Thresholds,
    ) -> Report {
        let input = Input {
            host: &self.host,
            run: &self.run,
            baseline: &self.baseline,
            snapshot,
            thresholds,
            history,
            run_index,
        };
        analyze(&input, follow_up)
    }

    /// Idle snapshot, empty history, no follow-up.
    pub fn quick(&self) -> Report {
        self.analyze(
            &Snap::idle(&self.host).build(),
            &History::new(8),
            &mut NoFollowUp,
        )
    }

    pub fn snap(&self) -> Snap {
        Snap::idle(&self.host)
    }
}

/// A monitor snapshot: every RNIC idle and calm, every GPU idle, every link at 10 %.
pub struct Snap(HostSnapshot);

impl Snap {
    pub fn idle(host: &HostTopology) -> Snap {
        Snap(HostSnapshot {
            at_ns: 0,
            rnics: host
                .rnics()
                .map(|r| RnicActivity {
                    id: r.id.clone(),
                    throughput_gbps: Some(0.5),
                    tx_pause_ratio: Some(0.0),
                    drops: Some(0),
                })
                .collect(),
            gpus: host
                .components()
                .iter()
                .filter(|c| c.class() == ComponentClass::Gpu)
                .map(|g| GpuActivity {
                    id: g.id.clone(),
                    busy: Some(false),
                })
                .collect(),
            links: host
                .links()
                .iter()
                .map(|l| LinkUtilisation {
                    id: l.id.clone(),
                    utilisation: Some(0.1),
                })
                .collect(),
            ..HostSnapshot::default()
        })
    }

    fn rnic(&mut self, id: &str) -> &mut RnicActivity {
        self.0
            .rnics
            .iter_mut()
            .find(|r| r.id.as_str() == id)
            .unwrap()
    }

    pub fn busy(mut self, rnic: &str, gbps: f64) -> Snap {
        self.rnic(rnic).throughput_gbps = Some(gbps);
        self
    }

    pub fn paused(mut self, rnic: &str, ratio: f64) -> Snap {
        self.rnic(rnic).tx_pause_ratio = Some(ratio);
        self
    }

    pub fn util(mut self, link: &str, u: f64) -> Snap {
        self.0
            .links
            .iter_mut()
            .find(|l| l.id.as_str() == link)
            .unwrap()
            .utilisation = Some(u);
        self
    }

    pub fn build(self) -> HostSnapshot {
        self.0
    }
}

/// A follow-up stub: answers each test with a fixed bandwidth (or not at all) and records
/// what was asked.
#[derive(Default)]
pub struct Streams {
    pub one_qp: Option<f64>,
    pub many_qps: Option<f64>,
    pub asked: Vec<(String, FollowUpTest)>,
}

impl FollowUp for Streams {
    fn stream(&mut self, path: &Path, test: &FollowUpTest) -> Option<StreamResult> {
        self.asked
            .push((format!("{}->{}", path.rnic, path.endpoint), *test));
        let bw = if test.qps == 1 {
            self.one_qp
        } else {
            self.many_qps
        }?;
        Some(StreamResult {
            qps: test.qps,
            depth: 16,
            message_bytes: 65536,
            bytes: (bw * test.duration_us * 1e3 / 8.0) as u64,
            duration_us: test.duration_us,
            bandwidth_gbps: bw,
        })
    }
}

/// (cause, links, rnic, setting) of each diagnosis, for compact assertions.
pub type Summary = (Cause, Vec<String>, Option<String>, Option<Setting>);

pub fn summary(r: &Report) -> Vec<Summary> {
    r.diagnoses
        .iter()
        .map(|d| {
            (
                d.cause,
                d.links.iter().map(|l| l.to_string()).collect(),
                d.rnic.as_ref().map(|c| c.to_string()),
                d.setting,
            )
        })
        .collect()
}

pub fn links(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub fn link<'r>(r: &'r Report, id: &str) -> &'r model::LinkReport {
    r.links.iter().find(|l| l.id == LinkId::from(id)).unwrap()
}

pub fn path<'r>(r: &'r Report, rnic: &str, endpoint: &str) -> &'r model::PathReport {
    r.paths
        .iter()
        .find(|p| p.rnic.as_str() == rnic && p.endpoint.as_str() == endpoint)
        .unwrap()
}

/// The bandwidth of the `k`-th re-probe (from 0) of a path `rnic->endpoint`, `None` when it
/// cannot run.
pub type ReprobeBandwidth = Box<dyn FnMut(&str, usize) -> Option<f64>>;

/// A follow-up stub for re-probes: answers from `bw`; records each re-probe and the idle
/// time asked before it.
pub struct Reprobes {
    pub bw: ReprobeBandwidth,
    pub asked: Vec<(String, u64)>,
}

impl Reprobes {
    pub fn new(bw: impl FnMut(&str, usize) -> Option<f64> + 'static) -> Reprobes {
        Reprobes {
            bw: Box::new(bw),
            asked: Vec::new(),
        }
    }
}

impl FollowUp for Reprobes {
    fn stream(&mut self, _path: &Path, _test: &FollowUpTest) -> Option<StreamResult> {
        None
    }

    fn latency(&mut self, path: &Path, idle_ns: u64) -> Option<PathMeasurement> {
        let label = format!("{}->{}", path.rnic, path.endpoint);
        let k = self.asked.iter().filter(|(l, _)| *l == label).count();
        self.asked.push((label.clone(), idle_ns));
        match measured((self.bw)(&label, k)?, 1.0) {
            PathOutcome::Measured(m) => Some(m),
            _ => None,
        }
    }
}
