//! The virtual host at the caps of `model::limits`: the largest fault it accepts still
//! costs milliseconds a snapshot, and the next one up is refused before it costs anything.

use model::limits;
use probe::Monitor;
use std::time::{Duration, Instant};
use vhost::{Fault, VhostConfig, VirtualHost};

fn dgx() -> model::HostTopology {
    model::builtin::load("dgx-a100").unwrap().unwrap()
}

#[test]
fn a_flood_at_the_cap_snapshots_in_milliseconds() {
    let host = dgx();
    let text = format!("odp:rnic0:flood:{}", limits::ODP_FLOOD_QPS);
    let fault = Fault::parse(&text, &host).unwrap();
    let mut vh = VirtualHost::new(host, vec![fault], VhostConfig::default());
    let started = Instant::now();
    for _ in 0..10 {
        let snap = vh.snapshot();
        assert_eq!(snap.odp.len() as u64, limits::ODP_FLOOD_QPS);
        let t = snap
            .transport
            .iter()
            .find(|t| t.rnic.as_str() == "rnic0")
            .unwrap();
        assert!(t.duplicate_request.unwrap() > 0);
    }
    // Ten snapshots; a debug build on a shared machine still takes well under a second.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn one_above_the_cap_is_refused_naming_it() {
    let over = limits::ODP_FLOOD_QPS + 1;
    let e = Fault::parse(&format!("odp:rnic0:flood:{over}"), &dgx()).unwrap_err();
    assert_eq!(
        e.reason,
        format!("odp flood QPs {over} is above the cap of 4096")
    );
}
