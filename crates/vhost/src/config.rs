//! What `hostping lint` would read from a virtual host's configuration: ACS control on its
//! switches and ATS on its RNICs follow the injected `acs` and `ats-off` faults; each RNIC's
//! IOMMU group is translated (`DMA`, with the fault's page size) under an `iommu` fault and
//! `identity` otherwise; the ODP regions in use follow the `odp` faults; every RNIC has the
//! ConnectX firmware's 500 ms transport timeout floor (ISPASS'21). The virtual host models
//! no link training and no huge-page supply, and says so.

use crate::fault::Fault;
use crate::host::VirtualHost;
use crate::odp::TRANSPORT_TIMEOUT_FLOOR_MS;
use model::{
    AcsPort, AtsState, ComponentClass, CounterReport, HostConfig, IommuConfig, IommuGroup,
    Provenance, SourceReport, TransportTimeout,
};

impl VirtualHost {
    /// What `hostping counters` shows of the virtual host: its monitor snapshot and the
    /// configuration its faults imply, labelled SIMULATED. `at_unix_ms` is the wall-clock
    /// time to stamp it with (the virtual host reads no wall clock).
    pub fn counter_report(&mut self, at_unix_ms: i64) -> CounterReport {
        use probe::Monitor;
        let faults: Vec<String> = self.faults().iter().map(|f| f.to_string()).collect();
        CounterReport {
            host: Some(self.topology().name.clone()),
            provenance: Provenance::Simulated,
            at_unix_ms,
            monitor: self.snapshot(),
            config: self.config(),
            sources: vec![SourceReport {
                detail: Some(
                    "SIMULATED: throughput, pause ratio and link utilisation from the flow model"
                        .into(),
                ),
                ..SourceReport::ok("virtual host", faults)
            }],
        }
    }

    /// The static configuration the injected faults imply.
    pub fn config(&self) -> HostConfig {
        let host = self.topology();
        let faults = self.faults();
        let acs_on = |switch: &model::ComponentId| {
            faults.iter().any(|f| match f {
                Fault::Acs { switch: None } => true,
                Fault::Acs { switch: Some(s) } => s == switch,
                _ => false,
            })
        };
        let acs = host
            .components()
            .iter()
            .filter(|c| c.class() == ComponentClass::PcieSwitch)
            .map(|c| {
                let on = acs_on(&c.id);
                AcsPort {
                    switch: c.id.clone(),
                    port: format!("{} downstream ports", c.id),
                    redirect: on,
                    control: if on {
                        "ReqRedir+ CmpltRedir+"
                    } else {
                        "ReqRedir- CmpltRedir-"
                    }
                    .into(),
                }
            })
            .collect();
        let ats = host
            .rnics()
            .map(|r| AtsState {
                device: r.id.clone(),
                enabled: !faults
                    .iter()
                    .any(|f| matches!(f, Fault::AtsOff { rnic } if rnic == &r.id)),
            })
            .collect();
        let page_of = |rnic: &model::ComponentId| {
            faults.iter().rev().find_map(|f| match f {
                Fault::Iommu { rnic: r, page, .. } if r == rnic => Some(page.bytes()),
                _ => None,
            })
        };
        let iommu_groups: Vec<IommuGroup> = host
            .rnics()
            .enumerate()
            .map(|(i, r)| {
                let page = page_of(&r.id);
                IommuGroup {
                    device: r.id.clone(),
                    group: Some(i as u32),
                    kind: Some(if page.is_some() { "DMA" } else { "identity" }.into()),
                    translated: Some(page.is_some()),
                    page_bytes: page,
                }
            })
            .collect();
        let translated = iommu_groups.iter().any(|g| g.translated == Some(true));
        let transport_timeouts = host
            .rnics()
            .map(|r| TransportTimeout {
                rnic: r.id.clone(),
                floor_ms: Some(TRANSPORT_TIMEOUT_FLOOR_MS),
                source: "ConnectX firmware floor (ISPASS'21), simulated".into(),
            })
            .collect();
        HostConfig {
            provenance: Some(Provenance::Simulated),
            links: Vec::new(),
            acs,
            ats,
            iommu: Some(IommuConfig {
                translated: Some(translated),
                mode: if translated { "DMA" } else { "identity" }.into(),
                hugepages_total: None,
                thp: None,
            }),
            iommu_groups,
            odp: crate::counters::odp_regions(host, faults, probe::ProbeEngine::now_ns(self)),
            transport_timeouts,
            unavailable: vec![
                "PCIe link training: not modelled by the virtual host".into(),
                "huge page supply: not modelled by the virtual host".into(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Fault, VhostConfig, VirtualHost};

    #[test]
    fn acs_and_ats_follow_the_faults() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let faults = ["acs:lsw2", "ats-off:rnic3"]
            .iter()
            .map(|f| Fault::parse(f, &host).unwrap())
            .collect();
        let vh = VirtualHost::new(host, faults, VhostConfig::default());
        let config = vh.config();
        let redirecting: Vec<&str> = config
            .acs
            .iter()
            .filter(|p| p.redirect)
            .map(|p| p.switch.as_str())
            .collect();
        assert_eq!(redirecting, ["lsw2"]);
        assert_eq!(config.acs.len(), 12, "4 upper and 8 leaf switches");
        let off: Vec<&str> = config
            .ats
            .iter()
            .filter(|a| !a.enabled)
            .map(|a| a.device.as_str())
            .collect();
        assert_eq!(off, ["rnic3"]);
    }

    #[test]
    fn acs_all_redirects_every_switch_and_injecting_later_shows_up() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let mut vh = VirtualHost::new(host.clone(), vec![], VhostConfig::default());
        assert!(vh.config().acs.iter().all(|p| !p.redirect));
        vh.inject(Fault::parse("acs:all", &host).unwrap());
        assert!(vh.config().acs.iter().all(|p| p.redirect));
    }
}
