//! The SQLite run store.

use crate::schema::{MIGRATIONS, SCHEMA_VERSION};
use rusqlite::{
    params, Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a connection waits for another one's lock before failing with "busy".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the store failed. Every message starts with the database file and says what failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused an operation (the file is unreadable, not a database, locked, full...).
    /// (Not a `source`: the message already holds it.)
    #[error("{}: {what}: {error}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What the store was doing.
        what: String,
        /// What SQLite said.
        error: rusqlite::Error,
    },
    /// A JSON column could not be written or read back.
    #[error("{}: {what}: {error}", path.display())]
    Json {
        /// The database file.
        path: PathBuf,
        /// What the store was doing.
        what: String,
        /// What serde_json said.
        error: serde_json::Error,
    },
    /// The file was written by a newer hostping; this one does not touch it.
    #[error(
        "{}: schema version {found} is newer than this hostping knows ({known}); \
         upgrade hostping or move the file away",
        path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The file's version.
        found: u32,
        /// [`SCHEMA_VERSION`].
        known: u32,
    },
    /// A read-only connection found a database that no writer has migrated yet.
    #[error(
        "{}: schema version {found}, expected {known}: open it read-write (start the agent) \
         to migrate it first",
        path.display()
    )]
    OlderSchema {
        /// The database file.
        path: PathBuf,
        /// The file's version.
        found: u32,
        /// [`SCHEMA_VERSION`].
        known: u32,
    },
    /// SQLite would not switch the file to write-ahead logging.
    #[error("{}: journal_mode=WAL refused, the journal mode is `{mode}`", path.display())]
    NotWal {
        /// The database file.
        path: PathBuf,
        /// The mode SQLite kept.
        mode: String,
    },
    /// `PRAGMA integrity_check` found problems.
    #[error("{}: integrity check failed: {report}", path.display())]
    Integrity {
        /// The database file.
        path: PathBuf,
        /// What the check said, its lines joined by `; `.
        report: String,
    },
    /// A value of a run does not fit an SQLite integer.
    #[error("{}: insert run: {field} = {value} does not fit a signed 64-bit integer", path.display())]
    OutOfRange {
        /// The database file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A value of a fabric sweep does not fit an SQLite integer.
    #[error(
        "{}: insert sweep: {what} = {value} does not fit a signed 64-bit integer",
        path.display()
    )]
    SweepOutOfRange {
        /// The database file.
        path: PathBuf,
        /// The field, and the port it belongs to (`0x...[7] xmit_data_bytes`).
        what: String,
        /// Its value.
        value: u64,
    },
}

/// One run to store, as the agent has it.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    /// Wall clock when the run started, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// The engine clock at the start (simulated time on a virtual host), ns.
    pub clock_ns: u64,
    /// Probe + analysis time on the engine clock, ns.
    pub duration_ns: u64,
    /// `idle`, `pfc`, `drops`, `manual`, ...
    pub trigger: &'a str,
    /// Why, in words: `rnic0 tx pause ratio 0.18 > PFC_high 0.03`.
    pub trigger_detail: &'a str,
    /// The monitor snapshot that triggered the run.
    pub snapshot: &'a serde_json::Value,
    /// The full counter snapshot, when one was read.
    pub counters: Option<&'a serde_json::Value>,
    /// The analyzer's report.
    pub report: &'a model::Report,
}

/// One run in a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Run id.
    pub id: i64,
    /// Wall clock at the start, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// Engine clock at the start, ns.
    pub clock_ns: u64,
    /// Probe + analysis time, ns.
    pub duration_ns: u64,
    /// What triggered the run.
    pub trigger: String,
    /// Why, in words.
    pub trigger_detail: String,
    /// Host model name.
    pub host: String,
    /// `idle` or `busy`.
    pub mode: String,
    /// `measured` or `simulated`.
    pub provenance: String,
    /// The report's verdict.
    pub healthy: bool,
    /// Some link could not be judged (DESIGN 4.3); `false` for runs stored before schema 6.
    pub inconclusive: bool,
    /// Paths probed.
    pub paths: u32,
    /// Paths whose probe reported an error.
    pub failed_paths: u32,
    /// Causes diagnosed, each once, in the order of their first diagnosis.
    pub causes: Vec<String>,
}

/// One run in full, as it was stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredRun {
    /// The listing fields.
    #[serde(flatten)]
    pub summary: RunSummary,
    /// The monitor snapshot that triggered it.
    pub snapshot: serde_json::Value,
    /// The full counter snapshot, if one was read (always `None` for runs stored by schema 1).
    pub counters: Option<serde_json::Value>,
    /// The report.
    pub report: model::Report,
}

/// Which runs [`Store::runs`] lists.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RunQuery {
    /// At most this many.
    pub limit: u32,
    /// Only runs with a smaller id (the next page starts before the last id seen).
    pub before: Option<i64>,
    /// Only runs with this trigger.
    pub trigger: Option<String>,
}

impl Default for RunQuery {
    fn default() -> Self {
        RunQuery {
            limit: 50,
            before: None,
            trigger: None,
        }
    }
}

/// A connection to the run database: the agent's writer, or a reader.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    /// When set ([`Store::queue_for_collector`]), each inserted run also enters the outbox,
    /// which keeps at most this many runs.
    pub(crate) outbox_cap: Option<u32>,
    /// Runs this connection pushed out of a full outbox.
    pub(crate) outbox_dropped: u64,
}

/// Attaches the file and the operation to an SQLite error.
pub(crate) trait Context<T> {
    fn ctx(self, path: &Path, what: impl Into<String>) -> Result<T, StoreError>;
}

impl<T> Context<T> for rusqlite::Result<T> {
    fn ctx(self, path: &Path, what: impl Into<String>) -> Result<T, StoreError> {
        self.map_err(|error| StoreError::Sqlite {
            path: path.to_owned(),
            what: what.into(),
            error,
        })
    }
}

impl<T> Context<T> for serde_json::Result<T> {
    fn ctx(self, path: &Path, what: impl Into<String>) -> Result<T, StoreError> {
        self.map_err(|error| StoreError::Json {
            path: path.to_owned(),
            what: what.into(),
            error,
        })
    }
}

/// The columns of a [`RunSummary`], for a query over `runs r`.
const SUMMARY_COLUMNS: &str = "r.id, r.started_unix_ms, r.clock_ns, r.duration_ns, r.trigger, \
    r.trigger_detail, r.host, r.mode, r.provenance, r.healthy, r.inconclusive, \
    (SELECT count(*) FROM paths p WHERE p.run_id = r.id), \
    (SELECT count(*) FROM paths p WHERE p.run_id = r.id AND p.error IS NOT NULL), \
    (SELECT json_group_array(cause ORDER BY first) FROM \
        (SELECT cause, min(idx) AS first FROM diagnoses d WHERE d.run_id = r.id GROUP BY cause))";

/// Reads [`SUMMARY_COLUMNS`]; the causes come back as their JSON array.
fn summary_from_row(row: &Row<'_>) -> rusqlite::Result<(RunSummary, String)> {
    Ok((
        RunSummary {
            id: row.get(0)?,
            started_unix_ms: row.get(1)?,
            clock_ns: row.get(2)?,
            duration_ns: row.get(3)?,
            trigger: row.get(4)?,
            trigger_detail: row.get(5)?,
            host: row.get(6)?,
            mode: row.get(7)?,
            provenance: row.get(8)?,
            healthy: row.get(9)?,
            inconclusive: row.get(10)?,
            paths: row.get(11)?,
            failed_paths: row.get(12)?,
            causes: Vec::new(),
        },
        row.get(13)?,
    ))
}

/// Queues run `id` for the collector (the outbox, `crate::outbox`) inside its insert
/// transaction; drops the oldest beyond `cap`. Returns how many were dropped.
fn enqueue(
    tx: &Transaction<'_>,
    path: &Path,
    id: i64,
    started_unix_ms: i64,
    cap: u32,
) -> Result<u64, StoreError> {
    tx.execute(
        "INSERT INTO outbox (run_id, queued_unix_ms) VALUES (?1, ?2)",
        params![id, started_unix_ms],
    )
    .ctx(path, "insert run: queue for the collector")?;
    let dropped = tx
        .execute(
            "DELETE FROM outbox WHERE run_id IN \
             (SELECT run_id FROM outbox ORDER BY run_id DESC LIMIT -1 OFFSET ?1)",
            params![cap],
        )
        .ctx(path, "insert run: bound the outbox")?;
    Ok(dropped as u64)
}

impl Store {
    /// Opens or creates the database at `path` (parent folders must exist), sets WAL
    /// (`journal_mode=WAL`, `synchronous=NORMAL`, a busy timeout), and applies pending
    /// migrations. A database from a newer schema is refused untouched.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path).ctx(path, "open")?;
        let (mut store, _) = Store::connect(conn, path)?;
        let mode: String = store
            .conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .ctx(path, "set journal_mode=WAL")?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::NotWal {
                path: path.to_owned(),
                mode,
            });
        }
        store
            .conn
            .pragma_update(None, "synchronous", "NORMAL")
            .ctx(path, "set synchronous=NORMAL")?;
        store
            .conn
            .pragma_update(None, "foreign_keys", true)
            .ctx(path, "set foreign_keys=ON")?;
        store.migrate()?;
        Ok(store)
    }

    /// A second connection for readers (the HTTP API), read-only; fails if the file does
    /// not exist or has not been migrated to [`SCHEMA_VERSION`] by a writer.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).ctx(path, "open read-only")?;
        let (store, found) = Store::connect(conn, path)?;
        if found < SCHEMA_VERSION {
            return Err(StoreError::OlderSchema {
                path: store.path,
                found,
                known: SCHEMA_VERSION,
            });
        }
        Ok(store)
    }

    /// What both opens do first: a busy timeout, then the schema version, refusing a
    /// database from a newer schema before anything is changed.
    fn connect(conn: Connection, path: &Path) -> Result<(Store, u32), StoreError> {
        let store = Store {
            conn,
            path: path.to_owned(),
            outbox_cap: None,
            outbox_dropped: 0,
        };
        store
            .conn
            .busy_timeout(BUSY_TIMEOUT)
            .ctx(path, "set busy_timeout")?;
        let found = store.schema_version()?;
        if found > SCHEMA_VERSION {
            return Err(store.newer(found));
        }
        Ok((store, found))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `PRAGMA user_version`: how many [`MIGRATIONS`] the file has had.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .ctx(&self.path, "read schema version")
    }

    fn newer(&self, found: u32) -> StoreError {
        StoreError::NewerSchema {
            path: self.path.clone(),
            found,
            known: SCHEMA_VERSION,
        }
    }

    /// Applies the pending migrations, each in its own transaction with its version bump.
    /// The version is re-read under the write lock, so two writers opening at once apply
    /// each migration once.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let path = &self.path;
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .ctx(path, "begin migration")?;
            let version: u32 = tx
                .pragma_query_value(None, "user_version", |row| row.get(0))
                .ctx(path, "read schema version")?;
            if version > SCHEMA_VERSION {
                return Err(StoreError::NewerSchema {
                    path: path.clone(),
                    found: version,
                    known: SCHEMA_VERSION,
                });
            }
            if version == SCHEMA_VERSION {
                return Ok(());
            }
            let what = format!("migrate schema {version} -> {}", version + 1);
            tx.execute_batch(MIGRATIONS[version as usize])
                .ctx(path, what.as_str())?;
            tx.pragma_update(None, "user_version", version + 1)
                .ctx(path, what.as_str())?;
            tx.commit().ctx(path, what)?;
        }
    }

    fn int(&self, field: &'static str, value: u64) -> Result<i64, StoreError> {
        i64::try_from(value).map_err(|_| StoreError::OutOfRange {
            path: self.path.clone(),
            field,
            value,
        })
    }

    /// From now on, every run this connection inserts also enters the outbox, which keeps
    /// the newest `cap` runs.
    pub fn queue_for_collector(&mut self, cap: u32) {
        self.outbox_cap = Some(cap.max(1));
    }

    /// Runs this connection pushed out of a full outbox, unsent.
    pub fn outbox_dropped(&self) -> u64 {
        self.outbox_dropped
    }

    /// Stores one run in one transaction: the run row, its paths, links and diagnoses.
    /// Returns the run id.
    pub fn insert_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let report = run.report;
        let report_json = serde_json::to_string(report).ctx(&path, "encode the report")?;
        let snapshot_json =
            serde_json::to_string(run.snapshot).ctx(&path, "encode the snapshot")?;
        let counters_json = run
            .counters
            .map(serde_json::to_string)
            .transpose()
            .ctx(&path, "encode the counters")?;
        let clock_ns = self.int("clock_ns", run.clock_ns)?;
        let duration_ns = self.int("duration_ns", run.duration_ns)?;

        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx(&path, "insert run: begin")?;
        tx.execute(
            "INSERT INTO runs (started_unix_ms, clock_ns, duration_ns, trigger, trigger_detail, \
             host, mode, provenance, healthy, inconclusive, snapshot, report, counters) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                run.started_unix_ms,
                clock_ns,
                duration_ns,
                run.trigger,
                run.trigger_detail,
                report.host,
                report.mode.as_str(),
                report.provenance.as_str(),
                report.healthy,
                report.inconclusive,
                snapshot_json,
                report_json,
                counters_json,
            ],
        )
        .ctx(&path, "insert run")?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO paths (run_id, idx, rnic, endpoint, latency_us, \
                     bandwidth_gbps, status, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .ctx(&path, "insert run: paths")?;
            for (idx, p) in report.paths.iter().enumerate() {
                insert
                    .execute(params![
                        id,
                        idx as i64,
                        p.rnic.as_str(),
                        p.endpoint.as_str(),
                        p.latency_us,
                        p.bandwidth_gbps,
                        p.status.as_str(),
                        p.error,
                    ])
                    .ctx(
                        &path,
                        format!("insert run: path {}->{}", p.rnic, p.endpoint),
                    )?;
            }
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO links (run_id, idx, id, kind, status, abnormal_cnt, \
                     utilisation) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .ctx(&path, "insert run: links")?;
            for (idx, l) in report.links.iter().enumerate() {
                insert
                    .execute(params![
                        id,
                        idx as i64,
                        l.id.as_str(),
                        l.kind.as_str(),
                        l.status.as_str(),
                        l.abnormal_cnt,
                        l.utilisation,
                    ])
                    .ctx(&path, format!("insert run: link {}", l.id))?;
            }
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO diagnoses (run_id, idx, cause, links, rnic, evidence) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .ctx(&path, "insert run: diagnoses")?;
            for (idx, d) in report.diagnoses.iter().enumerate() {
                let links = serde_json::to_string(&d.links).ctx(&path, "encode diagnosis links")?;
                insert
                    .execute(params![
                        id,
                        idx as i64,
                        d.cause.as_str(),
                        links,
                        d.rnic.as_ref().map(|r| r.as_str()),
                        d.evidence,
                    ])
                    .ctx(&path, format!("insert run: diagnosis {}", d.cause.as_str()))?;
            }
        }
        let dropped = match self.outbox_cap {
            Some(cap) => enqueue(&tx, &path, id, run.started_unix_ms, cap)?,
            None => 0,
        };
        tx.commit().ctx(&path, "insert run: commit")?;
        self.outbox_dropped += dropped;
        Ok(id)
    }

    fn finish_summary(
        &self,
        (mut summary, causes): (RunSummary, String),
    ) -> Result<RunSummary, StoreError> {
        summary.causes = serde_json::from_str(&causes)
            .ctx(&self.path, format!("read run {}: causes", summary.id))?;
        Ok(summary)
    }

    /// Runs, newest first: at most `limit`, with an id below `before`, with `trigger`.
    pub fn runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>, StoreError> {
        let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM runs r WHERE 1");
        let mut args: Vec<Box<dyn rusqlite::ToSql>> = Vec::new();
        if let Some(before) = query.before {
            args.push(Box::new(before));
            sql += &format!(" AND r.id < ?{}", args.len());
        }
        if let Some(trigger) = &query.trigger {
            args.push(Box::new(trigger.clone()));
            sql += &format!(" AND r.trigger = ?{}", args.len());
        }
        args.push(Box::new(query.limit));
        sql += &format!(" ORDER BY r.id DESC LIMIT ?{}", args.len());

        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .ctx(&self.path, "list runs")?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), summary_from_row)
            .ctx(&self.path, "list runs")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx(&self.path, "list runs")?;
        rows.into_iter().map(|r| self.finish_summary(r)).collect()
    }

    /// One run in full, or `None` if there is no run `id`.
    pub fn run(&self, id: i64) -> Result<Option<StoredRun>, StoreError> {
        let what = || format!("read run {id}");
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS}, r.snapshot, r.counters, r.report FROM runs r WHERE r.id = ?1"
        );
        let row = self
            .conn
            .query_row(&sql, [id], |row| {
                Ok((
                    summary_from_row(row)?,
                    row.get::<_, String>(14)?,
                    row.get::<_, Option<String>>(15)?,
                    row.get::<_, String>(16)?,
                ))
            })
            .optional()
            .ctx(&self.path, what())?;
        let Some((summary, snapshot, counters, report)) = row else {
            return Ok(None);
        };
        Ok(Some(StoredRun {
            summary: self.finish_summary(summary)?,
            snapshot: serde_json::from_str(&snapshot)
                .ctx(&self.path, format!("{}: snapshot", what()))?,
            counters: counters
                .map(|c| serde_json::from_str(&c))
                .transpose()
                .ctx(&self.path, format!("{}: counters", what()))?,
            report: serde_json::from_str(&report).ctx(&self.path, format!("{}: report", what()))?,
        }))
    }

    /// The last `n` reports of host `host`, oldest first, exactly as stored.
    pub fn recent_reports(&self, host: &str, n: usize) -> Result<Vec<model::Report>, StoreError> {
        let what = || format!("read recent reports of {host}");
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, report FROM runs WHERE host = ?1 ORDER BY id DESC LIMIT ?2")
            .ctx(&self.path, what())?;
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![host, limit], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .ctx(&self.path, what())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx(&self.path, what())?;
        rows.into_iter()
            .rev()
            .map(|(id, json)| {
                serde_json::from_str(&json).ctx(&self.path, format!("read run {id}: report"))
            })
            .collect()
    }

    /// How many runs each trigger caused, by trigger name.
    pub fn trigger_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT trigger, count(*) FROM runs GROUP BY trigger ORDER BY trigger")
            .ctx(&self.path, "count runs per trigger")?;
        let rows = stmt
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .ctx(&self.path, "count runs per trigger")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx(&self.path, "count runs per trigger")?;
        Ok(rows)
    }

    /// `PRAGMA integrity_check` says `ok`, or the error holds what it said.
    pub fn integrity_check(&self) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare("PRAGMA integrity_check")
            .ctx(&self.path, "integrity check")?;
        let lines = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .ctx(&self.path, "integrity check")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx(&self.path, "integrity check")?;
        if lines == ["ok"] {
            Ok(())
        } else {
            Err(StoreError::Integrity {
                path: self.path.clone(),
                report: lines.join("; "),
            })
        }
    }
}
