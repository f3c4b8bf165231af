//! The reports the fleet benches' simulated hosts send (`hostping bench collector|sweeps`):
//! checks of one virtual host, healthy with different noise seeds, then with a link down to a
//! tenth of its capacity and one at half (a few bad hosts in a large fleet). The collector
//! links no virtual host, so its bench is handed these.

use crate::pipeline::{check_virtual, CheckSettings};
use model::{HostTopology, Report};
use vhost::{Fault, VhostConfig};

/// `healthy` healthy reports of `host` (noise seeds 1..=healthy), then one with a link
/// degraded to 0.1 of its capacity and one with another at 0.5.
pub fn fleet_variants(host: &HostTopology, healthy: u64) -> Vec<Report> {
    let settings = CheckSettings::default();
    let baseline = crate::record::simulated(
        host,
        crate::record::DEFAULT_RUNS,
        0,
        &settings.latency,
        VhostConfig::default().noise,
    );
    let one = |faults: Vec<Fault>, seed: u64| -> Report {
        check_virtual(host, faults, seed, &baseline, &settings)
            .pop()
            .expect("one run")
    };
    let mut variants: Vec<Report> = (1..=healthy).map(|s| one(Vec::new(), s)).collect();
    let links = &variants[0].links;
    let faults = [
        format!("degrade:{}:0.1", links[0].id),
        format!("degrade:{}:0.5", links[1 % links.len()].id),
    ];
    for (i, f) in faults.iter().enumerate() {
        let fault = Fault::parse(f, host).expect("a link of the model");
        variants.push(one(vec![fault], 100 + i as u64));
    }
    variants
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthy_variants_then_a_failed_and_a_degraded_link() {
        let host = model::builtin::load("single-socket").unwrap().unwrap();
        let variants = fleet_variants(&host, 2);
        assert_eq!(variants.len(), 4);
        assert!(variants[..2].iter().all(|r| r.healthy), "healthy seeds");
        assert!(
            variants[2..].iter().all(|r| !r.healthy),
            "degraded links are found"
        );
        assert_ne!(
            variants[0].paths, variants[1].paths,
            "different noise seeds"
        );
    }
}
