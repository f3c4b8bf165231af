//! The fleet baselines' tables: each kind's baseline (`analyze::fleet::baseline`, Hostping
//! 4.3 and 5) recomputed from its batch's stored sample sets and kept in `fleet_baselines`,
//! refreshed when hosts of the kind sent new values (a background task every
//! [`REFRESH_EVERY`], and any read that needs the baseline first).

use analyze::fleet::baseline::{
    fleet_paths, rings, FleetPath, Ring, Samples, Spread, UnevenSamples, BATCH_HOSTS,
};
use analyze::robust::Robust;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_postgres::{Client, Transaction};

/// How often the collector refreshes the baselines of kinds that got new values.
pub const REFRESH_EVERY: Duration = Duration::from_secs(1);

/// Why a kind's fleet baseline could not be refreshed; nothing of the refresh is kept.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// A statement failed or the connection broke.
    #[error("{}", crate::server_words(.0))]
    Database(#[from] tokio_postgres::Error),
    /// A stored sample set of the kind's batch cannot be used: the refresh stops rather
    /// than compute a baseline without some host's values. The set goes once its host has
    /// sent [`analyze::fleet::baseline::HOST_RUNS`] newer ones, or when someone deletes it.
    #[error("kind {kind}: {source}")]
    UnevenSamples {
        /// The kind whose baseline it is.
        kind: String,
        /// The set.
        source: UnevenSamples,
    },
}

/// A stored sample set: the four array columns of `host_samples` from column `first` on
/// (rnic, endpoint, latency_us, bandwidth_gbps), as stored: [`rings`] checks that they are
/// of one length before it pairs their elements.
pub fn stored_samples(row: &tokio_postgres::Row, first: usize) -> Samples {
    Samples {
        rnics: row.get(first),
        endpoints: row.get(first + 1),
        latency_us: row.get(first + 2),
        bandwidth_gbps: row.get(first + 3),
    }
}

/// The rings of the batch of `kind`: the [`BATCH_HOSTS`] hosts with values that reported
/// last.
async fn batch_rings(tx: &Transaction<'_>, kind: &str) -> Result<Vec<Ring>, RefreshError> {
    let rows = tx
        .query(
            "SELECT h.name, s.rnic, s.endpoint, s.latency_us, s.bandwidth_gbps
             FROM (SELECT id, name FROM hosts
                   WHERE kind = $1
                     AND EXISTS (SELECT 1 FROM host_samples p WHERE p.host_id = hosts.id)
                   ORDER BY latest_started_unix_ms DESC NULLS LAST, id LIMIT $2) h
             JOIN host_samples s ON s.host_id = h.id
             ORDER BY h.name, s.seq",
            &[&kind, &BATCH_HOSTS],
        )
        .await?;
    rings(rows.iter().map(|r| (r.get(0), stored_samples(r, 1))))
        .checked()
        .map_err(|source| RefreshError::UnevenSamples {
            kind: kind.to_owned(),
            source,
        })
}

/// Recomputes the baseline of `kind` from its batch and stores it (tables
/// `fleet_baselines`, `fleet_batches`); the hosts whose values it saw are marked seen. One
/// refresher per kind at a time (an advisory lock); returns the hosts in the batch.
pub async fn refresh(client: &mut Client, kind: &str) -> Result<usize, RefreshError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock(7248, hashtext($1))", &[&kind])
        .await?;
    // Versions first, then values: a run committed in between leaves its host dirty, to be
    // seen by the next refresh, never marked seen unseen.
    let versions = tx
        .query(
            "SELECT id, paths_version FROM hosts
             WHERE kind = $1 AND paths_version <> baseline_version",
            &[&kind],
        )
        .await?;
    let rings = batch_rings(&tx, kind).await?;
    let paths = fleet_paths(&rings);
    let mut batch: Vec<&str> = rings.iter().map(|r| r.host.as_str()).collect();
    batch.sort_unstable();
    batch.dedup();
    tx.execute("DELETE FROM fleet_baselines WHERE kind = $1", &[&kind])
        .await?;
    let col = |f: fn(&FleetPath) -> f64| paths.iter().map(f).collect::<Vec<f64>>();
    let rnics: Vec<&str> = paths.iter().map(|p| p.rnic.as_str()).collect();
    let endpoints: Vec<&str> = paths.iter().map(|p| p.endpoint.as_str()).collect();
    let hosts: Vec<i32> = paths.iter().map(|p| p.hosts as i32).collect();
    let runs: Vec<i32> = paths.iter().map(|p| p.runs as i32).collect();
    tx.execute(
        "INSERT INTO fleet_baselines (kind, rnic, endpoint, latency_us, latency_mad_us,
                                      latency_run_mad_us, bandwidth_gbps, bandwidth_mad_gbps,
                                      bandwidth_run_mad_gbps, hosts, runs, refreshed_unix_ms)
         SELECT $1, *, (extract(epoch FROM clock_timestamp()) * 1000)::int8
         FROM UNNEST($2::text[], $3::text[], $4::float8[], $5::float8[], $6::float8[],
                     $7::float8[], $8::float8[], $9::float8[], $10::int4[], $11::int4[])",
        &[
            &kind,
            &rnics,
            &endpoints,
            &col(|p| p.latency.hosts.median),
            &col(|p| p.latency.hosts.mad),
            &col(|p| p.latency.run_mad),
            &col(|p| p.bandwidth.hosts.median),
            &col(|p| p.bandwidth.hosts.mad),
            &col(|p| p.bandwidth.run_mad),
            &hosts,
            &runs,
        ],
    )
    .await?;
    tx.execute("DELETE FROM fleet_batches WHERE kind = $1", &[&kind])
        .await?;
    tx.execute(
        "INSERT INTO fleet_batches (kind, host) SELECT $1, * FROM UNNEST($2::text[])",
        &[&kind, &batch],
    )
    .await?;
    let ids: Vec<i64> = versions.iter().map(|r| r.get(0)).collect();
    let seen: Vec<i64> = versions.iter().map(|r| r.get(1)).collect();
    // A host row an ingest holds is skipped, not waited for: the host stays unseen and the
    // next refresh takes it. So a refresh never waits on ingest, and holds the rows it marks
    // only until its commit, next.
    tx.execute(
        "UPDATE hosts SET baseline_version = v.seen
         FROM UNNEST($1::int8[], $2::int8[]) AS v(id, seen)
         WHERE hosts.id = v.id
           AND hosts.id IN (SELECT id FROM hosts WHERE id = ANY($1) FOR UPDATE SKIP LOCKED)",
        &[&ids, &seen],
    )
    .await?;
    tx.commit().await?;
    Ok(batch.len())
}

/// Refreshes `kind` if a host of it has values the last refresh did not see.
pub async fn ensure_fresh(client: &mut Client, kind: &str) -> Result<(), RefreshError> {
    let dirty = client
        .query_opt(
            "SELECT 1 FROM hosts WHERE kind = $1 AND paths_version <> baseline_version LIMIT 1",
            &[&kind],
        )
        .await?
        .is_some();
    if dirty {
        refresh(client, kind).await?;
    }
    Ok(())
}

/// Refreshes every kind that has hosts with unseen values; returns the kinds refreshed,
/// or the first error met. A kind that cannot be refreshed does not keep the others from
/// it: each is tried.
pub async fn refresh_dirty(client: &mut Client) -> Result<Vec<String>, RefreshError> {
    let kinds: Vec<String> = client
        .query(
            "SELECT DISTINCT kind FROM hosts WHERE paths_version <> baseline_version",
            &[],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut first_error = None;
    for kind in &kinds {
        if let Err(e) = refresh(client, kind).await {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(kinds),
    }
}

/// Refreshes the baselines of kinds with new values every [`REFRESH_EVERY`], for as long
/// as the collector runs; a failure (the database away, a stored set it cannot use) is
/// logged once, when it starts, and retried.
pub async fn refresh_loop(pool: deadpool_postgres::Pool, log: fn(&str)) {
    let mut failing = false;
    loop {
        tokio::time::sleep(REFRESH_EVERY).await;
        let result = match pool.get().await {
            Ok(mut client) => refresh_dirty(&mut client).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match result {
            Err(e) if !failing => {
                log(&format!("fleet baselines: cannot refresh: {e}"));
                failing = true;
            }
            Err(_) => {}
            Ok(_) => failing = false,
        }
    }
}

/// The stored fleet baseline of `kind`, by path.
pub async fn load(
    client: &Client,
    kind: &str,
) -> Result<BTreeMap<(String, String), FleetPath>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT rnic, endpoint, latency_us, latency_mad_us, latency_run_mad_us,
                    bandwidth_gbps, bandwidth_mad_gbps, bandwidth_run_mad_gbps, hosts, runs
             FROM fleet_baselines WHERE kind = $1 ORDER BY rnic, endpoint",
            &[&kind],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let hosts = r.get::<_, i32>(8) as usize;
            let spread = |m: usize, d: usize, run: usize| Spread {
                hosts: Robust {
                    median: r.get(m),
                    mad: r.get(d),
                    count: hosts,
                },
                run_mad: r.get(run),
            };
            let path = FleetPath {
                rnic: r.get(0),
                endpoint: r.get(1),
                latency: spread(2, 3, 4),
                bandwidth: spread(5, 6, 7),
                hosts,
                runs: r.get::<_, i32>(9) as usize,
            };
            ((path.rnic.clone(), path.endpoint.clone()), path)
        })
        .collect())
}
