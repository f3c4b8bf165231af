//! Probe plans (Hostping 4.2, 4.3) and running one over an engine.

use crate::engine::{LatencySpec, ProbeEngine, ProbeError, StreamSpec};
use crate::stats::measurement;
use model::{HostTopology, Mode, Path, PathOutcome, PathProbe, ProbeRun};

/// Which paths a run probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Every RNIC x every endpoint: used when the host is idle, to localise links as
    /// precisely as tomography allows (Hostping 4.3).
    FullMesh,
    /// Each RNIC to its affinitive endpoints only: used when symptoms trigger a probe on a
    /// busy host, to keep the cost to services low (Hostping 4.3).
    AffinitiveOnly,
}

impl Plan {
    /// The plan Hostping uses in a mode.
    pub fn for_mode(mode: Mode) -> Plan {
        match mode {
            Mode::Idle => Plan::FullMesh,
            Mode::Busy => Plan::AffinitiveOnly,
        }
    }
}

/// The paths of a plan, endpoint by endpoint and RNIC by RNIC within an endpoint, so that
/// the probes that share an endpoint's links follow each other closely in time.
pub fn plan(host: &HostTopology, plan: Plan) -> Vec<&Path> {
    let mut out = Vec::new();
    for ep in host.endpoints() {
        for rnic in host.rnics() {
            let path = host
                .path(&rnic.id, &ep.id)
                .expect("every rnic x endpoint has a path");
            if plan == Plan::FullMesh || path.affinitive {
                out.push(path);
            }
        }
    }
    out
}

/// What to measure on every path of a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunSpec {
    /// The latency test (always run).
    pub latency: LatencySpec,
    /// A streaming test after the latency test, when wanted.
    pub stream: Option<StreamSpec>,
}

/// Probes every path of `paths` in order. A failed path is recorded with its error and the
/// run goes on; `progress(done, total)` is called after each path.
pub fn run(
    engine: &mut dyn ProbeEngine,
    host: &HostTopology,
    mode: Mode,
    paths: &[&Path],
    spec: &RunSpec,
    progress: &mut dyn FnMut(usize, usize),
) -> ProbeRun {
    let started_ns = engine.now_ns();
    let mut probes = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let path_started = engine.now_ns();
        let outcome = match engine
            .latency(path, &spec.latency)
            .and_then(|s| measurement(&spec.latency, &s))
        {
            Ok(m) => PathOutcome::Measured(m),
            Err(ProbeError::Unavailable { reason }) => PathOutcome::Unavailable { reason },
            Err(e) => PathOutcome::Failed {
                error: e.to_string(),
            },
        };
        let stream = match (&outcome, &spec.stream) {
            (PathOutcome::Measured(_), Some(s)) => engine.stream(path, s).ok(),
            _ => None,
        };
        probes.push(PathProbe {
            rnic: path.rnic.clone(),
            endpoint: path.endpoint.clone(),
            started_ns: path_started,
            outcome,
            stream,
        });
        progress(i + 1, paths.len());
    }
    ProbeRun {
        host: host.name.clone(),
        provenance: engine.provenance(),
        mode,
        started_ns,
        finished_ns: engine.now_ns(),
        paths: probes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{LatencySamples, ProbeError};
    use model::{builtin, Provenance, StreamResult};

    /// An engine whose paths to gpu3 fail, to check that a run goes on after an error.
    struct Scripted {
        clock: u64,
    }

    impl ProbeEngine for Scripted {
        fn provenance(&self) -> Provenance {
            Provenance::Simulated
        }
        fn now_ns(&self) -> u64 {
            self.clock
        }
        fn latency(
            &mut self,
            path: &Path,
            spec: &LatencySpec,
        ) -> Result<LatencySamples, ProbeError> {
            self.clock += 1000;
            if path.endpoint.as_str() == "gpu3" {
                return Err(ProbeError::WorkCompletion {
                    status: "remote access error".into(),
                });
            }
            let n = spec.iterations as usize;
            Ok(LatencySamples {
                small_ns: vec![2000.0; n],
                large_ns: vec![2000.0 + 5242.84; n],
                verified_bytes: None,
            })
        }
        fn stream(&mut self, _: &Path, _: &StreamSpec) -> Result<StreamResult, ProbeError> {
            Err(ProbeError::Unavailable {
                reason: "not scripted".into(),
            })
        }
    }

    #[test]
    fn plans_cover_the_right_paths() {
        let host = builtin::load("dgx-a100").unwrap().unwrap();
        let full = plan(&host, Plan::FullMesh);
        assert_eq!(full.len(), 4 * 10);
        assert_eq!(
            (full[0].endpoint.as_str(), full[0].rnic.as_str()),
            ("mem0", "rnic0")
        );
        assert_eq!(
            (full[1].endpoint.as_str(), full[1].rnic.as_str()),
            ("mem0", "rnic1")
        );
        let busy = plan(&host, Plan::AffinitiveOnly);
        assert!(busy.iter().all(|p| p.affinitive));
        assert_eq!(busy.len(), 4 * 4);
    }

    #[test]
    fn a_failed_path_is_recorded_and_the_run_goes_on() {
        let host = builtin::load("single-socket").unwrap().unwrap();
        let paths = plan(&host, Plan::FullMesh);
        let mut engine = Scripted { clock: 0 };
        let mut calls = 0;
        let spec = RunSpec {
            latency: LatencySpec {
                iterations: 10,
                ..Default::default()
            },
            stream: None,
        };
        let run = run(
            &mut engine,
            &host,
            Mode::Idle,
            &paths,
            &spec,
            &mut |_, _| calls += 1,
        );
        assert_eq!(run.paths.len(), 10);
        assert_eq!(calls, 10);
        let failed: Vec<_> = run
            .paths
            .iter()
            .filter(|p| p.measurement().is_none())
            .map(|p| p.endpoint.as_str())
            .collect();
        assert_eq!(failed, ["gpu3", "gpu3"]);
        let ok = run
            .probe(&"rnic0".into(), &"gpu0".into())
            .unwrap()
            .measurement()
            .unwrap();
        assert!((ok.bandwidth_gbps - 200.0).abs() < 0.01);
        assert_eq!((run.started_ns, run.finished_ns), (0, 10_000));
        assert_eq!(run.provenance, Provenance::Simulated);
    }
}
