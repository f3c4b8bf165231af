//! The telemetry estimators against the simulator's ground truth, on full simulations (the
//! synthetic-path statistics are in `telemetry_stats.rs`): thesis 3.3 (weighted counts have
//! mean N and variance N(l - 1); the congested fraction's error shrinks like 1/sqrt(N)) and 5.3
//! (the 1-bit estimator has mean N and variance Q l^2 - N).

use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::telemetry::{PortSamples, TelemetryConfig, TelemetryKind};
use fabric::topology::{FatTreeParams, Peer, Topology};
use fabric::traffic::{build_jobs, MappingSpec, WorkloadSpec};

fn radix8() -> Topology {
    Topology::new(FatTreeParams::radix8()).unwrap()
}

/// Port buffers small enough that uniform traffic at 90 % load congests many ports (with
/// 64 KiB a queue never outgrows the credits of the next buffer at this load).
const SMALL_BUFFERS: u32 = 4096;

/// Uniform random traffic at `load`, `messages` of 512 B per rank, one job, run until every
/// packet is delivered (so every hop the ground truth counts reached a receiver).
fn run(
    topology: &Topology,
    kind: TelemetryKind,
    tag_fraction: f64,
    load: f64,
    messages: u64,
    seed: u64,
) -> SimResult {
    let config = SimConfig {
        packet_bytes: 512,
        buffer_bytes: SMALL_BUFFERS,
        seed,
        telemetry: TelemetryConfig {
            kind,
            hop_counter_bits: 8,
            tag_fraction,
        },
        ..SimConfig::default()
    };
    let spec: WorkloadSpec = format!("uniform,load={load},bytes=512,messages={messages}")
        .parse()
        .unwrap();
    let jobs = build_jobs(
        &spec,
        &MappingSpec::RowMajor,
        topology,
        &config.job_settings(),
    )
    .unwrap();
    Simulation::new(topology, config, jobs)
        .unwrap()
        .run(&mut |_| {})
}

fn samples(result: &SimResult) -> PortSamples {
    result.telemetry.as_ref().expect("telemetry on").total()
}

/// Algorithm 4 adds each packet's hop count to exactly one port, and the ground truth counts
/// each hop once: the sums over all ports are equal exactly, for hops and congested hops.
#[test]
fn reservoir_counts_conserve_every_hop() {
    let t = radix8();
    let result = run(&t, TelemetryKind::Reservoir, 1.0, 0.9, 400, 7);
    let s = samples(&result);
    let truth: u64 = result.ground_truth.packets[0].iter().sum();
    let congested: u64 = result.ground_truth.congested[0].iter().sum();
    assert!(
        truth > 100_000 && congested > 1_000,
        "{truth} hops, {congested} congested"
    );
    assert_eq!(s.counts.iter().sum::<f64>(), truth as f64);
    assert_eq!(s.congested.iter().sum::<f64>(), congested as f64);
}

/// Per port, W - N divided by its standard deviation: with paths of 3 and 5 hops through the
/// internal ports, Var[W] lies between 2N and 4N (3.3), so the mean squared z-score is at most
/// 1 against the upper bound and at least 1 against the lower one (up to sampling), and no
/// port is more than 5 deviations off. An unweighted count (E = N/l) fails the first part.
#[test]
fn weighted_counts_have_mean_n_and_variance_n_l_minus_1() {
    let t = radix8();
    let result = run(&t, TelemetryKind::Reservoir, 1.0, 0.6, 600, 3);
    let s = samples(&result);
    let (mut z2_high, mut z2_low, mut ports) = (0.0, 0.0, 0usize);
    for (e, &n) in result.ground_truth.packets[0].iter().enumerate() {
        // Internal ports only: endpoint ports also carry 1-hop paths.
        if n < 500 || !is_internal(&t, e as u32) {
            continue;
        }
        let err = s.counts[e] - n as f64;
        let n = n as f64;
        assert!(
            err.abs() < 5.0 * (4.0 * n).sqrt(),
            "port {e}: W {} vs N {n}",
            s.counts[e]
        );
        z2_high += err * err / (4.0 * n);
        z2_low += err * err / (2.0 * n);
        ports += 1;
    }
    assert!(ports > 300, "{ports} ports");
    let (high, low) = (z2_high / ports as f64, z2_low / ports as f64);
    assert!(high < 1.25, "mean z^2 against 4N: {high}");
    assert!(low > 0.75, "mean z^2 against 2N: {low}");
}

/// A port between two switches (not a leaf's port to a compute node).
fn is_internal(t: &Topology, e: u32) -> bool {
    !matches!(t.peer(t.port_ref(e)), Peer::Node(_))
}

/// Algorithms 5-7: the 1-bit counts are unbiased (mean N) with variance Q l^2 - N (5.3), Q being
/// the packets that might have crossed the port, which the receivers count.
#[test]
fn one_bit_counts_are_unbiased_with_the_5_3_variance() {
    let t = radix8();
    let result = run(&t, TelemetryKind::Reservoir1Bit, 1.0, 0.6, 600, 5);
    let s = samples(&result);
    let (mut z_sum, mut z2_sum, mut ports) = (0.0, 0.0, 0usize);
    for (e, &n) in result.ground_truth.packets[0].iter().enumerate() {
        if n < 500 || !is_internal(&t, e as u32) {
            continue;
        }
        let q = s.candidates[e] as f64;
        // Paths through internal ports are 3 or 5 hops long: Var between 9Q - N and 25Q - N.
        let sd_high = (25.0 * q - n as f64).sqrt();
        let z = (s.counts[e] - n as f64) / sd_high;
        assert!(z.abs() < 5.0, "port {e}: W {} vs N {n}, Q {q}", s.counts[e]);
        z_sum += z;
        z2_sum += z * z;
        ports += 1;
    }
    let mean = z_sum / ports as f64;
    let mean_square = z2_sum / ports as f64;
    assert!(ports > 300);
    // Unbiased: the mean z-score is within a few standard errors of zero.
    assert!(
        mean.abs() < 4.0 / (ports as f64).sqrt() + 0.05,
        "mean z {mean}"
    );
    assert!(
        mean_square < 1.25 && mean_square > 9.0 / 25.0 * 0.75,
        "mean z^2 {mean_square}"
    );
}

/// The congested fraction's error shrinks like 1/sqrt(N) (3.3): tagging a quarter, then a
/// sixteenth of the packets (thesis 5.1) of the same traffic gives 4 and 16 times fewer samples,
/// so the RMS error against the ground truth should double and double again.
#[test]
fn congested_fraction_error_shrinks_like_one_over_sqrt_n() {
    let t = radix8();
    let rms = |tag_fraction: f64| {
        let result = run(&t, TelemetryKind::Reservoir, tag_fraction, 0.9, 3000, 11);
        let s = samples(&result);
        let (mut sum, mut ports) = (0.0, 0usize);
        for (e, &n) in result.ground_truth.packets[0].iter().enumerate() {
            let c = result.ground_truth.congested[0][e];
            if n < 2_000 || c * 20 < n {
                continue;
            }
            let truth = c as f64 / n as f64;
            let estimate = if s.counts[e] > 0.0 {
                s.congested[e] / s.counts[e]
            } else {
                0.0
            };
            sum += (estimate - truth).powi(2);
            ports += 1;
        }
        assert!(ports > 50, "{ports} ports with congestion");
        (sum / ports as f64).sqrt()
    };
    let (all, quarter, sixteenth) = (rms(1.0), rms(0.25), rms(0.0625));
    for (more, fewer) in [(all, quarter), (quarter, sixteenth)] {
        let ratio = fewer / more;
        assert!(
            (1.5..2.7).contains(&ratio),
            "RMS {all:.4} {quarter:.4} {sixteenth:.4}: ratio {ratio:.2}, expected about 2"
        );
    }
}
