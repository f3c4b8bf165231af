//! Jobs' collectives read from a Prometheus server (`hostping collector ... --prometheus
//! URL`, DESIGN 4.8, issue 39 item 6): clusters that run NCCL's Inspector plugin in its
//! textfile mode (`NCCL_INSPECTOR_PROM_DUMP=1`) have node_exporter serve the files and
//! Prometheus scrape them. Every [`POLL_EVERY`] the collector asks that Prometheus for the
//! plugin's `nccl_*` series over its HTTP API, makes them records (series.rs), summarises
//! them per rank and closed bucket as an agent does (`analyze::collectives::summarize`)
//! and stores the summaries where agents' posts go (crate::collectives, `host`
//! [`PROVENANCE`]). The symptom, the slow-job watch (crate::slow_jobs, woken as by a
//! post), `GET /api/jobs`, the job's series and its verdict read them as they read an
//! agent's: there is no second read path.
//!
//! The query: `/api/v1/query` of the raw range selector `{__name__=~"nccl_..."}[W]` at
//! the poll's time, rather than `/api/v1/query_range`. Each collective is its own series
//! (`coll_sn` and `timestamp` are labels) that lives one dump interval; a range selector
//! returns each of its raw samples once, every series with a sample in the window,
//! whereas `query_range` evaluates an instant query at each step (repeating a sample at
//! every step for the 5-minute lookback, or missing a series that lived between two steps
//! of a coarser step).
//!
//! Buckets: a collective's time is its `timestamp` label (the plugin's dump time), and its
//! samples reach Prometheus one scrape interval after the dump. A bucket is read once a
//! width and [`LAG_MARGIN_S`] have passed since its end, and each bucket once: a cursor
//! remembers the buckets stored, and each poll reads from it to now (every sample there
//! was scraped at or after its collective's time, so a bucket after the cursor is read
//! whole). The width (`--prometheus-bucket`, a minute by default) must hold a scrape
//! interval and, to be judged, a dump or two per rank: the plugin dumps at most every 30 s
//! in this mode (`inspectorPromValidateInterval`), each dump a rank's newest collective of
//! each communicator. A collector that starts reads the last [`BACKFILL_S`] back.
//!
//! Bounded: one query a poll, over at most [`MAX_WINDOW_S`] (a Prometheus down for longer
//! costs the older buckets), read within [`REQUEST_TIMEOUT`], at most [`MAX_BODY`] bytes
//! and [`MAX_SERIES`] series (the rest counted, not read). A Prometheus that is down, slow
//! or answers what is not a matrix counts an error (`GET /metrics`), logs a line naming
//! its URL and is asked again at the next poll from the same cursor; nothing stored is
//! touched.
//!
//! | path | what |
//! |---|---|
//! | `GET /metrics` | `hostping_collector_prometheus_errors_total`, `..._series_total` read, `..._summaries_total` stored, `..._skipped_total{why}`: `bad_series`, `bad_samples` (`NaN`, `+Inf`), `over_cap`, `bad_records` (a collective missing a series or a label), `no_job`, `unknown_version` (a later plugin's layout, `version` not v4) |

mod response;
mod series;
mod url;

pub use response::{parse_matrix, Matrix, ResponseError, Series, Skipped};
pub use series::{job_records, JobRecords, RecordsSkipped};
pub use url::{PrometheusUrl, UrlError};

use crate::collectives::{check_job, Posted};
use deadpool_postgres::Pool;
use fleet_api::collectives::{CollectivesUpload, JobCollectives};
use model::inspector::{CollectiveRecord, RankSummary, TEXTFILE_METRICS};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The `host` the summaries read from Prometheus are stored under (agents store theirs
/// under their own names): where they came from.
pub const PROVENANCE: &str = "prometheus";
/// How often Prometheus is asked.
pub const POLL_EVERY: Duration = Duration::from_secs(5);
/// The longest one question may take, connecting included: a slow Prometheus is given up
/// on and asked again at the next poll.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The most series one answer is read of: a 4,096-GPU cluster's dumps of four
/// communicators, three series each, over two minutes at the plugin's 30 s is about
/// 200,000; a quarter of that keeps one answer to some 25 MB.
pub const MAX_SERIES: usize = 50_000;
/// The most bytes one answer is read of (a series is about 500 bytes).
pub const MAX_BODY: u64 = 64 << 20;
/// The longest window one question reads back.
pub const MAX_WINDOW_S: f64 = 900.0;
/// How far back a starting collector reads: the symptom's earlier level.
pub const BACKFILL_S: f64 = 600.0;
/// Past a bucket's end plus its width: the `timestamp` label is cut to the second, and
/// node_exporter reads the files as it is scraped.
pub const LAG_MARGIN_S: f64 = 2.0;
/// The buckets' default width, seconds: two of the plugin's dumps in this mode.
pub const DEFAULT_BUCKET_S: f64 = 60.0;

/// Where and how jobs' collectives are read from Prometheus.
#[derive(Clone, Debug)]
pub struct PrometheusSource {
    /// The server.
    pub url: PrometheusUrl,
    /// The buckets' width, seconds (`--prometheus-bucket`).
    pub bucket_s: f64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Why {
    why: &'static str,
}

/// The reads' own series, for `GET /metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    errors: Counter,
    series: Counter,
    summaries: Counter,
    skipped: Family<Why, Counter>,
}

impl Metrics {
    /// Registers the series in `registry`.
    pub fn register(registry: &mut Registry) -> Arc<Metrics> {
        let m = Arc::new(Metrics::default());
        registry.register(
            "hostping_collector_prometheus_errors",
            "Reads of jobs' collectives from --prometheus that failed (down, slow, an answer not understood, the database refused): asked again at the next poll",
            m.errors.clone(),
        );
        registry.register(
            "hostping_collector_prometheus_series",
            "Series of the Inspector plugin read from --prometheus",
            m.series.clone(),
        );
        registry.register(
            "hostping_collector_prometheus_summaries",
            "Per-rank summaries stored from what --prometheus answered",
            m.summaries.clone(),
        );
        registry.register(
            "hostping_collector_prometheus_skipped",
            "What --prometheus answered that was not used, by why",
            m.skipped.clone(),
        );
        m
    }

    fn skipped(&self, why: &'static str, n: u64) {
        if n > 0 {
            self.skipped.get_or_create(&Why { why }).inc_by(n);
        }
    }
}

/// Why one poll stored nothing (the log line names the endpoint asked).
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// No answer (refused, reset, timed out, TLS).
    #[error("{0}")]
    Request(String),
    /// An answer other than 200.
    #[error("HTTP {status}: {text}")]
    Status {
        /// Its status.
        status: u16,
        /// The start of its body.
        text: String,
    },
    /// An answer that is not a matrix.
    #[error(transparent)]
    Response(#[from] ResponseError),
    /// The database.
    #[error("the database: {0}")]
    Database(String),
}

/// Reads `source` until the process stops, storing into `pool` and waking the slow-job
/// watch through `posted`; each failed poll counted in `metrics` and told to `log`.
pub async fn poll_loop(
    pool: Pool,
    source: PrometheusSource,
    posted: Arc<Posted>,
    metrics: Arc<Metrics>,
    log: impl Fn(String),
) {
    let client: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_global(Some(REQUEST_TIMEOUT))
        .build()
        .into();
    let width = source.bucket_s;
    let mut cursor = bucket_floor(unix_now_s() - BACKFILL_S, width);
    let mut timer = tokio::time::interval(POLL_EVERY);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let now_s = unix_now_s();
        let Due { from, until } = due(cursor, now_s, width);
        if from > cursor {
            log(format!(
                "prometheus {}: buckets from {cursor:.0} to {from:.0} (unix s) not read: \
                 older than the {MAX_WINDOW_S:.0} s a read reaches back",
                source.url
            ));
            cursor = from;
        }
        if until <= from {
            continue;
        }
        let ready = until;
        let read = Read {
            pool: &pool,
            client: &client,
            source: &source,
            metrics: &metrics,
        };
        match read.poll(cursor, ready, now_s).await {
            Ok(jobs) => {
                cursor = ready;
                posted.mark(jobs);
            }
            Err(why) => {
                metrics.errors.inc();
                log(format!(
                    "prometheus {}: {why} (asked again in {} s; what is stored is kept)",
                    source.url.query_endpoint(),
                    POLL_EVERY.as_secs()
                ));
            }
        }
    }
}

/// The buckets a poll reads, `[from, until)`; none when `until <= from`.
#[derive(Debug, PartialEq)]
struct Due {
    from: f64,
    until: f64,
}

/// What a poll at `now_s` reads after the buckets stored up to `cursor`: from the cursor,
/// or the oldest bucket a read still reaches ([`MAX_WINDOW_S`]) when the cursor is older
/// (a Prometheus that was down); up to the last bucket that ended a width and
/// [`LAG_MARGIN_S`] ago.
fn due(cursor: f64, now_s: f64, width: f64) -> Due {
    let oldest = bucket_floor(now_s - MAX_WINDOW_S, width) + width;
    Due {
        from: cursor.max(oldest),
        until: bucket_floor(now_s - width - LAG_MARGIN_S, width),
    }
}

/// One poll's means.
struct Read<'a> {
    pool: &'a Pool,
    client: &'a ureq::Agent,
    source: &'a PrometheusSource,
    metrics: &'a Metrics,
}

impl Read<'_> {
    /// Reads the buckets from `from` to `until` (Unix s, bucket boundaries) at `now_s`,
    /// stores them, and says which jobs they were of.
    async fn poll(&self, from: f64, until: f64, now_s: f64) -> Result<Vec<String>, PollError> {
        let body = self.fetch(now_s - from, now_s).await?;
        let matrix = parse_matrix(&body, MAX_SERIES)?;
        let m = self.metrics;
        m.series.inc_by(matrix.series.len() as u64);
        m.skipped("bad_series", matrix.skipped.bad_series);
        m.skipped("bad_samples", matrix.skipped.bad_samples);
        m.skipped("over_cap", matrix.skipped.over_cap);
        let read = job_records(&matrix.series);
        m.skipped("bad_records", read.skipped.bad_records);
        m.skipped("unknown_version", read.skipped.unknown_version);
        m.skipped("no_job", read.skipped.no_job);
        let jobs = bucketed(read.jobs, from, until, self.source.bucket_s);
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let mut names: Vec<String> = jobs.iter().filter_map(|j| j.job.clone()).collect();
        let summaries: u64 = jobs.iter().map(|j| j.summaries.len() as u64).sum();
        let upload = CollectivesUpload {
            host: PROVENANCE.to_string(),
            jobs,
        };
        let mut client = self
            .pool
            .get()
            .await
            .map_err(|e| PollError::Database(e.to_string()))?;
        crate::collectives::store(&mut client, &upload, now_s)
            .await
            .map_err(|e| PollError::Database(crate::server_words(&e)))?;
        m.summaries.inc_by(summaries);
        names.dedup();
        Ok(names)
    }

    /// The answer to the range selector of the plugin's series over the last `window_s`
    /// before `now_s`, within [`REQUEST_TIMEOUT`] and [`MAX_BODY`].
    async fn fetch(&self, window_s: f64, now_s: f64) -> Result<Vec<u8>, PollError> {
        let endpoint = self.source.url.query_endpoint();
        // A second more than the window: a sample scraped at its very start is in.
        let window_ms = ((window_s + 1.0) * 1000.0).ceil() as u64;
        let query = format!(
            "{{__name__=~\"{}\"}}[{window_ms}ms]",
            TEXTFILE_METRICS.join("|")
        );
        let time = format!("{now_s:.3}");
        let client = self.client.clone();
        let ask = tokio::task::spawn_blocking(move || {
            let mut answer = client
                .get(&endpoint)
                .query("query", &query)
                .query("time", &time)
                .call()
                .map_err(|e| match e {
                    ureq::Error::Timeout(_) => {
                        format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
                    }
                    e => e.to_string(),
                })?;
            let status = answer.status().as_u16();
            let body = answer
                .body_mut()
                .with_config()
                .limit(MAX_BODY)
                .read_to_vec()
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((status, body))
        });
        // The client's own timeout bounds the request; this bounds the thread's start too.
        let answered = tokio::time::timeout(REQUEST_TIMEOUT + Duration::from_secs(5), ask).await;
        let (status, body) = match answered {
            Err(_) => {
                return Err(PollError::Request(format!(
                    "no answer within {} s",
                    REQUEST_TIMEOUT.as_secs()
                )))
            }
            Ok(Err(joined)) => return Err(PollError::Request(joined.to_string())),
            Ok(Ok(Err(reason))) => return Err(PollError::Request(reason)),
            Ok(Ok(Ok(answer))) => answer,
        };
        // Prometheus answers its API errors (400 bad_data, 422 execution, 503 timeout) with
        // the same envelope: those are read for their words.
        if !matches!(status, 200 | 400 | 422 | 503) {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            return Err(PollError::Status { status, text });
        }
        if status != 200 {
            return match parse_matrix(&body, 0) {
                Err(e) => Err(PollError::Response(e)),
                Ok(_) => Err(PollError::Status {
                    status,
                    text: String::new(),
                }),
            };
        }
        Ok(body)
    }
}

/// Each job's records whose buckets lie in `[from, until)`, summarised one upload entry a
/// bucket (so that the counts of a bucket stored again replace, as an agent's resend
/// does), those outside the contract left out.
fn bucketed(
    jobs: BTreeMap<String, Vec<CollectiveRecord>>,
    from: f64,
    until: f64,
    width: f64,
) -> Vec<JobCollectives> {
    let mut out = Vec::new();
    for (job, records) in jobs {
        let records: Vec<CollectiveRecord> = records
            .into_iter()
            .filter(|r| {
                let start = bucket_floor(r.at_us / 1e6, width);
                start >= from && start < until
            })
            .collect();
        let mut buckets: BTreeMap<i64, (u64, Vec<RankSummary>)> = BTreeMap::new();
        for r in &records {
            buckets
                .entry(bucket_key(r.at_us / 1e6, width))
                .or_default()
                .0 += 1;
        }
        for s in analyze::collectives::summarize(&records, width) {
            buckets
                .entry(bucket_key(s.start_s, width))
                .or_default()
                .1
                .push(s);
        }
        for (_, (count, summaries)) in buckets {
            let entry = JobCollectives {
                job: Some(job.clone()),
                records: count,
                skipped: Default::default(),
                dropped: 0,
                summaries,
                // The textfile mode's series carry no provenance: what the plugin wrote.
                simulated: false,
            };
            if check_job(&entry).is_ok() {
                out.push(entry);
            }
        }
    }
    out
}

/// The start of the bucket `t_s` falls in.
fn bucket_floor(t_s: f64, width: f64) -> f64 {
    (t_s / width).floor() * width
}

/// The index of the bucket `t_s` falls in.
fn bucket_key(t_s: f64, width: f64) -> i64 {
    (t_s / width).floor() as i64
}

fn unix_now_s() -> f64 {
    model::time::unix_ms(SystemTime::now()) as f64 / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_reads_the_buckets_closed_since_the_cursor_and_no_further_back_than_its_window() {
        // 5 s buckets: at 120 the buckets up to 110 have ended more than 5 + 2 s ago.
        assert_eq!(
            due(100.0, 120.0, 5.0),
            Due {
                from: 100.0,
                until: 110.0
            }
        );
        // Nothing new a few seconds later.
        let next = due(110.0, 121.0, 5.0);
        assert!(next.until <= next.from, "{next:?}");
        // Down for half an hour: the read starts 15 minutes back, on a bucket.
        assert_eq!(
            due(100.0, 2000.0, 5.0),
            Due {
                from: 1105.0,
                until: 1990.0
            }
        );
        // Minute buckets: the minute that ended at 180 waits until 242.
        assert_eq!(due(120.0, 241.0, 60.0).until, 120.0);
        assert_eq!(due(120.0, 242.0, 60.0).until, 180.0);
    }

    /// A real answer (testdata/prometheus/README.md): collective 41's three series, scraped
    /// 8 times, and collective 42's, whose bandwidths went `+Inf` and `NaN`.
    #[test]
    fn a_captured_answer_makes_one_record_and_counts_the_rest() {
        let body = include_bytes!("../../testdata/prometheus/range-selector.json");
        let m = parse_matrix(body, MAX_SERIES).unwrap();
        assert_eq!(m.series.len(), 6);
        assert_eq!(
            m.skipped,
            Skipped {
                bad_series: 0,
                bad_samples: 6,
                over_cap: 0
            },
            "3 scrapes of collective 42's +Inf and NaN"
        );
        let read = job_records(&m.series);
        assert_eq!(
            read.skipped,
            RecordsSkipped {
                bad_records: 1,
                ..RecordsSkipped::default()
            },
            "collective 42 lacks its bandwidths"
        );
        let r = &read.jobs["4646"][..];
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].seq, r[0].rank, r[0].n_ranks, r[0].n_nodes),
            (41, 6, 16, 4)
        );
        assert_eq!((r[0].hostname.as_str(), r[0].gpu), ("node002", Some(2)));
        assert_eq!(
            (r[0].algobw_gbs, r[0].busbw_gbs, r[0].exec_us),
            (13.3804, 25.0882, 20062.0)
        );
        assert_eq!(r[0].bytes, 256 << 20);
        // 2026-11-30T13:51:45Z, the dump's `timestamp`, not the scrapes' times.
        assert_eq!(r[0].at_us, 1_796_046_705.0e6);

        // `query_range`'s answer has the same shape; each sample is repeated at every step.
        let body = include_bytes!("../../testdata/prometheus/query-range.json");
        let m = parse_matrix(body, MAX_SERIES).unwrap();
        assert_eq!(m.series.len(), 2);
        assert_eq!(m.series[0].samples.len(), 4);
        assert!(m.series[0].samples.iter().all(|(_, v)| *v == 25.0882));
        assert_eq!(m.skipped.bad_samples, 2);
    }

    fn record(rank: u32, at_s: f64, seq: u64) -> CollectiveRecord {
        CollectiveRecord {
            communicator: "0xa".into(),
            rank,
            n_ranks: 2,
            n_nodes: 2,
            hostname: format!("node{rank}"),
            pid: None,
            gpu: Some(rank),
            collective: "AllReduce".into(),
            seq,
            bytes: 1 << 20,
            exec_us: 100.0,
            algobw_gbs: 10.0,
            busbw_gbs: 10.0,
            kernel_start_us: None,
            at_us: at_s * 1e6,
            job: Some("7".into()),
        }
    }

    #[test]
    fn only_the_buckets_between_the_cursor_and_the_ready_end_are_summarised_each_apart() {
        // Buckets of 5 s: 95 (before the cursor), 100 and 105 (read), 110 (not closed).
        let records = vec![
            record(0, 97.0, 1),
            record(0, 101.0, 2),
            record(1, 101.0, 2),
            record(0, 104.0, 3),
            record(0, 106.0, 4),
            record(1, 111.0, 5),
        ];
        let jobs = bucketed(BTreeMap::from([("7".into(), records)]), 100.0, 110.0, 5.0);
        // Per upload entry: its records, and its summaries' (rank, start, count).
        type Entry = (u64, Vec<(u32, f64, u64)>);
        let spans: Vec<Entry> = jobs
            .iter()
            .map(|j| {
                (
                    j.records,
                    j.summaries
                        .iter()
                        .map(|s| (s.rank, s.start_s, s.count))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            spans,
            [
                (3, vec![(0, 100.0, 2), (1, 100.0, 1)]),
                (1, vec![(0, 105.0, 1)])
            ]
        );
        assert!(jobs.iter().all(|j| j.job.as_deref() == Some("7")));
    }
}
