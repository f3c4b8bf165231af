//! The fleet's read API: baselines, slow hosts, status and causes (issue 14 part 2).
//!
//! | path | what |
//! |---|---|
//! | `GET /api/hosts/{host}/baseline` | each path of the host's latest run against its own baseline or its kind's fleet baseline, with a verdict |
//! | `GET /api/kinds/{kind}/baseline` | the kind's fleet baseline per path, and the hosts of its batch |
//! | `GET /api/fleet/slow-hosts?kind=K&limit=N` | hosts persistently below their kind's baseline under Abnormal_th, worst first, with the evidence |
//! | `GET /api/fleet/status` | host counts (healthy, unhealthy, stale), kinds, causes, runs stored, last ingest |
//! | `GET /api/fleet/causes` | each cause with the hosts whose latest run has it |
//!
//! Reads that need a kind's baseline refresh it first when it has unseen values, so they
//! always judge against every stored run; the collector's background refresh keeps that
//! rare.

use crate::api::{query_number, ApiError, Shared};
use crate::refresh;
use analyze::fleet::baseline;
use analyze::fleet::judge::{self, JudgedPath};
use analyze::fleet::slow::{self, SlowHost};
use axum::extract::{Path as UrlPath, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use model::{Report, Thresholds};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A host whose latest run started longer ago than this is stale: three of Hostping 5's
/// 5-minute host checks missed in a row.
pub const STALE_AFTER_MS: i64 = 3 * 5 * 60 * 1000;
/// Slow hosts listed when `limit` is not given, and the most one answer holds.
const DEFAULT_SLOW_LIMIT: i64 = 50;
const MAX_SLOW_LIMIT: i64 = 10_000;

/// The routes of this module.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/hosts/{host}/baseline", get(host_baseline))
        .route("/api/kinds/{kind}/baseline", get(kind_baseline))
        .route("/api/fleet/slow-hosts", get(slow_hosts))
        .route("/api/fleet/status", get(status))
        .route("/api/fleet/causes", get(causes))
}

/// Abnormal_th and the rest: the paper's defaults (Hostping 5), as the agents use them.
fn thresholds() -> Thresholds {
    Thresholds::default()
}

fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn host_baseline(
    State(shared): State<Shared>,
    UrlPath(host): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let mut client = shared.pool.get().await?;
    let row = client
        .query_opt(
            "SELECT h.kind, h.rack, r.report, r.id, r.agent_run_id, r.started_unix_ms
             FROM hosts h LEFT JOIN runs r ON r.id = h.latest_run_id WHERE h.name = $1",
            &[&host],
        )
        .await?
        .ok_or_else(|| ApiError::NoHost(host.clone()))?;
    let kind: String = row.get(0);
    let rack: Option<String> = row.get(1);
    refresh::ensure_fresh(&mut client, &kind).await?;
    let fleet = refresh::load(&client, &kind).await?;
    let th = thresholds();
    let (paths, run) = match row.get::<_, Option<Value>>(2) {
        None => (Vec::new(), Value::Null),
        Some(report) => {
            let stored: i64 = row.get(3);
            let report: Report = serde_json::from_value(report).map_err(|e| ApiError::Stored {
                run: stored,
                reason: e.to_string(),
            })?;
            let own = judge::has_own_baseline(&report);
            let busy = report.mode == model::Mode::Busy;
            let paths: Vec<JudgedPath> = report
                .paths
                .iter()
                .map(|p| {
                    let key = (p.rnic.to_string(), p.endpoint.to_string());
                    judge::judge(p, own, fleet.get(&key), busy, &th)
                })
                .collect();
            let run = json!({"id": row.get::<_, i64>(4), "started_unix_ms": row.get::<_, i64>(5),
                             "mode": report.mode, "baseline": report.baseline});
            (paths, run)
        }
    };
    Ok(Json(json!({
        "host": host,
        "kind": kind,
        "rack": rack,
        "run": run,
        "paths": paths,
    })))
}

async fn kind_baseline(
    State(shared): State<Shared>,
    UrlPath(kind): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let mut client = shared.pool.get().await?;
    let known = client
        .query_one("SELECT count(*) FROM hosts WHERE kind = $1", &[&kind])
        .await?
        .get::<_, i64>(0);
    if known == 0 {
        return Err(ApiError::NoKind(kind));
    }
    refresh::ensure_fresh(&mut client, &kind).await?;
    let fleet = refresh::load(&client, &kind).await?;
    let batch: Vec<String> = client
        .query(
            "SELECT host FROM fleet_batches WHERE kind = $1 ORDER BY host",
            &[&kind],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let refreshed: Option<i64> = client
        .query_one(
            "SELECT max(refreshed_unix_ms) FROM fleet_baselines WHERE kind = $1",
            &[&kind],
        )
        .await?
        .get(0);
    let paths: Vec<Value> = fleet
        .values()
        .map(|p| {
            json!({
                "rnic": p.rnic, "endpoint": p.endpoint,
                "latency_us": p.latency.hosts.median,
                "latency_mad_us": p.latency.hosts.mad,
                "latency_run_mad_us": p.latency.run_mad,
                "bandwidth_gbps": p.bandwidth.hosts.median,
                "bandwidth_mad_gbps": p.bandwidth.hosts.mad,
                "bandwidth_run_mad_gbps": p.bandwidth.run_mad,
                "hosts": p.hosts, "runs": p.runs,
            })
        })
        .collect();
    Ok(Json(json!({
        "kind": kind,
        "hosts_of_kind": known,
        "hosts": batch,
        "refreshed_unix_ms": refreshed,
        "min_hosts": baseline::MIN_FLEET_HOSTS,
        "host_runs": baseline::HOST_RUNS,
        "batch_hosts": baseline::BATCH_HOSTS,
        "paths": paths,
    })))
}

#[derive(serde::Deserialize)]
struct SlowQuery {
    kind: Option<String>,
    limit: Option<String>,
}

async fn slow_hosts(
    State(shared): State<Shared>,
    Query(q): Query<SlowQuery>,
) -> Result<Json<Vec<SlowHost>>, ApiError> {
    let limit = query_number(
        "limit",
        q.limit.as_deref(),
        DEFAULT_SLOW_LIMIT,
        1..=MAX_SLOW_LIMIT,
    )?;
    let mut client = shared.pool.get().await?;
    let kinds: Vec<String> = match q.kind {
        Some(k) => vec![k],
        None => client
            .query("SELECT DISTINCT kind FROM hosts ORDER BY kind", &[])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect(),
    };
    let th = thresholds();
    let mut found = Vec::new();
    for kind in kinds {
        refresh::ensure_fresh(&mut client, &kind).await?;
        let fleet = refresh::load(&client, &kind).await?;
        if fleet.is_empty() {
            continue;
        }
        let rows = client
            .query(
                "SELECT h.name, h.rack, s.rnic, s.endpoint, s.latency_us, s.bandwidth_gbps
                 FROM hosts h JOIN host_samples s ON s.host_id = h.id
                 WHERE h.kind = $1 ORDER BY h.name, s.seq",
                &[&kind],
            )
            .await?;
        let mut by_host: BTreeMap<String, (Option<String>, Vec<slow::SlowPath>)> = rows
            .iter()
            .map(|r| (r.get(0), (r.get(1), Vec::new())))
            .collect();
        let rings = baseline::rings(
            rows.iter()
                .map(|r| (r.get(0), refresh::stored_samples(r, 2))),
        );
        for ring in &rings {
            if let (Some(f), Some(entry)) = (
                fleet.get(&(ring.rnic.clone(), ring.endpoint.clone())),
                by_host.get_mut(&ring.host),
            ) {
                entry.1.extend(slow::slow_paths(ring, f, &th));
            }
        }
        found.extend(
            by_host
                .into_iter()
                .map(|(host, (rack, paths))| slow::slow_host(host, kind.clone(), rack, paths)),
        );
    }
    let mut ranked = slow::rank(found);
    // query_number kept it within 1..=MAX_SLOW_LIMIT.
    ranked.truncate(limit as usize);
    Ok(Json(ranked))
}

async fn status(State(shared): State<Shared>) -> Result<Json<Value>, ApiError> {
    let client = shared.pool.get().await?;
    let now = now_unix_ms();
    let stale_before = now - STALE_AFTER_MS;
    let totals = client
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE latest_healthy),
                    count(*) FILTER (WHERE NOT latest_healthy),
                    count(*) FILTER (WHERE latest_started_unix_ms < $1),
                    COALESCE(sum(runs), 0)::int8, max(last_received_unix_ms),
                    max(latest_started_unix_ms)
             FROM hosts",
            &[&stale_before],
        )
        .await?;
    let kinds: Vec<Value> = client
        .query(
            "SELECT kind, bool_and(kind_known), count(*), count(*) FILTER (WHERE NOT latest_healthy),
                    count(*) FILTER (WHERE latest_started_unix_ms < $1)
             FROM hosts GROUP BY kind ORDER BY count(*) DESC, kind",
            &[&stale_before],
        )
        .await?
        .iter()
        .map(|r| {
            json!({"kind": r.get::<_, String>(0), "kind_known": r.get::<_, bool>(1),
                   "hosts": r.get::<_, i64>(2), "unhealthy": r.get::<_, i64>(3),
                   "stale": r.get::<_, i64>(4)})
        })
        .collect();
    let causes: Vec<Value> = client
        .query(
            "SELECT c, count(*) FROM hosts, unnest(latest_causes) AS c
             GROUP BY c ORDER BY count(*) DESC, c",
            &[],
        )
        .await?
        .iter()
        .map(|r| json!({"cause": r.get::<_, String>(0), "hosts": r.get::<_, i64>(1)}))
        .collect();
    Ok(Json(json!({
        "hosts": totals.get::<_, i64>(0),
        "healthy": totals.get::<_, i64>(1),
        "unhealthy": totals.get::<_, i64>(2),
        "stale": totals.get::<_, i64>(3),
        "stale_after_ms": STALE_AFTER_MS,
        "runs": totals.get::<_, i64>(4),
        "last_ingest_unix_ms": totals.get::<_, Option<i64>>(5),
        "last_run_unix_ms": totals.get::<_, Option<i64>>(6),
        "now_unix_ms": now,
        "kinds": kinds,
        "causes": causes,
    })))
}

async fn causes(State(shared): State<Shared>) -> Result<Json<Vec<Value>>, ApiError> {
    let client = shared.pool.get().await?;
    let rows = client
        .query(
            "SELECT d.cause, h.name, h.kind, h.rack, h.latest_started_unix_ms, d.links, d.rnic,
                    d.evidence
             FROM hosts h JOIN diagnoses d ON d.run_id = h.latest_run_id
             ORDER BY d.cause, h.name",
            &[],
        )
        .await?;
    // cause -> host -> its entry with the diagnoses of that cause
    let mut by_cause: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for r in &rows {
        let host: String = r.get(1);
        let entry = by_cause
            .entry(r.get(0))
            .or_default()
            .entry(host.clone())
            .or_insert_with(|| {
                json!({"host": host, "kind": r.get::<_, String>(2),
                       "rack": r.get::<_, Option<String>>(3),
                       "last_run_unix_ms": r.get::<_, Option<i64>>(4), "diagnoses": []})
            });
        if let Some(list) = entry["diagnoses"].as_array_mut() {
            list.push(json!({"links": r.get::<_, Vec<String>>(5),
                             "rnic": r.get::<_, Option<String>>(6),
                             "evidence": r.get::<_, String>(7)}));
        }
    }
    let mut out: Vec<Value> = by_cause
        .into_iter()
        .map(|(cause, hosts)| {
            let hosts: Vec<Value> = hosts.into_values().collect();
            json!({"cause": cause, "count": hosts.len(), "hosts": hosts})
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c["count"].as_u64().unwrap_or(0)));
    Ok(Json(out))
}
