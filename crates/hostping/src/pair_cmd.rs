//! `hostping pair serve|probe`: the real RNIC-to-RNIC probe (`rdma::engine::pair`) between
//! two hosts, over a TCP connection that carries the two offers, and the split of its
//! latency into host A's own path, host B's and the network (docs/cluster.md, "The split").
//!
//! The socket (`agent::pair::wire`), the local side, what a responder accepts, the split and
//! the report are `agent::pair`'s, which the agents' HTTP API uses too (a real `hostping
//! mesh`); this module is the flags and the table.

use crate::cli::pair::{PairCommand, PairDeviceArgs, PairEndpoint, PairProbeArgs, PairServeArgs};
use crate::output::{self, Outcome};
use agent::pair::{self, wire, Local, LocalOptions, PairReport};
use anyhow::{anyhow, bail, Context, Result};
use rdma::engine::pair::{PairOffer, PairSpec};
use std::net::TcpListener;

/// Runs `hostping pair ...`.
pub fn run(cmd: PairCommand) -> Result<Outcome> {
    match cmd {
        PairCommand::Serve(args) => serve(&args),
        PairCommand::Probe(args) => probe(&args),
    }
}

/// Opens `--device` on this host, named by its hostname; every error names the device.
fn open_local(args: &PairDeviceArgs) -> Result<Local> {
    let dev = args.device.as_str();
    let PairEndpoint::Memory = args.endpoint;
    let options = LocalOptions {
        loopback_iterations: args.loopback_iterations,
        timeout_ms: args.timeout_ms,
    };
    let name = agent::hostname().unwrap_or_else(|_| "localhost".to_string());
    pair::open_host()
        .and_then(|host| Local::open(host, dev, name, &options))
        .map_err(|why| anyhow!("--device {dev}: {why}"))
}

// -- serve ----------------------------------------------------------------------------------

fn serve(args: &PairServeArgs) -> Result<Outcome> {
    let mut local = open_local(&args.local)?;
    let listen = args.address()?;
    let listener = TcpListener::bind(listen).with_context(|| format!("--listen {listen}"))?;
    let addr = listener.local_addr()?;
    output::write_stdout(&format!(
        "pair serve: {} on {} listening on {addr}\n",
        local.device, local.name
    ))?;
    wire::serve(&mut local, &listener, |from, outcome| {
        match (from, outcome) {
            (Some(from), Ok(done)) => eprintln!("pair serve: {from}: {done}"),
            (Some(from), Err(e)) => eprintln!("hostping: pair serve: {from}: {e}"),
            (None, outcome) => eprintln!(
                "hostping: pair serve: accepting a connection: {}",
                outcome.err().map_or_else(String::new, |e| e.to_string())
            ),
        }
    });
    Ok(Outcome::Healthy)
}

// -- probe ----------------------------------------------------------------------------------

/// `--baseline`: a healthy probe's JSON, read before anything is probed.
fn read_baseline(file: &std::path::Path) -> Result<pair::PairBaseline> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("--baseline {}: cannot read", file.display()))?;
    let baseline: pair::PairBaseline = serde_json::from_str(&text).with_context(|| {
        format!(
            "--baseline {}: not the JSON of `hostping pair probe --format json`",
            file.display()
        )
    })?;
    if baseline.latency_us.is_none() {
        bail!(
            "--baseline {}: no latency_us (a probe that stopped is no baseline)",
            file.display()
        );
    }
    Ok(baseline)
}

fn probe(args: &PairProbeArgs) -> Result<Outcome> {
    let baseline = args.baseline.as_deref().map(read_baseline).transpose()?;
    let mut local = open_local(&args.local)?;
    let timeout = local.timeout();
    let spec = PairSpec {
        latency_bytes: args.size,
        latency_iterations: args.iterations,
        bw_bytes: args.bw_size,
        bw_iterations: args.bw_iterations,
        depth: args.depth,
        timeout_ms: args.local.timeout_ms,
        ..PairSpec::default()
    };
    let peer = args.peer.as_str();
    let exchange = |mine: &PairOffer| wire::exchange(peer, timeout, mine);
    let probed = pair::initiate_probe(&mut local, &spec, peer, (None, None), exchange);
    let mut report = probed.report;
    match probed.error {
        None => {
            if let (Some(baseline), Some(file)) = (&baseline, &args.baseline) {
                let ends = |e: &pair::End| format!("{} on {}", e.rnic, e.host);
                if (ends(&baseline.a), ends(&baseline.b)) != (ends(&report.a), ends(&report.b)) {
                    bail!(
                        "--baseline {}: a probe of {} -> {}, not of this pair ({} -> {})",
                        file.display(),
                        ends(&baseline.a),
                        ends(&baseline.b),
                        ends(&report.a),
                        ends(&report.b)
                    );
                }
                let th = model::Thresholds::default().abnormal_th;
                pair::judge_against(&mut report, baseline, th);
            }
            print(args, &report)?;
            Ok(Outcome::found(
                !report.verified || report.status == fleet_api::pair::PairStatus::Abnormal,
            ))
        }
        Some(e) => {
            if report.latency.is_some() {
                print(args, &report)?;
            }
            Err(anyhow!("pair probe to {peer}: {e}"))
        }
    }
}

/// The report, to `-o/--output` or stdout.
fn print(args: &PairProbeArgs, report: &PairReport) -> Result<()> {
    output::print_to(args.output.as_deref(), args.format, report, |r, _| table(r))
}

/// The report for people.
fn table(r: &PairReport) -> String {
    let us = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2} us"));
    let mut out = format!(
        "pair {} on {} -> {} on {} ({}), measured\n",
        r.a.rnic, r.a.host, r.b.rnic, r.b.host, r.peer
    );
    let stats = r.latency.map_or_else(String::new, |l| {
        format!(
            " (half round trip, p50 of {} pings of {} B; p99 {:.2} us)",
            l.samples, r.latency_bytes, l.p99_us
        )
    });
    out += &format!("  latency    {}{stats}\n", us(r.latency_us));
    let bw = r.bandwidth_gbps.map_or_else(
        || "-".to_string(),
        |g| {
            format!(
                "{g:.3} Gb/s ({} WRITEs of {} B, data {})",
                r.bw_iterations,
                r.bw_bytes,
                if r.verified {
                    "verified"
                } else {
                    "NOT verified"
                }
            )
        },
    );
    out += &format!("  bandwidth  {bw}\n");
    let why = |e: &Option<String>| e.as_ref().map_or_else(String::new, |e| format!(" ({e})"));
    let judged = |s: Option<model::pair::PartStatus>| {
        s.map_or_else(String::new, |s| format!(" [{}]", s.as_str()))
    };
    out += &format!(
        "  host A     {}{} (half the loopback of {} to {}){}\n",
        us(r.host_a_us),
        judged(r.host_a_status),
        r.a.rnic,
        r.endpoint_a,
        why(&r.host_a_error)
    );
    out += &format!(
        "  host B     {}{} (the peer's own, measured the same way){}\n",
        us(r.host_b_us),
        judged(r.host_b_status),
        why(&r.host_b_error)
    );
    let from = if r.network_from == fleet_api::pair::NetworkFrom::CompletionTimestamps {
        "half the round trip by the RNIC's clock"
    } else {
        "latency - host A - host B"
    };
    let noise = r
        .network_noise_us
        .map_or(String::new(), |n| format!(" +/- {n:.2} us"));
    out += &format!(
        "  network    {}{noise}{} ({from})\n",
        us(r.network_us),
        judged(r.network_status)
    );
    if let Some(note) = &r.network_note {
        out += &format!("             {note}\n");
    }
    out += "  route      not traced\n";
    out += &format!("  status     {}: {}\n", r.status.as_str(), r.reason);
    if let Some(e) = &r.error {
        out += &format!("  error      {e}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hostping pair ARGS...` parsed as `main` parses it.
    fn pair_command(args: &[&str]) -> PairCommand {
        use clap::FromArgMatches;
        let argv = ["hostping", "pair"].iter().chain(args);
        let matches = crate::cli::command().try_get_matches_from(argv).unwrap();
        match crate::cli::Cli::from_arg_matches(&matches).unwrap().command {
            crate::cli::Command::Pair(cmd) => cmd,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_device_that_does_not_exist_is_named_on_one_line() {
        // main prints this as "hostping: error: ..." and exits 2 (DESIGN 4.3).
        let cmd = pair_command(&["probe", "--device", "nosuch", "--peer", "127.0.0.1:1"]);
        let text = format!("{:#}", run(cmd).unwrap_err());
        assert!(text.starts_with("--device nosuch: "), "{text}");
        assert!(!text.contains('\n'), "{text}");
        let cmd = pair_command(&["serve", "--device", "nosuch", "--port", "0"]);
        let text = format!("{:#}", run(cmd).unwrap_err());
        assert!(text.starts_with("--device nosuch: "), "{text}");
    }

    /// `--listen ADDR:PORT` as everywhere else; the first form (`--listen ADDR --port N`)
    /// still works, hidden; a port given both ways is refused.
    #[test]
    fn serve_listens_on_addr_port_and_still_takes_the_first_form() {
        let serve = |args: &[&str]| {
            let mut all = vec!["serve", "--device", "rxe_b"];
            all.extend_from_slice(args);
            match pair_command(&all) {
                PairCommand::Serve(serve) => serve.address(),
                PairCommand::Probe(_) => panic!("not serve"),
            }
        };
        assert_eq!(
            serve(&["--listen", "192.168.77.2:0"]).unwrap().to_string(),
            "192.168.77.2:0"
        );
        assert_eq!(
            serve(&["--listen", "[::1]:9500"]).unwrap().to_string(),
            "[::1]:9500"
        );
        assert_eq!(
            serve(&["--listen", "192.168.77.2", "--port", "0"])
                .unwrap()
                .to_string(),
            "192.168.77.2:0"
        );
        assert_eq!(
            serve(&["--listen", "10.0.0.2"]).unwrap().to_string(),
            "10.0.0.2:9471"
        );
        assert_eq!(
            serve(&["--listen", "10.0.0.2:1", "--port", "2"])
                .unwrap_err()
                .to_string(),
            "--listen 10.0.0.2:1 already has a port: --port 2 goes only with a bare --listen \
             ADDR (prefer --listen ADDR:PORT)"
        );
        let mut cmd = crate::cli::command();
        let help = cmd
            .find_subcommand_mut("pair")
            .unwrap()
            .find_subcommand_mut("serve")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("--listen <ADDR:PORT>"), "{help}");
        assert!(!help.contains("--port"), "{help}");
    }

    #[test]
    fn the_flags_default_as_documented_and_the_help_teaches() {
        let PairCommand::Serve(serve) = pair_command(&["serve", "--device", "mlx5_0"]) else {
            panic!("not serve");
        };
        assert_eq!(
            serve.address().unwrap().port(),
            crate::cli::pair::DEFAULT_PORT
        );
        assert_eq!(serve.address().unwrap().ip().to_string(), "0.0.0.0");
        assert_eq!(serve.local.timeout_ms, 2000);
        let PairCommand::Probe(probe) = pair_command(&[
            "probe", "--device", "rxe_a", "--peer", "h:1", "--format", "json",
        ]) else {
            panic!("not probe");
        };
        assert_eq!(probe.iterations, 1000);
        assert_eq!(probe.size, 2);
        assert_eq!(
            (probe.bw_iterations, probe.bw_size, probe.depth),
            (1000, 65536, 128)
        );
        assert_eq!(probe.local.endpoint, PairEndpoint::Memory);
        let mut cmd = crate::cli::command();
        let pair = cmd.find_subcommand_mut("pair").unwrap();
        for (sub, example) in [
            ("serve", "hostping pair serve --device mlx5_0"),
            (
                "probe",
                "hostping pair probe --device mlx5_0 --peer node009:9471",
            ),
        ] {
            let help = pair
                .find_subcommand_mut(sub)
                .unwrap()
                .render_long_help()
                .to_string();
            assert!(help.contains(example), "{help}");
        }
    }
}
