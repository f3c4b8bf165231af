//! Issue 26, section 1 for the fabric: a run that delivered nothing (or too little to judge)
//! is no verdict, an estimated congested fraction is a fraction (thesis 3.3: 0 <= F <= 1)
//! with its uncertainty, and sizes above `fabric::limits` are refused when read.

use fabric::analysis::view::JobSelection;
use fabric::analysis::{diagnose, Cause, LinkView, Thresholds, ViewSpec};
use fabric::limits;
use fabric::sim::{SimConfig, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{FatTreeParams, Topology};
use fabric::traffic::{self, MappingSpec, WorkloadSpec};
use proptest::prelude::*;

fn radix8() -> Topology {
    Topology::new(FatTreeParams::radix8()).unwrap()
}

/// A run of `workload` on radix8, with its telemetry view and diagnosis.
fn run(workload: &str, config: SimConfig) -> (LinkView, fabric::analysis::Diagnosis) {
    let topology = radix8();
    let workload: WorkloadSpec = workload.parse().unwrap();
    let mapping: MappingSpec = "row-major".parse().unwrap();
    let jobs = traffic::build_jobs(&workload, &mapping, &topology, &config.job_settings()).unwrap();
    let result = Simulation::new(&topology, config, jobs)
        .unwrap()
        .run(&mut |_| {});
    let view = LinkView::build(
        &topology,
        &result,
        &ViewSpec::for_run(&result, JobSelection::All),
    )
    .unwrap();
    let diagnosis = diagnose(&topology, &view, &Thresholds::default());
    (view, diagnosis)
}

/// `--end 0us`: nothing delivered, so nothing judged: inconclusive, never `no_congestion`.
#[test]
fn a_run_that_delivered_nothing_is_inconclusive() {
    let config = SimConfig {
        end_ps: Some(0),
        ..SimConfig::default()
    };
    let (view, d) = run("stencil:16x8,bytes=8KiB", config);
    assert!(view.links.iter().all(|l| l.count == 0.0));
    assert_eq!(d.cause, Cause::Inconclusive);
    let not_judged = d.not_judged.expect("says why");
    assert!(
        not_judged.reason.contains("hold no packet"),
        "{}",
        not_judged.reason
    );
    assert!(d.summary.starts_with("Inconclusive:"), "{}", d.summary);
}

/// Too few samples for any link to reach `min_count` (8 KiB messages, 1 % tagged):
/// inconclusive, naming the busiest link; a run of 128 KiB messages is judged.
#[test]
fn too_few_samples_are_inconclusive_and_enough_are_judged() {
    let sparse = SimConfig {
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Reservoir,
            tag_fraction: 0.01,
            ..TelemetryConfig::default()
        },
        ..SimConfig::default()
    };
    let (_, d) = run("stencil:16x8,bytes=8KiB", sparse);
    assert_eq!(d.cause, Cause::Inconclusive);
    assert!(
        d.not_judged
            .unwrap()
            .reason
            .contains("no link has 32 weighted packets"),
        "{}",
        d.summary
    );
    // 16 times the packets (128 KiB messages): every busy link is sampled enough.
    let (_, d) = run("stencil:16x8", SimConfig::default());
    assert_ne!(d.cause, Cause::Inconclusive, "{}", d.summary);
    assert!(d.not_judged.is_none());
}

/// A congestion finding stands even when other links are thin: inconclusive is only ever the
/// alternative to `no_congestion`.
#[test]
fn a_finding_is_not_made_inconclusive() {
    let (_, d) = run(
        "reduction:naive,ranks=64,arrays=4,bytes=4KiB",
        SimConfig::default(),
    );
    assert_eq!(d.cause, Cause::CommunicationPattern, "{}", d.summary);
    assert!(d.not_judged.is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Every estimated fraction is a fraction, over random workloads, seeds and telemetry, and
    /// every standard deviation is finite and not negative.
    #[test]
    fn every_estimated_fraction_is_in_0_1(
        seed in 0u64..1000,
        load in 0.2f64..1.0,
        end_us in 1u64..6,
        kind in prop_oneof![
            Just(TelemetryKind::Reservoir),
            Just(TelemetryKind::Reservoir1Bit),
            Just(TelemetryKind::SingleBit),
        ],
        tag_fraction in prop_oneof![Just(1.0), 0.05f64..1.0],
        hotspot in any::<bool>(),
    ) {
        let config = SimConfig {
            seed,
            end_ps: Some(end_us * 1_000_000),
            telemetry: TelemetryConfig { kind, tag_fraction, ..TelemetryConfig::default() },
            ..SimConfig::default()
        };
        let workload = if hotspot {
            "reduction:naive,ranks=32,arrays=2,bytes=4KiB".to_string()
        } else {
            format!("uniform,load={load:.2},bytes=4KiB")
        };
        let (view, d) = run(&workload, config);
        for l in &view.links {
            prop_assert!((0.0..=1.0).contains(&l.congested_fraction), "{l:?}");
            for sd in [l.count_sd, l.congested_sd, l.congested_fraction_sd] {
                prop_assert!(sd.is_finite() && sd >= 0.0, "{l:?}");
            }
        }
        for root in &d.evidence.roots {
            prop_assert!((0.0..=1.0).contains(&root.congested_fraction));
        }
        for stage in &d.evidence.stages {
            prop_assert!((0.0..=1.0).contains(&stage.congested_fraction));
            prop_assert!((0.0..=1.0).contains(&stage.worst_fraction));
        }
    }
}

/// A tree above a cap is refused naming the cap, before anything is allocated.
#[test]
fn trees_above_the_caps_are_refused_naming_the_cap() {
    let dir = std::env::temp_dir().join(format!("fabric-caps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("huge.toml");
    let cases = [
        (
            "radix = 65535\nnodes_per_leaf = 32767\nleaves = 2\nleaves_per_pod = 2\naggs_per_pod = 1\n",
            "radix 65535 is above the cap of 256 ports",
        ),
        (
            "radix = 8\nnodes_per_leaf = 4\nleaves = 4000000000\nleaves_per_pod = 4\naggs_per_pod = 4\n",
            "node count 16000000000 is above the cap of 49151 nodes",
        ),
        (
            "radix = 256\nnodes_per_leaf = 1\nleaves = 1024\nleaves_per_pod = 128\naggs_per_pod = 255\n",
            "is above the cap of 262144 ports",
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(&file, text).unwrap();
        let err = Topology::load(&file).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
        assert!(err.starts_with(&file.display().to_string()), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Workloads above the caps are refused when parsed, naming the cap.
#[test]
fn workloads_above_the_caps_are_refused_naming_the_cap() {
    for (spec, expected) in [
        (
            "stencil:65535x65535",
            "a grid of 4294836225 is above the cap of 49151 ranks",
        ),
        (
            "stencil:64x72,rounds=99999999",
            "rounds 99999999 is above the cap of 10000 per rank",
        ),
        (
            "uniform,load=0.5,messages=18446744073709551615",
            "above the cap of 10000 per rank",
        ),
        (
            "uniform,load=0.5,bytes=2GiB",
            "above the cap of 1073741824 bytes per message",
        ),
        (
            "reduction:naive,ranks=100000",
            "ranks 100000 is above the cap of 49151 ranks",
        ),
    ] {
        let err = spec.parse::<WorkloadSpec>().unwrap_err().to_string();
        assert!(err.contains(expected), "{spec}: {err}");
    }
    // At the caps, accepted.
    for spec in [
        "stencil:151x325",
        "uniform,load=0.5,messages=10000,bytes=1GiB",
    ] {
        assert!(spec.parse::<WorkloadSpec>().is_ok(), "{spec}");
    }
    let config = SimConfig {
        end_ps: Some(limits::MAX_END_PS + 1),
        ..SimConfig::default()
    };
    let err = Simulation::new(&radix8(), config, Vec::new())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("is above the cap of 1000000 us of simulated time"),
        "{err}"
    );
}
