//! On-demand paging in model ids: the ODP memory regions in use on each RNIC (RDMA netlink),
//! the process that owns each, each device's ODP capability (`ibv_query_device_ex`), and the
//! transport-timeout floor where it is known. ISPASS'21 (`shared/papers/001_50e040594ebebbef`,
//! "The first pitfall: packet damming"): on ConnectX "the timeout cannot be set to be any
//! smaller than 500 ms", a value "pre-configured in the firmware", so an RNIC page fault on
//! a READ stalls the requester for at least that long.

use super::{is_live, HostMonitor};
use crate::netlink::{self, NetlinkError, Owner, RdmaNetlink};
use crate::sysfs::SysRoot;
use crate::verbs::Verbs;
use model::{ComponentId, OdpKind, OdpRegion, SourceReport, TransportTimeout};
use std::time::Duration;

/// The transport-timeout floor of mlx5 (ConnectX) firmware, ms (ISPASS'21, "The first
/// pitfall: packet damming": "cannot be set to be any smaller than 500 ms").
pub(super) const MLX5_TIMEOUT_FLOOR_MS: f64 = 500.0;

/// How long a netlink dump may take before the source says it timed out.
const NETLINK_TIMEOUT: Duration = Duration::from_secs(1);

/// What the monitor read about ODP.
pub(super) struct OdpReading {
    /// The regions in model ids.
    pub(super) regions: Vec<OdpRegion>,
    /// The `odp` source: the regions as netlink gave them, the capabilities, and the gaps.
    pub(super) source: SourceReport,
}

/// The owner of an MR as a process: netlink names the creating task, which may be a thread;
/// `/proc/<tid>/status` gives its process (`Tgid`) and `/proc/<pid>/comm` the command name.
/// `None` where a file is unreadable (the task has exited, or another PID namespace).
pub(super) fn owner_process(root: &SysRoot, tid: u32) -> (Option<u32>, Option<String>) {
    let status = std::fs::read_to_string(root.path(&format!("proc/{tid}/status")));
    let pid = status.ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Tgid:"))
            .and_then(|v| v.trim().parse::<u32>().ok())
    });
    let comm = pid.and_then(|p| {
        std::fs::read_to_string(root.path(&format!("proc/{p}/comm")))
            .ok()
            .map(|c| c.trim_end_matches('\n').to_string())
    });
    (pid, comm)
}

/// The netlink regions in model ids, with a line for each that cannot be placed: a device
/// no RNIC is bound to, an ODP kind this version does not know, an owner not found.
pub(super) fn model_regions(
    root: &SysRoot,
    rnic_of: impl Fn(&str) -> Option<ComponentId>,
    found: &[netlink::OdpRegion],
) -> (Vec<OdpRegion>, Vec<String>) {
    let mut regions = Vec::new();
    let mut gaps = Vec::new();
    for r in found {
        let at = format!("ODP MR {} of {}", r.mr.mrn, r.mr.device.name);
        let Some(rnic) = rnic_of(&r.mr.device.name) else {
            gaps.push(format!(
                "{at}: no RNIC of the host model is bound to the device"
            ));
            continue;
        };
        let kind = match &r.kind {
            netlink::OdpKind::Explicit => OdpKind::Explicit,
            netlink::OdpKind::Implicit => OdpKind::Implicit,
            netlink::OdpKind::Unknown(word) => {
                gaps.push(format!("{at}: ODP kind `{word}` is not known"));
                continue;
            }
        };
        let (pid, process) = match &r.mr.owner {
            Owner::Process(tid) => {
                let (pid, comm) = owner_process(root, *tid);
                if pid.is_none() {
                    gaps.push(format!(
                        "{at}: owner task {tid}: /proc/{tid}/status not readable (exited?)"
                    ));
                }
                (pid, comm)
            }
            Owner::Kernel(module) => (None, Some(format!("kernel: {module}"))),
            Owner::Hidden => {
                gaps.push(format!("{at}: owner in another PID namespace"));
                (None, None)
            }
        };
        let counters = r.counters.unwrap_or_default();
        if r.counters.is_none() {
            gaps.push(format!(
                "{at}: no page-fault counters in the statistics dump"
            ));
        }
        regions.push(OdpRegion {
            rnic,
            kind,
            bytes: (kind == OdpKind::Explicit).then_some(r.mr.length),
            page_faults: counters.page_faults,
            page_invalidations: counters.page_invalidations,
            pid,
            process,
        });
    }
    (regions, gaps)
}

impl HostMonitor {
    /// The RNIC bound to an RDMA device (its first port's).
    fn rnic_of_device(&self, device: &str) -> Option<ComponentId> {
        let bindings = &self.discovery.bindings.rnics;
        bindings
            .iter()
            .find(|(_, b)| b.device == device)
            .map(|(id, _)| id.clone())
    }

    /// The ODP regions in use and the `odp` source; only the running kernel is asked.
    pub(super) fn odp(&self) -> OdpReading {
        if !is_live(&self.root) {
            return OdpReading {
                regions: Vec::new(),
                source: SourceReport::unavailable(
                    "odp",
                    format!(
                        "RDMA netlink and verbs read the running kernel, not the captured tree {}",
                        self.root.root().display()
                    ),
                ),
            };
        }
        if self.host().is_none() {
            return OdpReading {
                regions: Vec::new(),
                source: SourceReport::unavailable("odp", "no RDMA device"),
            };
        }
        let caps = self.odp_caps.clone();
        let found = RdmaNetlink::open(NETLINK_TIMEOUT).and_then(|mut n| n.odp_regions());
        match found {
            Err(e @ NetlinkError::NoRdmaNetlink { .. }) => OdpReading {
                regions: Vec::new(),
                source: SourceReport::unavailable("odp", e.to_string()),
            },
            Err(e) => OdpReading {
                regions: Vec::new(),
                source: SourceReport::ok("odp", serde_json::json!({ "capabilities": caps }))
                    .failed(format!("ODP memory regions: {e}")),
            },
            Ok(found) => {
                let (regions, gaps) = model_regions(&self.root, |d| self.rnic_of_device(d), &found);
                let mut source = SourceReport::ok(
                    "odp",
                    serde_json::json!({ "capabilities": caps, "regions": found }),
                );
                source.detail = Some(if found.is_empty() {
                    "no ODP memory region in use (RDMA netlink lists none)".into()
                } else {
                    gaps.join("; ")
                })
                .filter(|d: &String| !d.is_empty());
                OdpReading { regions, source }
            }
        }
    }

    /// Each bound device's ODP capability in words, or why it could not be queried (read
    /// once, at open: a capability does not change while the driver is bound).
    pub(super) fn read_odp_caps(&self) -> serde_json::Value {
        if !is_live(&self.root) {
            return serde_json::Value::Null;
        }
        let mut devices: Vec<&str> = self
            .discovery
            .bindings
            .rnics
            .iter()
            .map(|(_, b)| b.device.as_str())
            .collect();
        devices.dedup();
        let verbs = match Verbs::load() {
            Ok(v) => v,
            Err(e) => return serde_json::json!({ "error": e.reason }),
        };
        let caps = devices.into_iter().map(|d| {
            let v = match verbs.open(d).and_then(|c| c.odp_caps()) {
                Ok(c) => serde_json::json!({
                    "supported": c.supported(),
                    "implicit": c.implicit(),
                    "rc_read": c.rc_read(),
                    "caps": c.to_string(),
                }),
                Err(e) => serde_json::json!({ "error": e.to_string() }),
            };
            (d.to_string(), v)
        });
        serde_json::Value::Object(caps.collect())
    }

    /// The transport-timeout floor of each RNIC where it is known (mlx5 firmware), and a
    /// line for each RNIC where it is not.
    pub(super) fn transport_timeouts(&self) -> (Vec<TransportTimeout>, Vec<String>) {
        let mut known = Vec::new();
        let mut unknown = Vec::new();
        for (id, pci) in self.rnic_functions() {
            let b = self.discovery.bindings.rnics.iter().find(|(r, _)| *r == id);
            let software = b.is_some_and(|(_, b)| b.software);
            let driver = pci.filter(|_| !software).and_then(|addr| {
                let link = self
                    .root
                    .path(&format!("sys/bus/pci/devices/{addr}/driver"));
                let real = std::fs::read_link(link).ok()?;
                Some(real.file_name()?.to_string_lossy().into_owned())
            });
            match driver.as_deref() {
                Some("mlx5_core") => known.push(TransportTimeout {
                    rnic: id,
                    floor_ms: Some(MLX5_TIMEOUT_FLOOR_MS),
                    source: "mlx5 (ConnectX) firmware floor, ISPASS'21 (001_50e040594ebebbef) \
                             \"The first pitfall: packet damming\""
                        .into(),
                }),
                other => unknown.push(format!(
                    "transport timeout floor of {id}: not known for {}",
                    match (software, other) {
                        (true, _) => "a software RNIC".to_string(),
                        (false, Some(d)) => format!("driver {d}"),
                        (false, None) => "an RNIC whose PCI driver was not read".to_string(),
                    }
                )),
            }
        }
        (known, unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::dgx_fixture as dgx;
    use crate::netlink::mr::{parse_table, MrEntry, MrStats};
    use crate::netlink::Dump;

    fn testdata(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(rel)
    }

    /// Every entry of a netlink fixture (`# recv N` blocks of hex bytes, as the kernel sent).
    fn dump<T>(
        name: &str,
        seq: u32,
        parse: fn(&[u8], &str) -> Result<Vec<T>, netlink::WireError>,
    ) -> Vec<T> {
        let text = std::fs::read_to_string(testdata(&format!("netlink/{name}"))).unwrap();
        let mut buffers: Vec<Vec<u8>> = Vec::new();
        for line in text.lines() {
            if line.starts_with("# recv ") {
                buffers.push(Vec::new());
            } else if !line.starts_with('#') {
                let hex = line
                    .split_whitespace()
                    .map(|b| u8::from_str_radix(b, 16).unwrap());
                buffers.last_mut().unwrap().extend(hex);
            }
        }
        let mut d = Dump::new("fixture", seq);
        for b in &buffers {
            d.absorb(b, parse).unwrap();
        }
        d.into_found()
    }

    fn mlx5_0_regions() -> Vec<netlink::OdpRegion> {
        let mrs = dump("mr-dump-mlx5_0.hex", 2, |p, at| {
            parse_table(p, at, MrEntry::parse)
        });
        let stats = dump("mr-stat-mlx5_0.hex", 3, |p, at| {
            parse_table(p, at, MrStats::parse)
        });
        netlink::mr::odp_regions(&mrs, &stats)
    }

    #[test]
    fn a_task_maps_to_its_process_and_command() {
        let proc = SysRoot::new(testdata("monitor"));
        assert_eq!(
            owner_process(&proc, 5150),
            (Some(5148), Some("kv-server".into()))
        );
        assert_eq!(
            owner_process(&proc, 5148),
            (Some(5148), Some("kv-server".into()))
        );
        assert_eq!(
            owner_process(&proc, 4242),
            (None, None),
            "exited: unknown, not made up"
        );
    }

    #[test]
    fn odp_regions_of_the_netlink_fixture_are_placed_on_their_rnic_with_owner_and_counters() {
        let m = dgx();
        let proc = SysRoot::new(testdata("monitor"));
        let (regions, gaps) = model_regions(&proc, |d| m.rnic_of_device(d), &mlx5_0_regions());
        assert!(gaps.is_empty(), "{gaps:?}");
        let owner = (Some(5148), Some("kv-server".to_string()));
        let got: Vec<_> = regions
            .iter()
            .map(|r| {
                (
                    r.rnic.as_str(),
                    r.kind,
                    r.bytes,
                    r.page_faults,
                    r.page_invalidations,
                    (r.pid, r.process.clone()),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "rnic0",
                    OdpKind::Explicit,
                    Some(1 << 30),
                    Some(1843),
                    Some(12),
                    owner.clone()
                ),
                (
                    "rnic0",
                    OdpKind::Implicit,
                    None,
                    Some(5210933),
                    Some(4096),
                    owner
                ),
            ]
        );
    }

    #[test]
    fn what_cannot_be_placed_is_said_not_guessed() {
        let m = dgx();
        let proc = SysRoot::new(testdata("monitor"));
        let mut found = mlx5_0_regions();
        let mut gone = found[0].clone();
        gone.mr.owner = Owner::Process(4242);
        gone.counters = None;
        let mut hidden = found[1].clone();
        hidden.mr.owner = Owner::Hidden;
        let mut elsewhere = found[0].clone();
        elsewhere.mr.device.name = "mlx5_9".into();
        let mut newer = found[0].clone();
        newer.kind = netlink::OdpKind::Unknown("hmm".into());
        found = vec![gone, hidden, elsewhere, newer];
        let (regions, gaps) = model_regions(&proc, |d| m.rnic_of_device(d), &found);
        assert_eq!(regions.len(), 2);
        assert_eq!((regions[0].pid, regions[0].page_faults), (None, None));
        assert_eq!(
            (regions[1].pid, regions[1].process.as_deref()),
            (None, None)
        );
        assert_eq!(
            gaps,
            [
                "ODP MR 7 of mlx5_0: owner task 4242: /proc/4242/status not readable (exited?)",
                "ODP MR 7 of mlx5_0: no page-fault counters in the statistics dump",
                "ODP MR 8 of mlx5_0: owner in another PID namespace",
                "ODP MR 7 of mlx5_9: no RNIC of the host model is bound to the device",
                "ODP MR 7 of mlx5_0: ODP kind `hmm` is not known",
            ]
        );
    }

    #[test]
    fn the_mlx5_timeout_floor_is_known_and_a_captured_tree_has_no_odp_reading() {
        let mut m = dgx();
        let (floors, unknown) = m.transport_timeouts();
        assert!(unknown.is_empty(), "{unknown:?}");
        let got: Vec<(&str, Option<f64>)> = floors
            .iter()
            .map(|t| (t.rnic.as_str(), t.floor_ms))
            .collect();
        assert_eq!(
            got,
            [
                ("rnic0", Some(500.0)),
                ("rnic1", Some(500.0)),
                ("rnic2", Some(500.0)),
                ("rnic3", Some(500.0))
            ]
        );
        assert!(floors[0].source.contains("ISPASS'21"));
        let config = m.config();
        assert_eq!(config.transport_timeouts, floors);
        assert!(config.odp.is_empty());
        assert!(
            config
                .unavailable
                .iter()
                .any(|u| u.starts_with("ODP memory regions: RDMA netlink")),
            "{:?}",
            config.unavailable
        );
        let report = m.read();
        let odp = report.sources.iter().find(|s| s.source == "odp").unwrap();
        assert_eq!(odp.status, model::SourceStatus::Unavailable);
    }

    #[test]
    fn a_software_rnic_has_no_known_floor() {
        let m = HostMonitor::open(SysRoot::new(testdata("hosts/rxe-guest"))).unwrap();
        let (floors, unknown) = m.transport_timeouts();
        assert!(floors.is_empty(), "{floors:?}");
        assert_eq!(
            unknown,
            ["transport timeout floor of rnic0: not known for a software RNIC"]
        );
    }
}
