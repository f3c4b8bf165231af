//! The virtual host probed through `probe::run`, as the binary does: the healthy matrix of
//! Hostping 3.2.2, each fault of DESIGN 4.2 moving the paths it should (Hostping 6), flapping,
//! monitors, determinism.

mod common;

use common::*;
use model::{ComponentId, LinkKind, Mode, Provenance};
use probe::{LatencySpec, Monitor, Plan, ProbeEngine, ProbeError, RunSpec, StreamSpec};
use vhost::{VhostConfig, VirtualHost};

const LINE: f64 = 200.0;
/// Bandwidth of a Gen4 x16 link kept at half, Gb/s (252.06 / 2).
const HALF_GEN4: f64 = 126.03;

#[test]
fn healthy_dgx_matches_hostping_3_2_2() {
    let h = host("dgx-a100");
    let run = mesh("dgx-a100", &[], 1000);
    assert_eq!(run.paths.len(), 40);
    assert_eq!(run.provenance, Provenance::Simulated);
    for path in h.paths() {
        let (r, e) = (path.rnic.as_str(), path.endpoint.as_str());
        let got = bw(&run, r, e);
        let lat = small_us(&run, r, e);
        match gdr_distance(&h, path) {
            // Affinitive: line rate. Same switch 1.0 us; one switch more, two more hops.
            Some(1) => {
                assert!(within(got, LINE, 0.03), "{r}->{e}: {got}");
                assert!(within(lat, 1.5 + 1.0, 0.02), "{r}->{e}: {lat}");
            }
            Some(2) => assert!(within(got, LINE, 0.03), "{r}->{e}: {got}"),
            // Through the root complex: 2.2 us, 125.5 Gb/s; across UPI: +0.2 us, 116.4 Gb/s.
            Some(3) => {
                assert!(within(got, 125.5, 0.03), "{r}->{e}: {got}");
                assert!(within(lat, 1.5 + 2.2, 0.02), "{r}->{e}: {lat}");
            }
            Some(4) => {
                assert!(within(got, 116.4, 0.03), "{r}->{e}: {got}");
                assert!(within(lat, 1.5 + 2.4, 0.02), "{r}->{e}: {lat}");
            }
            _ => {
                // Memory: line rate, and T_proc + 2 x the one-way hop latencies + DRAM access.
                assert!(within(got, LINE, 0.03), "{r}->{e}: {got}");
                let one_way: f64 = path
                    .links
                    .iter()
                    .map(|l| h.link(l).unwrap().latency_ns)
                    .sum();
                let want = 1.5 + (2.0 * one_way + 100.0) / 1000.0;
                assert!(within(lat, want, 0.02), "{r}->{e}: {lat} vs {want}");
            }
        }
    }
    // Remote memory is slower than local by a UPI round trip.
    assert!(small_us(&run, "rnic0", "mem1") > small_us(&run, "rnic0", "mem0") + 0.15);
}

#[test]
fn affinity_of_the_model_matches_line_rate() {
    // Every affinitive path reaches line rate and no other one does, on every built-in host.
    for name in model::builtin::names() {
        let h = host(name);
        let run = mesh(name, &[], 200);
        for path in h.paths() {
            let got = bw(&run, path.rnic.as_str(), path.endpoint.as_str());
            assert_eq!(
                within(got, LINE, 0.03),
                path.affinitive,
                "{name} {}->{}: {got}",
                path.rnic,
                path.endpoint
            );
        }
    }
}

fn fault_moves(faults: &[&str], want: &[&str]) -> (model::ProbeRun, model::ProbeRun) {
    let base = mesh("dgx-a100", &[], 300);
    let hit = mesh("dgx-a100", faults, 300);
    assert_eq!(moved(&base, &hit, 0.05), names(want), "{faults:?}");
    (base, hit)
}

#[test]
fn rnic_pcie_failure_lowers_its_affinitive_paths() {
    let (_, hit) = fault_moves(
        &["degrade:rnic0--lsw0:0.5"],
        &["rnic0->mem0", "rnic0->mem1", "rnic0->gpu0", "rnic0->gpu1"],
    );
    for e in ["mem0", "mem1", "gpu0", "gpu1"] {
        assert!(
            within(bw(&hit, "rnic0", e), HALF_GEN4, 0.03),
            "{e}: {}",
            bw(&hit, "rnic0", e)
        );
    }
    // The far GPUs stay latency-bound, just below the degraded link.
    assert!(within(bw(&hit, "rnic0", "gpu2"), 125.5, 0.03));
}

#[test]
fn gpu_pcie_failure_lowers_only_the_near_path() {
    let (_, hit) = fault_moves(&["degrade:gpu4--lsw4:0.5"], &["rnic2->gpu4"]);
    assert!(within(bw(&hit, "rnic2", "gpu4"), HALF_GEN4, 0.03));
}

#[test]
fn memory_channel_failure_lowers_every_path_to_it() {
    // The loopback loads the DRAM bus twice: 1638.4 x 0.15 / 2.
    let (_, hit) = fault_moves(
        &["degrade:mem0--cpu0:0.15"],
        &["rnic0->mem0", "rnic1->mem0", "rnic2->mem0", "rnic3->mem0"],
    );
    for r in ["rnic0", "rnic1", "rnic2", "rnic3"] {
        assert!(
            within(bw(&hit, r, "mem0"), 1638.4 * 0.15 / 2.0, 0.03),
            "{r}"
        );
    }
}

#[test]
fn upi_failure_lowers_cross_socket_memory_paths() {
    let (_, hit) = fault_moves(
        &["degrade:cpu0--cpu1:0.3"],
        &["rnic0->mem1", "rnic1->mem1", "rnic2->mem0", "rnic3->mem0"],
    );
    assert!(within(bw(&hit, "rnic2", "mem0"), 537.6 * 0.3, 0.03));
}

#[test]
fn root_port_failure_lowers_the_rnic_behind_it() {
    // Hostping 6 #5 / Fig. 8 (d): the GPUs under the port stay normal; paths through it
    // from other RNICs are latency-bound below the degraded rate.
    let (_, hit) = fault_moves(&["degrade:usw0--cpu0:0.5"], &["rnic0->mem0", "rnic0->mem1"]);
    assert!(within(bw(&hit, "rnic0", "mem0"), HALF_GEN4, 0.03));
}

#[test]
fn acs_everywhere_sends_near_gdr_through_the_cpu() {
    let near: Vec<String> = (0..4)
        .flat_map(|r| {
            [
                format!("rnic{r}->gpu{}", 2 * r),
                format!("rnic{r}->gpu{}", 2 * r + 1),
            ]
        })
        .collect();
    let near: Vec<&str> = near.iter().map(String::as_str).collect();
    let (base, hit) = fault_moves(&["acs:all"], &near);
    for r in 0..4 {
        for g in [2 * r, 2 * r + 1] {
            let (rn, gp) = (format!("rnic{r}"), format!("gpu{g}"));
            assert!(
                within(bw(&hit, &rn, &gp), 125.5, 0.03),
                "{rn}->{gp}: {}",
                bw(&hit, &rn, &gp)
            );
            assert!(
                within(small_us(&hit, &rn, &gp), 1.5 + 2.2, 0.02),
                "{rn}->{gp}: {}",
                small_us(&hit, &rn, &gp)
            );
        }
    }
    // Latency of the paths already through the CPU does not move.
    assert!(within(
        small_us(&hit, "rnic0", "gpu4"),
        small_us(&base, "rnic0", "gpu4"),
        0.01
    ));
}

#[test]
fn acs_on_one_switch_moves_one_path() {
    let (base, hit) = fault_moves(&["acs:lsw0"], &["rnic0->gpu0"]);
    assert!(small_us(&hit, "rnic0", "gpu0") > small_us(&base, "rnic0", "gpu0") + 1.0);
    // ACS on a switch no path turns at changes nothing.
    fault_moves(&["acs:lsw1"], &[]);
}

#[test]
fn ats_off_moves_the_rnics_same_root_port_gpus() {
    let (base, hit) = fault_moves(&["ats-off:rnic0"], &["rnic0->gpu0", "rnic0->gpu1"]);
    assert!(small_us(&hit, "rnic0", "gpu1") > small_us(&base, "rnic0", "gpu1") + 1.0);
    assert!(within(
        small_us(&hit, "rnic0", "mem0"),
        small_us(&base, "rnic0", "mem0"),
        0.01
    ));
}

fn stream(vh: &mut VirtualHost, rnic: &str, endpoint: &str, qps: u32, duration_us: f64) -> f64 {
    let h = vh.topology().clone();
    let path = h
        .path(&ComponentId::from(rnic), &ComponentId::from(endpoint))
        .unwrap();
    let spec = StreamSpec {
        qps,
        duration_us,
        ..Default::default()
    };
    let before = vh.now_ns();
    let s = vh.stream(path, &spec).unwrap();
    assert_eq!(
        vh.now_ns() - before,
        (duration_us * 1000.0) as u64,
        "the clock moves by the duration"
    );
    assert_eq!(
        (s.qps, s.depth, s.duration_us),
        (qps, spec.depth, duration_us)
    );
    assert!(within(
        s.bandwidth_gbps,
        s.bytes as f64 * 8.0 / (duration_us * 1000.0),
        1e-12
    ));
    s.bandwidth_gbps
}

#[test]
fn slow_start_hurts_messages_but_not_long_streams() {
    let base = mesh("dgx-a100", &[], 300);
    let hit = mesh("dgx-a100", &["slow-start:rnic0"], 300);
    let rnic0: Vec<String> = host("dgx-a100")
        .paths_of(&"rnic0".into())
        .map(|p| format!("rnic0->{}", p.endpoint))
        .collect();
    let rnic0: Vec<&str> = rnic0.iter().map(String::as_str).collect();
    assert_eq!(moved(&base, &hit, 0.05), names(&rnic0));
    for p in &base.paths {
        if p.rnic.as_str() == "rnic0" {
            let (b, s) = (
                bw(&base, "rnic0", p.endpoint.as_str()),
                bw(&hit, "rnic0", p.endpoint.as_str()),
            );
            assert!(s < 0.8 * b, "{}: {s} vs {b}", p.endpoint);
        }
    }
    // "We found no bottlenecks during continuous bandwidth tests" (Hostping 6 #9).
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &["slow-start:rnic0"], VhostConfig::default());
    assert!(within(
        stream(&mut vh, "rnic0", "mem0", 1, 100_000.0),
        LINE,
        0.02
    ));
    assert!(stream(&mut vh, "rnic0", "mem0", 1, 1_000.0) < 0.9 * LINE);
    assert!(within(
        stream(&mut vh, "rnic1", "mem0", 1, 1_000.0),
        LINE,
        0.02
    ));
}

#[test]
fn small_tx_window_limits_one_qp_but_not_eight() {
    let base = mesh("dgx-a100", &[], 300);
    let hit = mesh("dgx-a100", &["tx-window:rnic0:16384"], 300);
    let lowered = moved(&base, &hit, 0.05);
    assert_eq!(lowered.len(), 10, "{lowered:?}");
    assert!(
        lowered.iter().all(|p| p.starts_with("rnic0->")),
        "{lowered:?}"
    );
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &["tx-window:rnic0:16384"], VhostConfig::default());
    assert!(stream(&mut vh, "rnic0", "mem0", 1, 10_000.0) < 0.5 * LINE);
    assert!(within(
        stream(&mut vh, "rnic0", "mem0", 8, 10_000.0),
        LINE,
        0.02
    ));
    let mut healthy = vhost(&h, &[], VhostConfig::default());
    assert!(within(
        stream(&mut healthy, "rnic0", "mem0", 1, 10_000.0),
        LINE,
        0.02
    ));
}

#[test]
fn overloaded_upi_shows_on_the_bus_monitor_and_pauses_the_rnic() {
    let h = host("dgx-a100");
    let mut vh = vhost(
        &h,
        &["overload:cpu0--cpu1:0.95", "service:rnic0:150:mem1"],
        VhostConfig::default(),
    );
    let snap = vh.snapshot();
    assert!(snap.utilisation(&"cpu0--cpu1".into()).unwrap() > 0.9);
    let rnic0 = snap.rnic(&"rnic0".into()).unwrap();
    assert!(rnic0.tx_pause_ratio.unwrap() > 0.03, "{rnic0:?}");
    assert!(rnic0.throughput_gbps.unwrap() < 150.0);
    assert_eq!(
        snap.rnic(&"rnic1".into()).unwrap().tx_pause_ratio,
        Some(0.0)
    );
    // Hostping 6 #11: the cross-socket memory paths are abnormal, the local ones are not.
    let run = run(&mut vh, Plan::FullMesh, &spec(300));
    for (r, e) in [
        ("rnic0", "mem1"),
        ("rnic1", "mem1"),
        ("rnic2", "mem0"),
        ("rnic3", "mem0"),
    ] {
        assert!(bw(&run, r, e) < 0.8 * LINE, "{r}->{e}: {}", bw(&run, r, e));
    }
    for r in ["rnic1", "rnic2", "rnic3"] {
        assert!(
            within(
                bw(&run, r, if r == "rnic1" { "mem0" } else { "mem1" }),
                LINE,
                0.03
            ),
            "{r}"
        );
    }
}

#[test]
fn service_traffic_is_delivered_and_shares_the_line_rate() {
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &["service:rnic0:150"], VhostConfig::default());
    let snap = vh.snapshot();
    let rnic0 = snap.rnic(&"rnic0".into()).unwrap();
    assert!(
        within(rnic0.throughput_gbps.unwrap(), 150.0, 1e-9),
        "{rnic0:?}"
    );
    assert_eq!(rnic0.tx_pause_ratio, Some(0.0));
    assert_eq!(rnic0.drops, Some(0));
    assert_eq!(
        snap.rnic(&"rnic1".into()).unwrap().throughput_gbps,
        Some(0.0)
    );
    // Spread over the four affinitive endpoints: 37.5 Gb/s written through the RNIC's link.
    assert!(within(
        snap.utilisation(&"rnic0--lsw0".into()).unwrap(),
        150.0 / 252.06,
        0.001
    ));
    assert!(within(
        snap.utilisation(&"gpu1--lsw1".into()).unwrap(),
        37.5 / 252.06,
        0.001
    ));
    assert_eq!(snap.utilisation(&"rnic1--lsw2".into()), Some(0.0));
    // The probe gets what is left of the receive side, on every affinitive path alike.
    let run = run(&mut vh, Plan::AffinitiveOnly, &spec(300));
    let rates: Vec<f64> = ["mem0", "mem1", "gpu0", "gpu1"]
        .iter()
        .map(|e| bw(&run, "rnic0", e))
        .collect();
    for r in &rates {
        assert!(within(*r, rates[0], 0.02), "{rates:?}");
        assert!(within(*r, LINE - 150.0, 0.03), "{rates:?}");
    }
    assert!(within(bw(&run, "rnic1", "mem0"), LINE, 0.03));
}

#[test]
fn more_service_than_line_rate_pauses() {
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &["service:rnic2:250"], VhostConfig::default());
    let snap = vh.snapshot();
    let rnic2 = snap.rnic(&"rnic2".into()).unwrap();
    assert!(within(rnic2.throughput_gbps.unwrap(), LINE, 1e-9));
    assert!(within(
        rnic2.tx_pause_ratio.unwrap(),
        1.0 - LINE / 250.0,
        1e-9
    ));
}

#[test]
fn flapping_memory_channel_splits_each_run() {
    // Hostping 6 #6: the paths to mem1 are probed one after another; the flap shows within
    // a run, in every run.
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &["flap:mem1--cpu1:0.15"], VhostConfig::default());
    let healthy = mesh("dgx-a100", &[], 1000);
    for i in 0..4 {
        let run = run(&mut vh, Plan::FullMesh, &spec(1000));
        let mem1: Vec<f64> = (0..4)
            .map(|r| bw(&run, &format!("rnic{r}"), "mem1"))
            .collect();
        assert!(mem1.iter().any(|&b| b < 0.8 * LINE), "run {i}: {mem1:?}");
        assert!(mem1.iter().any(|&b| b > 0.8 * LINE), "run {i}: {mem1:?}");
        // Nothing else moves.
        let others: Vec<String> = moved(&healthy, &run, 0.03)
            .into_iter()
            .filter(|p| !p.ends_with("->mem1"))
            .collect();
        assert!(others.is_empty(), "run {i}: {others:?}");
        vh.advance(300_000_000_000);
    }
}

#[test]
fn a_flap_inside_one_probe_shows_in_its_samples() {
    // A half-period shorter than one path's probe: the large messages see both phases.
    let h = host("dgx-a100");
    let config = VhostConfig {
        noise: 0.0,
        flap_half_period_ns: 1_000_000,
        ..Default::default()
    };
    let mut vh = vhost(&h, &["flap:mem1--cpu1:0.15"], config);
    let path = h.path(&"rnic0".into(), &"mem1".into()).unwrap();
    let s = vh.latency(path, &LatencySpec::default()).unwrap();
    let fast = (1.5e3 + 800.0) + 1_048_576.0 / LINE;
    let slow = (1.5e3 + 800.0) + 1_048_576.0 / (1638.4 * 0.15 / 2.0);
    let count = |want: f64| {
        s.large_ns
            .iter()
            .filter(|&&x| within(x, want, 1e-9))
            .count()
    };
    assert!(
        count(fast) > 100 && count(slow) > 100,
        "{} fast, {} slow",
        count(fast),
        count(slow)
    );
    assert_eq!(count(fast) + count(slow), 1000);
}

#[test]
fn a_path_with_no_capacity_left_times_out_and_the_run_goes_on() {
    let h = host("dgx-a100");
    let mut vh = vhost(
        &h,
        &["degrade:rnic0--lsw0:0.5", "overload:rnic0--lsw0:0.5"],
        VhostConfig::default(),
    );
    let run = run(&mut vh, Plan::FullMesh, &spec(10));
    for p in &run.paths {
        let failed = p.measurement().is_none();
        assert_eq!(
            failed,
            p.rnic.as_str() == "rnic0",
            "{}->{}: {:?}",
            p.rnic,
            p.endpoint,
            p.outcome
        );
        if let model::PathOutcome::Failed { error } = &p.outcome {
            assert!(error.contains("timed out after 1000 ms"), "{error}");
        }
    }
}

#[test]
fn unknown_paths_and_bad_streams_are_errors() {
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &[], VhostConfig::default());
    let mut alien = h.paths()[0].clone();
    alien.endpoint = "mem7".into();
    assert!(matches!(
        vh.latency(&alien, &LatencySpec::default()),
        Err(ProbeError::Unavailable { .. })
    ));
    let path = &h.paths()[0];
    for spec in [
        StreamSpec {
            qps: 0,
            ..Default::default()
        },
        StreamSpec {
            depth: 0,
            ..Default::default()
        },
        StreamSpec {
            message_bytes: 0,
            ..Default::default()
        },
        StreamSpec {
            duration_us: 0.0,
            ..Default::default()
        },
        StreamSpec {
            duration_us: f64::NAN,
            ..Default::default()
        },
    ] {
        assert!(
            matches!(vh.stream(path, &spec), Err(ProbeError::Unavailable { .. })),
            "{spec:?}"
        );
    }
    assert_eq!(vh.now_ns(), 0, "a refused probe takes no time");
}

#[test]
fn streams_in_a_run_follow_the_same_limits() {
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &[], VhostConfig::default());
    let spec = RunSpec {
        latency: LatencySpec {
            iterations: 50,
            ..Default::default()
        },
        stream: Some(StreamSpec::default()),
    };
    let run = run(&mut vh, Plan::FullMesh, &spec);
    for p in h.paths() {
        let s = run
            .probe(&p.rnic, &p.endpoint)
            .unwrap()
            .stream
            .as_ref()
            .expect("stream asked for");
        let latency_bw = bw(&run, p.rnic.as_str(), p.endpoint.as_str());
        assert!(
            within(s.bandwidth_gbps, latency_bw, 0.04),
            "{}->{}: {} vs {latency_bw}",
            p.rnic,
            p.endpoint,
            s.bandwidth_gbps
        );
    }
}

#[test]
fn monitor_sees_every_rnic_gpu_and_link_at_the_clock() {
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &[], VhostConfig::default());
    vh.advance(5_000);
    let snap = vh.snapshot();
    assert_eq!(snap.at_ns, 5_000);
    // Idle time between runs is simulated, not slept (an hour here would hang the test).
    vh.idle(3_600_000_000_000);
    assert_eq!(vh.now_ns(), 3_600_000_005_000);
    assert_eq!(snap.rnics.len(), 4);
    assert_eq!(snap.gpus.len(), 8);
    assert!(snap.gpus.iter().all(|g| g.busy == Some(false)));
    assert_eq!(snap.links.len(), h.links().len());
    assert!(snap.links.iter().all(|l| l.utilisation == Some(0.0)));
    // The probe's own traffic is not on the bus monitor.
    let _ = run(&mut vh, Plan::FullMesh, &spec(10));
    assert!(vh
        .snapshot()
        .links
        .iter()
        .all(|l| l.utilisation == Some(0.0)));
    // A degraded link is not an overloaded one.
    let mut vh = vhost(&h, &["degrade:mem0--cpu0:0.15"], VhostConfig::default());
    assert_eq!(vh.snapshot().utilisation(&"mem0--cpu0".into()), Some(0.0));
    let mut vh = vhost(&h, &["overload:mem0--cpu0:0.6"], VhostConfig::default());
    assert!(within(
        vh.snapshot().utilisation(&"mem0--cpu0".into()).unwrap(),
        0.6,
        1e-12
    ));
    assert_eq!(vh.provenance(), Provenance::Simulated);
}

#[test]
fn overloaded_memory_channel_raises_latency_and_lowers_bandwidth() {
    // Hostping 6 #12: other traffic on mem0's channel; every path to mem0 degrades.
    let base = mesh("dgx-a100", &[], 300);
    let hit = mesh("dgx-a100", &["overload:mem0--cpu0:0.9"], 300);
    assert_eq!(
        moved(&base, &hit, 0.05),
        names(&["rnic0->mem0", "rnic1->mem0", "rnic2->mem0", "rnic3->mem0"])
    );
    assert!(within(bw(&hit, "rnic0", "mem0"), 1638.4 * 0.1 / 2.0, 0.03));
    // Queueing at a 90 % busy bus: 2 crossings x 50 ns x 9.
    assert!(within(
        small_us(&hit, "rnic0", "mem0") - small_us(&base, "rnic0", "mem0"),
        0.9,
        0.05
    ));
}

#[test]
fn same_seed_same_run_other_seed_other_samples() {
    let h = host("dgx-a100");
    let faults = [
        "flap:mem1--cpu1:0.15",
        "service:rnic2:60",
        "slow-start:rnic3",
    ];
    let config = VhostConfig {
        seed: 42,
        ..Default::default()
    };
    let a = run(
        &mut vhost(&h, &faults, config.clone()),
        Plan::FullMesh,
        &spec(200),
    );
    let b = run(
        &mut vhost(&h, &faults, config.clone()),
        Plan::FullMesh,
        &spec(200),
    );
    assert_eq!(a, b);
    let path = &h.paths()[0];
    let samples = |seed| {
        vhost(
            &h,
            &faults,
            VhostConfig {
                seed,
                ..config.clone()
            },
        )
        .latency(path, &LatencySpec::default())
        .unwrap()
    };
    assert_eq!(samples(42), samples(42));
    assert_ne!(samples(42).small_ns, samples(43).small_ns);
}

#[test]
fn no_noise_gives_the_exact_model() {
    let h = host("dgx-a100");
    let mut vh = vhost(
        &h,
        &[],
        VhostConfig {
            noise: 0.0,
            ..Default::default()
        },
    );
    let path = h.path(&"rnic0".into(), &"gpu2".into()).unwrap();
    let spec = LatencySpec::default();
    let s = vh.latency(path, &spec).unwrap();
    // Lat_host 2.2 us; bandwidth = read window / Lat_host (Hostping 3.2.2, Little's law).
    let bw = 34_512.0 * 8.0 / 2200.0;
    assert!(s
        .small_ns
        .iter()
        .all(|&x| within(x, 1500.0 + 2200.0 + 8.0 / bw, 1e-12)));
    assert!(s
        .large_ns
        .iter()
        .all(|&x| within(x, 1500.0 + 2200.0 + 131_072.0 * 8.0 / bw, 1e-12)));
    let m = probe::measurement(&spec, &s).unwrap();
    assert!(within(m.bandwidth_gbps, bw, 1e-9), "{}", m.bandwidth_gbps);
    // The clock moved by every message, warm-up included (each rounded to a ns).
    let n = f64::from(spec.warmup + spec.iterations);
    let want = n * (s.small_ns[0] + s.large_ns[0]);
    assert!(
        (vh.now_ns() as f64 - want).abs() <= n,
        "{} vs {want}",
        vh.now_ns()
    );
    // A run starts where the previous one ended.
    let start = vh.now_ns();
    let run = probe::run(
        &mut vh,
        &h,
        Mode::Idle,
        &[path],
        &RunSpec::default(),
        &mut |_, _| {},
    );
    assert_eq!(run.started_ns, start);
    assert!(run.finished_ns > start);
}

#[test]
fn the_model_is_the_same_on_every_link_kind() {
    // Halving any link on an affinitive path of rnic0 to mem1 halves that path, for every
    // kind it crosses (memory channel: the loopback loads it twice).
    let h = host("dgx-a100");
    let path = h.path(&"rnic0".into(), &"mem1".into()).unwrap();
    for l in &path.links {
        let link = h.link(l).unwrap();
        let fraction = 0.2;
        let f = format!("degrade:{l}:{fraction}");
        let run = mesh("dgx-a100", &[f.as_str()], 200);
        let want = link.capacity_gbps * fraction
            / if link.kind == LinkKind::MemoryChannel {
                2.0
            } else {
                1.0
            };
        assert!(want < 0.9 * LINE, "{f} must bind");
        assert!(
            within(bw(&run, "rnic0", "mem1"), want, 0.03),
            "{f}: {}",
            bw(&run, "rnic0", "mem1")
        );
    }
}
