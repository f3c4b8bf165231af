//! `hostping pair serve|probe`: the real RNIC-to-RNIC probe (`rdma::engine::pair`) between
//! two hosts, over a TCP connection that carries the two offers, and the split of its
//! latency into host A's own path, host B's and the network (docs/cluster.md, "The split").
//!
//! # The exchange, on the socket
//! 1. `probe` measures its own part first (the loopback of its port to the nearest memory
//!    node, one path as `hostping check` probes it), then connects and sends its
//!    [`PairOffer`] as one JSON line, with its host name and its part
//!    (`host_loopback_us`).
//! 2. `serve` reads that line, measures its own part the same way, connects its QP and sends
//!    one [`Answer`] line: its offer with its host and part, or why it refuses. It then
//!    serves the probe on the device (the socket is not used again) and takes the next
//!    connection.
//!
//! Every read and write on the socket has a deadline (`--timeout-ms`; the wait for the
//! answer also covers the peer's loopback, [`ANSWER_WAIT`]), and a line is at most
//! [`MAX_LINE`] bytes. Each side measures its loopback while the other waits, so neither
//! loopback shares the CPU or the device with the pair probe.
//!
//! The local side, what a responder accepts, the split and the report are
//! `agent::pair`'s, which the agents' HTTP API uses too (a real `hostping mesh`); this
//! module is the socket between the two sides and the table.

use crate::cli::pair::{PairCommand, PairDeviceArgs, PairEndpoint, PairProbeArgs, PairServeArgs};
use crate::cli::Format;
use crate::output::{self, Outcome};
use agent::pair::{self, Answer, Local, LocalOptions, PairReport, PeerFailure, ANSWER_WAIT};
use anyhow::{anyhow, bail, Context, Result};
use rdma::engine::pair::{PairOffer, PairSpec};
use serde::Serialize;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Longest JSON line either side accepts (an offer is about 500 bytes).
const MAX_LINE: u64 = 64 * 1024;

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

// -- the wire -----------------------------------------------------------------------------------

/// Writes `value` as one JSON line (the stream's write deadline applies).
fn send_line<T: Serialize>(mut stream: &TcpStream, value: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_string(value).map_err(std::io::Error::other)?;
    line.push('\n');
    stream.write_all(line.as_bytes())?;
    stream.flush()
}

/// Reads one line of at most [`MAX_LINE`] bytes, waiting at most `wait` (`what` names it in
/// the error).
fn read_line(stream: &TcpStream, wait: Duration, what: &str) -> Result<String> {
    stream.set_read_timeout(Some(wait))?;
    let mut line = String::new();
    let read = BufReader::new(stream.take(MAX_LINE)).read_line(&mut line);
    match read {
        Ok(0) => bail!("the connection closed before {what}"),
        Ok(_) if !line.ends_with('\n') => {
            bail!("{what} is not one line of at most {MAX_LINE} bytes")
        }
        Ok(_) => Ok(line),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            bail!("timed out after {} ms waiting for {what}", wait.as_millis())
        }
        Err(e) => Err(e).with_context(|| format!("reading {what}")),
    }
}

/// Connects to `peer` (HOST:PORT), within `timeout` per address; the error names the peer.
fn connect(peer: &str, timeout: Duration) -> Result<TcpStream> {
    let addrs: Vec<SocketAddr> = peer
        .to_socket_addrs()
        .with_context(|| format!("--peer {peer}: not a reachable HOST:PORT"))?
        .collect();
    let mut last = None;
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(stream) => {
                stream.set_write_timeout(Some(timeout))?;
                stream.set_read_timeout(Some(timeout))?;
                return Ok(stream);
            }
            Err(e) => last = Some((addr, e)),
        }
    }
    match last {
        Some((addr, e)) => Err(anyhow!(
            "--peer {peer}: cannot connect to {addr}: {e} (is `hostping pair serve` running there?)"
        )),
        None => Err(anyhow!("--peer {peer}: the name has no address")),
    }
}

// -- serve ----------------------------------------------------------------------------------

fn serve(args: &PairServeArgs) -> Result<Outcome> {
    let mut local = open_local(&args.local)?;
    let listener = TcpListener::bind((args.listen, args.port))
        .with_context(|| format!("--listen {} --port {}", args.listen, args.port))?;
    let addr = listener.local_addr()?;
    output::write_stdout(&format!(
        "pair serve: {} on {} listening on {addr}\n",
        local.device, local.name
    ))?;
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                eprintln!("hostping: pair serve: accepting a connection: {e}");
                continue;
            }
        };
        let from = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        match serve_one(&mut local, &stream) {
            Ok(done) => eprintln!("pair serve: {from}: {done}"),
            Err(e) => eprintln!("hostping: pair serve: {from}: {e:#}"),
        }
    }
    Ok(Outcome::Healthy)
}

/// One initiator: its offer, this side's part, the answer, the probe served.
fn serve_one(local: &mut Local, stream: &TcpStream) -> Result<String> {
    let timeout = local.timeout();
    stream.set_write_timeout(Some(timeout))?;
    let line = read_line(stream, timeout, "the initiator's offer")?;
    let offer: PairOffer =
        serde_json::from_str(&line).context("the initiator's offer is not a pair offer")?;
    pair::serve_offer(local, &offer, |answer| send_line(stream, answer)).map_err(|e| anyhow!("{e}"))
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
    let exchange = |mine: &PairOffer| -> Result<Answer, PeerFailure> {
        let unreachable = |e: anyhow::Error| PeerFailure::Unreachable(format!("{e:#}"));
        let stream = connect(peer, timeout).map_err(unreachable)?;
        send_line(&stream, mine)
            .map_err(|e| PeerFailure::Unreachable(format!("sending the offer to {peer}: {e}")))?;
        let line = read_line(&stream, ANSWER_WAIT, "the responder's answer")
            .map_err(|e| PeerFailure::Unreachable(format!("{peer}: {e:#}")))?;
        serde_json::from_str(&line).map_err(|e| {
            PeerFailure::Other(format!("{peer}: the answer is not a pair answer: {e}"))
        })
    };
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
            print(args.format, &report)?;
            Ok(Outcome::found(
                !report.verified || report.status == fleet_api::pair::PairStatus::Abnormal,
            ))
        }
        Some(e) => {
            if report.latency.is_some() {
                print(args.format, &report)?;
            }
            Err(anyhow!("pair probe to {peer}: {e}"))
        }
    }
}

fn print(format: Format, report: &PairReport) -> Result<()> {
    output::print(format, report, table)
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
    out += &format!(
        "  network    {}{} ({from})\n",
        us(r.network_us),
        judged(r.network_status)
    );
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

    #[test]
    fn a_refused_connection_names_the_peer() {
        // A port that was free a moment ago: nothing listens there now.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let peer = format!("127.0.0.1:{port}");
        let e = connect(&peer, Duration::from_secs(2)).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.starts_with(&format!("--peer {peer}: cannot connect")),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
        let e = connect("no-such-host.invalid:9471", Duration::from_secs(2)).unwrap_err();
        assert!(
            format!("{e:#}").starts_with("--peer no-such-host.invalid:9471:"),
            "{e:#}"
        );
    }

    #[test]
    fn a_peer_that_closes_or_stalls_is_an_error_that_says_so() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            // First connection: closed at once; second: held open, silent.
            drop(listener.accept().unwrap());
            let (held, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(600));
            drop(held);
        });
        let closed = connect(&addr, Duration::from_secs(2)).unwrap();
        let e = read_line(&closed, Duration::from_secs(2), "the responder's answer").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the connection closed before the responder's answer"
        );
        let silent = connect(&addr, Duration::from_secs(2)).unwrap();
        let e = read_line(
            &silent,
            Duration::from_millis(200),
            "the responder's answer",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "timed out after 200 ms waiting for the responder's answer"
        );
        server.join().unwrap();
    }

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

    #[test]
    fn the_flags_default_as_documented_and_the_help_teaches() {
        let PairCommand::Serve(serve) = pair_command(&["serve", "--device", "mlx5_0"]) else {
            panic!("not serve");
        };
        assert_eq!(serve.port, crate::cli::pair::DEFAULT_PORT);
        assert_eq!(serve.listen.to_string(), "0.0.0.0");
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
