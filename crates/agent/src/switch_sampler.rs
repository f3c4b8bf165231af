//! The agent's switch-port sampler (`[fabric]`): on a sampler node the agent also sweeps
//! switch ports, as `hostping fabric sample` does (`rdma::subnet::sample`, the LDMS
//! ibfabric sampler), on its own cadence, on its own thread. Each sweep is stored (one
//! transaction, older sweeps dropped past `keep`) and then published on `/metrics` under
//! `infiniband_exporter`'s names (`store::switch_metrics`), in that order, so a scrape that
//! shows a sweep finds it in the database too. The loop is the one `fabric sample` runs
//! ([`crate::sweep_loop`]); this module is what the agent does around it.
//!
//! The thread owns its umad port and its own writer connection (WAL lets it write beside
//! the probe loop's). It waits on the agent's [`Control`] between sweeps, so SIGTERM ends it
//! within one sweep, and a sweep never lasts longer than its MADs' deadlines. Nothing that
//! happens on the fabric stops it: a silent switch gives errors on its ports, a failed
//! port is reopened at the next tick, and each kind of trouble is logged when it starts
//! and when it ends, not at every sweep. It keeps one sweep in memory.
//!
//! Configuration files are read at start, so a wrong path stops the agent before it runs;
//! the umad port is opened (and, without `topology` or `ports`, the subnet discovered) on
//! the first tick and again after a failure, so an agent started before the HCA is up
//! begins sampling once it is.

use crate::config::FabricConfig;
use crate::sweep_loop::{self, Sweeper};
use crate::Control;
use rdma::mad::MgmtClass;
use rdma::subnet::delegate::{parse_lidfile, LidfileError};
use rdma::subnet::discover::discover;
use rdma::subnet::sample::{switch_ports, PortSample, SamplePort, Sampler, Sweep};
use rdma::subnet::topofile::{self, TopologyError};
use rdma::subnet::{End, NodeKind, Subnet};
use rdma::umad::rpc::Settings;
use rdma::umad::{Port, Umad};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use store::{FabricSweep, Metrics, Store, StoreError, SwitchInfo, SwitchPortSample, UplinkInfo};

/// Why the sampler cannot start. Each message names the file or the database.
#[derive(Debug, thiserror::Error)]
pub enum FabricError {
    /// `fabric.topology` or `fabric.ports` cannot be read.
    #[error("{key} `{}`: cannot read: {reason}", path.display())]
    Unreadable {
        /// `fabric.topology` or `fabric.ports`.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// The topology file is not an ibnetdiscover topology.
    #[error("fabric.topology: {0}")]
    Topology(#[from] TopologyError),
    /// The port list is not a lidfile.
    #[error("fabric.ports: {0}")]
    Ports(#[from] LidfileError),
    /// The listed ports are none.
    #[error("fabric: no switch port to sample in {0}")]
    NoPorts(String),
    /// The sampler's database connection.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The thread could not be started.
    #[error("cannot start the fabric sampler thread: {0}")]
    Thread(std::io::Error),
}

/// The running sampler thread.
pub struct FabricSampler {
    thread: JoinHandle<()>,
}

impl FabricSampler {
    /// Waits for the thread, after the agent's [`Control`] was told to stop.
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

fn read(key: &'static str, path: &Path) -> Result<String, FabricError> {
    std::fs::read_to_string(path).map_err(|reason| FabricError::Unreadable {
        key,
        path: path.to_path_buf(),
        reason,
    })
}

/// Reads the configured files, opens a writer on `database` (already migrated by the
/// agent) and starts sweeping every `config.every` until `stop`. `log` gets one line per
/// event worth a line.
pub fn start(
    config: &FabricConfig,
    database: &Path,
    metrics: Arc<Mutex<Metrics>>,
    stop: Arc<Control>,
    log: impl Fn(&str) + Send + 'static,
) -> Result<FabricSampler, FabricError> {
    let subnet = match &config.topology {
        Some(path) => Some(topofile::parse(
            &read("fabric.topology", path)?,
            &path.display().to_string(),
        )?),
        None => None,
    };
    let ports = match (&config.ports, &subnet) {
        (Some(path), _) => Some(parse_lidfile(
            &read("fabric.ports", path)?,
            &path.display().to_string(),
        )?),
        (None, Some(subnet)) => Some(switch_ports(subnet)),
        (None, None) => None,
    };
    if let Some(ports) = &ports {
        if ports.is_empty() {
            let source = config.ports.as_ref().or(config.topology.as_ref());
            return Err(FabricError::NoPorts(
                source.map_or(String::new(), |p| p.display().to_string()),
            ));
        }
    }
    let store = Store::open(database)?;
    let mut sampling = Sampling {
        settings: Settings {
            window: config.window,
            timeout: Duration::from_millis(config.timeout_ms),
            retries: config.retries,
        },
        sampler: config.sampler.clone().unwrap_or_else(host_name),
        config: config.clone(),
        store,
        metrics,
        subnet,
        ports,
        open: None,
        opened_at: None,
        trouble: Trouble::default(),
        log: Box::new(log),
    };
    let thread = std::thread::Builder::new()
        .name("hostping-fabric".into())
        .spawn(move || sampling.run(&stop))
        .map_err(FabricError::Thread)?;
    Ok(FabricSampler { thread })
}

/// This machine's host name (the default `sampler`).
fn host_name() -> String {
    crate::hostname()
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// What went wrong last, per kind, so each is logged when it starts and when it ends.
#[derive(Default)]
struct Trouble {
    port: Option<String>,
    silent: BTreeSet<(u64, u8)>,
    store: Option<String>,
}

struct Sampling {
    config: FabricConfig,
    settings: Settings,
    sampler: String,
    store: Store,
    metrics: Arc<Mutex<Metrics>>,
    /// The subnet, for names and links: from `topology`, or discovered.
    subnet: Option<Subnet>,
    /// The ports to sweep: from `ports` or `topology`, or discovered.
    ports: Option<Vec<SamplePort>>,
    open: Option<(Port, Sampler)>,
    /// When the port was last (re)opened, until the schedule has taken it into account.
    opened_at: Option<Instant>,
    trouble: Trouble,
    log: Box<dyn Fn(&str) + Send>,
}

impl Sampling {
    /// Sweeps every `every` ([`sweep_loop::run`]) until `stop`.
    fn run(&mut self, stop: &Control) {
        if stop.is_stopped() {
            return;
        }
        let every = self.config.every;
        // A tick never fails: trouble is logged and the next tick tries again.
        let _ = sweep_loop::run(
            every,
            &mut Ticking {
                sampling: self,
                stop,
            },
            None,
        );
    }

    /// One sweep, stored and published; `None` when the port failed (logged).
    fn tick(&mut self) -> Option<Sweep> {
        let sweep = match self.sweep() {
            Ok(sweep) => {
                if let Some(was) = self.trouble.port.take() {
                    (self.log)(&format!("fabric: sampling again (after: {was})"));
                }
                sweep
            }
            Err(problem) => {
                // Reopen (and rediscover, if discovering) at the next tick.
                self.open = None;
                self.metrics.lock().expect("metrics").observe_failed_sweep();
                if self.trouble.port.as_ref() != Some(&problem) {
                    (self.log)(&format!(
                        "fabric: no sweep: {problem}; trying again every {}",
                        humantime::format_duration(self.config.every)
                    ));
                    self.trouble.port = Some(problem);
                }
                return None;
            }
        };
        let record = record(&sweep, &self.sampler);
        self.log_silent(&record);
        match self.store.insert_sweep(&record, self.config.keep) {
            Ok(_) => {
                if self.trouble.store.take().is_some() {
                    (self.log)("fabric: storing sweeps again");
                }
            }
            Err(e) => {
                // The sweep stays on /metrics; the next one is stored if it can be.
                self.metrics
                    .lock()
                    .expect("metrics")
                    .observe_sweep_store_error();
                let e = e.to_string();
                if self.trouble.store.as_ref() != Some(&e) {
                    (self.log)(&format!("fabric: cannot store sweep {}: {e}", record.sweep));
                    self.trouble.store = Some(e);
                }
            }
        }
        self.metrics.lock().expect("metrics").observe_sweep(&record);
        Some(sweep)
    }

    /// Logs the ports that stopped or started answering since the previous sweep.
    fn log_silent(&mut self, sweep: &FabricSweep) {
        let silent: BTreeSet<(u64, u8)> = sweep
            .ports
            .iter()
            .filter(|p| p.counters.is_none())
            .map(|p| (p.guid, p.port))
            .collect();
        let name = |guid: u64| {
            self.subnet.as_ref().and_then(|s| s.node(guid)).map_or_else(
                || store::guid_text(guid),
                |n| format!("{} ({})", n.description, store::guid_text(guid)),
            )
        };
        let newly: Vec<&SwitchPortSample> = sweep
            .ports
            .iter()
            .filter(|p| p.counters.is_none() && !self.trouble.silent.contains(&(p.guid, p.port)))
            .collect();
        if let Some(first) = newly.first() {
            (self.log)(&format!(
                "fabric: {} more of {} ports gave no counters in sweep {}, first {}[{}]: {}",
                newly.len(),
                sweep.ports.len(),
                sweep.sweep,
                name(first.guid),
                first.port,
                first.error.as_deref().unwrap_or("no answer")
            ));
        }
        let back = self.trouble.silent.difference(&silent).count();
        if back > 0 {
            (self.log)(&format!(
                "fabric: {back} ports answer again; {} of {} silent",
                silent.len(),
                sweep.ports.len()
            ));
        }
        self.trouble.silent = silent;
    }

    /// One sweep, opening the port (and finding the ports) first when needed.
    fn sweep(&mut self) -> Result<Sweep, String> {
        if self.open.is_none() {
            self.open = Some(self.open_port()?);
        }
        let ports = self.ports.as_deref().unwrap_or_default();
        let (port, sampler) = self.open.as_mut().expect("opened above");
        sampler
            .sweep(port, ports)
            .map_err(|e| format!("sweep through {}: {e}", port.name()))
    }

    fn open_port(&mut self) -> Result<(Port, Sampler), String> {
        let umad = Umad::load().map_err(|e| e.to_string())?;
        let mut port = Port::open(umad, self.config.ca.as_deref(), self.config.port)
            .map_err(|e| e.to_string())?;
        // Without files the port list is the subnet's, found again at each (re)open, so a
        // fabric that changed is followed once the port is reopened.
        if self.config.topology.is_none() && self.config.ports.is_none() {
            let agent = port
                .register(MgmtClass::SubnDirectedRoute)
                .map_err(|e| e.to_string())?;
            let subnet = discover(&mut port, agent, self.settings)
                .map_err(|e| format!("fabric discover from {}: {e}", port.name()))?;
            let ports = switch_ports(&subnet);
            if ports.is_empty() {
                return Err(format!(
                    "discovery from {} found no switch with a LID and a linked port",
                    port.name()
                ));
            }
            (self.log)(&format!(
                "fabric: discovered {} nodes from {}: {} switch ports to sample",
                subnet.nodes.len(),
                port.name(),
                ports.len()
            ));
            self.ports = Some(ports);
            self.subnet = Some(subnet);
        }
        if let (Some(subnet), Some(ports)) = (&self.subnet, &self.ports) {
            let (switches, uplinks) = names(subnet, ports);
            self.metrics
                .lock()
                .expect("metrics")
                .observe_switches(&switches, &uplinks);
        }
        let agent = port
            .register(MgmtClass::Performance)
            .map_err(|e| e.to_string())?;
        (self.log)(&format!(
            "fabric: sampling {} switch ports through {} every {}",
            self.ports.as_ref().map_or(0, Vec::len),
            port.name(),
            humantime::format_duration(self.config.every)
        ));
        self.opened_at = Some(Instant::now());
        Ok((port, Sampler::new(agent, self.settings)))
    }
}

/// The sampler on the agent's schedule: a sweep is a tick, the wait between ends early
/// when the agent stops.
struct Ticking<'a> {
    sampling: &'a mut Sampling,
    stop: &'a Control,
}

impl Sweeper for Ticking<'_> {
    type Error = std::convert::Infallible;

    fn sweep(&mut self) -> Result<Option<Sweep>, Self::Error> {
        Ok(self.sampling.tick())
    }

    fn read(&mut self, ports: &[SamplePort]) -> Result<Option<Sweep>, Self::Error> {
        let Some((port, sampler)) = self.sampling.open.as_mut() else {
            return Ok(None);
        };
        match sampler.sweep(port, ports) {
            Ok(sweep) => Ok(Some(sweep)),
            Err(e) => {
                (self.sampling.log)(&format!(
                    "fabric: cannot read the ports asked for through {}: {e}",
                    port.name()
                ));
                Ok(None)
            }
        }
    }

    fn ports(&self) -> &[SamplePort] {
        self.sampling.ports.as_deref().unwrap_or_default()
    }

    fn subnet(&self) -> Option<&Subnet> {
        self.sampling.subnet.as_ref()
    }

    /// Opening the port (and discovering) delays the sweep of its tick: the schedule
    /// starts again from when the port was ready.
    fn restart_from(&mut self) -> Option<Instant> {
        self.sampling.opened_at.take()
    }

    /// The agent samples until it stops.
    fn done(&mut self, _next: Instant) -> bool {
        false
    }

    fn sleep(&mut self, until: Instant) {
        self.stop
            .sleep(until.saturating_duration_since(Instant::now()));
    }

    fn stopped(&self) -> bool {
        self.stop.is_stopped()
    }
}

/// A sweep as the store and the metrics take it.
fn record(sweep: &Sweep, sampler: &str) -> FabricSweep {
    FabricSweep {
        sweep: sweep.sweep,
        start_unix_ns: sweep.start_unix_ns,
        spread_us: sweep.spread_us,
        sampler: sampler.to_string(),
        ports: sweep.ports.iter().map(port_record).collect(),
    }
}

fn port_record(p: &PortSample) -> SwitchPortSample {
    SwitchPortSample {
        guid: p.guid,
        lid: p.lid,
        port: p.port,
        at_unix_ns: p.at_unix_ns,
        counters: p.counters,
        error: p.error.clone(),
    }
}

/// ibnetdiscover's word for a node kind, which infiniband_exporter copies into
/// `uplink_type`.
fn kind_word(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Switch => "SW",
        NodeKind::Ca => "CA",
        NodeKind::Router => "RT",
    }
}

/// The switches that own `ports`, and what each of those ports is linked to.
fn names(subnet: &Subnet, ports: &[SamplePort]) -> (Vec<SwitchInfo>, Vec<UplinkInfo>) {
    let mut switches: Vec<SwitchInfo> = Vec::new();
    let mut uplinks = Vec::new();
    for p in ports {
        let Some(node) = subnet.node(p.guid) else {
            continue;
        };
        if !switches.iter().any(|s| s.guid == p.guid) {
            switches.push(SwitchInfo {
                guid: p.guid,
                lid: p.lid,
                name: node.description.clone(),
            });
        }
        let Some((_, far)) = subnet.peer(End {
            guid: p.guid,
            port: p.port,
        }) else {
            continue;
        };
        let Some(peer) = subnet.node(far.guid) else {
            continue;
        };
        let uplink_lid = match peer.kind {
            NodeKind::Switch => peer.lid(),
            _ => peer
                .addressed_ports
                .iter()
                .find(|a| a.port == far.port)
                .map(|a| a.lid)
                .filter(|&l| l != 0),
        };
        uplinks.push(UplinkInfo {
            guid: p.guid,
            port: p.port,
            switch: node.description.clone(),
            uplink: peer.description.clone(),
            uplink_guid: peer.guid,
            uplink_type: kind_word(peer.kind),
            uplink_port: far.port,
            uplink_lid,
        });
    }
    (switches, uplinks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::SwitchPortCounters;

    const TWO_SWITCHES: &str = include_str!("../../rdma/testdata/subnet/two-switches.topo");

    #[test]
    fn names_follow_the_topology_file() {
        let subnet = topofile::parse(TWO_SWITCHES, "two-switches.topo").unwrap();
        let ports = switch_ports(&subnet);
        let (switches, uplinks) = names(&subnet, &ports);
        let mut got: Vec<(String, u16)> =
            switches.iter().map(|s| (s.name.clone(), s.lid)).collect();
        got.sort();
        assert_eq!(got, [("leaf-a".to_string(), 1), ("leaf-b".to_string(), 3)]);
        assert_eq!(uplinks.len(), ports.len());
        let a7 = uplinks
            .iter()
            .find(|u| u.switch == "leaf-a" && u.port == 7)
            .unwrap();
        assert_eq!(
            (
                a7.uplink.as_str(),
                a7.uplink_type,
                a7.uplink_port,
                a7.uplink_lid
            ),
            ("leaf-b", "SW", 7, Some(3))
        );
        let a1 = uplinks
            .iter()
            .find(|u| u.switch == "leaf-a" && u.port == 1)
            .unwrap();
        assert_eq!(
            (
                a1.uplink.as_str(),
                a1.uplink_guid,
                a1.uplink_type,
                a1.uplink_port,
                a1.uplink_lid
            ),
            ("host-1", 0x100000, "CA", 1, Some(2))
        );
    }

    #[test]
    fn a_sample_keeps_every_value_and_the_error() {
        let sweep = Sweep {
            sweep: 3,
            start_unix_ns: 11,
            spread_us: 12.5,
            ports: vec![
                PortSample {
                    guid: 1,
                    lid: 2,
                    port: 3,
                    at_unix_ns: 13,
                    counters: Some(SwitchPortCounters {
                        xmit_data_bytes: 1,
                        rcv_data_bytes: 2,
                        xmit_pkts: 3,
                        rcv_pkts: 4,
                        xmit_wait: 5,
                        symbol_errors: 6,
                        link_downed: 7,
                        rcv_errors: 8,
                        xmit_discards: 9,
                    }),
                    saturated: vec![],
                    error: None,
                },
                PortSample {
                    guid: 1,
                    lid: 2,
                    port: 4,
                    at_unix_ns: 0,
                    counters: None,
                    saturated: vec![],
                    error: Some("no response".into()),
                },
            ],
        };
        let r = record(&sweep, "host-1");
        assert_eq!((r.sweep, r.start_unix_ns, r.spread_us), (3, 11, 12.5));
        assert_eq!(r.sampler, "host-1");
        let c = r.ports[0].counters.unwrap();
        assert_eq!(c.fields().map(|(_, v)| v), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(r.ports[1].counters, None);
        assert_eq!(r.ports[1].error.as_deref(), Some("no response"));
        // The JSON of a stored sweep is the JSON `fabric sample` prints for it.
        let ours = serde_json::to_value(&r).unwrap();
        let theirs = serde_json::to_value(&sweep).unwrap();
        assert_eq!(ours["ports"], theirs["ports"]);
    }
}
