//! The virtual host: a clock, the flow network at each flap phase, and one RNG, behind
//! the [`probe::ProbeEngine`] and [`probe::Monitor`] traits.
//!
//! - **Clock**: u64 ns from 0. A latency test advances it by each message's simulated
//!   round trip (warm-up included), a streaming test by its duration, and
//!   [`VirtualHost::advance`] by idle time between runs.
//! - **Flap**: one square wave for every `flap` fault, of half-period
//!   `flap_half_period_ns` on this clock: healthy in even half-periods, degraded in odd
//!   ones (a half-period of 0 means always degraded). A latency sample sees the phase at
//!   its start; a stream is integrated phase by phase. So a flap that happens during a
//!   probe shows in that probe, as in Hostping 6 #6. Idle time of at least one full period
//!   (the minutes between runs) restarts the wave at a new phase: a real flap keeps no
//!   clock-exact rhythm over minutes, so each run meets it at an independent phase. The
//!   phase of the k-th such gap is a hash of (seed, k), apart from the noise RNG, so a
//!   seed and run index give the same phase whatever the probes drew.
//! - **Latency test** (Hostping 4.1.1, eq. 1): all small messages (warm-up, then timed),
//!   then all large ones. Each takes `(T_proc + Lat_host + transfer) * noise`, where the
//!   transfer runs at the path's bandwidth ([`crate::latency`]; one QP, one message in
//!   flight) and, with slow start, climbs the ramp from idle ([`crate::transfer`]). Noise is
//!   Normal(1, `noise`), clamped to [0.5, 2]. READ and WRITE move the same bytes over the
//!   same hops, so the model treats them alike.
//! - **Streaming test**: bytes moved in `duration_us` at the bandwidth of `qps` QPs with
//!   `depth` messages each in flight, slow start ramping once at the start, times noise of
//!   sigma `noise / 4` (a long average is steadier than one message).
//! - A message that would take more than [`MESSAGE_TIMEOUT_NS`] (a path with no capacity
//!   left) fails the probe with a timeout, as a real engine's bounded wait would.
//! - **Monitor**: the service traffic placed without any probe; see [`crate::net`] for
//!   why the probe is left out of link utilisation.

use crate::counters;
use crate::fault::Fault;
use crate::net::{Network, Phase};
use crate::noise::Noise;
use crate::transfer::{Profile, RAMP_START_DIVISOR};
use model::{
    ComponentClass, GpuActivity, HostSnapshot, HostTopology, LinkUtilisation, Path, Provenance,
    RnicActivity, StreamResult,
};
use probe::{LatencySamples, LatencySpec, Monitor, ProbeEngine, ProbeError, StreamSpec};

/// A message that takes longer than this (1 s) fails the probe with a timeout.
pub const MESSAGE_TIMEOUT_NS: u64 = 1_000_000_000;

/// How a virtual host behaves beyond its topology and faults.
#[derive(Debug, Clone, PartialEq)]
pub struct VhostConfig {
    /// Seed of the host's one RNG (noise).
    pub seed: u64,
    /// Standard deviation of the multiplicative latency noise (0.02 = 2 %); 0 gives the
    /// exact model values.
    pub noise: f64,
    /// Half-period of the flap square wave, ns (15 ms: a 1000-iteration probe of one path
    /// takes about 10 ms, so consecutive paths see different phases).
    pub flap_half_period_ns: u64,
}

impl Default for VhostConfig {
    fn default() -> Self {
        VhostConfig {
            seed: 0,
            noise: 0.02,
            flap_half_period_ns: 15_000_000,
        }
    }
}

/// A simulated RDMA host: a flow-level model of its topology with injected faults, which
/// yields what a loopback probe and the monitors would measure. Every number it produces
/// is labelled [`Provenance::Simulated`].
#[derive(Debug, Clone)]
pub struct VirtualHost {
    host: HostTopology,
    faults: Vec<Fault>,
    config: VhostConfig,
    clock_ns: u64,
    noise: Noise,
    net: Network,
    /// The network in the healthy and in the degraded flap phase, built on first use.
    phases: [Option<Phase>; 2],
    /// Idle gaps of at least one flap period so far (the run index in a series).
    flap_restarts: u64,
    /// Where in the flap period the clock's 0 falls since the last restart, ns.
    flap_offset_ns: u64,
}

impl VirtualHost {
    /// A virtual host of `host` with `faults` injected.
    ///
    /// # Panics
    ///
    /// If a fault does not fit `host` (one from [`Fault::parse`] on the same host always
    /// does), or if `config.noise` is negative or not finite.
    pub fn new(host: HostTopology, faults: Vec<Fault>, config: VhostConfig) -> VirtualHost {
        for f in &faults {
            if let Err(e) = f.check(&host) {
                panic!("{e}");
            }
        }
        assert!(
            config.noise >= 0.0 && config.noise.is_finite(),
            "noise must be a finite number >= 0, got {}",
            config.noise
        );
        let net = Network::new(&host, &faults);
        let flap_offset_ns = flap_offset(config.seed, 0, config.flap_half_period_ns);
        VirtualHost {
            noise: Noise::new(config.seed),
            host,
            faults,
            config,
            clock_ns: 0,
            net,
            phases: [None, None],
            flap_restarts: 0,
            flap_offset_ns,
        }
    }

    /// The host model.
    pub fn topology(&self) -> &HostTopology {
        &self.host
    }

    /// The injected faults.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Injects a fault from now on: a symptom that appears while an agent watches.
    ///
    /// # Panics
    ///
    /// If the fault does not fit the host (one from [`Fault::parse`] on it always does).
    pub fn inject(&mut self, fault: Fault) {
        if let Err(e) = fault.check(&self.host) {
            panic!("{e}");
        }
        self.faults.push(fault);
        self.net = Network::new(&self.host, &self.faults);
        self.phases = [None, None];
    }

    /// Lets `ns` of idle time pass (the cadence between runs). A gap of at least one flap
    /// period restarts the flap at the next seeded phase.
    pub fn advance(&mut self, ns: u64) {
        self.tick(ns);
        let half = self.config.flap_half_period_ns;
        if half > 0 && ns >= half.saturating_mul(2) {
            self.flap_restarts += 1;
            self.flap_offset_ns = flap_offset(self.config.seed, self.flap_restarts, half);
        }
    }

    /// Time passing inside a probe.
    fn tick(&mut self, ns: u64) {
        self.clock_ns = self.clock_ns.saturating_add(ns);
    }

    /// 0 in a healthy half-period (or with no flap), 1 in a degraded one.
    fn phase_at(&self, t_ns: u64) -> usize {
        if !self.net.has_flaps() {
            return 0;
        }
        match self.config.flap_half_period_ns {
            0 => 1,
            half => ((t_ns.saturating_add(self.flap_offset_ns) / half) % 2) as usize,
        }
    }

    /// Where the phase of `t_ns` ends, or `None` when it never does.
    fn phase_end(&self, t_ns: u64) -> Option<u64> {
        match self.config.flap_half_period_ns {
            0 => None,
            _ if !self.net.has_flaps() => None,
            half => {
                let shifted = t_ns.saturating_add(self.flap_offset_ns);
                let end = (shifted / half).saturating_add(1).saturating_mul(half);
                Some(end.saturating_sub(self.flap_offset_ns))
            }
        }
    }

    fn phase(&mut self, which: usize) -> &mut Phase {
        let net = &self.net;
        self.phases[which].get_or_insert_with(|| net.phase(which == 1))
    }

    /// The index of `path` among the host's paths.
    fn path_index(&self, path: &Path) -> Result<usize, ProbeError> {
        self.host
            .paths()
            .iter()
            .position(|p| p.rnic == path.rnic && p.endpoint == path.endpoint)
            .ok_or_else(|| ProbeError::Unavailable {
                reason: format!(
                    "{} has no path {} -> {}",
                    self.host.name, path.rnic, path.endpoint
                ),
            })
    }

    /// The rate profile of a probe of path `p` in phase `which`: `qps` QPs with
    /// `per_qp_bytes` each in flight, returning Lat_host too.
    fn profile(&mut self, p: usize, which: usize, qps: u32, per_qp_bytes: f64) -> (f64, Profile) {
        let phase = self.phases[which].get_or_insert_with(|| self.net.phase(which == 1));
        let state = self.net.path_state(phase, p);
        let rnic = self.net.rnic_of(p);
        let limit_gbps =
            rnic.limits
                .bandwidth_gbps(state.share_gbps, state.lat_host_ns, qps, per_qp_bytes);
        let ramp_from_gbps = rnic
            .slow_start
            .then(|| rnic.limits.line_rate_gbps / RAMP_START_DIVISOR);
        (
            state.lat_host_ns,
            Profile {
                limit_gbps,
                ramp_from_gbps,
            },
        )
    }
}

/// Where in the flap period (`2 * half` ns) the wave starts after its `restart`-th idle gap:
/// a SplitMix64 hash of the seed and the restart count, uniform over the period.
fn flap_offset(seed: u64, restart: u64, half: u64) -> u64 {
    let period = half.saturating_mul(2);
    if period == 0 {
        return 0;
    }
    splitmix64(seed ^ splitmix64(restart)) % period
}

/// SplitMix64's output function (Steele, Lea, Flood 2014): a fixed bijection that spreads
/// neighbouring inputs over all 64 bits.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl ProbeEngine for VirtualHost {
    fn provenance(&self) -> Provenance {
        Provenance::Simulated
    }

    fn now_ns(&self) -> u64 {
        self.clock_ns
    }

    fn latency(&mut self, path: &Path, spec: &LatencySpec) -> Result<LatencySamples, ProbeError> {
        let p = self.path_index(path)?;
        let proc_ns = self.net.rnic_of(p).limits.proc_ns;
        let sigma = self.config.noise;
        // One message in flight on one QP; the large message sets the window bound.
        let mut cached: [Option<(f64, Profile)>; 2] = [None, None];
        let n = spec.iterations as usize;
        let mut samples = LatencySamples {
            small_ns: Vec::with_capacity(n),
            large_ns: Vec::with_capacity(n),
            verified_bytes: None,
        };
        for (bytes, out) in [
            (spec.small_bytes, &mut samples.small_ns),
            (spec.large_bytes, &mut samples.large_ns),
        ] {
            let bits = bytes as f64 * 8.0;
            for i in 0..spec.warmup.saturating_add(spec.iterations) {
                let which = self.phase_at(self.clock_ns);
                let (lat_host_ns, profile) = match cached[which] {
                    Some(c) => c,
                    None => {
                        *cached[which].insert(self.profile(p, which, 1, spec.large_bytes as f64))
                    }
                };
                let ns =
                    (proc_ns + lat_host_ns + profile.transfer_ns(bits)) * self.noise.factor(sigma);
                if ns.is_nan() || ns > MESSAGE_TIMEOUT_NS as f64 {
                    self.tick(MESSAGE_TIMEOUT_NS);
                    return Err(ProbeError::Timeout {
                        what: format!(
                            "the completion of a {bytes} B message on {} -> {}",
                            path.rnic, path.endpoint
                        ),
                        after_ms: MESSAGE_TIMEOUT_NS / 1_000_000,
                    });
                }
                self.tick(ns.round() as u64);
                if i >= spec.warmup {
                    out.push(ns);
                }
            }
        }
        Ok(samples)
    }

    fn stream(&mut self, path: &Path, spec: &StreamSpec) -> Result<StreamResult, ProbeError> {
        let p = self.path_index(path)?;
        if spec.qps == 0 || spec.depth == 0 || spec.message_bytes == 0 {
            return Err(ProbeError::Unavailable {
                reason: "a stream needs at least one QP, depth and byte".into(),
            });
        }
        if !(spec.duration_us > 0.0 && spec.duration_us.is_finite()) {
            return Err(ProbeError::Unavailable {
                reason: format!(
                    "a stream needs a positive duration, got {} us",
                    spec.duration_us
                ),
            });
        }
        let duration_ns = (spec.duration_us * 1000.0).round().max(1.0) as u64;
        let per_qp_bytes = spec.message_bytes as f64 * f64::from(spec.depth);
        let start = self.clock_ns;
        let end = start.saturating_add(duration_ns);
        let mut bits = 0.0;
        let mut at = start;
        // Phase by phase: the limit is constant within one, and the ramp runs from `start`.
        while at < end {
            let which = self.phase_at(at);
            let until = self.phase_end(at).map_or(end, |e| e.min(end));
            let (_, profile) = self.profile(p, which, spec.qps, per_qp_bytes);
            bits += profile.bits_between((at - start) as f64, (until - start) as f64);
            at = until;
        }
        let bytes = (bits / 8.0 * self.noise.factor(self.config.noise / 4.0))
            .floor()
            .max(0.0) as u64;
        self.clock_ns = end;
        Ok(StreamResult {
            qps: spec.qps,
            depth: spec.depth,
            message_bytes: spec.message_bytes,
            bytes,
            duration_us: spec.duration_us,
            bandwidth_gbps: bytes as f64 * 8.0 / duration_ns as f64,
        })
    }

    /// Idle time passes on the simulated clock (no sleeping): the same as
    /// [`VirtualHost::advance`].
    fn idle(&mut self, ns: u64) {
        self.advance(ns);
    }
}

impl Monitor for VirtualHost {
    fn snapshot(&mut self) -> HostSnapshot {
        let which = self.phase_at(self.clock_ns);
        self.phase(which);
        let phase = self.phases[which].as_ref().expect("just built");
        let rnics = self
            .host
            .rnics()
            .enumerate()
            .map(|(r, c)| {
                let (offered, delivered) = self.net.service_of(phase, r);
                // The RNIC pauses its upstream port for the share it cannot absorb.
                let pause = if offered > 0.0 {
                    (1.0 - delivered / offered).max(0.0)
                } else {
                    0.0
                };
                RnicActivity {
                    id: c.id.clone(),
                    throughput_gbps: Some(delivered),
                    tx_pause_ratio: Some(pause),
                    drops: Some(0),
                }
            })
            .collect();
        let gpus = self
            .host
            .components()
            .iter()
            .filter(|c| c.class() == ComponentClass::Gpu)
            .map(|c| GpuActivity {
                id: c.id.clone(),
                busy: Some(false),
            })
            .collect();
        let links = self
            .host
            .links()
            .iter()
            .enumerate()
            .map(|(i, l)| LinkUtilisation {
                id: l.id.clone(),
                utilisation: Some(self.net.utilisation(phase, i)),
            })
            .collect();
        let transport = self
            .host
            .rnics()
            .map(|c| {
                let pitfall = crate::odp::pitfall(&self.faults, &c.id);
                crate::odp::transport(&c.id, pitfall, counters::COUNTER_INTERVAL_NS)
            })
            .collect();
        HostSnapshot {
            at_ns: self.clock_ns,
            rnics,
            gpus,
            links,
            iommu: counters::iommu(&self.host, &self.net, phase),
            memory: counters::memory(&self.host, &self.net, phase),
            transport,
            odp: counters::odp_regions(&self.host, &self.faults, self.clock_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flapping(seed: u64) -> VirtualHost {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let fault = Fault::parse("flap:gpu6--lsw6:0.4", &host).unwrap();
        let config = VhostConfig {
            seed,
            ..VhostConfig::default()
        };
        VirtualHost::new(host, vec![fault], config)
    }

    /// The flap offset at the start of each of `runs` runs, 5 minutes apart.
    fn offsets(seed: u64, runs: usize) -> Vec<u64> {
        let mut vh = flapping(seed);
        (0..runs)
            .map(|_| {
                let o = vh.flap_offset_ns;
                vh.advance(300_000_000_000);
                o
            })
            .collect()
    }

    #[test]
    fn each_run_meets_the_flap_at_a_seeded_independent_phase() {
        let a = offsets(7, 16);
        assert_eq!(a, offsets(7, 16), "a seed replays its phases");
        assert_ne!(a, offsets(8, 16), "another seed draws others");
        let period = 2 * VhostConfig::default().flap_half_period_ns;
        assert!(a.iter().all(|&o| o < period));
        // Spread over the period, not stuck in one half.
        let degraded = a.iter().filter(|&&o| o >= period / 2).count();
        assert!((3..=13).contains(&degraded), "{a:?}");
    }

    #[test]
    fn time_inside_a_probe_keeps_the_phase() {
        let mut vh = flapping(3);
        let before = vh.flap_offset_ns;
        vh.advance(1_000);
        vh.tick(MESSAGE_TIMEOUT_NS);
        assert_eq!(vh.flap_offset_ns, before);
        assert_eq!(vh.flap_restarts, 0);
    }
}
