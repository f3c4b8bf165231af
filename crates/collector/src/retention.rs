//! Retention of runs (issue 38 section 5): the collector deletes the runs older than
//! `--keep-runs` (30 days by default, 8,640 runs of a host at the agent's 5-minute cadence,
//! about 83 MB of it: BENCHMARKS.md; `forever` keeps every run), in batches, on a timer.
//!
//! What grows with every run, and is deleted with it: `runs` (the report), `run_paths`,
//! `run_links` and `diagnoses` (keyed by the run). What is kept:
//! - each host's latest run, however old (`hosts.latest_run_id`: the fleet overview and the
//!   host page read it), and the host's row, whose `runs` counts the runs still held;
//! - the baselines: the fleet baselines are computed from `host_samples` (each host's last
//!   nine sample sets, a table of their own, bounded per host at ingest) into
//!   `fleet_baselines`, and a pair's recorded baseline is its own row of `pair_baselines`;
//!   none of them reads or references a stored run, so deleting runs leaves them whole;
//! - the switch-port sweeps, which have their own retention (`--keep-sweeps`,
//!   crate::fabric::store), and the agents' registrations (one row a host).
//!
//! Runs are aged by their `started_unix_ms` (the agent's clock, which the timelines use
//! too) against the collector's clock. A batch is one short transaction: it takes the
//! oldest [`Settings::batch`] runs past the age, locks their hosts' rows in name order, as
//! ingest does (crate::batch), so that a run arriving for the same host waits milliseconds
//! instead of deadlocking, deletes the runs' rows and counts them off their hosts. Each wait
//! is bounded (`lock_timeout`, `statement_timeout`), and a tick runs at most
//! [`Settings::batches`] batches. Several collectors may share the database: a transaction-
//! scoped advisory lock lets one of them delete at a time, and another that finds it taken
//! skips its tick, so no two delete the same run.
//!
//! Jobs' collectives (`job_collectives`, `job_collective_reads`, crate::collectives) fall
//! under the same setting: after the runs, a tick deletes those whose buckets ended before
//! the cutoff (Unix seconds, the agent's clock), in batches of [`COLLECTIVE_ROWS_PER_RUN`]
//! rows per run of [`Settings::batch`], under the same lock; and the verdicts the collector
//! reached on them by itself (`job_verdicts`, crate::slow_jobs), by when they were reached,
//! and the actions taken on those verdicts (`actions`, crate::actions) that ended (an
//! action still in force, a node still drained, is kept whatever its age).

use deadpool_postgres::{Pool, PoolError};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{Client, Transaction};

/// The advisory lock that lets one collector delete at a time (schema.rs's migrations hold
/// 7247, the baselines' refresh 7248, the board of port reads 7249).
const LOCK: i64 = 7250;

/// Collective summary rows deleted in a transaction for each run its batch may delete:
/// a 128-rank job posts some 280,000 summaries an hour, so a batch of the default 1,000
/// runs deletes 50,000 summaries (a few MB, well within the statement timeout), and a
/// tick's ten batches keep up with a hundred such jobs.
pub const COLLECTIVE_ROWS_PER_RUN: i64 = 50;

/// How retention runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// How old a run may get; `None` keeps every run.
    pub keep: Option<Duration>,
    /// Runs deleted in one transaction.
    pub batch: u32,
    /// Batches in one tick at most, so that a first tick on a long history does bounded work.
    pub batches: u32,
    /// Between two ticks.
    pub every: Duration,
}

impl Settings {
    /// `keep` with the collector's batch sizes: 1,000 runs a transaction, 10 a tick, a tick
    /// a minute, which deletes 600,000 runs an hour at most, twice a 1,000-host fleet's
    /// day (288,000 runs at the 5-minute cadence).
    pub fn keeping(keep: Option<Duration>) -> Settings {
        Settings {
            keep,
            batch: 1000,
            batches: 10,
            every: Duration::from_secs(60),
        }
    }
}

/// Rows deleted, per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deleted {
    /// `runs`.
    pub runs: u64,
    /// `run_paths`.
    pub run_paths: u64,
    /// `run_links`.
    pub run_links: u64,
    /// `diagnoses`.
    pub diagnoses: u64,
    /// `job_collectives`.
    pub job_collectives: u64,
    /// `job_collective_reads`.
    pub job_collective_reads: u64,
    /// `job_verdicts`.
    pub job_verdicts: u64,
    /// `actions` (ended ones).
    pub actions: u64,
}

impl Deleted {
    /// Each table with its count, for metrics and logs.
    pub fn tables(&self) -> [(&'static str, u64); 8] {
        [
            ("runs", self.runs),
            ("run_paths", self.run_paths),
            ("run_links", self.run_links),
            ("diagnoses", self.diagnoses),
            ("job_collectives", self.job_collectives),
            ("job_collective_reads", self.job_collective_reads),
            ("job_verdicts", self.job_verdicts),
            ("actions", self.actions),
        ]
    }

    fn add(&mut self, other: Deleted) {
        self.runs += other.runs;
        self.run_paths += other.run_paths;
        self.run_links += other.run_links;
        self.diagnoses += other.diagnoses;
        self.job_collectives += other.job_collectives;
        self.job_collective_reads += other.job_collective_reads;
        self.job_verdicts += other.job_verdicts;
        self.actions += other.actions;
    }

    /// Whether any row was deleted.
    fn any(&self) -> bool {
        self.tables().iter().any(|(_, n)| *n > 0)
    }
}

/// What a tick did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// It deleted these rows (none when nothing was old enough).
    Deleted(Deleted),
    /// Another collector was deleting: this one skipped its tick (after what it deleted
    /// before it found the lock taken).
    Busy(Deleted),
}

/// Why a tick stopped.
#[derive(Debug, thiserror::Error)]
pub enum RetentionError {
    /// No connection from the pool.
    #[error("{0}")]
    Pool(#[from] PoolError),
    /// A statement failed, or waited past its timeout.
    #[error("{}", crate::server_words(.0))]
    Database(#[from] tokio_postgres::Error),
}

/// Deletes at most `batches` batches of `batch` runs that started before `cutoff_unix_ms`,
/// each batch in its own transaction, stopping at a short batch; then as many batches of
/// jobs' collectives whose buckets ended before it ([`COLLECTIVE_ROWS_PER_RUN`] rows a run
/// of `batch`, per table).
pub async fn tick(
    client: &mut Client,
    cutoff_unix_ms: i64,
    batch: u32,
    batches: u32,
) -> Result<Tick, RetentionError> {
    let mut done = Deleted::default();
    for _ in 0..batches {
        match delete_batch(client, cutoff_unix_ms, batch).await? {
            None => return Ok(Tick::Busy(done)),
            Some(deleted) => {
                done.add(deleted);
                if deleted.runs < u64::from(batch) {
                    break;
                }
            }
        }
    }
    let rows = i64::from(batch) * COLLECTIVE_ROWS_PER_RUN;
    for _ in 0..batches {
        match delete_collectives(client, cutoff_unix_ms, rows).await? {
            None => return Ok(Tick::Busy(done)),
            Some(deleted) => {
                done.add(deleted);
                let most = deleted.job_collectives.max(deleted.job_collective_reads);
                if most.max(deleted.job_verdicts).max(deleted.actions) < rows as u64 {
                    break;
                }
            }
        }
    }
    Ok(Tick::Deleted(done))
}

/// A transaction holding the retention lock, its waits bounded; `None` when another
/// collector holds the lock.
async fn locked(client: &mut Client) -> Result<Option<Transaction<'_>>, RetentionError> {
    let tx = client.transaction().await?;
    tx.batch_execute("SET LOCAL lock_timeout = '5s'; SET LOCAL statement_timeout = '60s'")
        .await?;
    let locked: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&LOCK])
        .await?
        .get(0);
    Ok(locked.then_some(tx))
}

/// One batch of jobs' collectives (at most `rows` of each table), under the same lock as
/// the runs': `None` when another collector holds it.
async fn delete_collectives(
    client: &mut Client,
    cutoff_unix_ms: i64,
    rows: i64,
) -> Result<Option<Deleted>, RetentionError> {
    let Some(tx) = locked(client).await? else {
        return Ok(None);
    };
    let cutoff_s = cutoff_unix_ms as f64 / 1e3;
    // Through the bucket-end indexes (crate::collectives::MIGRATION).
    let deleted = Deleted {
        job_collectives: tx
            .execute(
                "DELETE FROM job_collectives WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM job_collectives WHERE start_s + width_s < $1 LIMIT $2))",
                &[&cutoff_s, &rows],
            )
            .await?,
        job_collective_reads: tx
            .execute(
                "DELETE FROM job_collective_reads WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM job_collective_reads WHERE last_end_s < $1 LIMIT $2))",
                &[&cutoff_s, &rows],
            )
            .await?,
        // Through job_verdicts_judged_at (crate::verdicts::MIGRATION).
        job_verdicts: tx
            .execute(
                "DELETE FROM job_verdicts WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM job_verdicts WHERE judged_at < to_timestamp($1) LIMIT $2))",
                &[&cutoff_s, &rows],
            )
            .await?,
        // Through actions_at (crate::actions::store::MIGRATION); those in force stay.
        actions: tx
            .execute(
                "DELETE FROM actions WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM actions
                     WHERE at < to_timestamp($1) AND ended_at IS NOT NULL LIMIT $2))",
                &[&cutoff_s, &rows],
            )
            .await?,
        ..Deleted::default()
    };
    tx.commit().await?;
    Ok(Some(deleted))
}

/// One batch: `None` when another collector holds the lock.
async fn delete_batch(
    client: &mut Client,
    cutoff_unix_ms: i64,
    batch: u32,
) -> Result<Option<Deleted>, RetentionError> {
    let Some(tx) = locked(client).await? else {
        return Ok(None);
    };
    // The oldest runs past the age, but no host's latest: each host's oldest from its
    // index (runs_host_started, read backwards), so that a tick in the steady state (a
    // run or so a host past the age) probes the index once a host and reads no table.
    let rows = tx
        .query(
            "SELECT r.id, r.host_id FROM hosts h
             CROSS JOIN LATERAL (
                 SELECT r.id, r.host_id, r.started_unix_ms FROM runs r
                 WHERE r.host_id = h.id AND r.started_unix_ms < $1
                   AND r.id IS DISTINCT FROM h.latest_run_id
                 ORDER BY r.started_unix_ms, r.id LIMIT $2) r
             ORDER BY r.started_unix_ms, r.id LIMIT $2",
            &[&cutoff_unix_ms, &i64::from(batch)],
        )
        .await?;
    if rows.is_empty() {
        return Ok(Some(Deleted::default()));
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let hosts: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
    // The hosts' rows in ingest's order; a host's latest only ever moves to a newer run,
    // so the runs chosen stay deletable.
    tx.execute(
        "SELECT 1 FROM hosts WHERE id = ANY($1) ORDER BY name FOR UPDATE",
        &[&hosts],
    )
    .await?;
    let by_run = |table: &str| format!("DELETE FROM {table} WHERE run_id = ANY($1)");
    let deleted = Deleted {
        diagnoses: tx.execute(&by_run("diagnoses"), &[&ids]).await?,
        run_paths: tx.execute(&by_run("run_paths"), &[&ids]).await?,
        run_links: tx.execute(&by_run("run_links"), &[&ids]).await?,
        runs: tx
            .execute("DELETE FROM runs WHERE id = ANY($1)", &[&ids])
            .await?,
        ..Deleted::default()
    };
    tx.execute(
        "UPDATE hosts SET runs = hosts.runs - d.n
         FROM (SELECT h, count(*) AS n FROM unnest($1::int8[]) AS h GROUP BY h) d
         WHERE hosts.id = d.h",
        &[&hosts],
    )
    .await?;
    tx.commit().await?;
    Ok(Some(deleted))
}

fn now_unix_ms() -> i64 {
    model::time::unix_ms(std::time::SystemTime::now())
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabel {
    table: String,
}

/// What retention did, for `GET /metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    deleted: Family<TableLabel, Counter>,
    ticks: Counter,
    busy: Counter,
    errors: Counter,
    last_unix_s: Gauge<f64, AtomicU64>,
    keep_s: Gauge<f64, AtomicU64>,
}

impl Metrics {
    /// Registers the series in `registry`; `keep` is the setting (0 s for `forever`).
    pub fn register(registry: &mut Registry, keep: Option<Duration>) -> Arc<Metrics> {
        let m = Arc::new(Metrics::default());
        m.keep_s.set(keep.map_or(0.0, |k| k.as_secs_f64()));
        registry.register(
            "hostping_collector_retention_deleted_rows",
            "Rows retention deleted, per table",
            m.deleted.clone(),
        );
        registry.register(
            "hostping_collector_retention_ticks",
            "Retention ticks that ran",
            m.ticks.clone(),
        );
        registry.register(
            "hostping_collector_retention_busy",
            "Retention ticks skipped: another collector on the database was deleting",
            m.busy.clone(),
        );
        registry.register(
            "hostping_collector_retention_errors",
            "Retention ticks that failed (retried at the next)",
            m.errors.clone(),
        );
        registry.register(
            "hostping_collector_retention_last_run_timestamp_seconds",
            "When retention last finished a tick, Unix seconds",
            m.last_unix_s.clone(),
        );
        registry.register(
            "hostping_collector_retention_keep_seconds",
            "How old a run may get (--keep-runs); 0: every run is kept",
            m.keep_s.clone(),
        );
        m
    }

    fn record(&self, tick: &Result<Tick, RetentionError>) {
        let deleted = match tick {
            Ok(Tick::Deleted(d)) => d,
            Ok(Tick::Busy(d)) => {
                self.busy.inc();
                d
            }
            Err(_) => {
                self.errors.inc();
                return;
            }
        };
        self.ticks.inc();
        for (table, n) in deleted.tables() {
            self.deleted
                .get_or_create(&TableLabel {
                    table: table.to_string(),
                })
                .inc_by(n);
        }
        self.last_unix_s.set(now_unix_ms() as f64 / 1e3);
    }
}

/// Runs a tick at start and every `settings.every`, until the process stops; each tick's
/// deletions (or failure) go to `log` and `metrics`. Nothing runs with `keep` `None`.
pub async fn retention_loop(
    pool: Pool,
    settings: Settings,
    metrics: Arc<Metrics>,
    log: impl Fn(String),
) {
    let Some(keep) = settings.keep else { return };
    let keep_ms = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
    let mut timer = tokio::time::interval(settings.every);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let cutoff = now_unix_ms().saturating_sub(keep_ms);
        let outcome = match pool.get().await {
            Ok(mut client) => tick(&mut client, cutoff, settings.batch, settings.batches).await,
            Err(e) => Err(e.into()),
        };
        metrics.record(&outcome);
        match &outcome {
            Ok(Tick::Deleted(d) | Tick::Busy(d)) if d.any() => log(format!(
                "retention: deleted runs started and collectives ended before {cutoff} \
                 (unix ms): {}",
                d.tables()
                    .iter()
                    .map(|(t, n)| format!("{t} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Ok(_) => {}
            Err(e) => log(format!("retention: {e} (retried in {:?})", settings.every)),
        }
    }
}
