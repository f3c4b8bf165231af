//! `hostping agent`: the agent on this host or a virtual one, until a signal or `--run-for`.
//! This module only wires the agent crate's parts together from the flags and the
//! configuration file: the backend, the store, the HTTP server, the switch-port sampler,
//! the sender to the collector and the loop.

use crate::cli::AgentArgs;
use crate::output::Outcome;
use agent::config::AgentConfig;
use agent::{http, register, sender, switch_sampler, Agent, Control, Status};
use anyhow::{bail, Context, Result};
use check::host::{Host, HostOptions, ProbeOptions};
use fleet_api::tokens::Tokens;
use probe::LatencySpec;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Runs `hostping agent`.
pub fn run(args: AgentArgs) -> Result<Outcome> {
    let config = config(&args)?;
    let token = collector_token(&args)?;
    if let Some(dir) = args.nccl_dir.as_ref().filter(|d| !d.is_dir()) {
        // The plugin makes each job's folder; the folder it makes them in must be there.
        anyhow::bail!(
            "--nccl-dir {}: not a directory (give the folder the jobs' nccl-inspector-<jobid> folders are made in, or a job's NCCL_INSPECTOR_DUMP_DIR)",
            dir.display()
        );
    }
    let control = Arc::new(Control::default());
    let signals = stop_on_signals(&control)?;
    let host = Host::open(
        &args.host.spec(),
        HostOptions {
            inject: args.inject.clone(),
            seed: args.seed,
            ..HostOptions::default()
        },
    )?;
    let provenance = host.provenance().as_str();
    let (rnics, devices) = pair_rnics(&host, args.devices.as_deref())?;
    // What its links allow a job's collectives, registered with the collector (DESIGN 4.8).
    let expected_busbw_gbs = host
        .model()
        .map(|m| verdict::job::expected_busbw(&[m]))
        .unwrap_or_default();
    let latency = LatencySpec {
        op: config.probe.op,
        iterations: config.probe.iterations,
        ..LatencySpec::default()
    };
    host.supports(latency.op)?;
    let baseline = match &config.agent.baseline {
        Some(path) => Some(check::record::load(path, host.model(), &latency)?),
        None => None,
    };
    let probe = ProbeOptions {
        timeout_ms: config.probe.timeout_ms,
        verbs_faults: Vec::new(),
    };
    let mut backend = agent::backend::for_host(
        host,
        baseline,
        &probe,
        &latency,
        args.time_scale,
        &args.schedule,
    )?;
    let db = &config.agent.database;
    // Held until the agent returns: a second agent on this database is refused (exit 2).
    let _lock = agent::lock::DatabaseLock::acquire(db)?;
    let mut store = store::Store::open(db)?;
    if args.collector.is_some() {
        store.queue_for_collector(args.outbox_cap);
    }
    let host_name = match backend.host() {
        Some(h) => h.name.clone(),
        None => "(no RDMA device)".to_string(),
    };
    let metrics = Arc::new(Mutex::new(store::Metrics::new(&host_name, provenance)));
    let status = Arc::new(Mutex::new(Status {
        host: host_name.clone(),
        provenance: provenance.into(),
        probing_disabled: backend.probing_disabled(),
        ..Status::default()
    }));
    let name = match (&args.name, &args.host.sim) {
        (Some(name), _) => name.clone(),
        (None, Some(_)) => host_name.clone(),
        (None, None) => agent::hostname().context("cannot read the hostname; give --name")?,
    };
    let probe_tokens = args
        .probe_tokens
        .as_ref()
        .or(config.agent.probe_tokens.as_ref());
    let server = http::serve(
        http::ServeOptions {
            listen: config.agent.listen,
            database: db.clone(),
            name: name.clone(),
            probe: http::ProbeAccess {
                tokens: probe_tokens.map(|f| load_probe_tokens(f)).transpose()?,
                control: control.clone(),
            },
            pair: http::pair::PairAccess::new(
                args.devices.clone(),
                args.host.sim.is_none() && args.host.sysfs_root.is_none(),
            ),
        },
        metrics.clone(),
        status.clone(),
    )
    .with_context(|| format!("cannot listen on {}", config.agent.listen))?;
    eprintln!(
        "hostping agent: watching {host_name} ({provenance}); runs in {}; serving http://{}/metrics and /api/runs",
        db.display(),
        server.addr
    );
    let fabric = match &config.fabric {
        Some(f) => Some(switch_sampler::start(
            f,
            db,
            metrics.clone(),
            control.clone(),
            log,
        )?),
        None => None,
    };
    let mut registering = None;
    let mut nccl = None;
    let sender = match (&args.collector, token) {
        (Some(url), Some(token)) => {
            eprintln!("hostping agent: sending runs to {url} as {name}");
            let tls = fleet_api::tls::client_config(args.collector_ca.as_deref())?;
            let hostname = agent::hostname().unwrap_or_else(|_| name.clone());
            registering = Some(register::start(
                register::Registration {
                    collector: url.clone(),
                    token: token.clone(),
                    host: name.clone(),
                    url: args
                        .advertise
                        .clone()
                        .unwrap_or_else(|| register::default_url(server.addr, &hostname)),
                    rnics,
                    devices,
                    expected_busbw_gbs,
                    tls: tls.clone(),
                },
                control.clone(),
                log,
            ));
            let target = sender::CollectorTarget {
                url: url.clone(),
                token,
                host: name.clone(),
                tls,
                // An empty rack in the file is no rack (the collector refuses "").
                rack: args
                    .rack
                    .clone()
                    .or_else(|| config.agent.rack.clone().filter(|r| !r.is_empty())),
            };
            if let Some(dir) = &args.nccl_dir {
                eprintln!(
                    "hostping agent: sending the collectives of the jobs in {} to {url}",
                    dir.display()
                );
                nccl = Some(
                    agent::nccl::report::start(dir.clone(), target.clone(), control.clone(), log)
                        .context("cannot start the NCCL thread")?,
                );
            }
            Some(sender::start(target, db.clone(), metrics.clone(), log)?)
        }
        _ => None,
    };
    let mut agent_log = |line: &str| log(line);
    let mut agent = Agent::new(
        backend.as_mut(),
        &config,
        store,
        metrics,
        status,
        &mut agent_log,
    )?;
    let stored = agent.run(&control, args.run_for.map(|d| d.as_nanos() as u64));
    if let Some(fabric) = fabric {
        // The loop ended by a signal or --run-for: the sampler ends with it.
        control.stop();
        fabric.join();
    }
    if let Some(nccl) = nccl {
        control.stop();
        nccl.join();
    }
    if let Some(sender) = sender {
        sender.finish();
    }
    if let Some(registering) = registering {
        control.stop();
        let _ = registering.join();
    }
    server.shutdown();
    signals.close();
    eprintln!(
        "hostping agent: stopped; {stored} runs stored in {}",
        db.display()
    );
    Ok(Outcome::Healthy)
}

/// One line of the agent's log, on stderr.
fn log(line: &str) {
    eprintln!("hostping agent: {line}");
}

/// The configuration file (or Hostping's defaults), with the flags that override it.
fn config(args: &AgentArgs) -> Result<AgentConfig> {
    let mut config = match &args.config {
        Some(path) => AgentConfig::load(path)?,
        None => AgentConfig::default(),
    };
    if let Some(db) = &args.db {
        config.agent.database = db.clone();
    }
    if let Some(listen) = args.listen {
        config.agent.listen = listen;
    }
    if !(args.time_scale > 0.0 && args.time_scale.is_finite()) {
        bail!(
            "--time-scale: {} must be a positive number",
            args.time_scale
        );
    }
    Ok(config)
}

/// This host's token for the collector: from --token-file or --token (clap refuses both),
/// one of which --collector needs.
fn collector_token(args: &AgentArgs) -> Result<Option<String>> {
    args.collector
        .as_deref()
        .map(|url| {
            agent::sender::collector_token(url, args.token_file.as_deref(), args.token.as_deref())
        })
        .transpose()
        .map_err(anyhow::Error::msg)
}

/// SIGTERM and SIGINT stop the loop (the run in progress finishes and is stored).
fn stop_on_signals(control: &Arc<Control>) -> Result<signal_hook::iterator::Handle> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])
        .context("cannot install the SIGTERM handler")?;
    let control = control.clone();
    let handle = signals.handle();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            control.stop();
        }
    });
    Ok(handle)
}

/// The probe tokens (`POST /api/probe`), said on stderr: how many, and when there are
/// none (allowed, a deployment may hand them out later) that every request is refused.
fn load_probe_tokens(file: &Path) -> Result<Arc<Tokens>> {
    let tokens = Tokens::load(file)?;
    log(&format!(
        "probing on request (POST /api/probe) for {} tokens of {}",
        tokens.len(),
        file.display()
    ));
    if tokens.is_empty() {
        log(&format!(
            "{} holds no token: every probe request is refused (401)",
            file.display()
        ));
    }
    Ok(Arc::new(tokens))
}

/// The RNIC ids this agent offers pair probes from and their devices (registered with the
/// collector): the model's RNICs, with no device, on a simulated host; on a real one those
/// of `--devices`, each of which must exist, numbered in the order given, or every RNIC with
/// an ACTIVE port.
fn pair_rnics(host: &Host, devices: Option<&[String]>) -> Result<(Vec<String>, Vec<String>)> {
    if let (Some(devices), Some(discovery)) = (devices, host.discovery()) {
        for device in devices {
            if !discovery.rdma_ports.iter().any(|p| &p.device == device) {
                let mut found: Vec<&str> = discovery
                    .rdma_ports
                    .iter()
                    .map(|p| p.device.as_str())
                    .collect();
                found.dedup();
                bail!(
                    "--devices {}: no RDMA device {device} on this host (it has {})",
                    devices.join(","),
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                );
            }
        }
    }
    Ok(match host.discovery() {
        Some(_) => agent::pair::rnics(host, devices).into_iter().unzip(),
        None => (
            host.model()
                .map(|m| m.rnics().map(|c| c.id.to_string()).collect())
                .unwrap_or_default(),
            Vec::new(),
        ),
    })
}
