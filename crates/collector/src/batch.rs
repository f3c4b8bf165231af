//! Storing checked runs: the runs that arrived together (collector/writer.rs) go into one
//! transaction, in the same few statements whether the batch holds one run or a hundred.
//!
//! Per batch: `BEGIN`; the hosts upserted (their rows locked in name order, so that two
//! batches never wait on each other in a cycle); the runs inserted, a resend skipped by the
//! unique key; the new runs' paths, links, diagnoses, sample sets and host summaries sent
//! together (tokio-postgres pipelines statements polled at once); `COMMIT`. Each statement
//! takes the whole batch as parallel arrays (`unnest`); the runs' own arrays (40 paths a
//! run) travel concatenated, and each run's row takes its slice. Statements are
//! prepared once per pooled connection. `hostping bench collector` measured per-statement
//! and per-commit overheads, not the rows, as most of a lone run's cost (BENCHMARKS.md).

use analyze::fleet::baseline::{Samples, HOST_RUNS};
use analyze::fleet::is_inconclusive;
use fleet_api::upload::RunUpload;
use model::{Report, Thresholds};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Json, ToSql};

/// What happened to a pushed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored now, under this collector id.
    New(i64),
    /// Stored before (a resend), under this collector id.
    Duplicate(i64),
}

/// A run that passed the contract ([`fleet_api::upload::parse`]), ready to be stored.
#[derive(Debug)]
pub struct Arrival {
    /// The envelope, with the report as the agent's text.
    pub upload: RunUpload,
    /// The report, parsed for the tables.
    pub report: Report,
}

/// The statements of [`store_batch`], in order: a message says which one failed, and so
/// which part of a run the server would not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `BEGIN`.
    Begin,
    /// Preparing the statements (once per pooled connection).
    Prepare,
    /// The hosts' upsert (`HOSTS_SQL`).
    Hosts,
    /// The runs' insert (`RUNS_SQL`).
    Runs,
    /// Finding resent runs stored before (`EARLIER_SQL`).
    EarlierRuns,
    /// The new runs' paths (`PATHS_SQL`).
    Paths,
    /// Their links (`LINKS_SQL`).
    Links,
    /// Their diagnoses (`DIAGNOSES_SQL`).
    Diagnoses,
    /// Their sample sets (`SAMPLES_SQL`).
    SampleSets,
    /// The hosts' summaries (`SUMMARY_SQL`).
    Summaries,
    /// `COMMIT`, or the `ROLLBACK` of a batch of resends only.
    End,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Begin => "beginning the transaction",
            Step::Prepare => "preparing the statements",
            Step::Hosts => "storing the hosts",
            Step::Runs => "storing the runs",
            Step::EarlierRuns => "finding the runs stored before",
            Step::Paths => "storing the paths",
            Step::Links => "storing the links",
            Step::Diagnoses => "storing the diagnoses",
            Step::SampleSets => "storing the sample sets",
            Step::Summaries => "updating the hosts' summaries",
            Step::End => "ending the transaction",
        })
    }
}

/// Why a batch was not stored; nothing of it was (its transaction is rolled back).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A statement failed: the server refused it (its SQLSTATE says why) or the connection
    /// broke (no SQLSTATE).
    #[error("{step}: {}", crate::server_words(.source))]
    Statement {
        /// Which statement.
        step: Step,
        /// tokio-postgres's error, the server's within it when it answered.
        source: tokio_postgres::Error,
    },
    /// The hosts' upsert returned no row for a host of the batch. It returns every row it
    /// inserts or meets, so only something beside the collector does this (a trigger or a
    /// rule on `hosts`).
    #[error("{}: no row came back for host {host}", Step::Hosts)]
    HostMissing {
        /// The host's name.
        host: String,
    },
    /// A run was neither inserted nor found stored before: the unique key skipped it, yet
    /// no such run is there. Again only something beside the collector does this (a
    /// trigger on `runs`, a run deleted meanwhile).
    #[error(
        "{}: run {run} of host {host} (instance {instance:?}) was neither inserted nor found stored before",
        Step::Runs
    )]
    RunMissing {
        /// The host's name.
        host: String,
        /// The agent database's instance id.
        instance: String,
        /// The agent's run id.
        run: i64,
    },
}

impl BatchError {
    /// The SQLSTATE the server answered with, when it answered.
    pub fn code(&self) -> Option<&SqlState> {
        match self {
            BatchError::Statement { source, .. } => source.code(),
            BatchError::HostMissing { .. } | BatchError::RunMissing { .. } => None,
        }
    }
}

/// The error of a failed statement at `step`.
fn at(step: Step) -> impl FnOnce(tokio_postgres::Error) -> BatchError {
    move |source| BatchError::Statement { step, source }
}

/// The hosts of a batch, each row locked and its id returned. A new host's kind is its
/// first run's; a known host's kind follows its latest run (`SUMMARY_SQL`), so a resent old
/// run changes nothing. `SET name = EXCLUDED.name` changes nothing either: it is what makes
/// the upsert lock and return a row that exists.
const HOSTS_SQL: &str = "INSERT INTO hosts (name, kind, kind_known)
     SELECT * FROM unnest($1::text[], $2::text[], $3::bool[]) ORDER BY 1
     ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
     RETURNING id, name";

/// The runs; a run stored before (same host, instance and agent run id) is skipped and not
/// returned, and so is a second copy within the batch.
const RUNS_SQL: &str = "INSERT INTO runs (host_id, agent_run_id, trigger, started_unix_ms, kind,
                          kind_known, healthy, mode, report, instance, inconclusive)
     SELECT * FROM unnest($1::int8[], $2::int8[], $3::text[], $4::int8[], $5::text[],
                          $6::bool[], $7::bool[], $8::text[], $9::json[], $10::text[],
                          $11::bool[])
     ON CONFLICT (host_id, instance, agent_run_id) DO NOTHING
     RETURNING id, host_id, instance, agent_run_id";

/// The collector ids of runs stored before: host id, instance, agent run id.
const EARLIER_SQL: &str = "SELECT r.id, r.host_id, r.instance, r.agent_run_id
     FROM unnest($1::int8[], $2::text[], $3::int8[]) AS u(host_id, instance, agent_run_id)
     JOIN runs r ON r.host_id = u.host_id AND r.instance = u.instance
                AND r.agent_run_id = u.agent_run_id";

/// One `run_paths` row a new run ($1..$4, one element a run): its paths are elements $5
/// to $6 (1-based, inclusive; none when $6 < $5) of the batch's path arrays $7..$11, which
/// hold the runs' paths one run after the other, each run's in report order. Slicing
/// copies; regrouping with `array_agg` sorted every aggregate of every run (measured
/// three times slower).
const PATHS_SQL: &str = "INSERT INTO run_paths (run_id, host_id, started_unix_ms, agent_run_id,
                               rnic, endpoint, latency_us, bandwidth_gbps, status)
     SELECT r.run_id, r.host_id, r.started_unix_ms, r.agent_run_id,
            ($7::text[])[r.lo:r.hi], ($8::text[])[r.lo:r.hi], ($9::float8[])[r.lo:r.hi],
            ($10::float8[])[r.lo:r.hi], ($11::text[])[r.lo:r.hi]
     FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::int4[], $6::int4[])
              AS r(run_id, host_id, started_unix_ms, agent_run_id, lo, hi)";

/// One `run_links` row a new run ($1): its links are elements $2 to $3 of the batch's link
/// arrays $4..$7, as in [`PATHS_SQL`].
const LINKS_SQL: &str = "INSERT INTO run_links (run_id, link, kind, status, abnormal_cnt)
     SELECT r.run_id, ($4::text[])[r.lo:r.hi], ($5::text[])[r.lo:r.hi],
            ($6::text[])[r.lo:r.hi], ($7::int4[])[r.lo:r.hi]
     FROM unnest($1::int8[], $2::int4[], $3::int4[]) AS r(run_id, lo, hi)";

/// The diagnoses of the new runs, one element each; a diagnosis's links as a JSON array.
const DIAGNOSES_SQL: &str = "INSERT INTO diagnoses (run_id, host_id, cause, links, rnic, evidence)
     SELECT d.run_id, d.host_id, d.cause, ARRAY(SELECT json_array_elements_text(d.links)),
            d.rnic, d.evidence
     FROM unnest($1::int8[], $2::int8[], $3::text[], $4::json[], $5::text[], $6::text[])
              AS d(run_id, host_id, cause, links, rnic, evidence)";

/// The new runs' sample sets ($1 the set's run id, which orders a host's sets; $2 its
/// host; elements $3 to $4 of the batch's sample arrays $5..$8), and each host of the batch
/// left with its newest $9 ([`HOST_RUNS`]) sets. A new set is newer than every stored set
/// of its host: run ids grow, and a batch has held its hosts' rows locked since before it
/// took ids. So a host with k new sets keeps its newest $9 - k stored ones, and at most its
/// newest $9 new ones ($10 the hosts with new sets, $11 how many each). One statement, so
/// that what is kept does not depend on the order in which pipelined statements run.
///
/// Rows that exist are found with `= ANY` of the hosts, which PostgreSQL answers from the
/// primary key whatever it believes of the table's size: joined to an `unnest`, a cached
/// plan scanned the whole table, once a batch, on the bench.
const SAMPLES_SQL: &str = "WITH new AS (
         SELECT s.seq, s.host_id, ($5::text[])[s.lo:s.hi] AS rnic,
                ($6::text[])[s.lo:s.hi] AS endpoint, ($7::float8[])[s.lo:s.hi] AS latency_us,
                ($8::float8[])[s.lo:s.hi] AS bandwidth_gbps,
                row_number() OVER (PARTITION BY s.host_id ORDER BY s.seq DESC) AS age
         FROM unnest($1::int8[], $2::int8[], $3::int4[], $4::int4[]) AS s(seq, host_id, lo, hi)),
     dropped AS (
         DELETE FROM host_samples h
         WHERE h.host_id = ANY($10::int8[])
           AND h.seq < coalesce(
               (SELECT min(seq) FROM (
                    SELECT seq FROM host_samples k WHERE k.host_id = h.host_id
                    ORDER BY seq DESC
                    LIMIT greatest($9::int4
                                   - ($11::int4[])[array_position($10::int8[], h.host_id)], 0))
                    AS kept),
               9223372036854775807))
     INSERT INTO host_samples (host_id, seq, rnic, endpoint, latency_us, bandwidth_gbps)
     SELECT host_id, seq, rnic, endpoint, latency_us, bandwidth_gbps FROM new
     WHERE age <= $9::int4";

/// Each host's summary row, one element a host with new runs: the runs counted ($2) and,
/// when the host's latest new run ($3, started at $4) is later than the row's latest (ties:
/// the later stored), that run's health, causes (a JSON array), rack, kind and the
/// thresholds it was judged with ($11, JSON or NULL) and whether it is inconclusive ($12). `$10`, the new runs that gave sample
/// sets, moves `paths_version`, which tells the baseline refresh to look at the host's kind
/// (`crate::refresh`). The rows are found with `= ANY`, as in [`SAMPLES_SQL`].
const SUMMARY_SQL: &str = "UPDATE hosts SET (runs, latest_run_id, latest_started_unix_ms,
                       latest_healthy, latest_causes, rack, kind, kind_known, paths_version,
                       last_received_unix_ms, latest_thresholds, latest_inconclusive) = (
         SELECT hosts.runs + u.runs,
                CASE WHEN n.latest THEN u.run_id ELSE hosts.latest_run_id END,
                CASE WHEN n.latest THEN u.started_unix_ms ELSE hosts.latest_started_unix_ms END,
                CASE WHEN n.latest THEN u.healthy ELSE hosts.latest_healthy END,
                CASE WHEN n.latest THEN ARRAY(SELECT json_array_elements_text(u.causes))
                     ELSE hosts.latest_causes END,
                CASE WHEN n.latest THEN u.rack ELSE hosts.rack END,
                CASE WHEN n.latest THEN u.kind ELSE hosts.kind END,
                CASE WHEN n.latest THEN u.kind_known ELSE hosts.kind_known END,
                hosts.paths_version + u.sample_sets,
                (extract(epoch FROM clock_timestamp()) * 1000)::int8,
                CASE WHEN n.latest THEN u.thresholds ELSE hosts.latest_thresholds END,
                CASE WHEN n.latest THEN u.inconclusive ELSE hosts.latest_inconclusive END
         FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::bool[], $6::json[],
                     $7::text[], $8::text[], $9::bool[], $10::int8[], $11::json[], $12::bool[])
                  AS u(host_id, runs, run_id, started_unix_ms, healthy, causes, rack, kind,
                       kind_known, sample_sets, thresholds, inconclusive),
              LATERAL (SELECT hosts.latest_run_id IS NULL
                              OR (u.started_unix_ms, u.run_id)
                                 > (hosts.latest_started_unix_ms, hosts.latest_run_id)
                              AS latest) n
         WHERE u.host_id = hosts.id)
     WHERE hosts.id = ANY($1::int8[])";

/// Whether a model of that name is built in: a run of another kind is stored, flagged.
fn kind_known(kind: &str) -> bool {
    model::builtin::names().any(|n| n == kind)
}

/// A stored run's key: host id, instance, agent run id.
type RunKey = (i64, String, i64);

/// Stores a batch of runs in one transaction and returns, in the batch's order, what
/// happened to each; returns after the commit. An error stores nothing of the batch.
pub async fn store_batch(
    client: &mut deadpool_postgres::Client,
    batch: &[Arrival],
) -> Result<Vec<Stored>, BatchError> {
    let tx = client.transaction().await.map_err(at(Step::Begin))?;
    let (hosts_sql, runs_sql) =
        tokio::try_join!(tx.prepare_cached(HOSTS_SQL), tx.prepare_cached(RUNS_SQL))
            .map_err(at(Step::Prepare))?;

    // The hosts, once each, in name order; a new host's kind is that of its first run here.
    let mut first_kind: BTreeMap<&str, &str> = BTreeMap::new();
    for a in batch {
        first_kind
            .entry(a.upload.host.as_str())
            .or_insert(a.report.host.as_str());
    }
    let names: Vec<&str> = first_kind.keys().copied().collect();
    let kinds: Vec<&str> = first_kind.values().copied().collect();
    let known: Vec<bool> = kinds.iter().map(|k| kind_known(k)).collect();
    let host_ids: HashMap<String, i64> = tx
        .query(&hosts_sql, &[&names, &kinds, &known])
        .await
        .map_err(at(Step::Hosts))?
        .iter()
        .map(|r| (r.get(1), r.get(0)))
        .collect();
    // Each run's host id, in the batch's order.
    let runs: Vec<i64> = batch
        .iter()
        .map(|a| {
            host_ids
                .get(&a.upload.host)
                .copied()
                .ok_or_else(|| BatchError::HostMissing {
                    host: a.upload.host.clone(),
                })
        })
        .collect::<Result<_, _>>()?;

    let agent_ids: Vec<i64> = batch.iter().map(|a| a.upload.id).collect();
    let triggers: Vec<&str> = batch.iter().map(|a| a.upload.trigger.as_str()).collect();
    let starts: Vec<i64> = batch.iter().map(|a| a.upload.started_unix_ms).collect();
    let run_kinds: Vec<&str> = batch.iter().map(|a| a.report.host.as_str()).collect();
    let run_known: Vec<bool> = run_kinds.iter().map(|k| kind_known(k)).collect();
    let healthy: Vec<bool> = batch.iter().map(|a| a.report.healthy).collect();
    let inconclusive: Vec<bool> = batch.iter().map(|a| is_inconclusive(&a.report)).collect();
    let modes: Vec<&str> = batch.iter().map(|a| a.report.mode.as_str()).collect();
    let reports: Vec<Json<&serde_json::value::RawValue>> =
        batch.iter().map(|a| Json(&*a.upload.report)).collect();
    let instances: Vec<&str> = batch.iter().map(|a| a.upload.instance.as_str()).collect();
    let inserted: HashMap<RunKey, i64> = tx
        .query(
            &runs_sql,
            &[
                &runs,
                &agent_ids,
                &triggers,
                &starts,
                &run_kinds,
                &run_known,
                &healthy,
                &modes,
                &reports,
                &instances,
                &inconclusive,
            ],
        )
        .await
        .map_err(at(Step::Runs))?
        .iter()
        .map(|r| ((r.get(1), r.get(2), r.get(3)), r.get(0)))
        .collect();

    // What happened to each run: the first copy of an inserted key is new, a later copy in
    // the batch is its duplicate, and a key not inserted was stored before.
    let key = |a: &Arrival, host_id: i64| (host_id, a.upload.instance.clone(), a.upload.id);
    let mut claimed: HashMap<RunKey, bool> = HashMap::new();
    let mut outcome: Vec<Option<Stored>> = Vec::with_capacity(batch.len());
    for (a, &host_id) in batch.iter().zip(&runs) {
        let k = key(a, host_id);
        outcome.push(inserted.get(&k).map(|&id| {
            if std::mem::replace(claimed.entry(k).or_default(), true) {
                Stored::Duplicate(id)
            } else {
                Stored::New(id)
            }
        }));
    }
    let earlier: Vec<(&Arrival, i64)> = batch
        .iter()
        .zip(&runs)
        .zip(&outcome)
        .filter(|(_, o)| o.is_none())
        .map(|((a, &host_id), _)| (a, host_id))
        .collect();
    if !earlier.is_empty() {
        let hosts: Vec<i64> = earlier.iter().map(|&(_, host_id)| host_id).collect();
        let instances: Vec<&str> = earlier
            .iter()
            .map(|(a, _)| a.upload.instance.as_str())
            .collect();
        let ids: Vec<i64> = earlier.iter().map(|(a, _)| a.upload.id).collect();
        let stored: HashMap<RunKey, i64> = tx
            .query(EARLIER_SQL, &[&hosts, &instances, &ids])
            .await
            .map_err(at(Step::EarlierRuns))?
            .iter()
            .map(|r| ((r.get(1), r.get(2), r.get(3)), r.get(0)))
            .collect();
        for ((a, &host_id), o) in batch.iter().zip(&runs).zip(&mut outcome) {
            if o.is_none() {
                *o = stored
                    .get(&key(a, host_id))
                    .map(|&id| Stored::Duplicate(id));
            }
        }
    }
    // A run skipped by the unique key is stored: unless something beside the collector
    // made it vanish, which fails the batch rather than the writer.
    let outcome: Vec<Stored> = batch
        .iter()
        .zip(outcome)
        .map(|(a, o)| {
            o.ok_or_else(|| BatchError::RunMissing {
                host: a.upload.host.clone(),
                instance: a.upload.instance.clone(),
                run: a.upload.id,
            })
        })
        .collect::<Result<_, _>>()?;

    let new: Vec<NewRun> = batch
        .iter()
        .zip(&runs)
        .zip(&outcome)
        .filter_map(|((a, &host_id), o)| match o {
            Stored::New(run_id) => Some(NewRun {
                arrival: a,
                run_id: *run_id,
                host_id,
            }),
            Stored::Duplicate(_) => None,
        })
        .collect();
    if new.is_empty() {
        // Resends only: the hosts' upsert changed nothing worth keeping.
        tx.rollback().await.map_err(at(Step::End))?;
        return Ok(outcome);
    }
    write_rows(&tx, &new).await?;
    tx.commit().await.map_err(at(Step::End))?;
    Ok(outcome)
}

/// A run of the batch that is stored now.
struct NewRun<'a> {
    arrival: &'a Arrival,
    run_id: i64,
    host_id: i64,
}

/// The new runs' paths, links, diagnoses, sample sets and host summaries: five statements,
/// pipelined.
async fn write_rows(
    tx: &deadpool_postgres::Transaction<'_>,
    new: &[NewRun<'_>],
) -> Result<(), BatchError> {
    let (paths_sql, links_sql, diagnoses_sql, samples_sql, summary_sql) = tokio::try_join!(
        tx.prepare_cached(PATHS_SQL),
        tx.prepare_cached(LINKS_SQL),
        tx.prepare_cached(DIAGNOSES_SQL),
        tx.prepare_cached(SAMPLES_SQL),
        tx.prepare_cached(SUMMARY_SQL),
    )
    .map_err(at(Step::Prepare))?;

    let run_ids: Vec<i64> = new.iter().map(|r| r.run_id).collect();
    let host_ids: Vec<i64> = new.iter().map(|r| r.host_id).collect();
    let starts: Vec<i64> = new
        .iter()
        .map(|r| r.arrival.upload.started_unix_ms)
        .collect();
    let agent_ids: Vec<i64> = new.iter().map(|r| r.arrival.upload.id).collect();

    let (mut path_lo, mut path_hi) = (vec![], vec![]);
    let (mut rnics, mut endpoints, mut latency, mut bandwidth, mut path_status) =
        (vec![], vec![], vec![], vec![], vec![]);
    for r in new {
        path_lo.push(rnics.len() as i32 + 1);
        for p in &r.arrival.report.paths {
            rnics.push(p.rnic.to_string());
            endpoints.push(p.endpoint.to_string());
            latency.push(p.latency_us);
            bandwidth.push(p.bandwidth_gbps);
            path_status.push(p.status.as_str());
        }
        path_hi.push(rnics.len() as i32);
    }

    let (mut link_lo, mut link_hi) = (vec![], vec![]);
    let (mut link_ids, mut link_kinds, mut link_status, mut counts) =
        (vec![], vec![], vec![], vec![]);
    for r in new {
        link_lo.push(link_ids.len() as i32 + 1);
        for l in &r.arrival.report.links {
            link_ids.push(l.id.to_string());
            link_kinds.push(l.kind.as_str());
            link_status.push(l.status.as_str());
            counts.push(i32::try_from(l.abnormal_cnt).unwrap_or(i32::MAX));
        }
        link_hi.push(link_ids.len() as i32);
    }

    let diagnoses = new.iter().flat_map(|r| {
        r.arrival
            .report
            .diagnoses
            .iter()
            .map(move |d| (r.run_id, r.host_id, d))
    });
    let (mut d_runs, mut d_hosts, mut d_causes, mut d_links, mut d_rnics, mut d_evidence) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for (run_id, host_id, d) in diagnoses {
        d_runs.push(run_id);
        d_hosts.push(host_id);
        d_causes.push(d.cause.as_str());
        d_links.push(Json(&d.links));
        d_rnics.push(d.rnic.as_ref().map(|r| r.to_string()));
        d_evidence.push(d.evidence.as_str());
    }

    let sets: Vec<(&NewRun, Samples)> = new
        .iter()
        .map(|r| (r, Samples::of(&r.arrival.report)))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    let set_ids: Vec<i64> = sets.iter().map(|(r, _)| r.run_id).collect();
    let set_hosts: Vec<i64> = sets.iter().map(|(r, _)| r.host_id).collect();
    let (mut set_lo, mut set_hi) = (vec![], vec![]);
    let (mut s_rnics, mut s_endpoints, mut s_latency, mut s_bandwidth) =
        (vec![], vec![], vec![], vec![]);
    for (_, s) in &sets {
        set_lo.push(s_rnics.len() as i32 + 1);
        s_rnics.extend_from_slice(&s.rnics);
        s_endpoints.extend_from_slice(&s.endpoints);
        s_latency.extend_from_slice(&s.latency_us);
        s_bandwidth.extend_from_slice(&s.bandwidth_gbps);
        set_hi.push(s_rnics.len() as i32);
    }

    let set_counts = SetCounts::of(&set_hosts);
    let summary = Summaries::of(new, &set_ids);

    let paths_params: [&(dyn ToSql + Sync); 11] = [
        &run_ids,
        &host_ids,
        &starts,
        &agent_ids,
        &path_lo,
        &path_hi,
        &rnics,
        &endpoints,
        &latency,
        &bandwidth,
        &path_status,
    ];
    let links_params: [&(dyn ToSql + Sync); 7] = [
        &run_ids,
        &link_lo,
        &link_hi,
        &link_ids,
        &link_kinds,
        &link_status,
        &counts,
    ];
    let diagnoses_params: [&(dyn ToSql + Sync); 6] = [
        &d_runs,
        &d_hosts,
        &d_causes,
        &d_links,
        &d_rnics,
        &d_evidence,
    ];
    let samples_params: [&(dyn ToSql + Sync); 11] = [
        &set_ids,
        &set_hosts,
        &set_lo,
        &set_hi,
        &s_rnics,
        &s_endpoints,
        &s_latency,
        &s_bandwidth,
        &HOST_RUNS,
        &set_counts.hosts,
        &set_counts.sets,
    ];
    let summary_params: [&(dyn ToSql + Sync); 12] = [
        &summary.host_ids,
        &summary.runs,
        &summary.run_ids,
        &summary.starts,
        &summary.healthy,
        &summary.causes,
        &summary.racks,
        &summary.kinds,
        &summary.kinds_known,
        &summary.sample_sets,
        &summary.thresholds,
        &summary.inconclusive,
    ];
    let (paths, links, diagnoses, samples, summary) = tokio::join!(
        tx.execute(&paths_sql, &paths_params),
        tx.execute(&links_sql, &links_params),
        tx.execute(&diagnoses_sql, &diagnoses_params),
        tx.execute(&samples_sql, &samples_params),
        tx.execute(&summary_sql, &summary_params),
    );
    // Pipelined, in whatever order `join!` first polls them: the statement the server
    // refused is the one whose error is not "current transaction is aborted", which is
    // all the statements sent after it get. Its step says which part of the run it was.
    let mut aborted = None;
    let results = [
        (Step::Paths, paths),
        (Step::Links, links),
        (Step::Diagnoses, diagnoses),
        (Step::SampleSets, samples),
        (Step::Summaries, summary),
    ];
    for (step, result) in results {
        if let Err(source) = result {
            if source.code() != Some(&SqlState::IN_FAILED_SQL_TRANSACTION) {
                return Err(BatchError::Statement { step, source });
            }
            aborted.get_or_insert(BatchError::Statement { step, source });
        }
    }
    aborted.map_or(Ok(()), Err)
}

/// The hosts with new sample sets, and how many each: [`SAMPLES_SQL`]'s $10 and $11.
struct SetCounts {
    hosts: Vec<i64>,
    sets: Vec<i32>,
}

impl SetCounts {
    fn of(set_hosts: &[i64]) -> SetCounts {
        let mut counts: BTreeMap<i64, i32> = BTreeMap::new();
        for &h in set_hosts {
            *counts.entry(h).or_default() += 1;
        }
        SetCounts {
            hosts: counts.keys().copied().collect(),
            sets: counts.values().copied().collect(),
        }
    }
}

/// [`SUMMARY_SQL`]'s arrays: per host with new runs, their count and the latest of them.
#[derive(Default)]
struct Summaries {
    host_ids: Vec<i64>,
    runs: Vec<i64>,
    run_ids: Vec<i64>,
    starts: Vec<i64>,
    healthy: Vec<bool>,
    causes: Vec<Json<Vec<&'static str>>>,
    racks: Vec<Option<String>>,
    kinds: Vec<String>,
    kinds_known: Vec<bool>,
    sample_sets: Vec<i64>,
    thresholds: Vec<Option<Json<Thresholds>>>,
    inconclusive: Vec<bool>,
}

impl Summaries {
    /// From the new runs, with the ids of those that gave sample sets.
    fn of(new: &[NewRun], set_ids: &[i64]) -> Summaries {
        let mut by_host: BTreeMap<i64, Vec<&NewRun>> = BTreeMap::new();
        for r in new {
            by_host.entry(r.host_id).or_default().push(r);
        }
        let mut s = Summaries::default();
        for (host_id, runs) in by_host {
            // Every host here has a new run: `by_host` was made from them.
            let Some(latest) = runs
                .iter()
                .max_by_key(|r| (r.arrival.upload.started_unix_ms, r.run_id))
            else {
                continue;
            };
            let (upload, report) = (&latest.arrival.upload, &latest.arrival.report);
            let mut causes: Vec<&'static str> =
                report.diagnoses.iter().map(|d| d.cause.as_str()).collect();
            causes.sort();
            causes.dedup();
            s.host_ids.push(host_id);
            s.runs.push(runs.len() as i64);
            s.run_ids.push(latest.run_id);
            s.starts.push(upload.started_unix_ms);
            s.healthy.push(report.healthy);
            s.causes.push(Json(causes));
            s.racks.push(upload.rack.clone());
            s.kinds.push(report.host.clone());
            s.kinds_known.push(kind_known(&report.host));
            s.sample_sets
                .push(runs.iter().filter(|r| set_ids.contains(&r.run_id)).count() as i64);
            s.thresholds.push(report.thresholds.map(Json));
            s.inconclusive.push(is_inconclusive(report));
        }
        s
    }
}
