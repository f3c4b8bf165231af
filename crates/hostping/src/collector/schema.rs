//! The collector's PostgreSQL schema, as versioned migrations: each runs once, in its own
//! transaction, and is recorded in `schema_migrations`. Append new versions; never edit one
//! that has shipped.

use tokio_postgres::Client;

/// `(version, SQL)`, in order.
const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    "CREATE TABLE hosts (
        id BIGSERIAL PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        -- false when the kind is no model this collector knows: stored, but flagged
        kind_known BOOLEAN NOT NULL
    );
    CREATE TABLE runs (
        id BIGSERIAL PRIMARY KEY,
        host_id BIGINT NOT NULL REFERENCES hosts(id),
        agent_run_id BIGINT NOT NULL,
        trigger TEXT NOT NULL,
        started_unix_ms BIGINT NOT NULL,
        kind TEXT NOT NULL,
        kind_known BOOLEAN NOT NULL,
        healthy BOOLEAN NOT NULL,
        mode TEXT NOT NULL,
        report JSONB NOT NULL,
        received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        -- a resent run is stored once
        UNIQUE (host_id, agent_run_id)
    );
    -- the latest run per host, and a host's runs newest first
    CREATE INDEX runs_host_started ON runs (host_id, started_unix_ms DESC, id DESC);
    CREATE TABLE paths (
        run_id BIGINT NOT NULL REFERENCES runs(id),
        host_id BIGINT NOT NULL,
        started_unix_ms BIGINT NOT NULL,
        rnic TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        latency_us DOUBLE PRECISION,
        bandwidth_gbps DOUBLE PRECISION,
        status TEXT NOT NULL
    );
    -- one path over time
    CREATE INDEX paths_over_time ON paths (host_id, rnic, endpoint, started_unix_ms);
    CREATE INDEX paths_run ON paths (run_id);
    CREATE TABLE links (
        run_id BIGINT NOT NULL REFERENCES runs(id),
        link TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        abnormal_cnt INTEGER NOT NULL
    );
    CREATE INDEX links_run ON links (run_id);
    CREATE TABLE diagnoses (
        run_id BIGINT NOT NULL REFERENCES runs(id),
        host_id BIGINT NOT NULL,
        cause TEXT NOT NULL,
        links TEXT[] NOT NULL,
        rnic TEXT,
        evidence TEXT NOT NULL
    );
    -- hosts by cause
    CREATE INDEX diagnoses_cause ON diagnoses (cause, host_id);
    CREATE INDEX diagnoses_run ON diagnoses (run_id);",
)];

/// Applies the migrations not yet applied. An advisory lock makes two collectors starting
/// on one database take turns.
pub async fn migrate(client: &mut Client) -> Result<Vec<i32>, tokio_postgres::Error> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )",
        )
        .await?;
    let mut applied = Vec::new();
    for &(version, sql) in MIGRATIONS {
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock(7247)", &[])
            .await?;
        let done = tx
            .query_opt(
                "SELECT 1 FROM schema_migrations WHERE version = $1",
                &[&version],
            )
            .await?
            .is_some();
        if !done {
            tx.batch_execute(sql).await?;
            tx.execute(
                "INSERT INTO schema_migrations (version) VALUES ($1)",
                &[&version],
            )
            .await?;
            applied.push(version);
        }
        tx.commit().await?;
    }
    Ok(applied)
}
