//! The fleet's read API: baselines, slow hosts, status and causes (issue 14 part 2).
//!
//! | path | what |
//! |---|---|
//! | `GET /api/hosts/{host}/baseline` | each path of the host's latest run against its own baseline or its kind's fleet baseline, with a verdict |
//! | `GET /api/kinds/{kind}/baseline` | the kind's fleet baseline per path, and the hosts of its batch |
//! | `GET /api/fleet/slow-hosts?kind=K&limit=N` | hosts persistently below their kind's baseline under Abnormal_th, worst first, with the evidence |
//! | `GET /api/fleet/status` | host counts (healthy, unhealthy, inconclusive, stale), kinds, causes, runs stored, last ingest |
//! | `GET /api/fleet/causes` | each cause with the hosts whose latest run has it |
//!
//! Reads that need a kind's baseline refresh it first when it has unseen values, so they
//! always judge against every stored run; the collector's background refresh keeps that
//! rare.
//!
//! The answers are `fleet_api::read`'s types, which `hostping fleet` reads back.

use crate::database::Db;
use crate::refresh;
use analyze::fleet::judge::{self, JudgedPath};
use analyze::fleet::slow::{self, SlowHost};
use analyze::fleet::{baseline, stale_before, STALE_AFTER_MS};
use axum::extract::{Path as UrlPath, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use deadpool_postgres::Pool;
use fleet_api::read::{
    BaselineRun, CauseCount, CauseDiagnosis, CauseHost, CauseHosts, FleetStatus, HostBaseline,
    KindBaseline, KindBaselinePath, KindStatus, ReadError, SlowHostsQuery,
};
use model::{Report, Thresholds};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The routes of this module, for a router whose state is the database's pool.
pub(crate) fn routes() -> Router<Pool> {
    Router::new()
        .route("/api/hosts/{host}/baseline", get(host_baseline))
        .route("/api/kinds/{kind}/baseline", get(kind_baseline))
        .route("/api/fleet/slow-hosts", get(slow_hosts))
        .route("/api/fleet/status", get(status))
        .route("/api/fleet/causes", get(causes))
}

/// The thresholds a host's latest run was judged with (`hosts.latest_thresholds`, from its
/// report): the collector judges a host as its agent does. NULL, a report without them, was
/// judged with Hostping 5's defaults; a stored value that does not read back is refused
/// (500) rather than judged with thresholds the agent did not use.
fn stored_thresholds(
    host: &str,
    stored: Option<serde_json::Value>,
) -> Result<Thresholds, ReadError> {
    match stored {
        None => Ok(Thresholds::default()),
        Some(value) => serde_json::from_value(value).map_err(|source| {
            ReadError::internal(StoredThresholdsError {
                host: host.to_owned(),
                source,
            })
        }),
    }
}

/// A host's stored thresholds that do not read back as thresholds (500).
#[derive(Debug, thiserror::Error)]
#[error("host {host}: stored thresholds do not read back: {source}")]
struct StoredThresholdsError {
    host: String,
    source: serde_json::Error,
}

/// A stored report that does not read back as a report (500).
#[derive(Debug, thiserror::Error)]
#[error("stored run {run}: {source}")]
struct StoredRunError {
    /// The run's row id.
    run: i64,
    /// Why.
    source: serde_json::Error,
}

async fn host_baseline(
    State(pool): State<Pool>,
    UrlPath(host): UrlPath<String>,
) -> Result<Json<HostBaseline>, ReadError> {
    let mut client = pool.get().await.db()?;
    let row = client
        .query_opt(
            "SELECT h.kind, h.rack, r.report, r.id, r.agent_run_id, r.started_unix_ms
             FROM hosts h LEFT JOIN runs r ON r.id = h.latest_run_id WHERE h.name = $1",
            &[&host],
        )
        .await
        .db()?
        .ok_or_else(|| ReadError::NoHost {
            host: host.clone(),
            only: None,
        })?;
    let kind: String = row.get(0);
    let rack: Option<String> = row.get(1);
    refresh::ensure_fresh(&mut client, &kind).await?;
    let fleet = refresh::load(&client, &kind).await.db()?;
    let (paths, run) = match row.get::<_, Option<serde_json::Value>>(2) {
        None => (Vec::new(), None),
        Some(report) => {
            let stored: i64 = row.get(3);
            let report: Report = serde_json::from_value(report).map_err(|source| {
                ReadError::internal(StoredRunError {
                    run: stored,
                    source,
                })
            })?;
            let own = judge::has_own_baseline(&report);
            let busy = report.mode == model::Mode::Busy;
            // Judged with the thresholds the run was judged with on its host.
            let th = report.judged_with();
            let paths: Vec<JudgedPath> = report
                .paths
                .iter()
                .map(|p| {
                    let key = (p.rnic.to_string(), p.endpoint.to_string());
                    judge::judge(p, own, fleet.get(&key), busy, &th)
                })
                .collect();
            let run = BaselineRun {
                baseline: report.baseline,
                id: row.get(4),
                mode: report.mode,
                started_unix_ms: row.get(5),
            };
            (paths, Some(run))
        }
    };
    Ok(Json(HostBaseline {
        host,
        kind,
        paths,
        rack,
        run,
    }))
}

async fn kind_baseline(
    State(pool): State<Pool>,
    UrlPath(kind): UrlPath<String>,
) -> Result<Json<KindBaseline>, ReadError> {
    let mut client = pool.get().await.db()?;
    let known = client
        .query_one("SELECT count(*) FROM hosts WHERE kind = $1", &[&kind])
        .await
        .db()?
        .get::<_, i64>(0);
    if known == 0 {
        return Err(ReadError::NoKind(kind));
    }
    refresh::ensure_fresh(&mut client, &kind).await?;
    let fleet = refresh::load(&client, &kind).await.db()?;
    let batch: Vec<String> = client
        .query(
            "SELECT host FROM fleet_batches WHERE kind = $1 ORDER BY host",
            &[&kind],
        )
        .await
        .db()?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let refreshed: Option<i64> = client
        .query_one(
            "SELECT max(refreshed_unix_ms) FROM fleet_baselines WHERE kind = $1",
            &[&kind],
        )
        .await
        .db()?
        .get(0);
    let paths = fleet
        .into_values()
        .map(|p| KindBaselinePath {
            bandwidth_gbps: p.bandwidth.hosts.median,
            bandwidth_mad_gbps: p.bandwidth.hosts.mad,
            bandwidth_run_mad_gbps: p.bandwidth.run_mad,
            endpoint: p.endpoint,
            hosts: p.hosts,
            latency_mad_us: p.latency.hosts.mad,
            latency_run_mad_us: p.latency.run_mad,
            latency_us: p.latency.hosts.median,
            rnic: p.rnic,
            runs: p.runs,
        })
        .collect();
    Ok(Json(KindBaseline {
        batch_hosts: baseline::BATCH_HOSTS,
        host_runs: baseline::HOST_RUNS.into(),
        hosts: batch,
        hosts_of_kind: known,
        kind,
        min_hosts: baseline::MIN_FLEET_HOSTS,
        paths,
        refreshed_unix_ms: refreshed,
    }))
}

async fn slow_hosts(
    State(pool): State<Pool>,
    Query(q): Query<SlowHostsQuery>,
) -> Result<Json<Vec<SlowHost>>, ReadError> {
    let limit = q.limit()?;
    let mut client = pool.get().await.db()?;
    let kinds: Vec<String> = match q.kind {
        Some(k) => vec![k],
        None => client
            .query("SELECT DISTINCT kind FROM hosts ORDER BY kind", &[])
            .await
            .db()?
            .iter()
            .map(|r| r.get(0))
            .collect(),
    };
    let mut found = Vec::new();
    for kind in kinds {
        refresh::ensure_fresh(&mut client, &kind).await?;
        let fleet = refresh::load(&client, &kind).await.db()?;
        if fleet.is_empty() {
            continue;
        }
        let rows = client
            .query(
                "SELECT h.name, h.rack, s.rnic, s.endpoint, s.latency_us, s.bandwidth_gbps,
                        h.latest_thresholds
                 FROM hosts h JOIN host_samples s ON s.host_id = h.id
                 WHERE h.kind = $1 ORDER BY h.name, s.seq",
                &[&kind],
            )
            .await
            .db()?;
        // Per host: its rack, the thresholds its runs are judged with, its slow paths.
        let mut by_host: BTreeMap<String, (Option<String>, Thresholds, Vec<slow::SlowPath>)> =
            BTreeMap::new();
        for r in &rows {
            let host: String = r.get(0);
            if let std::collections::btree_map::Entry::Vacant(entry) = by_host.entry(host) {
                let th = stored_thresholds(entry.key(), r.get(6))?;
                entry.insert((r.get(1), th, Vec::new()));
            }
        }
        let rings = baseline::rings(
            rows.iter()
                .map(|r| (r.get(0), refresh::stored_samples(r, 2))),
        );
        for ring in &rings {
            if let (Some(f), Some(entry)) = (
                fleet.get(&(ring.rnic.clone(), ring.endpoint.clone())),
                by_host.get_mut(&ring.host),
            ) {
                let slow = slow::slow_paths(ring, f, &entry.1);
                entry.2.extend(slow);
            }
        }
        found.extend(
            by_host
                .into_iter()
                .map(|(host, (rack, _, paths))| slow::slow_host(host, kind.clone(), rack, paths)),
        );
    }
    let mut ranked = slow::rank(found);
    ranked.truncate(limit);
    Ok(Json(ranked))
}

async fn status(State(pool): State<Pool>) -> Result<Json<FleetStatus>, ReadError> {
    let client = pool.get().await.db()?;
    let now = model::time::unix_ms(SystemTime::now());
    let stale_bound = stale_before(now);
    let totals = client
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE latest_healthy AND NOT latest_inconclusive),
                    count(*) FILTER (WHERE NOT latest_healthy AND NOT latest_inconclusive),
                    count(*) FILTER (WHERE latest_started_unix_ms < $1),
                    COALESCE(sum(runs), 0)::int8, max(last_received_unix_ms),
                    max(latest_started_unix_ms),
                    count(*) FILTER (WHERE latest_inconclusive)
             FROM hosts",
            &[&stale_bound],
        )
        .await
        .db()?;
    let kinds = client
        .query(
            "SELECT kind, bool_and(kind_known), count(*),
                    count(*) FILTER (WHERE NOT latest_healthy AND NOT latest_inconclusive),
                    count(*) FILTER (WHERE latest_started_unix_ms < $1),
                    count(*) FILTER (WHERE latest_inconclusive)
             FROM hosts GROUP BY kind ORDER BY count(*) DESC, kind",
            &[&stale_bound],
        )
        .await
        .db()?
        .iter()
        .map(|r| KindStatus {
            hosts: r.get(2),
            inconclusive: Some(r.get(5)),
            kind: r.get(0),
            kind_known: r.get(1),
            stale: r.get(4),
            unhealthy: r.get(3),
        })
        .collect();
    let causes = client
        .query(
            "SELECT c, count(*) FROM hosts, unnest(latest_causes) AS c
             GROUP BY c ORDER BY count(*) DESC, c",
            &[],
        )
        .await
        .db()?
        .iter()
        .map(|r| CauseCount {
            cause: r.get(0),
            hosts: r.get(1),
        })
        .collect();
    Ok(Json(FleetStatus {
        causes,
        healthy: totals.get(1),
        hosts: totals.get(0),
        inconclusive: Some(totals.get(7)),
        kinds,
        last_ingest_unix_ms: totals.get(5),
        last_run_unix_ms: totals.get(6),
        now_unix_ms: now,
        runs: totals.get(4),
        stale: totals.get(3),
        stale_after_ms: STALE_AFTER_MS,
        unhealthy: totals.get(2),
    }))
}

async fn causes(State(pool): State<Pool>) -> Result<Json<Vec<CauseHosts>>, ReadError> {
    let client = pool.get().await.db()?;
    let rows = client
        .query(
            "SELECT d.cause, h.name, h.kind, h.rack, h.latest_started_unix_ms, d.links, d.rnic,
                    d.evidence
             FROM hosts h JOIN diagnoses d ON d.run_id = h.latest_run_id
             ORDER BY d.cause, h.name",
            &[],
        )
        .await
        .db()?;
    // cause -> host -> its entry with the diagnoses of that cause
    let mut by_cause: BTreeMap<String, BTreeMap<String, CauseHost>> = BTreeMap::new();
    for r in &rows {
        let host: String = r.get(1);
        by_cause
            .entry(r.get(0))
            .or_default()
            .entry(host.clone())
            .or_insert_with(|| CauseHost {
                diagnoses: Vec::new(),
                host,
                kind: r.get(2),
                last_run_unix_ms: r.get(4),
                rack: r.get(3),
            })
            .diagnoses
            .push(CauseDiagnosis {
                evidence: r.get(7),
                links: r.get(5),
                rnic: r.get(6),
            });
    }
    let mut out: Vec<CauseHosts> = by_cause
        .into_iter()
        .map(|(cause, hosts)| {
            let hosts: Vec<CauseHost> = hosts.into_values().collect();
            CauseHosts {
                cause,
                count: hosts.len(),
                hosts,
            }
        })
        .collect();
    // Most hosts first; a stable sort keeps the causes' names in order within a count.
    out.sort_by_key(|c| std::cmp::Reverse(c.count));
    Ok(Json(out))
}
