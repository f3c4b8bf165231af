//! Properties of the model over every built-in host (noise off, so differences are the
//! model's and not the noise's).

mod common;

use common::*;
use model::ProbeRun;
use probe::{Monitor, Plan};
use proptest::prelude::*;
use vhost::VhostConfig;

const EXACT: VhostConfig = VhostConfig {
    seed: 0,
    noise: 0.0,
    flap_half_period_ns: 15_000_000,
};

fn exact_mesh(name: &str, faults: &[&str]) -> ProbeRun {
    let h = host(name);
    let mut vh = vhost(&h, faults, EXACT);
    let mut spec = spec(3);
    spec.latency.warmup = 1;
    run(&mut vh, Plan::FullMesh, &spec)
}

fn host_name() -> impl Strategy<Value = &'static str> {
    let names: Vec<&'static str> = model::builtin::names().collect();
    proptest::sample::select(names)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn a_degraded_link_never_speeds_up_a_path_and_moves_only_its_own(
        name in host_name(),
        link_pick in any::<proptest::sample::Index>(),
        fraction in 0.01f64..=1.0,
    ) {
        let h = host(name);
        let link = &h.links()[link_pick.index(h.links().len())];
        let fault = format!("degrade:{}:{fraction}", link.id);
        let base = exact_mesh(name, &[]);
        let hit = exact_mesh(name, &[fault.as_str()]);
        for path in h.paths() {
            let (r, e) = (path.rnic.as_str(), path.endpoint.as_str());
            let (b, d) = (bw(&base, r, e), bw(&hit, r, e));
            prop_assert!(d <= b * (1.0 + 1e-9), "{fault}: {r}->{e} rose from {b} to {d}");
            if !path.links.contains(&link.id) {
                prop_assert!(within(d, b, 1e-9), "{fault}: {r}->{e} does not cross it but moved from {b} to {d}");
            }
            // With no traffic, a failure slows transfers but leaves Lat_host alone: the small
            // message (8 bits) moves by its transfer time only.
            let transfer_us = |g: f64| 8.0 / g / 1000.0;
            let shift = small_us(&hit, r, e) - small_us(&base, r, e);
            prop_assert!((shift - (transfer_us(d) - transfer_us(b))).abs() < 1e-9, "{fault}: {r}->{e} {shift}");
        }
    }

    #[test]
    fn service_traffic_is_capped_and_pauses_for_the_rest(
        name in host_name(),
        rnic_pick in any::<proptest::sample::Index>(),
        gbps in 0.1f64..600.0,
    ) {
        let h = host(name);
        let rnics: Vec<_> = h.rnics().collect();
        let rnic = rnics[rnic_pick.index(rnics.len())];
        let line = rnic.rnic().unwrap().line_rate_gbps;
        let fault = format!("service:{}:{gbps}", rnic.id);
        let mut vh = vhost(&h, &[fault.as_str()], EXACT);
        let snap = vh.snapshot();
        let seen = snap.rnic(&rnic.id).unwrap();
        let (thp, pause) = (seen.throughput_gbps.unwrap(), seen.tx_pause_ratio.unwrap());
        prop_assert!(thp <= gbps * (1.0 + 1e-9) && thp <= line * (1.0 + 1e-9), "{fault}: {thp}");
        prop_assert!(within(pause, 1.0 - thp / gbps, 1e-9) || pause.abs() < 1e-9, "{fault}: {pause}");
        prop_assert!((0.0..=1.0).contains(&pause));
        for l in &snap.links {
            prop_assert!(l.utilisation.unwrap() <= 1.0 + 1e-9, "{fault}: {:?}", l);
        }
        // The probe of that RNIC never gains from service traffic.
        let base = exact_mesh(name, &[]);
        let busy = run(&mut vh, Plan::FullMesh, &{ let mut s = spec(3); s.latency.warmup = 1; s });
        for path in h.paths_of(&rnic.id) {
            let (r, e) = (path.rnic.as_str(), path.endpoint.as_str());
            prop_assert!(bw(&busy, r, e) <= bw(&base, r, e) * (1.0 + 1e-9));
        }
    }
}
