//! `hostping fabric discover` and `fabric sample`: a real InfiniBand subnet through a umad
//! port (`rdma::umad`): directed-route discovery and the switch-port sampler
//! (`rdma::subnet`) on the agent's loop (`agent::sweep_loop`), which with `--collector`
//! posts each sweep (`fleet_api::sweep_client`) and between sweeps reads the ports the
//! collector asks for now (a job verdict's follow-up), posted but not printed. This module
//! opens the port, prints, and stops on a count, a duration or a signal.

use crate::cli::fabric::{DelegateArgs, DiscoverArgs, DiscoverFormat, SampleArgs, UmadArgs};
use crate::cli::Format;
use agent::sweep_loop::{self, Sweeper, Upload};
use anyhow::{bail, Context, Result};
use fleet_api::sweep_client::{Sender, Target};
use rdma::mad::MgmtClass;
use rdma::subnet::delegate::{delegate, lidfile, parse_lidfile};
use rdma::subnet::discover::discover;
use rdma::subnet::pace::Paced;
use rdma::subnet::sample::{switch_ports, SamplePort, Sampler, Sweep};
use rdma::subnet::{guid_text, topofile, NodeKind, Subnet};
use rdma::umad::rpc::Settings;
use rdma::umad::{Port, Umad};
use std::fmt::Write as _;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The MAD exchange settings of `a`.
pub(super) fn settings(a: &UmadArgs) -> Settings {
    Settings {
        window: a.window as usize,
        timeout: Duration::from_millis(a.timeout_ms),
        retries: a.retries,
    }
}

/// Opens the umad port `a` names.
pub(super) fn open(a: &UmadArgs) -> Result<Port> {
    let umad = Umad::load()?;
    Ok(Port::open(umad, a.ca.as_deref(), a.port)?)
}

/// Discovers from the port `a` names.
pub(super) fn walk(port: &mut Port, a: &UmadArgs) -> Result<Subnet> {
    let agent = port.register(MgmtClass::SubnDirectedRoute)?;
    let subnet = discover(port, agent, settings(a))
        .with_context(|| format!("fabric discover from {}", port.name()))?;
    for e in &subnet.errors {
        eprintln!("fabric discover: {e}");
    }
    Ok(subnet)
}

/// The table of `fabric discover`.
fn render(subnet: &Subnet) -> String {
    let mut out = String::new();
    let switches = subnet
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .count();
    let _ = writeln!(
        out,
        "{} nodes ({switches} switches, {} channel adapters), {} links",
        subnet.nodes.len(),
        subnet.nodes.len() - switches,
        subnet.links.len()
    );
    let _ = writeln!(
        out,
        "{:<8} {:<18} {:>5} {:>5}  description",
        "type", "guid", "lid", "ports"
    );
    for n in &subnet.nodes {
        let _ = writeln!(
            out,
            "{:<8} {:<18} {:>5} {:>5}  {}",
            n.kind.word(),
            guid_text(n.guid),
            n.lid().map_or("-".into(), |l| l.to_string()),
            n.ports,
            n.description
        );
    }
    let _ = writeln!(out, "links:");
    let name = |guid: u64| {
        subnet
            .node(guid)
            .map_or_else(|| guid_text(guid), |n| n.description.clone())
    };
    for l in &subnet.links {
        let _ = writeln!(
            out,
            "  {}[{}] -- {}[{}]  {}{}",
            name(l.a.guid),
            l.a.port,
            name(l.b.guid),
            l.b.port,
            l.width,
            l.speed
        );
    }
    out
}

/// `hostping fabric discover`; `Ok(true)` when some ports did not answer (exit status 1).
pub fn discover_command(args: &DiscoverArgs) -> Result<bool> {
    let mut port = open(&args.umad)?;
    let subnet = walk(&mut port, &args.umad)?;
    let text = match args.format {
        DiscoverFormat::Table => render(&subnet),
        DiscoverFormat::Json => serde_json::to_string_pretty(&subnet.to_json())? + "\n",
        DiscoverFormat::Ibnetdiscover => topofile::write(&subnet),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(!subnet.errors.is_empty())
}

/// One sweep as a table.
fn render_sweep(sweep: &Sweep, subnet: &Subnet) -> String {
    let mut out = String::new();
    let answered = sweep.ports.iter().filter(|p| p.counters.is_some()).count();
    let _ = writeln!(
        out,
        "sweep {}: {answered}/{} ports in {:.1} us",
        sweep.sweep,
        sweep.ports.len(),
        sweep.spread_us
    );
    let _ = writeln!(
        out,
        "  {:<16} {:>4} {:>14} {:>14} {:>12} {:>7} {:>6} {:>7} {:>8}",
        "switch",
        "port",
        "xmit_bytes",
        "rcv_bytes",
        "xmit_wait",
        "sym_err",
        "downed",
        "rcv_err",
        "discards"
    );
    for p in &sweep.ports {
        let switch = subnet
            .node(p.guid)
            .map_or_else(|| guid_text(p.guid), |n| n.description.clone());
        match (&p.counters, &p.error) {
            (Some(c), _) => {
                let _ = writeln!(
                    out,
                    "  {switch:<16} {:>4} {:>14} {:>14} {:>12} {:>7} {:>6} {:>7} {:>8}{}",
                    p.port,
                    c.xmit_data_bytes,
                    c.rcv_data_bytes,
                    c.xmit_wait,
                    c.symbol_errors,
                    c.link_downed,
                    c.rcv_errors,
                    c.xmit_discards,
                    if p.saturated.is_empty() {
                        String::new()
                    } else {
                        format!("  saturated: {}", p.saturated.join(", "))
                    }
                );
            }
            (None, e) => {
                let _ = writeln!(
                    out,
                    "  {switch:<16} {:>4}  error: {}",
                    p.port,
                    e.as_deref().unwrap_or("no answer")
                );
            }
        }
    }
    out
}

/// `hostping fabric sample`; `Ok(true)` when a port did not answer in some sweep.
pub fn sample_command(args: &SampleArgs) -> Result<bool> {
    if !(args.hz.is_finite() && args.hz > 0.0 && args.hz <= 10_000.0) {
        bail!(
            "--hz {}: wants sweeps per second, above 0 and at most 10000",
            args.hz
        );
    }
    // Bad files are named before any MAD is sent.
    let given = args.topology.as_deref().map(read_topology).transpose()?;
    let listed = match &args.ports {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read the port list", path.display()))?;
            Some(parse_lidfile(&text, &path.display().to_string())?)
        }
        None => None,
    };
    let upload = args
        .collector
        .as_ref()
        .map(|url| uploader(args, url))
        .transpose()?;
    let mut port = open(&args.umad)?;
    let subnet = match given {
        Some(subnet) => subnet,
        None if listed.is_some() => Subnet::default(),
        None => walk(&mut port, &args.umad)?,
    };
    let ports = listed.unwrap_or_else(|| switch_ports(&subnet));
    if ports.is_empty() {
        bail!("fabric sample: no switch with a LID and a linked port in the subnet");
    }
    let agent = port.register(MgmtClass::Performance)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())?;
    }
    let period = Duration::from_secs_f64(1.0 / args.hz);
    let mut sampling = Sampling {
        args,
        sampler: Sampler::new(agent, settings(&args.umad)),
        port,
        ports,
        subnet,
        stdout: std::io::stdout().lock(),
        stop,
        started: Instant::now(),
        lost: false,
    };
    let Paced { sweeps, overran } = sweep_loop::run(period, &mut sampling, upload.as_ref())?;
    let mut lost = sampling.lost;
    if overran > 0 {
        eprintln!(
            "fabric sample: {overran} of {sweeps} sweeps took longer than the {:.1} ms period \
             of --hz {}: the fabric answered slower than asked",
            period.as_secs_f64() * 1e3,
            args.hz
        );
    }
    if let Some(upload) = upload {
        let outcome = upload.sender.finish(DRAIN);
        if !outcome.all_delivered() {
            eprintln!(
                "fabric sample: {} of {sweeps} sweeps not stored by the collector: {} refused, \
                 {} dropped from a full queue, {} still unsent after {} s",
                outcome.refused + outcome.overflowed + outcome.unsent,
                outcome.refused,
                outcome.overflowed,
                outcome.unsent,
                DRAIN.as_secs()
            );
            lost = true;
        }
    }
    Ok(lost)
}

/// `fabric sample`'s side of the loop: each sweep printed, failures end it.
struct Sampling<'a> {
    args: &'a SampleArgs,
    sampler: Sampler,
    port: Port,
    ports: Vec<SamplePort>,
    subnet: Subnet,
    stdout: std::io::StdoutLock<'static>,
    /// Set by SIGINT or SIGTERM.
    stop: Arc<AtomicBool>,
    started: Instant,
    /// Whether a port did not answer in some sweep.
    lost: bool,
}

impl Sweeper for Sampling<'_> {
    type Error = anyhow::Error;

    fn sweep(&mut self) -> Result<Option<Sweep>> {
        let sweep = self.sampler.sweep(&mut self.port, &self.ports)?;
        self.lost |= sweep.ports.iter().any(|p| p.counters.is_none());
        let text = match self.args.format {
            Format::Json => serde_json::to_string(&sweep)? + "\n",
            Format::Table => render_sweep(&sweep, &self.subnet),
        };
        self.stdout.write_all(text.as_bytes())?;
        self.stdout.flush()?;
        Ok(Some(sweep))
    }

    fn read(&mut self, ports: &[SamplePort]) -> Result<Option<Sweep>> {
        let sweep = self.sampler.sweep(&mut self.port, ports)?;
        self.lost |= sweep.ports.iter().any(|p| p.counters.is_none());
        Ok(Some(sweep))
    }

    fn ports(&self) -> &[SamplePort] {
        &self.ports
    }

    fn subnet(&self) -> Option<&Subnet> {
        Some(&self.subnet)
    }

    fn done(&mut self, next: Instant) -> bool {
        self.args.once
            || self.args.duration.is_some_and(|d| {
                self.started.elapsed() >= d || next.duration_since(self.started) >= d
            })
    }

    fn sleep(&mut self, until: Instant) {
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// How long a stopping sampler keeps posting what is queued.
const DRAIN: Duration = Duration::from_secs(10);

fn log_sweeps(line: &str) {
    eprintln!("fabric sample: {line}");
}

/// The sampler's name at the collector and the sender posting to `url`, with the token
/// and TLS checked before any MAD is sent.
fn uploader(args: &SampleArgs, url: &str) -> Result<Upload> {
    let token =
        agent::sender::collector_token(url, args.token_file.as_deref(), args.token.as_deref())
            .map_err(anyhow::Error::msg)?;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => agent::hostname().context("--collector: no hostname to send as; give --name")?,
    };
    let target = Target {
        url: url.to_owned(),
        token,
        tls: fleet_api::tls::client_config(args.collector_ca.as_deref())?,
    };
    eprintln!("fabric sample: posting sweeps to {url} as {name}");
    Ok(Upload {
        name,
        sender: Sender::start(target, log_sweeps),
        log: log_sweeps,
    })
}

fn read_topology(path: &std::path::Path) -> Result<Subnet> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the topology file", path.display()))?;
    Ok(topofile::parse(&text, &path.display().to_string())?)
}

/// `hostping fabric delegate`.
pub fn delegate_command(args: &DelegateArgs) -> Result<()> {
    let subnet = read_topology(&args.topology)?;
    let assignments = delegate(&subnet, &args.samplers, &args.failed)?;
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create the output folder", dir.display()))?;
    }
    let mut stdout = std::io::stdout().lock();
    for a in &assignments {
        let text = lidfile(a);
        match &args.out_dir {
            Some(dir) => {
                let path = dir.join(format!("{}.ports", a.sampler));
                std::fs::write(&path, &text)
                    .with_context(|| format!("{}: cannot write", path.display()))?;
                let far = a.hops.values().max().copied().unwrap_or(0);
                writeln!(
                    stdout,
                    "{}: {} ports on {} {}, at most {far} {} away -> {}",
                    a.sampler,
                    a.ports.len(),
                    a.hops.len(),
                    if a.hops.len() == 1 {
                        "switch"
                    } else {
                        "switches"
                    },
                    if far == 1 { "hop" } else { "hops" },
                    path.display()
                )?;
            }
            None => stdout.write_all(text.as_bytes())?,
        }
    }
    Ok(())
}
