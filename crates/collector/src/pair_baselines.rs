//! Recorded pair baselines: a real mesh's pairs judged against a healthy probe of the same
//! pair, as `hostping baseline` does for a host's paths.
//!
//! `POST /api/mesh {"record_baseline": true}` (`hostping mesh --record-baseline`) stores
//! each measured and verified pair's report in the `pair_baselines` table, keyed by its two
//! ends (host and RNIC, initiator first); the newest wins. Every later real mesh, and the
//! job verdict's probes, judge each pair that has one with the agents' own rule
//! (`analyze::pair_baseline::judge_against`) at the larger Abnormal_th of its two hosts'
//! agents (as their latest runs were judged; Hostping 5's 20 % by default); a pair without
//! one stays `uncertain` and says so. With each baseline the mesh's budget is kept, so that the
//! job verdict probes its pairs as their baselines were probed (like against like: the
//! tail of ten pings is not that of a thousand).

use deadpool_postgres::{Pool, PoolError};
use fleet_api::mesh::{BudgetAsked, MeshPair};
use fleet_api::pair::{PairReport, PairStatus};
use model::pair::PairFigures;
use serde::Serialize;
use std::collections::BTreeMap;

/// The `pair_baselines` table (schema version 9).
pub const MIGRATION: &str = "CREATE TABLE pair_baselines (
        host_a TEXT NOT NULL,
        rnic_a TEXT NOT NULL,
        host_b TEXT NOT NULL,
        rnic_b TEXT NOT NULL,
        recorded_unix_ms BIGINT NOT NULL,
        report JSON NOT NULL,
        budget JSON NOT NULL,
        PRIMARY KEY (host_a, rnic_a, host_b, rnic_b)
    );";

/// One end of a pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct End {
    /// The host's fleet name.
    pub host: String,
    /// Its RNIC id.
    pub rnic: String,
}

/// A pair's two ends, initiator first.
pub type Key = (End, End);

/// Why baselines could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// No connection from the pool (the database is down, or every connection busy).
    #[error("{0}")]
    Pool(#[from] PoolError),
    /// A statement failed or the connection broke.
    #[error("{}", crate::server_words(.0))]
    Database(#[from] tokio_postgres::Error),
    /// A stored report does not read as a pair's figures.
    #[error(
        "the recorded baseline of {}/{} -> {}/{} does not read as a pair: {source}",
        .a.host, .a.rnic, .b.host, .b.rnic
    )]
    Figures {
        /// The pair's initiator.
        a: End,
        /// Its other end.
        b: End,
        /// What serde_json said.
        source: serde_json::Error,
    },
    /// A budget could not be written as JSON.
    #[error("a budget: {0}")]
    Budget(#[source] serde_json::Error),
}

/// A recorded baseline: what it measured, and when.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its figures.
    pub figures: PairFigures,
    /// When it was recorded, ms since the Unix epoch.
    pub recorded_unix_ms: i64,
}

/// Why a pair without a recorded baseline is not judged.
pub const NO_BASELINE: &str = "measured, not judged: no baseline of this pair is recorded \
     (record one on a healthy fabric: hostping mesh --record-baseline)";

/// The ends of a pair (`a` and `b`, host and RNIC id).
pub fn key(pair: &MeshPair) -> Option<Key> {
    let end = |e: &fleet_api::pair::End| End {
        host: e.host.clone(),
        rnic: e.rnic.clone(),
    };
    Some((end(pair.a()), end(pair.b())))
}

/// The report of a pair that can serve as a baseline: measured to the end, its data
/// verified, not yet judged (the agents report such a pair `uncertain`), with its latency.
pub fn recordable(pair: &MeshPair) -> Option<&PairReport> {
    pair.report()
        .filter(|r| r.status == PairStatus::Uncertain && r.verified && r.latency_us.is_some())
}

/// Stores each recordable pair of `pairs` as its ends' baseline, replacing an older one,
/// with the `budget` it was probed with; marks each stored pair `"baseline": "recorded"`.
/// Returns how many were stored.
pub async fn record(
    pool: &Pool,
    pairs: &mut [MeshPair],
    budget: &BudgetAsked,
    now_unix_ms: i64,
) -> Result<usize, BaselineError> {
    let client = pool.get().await?;
    let budget = serde_json::to_string(budget).map_err(BaselineError::Budget)?;
    let mut stored = 0;
    for pair in pairs.iter_mut() {
        let Some(report) = recordable(pair) else {
            continue;
        };
        let report = serde_json::to_string(report).map_err(BaselineError::Budget)?;
        let Some((a, b)) = key(pair) else { continue };
        client
            .execute(
                "INSERT INTO pair_baselines
                     (host_a, rnic_a, host_b, rnic_b, recorded_unix_ms, report, budget)
                 VALUES ($1, $2, $3, $4, $5, $6::text::json, $7::text::json)
                 ON CONFLICT (host_a, rnic_a, host_b, rnic_b) DO UPDATE
                 SET recorded_unix_ms = EXCLUDED.recorded_unix_ms,
                     report = EXCLUDED.report, budget = EXCLUDED.budget",
                &[
                    &a.host,
                    &a.rnic,
                    &b.host,
                    &b.rnic,
                    &now_unix_ms,
                    &report,
                    &budget,
                ],
            )
            .await?;
        pair.notes_mut().baseline = Some("recorded".to_string());
        stored += 1;
    }
    Ok(stored)
}

/// The recorded baselines of `keys` (those that have one).
pub async fn load(pool: &Pool, keys: &[Key]) -> Result<BTreeMap<Key, Recorded>, BaselineError> {
    let client = pool.get().await?;
    let mut found = BTreeMap::new();
    for (a, b) in keys {
        let row = client
            .query_opt(
                "SELECT report::text, recorded_unix_ms FROM pair_baselines
                 WHERE host_a = $1 AND rnic_a = $2 AND host_b = $3 AND rnic_b = $4",
                &[&a.host, &a.rnic, &b.host, &b.rnic],
            )
            .await?;
        let Some(row) = row else { continue };
        let text: String = row.get(0);
        let figures = serde_json::from_str(&text).map_err(|source| BaselineError::Figures {
            a: a.clone(),
            b: b.clone(),
            source,
        })?;
        found.insert(
            (a.clone(), b.clone()),
            Recorded {
                figures,
                recorded_unix_ms: row.get(1),
            },
        );
    }
    Ok(found)
}

/// The budget of the newest baseline recorded between two of `nodes` as stored (a
/// [`BudgetAsked`]'s JSON, read by `MeshRequest::with_budget`); `None` when none is
/// recorded.
pub async fn newest_budget(pool: &Pool, nodes: &[String]) -> Result<Option<String>, BaselineError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "SELECT budget::text FROM pair_baselines
             WHERE host_a = ANY($1) AND host_b = ANY($1)
             ORDER BY recorded_unix_ms DESC LIMIT 1",
            &[&nodes],
        )
        .await?;
    Ok(row.map(|r| r.get(0)))
}

/// Each of `nodes`' Abnormal_th, as its latest run was judged with (its agent's
/// `[thresholds]`); a node without one is left out.
pub async fn abnormal_th(
    pool: &Pool,
    nodes: &[String],
) -> Result<BTreeMap<String, f64>, BaselineError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT name, (latest_thresholds ->> 'abnormal_th')::float8 FROM hosts
             WHERE name = ANY($1) AND latest_thresholds IS NOT NULL",
            &[&nodes],
        )
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.get(0), r.get::<_, Option<f64>>(1)?)))
        .collect())
}

/// Judges a measured pair report against its recorded baseline with Abnormal_th `th`, in
/// place: each part's status, the pair's, the reason, and when the baseline was recorded
/// (`baseline_recorded_unix_ms`). A pair that did not finish, or whose figures do not
/// read, is left as it is.
pub fn judge(pair: &mut MeshPair, baseline: &Recorded, th: f64) {
    if recordable(pair).is_none() {
        return;
    }
    let Some(report) = pair.report_mut() else {
        return;
    };
    let judged = analyze::pair_baseline::judge_against(&report.figures(), &baseline.figures, th);
    report.host_a_status = Some(judged.host_a);
    report.host_b_status = Some(judged.host_b);
    report.network_status = Some(judged.network);
    report.status = judged.status.into();
    report.reason = judged.reason;
    report.mesh.baseline_recorded_unix_ms = Some(baseline.recorded_unix_ms);
}

/// Says on a measured pair without a recorded baseline why it is not judged.
pub fn not_judged(pair: &mut MeshPair) {
    if recordable(pair).is_some() {
        if let Some(report) = pair.report_mut() {
            report.reason = NO_BASELINE.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analyze::pair::pair_th;
    use fleet_api::mesh::NotRun;
    use fleet_api::pair::End as PairEnd;
    use model::LatencyStats;
    use serde_json::Value;

    fn end(host: &str, device: Option<&str>) -> PairEnd {
        PairEnd {
            host: host.into(),
            rnic: "rnic0".into(),
            device: device.map(str::to_owned),
        }
    }

    /// A pair as an agent reports it (the fields judging reads).
    fn report(latency: f64, host_a: f64, bandwidth: f64, p99: f64) -> MeshPair {
        MeshPair::Ran(Box::new(PairReport {
            a: end("node01", Some("rxe_a")),
            b: end("node02", Some("rxe_b")),
            latency_us: Some(latency),
            bandwidth_gbps: Some(bandwidth),
            host_a_us: Some(host_a),
            host_b_us: Some(40.0),
            network_us: Some(latency - host_a - 40.0),
            latency: Some(LatencyStats {
                samples: 1000,
                min_us: latency * 0.8,
                p50_us: latency,
                p90_us: latency * 1.2,
                p99_us: p99,
                max_us: p99,
            }),
            status: PairStatus::Uncertain,
            reason: "a single pair has no baseline".into(),
            verified: true,
            ..PairReport::default()
        }))
    }

    /// The pair's JSON, as the mesh answers it.
    fn json(pair: &MeshPair) -> Value {
        serde_json::to_value(pair).unwrap()
    }

    fn recorded(pair: &MeshPair) -> Recorded {
        Recorded {
            figures: pair.report().unwrap().figures(),
            recorded_unix_ms: 1_700_000_000_000,
        }
    }

    #[test]
    fn a_stored_pair_is_judged_part_by_part_against_its_baseline() {
        let baseline = recorded(&report(100.0, 40.0, 0.2, 150.0));
        // Within Abnormal_th: normal, and the baseline's time is said.
        let mut healthy = report(108.0, 42.0, 0.19, 170.0);
        judge(&mut healthy, &baseline, 0.2);
        let healthy = json(&healthy);
        assert_eq!(healthy["status"], "normal", "{healthy:#}");
        assert_eq!(healthy["network_status"], "normal");
        assert_eq!(healthy["baseline_recorded_unix_ms"], 1_700_000_000_000i64);
        // Loss: the tail and the bandwidth, the network's part.
        let mut lossy = report(104.0, 40.0, 0.05, 67_000.0);
        judge(&mut lossy, &baseline, 0.2);
        let lossy = json(&lossy);
        assert_eq!(lossy["status"], "abnormal");
        assert_eq!(
            (&lossy["host_a_status"], &lossy["network_status"]),
            (&Value::from("normal"), &Value::from("abnormal"))
        );
        let reason = lossy["reason"].as_str().unwrap();
        assert!(
            reason.contains("bandwidth 0.050 Gb/s vs 0.200 Gb/s"),
            "{reason}"
        );
        // A starved host A: its part.
        let mut slow = report(160.0, 90.0, 0.2, 200.0);
        judge(&mut slow, &baseline, 0.2);
        let slow = json(&slow);
        assert_eq!(slow["host_a_status"], "abnormal", "{slow:#}");
        assert!(slow["reason"]
            .as_str()
            .unwrap()
            .starts_with("host A (node01) 90.00 us vs 40.00 us"));
    }

    #[test]
    fn a_pair_is_judged_with_the_larger_abnormal_th_of_its_hosts() {
        let by_host = BTreeMap::from([("node01".to_string(), 0.5), ("node02".to_string(), 0.3)]);
        assert_eq!(pair_th(&by_host, "node01", "node02"), 0.5);
        assert_eq!(pair_th(&by_host, "node09", "node02"), 0.3);
        assert_eq!(pair_th(&by_host, "node08", "node09"), 0.2);
        // At 50 %, a network part 8 us above the baseline's of a 100 us pair is normal.
        let baseline = recorded(&report(100.0, 40.0, 0.2, 150.0));
        let mut wandered = report(130.0, 40.0, 0.2, 150.0);
        judge(&mut wandered, &baseline, 0.5);
        let wandered = json(&wandered);
        assert_eq!(wandered["status"], "normal", "{wandered:#}");
    }

    #[test]
    fn only_a_measured_and_verified_pair_is_recorded_or_judged() {
        let good = report(100.0, 40.0, 0.2, 150.0);
        assert!(recordable(&good).is_some());
        let mut unverified = good.clone();
        let r = unverified.report_mut().unwrap();
        r.verified = false;
        r.status = PairStatus::Failed;
        assert!(recordable(&unverified).is_none());
        let mut down = MeshPair::NotRun(Box::new(NotRun::new(
            end("node01", None),
            end("node03", None),
            PairStatus::Unreachable,
            "node03's agent is unreachable".into(),
        )));
        assert!(recordable(&down).is_none());
        let before = down.clone();
        judge(&mut down, &recorded(&good), 0.2);
        not_judged(&mut down);
        assert_eq!(down, before, "nothing measured, nothing judged");
        // Measured without a baseline: uncertain, saying how to record one.
        let mut alone = good.clone();
        not_judged(&mut alone);
        let alone = json(&alone);
        assert_eq!(alone["status"], "uncertain");
        assert_eq!(alone["reason"], NO_BASELINE);
        let (a, b) = key(&good).unwrap();
        assert_eq!((a.host.as_str(), b.rnic.as_str()), ("node01", "rnic0"));
    }
}
