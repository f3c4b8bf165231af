//! The static configuration in model ids: how each PCIe link trained, ACS on switch ports,
//! ATS on RNICs and GPUs, and the IOMMU with the huge-page supply.

use super::translation::group_of;
use super::HostMonitor;
use crate::counters::{iommu, pcie};
use crate::sysfs::{Discovery, PciAddr};
use model::{AcsPort, AtsState, ComponentId, HostConfig, IommuConfig, LinkTraining, Provenance};
use std::collections::BTreeMap;

impl HostMonitor {
    pub(super) fn config_from(
        &self,
        memory: Option<iommu::MemoryConfig>,
        odp: Vec<model::OdpRegion>,
    ) -> HostConfig {
        let mut config = HostConfig {
            provenance: Some(Provenance::Measured),
            ..HostConfig::default()
        };
        if self.host().is_none() {
            config
                .unavailable
                .push("PCIe paths: no RDMA device, so no RNIC or GPU path to check".into());
            return config;
        }
        let bindings = &self.discovery.bindings;
        let mut unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let read =
            |addr: PciAddr, config: &mut HostConfig| match pcie::read_function(&self.root, addr) {
                Ok(f) => Some(f),
                Err(e) => {
                    config.unavailable.push(e.to_string());
                    None
                }
            };
        for (link, addr) in &bindings.pcie_links {
            let path = match pcie::read_path(&self.root, *addr) {
                Ok(p) => p,
                Err(e) => {
                    config.unavailable.push(e.to_string());
                    continue;
                }
            };
            let Some((device, above)) = path.split_last() else {
                continue;
            };
            let Some((cur, max)) = pcie::link_state(above.last(), device) else {
                continue;
            };
            config.links.push(LinkTraining {
                link: link.clone(),
                function: Some(addr.to_string()),
                current_gts: cur.gts,
                current_width: cur.width,
                max_gts: max.gts,
                max_width: max.width,
            });
        }
        for (switch, ports) in &bindings.switches {
            for addr in &ports.downstream {
                let Some(f) = read(*addr, &mut config) else {
                    continue;
                };
                match &f.acs {
                    pcie::Capability::Present(acs) => config.acs.push(AcsPort {
                        switch: switch.clone(),
                        port: addr.to_string(),
                        redirect: acs.control.redirects(),
                        control: acs.control.to_string(),
                    }),
                    pcie::Capability::Unknown { reason } => unknown
                        .entry(reason.clone())
                        .or_default()
                        .push(addr.to_string()),
                    pcie::Capability::Absent => {}
                }
            }
        }
        let devices: Vec<(ComponentId, PciAddr)> = bindings
            .rnics
            .iter()
            .filter(|(_, b)| !b.software)
            .filter_map(|(id, b)| {
                let port = self
                    .discovery
                    .rdma_ports
                    .iter()
                    .find(|p| p.device == b.device && p.port == b.port)?;
                Some((id.clone(), port.pci?))
            })
            .chain(bindings.gpus.iter().cloned())
            .collect();
        for (id, addr) in devices {
            let Some(f) = read(addr, &mut config) else {
                continue;
            };
            match &f.ats {
                pcie::Capability::Present(ats) => config.ats.push(AtsState {
                    device: id,
                    enabled: ats.enabled,
                }),
                pcie::Capability::Unknown { reason } => unknown
                    .entry(reason.clone())
                    .or_default()
                    .push(addr.to_string()),
                pcie::Capability::Absent => {}
            }
        }
        for (reason, functions) in unknown {
            config
                .unavailable
                .push(format!("ACS/ATS of {}: {reason}", functions.join(", ")));
        }
        if let Some(m) = memory {
            let (iommu, unknown) = iommu_config(&m, &self.discovery);
            config.iommu = Some(iommu);
            config.unavailable.extend(unknown);
            for (id, t) in self.translations(&m) {
                match t {
                    Ok(t) => config.iommu_groups.push(group_of(&id, &t)),
                    Err(why) => config.unavailable.push(why.to_string()),
                }
            }
        }
        let (floors, unknown) = self.transport_timeouts();
        config.transport_timeouts = floors;
        config.unavailable.extend(unknown);
        config.odp = odp;
        config
    }
}

/// The IOMMU facts lint needs: whether any RNIC's DMA is translated, and the page supply;
/// with a line for each RNIC whose translation could not be told (one RNIC known to be
/// translated is enough for `Some(true)`; `Some(false)` needs every RNIC known).
fn iommu_config(m: &iommu::MemoryConfig, discovery: &Discovery) -> (IommuConfig, Vec<String>) {
    let rnics: Vec<PciAddr> = discovery
        .rdma_ports
        .iter()
        .filter(|p| !p.software)
        .filter_map(|p| p.pci)
        .collect();
    let mode = rnics
        .iter()
        .filter_map(|a| m.iommu.group_of(*a)?.kind)
        .map(|k| k.to_string())
        .next()
        .unwrap_or_else(|| {
            match m.iommu.mode {
                iommu::IommuMode::Off => "off",
                iommu::IommuMode::Passthrough => "identity",
                iommu::IommuMode::Translated { lazy: true } => "DMA-FQ",
                iommu::IommuMode::Translated { lazy: false } => "DMA",
                iommu::IommuMode::Unknown => "unknown",
            }
            .to_string()
        });
    let unknown = rnics
        .iter()
        .filter(|a| m.translates(**a).is_none())
        .map(|a| {
            format!("IOMMU translation of {a}: its IOMMU group or the group's type was not read")
        })
        .collect();
    let config = IommuConfig {
        translated: any_translated(rnics.iter().map(|a| m.translates(*a))),
        mode,
        hugepages_total: m.hugepages_total(),
        thp: m.thp_enabled.clone(),
    };
    (config, unknown)
}

/// Whether the RNICs' DMA is translated, from each RNIC's answer: one `Some(true)` is
/// enough; `Some(false)` needs every answer known and there to be an RNIC at all.
fn any_translated(answers: impl IntoIterator<Item = Option<bool>>) -> Option<bool> {
    let mut seen_any = false;
    let mut all_known = true;
    for answer in answers {
        match answer {
            Some(true) => return Some(true),
            Some(false) => seen_any = true,
            None => all_known = false,
        }
    }
    (seen_any && all_known).then_some(false)
}

#[cfg(test)]
mod tests {
    use super::any_translated;
    use crate::monitor::dgx_fixture as dgx;

    #[test]
    fn translation_is_unknown_unless_one_rnic_translates_or_all_are_known() {
        assert_eq!(any_translated([None, Some(true)]), Some(true));
        assert_eq!(any_translated([Some(false), Some(false)]), Some(false));
        assert_eq!(any_translated([Some(false), None]), None);
        assert_eq!(any_translated([]), None);
    }

    #[test]
    fn the_configuration_of_the_fixture_is_read_in_model_ids() {
        let config = dgx().config();
        assert_eq!(config.links.len(), 24);
        let down: Vec<&str> = config
            .links
            .iter()
            .filter(|t| t.downtrained())
            .map(|t| t.link.as_str())
            .collect();
        assert_eq!(down, ["gpu5--sw8"]);
        let redirecting: Vec<&str> = config
            .acs
            .iter()
            .filter(|p| p.redirect)
            .map(|p| p.port.as_str())
            .collect();
        assert_eq!(redirecting, ["0000:34:00.0", "0000:34:01.0"]);
        let off: Vec<&str> = config
            .ats
            .iter()
            .filter(|a| !a.enabled)
            .map(|a| a.device.as_str())
            .collect();
        assert_eq!(off, ["rnic3"]);
        let iommu = config.iommu.unwrap();
        assert_eq!(iommu.translated, Some(true));
        assert_eq!(
            (iommu.hugepages_total, iommu.thp.as_deref()),
            (Some(0), Some("never"))
        );
    }
}
