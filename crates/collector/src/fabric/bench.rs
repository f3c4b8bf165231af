//! `hostping bench sweeps`: the collector ingesting switch-port sweeps as a fabric's
//! samplers send them (issue 27 section 5): `--samplers` senders, each with its share of a
//! `--ports`-port fabric (the Delegator's split), each posting one sweep a second for
//! `--duration`, timed per request; then the same senders as fast as the collector answers,
//! for the headroom; then the window query a job's verdict makes, over what was stored.
//!
//! The collector's other load, the agents' runs, is measured beside it: `--run-clients`
//! senders post simulated hosts' runs back to back (the issue 14 fleet bench's body) for
//! `--duration` alone, then again while the samplers post their paced sweeps. The run
//! ingest rate in both, and the sweeps' post latency under the run load, say whether the
//! collector takes the fabric's sweeps while holding its run ingest rate (issue 27
//! section 7).
//!
//! The sweeps are synthetic (counters that grow by a fixed amount per port and second,
//! labelled `simulated`): the bench measures the collector and PostgreSQL, not a fabric.

use super::upload::{PortUpload, SweepUpload};
use crate::bench::{
    host_token_lines, http_client, percentile, BenchError, CollectorChild, Database, FleetReports,
    Latency, RunPoster, SimulatedReports,
};
use model::switch_port::SwitchPortCounters;
use serde::Serialize;
use std::time::{Duration, Instant};

/// What the bench is asked to do.
#[derive(Debug, Clone)]
pub struct SweepBenchSettings {
    /// An empty PostgreSQL database the bench may fill.
    pub database: String,
    /// Concurrent samplers.
    pub samplers: u32,
    /// Switch ports of the fabric, split evenly among the samplers.
    pub ports: u32,
    /// How long each phase lasts.
    pub duration: Duration,
    /// Concurrent run senders (0: no run load).
    pub run_clients: u32,
    /// Simulated hosts whose runs they post.
    pub run_hosts: u32,
    /// The reports of those runs.
    pub reports: SimulatedReports,
}

/// The run load's figures in one phase.
#[derive(Debug, Clone, Serialize)]
pub struct RunLoad {
    /// `alone` or `with paced sweeps`.
    pub name: String,
    /// Runs posted and stored.
    pub runs: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Runs stored per second.
    pub runs_per_s: f64,
    /// One post's latency, ms.
    pub post: Latency,
}

/// One phase's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// `paced at 1 Hz per sampler` or `unpaced`.
    pub name: String,
    /// Sweeps posted and stored.
    pub sweeps: u64,
    /// Delta rows they stored.
    pub port_deltas: u64,
    /// Request bodies, bytes.
    pub bytes: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Sweeps stored per second.
    pub sweeps_per_s: f64,
    /// One post's latency, ms.
    pub post: Latency,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct SweepBench {
    /// Always true: the sweeps are synthetic.
    pub simulated: bool,
    /// Samplers.
    pub samplers: u32,
    /// Ports of the fabric.
    pub ports: u32,
    /// The phases.
    pub phases: Vec<Phase>,
    /// The run ingest rate alone and under the paced sweeps (empty without run senders).
    pub run_load: Vec<RunLoad>,
    /// Paths in each run of the run load.
    pub run_paths: usize,
    /// Delta rows stored in the end.
    pub delta_rows: i64,
    /// `pg_database_size` at the end.
    pub database_bytes: i64,
    /// The window queries.
    pub queries: Vec<Latency>,
    /// The collector process's peak resident memory (VmHWM), MiB.
    pub collector_peak_rss_mib: f64,
}

fn sampler_name(s: u32) -> String {
    format!("sampler-{s:02}")
}

fn token(s: u32) -> String {
    format!("bench-sweeps-token-{s:04}-0123456789")
}

/// Sampler `s`'s sweep number `n`: its share of the ports (36-port switches, GUIDs from
/// 0x1000), each counter grown by an amount of the port's per sweep.
fn sweep(settings: &SweepBenchSettings, s: u32, n: u64, at_unix_ns: u64) -> SweepUpload {
    let share = settings.ports.div_ceil(settings.samplers);
    let first = s * share;
    let last = (first + share).min(settings.ports);
    let ports = (first..last)
        .map(|p| {
            let grow = u64::from(p % 97 + 1) * n;
            PortUpload {
                guid: format!("0x{:016x}", 0x1000 + u64::from(p / 36)),
                switch: Some(format!("switch{}", p / 36)),
                lid: (1 + p / 36) as u16,
                port: (1 + p % 36) as u8,
                at_unix_ns: at_unix_ns + u64::from(p - first) * 1_000,
                counters: Some(SwitchPortCounters {
                    xmit_data_bytes: grow * 4_000_000_000,
                    rcv_data_bytes: grow * 3_999_000_000,
                    xmit_pkts: grow * 1_000_000,
                    rcv_pkts: grow * 999_000,
                    xmit_wait: grow * 1_000,
                    ..SwitchPortCounters::default()
                }),
                error: None,
            }
        })
        .collect();
    SweepUpload {
        sampler: sampler_name(s),
        sweep: n,
        start_unix_ns: at_unix_ns,
        spread_us: 800.0,
        ports,
    }
}

fn now_ns() -> u64 {
    u64::try_from(model::time::unix_ns(std::time::SystemTime::now())).unwrap_or(0)
}

/// What one sender did in a phase.
#[derive(Default)]
struct Sent {
    sweeps: u64,
    deltas: u64,
    bytes: u64,
    latencies_ms: Vec<f64>,
}

/// One phase: every sampler posts from sweep `from` on for `duration`, one a second when
/// `paced`, else back to back.
fn phase(
    settings: &SweepBenchSettings,
    collector: &CollectorChild,
    paced: bool,
    from: u64,
) -> Result<(Phase, u64), BenchError> {
    let started = Instant::now();
    let url = format!("http://{}/api/fabric/sweeps", collector.addr);
    let results: Vec<Result<Sent, BenchError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..settings.samplers)
            .map(|s| {
                let url = &url;
                scope.spawn(move || {
                    let client = http_client();
                    let mut sent = Sent::default();
                    let mut n = from;
                    while started.elapsed() < settings.duration {
                        let body = serde_json::to_vec(&sweep(settings, s, n, now_ns()))
                            .expect("a sweep serializes");
                        let t = Instant::now();
                        let response = client
                            .post(url)
                            .header("Authorization", format!("Bearer {}", token(s)))
                            .header("Content-Type", "application/json")
                            .send(&body[..]);
                        let mut response = response.map_err(|e| BenchError::Request {
                            request: format!("POST {url}"),
                            reason: e.to_string(),
                        })?;
                        let text = response.body_mut().read_to_string().unwrap_or_default();
                        if response.status().as_u16() != 201 {
                            return Err(BenchError::Request {
                                request: format!("POST {url}"),
                                reason: format!("{}: {text}", response.status()),
                            });
                        }
                        sent.latencies_ms.push(t.elapsed().as_secs_f64() * 1e3);
                        let answer: serde_json::Value =
                            serde_json::from_str(&text).unwrap_or_default();
                        sent.deltas += answer["deltas"].as_u64().unwrap_or(0);
                        sent.sweeps += 1;
                        sent.bytes += body.len() as u64;
                        n += 1;
                        if paced {
                            let next = Duration::from_secs(n - from);
                            std::thread::sleep(next.saturating_sub(started.elapsed()));
                        }
                    }
                    Ok(sent)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a sender thread"))
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut all = Sent::default();
    let mut last = from;
    for r in results {
        let r = r?;
        last = last.max(from + r.sweeps);
        all.sweeps += r.sweeps;
        all.deltas += r.deltas;
        all.bytes += r.bytes;
        all.latencies_ms.extend(r.latencies_ms);
    }
    let name = if paced {
        "paced, 1 sweep/s per sampler"
    } else {
        "unpaced"
    };
    let requests = all.latencies_ms.len();
    let post = Latency {
        request: "POST /api/fabric/sweeps".into(),
        requests,
        p50_ms: percentile(&mut all.latencies_ms, 0.5),
        p95_ms: percentile(&mut all.latencies_ms, 0.95),
        max_ms: percentile(&mut all.latencies_ms, 1.0),
        work: format!("{} ports", settings.ports.div_ceil(settings.samplers)),
    };
    Ok((
        Phase {
            name: name.into(),
            sweeps: all.sweeps,
            port_deltas: all.deltas,
            bytes: all.bytes,
            seconds,
            sweeps_per_s: all.sweeps as f64 / seconds,
            post,
        },
        last,
    ))
}

/// Run senders posting back to back for the phase's duration, from round `first` on, each
/// its own stripe of hosts in round order; the figures and the next round to post.
fn run_load(
    settings: &SweepBenchSettings,
    poster: &RunPoster,
    reports: &FleetReports,
    first: i64,
    name: &str,
) -> Result<(RunLoad, i64), BenchError> {
    let started = Instant::now();
    let clients = settings.run_clients.clamp(1, settings.run_hosts.max(1));
    let results: Vec<Result<(Vec<f64>, i64), BenchError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                scope.spawn(move || {
                    let client = http_client();
                    let mine: Vec<u32> =
                        (c..settings.run_hosts).step_by(clients as usize).collect();
                    let mut latencies_ms = Vec::new();
                    let mut round = first;
                    'rounds: loop {
                        for &h in &mine {
                            if started.elapsed() >= settings.duration {
                                break 'rounds;
                            }
                            let t = Instant::now();
                            poster.post(&client, h, round, reports.of_host(h))?;
                            latencies_ms.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                        round += 1;
                    }
                    Ok((latencies_ms, round + 1))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a run sender thread"))
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut ms = Vec::new();
    let mut next = first;
    for r in results {
        let (latencies, reached) = r?;
        ms.extend(latencies);
        next = next.max(reached);
    }
    let runs = ms.len() as u64;
    let post = Latency {
        request: "POST /api/runs".into(),
        requests: ms.len(),
        p50_ms: percentile(&mut ms, 0.5),
        p95_ms: percentile(&mut ms, 0.95),
        max_ms: percentile(&mut ms, 1.0),
        work: "one run".into(),
    };
    Ok((
        RunLoad {
            name: name.into(),
            runs,
            seconds,
            runs_per_s: runs as f64 / seconds,
            post,
        },
        next,
    ))
}

/// Times `GET path` `times` times.
fn query(
    collector: &CollectorChild,
    path: &str,
    times: usize,
    what: &str,
) -> Result<Latency, BenchError> {
    let client = http_client();
    let url = format!("http://{}{path}", collector.addr);
    let mut ms = Vec::with_capacity(times);
    let mut ports = 0;
    for _ in 0..times {
        let t = Instant::now();
        let mut r = client.get(&url).call().map_err(|e| BenchError::Request {
            request: format!("GET {path}"),
            reason: e.to_string(),
        })?;
        let text = r
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .unwrap_or_default();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        if r.status().as_u16() != 200 {
            return Err(BenchError::Request {
                request: format!("GET {path}"),
                reason: format!("{}: {text}", r.status()),
            });
        }
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        ports = v["ports"].as_array().map_or(0, Vec::len);
    }
    Ok(Latency {
        request: format!("GET /api/fabric/ports ({what})"),
        requests: times,
        p50_ms: percentile(&mut ms, 0.5),
        p95_ms: percentile(&mut ms, 0.95),
        max_ms: percentile(&mut ms, 1.0),
        work: format!("{ports} ports"),
    })
}

/// Runs the bench.
pub fn run(settings: &SweepBenchSettings) -> Result<SweepBench, BenchError> {
    let folder = tempfile::tempdir()?;
    let tokens = folder.path().join("tokens");
    let mut lines: String = (0..settings.samplers)
        .map(|s| format!("{} {}\n", sampler_name(s), token(s)))
        .collect();
    lines += &host_token_lines(settings.run_hosts);
    std::fs::write(&tokens, lines)?;
    let collector = CollectorChild::start(&settings.database, &tokens)?;
    let db = Database::connect(&settings.database)?;
    if db.count("fabric_sweeps")? > 0 {
        return Err(BenchError::NotEmpty(db.url.redacted()));
    }
    let reports = FleetReports::of(&settings.reports);
    let poster = RunPoster {
        url: format!("http://{}/api/runs", collector.addr),
        day_start: model::time::unix_ms(std::time::SystemTime::now()),
        cadence_ms: 1_000,
    };
    let mut run_loads = Vec::new();
    let mut round = 0;
    if settings.run_clients > 0 {
        let (alone, next) = run_load(settings, &poster, &reports, round, "alone")?;
        run_loads.push(alone);
        round = next;
    }
    let since_ms = model::time::unix_ms(std::time::SystemTime::now());
    let (mut paced, next) = std::thread::scope(|scope| -> Result<_, BenchError> {
        let runs = (settings.run_clients > 0).then(|| {
            scope.spawn(|| run_load(settings, &poster, &reports, round, "with paced sweeps"))
        });
        let paced = phase(settings, &collector, true, 1);
        if let Some(runs) = runs {
            run_loads.push(runs.join().expect("the run load thread")?.0);
        }
        paced
    })?;
    if settings.run_clients > 0 {
        paced.name += ", with the run load";
    }
    let (unpaced, _) = phase(settings, &collector, false, next)?;
    let until_ms = model::time::unix_ms(std::time::SystemTime::now()) + 1;
    // A job's window: the ports of its route (here 12, on switches across the fabric),
    // over the paced minute; and every port over everything stored.
    let route: Vec<String> = (0..12u32)
        .map(|i| {
            let p = i * settings.ports / 12;
            format!("switch{}/{}", p / 36, 1 + p % 36)
        })
        .collect();
    let window = format!(
        "/api/fabric/ports?since={since_ms}&until={until_ms}&ports={}",
        route.join(",")
    );
    let queries = vec![
        query(&collector, &window, 20, "12 ports of a route")?,
        query(
            &collector,
            &format!("/api/fabric/ports?since={since_ms}&until={until_ms}"),
            3,
            "every port",
        )?,
    ];
    Ok(SweepBench {
        simulated: true,
        samplers: settings.samplers,
        ports: settings.ports,
        phases: vec![paced, unpaced],
        run_load: run_loads,
        run_paths: serde_json::from_str::<serde_json::Value>(reports.of_host(2))
            .ok()
            .and_then(|r| r["paths"].as_array().map(Vec::len))
            .unwrap_or(0),
        delta_rows: db.count("fabric_port_deltas")?,
        database_bytes: db.size()?,
        queries,
        collector_peak_rss_mib: collector.peak_rss_mib(),
    })
}

/// The result as a table.
pub fn table(b: &SweepBench) -> String {
    let mut out = format!(
        "collector ingesting switch-port sweeps (synthetic counters): {} samplers, {} ports \
         ({} each)\n",
        b.samplers,
        b.ports,
        b.ports.div_ceil(b.samplers)
    );
    for p in &b.phases {
        out += &format!(
            "  {:<44} {:>6} sweeps in {:>5.1} s = {:>7.1} sweeps/s, {:>8} deltas, {:>6.1} MB; \
             post p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms\n",
            p.name,
            p.sweeps,
            p.seconds,
            p.sweeps_per_s,
            p.port_deltas,
            p.bytes as f64 / 1e6,
            p.post.p50_ms,
            p.post.p95_ms,
            p.post.max_ms
        );
    }
    for r in &b.run_load {
        out +=
            &format!(
            "  runs ({} paths each), {:<23} {:>6} runs in {:>5.1} s = {:>7.1} runs/s; post p50 \
             {:.1} ms, p95 {:.1} ms, max {:.1} ms\n",
            b.run_paths, r.name, r.runs, r.seconds, r.runs_per_s, r.post.p50_ms, r.post.p95_ms,
            r.post.max_ms
        );
    }
    if let [alone, loaded] = &b.run_load[..] {
        out += &format!(
            "  run ingest with the sweeps: {:.2} of its rate alone\n",
            loaded.runs_per_s / alone.runs_per_s
        );
    }
    for q in &b.queries {
        out += &format!(
            "  {:<45} x{:<3} p50 {:>8.1} ms, p95 {:>8.1} ms, max {:>8.1} ms ({})\n",
            q.request, q.requests, q.p50_ms, q.p95_ms, q.max_ms, q.work
        );
    }
    out += &format!(
        "  stored: {} delta rows, database {:.1} MB; collector peak RSS {:.0} MiB\n",
        b.delta_rows,
        b.database_bytes as f64 / 1e6,
        b.collector_peak_rss_mib
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samplers_split_the_ports_once_each() {
        let settings = SweepBenchSettings {
            database: String::new(),
            samplers: 4,
            ports: 3888,
            duration: Duration::ZERO,
            run_clients: 0,
            run_hosts: 0,
            reports: SimulatedReports {
                model: "dgx-a100".to_string(),
                variants: Vec::new(),
            },
        };
        let mut seen = std::collections::HashSet::new();
        for s in 0..4 {
            let sweep = sweep(&settings, s, 1, 0);
            assert_eq!(sweep.ports.len(), 972);
            for p in &sweep.ports {
                assert!(seen.insert((p.guid.clone(), p.port)), "{p:?} twice");
            }
            // What the collector checks: a valid body.
            crate::fabric::upload::parse(&serde_json::to_vec(&sweep).unwrap()).unwrap();
        }
        assert_eq!(seen.len(), 3888);
    }
}
