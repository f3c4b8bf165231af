//! One host's side of a real RNIC-to-RNIC pair probe (`rdma::engine::pair`), whoever carries
//! the two offers: `hostping pair serve|probe` over a TCP socket ([`wire`]), or the agents'
//! HTTP API (`POST /api/pair/probe` and `/api/pair/accept`, [`crate::http`]). It owns the local side
//! (the device's port and the host's own part, measured as a loopback), what a responder
//! accepts, the split of the pair's latency into host A, host B and the network
//! (docs/cluster.md, "The split") and the pair's report (DESIGN 4.6's pair object).
//!
//! Each side measures its loopback in batches between the ping-pong's segments
//! (`rdma::engine::pair`, "Host parts"): in the same rounds as the pair's latency, so a
//! host whose own path moves from one minute to the next moves both alike, and never while
//! the pair's WRITEs are in flight, so neither shares the CPU or the device with them. Its
//! part is half the median of every batch's samples. Nothing is judged: a single pair has no baseline, so a
//! finished probe is `uncertain` with its reason, and `failed` when the data the responder
//! received did not verify or the probe stopped.

use check::host::{Host, HostOptions, HostSpec, ProbeOptions};
use fleet_api::pair::{NetworkFrom, PairStatus, RouteSource};
use model::odp_bench::TransportDelta;
use model::pair::PairFigures;
use model::{ComponentClass, ComponentId, HostTopology, Path};
use probe::{half_iqr_us, latency_stats, LatencySpec, ProbeEngine};
use rdma::engine::pair::{
    initiate, respond, OwnPart, PairError, PairOffer, PairPort, PairResult, PairSpec,
};
use rdma::odp_bench::counters::{read_port, transport, PortReading};
use rdma::sysfs::SysRoot;
use rdma::verbs::Verbs;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::time::Duration;

pub mod wire;

/// Most bytes of one bandwidth message (perftest's `-s` goes to 8 MiB; a responder refuses
/// offers above this too).
pub const MAX_BW_BYTES: u64 = 1 << 24;
/// Longest wait for the responder's answer: it opens its device and its loopback's engine
/// and connects its QP first (seconds under emulation).
pub const ANSWER_WAIT: Duration = Duration::from_secs(60);
/// How long a responder serves one probe at most; a vanished initiator ends it sooner, at
/// the probe's own per-wait deadline.
pub const SERVE_LIMIT: Duration = Duration::from_secs(600);

/// How the local side measures its own part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalOptions {
    /// Timed iterations of the loopback (the small message of `hostping check`).
    pub loopback_iterations: u32,
    /// Longest wait for one work completion, ms.
    pub timeout_ms: u64,
}

/// Why this host's side of a pair could not be opened. Past discovery, the messages do not
/// name the device: the caller names it as its input.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The host could not be discovered.
    #[error("discovering this host: {0}")]
    Discover(#[source] check::host::HostError),
    /// A simulated host: no device to probe from.
    #[error("not a real host")]
    NotReal,
    /// No RDMA device of the name; the host's are listed.
    #[error("no RDMA device of that name ({})", devices_found(.found))]
    NoDevice {
        /// The host's RDMA devices.
        found: Vec<String>,
    },
    /// The device has no ACTIVE port.
    #[error("no ACTIVE port ({})", .ports.join(", "))]
    NoActivePort {
        /// Each port of the device with its state (`port 1 Down`).
        ports: Vec<String>,
    },
    /// Discovery built no host model.
    #[error("no host model was built")]
    NoModel,
    /// The RNIC reaches no memory node for its loopback.
    #[error("{rnic} reaches no memory node")]
    NoMemory {
        /// The RNIC's id in the host model.
        rnic: ComponentId,
    },
    /// libibverbs is missing.
    #[error("libibverbs cannot be used: {0}")]
    Verbs(#[source] rdma::verbs::Unavailable),
    /// The port could not be opened.
    #[error(transparent)]
    Port(#[from] rdma::engine::OpenPortError),
}

/// `this host has mlx5_0, mlx5_1`, or `this host has none`.
fn devices_found(found: &[String]) -> String {
    if found.is_empty() {
        "this host has none".to_string()
    } else {
        format!("this host has {}", found.join(", "))
    }
}

/// Opens this host (a real one: sysfs and libibverbs), or says why it cannot be.
pub fn open_host() -> Result<Host, OpenError> {
    Host::open(&HostSpec::default(), HostOptions::default()).map_err(OpenError::Discover)
}

/// The RNICs this host offers for pair probes, as `(id, device)`: with `devices`, those
/// devices numbered `rnic0`.. in the order given (an agent restricted to them, `--devices`);
/// without, every RNIC with an ACTIVE port under the id `hostping check` gives it.
pub fn rnics(host: &Host, devices: Option<&[String]>) -> Vec<(String, String)> {
    match devices {
        Some(devices) => devices
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("rnic{i}"), d.clone()))
            .collect(),
        None => host
            .discovery()
            .map(|d| {
                d.bindings
                    .rnics
                    .iter()
                    .map(|(id, b)| (id.to_string(), b.device.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// This host's side of a pair: its device's port, and what its loopback needs.
pub struct Local {
    host: Host,
    /// The host's name in reports.
    pub name: String,
    /// The RDMA device (`mlx5_0`, `rxe_a`).
    pub device: String,
    /// The RNIC's id in the host model (`rnic1`), whose loopback is the host's part.
    pub rnic: ComponentId,
    /// The memory node the host part's loopback writes to.
    pub endpoint: ComponentId,
    /// The opened port.
    pub port: PairPort,
    /// Its number on the device, for its counters.
    port_number: u8,
    probe: ProbeOptions,
    loopback: LatencySpec,
}

impl Local {
    /// Opens `device`'s first ACTIVE port on `host`, named `name` in reports. The error
    /// says why without naming the device (the caller names it as its input).
    pub fn open(
        host: Host,
        device: &str,
        name: String,
        options: &LocalOptions,
    ) -> Result<Local, OpenError> {
        let discovery = host.discovery().ok_or(OpenError::NotReal)?;
        let ports: Vec<_> = discovery
            .rdma_ports
            .iter()
            .filter(|p| p.device == device)
            .collect();
        if ports.is_empty() {
            let mut found: Vec<String> = discovery
                .rdma_ports
                .iter()
                .map(|p| p.device.clone())
                .collect();
            found.dedup();
            return Err(OpenError::NoDevice { found });
        }
        let Some((rnic, binding)) = discovery
            .bindings
            .rnics
            .iter()
            .find(|(_, b)| b.device == device)
        else {
            let ports = ports
                .iter()
                .map(|p| format!("port {} {:?}", p.port, p.state))
                .collect();
            return Err(OpenError::NoActivePort { ports });
        };
        let model = host.model().ok_or(OpenError::NoModel)?;
        let endpoint = nearest_memory(model, rnic)
            .ok_or_else(|| OpenError::NoMemory { rnic: rnic.clone() })?;
        let verbs = Verbs::load().map_err(OpenError::Verbs)?;
        let port = PairPort::from_binding(&verbs, binding)?;
        Ok(Local {
            name,
            device: device.to_string(),
            rnic: rnic.clone(),
            endpoint,
            port,
            port_number: binding.port,
            probe: ProbeOptions {
                timeout_ms: options.timeout_ms,
                verbs_faults: Vec::new(),
            },
            loopback: LatencySpec {
                iterations: options.loopback_iterations,
                ..LatencySpec::default()
            },
            host,
        })
    }

    /// The longest wait for one completion or one message.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.probe.timeout_ms)
    }

    /// This host's loopback batches for a probe of `spec`: its path and engine checked
    /// now, so that a part that cannot be measured is said before the probe starts.
    fn batches(&mut self, spec: &PairSpec) -> PartBatches {
        let segments = spec.segment_ends().len().max(1) as u32;
        let batch = LatencySpec {
            iterations: self.loopback.iterations.div_ceil(segments).max(1),
            ..self.loopback
        };
        let path = self
            .host
            .model()
            .and_then(|m| m.path(&self.rnic, &self.endpoint))
            .cloned()
            .ok_or(HostPartFailure::NoPath);
        let path = path.and_then(|path| match self.host.verbs_engine(&self.probe) {
            Ok(Some(_)) => Ok(path),
            Ok(None) => Err(HostPartFailure::NotReal),
            Err(e) => Err(HostPartFailure::Host(e)),
        });
        let (path, failure) = match path {
            Ok(path) => (Some(path), None),
            Err(why) => (None, Some(why)),
        };
        PartBatches {
            path,
            batch,
            small_ns: Vec::new(),
            failure,
        }
    }

    /// `why` there is no part, naming the loopback.
    fn part_error(&self, why: HostPartFailure) -> HostPartError {
        HostPartError {
            rnic: self.rnic.clone(),
            endpoint: self.endpoint.clone(),
            device: self.device.clone(),
            why: Box::new(why),
        }
    }

    /// Its port's counters now (`hw_counters`, read after the driver's cache time).
    fn counters(&self) -> PortReading {
        read_port(&SysRoot::system(), &self.device, self.port_number)
    }
}

/// `offer` as the side on host `name` sends it: with its host name.
fn carried(name: &str, offer: &PairOffer) -> PairOffer {
    PairOffer {
        host: Some(name.to_string()),
        ..offer.clone()
    }
}

/// One host's loopback over a probe, batch by batch between the ping-pong's segments: its
/// part is half the median of every batch's samples. A batch that fails ends the batches
/// and says why there is no part.
struct PartBatches {
    /// The loopback's path; `None` when it cannot be measured (`failure` says why).
    path: Option<Path>,
    /// One batch: the host's loopback iterations shared among the segments.
    batch: LatencySpec,
    /// Every batch's samples, ns.
    small_ns: Vec<f64>,
    /// Why there is no part.
    failure: Option<HostPartFailure>,
}

impl PartBatches {
    /// Runs one batch on `host` unless one failed already; returns the part so far.
    fn run(&mut self, host: &mut Host, probe: &ProbeOptions) -> Option<OwnPart> {
        if let (Some(path), None) = (&self.path, &self.failure) {
            let samples = match host.verbs_engine(probe) {
                Ok(Some(engine)) => engine
                    .latency(path, &self.batch)
                    .map_err(HostPartFailure::Probe),
                Ok(None) => Err(HostPartFailure::NotReal),
                Err(e) => Err(HostPartFailure::Host(e)),
            };
            match samples {
                Ok(samples) => self.small_ns.extend(samples.small_ns),
                Err(why) => self.failure = Some(why),
            }
        }
        self.part().map(|p| OwnPart {
            us: p.us,
            noise_us: p.noise_us,
        })
    }

    /// Half the p50 loopback latency over every batch, with its noise; `None` before the
    /// first batch, or after a failed one.
    fn part(&self) -> Option<Timed> {
        if self.failure.is_some() {
            return None;
        }
        let stats = latency_stats(&self.small_ns)?;
        Some(Timed {
            us: stats.p50_us / 2.0,
            noise_us: half_iqr_us(&self.small_ns).unwrap_or(0.0) / 2.0,
        })
    }

    /// The part, or why there is none.
    fn finish(self) -> Result<Timed, HostPartFailure> {
        match (self.part(), self.failure) {
            (_, Some(why)) => Err(why),
            (Some(part), None) => Ok(part),
            (None, None) => Err(HostPartFailure::NoSamples),
        }
    }
}

/// Why a host's part could not be measured, naming the loopback.
#[derive(Debug, thiserror::Error)]
#[error("the loopback {rnic} -> {endpoint} on {device}: {why}")]
pub struct HostPartError {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The memory node.
    pub endpoint: ComponentId,
    /// The RDMA device.
    pub device: String,
    /// Why (boxed: a host error is large, and this one rides in every `Result` of a part).
    #[source]
    pub why: Box<HostPartFailure>,
}

/// What stopped a host part's loopback.
#[derive(Debug, thiserror::Error)]
pub enum HostPartFailure {
    /// The host model has no such path.
    #[error("no such path in the host model")]
    NoPath,
    /// A simulated host.
    #[error("not a real host")]
    NotReal,
    /// The verbs engine could not be made.
    #[error("{0}")]
    Host(#[source] check::host::HostError),
    /// The loopback failed.
    #[error("{0}")]
    Probe(#[source] probe::ProbeError),
    /// The loopback gave no samples.
    #[error("no samples")]
    NoSamples,
}

/// The memory node `rnic` reaches over the fewest links, at line rate where one is (the
/// mesh's `--endpoint memory`).
fn nearest_memory(model: &HostTopology, rnic: &ComponentId) -> Option<ComponentId> {
    let memory = |affinitive_only: bool| {
        model
            .paths_of(rnic)
            .filter(|p| p.affinitive || !affinitive_only)
            .filter(|p| {
                model
                    .component(&p.endpoint)
                    .is_some_and(|c| c.class() == ComponentClass::Memory)
            })
            .min_by_key(|p| p.links.len())
            .map(|p| p.endpoint.clone())
    };
    memory(true).or_else(|| memory(false))
}

/// The responder's answer to an offer: its own offer (with its `host`), or why it refuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The responder's offer; `None` when it refused.
    #[serde(default)]
    pub offer: Option<PairOffer>,
    /// Why the responder's own part is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_loopback_error: Option<String>,
    /// Why the responder refused the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Answer {
    /// A refusal, saying why.
    pub fn refusal(why: String) -> Answer {
        Answer {
            offer: None,
            host_loopback_error: None,
            error: Some(why),
        }
    }
}

/// A probe above a responder's cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {value} is above this responder's cap of {cap}")]
pub struct AboveCap {
    /// The setting (`bw_bytes`).
    pub what: &'static str,
    /// As asked.
    pub value: u64,
    /// The cap.
    pub cap: u64,
}

/// Whether a responder takes an initiator's probe: within `hostping pair probe`'s own caps.
pub fn acceptable(spec: &PairSpec) -> Result<(), AboveCap> {
    use model::limits;
    let checks = [
        ("latency_bytes", u64::from(spec.latency_bytes), 4096),
        ("bw_bytes", u64::from(spec.bw_bytes), MAX_BW_BYTES),
        (
            "latency_iterations",
            u64::from(spec.latency_iterations),
            limits::ITERATIONS,
        ),
        ("bw_iterations", spec.bw_iterations, limits::ITERATIONS),
        ("bw_duration_ms", spec.bw_duration_ms, 60_000),
        ("depth", u64::from(spec.depth), limits::STREAM_DEPTH),
        ("timeout_ms", spec.timeout_ms, limits::TIMEOUT_MS),
        (
            "loopback_segments",
            u64::from(spec.loopback_segments),
            u64::from(rdma::engine::pair::MAX_LOOPBACK_SEGMENTS),
        ),
    ];
    match checks.iter().find(|(_, v, cap)| v > cap) {
        Some(&(what, value, cap)) => Err(AboveCap { what, value, cap }),
        None => Ok(()),
    }
}

/// Why a responder did not serve a probe to its end.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The offer is above this responder's caps (the refusal was delivered).
    #[error("refused {device}'s probe: {source}")]
    Refused {
        /// The initiator's device.
        device: String,
        /// The cap.
        source: AboveCap,
    },
    /// The refusal could not be delivered.
    #[error(transparent)]
    Deliver(Box<dyn std::error::Error + Send + Sync>),
    /// The probe stopped.
    #[error(transparent)]
    Probe(#[from] PairError),
}

/// Serves one initiator's `offer` as the responder: refuses it above the caps, measures this
/// side's part, connects, hands the answer to `deliver`, then serves the probe until done
/// or [`SERVE_LIMIT`]. An error before the answer was delivered is delivered as a refusal
/// (the initiator is still waiting for it). Returns what was served, in words.
pub fn serve_offer<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    local: &mut Local,
    offer: &PairOffer,
    deliver: impl FnOnce(&Answer) -> Result<(), E>,
) -> Result<String, ServeError> {
    let deliver = RefCell::new(Some(deliver));
    let send = |answer: &Answer| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        match deliver.borrow_mut().take() {
            Some(deliver) => deliver(answer).map_err(Into::into),
            None => Ok(()),
        }
    };
    if let Err(source) = acceptable(&offer.spec) {
        send(&Answer::refusal(source.to_string())).map_err(ServeError::Deliver)?;
        return Err(ServeError::Refused {
            device: offer.device.clone(),
            source,
        });
    }
    let mut batches = local.batches(&offer.spec);
    // A part that cannot be measured at all is said in the answer; one whose batch fails
    // later reaches the initiator as no part, and this side's words say why.
    let cannot = batches.failure.take().map(|why| local.part_error(why));
    let name = &local.name;
    let answer = |mine: &PairOffer| {
        send(&Answer {
            offer: Some(carried(name, mine)),
            host_loopback_error: cannot.as_ref().map(ToString::to_string),
            error: None,
        })
        .map_err(|e| format!("sending the answer: {e}"))
    };
    let (host, probe) = (&mut local.host, &local.probe);
    let served = respond(&local.port, offer, answer, SERVE_LIMIT, &mut || {
        batches.run(host, probe)
    });
    let part = match (cannot, batches.finish()) {
        (Some(e), _) => format!("no host part: {e}"),
        (None, Ok(part)) => format!("its host part {:.2} us", part.us),
        (None, Err(why)) => format!("no host part: {}", local.part_error(why)),
    };
    match served {
        Ok(served) => Ok(format!(
            "served {} from {}: {} rounds, {} messages, data {}, {part}",
            local.device,
            offer.device,
            served.rounds,
            served.messages,
            if served.verified {
                "verified"
            } else {
                "NOT verified"
            }
        )),
        Err(e) => {
            // Delivered only when the answer was not (the initiator still waits for one).
            let _ = send(&Answer::refusal(e.to_string()));
            Err(e.into())
        }
    }
}

/// Why the initiator got no answer from its peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerFailure {
    /// The peer could not be reached (no connection, no answer in time).
    Unreachable(String),
    /// The peer answered something else than an offer.
    Other(String),
}

/// One side of the pair in the report.
pub use fleet_api::pair::End;
/// DESIGN 4.6's pair object, measured: the contract's type, which this side fills.
pub use fleet_api::pair::PairReport;
/// A time taken as the median of its samples, with their noise (half their interquartile
/// range), us.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Timed {
    /// The median, us.
    pub us: f64,
    /// Its noise, us.
    pub noise_us: f64,
}

/// The network's part, its noise and where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkSplit {
    /// The part, us: never negative (`None` unless every figure it needs is known).
    pub us: Option<f64>,
    /// Its noise, us.
    pub noise_us: Option<f64>,
    /// Where it comes from.
    pub from: NetworkFrom,
    /// Where the latency less both host parts came out inside the noise (negative, or
    /// positive by less than the noise), so the network's part cannot be told from nothing:
    /// that, in words.
    pub note: Option<String>,
}

/// The network's part: the latency less both hosts' parts, with the three noises added in
/// quadrature (`None` unless all three are known). A difference inside the noise is
/// "within noise", and the part is never negative: a software RNIC's loopback may cost
/// more than its share of the pair's path, and the host parts move between the phases
/// they are measured in (issue 38).
pub fn network_part(
    latency: Option<Timed>,
    host_a: Option<Timed>,
    host_b: Option<Timed>,
) -> NetworkSplit {
    let known = latency.zip(host_a).zip(host_b);
    let difference = known.map(|((l, a), b)| l.us - a.us - b.us);
    let noise = known
        .map(|((l, a), b)| (l.noise_us.powi(2) + a.noise_us.powi(2) + b.noise_us.powi(2)).sqrt());
    NetworkSplit {
        us: difference.map(|d| d.max(0.0)),
        noise_us: noise,
        from: NetworkFrom::LatencyLessHostParts,
        note: difference.zip(noise).filter(|(d, n)| d <= n).map(|(d, n)| {
            format!(
                "within noise: the latency less both host parts is {d:+.2} us, inside its \
                 noise of {n:.2} us"
            )
        }),
    }
}

/// The network's part and where it comes from: half the median of the round trips host A's
/// RNIC timed (`nic_round_trip_ns`, no host software in them: R-Pingmesh, SIGCOMM'24,
/// section 4) where there are any, else [`network_part`].
pub fn network_split(
    latency: Option<Timed>,
    host_a: Option<Timed>,
    host_b: Option<Timed>,
    nic_round_trip_ns: &[f64],
) -> NetworkSplit {
    if nic_round_trip_ns.is_empty() {
        return network_part(latency, host_a, host_b);
    }
    let rtt_ns = analyze::robust::median(nic_round_trip_ns.iter().copied());
    let noise = half_iqr_us(nic_round_trip_ns).map(|n| n / 2.0);
    NetworkSplit {
        us: rtt_ns.map(|ns| ns / 2.0 / 1e3),
        noise_us: noise,
        from: NetworkFrom::CompletionTimestamps,
        note: None,
    }
}

/// A probe as the initiator ran it: its report, and the error when it stopped.
pub struct Probed {
    /// The report (with what was kept when the probe stopped).
    pub report: PairReport,
    /// Why the probe stopped, if it did.
    pub error: Option<String>,
}

/// Runs the probe as the initiator: measures this side's part, hands its offer to
/// `exchange` (which delivers it to `peer` and returns the answer) and reports. `a_rnic`
/// and `b_rnic` name the ends in the report (the agents' RNIC ids); `None` names each by
/// its device.
pub fn initiate_probe(
    local: &mut Local,
    spec: &PairSpec,
    peer: &str,
    ends: (Option<&str>, Option<&str>),
    exchange: impl FnOnce(&PairOffer) -> Result<Answer, PeerFailure>,
) -> Probed {
    let mut batches = local.batches(spec);
    let before = local.counters();
    let answer: RefCell<Option<Answer>> = RefCell::new(None);
    let unreachable = RefCell::new(false);
    let name = &local.name;
    let exchange = |mine: &PairOffer| {
        let got = exchange(&carried(name, mine)).map_err(|e| match e {
            PeerFailure::Unreachable(why) => {
                *unreachable.borrow_mut() = true;
                why
            }
            PeerFailure::Other(why) => why,
        })?;
        *answer.borrow_mut() = Some(got.clone());
        match (got.offer, got.error) {
            (_, Some(why)) => Err(format!("{peer} refused the probe: {why}")),
            (Some(offer), None) => Ok(offer),
            (None, None) => Err(format!("{peer} answered without an offer")),
        }
    };
    let (host, probe) = (&mut local.host, &local.probe);
    let outcome = initiate(&local.port, spec, exchange, &mut || {
        batches.run(host, probe)
    });
    let delta = transport(&before, &local.counters());
    let answer = answer.into_inner();
    let peer_offer = answer.as_ref().and_then(|a| a.offer.as_ref());
    let part_a = batches.finish().map_err(|why| local.part_error(why));
    let host_a = part_a.as_ref().ok().copied();
    let host_b = outcome
        .as_ref()
        .ok()
        .and_then(|r| r.peer_part)
        .map(|p| Timed {
            us: p.us,
            noise_us: p.noise_us,
        });
    // Why the peer's part is missing: it said so in its answer, or it sent none.
    let host_b_error = answer
        .as_ref()
        .and_then(|a| a.host_loopback_error.clone())
        .or_else(|| {
            (outcome.is_ok() && host_b.is_none()).then(|| {
                format!(
                    "{peer} sent no host part of its own: its loopback failed (its log says why)"
                )
            })
        });
    let end = |host: String, id: Option<&str>, device: String| match id {
        Some(id) => End {
            host,
            rnic: id.to_string(),
            device: Some(device),
        },
        None => End {
            host,
            rnic: device,
            device: None,
        },
    };
    let mut report = PairReport {
        a: end(local.name.clone(), ends.0, local.device.clone()),
        b: end(
            peer_offer
                .and_then(|o| o.host.clone())
                .unwrap_or_else(|| peer.to_string()),
            ends.1,
            peer_offer.map_or_else(String::new, |o| o.device.clone()),
        ),
        latency_us: None,
        bandwidth_gbps: None,
        host_a_us: host_a.map(|p| p.us),
        host_b_us: host_b.map(|p| p.us),
        network_us: None,
        network_from: NetworkFrom::LatencyLessHostParts,
        network_noise_us: None,
        network_note: None,
        timestamps: None,
        timestamps_note: None,
        route: Some(Vec::new()),
        route_source: RouteSource::Untraced,
        status: PairStatus::Failed,
        reason: String::new(),
        host_a_status: None,
        host_b_status: None,
        network_status: None,
        simulated: false,
        endpoint_a: local.endpoint.to_string(),
        latency: None,
        latency_bytes: spec.latency_bytes,
        bw_bytes: spec.bw_bytes,
        bw_iterations: 0,
        verified: false,
        host_a_error: part_a.as_ref().err().map(ToString::to_string),
        host_b_error,
        peer: peer.to_string(),
        error: None,
        counters_a: (delta != TransportDelta::default()).then_some(delta),
        mesh: Default::default(),
    };
    match outcome {
        Ok(result) => {
            fill(&mut report, &result, host_a, host_b);
            Probed {
                report,
                error: None,
            }
        }
        Err(e) => {
            stopped(&mut report, &e, unreachable.into_inner());
            Probed {
                error: Some(e.to_string()),
                report,
            }
        }
    }
}

/// The report's figures from a finished probe, with both hosts' parts.
fn fill(
    report: &mut PairReport,
    result: &PairResult,
    host_a: Option<Timed>,
    host_b: Option<Timed>,
) {
    report.latency = latency_stats(&result.latency.small_ns);
    report.latency_us = report.latency.map(|l| l.p50_us);
    report.bandwidth_gbps = result.bandwidth_gbps;
    report.bw_iterations = result.iterations;
    report.verified = result.verified;
    let latency = report.latency_us.map(|us| Timed {
        us,
        noise_us: half_iqr_us(&result.latency.small_ns).unwrap_or(0.0),
    });
    let split = network_split(latency, host_a, host_b, &result.nic_round_trip_ns);
    report.network_us = split.us;
    report.network_from = split.from;
    report.network_noise_us = split.noise_us;
    report.network_note = split.note;
    report.timestamps = Some(result.timestamps);
    report.timestamps_note = result.timestamps_note.clone();
    (report.status, report.reason) = if result.verified {
        (
            PairStatus::Uncertain,
            "measured, not judged: a single pair has no baseline".to_string(),
        )
    } else {
        (
            PairStatus::Failed,
            format!(
                "the data {} received did not match what {} wrote",
                report.b.rnic, report.a.rnic
            ),
        )
    };
}

/// A healthy probe of the same pair to judge another against: the `hostping pair probe
/// --format json` of a run the operator trusts (the fields it needs; the rest is ignored).
pub type PairBaseline = PairFigures;

/// Judges a finished, verified probe against `baseline`, part by part, at Abnormal_th
/// (`analyze::pair_baseline::judge_against`, the rule the collector's recorded pair
/// baselines use too). The pair is abnormal when a part is; its reason names the parts and
/// figures. A failed or unreachable probe measured nothing to judge and is left as it is.
pub fn judge_against(report: &mut PairReport, baseline: &PairBaseline, th: f64) {
    if report.status != PairStatus::Uncertain {
        return;
    }
    let judged = analyze::pair_baseline::judge_against(&report.figures(), baseline, th);
    report.host_a_status = Some(judged.host_a);
    report.host_b_status = Some(judged.host_b);
    report.network_status = Some(judged.network);
    report.status = judged.status.into();
    report.reason = judged.reason;
}

/// The report of a probe that stopped: what was kept, and why.
fn stopped(report: &mut PairReport, e: &PairError, unreachable: bool) {
    report.latency = latency_stats(&e.kept.small_ns);
    report.latency_us = report.latency.map(|l| l.p50_us);
    report.error = Some(e.to_string());
    (report.status, report.reason) = if unreachable {
        (
            PairStatus::Unreachable,
            "the peer could not be reached".to_string(),
        )
    } else {
        (PairStatus::Failed, "the probe stopped".to_string())
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::LatencyStats;

    fn offer() -> PairOffer {
        PairOffer {
            device: "rxe_b".into(),
            port: 1,
            lid: 0,
            gid: Some("0000:0000:0000:0000:0000:ffff:c0a8:4d02".into()),
            gid_index: Some(1),
            qp_num: 17,
            psn: 0x12345,
            mtu: 3,
            rkey: 0x99,
            addr: 0x7f00_0000_0000,
            len: 65536 + 64,
            completion_timestamps: false,
            spec: PairSpec::default(),
            host: Some("node-b".into()),
        }
    }

    #[test]
    fn an_offer_and_an_answer_round_trip_through_json() {
        let mine = offer();
        let line = serde_json::to_string(&mine).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<PairOffer>(&line).unwrap(), mine);

        let answer = Answer {
            offer: Some(mine.clone()),
            host_loopback_error: None,
            error: None,
        };
        let text = serde_json::to_string(&answer).unwrap();
        let back: Answer = serde_json::from_str(&text).unwrap();
        assert_eq!(back, answer);
        assert_eq!(back.offer.unwrap().host.as_deref(), Some("node-b"));
        // A refusal is an error and no offer.
        let refusal: Answer = serde_json::from_str(r#"{"error": "bw_bytes too big"}"#).unwrap();
        assert_eq!(refusal, Answer::refusal("bw_bytes too big".into()));
    }

    fn t(us: f64, noise_us: f64) -> Option<Timed> {
        Some(Timed { us, noise_us })
    }

    #[test]
    fn the_network_part_is_the_latency_less_both_hosts_parts() {
        let net = network_part(t(25.0, 0.3), t(8.5, 0.4), t(9.0, 1.2));
        assert!((net.us.unwrap() - 7.5).abs() < 1e-9, "{net:?}");
        // The three noises add in quadrature: sqrt(0.09 + 0.16 + 1.44) = 1.3.
        assert!((net.noise_us.unwrap() - 1.3).abs() < 1e-9, "{net:?}");
        assert_eq!(net.note, None);
        // 200 us more on the cable: all of it is the network's.
        let slow = network_part(t(225.0, 0.3), t(8.5, 0.4), t(9.0, 1.2));
        assert!((slow.us.unwrap() - net.us.unwrap() - 200.0).abs() < 1e-9);
        // A software RNIC's loopback may cost more than its share: the difference is -2 us,
        // inside its noise of 3 us. A time is never negative: 0, within noise, and said so.
        let inside = network_part(t(10.0, 0.0), t(6.0, 3.0), t(6.0, 0.0));
        assert_eq!(inside.us, Some(0.0));
        let note = inside.note.unwrap();
        assert!(
            note.contains("-2.00 us, inside its noise of 3.00 us"),
            "{note}"
        );
        // Positive but inside the noise: kept, and said to be within noise.
        let small = network_part(t(13.0, 0.0), t(6.0, 3.0), t(6.0, 0.0));
        assert_eq!(small.us, Some(1.0));
        assert!(small.note.is_some());
        // A part not measured leaves the network's unknown.
        assert_eq!(network_part(t(25.0, 0.0), None, t(9.0, 0.0)).us, None);
        assert_eq!(network_part(None, t(8.5, 0.0), t(9.0, 0.0)).us, None);
    }

    #[test]
    fn the_rnics_own_round_trips_replace_the_subtraction_where_there_are_any() {
        // No timestamps (rxe): the latency less both parts.
        let net = network_split(t(25.0, 0.0), t(8.5, 0.0), t(9.0, 0.0), &[]);
        assert_eq!(
            (net.us, net.from.as_str()),
            (Some(7.5), "latency_less_host_parts")
        );
        // Stamped round trips of 4.0, 4.4 and 9.0 us: half the median, whatever the CPU's
        // latency and the host parts say.
        let net = network_split(
            t(25.0, 0.0),
            None,
            t(9.0, 0.0),
            &[4_000.0, 9_000.0, 4_400.0],
        );
        assert_eq!(net.from.as_str(), "completion_timestamps");
        assert!((net.us.unwrap() - 2.2).abs() < 1e-9, "{net:?}");
    }

    fn judged(
        (lat, a, b, net, bw, p99): (f64, f64, f64, f64, f64, f64),
    ) -> (PairReport, PairBaseline) {
        let end = |rnic: &str| End {
            host: "g".into(),
            rnic: rnic.into(),
            device: None,
        };
        let stats = |p99_us: f64| LatencyStats {
            samples: 1000,
            min_us: 20.0,
            p50_us: 25.0,
            p90_us: 30.0,
            p99_us,
            max_us: p99_us,
        };
        let baseline = PairBaseline {
            a: end("rxe_a"),
            b: end("rxe_b"),
            latency_us: Some(25.0),
            host_a_us: Some(10.0),
            host_b_us: Some(10.0),
            network_us: Some(5.0),
            network_noise_us: None,
            bandwidth_gbps: Some(0.2),
            latency: Some(stats(40.0)),
        };
        let mut report = PairReport {
            a: end("rxe_a"),
            b: end("rxe_b"),
            latency_us: Some(lat),
            bandwidth_gbps: Some(bw),
            host_a_us: Some(a),
            host_b_us: Some(b),
            network_us: Some(net),
            network_from: NetworkFrom::LatencyLessHostParts,
            network_noise_us: None,
            network_note: None,
            timestamps: None,
            timestamps_note: None,
            route: Some(Vec::new()),
            route_source: RouteSource::Untraced,
            status: PairStatus::Uncertain,
            reason: String::new(),
            host_a_status: None,
            host_b_status: None,
            network_status: None,
            simulated: false,
            endpoint_a: "mem0".into(),
            latency: Some(stats(p99)),
            latency_bytes: 2,
            bw_bytes: 65536,
            bw_iterations: 300,
            verified: true,
            host_a_error: None,
            host_b_error: None,
            peer: "p".into(),
            error: None,
            counters_a: None,
            mesh: Default::default(),
        };
        judge_against(&mut report, &baseline, 0.2);
        (report, baseline)
    }

    #[test]
    fn a_pair_is_judged_part_by_part_against_its_baseline() {
        // Within the thresholds: the network 4 us more (under 20 % of the pair's 25 us),
        // the hosts 15 % more, the tail 1.5x, the bandwidth 15 % less.
        let words = |r: &PairReport| {
            let part = |s: Option<model::pair::PartStatus>| s.map(|s| s.as_str());
            (
                r.status.as_str(),
                part(r.host_a_status),
                part(r.host_b_status),
                part(r.network_status),
            )
        };
        let (r, _) = judged((34.0, 11.5, 11.5, 9.0, 0.17, 60.0));
        assert_eq!(r.status.as_str(), "normal", "{}", r.reason);
        // A longer cable: only the network part is abnormal, and says by how much.
        let (r, _) = judged((225.0, 10.0, 10.0, 205.0, 0.2, 240.0));
        let (status, host_a_status, host_b_status, network_status) = words(&r);
        assert_eq!(status, "abnormal");
        assert_eq!(
            (host_a_status, host_b_status, network_status),
            (Some("normal"), Some("normal"), Some("abnormal"))
        );
        assert!(
            r.reason.starts_with("network part 205.00 us vs 5.00 us"),
            "{}",
            r.reason
        );
        // Loss: the median holds, the tail and the bandwidth do not.
        let (r, _) = judged((26.0, 10.0, 10.0, 6.0, 0.012, 67_000.0));
        assert_eq!(words(&r).3, Some("abnormal"));
        assert!(
            r.reason
                .contains("p99 half round trip 67000.00 us vs 40.00 us"),
            "{}",
            r.reason
        );
        assert!(
            r.reason.contains("bandwidth 0.012 Gb/s vs 0.200 Gb/s"),
            "{}",
            r.reason
        );
        // A slow host: its part, not the network.
        let (r, _) = judged((40.0, 25.0, 10.0, 5.0, 0.2, 50.0));
        let (status, host_a_status, _, network_status) = words(&r);
        assert_eq!(
            (host_a_status, network_status, status),
            (Some("abnormal"), Some("normal"), "abnormal")
        );
    }

    #[test]
    fn a_responder_refuses_a_probe_above_the_caps() {
        assert_eq!(acceptable(&PairSpec::default()), Ok(()));
        let huge = PairSpec {
            bw_bytes: 1 << 30,
            ..PairSpec::default()
        };
        assert!(acceptable(&huge)
            .unwrap_err()
            .to_string()
            .starts_with("bw_bytes 1073741824 is above"));
    }

    #[test]
    fn an_agent_restricted_to_devices_numbers_them_in_the_order_given() {
        // A simulated host has no discovery: without --devices it offers no RNIC.
        let host = Host::open(
            &HostSpec {
                sim: Some("dgx-a100".into()),
                ..HostSpec::default()
            },
            HostOptions::default(),
        )
        .unwrap();
        assert_eq!(rnics(&host, None), Vec::<(String, String)>::new());
        let devices = ["rxe_b".to_string(), "rxe_a".to_string()];
        assert_eq!(
            rnics(&host, Some(&devices)),
            vec![
                ("rnic0".to_string(), "rxe_b".to_string()),
                ("rnic1".to_string(), "rxe_a".to_string())
            ]
        );
    }
}
