//! `hostping bench collector`: the collector's ingest rate and its read latency with a fleet's
//! history loaded (issue 14, part 6).
//!
//! 1. A `hostping collector` child on the given (empty) PostgreSQL database, with a token per
//!    simulated host.
//! 2. **Ingest**: one day of runs of every host (`--hosts` x 86400 s / `--cadence`) posted
//!    through `POST /api/runs` by `--clients` concurrent senders, each host's runs in time
//!    order, with the agent's own request body (`fleet_api::upload::RunUpload`). Reports come from the
//!    virtual host model (simulated, labelled so): healthy ones, and on a few hosts a failed
//!    and a degraded link, so diagnoses and causes are stored too. The caller makes them
//!    ([`SimulatedReports`]): the fleet server links no virtual host.
//! 3. **History**: the other `--days - 1` days are copies of the ingested day, shifted back by
//!    whole days inside PostgreSQL (INSERT ... SELECT). They are real rows of the collector's
//!    schema, made without 2 M more HTTP requests; the ingest rate is measured in step 2 only.
//! 4. **Reads**, after VACUUM ANALYZE: the requests the web UI makes (the fleet overview, a
//!    host page, one path's timeline over the whole history) for `--queries` hosts, with
//!    p50/p95/max, and the work each answer carried (hosts, paths, points).

use crate::database_url::DatabaseUrl;
use fleet_api::upload::RunUpload;
use model::Report;
use serde::Serialize;
use serde_json::value::RawValue;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// What the bench is asked to do.
#[derive(Debug, Clone)]
pub struct BenchSettings {
    /// An empty PostgreSQL database the bench may fill.
    pub database: String,
    /// Simulated hosts.
    pub hosts: u32,
    /// Days of history in the end (the first ingested, the rest copied).
    pub days: u32,
    /// Time between two runs of one host (the agent's host-status cadence).
    pub cadence: Duration,
    /// Concurrent senders during ingest.
    pub clients: u32,
    /// Hosts whose pages and timelines are read.
    pub queries: u32,
    /// The reports the simulated hosts send.
    pub reports: SimulatedReports,
}

/// The reports simulated hosts send, made by the caller from the virtual host model (the
/// collector links no virtual host: `hostping bench collector` makes them with `check`).
#[derive(Debug, Clone)]
pub struct SimulatedReports {
    /// The virtual host model's name.
    pub model: String,
    /// [`HEALTHY_VARIANTS`] healthy reports (different noise seeds), then one with a link
    /// down to a tenth of its capacity and one with a link at half.
    pub variants: Vec<Report>,
}

/// Why the bench stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The database, or a statement on it.
    #[error("database {url}: {reason}")]
    Database {
        /// The URL given, redacted.
        url: String,
        /// Why.
        reason: String,
    },
    /// The database already holds runs or sweeps: the bench would mix its data with them.
    #[error("database {0} already holds runs or sweeps: give the bench an empty database (createdb hostping_bench)")]
    NotEmpty(String),
    /// The collector child would not start.
    #[error("the collector did not start: {0}")]
    Collector(String),
    /// A request failed or was refused.
    #[error("{request}: {reason}")]
    Request {
        /// Method and path.
        request: String,
        /// Status or transport error.
        reason: String,
    },
    /// Files of the bench (its tokens file).
    #[error("bench files: {0}")]
    Io(#[from] std::io::Error),
}

/// The ingest figures.
#[derive(Debug, Clone, Serialize)]
pub struct Ingest {
    /// Runs posted and stored (201).
    pub runs: u64,
    /// Request bodies, bytes.
    pub bytes: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Runs stored per second.
    pub runs_per_s: f64,
}

/// What the ingested day takes in PostgreSQL, per table: `pg_total_relation_size` (heap,
/// TOAST, indexes) after it less before it, and the rows it added.
#[derive(Debug, Clone, Serialize)]
pub struct TableGrowth {
    /// The table.
    pub table: String,
    /// Whether it grows with every run (retention deletes its rows, crate::retention);
    /// the others are bounded per host.
    pub per_run: bool,
    /// Bytes added.
    pub bytes: i64,
    /// Rows added.
    pub rows: i64,
}

/// The database's growth over the ingested day.
#[derive(Debug, Clone, Serialize)]
pub struct Growth {
    /// Per table.
    pub tables: Vec<TableGrowth>,
    /// The per-run tables' bytes a host a day: what `--keep-runs` multiplies.
    pub bytes_per_host_day: f64,
}

/// The tables a run writes: those that grow with every run, then those bounded per host.
const GROWTH_TABLES: [(&str, bool); 6] = [
    ("runs", true),
    ("run_paths", true),
    ("run_links", true),
    ("diagnoses", true),
    ("host_samples", false),
    ("hosts", false),
];

/// The history figures.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    /// Runs stored in the end.
    pub runs: i64,
    /// Path measurements stored.
    pub paths: i64,
    /// Seconds to copy the days and analyse.
    pub seconds: f64,
    /// `pg_database_size` at the end.
    pub database_bytes: i64,
}

/// One kind of request's latencies.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// What was asked, e.g. `GET /api/hosts`.
    pub request: String,
    /// Requests timed.
    pub requests: usize,
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile, milliseconds.
    pub p95_ms: f64,
    /// Slowest, milliseconds.
    pub max_ms: f64,
    /// What one answer carried, e.g. "1000 hosts".
    pub work: String,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct CollectorBench {
    /// Always true: the runs are of a virtual host.
    pub simulated: bool,
    /// The model.
    pub model: String,
    /// Paths per run.
    pub paths_per_run: usize,
    /// Hosts.
    pub hosts: u32,
    /// Days of history.
    pub days: u32,
    /// Seconds between two runs of a host.
    pub cadence_s: f64,
    /// Concurrent senders.
    pub clients: u32,
    /// Step 2.
    pub ingest: Ingest,
    /// Step 2's day on disk.
    pub growth: Growth,
    /// Step 3.
    pub history: History,
    /// Step 4.
    pub latency: Vec<Latency>,
    /// The collector process's peak resident memory (VmHWM), MiB.
    pub collector_peak_rss_mib: f64,
}

/// What the bench reports as it goes: a phase's name and its size, then progress in it.
pub trait Progress {
    /// A phase starts: `total` steps.
    fn phase(&self, name: &str, total: u64);
    /// `done` steps of the phase are done.
    fn at(&self, done: u64);
}

/// The report variants hosts send: index 0..HEALTHY are healthy (different noise seeds), then
/// a link down to a tenth of its capacity and one at half (a few bad hosts in a large fleet).
pub const HEALTHY_VARIANTS: u64 = 6;

fn reports(reports: &SimulatedReports) -> Vec<serde_json::Value> {
    reports
        .variants
        .iter()
        .map(|r| serde_json::to_value(r).expect("a report serialises"))
        .collect()
}

/// Which variant host `h` sends: one host in 50 has a failed link, one a degraded link.
fn variant_of(h: u32) -> usize {
    match h % 50 {
        0 => HEALTHY_VARIANTS as usize,
        1 => HEALTHY_VARIANTS as usize + 1,
        _ => (h as u64 % HEALTHY_VARIANTS) as usize,
    }
}

/// Every simulated agent's database instance id.
const INSTANCE: &str = "bench-instance";

/// Forty hosts a rack, as in a row of GPU racks.
fn rack_of(h: u32) -> String {
    format!("rack-{:03}", h / 40)
}

fn host_name(h: u32) -> String {
    format!("bench-{h:05}")
}

fn token(h: u32) -> String {
    format!("bench-token-{h:05}-0123456789abcdef")
}

/// A `hostping collector` child, killed on drop.
pub(crate) struct CollectorChild {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl CollectorChild {
    pub(crate) fn start(database: &str, tokens: &Path) -> Result<CollectorChild, BenchError> {
        let exe = std::env::current_exe()?;
        // The URL through the environment, where `ps` does not show its password.
        let mut child = Command::new(exe)
            // Every run kept: the history copied is the bench's to read.
            .args([
                "collector",
                "--listen",
                "127.0.0.1:0",
                "--keep-runs",
                "forever",
            ])
            .env(crate::database_url::ENV, database)
            .arg("--tokens")
            .arg(tokens)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut said = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            else {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BenchError::Collector(said.join("; ")));
            };
            if let Some(rest) = line.split("serving http://").nth(1) {
                let addr = rest.split('/').next().and_then(|a| a.parse().ok());
                if let Some(addr) = addr {
                    return Ok(CollectorChild { child, addr });
                }
            }
            said.push(line);
        }
    }

    /// VmHWM of the child, MiB.
    pub(crate) fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

impl Drop for CollectorChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn http_client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// Runs the bench.
pub fn run(
    settings: &BenchSettings,
    progress: &dyn Progress,
) -> Result<CollectorBench, BenchError> {
    let db = Database::connect(&settings.database)?;
    if db.holds_runs()? {
        return Err(BenchError::NotEmpty(db.url.redacted()));
    }
    let variants = reports(&settings.reports);
    let paths_per_run = variants[0]["paths"].as_array().map_or(0, Vec::len);
    let folder = tempfile::tempdir()?;
    let tokens = folder.path().join("tokens");
    std::fs::write(&tokens, host_token_lines(settings.hosts))?;
    let collector = CollectorChild::start(&settings.database, &tokens)?;

    let cadence_ms = settings.cadence.as_millis().max(1) as i64;
    let runs_per_day = (86_400_000 / cadence_ms).max(1);
    let now_ms = model::time::unix_ms(std::time::SystemTime::now());
    let day_start = now_ms - runs_per_day * cadence_ms;
    let empty = db.table_sizes()?;
    let ingest = ingest_day(
        settings,
        &collector,
        &variants,
        runs_per_day,
        day_start,
        progress,
    )?;

    let growth = db.growth(&empty, settings.hosts)?;

    let copied = Instant::now();
    progress.phase(
        "copying history",
        u64::from(settings.days.saturating_sub(1)),
    );
    for day in 1..settings.days {
        db.copy_day(day, runs_per_day)?;
        progress.at(u64::from(day));
    }
    db.analyze()?;
    let history = History {
        runs: db.count("runs")?,
        paths: db.scalar("SELECT COALESCE(sum(cardinality(rnic)), 0)::int8 FROM run_paths")?,
        seconds: copied.elapsed().as_secs_f64(),
        database_bytes: db.size()?,
    };

    let since = day_start - i64::from(settings.days.saturating_sub(1)) * 86_400_000;
    let latency = read_latency(settings, &collector, &variants, since, progress)?;
    Ok(CollectorBench {
        simulated: true,
        model: settings.reports.model.clone(),
        paths_per_run,
        hosts: settings.hosts,
        days: settings.days,
        cadence_s: settings.cadence.as_secs_f64(),
        clients: settings.clients,
        ingest,
        growth,
        history,
        latency,
        collector_peak_rss_mib: collector.peak_rss_mib(),
    })
}

/// Step 2: every host's runs of one day, posted in time order by `clients` senders.
fn ingest_day(
    settings: &BenchSettings,
    collector: &CollectorChild,
    variants: &[serde_json::Value],
    runs_per_day: i64,
    day_start: i64,
    progress: &dyn Progress,
) -> Result<Ingest, BenchError> {
    let total = runs_per_day as u64 * u64::from(settings.hosts);
    progress.phase("ingesting one day", total);
    let stored = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let url = format!("http://{}/api/runs", collector.addr);
    let started = Instant::now();
    let clients = settings.clients.clamp(1, settings.hosts.max(1));
    let texts = &FleetReports::new(variants);
    let poster = RunPoster {
        url,
        day_start,
        cadence_ms: settings.cadence.as_millis() as i64,
    };
    let poster = &poster;
    let outcome = std::thread::scope(|scope| {
        let senders: Vec<_> = (0..clients)
            .map(|c| {
                let (stored, bytes) = (stored.clone(), bytes.clone());
                scope.spawn(move || -> Result<(), BenchError> {
                    let client = http_client();
                    let mine: Vec<u32> = (c..settings.hosts).step_by(clients as usize).collect();
                    for k in 0..runs_per_day {
                        for &h in &mine {
                            let sent = poster.post(&client, h, k, texts.of_host(h))?;
                            stored.fetch_add(1, Ordering::Relaxed);
                            bytes.fetch_add(sent as u64, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        while senders.iter().any(|s| !s.is_finished()) {
            progress.at(stored.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(200));
        }
        senders
            .into_iter()
            .map(|s| s.join().expect("a sender thread"))
            .collect::<Result<Vec<()>, BenchError>>()
    });
    outcome?;
    let seconds = started.elapsed().as_secs_f64();
    let runs = stored.load(Ordering::Relaxed);
    progress.at(runs);
    Ok(Ingest {
        runs,
        bytes: bytes.load(Ordering::Relaxed),
        seconds,
        runs_per_s: runs as f64 / seconds,
    })
}

/// Posts simulated hosts' runs as their agents do.
pub(crate) struct RunPoster {
    /// `http://ADDR/api/runs`.
    pub url: String,
    /// Unix ms of run 0 of every host.
    pub day_start: i64,
    /// Time between two runs of one host, ms.
    pub cadence_ms: i64,
}

impl RunPoster {
    /// Posts run `k` of host `h` (its report as ready `text`); the bytes sent.
    pub fn post(
        &self,
        client: &ureq::Agent,
        h: u32,
        k: i64,
        text: &str,
    ) -> Result<usize, BenchError> {
        // The agent's body, with the report as ready text so the senders do not serialise
        // 20 kB per run beside the collector.
        let upload = RunUpload {
            host: host_name(h),
            id: k + 1,
            instance: INSTANCE.into(),
            rack: Some(rack_of(h)),
            trigger: "idle".into(),
            started_unix_ms: self.day_start + k * self.cadence_ms,
            report: RawValue::from_string(text.to_string()).expect("a report serialises"),
        };
        let body = serde_json::to_vec(&upload).expect("a body serialises");
        let request = format!("POST /api/runs ({}, run {})", host_name(h), k + 1);
        let mut answer = client
            .post(&self.url)
            .header("Authorization", format!("Bearer {}", token(h)))
            .header("Content-Type", "application/json")
            .send(&body[..])
            .map_err(|e| BenchError::Request {
                request: request.clone(),
                reason: e.to_string(),
            })?;
        if answer.status().as_u16() != 201 {
            let text = answer.body_mut().read_to_string().unwrap_or_default();
            return Err(BenchError::Request {
                request,
                reason: format!("{} {text}", answer.status()),
            });
        }
        Ok(body.len())
    }
}

/// The report texts simulated hosts send, and which one host `h` sends.
pub(crate) struct FleetReports {
    texts: Vec<String>,
}

impl FleetReports {
    /// The texts of `simulated`.
    pub fn of(simulated: &SimulatedReports) -> FleetReports {
        FleetReports::new(&reports(simulated))
    }

    fn new(variants: &[serde_json::Value]) -> FleetReports {
        FleetReports {
            texts: variants.iter().map(|v| v.to_string()).collect(),
        }
    }

    /// Host `h`'s report.
    pub fn of_host(&self, h: u32) -> &str {
        &self.texts[variant_of(h)]
    }
}

/// The `"HOST TOKEN"` lines of `hosts` simulated hosts, for the collector's tokens file.
pub(crate) fn host_token_lines(hosts: u32) -> String {
    (0..hosts)
        .map(|h| format!("{} {}\n", host_name(h), token(h)))
        .collect()
}

/// A read request's path for one host of the fleet (by its index).
type PathOfHost<'a> = Box<dyn Fn(u32) -> String + 'a>;

/// Step 4: the web UI's requests for `queries` hosts spread over the fleet.
fn read_latency(
    settings: &BenchSettings,
    collector: &CollectorChild,
    variants: &[serde_json::Value],
    since: i64,
    progress: &dyn Progress,
) -> Result<Vec<Latency>, BenchError> {
    let client = http_client();
    let base = format!("http://{}", collector.addr);
    let path = &variants[0]["paths"][0];
    let (rnic, endpoint) = (
        path["rnic"].as_str().unwrap_or_default().to_owned(),
        path["endpoint"].as_str().unwrap_or_default().to_owned(),
    );
    let requests: Vec<(&str, PathOfHost, &str)> = vec![
        (
            "GET /api/hosts (fleet overview)",
            Box::new(|_| "/api/hosts".into()),
            "hosts",
        ),
        (
            "GET /api/hosts/{host}/runs?limit=1 (host page: latest report)",
            Box::new(|h| format!("/api/hosts/{}/runs?limit=1", host_name(h))),
            "runs",
        ),
        (
            "GET /api/hosts/{host}/baseline (host page: baselines)",
            Box::new(|h| format!("/api/hosts/{}/baseline", host_name(h))),
            "paths",
        ),
        (
            "GET /api/hosts/{host}/timeline (one path, whole history)",
            Box::new(move |h| {
                format!(
                    "/api/hosts/{}/timeline?rnic={rnic}&endpoint={endpoint}&since_unix_ms={since}&limit=10000",
                    host_name(h)
                )
            }),
            "points",
        ),
    ];
    progress.phase(
        "reading",
        u64::from(settings.queries) * requests.len() as u64,
    );
    let mut rows = Vec::new();
    let mut done = 0;
    for (what, path_of, unit) in &requests {
        let mut times = Vec::new();
        let mut work = 0usize;
        for q in 0..settings.queries {
            // Hosts spread over the fleet by a stride coprime with any realistic fleet size.
            let h = ((u64::from(q) * 7919) % u64::from(settings.hosts.max(1))) as u32;
            let path = path_of(h);
            let started = Instant::now();
            let mut answer =
                client
                    .get(format!("{base}{path}"))
                    .call()
                    .map_err(|e| BenchError::Request {
                        request: format!("GET {path}"),
                        reason: e.to_string(),
                    })?;
            let text = answer.body_mut().read_to_string().unwrap_or_default();
            let took = started.elapsed();
            if answer.status().as_u16() != 200 {
                return Err(BenchError::Request {
                    request: format!("GET {path}"),
                    reason: format!(
                        "{} {}",
                        answer.status(),
                        text.chars().take(200).collect::<String>()
                    ),
                });
            }
            times.push(took.as_secs_f64() * 1000.0);
            work = work.max(items(&text, unit));
            done += 1;
            progress.at(done);
        }
        rows.push(Latency {
            request: (*what).to_owned(),
            requests: times.len(),
            p50_ms: percentile(&mut times, 0.50),
            p95_ms: percentile(&mut times, 0.95),
            max_ms: percentile(&mut times, 1.0),
            work: format!("{work} {unit}"),
        });
    }
    Ok(rows)
}

/// How many items an answer carried: a top-level array's length, or the array under `paths`
/// or `points`.
fn items(text: &str, unit: &str) -> usize {
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    match &value {
        serde_json::Value::Array(a) => a.len(),
        other => other[unit].as_array().map_or(0, Vec::len),
    }
}

/// The `q` quantile (nearest rank) of `values`, which it sorts.
pub(crate) fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// The bench's own connection to the database (to copy history and read sizes).
pub(crate) struct Database {
    pub(crate) url: DatabaseUrl,
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Database {
    pub(crate) fn connect(url: &str) -> Result<Database, BenchError> {
        let url = DatabaseUrl::new(url);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let connected =
            runtime.block_on(tokio_postgres::connect(url.expose(), tokio_postgres::NoTls));
        let (client, connection) = match connected {
            Ok(c) => c,
            Err(e) => {
                return Err(BenchError::Database {
                    url: url.redacted(),
                    reason: url.explain(&e),
                })
            }
        };
        runtime.spawn(connection);
        Ok(Database {
            url,
            runtime,
            client,
        })
    }

    fn error(&self, e: tokio_postgres::Error) -> BenchError {
        BenchError::Database {
            url: self.url.redacted(),
            reason: self.url.explain(&e),
        }
    }

    fn batch(&self, sql: &str) -> Result<(), BenchError> {
        self.runtime
            .block_on(self.client.batch_execute(sql))
            .map_err(|e| self.error(e))
    }

    fn scalar(&self, sql: &str) -> Result<i64, BenchError> {
        self.runtime
            .block_on(self.client.query_one(sql, &[]))
            .map(|row| row.get(0))
            .map_err(|e| self.error(e))
    }

    fn holds_runs(&self) -> Result<bool, BenchError> {
        let exists = self.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'runs'")?;
        Ok(exists > 0 && self.scalar("SELECT count(*) FROM (SELECT 1 FROM runs LIMIT 1) r")? > 0)
    }

    pub(crate) fn count(&self, table: &str) -> Result<i64, BenchError> {
        self.scalar(&format!("SELECT count(*) FROM {table}"))
    }

    /// [`GROWTH_TABLES`]' sizes and row counts, in their order.
    fn table_sizes(&self) -> Result<Vec<(i64, i64)>, BenchError> {
        GROWTH_TABLES
            .iter()
            .map(|(t, _)| {
                Ok((
                    self.scalar(&format!("SELECT pg_total_relation_size('{t}')"))?,
                    self.count(t)?,
                ))
            })
            .collect()
    }

    /// What the tables grew by since `before` ([`Database::table_sizes`]), one day of
    /// `hosts`' runs.
    fn growth(&self, before: &[(i64, i64)], hosts: u32) -> Result<Growth, BenchError> {
        let tables: Vec<TableGrowth> = GROWTH_TABLES
            .iter()
            .zip(self.table_sizes()?.iter().zip(before))
            .map(
                |((table, per_run), ((bytes, rows), (bytes0, rows0)))| TableGrowth {
                    table: (*table).to_owned(),
                    per_run: *per_run,
                    bytes: bytes - bytes0,
                    rows: rows - rows0,
                },
            )
            .collect();
        let per_run: i64 = tables.iter().filter(|t| t.per_run).map(|t| t.bytes).sum();
        Ok(Growth {
            bytes_per_host_day: per_run as f64 / f64::from(hosts.max(1)),
            tables,
        })
    }

    pub(crate) fn size(&self) -> Result<i64, BenchError> {
        self.scalar("SELECT pg_database_size(current_database())")
    }

    fn analyze(&self) -> Result<(), BenchError> {
        self.batch("VACUUM ANALYZE")
    }

    /// Copies the ingested day (agent run ids 1..=runs_per_day) `day` days back, with agent
    /// run ids shifted past it, then its paths, links and diagnoses onto the new runs.
    fn copy_day(&self, day: u32, runs_per_day: i64) -> Result<(), BenchError> {
        let shift_ms = i64::from(day) * 86_400_000;
        let id_offset = i64::from(day) * runs_per_day;
        self.batch(&format!(
            "BEGIN;
             CREATE TEMP TABLE copied ON COMMIT DROP AS
                 SELECT id AS old_id, nextval(pg_get_serial_sequence('runs', 'id')) AS new_id
                 FROM runs WHERE agent_run_id <= {runs_per_day};
             INSERT INTO runs (id, host_id, instance, agent_run_id, trigger, started_unix_ms,
                               kind, kind_known, healthy, mode, report)
                 SELECT c.new_id, r.host_id, r.instance, r.agent_run_id + {id_offset}, r.trigger,
                        r.started_unix_ms - {shift_ms}, r.kind, r.kind_known, r.healthy, r.mode,
                        r.report
                 FROM copied c JOIN runs r ON r.id = c.old_id;
             INSERT INTO run_paths (run_id, host_id, started_unix_ms, agent_run_id, rnic,
                                    endpoint, latency_us, bandwidth_gbps, status)
                 SELECT c.new_id, p.host_id, p.started_unix_ms - {shift_ms},
                        p.agent_run_id + {id_offset}, p.rnic, p.endpoint, p.latency_us,
                        p.bandwidth_gbps, p.status
                 FROM copied c JOIN run_paths p ON p.run_id = c.old_id;
             INSERT INTO run_links (run_id, link, kind, status, abnormal_cnt)
                 SELECT c.new_id, l.link, l.kind, l.status, l.abnormal_cnt
                 FROM copied c JOIN run_links l ON l.run_id = c.old_id;
             INSERT INTO diagnoses (run_id, host_id, cause, links, rnic, evidence)
                 SELECT c.new_id, d.host_id, d.cause, d.links, d.rnic, d.evidence
                 FROM copied c JOIN diagnoses d ON d.run_id = c.old_id;
             -- the copies are older than the latest run: only the count changes
             UPDATE hosts SET runs = runs + {runs_per_day};
             COMMIT;"
        ))
    }
}

/// The table `hostping bench collector` prints.
pub fn table(b: &CollectorBench) -> String {
    let mut out = format!(
        "collector with {} simulated hosts of {} ({} paths a run), one run per host every {:.0} s\n\
         ingest (one day through POST /api/runs, {} senders):\n  \
         {} runs, {:.1} MB of bodies in {:.1} s: {:.0} runs/s\n\
         {}\
         history ({} days; days 2-{} copied in PostgreSQL):\n  \
         {} runs, {} path measurements, database {:.2} GB, copied and analysed in {:.0} s\n\
         reads ({} hosts each):\n",
        b.hosts,
        b.model,
        b.paths_per_run,
        b.cadence_s,
        b.clients,
        b.ingest.runs,
        b.ingest.bytes as f64 / 1e6,
        b.ingest.seconds,
        b.ingest.runs_per_s,
        growth_lines(&b.growth),
        b.days,
        b.days,
        b.history.runs,
        b.history.paths,
        b.history.database_bytes as f64 / 1e9,
        b.history.seconds,
        b.latency.first().map_or(0, |l| l.requests),
    );
    for l in &b.latency {
        out += &format!(
            "  {:<62} p50 {:>7.1} ms  p95 {:>7.1} ms  max {:>7.1} ms  ({})\n",
            l.request, l.p50_ms, l.p95_ms, l.max_ms, l.work
        );
    }
    out += &format!(
        "collector peak resident memory: {:.1} MiB\n",
        b.collector_peak_rss_mib
    );
    out
}

/// The ingested day's growth, a line per table and the figure a host a day.
fn growth_lines(g: &Growth) -> String {
    let mut out =
        "growth over the ingested day (pg_total_relation_size after less before):\n".to_owned();
    for t in &g.tables {
        out += &format!(
            "  {:<13} {:>12} bytes {:>9} rows  {}\n",
            t.table,
            t.bytes,
            t.rows,
            if t.per_run {
                "per run"
            } else {
                "bounded per host"
            }
        );
    }
    out + &format!(
        "  per-run tables: {:.0} bytes a host a day ({:.2} MB)\n",
        g.bytes_per_host_day,
        g.bytes_per_host_day / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut v, 0.95), 95.0);
        assert_eq!(percentile(&mut v, 0.5), 50.0);
        assert_eq!(percentile(&mut v, 1.0), 100.0);
        assert_eq!(percentile(&mut [7.0], 0.95), 7.0);
        assert!(percentile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn one_host_in_fifty_is_failed_and_one_degraded() {
        let variants: Vec<usize> = (0..1000).map(variant_of).collect();
        let failed = variants
            .iter()
            .filter(|&&v| v == HEALTHY_VARIANTS as usize)
            .count();
        let degraded = variants
            .iter()
            .filter(|&&v| v == HEALTHY_VARIANTS as usize + 1)
            .count();
        assert_eq!((failed, degraded), (20, 20));
    }
}
