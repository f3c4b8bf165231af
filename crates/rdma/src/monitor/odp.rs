//! On-demand paging in model ids: the ODP memory regions in use on each RNIC (RDMA netlink),
//! the process that owns each, each device's ODP capability (`ibv_query_device_ex`), and the
//! transport-timeout floor where it is known. ISPASS'21 (`shared/papers/001_50e040594ebebbef`,
//! "The first pitfall: packet damming"): on ConnectX "the timeout cannot be set to be any
//! smaller than 500 ms", a value "pre-configured in the firmware", so an RNIC page fault on
//! a READ stalls the requester for at least that long.

use super::{is_live, HostMonitor};
use crate::netlink::{self, Owner, RdmaNetlink};
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
        let caps = self.odp_caps.clone();
        let found = RdmaNetlink::open(NETLINK_TIMEOUT).and_then(|mut n| n.odp_regions());
        match found {
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
