//! The host every command runs on, built once from `--sim` / `--sysfs-root`: a virtual host
//! (a built-in model or a model file, with injected faults) or this machine (sysfs
//! discovery, its counter sources, and libibverbs when it probes). Commands ask it for what
//! they need and never look at the flags again.

use crate::pipeline::{BaselineSource, Prober, DEFAULT_CADENCE_NS};
use crate::record;
use crate::sim::{self, SimError};
use analyze::host_baseline::MissingPath;
use model::{
    Baseline, BaselineKind, ComponentId, CounterReport, HostConfig, HostTopology, Op, PathOutcome,
    Provenance,
};
use probe::LatencySpec;
use rdma::engine::VerbsEngine;
use rdma::engine::{EngineOptions, TestFault};
use rdma::host::{Probed, RealError, RealHost};
use rdma::monitor::HostMonitor;
use rdma::sysfs::{DiscoverError, Discovery, SysRoot};
use std::path::PathBuf;
use std::time::Duration;
use vhost::{VhostConfig, VirtualHost};

/// Why the host cannot do what a command asked. Each message is one line naming the input.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// `--sim` or `--inject` is wrong.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The sysfs tree cannot be discovered.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// This machine cannot be probed (no RDMA device, no libibverbs).
    #[error(transparent)]
    Real(#[from] RealError),
    /// Faults are injected into a virtual host only.
    #[error("--inject needs a simulated host (--sim MODEL); a real host is probed as it is")]
    InjectOnRealHost,
    /// Verbs faults are for the real engine only.
    #[error(
        "--verbs-fault applies to a real host's verbs engine; on a simulated host use --inject"
    )]
    VerbsFaultOnVirtualHost,
    /// A `--verbs-fault` string is malformed.
    #[error("--verbs-fault: {0}")]
    VerbsFault(String),
    /// A healthy baseline run left a path unmeasured.
    #[error(transparent)]
    Baseline(#[from] MissingPath),
    /// The virtual host models the loopback WRITE only.
    #[error(
        "--op read: the simulated host models the loopback WRITE of Hostping Fig. 7 only; an \
         RDMA READ crossing the root complex differs from it (Hostping 3.2.2) in ways the \
         model does not know, so it would report WRITE's numbers as READ's. Use --op write \
         with --sim, or probe a real host with --op read"
    )]
    ReadOnVirtualHost,
}

/// Which host: `--sim NAME|FILE` (a virtual host), else this machine or a sysfs tree
/// captured from one (`--sysfs-root`).
#[derive(Debug, Clone, Default)]
pub struct HostSpec {
    /// A built-in host model's name or a host-model file.
    pub sim: Option<String>,
    /// The root of the sysfs tree to discover (default `/`).
    pub sysfs_root: Option<PathBuf>,
}

/// How the host is set up beside `--sim` / `--sysfs-root`.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Faults for a virtual host (`--inject`).
    pub inject: Vec<String>,
    /// Seed of the virtual host's noise and faults.
    pub seed: u64,
    /// Relative noise of the virtual host's measurements.
    pub noise: f64,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            inject: Vec::new(),
            seed: 1,
            noise: VhostConfig::default().noise,
        }
    }
}

/// How probes run on the real host.
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    /// Longest wait on any verbs completion, ms.
    pub timeout_ms: u64,
    /// Test faults in the verbs engine (`--verbs-fault`, hidden).
    pub verbs_faults: Vec<String>,
}

/// The judgement a run gets when no baseline file is given.
pub enum DefaultBaseline {
    /// A healthy virtual host of the same model, probed the same way.
    Simulated(Baseline),
    /// Line rate and peers in the same run; these RNICs are software ones.
    Relative(Vec<ComponentId>),
}

impl DefaultBaseline {
    /// As the pipeline takes it.
    pub fn source(&self) -> BaselineSource<'_> {
        match self {
            DefaultBaseline::Simulated(b) => BaselineSource::Given(b, BaselineKind::Simulated),
            DefaultBaseline::Relative(software) => BaselineSource::Relative { software },
        }
    }
}

/// A baseline recorded on the host, and the paths left out of it with the reason.
pub struct Recorded {
    /// The baseline.
    pub baseline: Baseline,
    /// `rnic->endpoint (why)` for each path the baseline lacks.
    pub left_out: Vec<String>,
}

/// The host a command runs on.
pub enum Host {
    /// A virtual host.
    Virtual {
        /// The simulation, faults injected.
        vhost: Box<VirtualHost>,
        /// How it was set up.
        options: HostOptions,
    },
    /// This machine, or a sysfs tree captured from one.
    Real {
        /// The tree it was discovered under.
        root: SysRoot,
        /// What discovery found when the host was opened.
        discovery: Box<Discovery>,
        /// Every counter source, opened when first read (NVML and the uncore PMUs cost
        /// time to open, and `topology` needs neither).
        monitor: Option<Box<HostMonitor>>,
        /// The verbs engine, loaded when first probed through.
        engine: Option<Box<Probed<VerbsEngine>>>,
    },
}

impl Host {
    /// The host `spec` names: discovered once, or built from its model once.
    pub fn open(args: &HostSpec, options: HostOptions) -> Result<Host, HostError> {
        match &args.sim {
            Some(name) => {
                let model = sim::load_host(name)?;
                let faults = sim::parse_faults(&options.inject, &model)?;
                let config = VhostConfig {
                    seed: options.seed,
                    noise: options.noise,
                    ..VhostConfig::default()
                };
                let vhost = Box::new(VirtualHost::new(model.clone(), faults, config));
                Ok(Host::Virtual { vhost, options })
            }
            None => {
                if !options.inject.is_empty() {
                    return Err(HostError::InjectOnRealHost);
                }
                let root = args
                    .sysfs_root
                    .clone()
                    .map(SysRoot::new)
                    .unwrap_or_else(SysRoot::system);
                let discovery = Box::new(rdma::sysfs::discover(&root)?);
                Ok(Host::Real {
                    root,
                    discovery,
                    monitor: None,
                    engine: None,
                })
            }
        }
    }

    /// Refuses an operation this host cannot probe truthfully: the virtual host has no
    /// model of RDMA READ (its numbers would be WRITE's).
    pub fn supports(&self, op: Op) -> Result<(), HostError> {
        match (self, op) {
            (Host::Virtual { .. }, Op::Read) => Err(HostError::ReadOnVirtualHost),
            _ => Ok(()),
        }
    }

    /// Measured or simulated.
    pub fn provenance(&self) -> Provenance {
        match self {
            Host::Virtual { .. } => Provenance::Simulated,
            Host::Real { .. } => Provenance::Measured,
        }
    }

    /// The host model, when there is one (a real host without an active RDMA port has none).
    pub fn model(&self) -> Option<&HostTopology> {
        match self {
            Host::Virtual { vhost, .. } => Some(vhost.topology()),
            Host::Real { discovery, .. } => discovery.host.as_ref(),
        }
    }

    /// What sysfs discovery found, on a real host.
    pub fn discovery(&self) -> Option<&Discovery> {
        match self {
            Host::Virtual { .. } => None,
            Host::Real { discovery, .. } => Some(discovery),
        }
    }

    /// Every counter source, the monitor view and the configuration.
    pub fn counters(&mut self) -> CounterReport {
        match self {
            Host::Virtual { vhost, .. } => {
                vhost.counter_report(model::time::unix_ms(std::time::SystemTime::now()))
            }
            Host::Real {
                root,
                discovery,
                monitor,
                ..
            } => monitor
                .get_or_insert_with(|| open_monitor(root, discovery))
                .read(),
        }
    }

    /// The static configuration (`lint`).
    pub fn config(&mut self) -> HostConfig {
        match self {
            Host::Virtual { vhost, .. } => vhost.config(),
            Host::Real {
                root,
                discovery,
                monitor,
                ..
            } => monitor
                .get_or_insert_with(|| open_monitor(root, discovery))
                .config(),
        }
    }

    /// Idle time between the runs of a series: the paper's 5 min on a virtual clock, a
    /// short pause on a real host (a user is waiting).
    pub fn cadence_ns(&self) -> u64 {
        match self {
            Host::Virtual { .. } => DEFAULT_CADENCE_NS,
            Host::Real { .. } => REAL_CADENCE_NS,
        }
    }

    /// What runs are judged against when no baseline file is given.
    pub fn default_baseline(&self, latency: &LatencySpec) -> Result<DefaultBaseline, HostError> {
        match self {
            Host::Virtual { vhost, options } => Ok(DefaultBaseline::Simulated(simulated_baseline(
                vhost,
                options,
                record::DEFAULT_RUNS,
                latency,
            ))),
            Host::Real {
                root, discovery, ..
            } => Ok(DefaultBaseline::Relative(
                real_host(root, discovery)?.software_rnics(),
            )),
        }
    }

    /// The engine to probe through, with the host's monitor.
    /// The first call sets the engine up with `options`; later calls return the same one.
    pub fn prober(&mut self, options: &ProbeOptions) -> Result<&mut dyn Prober, HostError> {
        match self {
            Host::Virtual { vhost, .. } => {
                if !options.verbs_faults.is_empty() {
                    return Err(HostError::VerbsFaultOnVirtualHost);
                }
                Ok(&mut **vhost)
            }
            Host::Real {
                root,
                discovery,
                engine,
                ..
            } => {
                let probed = match engine {
                    Some(probed) => probed,
                    None => engine.insert(Box::new(
                        real_host(root, discovery)?.engine(engine_options(options)?)?,
                    )),
                };
                Ok(&mut **probed)
            }
        }
    }

    /// The verbs engine of a real host (set up with `options` on first use, as
    /// [`Host::prober`] does); `None` on a virtual host.
    pub fn verbs_engine(
        &mut self,
        options: &ProbeOptions,
    ) -> Result<Option<&mut VerbsEngine>, HostError> {
        self.prober(options)?;
        Ok(match self {
            Host::Real {
                engine: Some(probed),
                ..
            } => Some(&mut probed.engine),
            _ => None,
        })
    }

    /// A baseline of `runs` healthy idle full-mesh runs: on a healthy virtual host of the
    /// model, or measured here.
    pub fn record_baseline(
        &mut self,
        runs: u32,
        latency: &LatencySpec,
        probe: &ProbeOptions,
        progress: &mut dyn FnMut(u32, usize, usize),
    ) -> Result<Recorded, HostError> {
        let model = match self {
            Host::Virtual { vhost, options } => {
                return Ok(Recorded {
                    baseline: simulated_baseline(vhost, options, runs, latency),
                    left_out: Vec::new(),
                });
            }
            Host::Real {
                root, discovery, ..
            } => real_host(root, discovery)?.host,
        };
        let cadence = self.cadence_ns();
        let engine = self.prober(probe)?;
        let (b, runs) = record::record(engine, &model, runs, latency, cadence, progress)?;
        // A path with no measurement in any run is an error (MissingPath) unless every
        // probe of it was unavailable by design: those are the paths left out.
        let left_out = model
            .paths()
            .iter()
            .filter(|p| b.path(&p.rnic, &p.endpoint).is_none())
            .map(|p| {
                let why = runs
                    .iter()
                    .filter_map(|r| r.probe(&p.rnic, &p.endpoint))
                    .find_map(|p| match &p.outcome {
                        PathOutcome::Unavailable { reason } => Some(reason.as_str()),
                        _ => None,
                    })
                    .unwrap_or_default();
                format!("{}->{} (unavailable: {why})", p.rnic, p.endpoint)
            })
            .collect();
        Ok(Recorded {
            baseline: b,
            left_out,
        })
    }
}

/// The probe side of a real host: its model and RNICs, from the discovery already made.
pub fn real_host(root: &SysRoot, discovery: &Discovery) -> Result<RealHost, RealError> {
    RealHost::new(root.clone(), discovery.clone())
}

/// The counter sources of a real host, over the discovery already made.
pub fn open_monitor(root: &SysRoot, discovery: &Discovery) -> Box<HostMonitor> {
    Box::new(HostMonitor::with_discovery(root.clone(), discovery.clone()))
}

/// The baseline of a healthy virtual host of the same model, probed as `latency` says.
pub fn simulated_baseline(
    vhost: &VirtualHost,
    options: &HostOptions,
    runs: u32,
    latency: &LatencySpec,
) -> Baseline {
    record::simulated(vhost.topology(), runs, options.seed, latency, options.noise)
}

/// Pause between the runs of a series on a real host: a short one, not the agent's 5 min.
const REAL_CADENCE_NS: u64 = 1_000_000_000;

/// The verbs engine's settings from the probe options.
pub fn engine_options(options: &ProbeOptions) -> Result<EngineOptions, HostError> {
    Ok(EngineOptions {
        timeout: Duration::from_millis(options.timeout_ms),
        faults: options
            .verbs_faults
            .iter()
            .map(|f| TestFault::parse(f).map_err(|e| HostError::VerbsFault(e.to_string())))
            .collect::<Result<_, _>>()?,
    })
}
