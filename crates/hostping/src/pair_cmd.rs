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
//! # What is judged
//! Nothing: a single pair has no baseline, so a finished probe is `uncertain` with its
//! reason, and `failed` when the data the responder received did not verify.

use crate::cli::pair::{PairCommand, PairDeviceArgs, PairEndpoint, PairProbeArgs, PairServeArgs};
use crate::cli::Format;
use crate::output::{self, Outcome};
use anyhow::{anyhow, bail, Context, Result};
use check::host::{Host, HostOptions, HostSpec, ProbeOptions};
use model::{ComponentClass, ComponentId, HostTopology, LatencyStats};
use probe::{latency_stats, LatencySpec, ProbeEngine};
use rdma::engine::pair::{initiate, respond, PairOffer, PairPort, PairResult, PairSpec};
use rdma::verbs::Verbs;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Longest JSON line either side accepts (an offer is about 500 bytes).
const MAX_LINE: u64 = 64 * 1024;
/// Longest wait for the responder's answer: it measures its own loopback (a few hundred
/// milliseconds on a real host, seconds under emulation) and connects its QP first.
const ANSWER_WAIT: Duration = Duration::from_secs(60);
/// How long the responder serves one probe at most; a vanished initiator ends it sooner,
/// at the probe's own per-wait deadline.
const SERVE_LIMIT: Duration = Duration::from_secs(600);

/// Runs `hostping pair ...`.
pub fn run(cmd: PairCommand) -> Result<Outcome> {
    match cmd {
        PairCommand::Serve(args) => serve(&args),
        PairCommand::Probe(args) => probe(&args),
    }
}

// -- the local side: device, port, and the host's own part ------------------------------------

/// This host's side of a pair: its device's port, and what its loopback needs.
struct Local {
    host: Host,
    /// The host's name (reports).
    name: String,
    device: String,
    rnic: ComponentId,
    endpoint: ComponentId,
    port: PairPort,
    probe: ProbeOptions,
    loopback: LatencySpec,
}

impl Local {
    /// Discovers this host and opens `--device`'s first ACTIVE port; every error names the
    /// device.
    fn open(args: &PairDeviceArgs) -> Result<Local> {
        let dev = args.device.as_str();
        let host = Host::open(&HostSpec::default(), HostOptions::default())
            .with_context(|| format!("--device {dev}: discovering this host"))?;
        let discovery = host
            .discovery()
            .ok_or_else(|| anyhow!("--device {dev}: not a real host"))?;
        let ports: Vec<_> = discovery
            .rdma_ports
            .iter()
            .filter(|p| p.device == dev)
            .collect();
        if ports.is_empty() {
            let mut names: Vec<&str> = discovery
                .rdma_ports
                .iter()
                .map(|p| p.device.as_str())
                .collect();
            names.dedup();
            let found = if names.is_empty() {
                "this host has none".to_string()
            } else {
                format!("this host has {}", names.join(", "))
            };
            bail!("--device {dev}: no RDMA device of that name ({found})");
        }
        let Some((rnic, binding)) = discovery
            .bindings
            .rnics
            .iter()
            .find(|(_, b)| b.device == dev)
        else {
            let states: Vec<String> = ports
                .iter()
                .map(|p| format!("port {} {:?}", p.port, p.state))
                .collect();
            bail!("--device {dev}: no ACTIVE port ({})", states.join(", "));
        };
        let model = host
            .model()
            .ok_or_else(|| anyhow!("--device {dev}: no host model was built"))?;
        let endpoint = match args.endpoint {
            PairEndpoint::Memory => nearest_memory(model, rnic),
        }
        .ok_or_else(|| anyhow!("--device {dev}: {rnic} reaches no memory node"))?;
        let verbs = Verbs::load()
            .map_err(|e| anyhow!("--device {dev}: libibverbs cannot be used: {}", e.reason))?;
        let port =
            PairPort::from_binding(&verbs, binding).map_err(|e| anyhow!("--device {dev}: {e}"))?;
        let name = agent::hostname().unwrap_or_else(|_| "localhost".to_string());
        Ok(Local {
            name,
            device: dev.to_string(),
            rnic: rnic.clone(),
            endpoint,
            port,
            probe: ProbeOptions {
                timeout_ms: args.timeout_ms,
                verbs_faults: Vec::new(),
            },
            loopback: LatencySpec {
                iterations: args.loopback_iterations,
                ..LatencySpec::default()
            },
            host,
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.probe.timeout_ms)
    }

    /// This host's part: half the p50 loopback latency of `rnic -> endpoint`, in us.
    fn host_part(&mut self) -> Result<f64, String> {
        let what = format!(
            "the loopback {} -> {} on {}",
            self.rnic, self.endpoint, self.device
        );
        let path = self
            .host
            .model()
            .and_then(|m| m.path(&self.rnic, &self.endpoint))
            .cloned()
            .ok_or_else(|| format!("{what}: no such path in the host model"))?;
        let engine = self
            .host
            .verbs_engine(&self.probe)
            .map_err(|e| format!("{what}: {e}"))?
            .ok_or_else(|| format!("{what}: not a real host"))?;
        let samples = engine
            .latency(&path, &self.loopback)
            .map_err(|e| format!("{what}: {e}"))?;
        let stats =
            latency_stats(&samples.small_ns).ok_or_else(|| format!("{what}: no samples"))?;
        Ok(stats.p50_us / 2.0)
    }
}

/// The memory node `rnic` reaches over the fewest links, at line rate where one is (the
/// mesh's `--endpoint memory`).
fn nearest_memory(model: &HostTopology, rnic: &ComponentId) -> Option<ComponentId> {
    let memory = |affinitive_only: bool| {
        model
            .paths_of(rnic)
            .filter(|p| p.affinitive || !affinitive_only)
            .filter(|p| {
                model
                    .component(&p.endpoint)
                    .is_some_and(|c| c.class() == ComponentClass::Memory)
            })
            .min_by_key(|p| p.links.len())
            .map(|p| p.endpoint.clone())
    };
    memory(true).or_else(|| memory(false))
}

// -- the wire -----------------------------------------------------------------------------------

/// What `serve` sends back: one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Answer {
    /// The responder's offer (with its `host` and `host_loopback_us`); `None` when it
    /// refused.
    #[serde(default)]
    offer: Option<PairOffer>,
    /// Why the responder's own part is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host_loopback_error: Option<String>,
    /// Why the responder refused the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

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

/// Whether a responder takes an initiator's probe: within the flags' own caps.
fn acceptable(spec: &PairSpec) -> Result<(), String> {
    use crate::cli::pair::MAX_BW_BYTES;
    use model::limits;
    let checks = [
        ("latency_bytes", u64::from(spec.latency_bytes), 4096),
        ("bw_bytes", u64::from(spec.bw_bytes), MAX_BW_BYTES),
        (
            "latency_iterations",
            u64::from(spec.latency_iterations),
            limits::ITERATIONS,
        ),
        ("bw_iterations", spec.bw_iterations, limits::ITERATIONS),
        ("bw_duration_ms", spec.bw_duration_ms, 60_000),
        ("depth", u64::from(spec.depth), limits::STREAM_DEPTH),
        ("timeout_ms", spec.timeout_ms, limits::TIMEOUT_MS),
    ];
    match checks.iter().find(|(_, v, cap)| v > cap) {
        Some((what, v, cap)) => Err(format!("{what} {v} is above this responder's cap of {cap}")),
        None => Ok(()),
    }
}

// -- serve ----------------------------------------------------------------------------------

fn serve(args: &PairServeArgs) -> Result<Outcome> {
    let mut local = Local::open(&args.local)?;
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
    if let Err(why) = acceptable(&offer.spec) {
        let refusal = Answer {
            offer: None,
            host_loopback_error: None,
            error: Some(why.clone()),
        };
        send_line(stream, &refusal).context("sending the refusal")?;
        bail!("refused {}'s probe: {why}", offer.device);
    }
    let part = local.host_part();
    let answered = RefCell::new(false);
    let name = local.name.clone();
    let answer = |mine: &PairOffer| {
        let offer = PairOffer {
            host: Some(name.clone()),
            host_loopback_us: part.as_ref().ok().copied(),
            ..mine.clone()
        };
        let answer = Answer {
            offer: Some(offer),
            host_loopback_error: part.as_ref().err().cloned(),
            error: None,
        };
        *answered.borrow_mut() = true;
        send_line(stream, &answer).map_err(|e| format!("sending the answer: {e}"))
    };
    match respond(&local.port, &offer, answer, SERVE_LIMIT) {
        Ok(served) => Ok(format!(
            "served {} from {}: {} rounds, {} messages, data {}",
            local.device,
            offer.device,
            served.rounds,
            served.messages,
            if served.verified {
                "verified"
            } else {
                "NOT verified"
            }
        )),
        Err(e) => {
            if !*answered.borrow() {
                // The initiator is still waiting: tell it why.
                let refusal = Answer {
                    offer: None,
                    host_loopback_error: None,
                    error: Some(e.to_string()),
                };
                let _ = send_line(stream, &refusal);
            }
            Err(anyhow!("{e}"))
        }
    }
}

// -- probe ----------------------------------------------------------------------------------

/// One side of the pair in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct End {
    /// The host's name.
    host: String,
    /// The RDMA device.
    rnic: String,
}

/// `pair probe --format json`: DESIGN 4.6's pair object, measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct PairReport {
    a: End,
    b: End,
    /// p50 of the half round trips, us (ib_write_lat's t_typical).
    latency_us: Option<f64>,
    bandwidth_gbps: Option<f64>,
    /// Half this host's loopback latency to `endpoint_a`, us.
    host_a_us: Option<f64>,
    /// The same, measured by the peer.
    host_b_us: Option<f64>,
    /// latency - host A - host B.
    network_us: Option<f64>,
    /// The switches crossed: not traced by this command.
    route: Vec<String>,
    /// Where `route` comes from: `none`.
    route_source: &'static str,
    /// `uncertain` (measured, not judged: no baseline), `failed` (the data did not verify,
    /// or the probe stopped).
    status: &'static str,
    reason: String,
    simulated: bool,
    /// The memory node of host A's part.
    endpoint_a: String,
    /// Percentiles of the half round trips.
    latency: Option<LatencyStats>,
    latency_bytes: u32,
    bw_bytes: u32,
    bw_iterations: u64,
    verified: bool,
    host_a_error: Option<String>,
    host_b_error: Option<String>,
    /// HOST:PORT as given.
    peer: String,
    /// Where the stop happened, when the probe stopped.
    error: Option<String>,
}

/// The network's part: the latency less both hosts' parts (`None` unless all three are
/// known). May come out negative where a host's loopback costs more than its share of the
/// pair's path (a software RNIC, whose loopback never leaves the host's CPU).
fn network_part(latency_us: Option<f64>, host_a: Option<f64>, host_b: Option<f64>) -> Option<f64> {
    Some(latency_us? - host_a? - host_b?)
}

fn probe(args: &PairProbeArgs) -> Result<Outcome> {
    let mut local = Local::open(&args.local)?;
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
    let part_a = local.host_part();
    let stream = connect(&args.peer, timeout)?;
    let answer: RefCell<Option<Answer>> = RefCell::new(None);
    let exchange = |mine: &PairOffer| -> Result<PairOffer, String> {
        let mine = PairOffer {
            host: Some(local.name.clone()),
            host_loopback_us: part_a.as_ref().ok().copied(),
            ..mine.clone()
        };
        send_line(&stream, &mine)
            .map_err(|e| format!("sending the offer to {}: {e}", args.peer))?;
        let line = read_line(&stream, ANSWER_WAIT, "the responder's answer")
            .map_err(|e| format!("{}: {e:#}", args.peer))?;
        let got: Answer = serde_json::from_str(&line)
            .map_err(|e| format!("{}: the answer is not a pair answer: {e}", args.peer))?;
        *answer.borrow_mut() = Some(got.clone());
        match (got.offer, got.error) {
            (_, Some(why)) => Err(format!("{} refused the probe: {why}", args.peer)),
            (Some(offer), None) => Ok(offer),
            (None, None) => Err(format!("{} answered without an offer", args.peer)),
        }
    };
    let outcome = initiate(&local.port, &spec, exchange);
    let answer = answer.into_inner();
    let mut report = PairReport {
        a: End {
            host: local.name.clone(),
            rnic: local.device.clone(),
        },
        b: End {
            host: answer
                .as_ref()
                .and_then(|a| a.offer.as_ref())
                .and_then(|o| o.host.clone())
                .unwrap_or_else(|| args.peer.clone()),
            rnic: answer
                .as_ref()
                .and_then(|a| a.offer.as_ref())
                .map_or_else(String::new, |o| o.device.clone()),
        },
        latency_us: None,
        bandwidth_gbps: None,
        host_a_us: part_a.as_ref().ok().copied(),
        host_b_us: answer
            .as_ref()
            .and_then(|a| a.offer.as_ref())
            .and_then(|o| o.host_loopback_us),
        network_us: None,
        route: Vec::new(),
        route_source: "none",
        status: "failed",
        reason: String::new(),
        simulated: false,
        endpoint_a: local.endpoint.to_string(),
        latency: None,
        latency_bytes: spec.latency_bytes,
        bw_bytes: spec.bw_bytes,
        bw_iterations: 0,
        verified: false,
        host_a_error: part_a.as_ref().err().cloned(),
        host_b_error: answer.as_ref().and_then(|a| a.host_loopback_error.clone()),
        peer: args.peer.clone(),
        error: None,
    };
    match outcome {
        Ok(result) => {
            fill(&mut report, &result);
            print(args.format, &report)?;
            Ok(Outcome::found(!report.verified))
        }
        Err(e) => {
            report.latency = latency_stats(&e.kept.small_ns);
            report.latency_us = report.latency.map(|l| l.p50_us);
            report.error = Some(e.to_string());
            report.reason = "the probe stopped".to_string();
            if !e.kept.small_ns.is_empty() {
                print(args.format, &report)?;
            }
            Err(anyhow!("pair probe to {}: {e}", args.peer))
        }
    }
}

/// The report's figures from a finished probe.
fn fill(report: &mut PairReport, result: &PairResult) {
    report.latency = latency_stats(&result.latency.small_ns);
    report.latency_us = report.latency.map(|l| l.p50_us);
    report.bandwidth_gbps = result.bandwidth_gbps;
    report.bw_iterations = result.iterations;
    report.verified = result.verified;
    report.network_us = network_part(report.latency_us, report.host_a_us, report.host_b_us);
    (report.status, report.reason) = if result.verified {
        (
            "uncertain",
            "measured, not judged: a single pair has no baseline".to_string(),
        )
    } else {
        (
            "failed",
            format!(
                "the data {} received did not match what {} wrote",
                report.b.rnic, report.a.rnic
            ),
        )
    };
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
    out += &format!(
        "  host A     {} (half the loopback of {} to {}){}\n",
        us(r.host_a_us),
        r.a.rnic,
        r.endpoint_a,
        why(&r.host_a_error)
    );
    out += &format!(
        "  host B     {} (the peer's own, measured the same way){}\n",
        us(r.host_b_us),
        why(&r.host_b_error)
    );
    out += &format!(
        "  network    {} (latency - host A - host B)\n",
        us(r.network_us)
    );
    out += "  route      not traced\n";
    out += &format!("  status     {}: {}\n", r.status, r.reason);
    if let Some(e) = &r.error {
        out += &format!("  error      {e}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer() -> PairOffer {
        PairOffer {
            device: "rxe_b".into(),
            port: 1,
            lid: 0,
            gid: Some("0000:0000:0000:0000:0000:ffff:c0a8:4d02".into()),
            gid_index: Some(1),
            qp_num: 17,
            psn: 0x12345,
            mtu: 3,
            rkey: 0x99,
            addr: 0x7f00_0000_0000,
            len: 65536 + 64,
            completion_timestamps: false,
            spec: PairSpec::default(),
            host: Some("node-b".into()),
            host_loopback_us: Some(9.5),
        }
    }

    #[test]
    fn an_offer_and_an_answer_round_trip_through_one_json_line() {
        let mine = offer();
        let line = serde_json::to_string(&mine).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<PairOffer>(&line).unwrap(), mine);

        let answer = Answer {
            offer: Some(mine.clone()),
            host_loopback_error: None,
            error: None,
        };
        let text = serde_json::to_string(&answer).unwrap();
        let back: Answer = serde_json::from_str(&text).unwrap();
        assert_eq!(back, answer);
        assert_eq!(back.offer.unwrap().host_loopback_us, Some(9.5));
        // A refusal is an error and no offer.
        let refusal: Answer = serde_json::from_str(r#"{"error": "bw_bytes too big"}"#).unwrap();
        assert_eq!(refusal.offer, None);
        assert_eq!(refusal.error.as_deref(), Some("bw_bytes too big"));
    }

    #[test]
    fn the_network_part_is_the_latency_less_both_hosts_parts() {
        let net = network_part(Some(25.0), Some(8.5), Some(9.0)).unwrap();
        assert!((net - 7.5).abs() < 1e-9, "{net}");
        // 200 us more on the cable: all of it is the network's.
        let slow = network_part(Some(225.0), Some(8.5), Some(9.0)).unwrap();
        assert!((slow - net - 200.0).abs() < 1e-9);
        // A software RNIC's loopback may cost more than its share: negative, not hidden.
        assert!(network_part(Some(10.0), Some(6.0), Some(6.0)).unwrap() < 0.0);
        // A part not measured leaves the network's unknown.
        assert_eq!(network_part(Some(25.0), None, Some(9.0)), None);
        assert_eq!(network_part(None, Some(8.5), Some(9.0)), None);
    }

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

    #[test]
    fn a_responder_refuses_a_probe_above_the_caps() {
        assert_eq!(acceptable(&PairSpec::default()), Ok(()));
        let huge = PairSpec {
            bw_bytes: 1 << 30,
            ..PairSpec::default()
        };
        assert!(acceptable(&huge)
            .unwrap_err()
            .starts_with("bw_bytes 1073741824 is above"));
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
