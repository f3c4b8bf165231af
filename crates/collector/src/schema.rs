//! The collector's PostgreSQL schema, as versioned migrations: each runs once, in its own
//! transaction, and is recorded in `schema_migrations`. Append new versions; never edit one
//! that has shipped.

use tokio_postgres::Client;

/// `(version, SQL)`, in order.
const MIGRATIONS: &[(i32, &str)] = &[
    (
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
    ),
    (
        2,
        // A run is keyed by (host, the agent database's instance id, agent run id): a wiped
        // agent database numbers its runs from 1 again under a new instance id. Runs stored
        // before, and runs of agents that send no instance, have the instance ''.
        // The host row keeps its rack and a summary of its runs (how many, the latest by
        // start time: id, start, health, causes), updated in each run's transaction, so
        // GET /api/hosts reads one row per host instead of counting runs.
        "ALTER TABLE runs ADD COLUMN instance TEXT NOT NULL DEFAULT '';
        ALTER TABLE runs DROP CONSTRAINT runs_host_id_agent_run_id_key;
        ALTER TABLE runs ADD CONSTRAINT runs_host_instance_run
            UNIQUE (host_id, instance, agent_run_id);
        ALTER TABLE hosts
            ADD COLUMN rack TEXT,
            ADD COLUMN runs BIGINT NOT NULL DEFAULT 0,
            ADD COLUMN latest_run_id BIGINT,
            ADD COLUMN latest_started_unix_ms BIGINT,
            ADD COLUMN latest_healthy BOOLEAN,
            ADD COLUMN latest_causes TEXT[] NOT NULL DEFAULT '{}';
        UPDATE hosts h SET
            runs = (SELECT count(*) FROM runs r WHERE r.host_id = h.id),
            latest_run_id = l.id,
            latest_started_unix_ms = l.started_unix_ms,
            latest_healthy = l.healthy,
            latest_causes = COALESCE((SELECT array_agg(DISTINCT d.cause ORDER BY d.cause)
                                      FROM diagnoses d WHERE d.run_id = l.id), '{}')
        FROM (SELECT DISTINCT ON (host_id) host_id, id, started_unix_ms, healthy FROM runs
              ORDER BY host_id, started_unix_ms DESC, id DESC) l
        WHERE l.host_id = h.id;",
    ),
    (
        3,
        // Fleet baselines (collector::baseline): each host's recent idle values per path
        // (rings of the last baseline::HOST_RUNS, oldest first), the baseline per kind and
        // path with the batch of hosts it was computed over, and on the host row the
        // versions that tell a refresh which kinds got new values. Also when each host's
        // latest run arrived (GET /api/fleet/status).
        "CREATE TABLE host_paths (
            host_id BIGINT NOT NULL REFERENCES hosts(id),
            rnic TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            latency_recent DOUBLE PRECISION[] NOT NULL,
            bandwidth_recent DOUBLE PRECISION[] NOT NULL,
            PRIMARY KEY (host_id, rnic, endpoint)
        );
        CREATE TABLE fleet_baselines (
            kind TEXT NOT NULL,
            rnic TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            latency_us DOUBLE PRECISION NOT NULL,
            latency_mad_us DOUBLE PRECISION NOT NULL,
            latency_run_mad_us DOUBLE PRECISION NOT NULL,
            bandwidth_gbps DOUBLE PRECISION NOT NULL,
            bandwidth_mad_gbps DOUBLE PRECISION NOT NULL,
            bandwidth_run_mad_gbps DOUBLE PRECISION NOT NULL,
            hosts INTEGER NOT NULL,
            runs INTEGER NOT NULL,
            refreshed_unix_ms BIGINT NOT NULL,
            PRIMARY KEY (kind, rnic, endpoint)
        );
        CREATE TABLE fleet_batches (
            kind TEXT NOT NULL,
            host TEXT NOT NULL,
            PRIMARY KEY (kind, host)
        );
        ALTER TABLE hosts
            ADD COLUMN paths_version BIGINT NOT NULL DEFAULT 0,
            ADD COLUMN baseline_version BIGINT NOT NULL DEFAULT 0,
            ADD COLUMN last_received_unix_ms BIGINT;
        -- the kinds a refresh has to look at
        CREATE INDEX hosts_baseline_unseen ON hosts (kind) WHERE paths_version <> baseline_version;
        CREATE INDEX hosts_kind_latest ON hosts (kind, latest_started_unix_ms DESC);
        UPDATE hosts h SET last_received_unix_ms =
            (SELECT (extract(epoch FROM max(received_at)) * 1000)::int8 FROM runs r
             WHERE r.host_id = h.id);",
    ),
    (
        4,
        // A run's paths and links as one row of parallel arrays each, in place of a row per
        // path and per link: a GPU server's run had 40 path rows and 27 link rows, each with
        // its index entries. `hostping bench collector` (BENCHMARKS.md) measured that
        // layout at 13.5 kB and about 1.6 ms of statement time per run, half of ingest; the
        // arrays take a fraction of both. One path over time is still one index range scan
        // (run_paths_over_time) reading one short row per run.
        "CREATE TABLE run_paths (
            run_id BIGINT PRIMARY KEY REFERENCES runs(id),
            host_id BIGINT NOT NULL,
            started_unix_ms BIGINT NOT NULL,
            agent_run_id BIGINT NOT NULL,
            rnic TEXT[] NOT NULL,
            endpoint TEXT[] NOT NULL,
            latency_us DOUBLE PRECISION[] NOT NULL,
            bandwidth_gbps DOUBLE PRECISION[] NOT NULL,
            status TEXT[] NOT NULL
        );
        CREATE INDEX run_paths_over_time ON run_paths (host_id, started_unix_ms);
        INSERT INTO run_paths
            SELECT p.run_id, r.host_id, r.started_unix_ms, r.agent_run_id,
                   array_agg(p.rnic ORDER BY p.rnic, p.endpoint),
                   array_agg(p.endpoint ORDER BY p.rnic, p.endpoint),
                   array_agg(p.latency_us ORDER BY p.rnic, p.endpoint),
                   array_agg(p.bandwidth_gbps ORDER BY p.rnic, p.endpoint),
                   array_agg(p.status ORDER BY p.rnic, p.endpoint)
            FROM paths p JOIN runs r ON r.id = p.run_id
            GROUP BY p.run_id, r.host_id, r.started_unix_ms, r.agent_run_id;
        DROP TABLE paths;
        CREATE TABLE run_links (
            run_id BIGINT PRIMARY KEY REFERENCES runs(id),
            link TEXT[] NOT NULL,
            kind TEXT[] NOT NULL,
            status TEXT[] NOT NULL,
            abnormal_cnt INTEGER[] NOT NULL
        );
        INSERT INTO run_links
            SELECT run_id, array_agg(link ORDER BY link), array_agg(kind ORDER BY link),
                   array_agg(status ORDER BY link), array_agg(abnormal_cnt ORDER BY link)
            FROM links GROUP BY run_id;
        DROP TABLE links;
        -- A host's recent values as the sample sets of its last runs that gave any (one
        -- row a run, like run_paths), in place of a ring row per path that every run
        -- rewrote: the 40-row upsert was the costliest statement of ingest. The rings
        -- carried over: their i-th newest values become the set numbered -i (older than
        -- any run id).
        CREATE TABLE host_samples (
            host_id BIGINT NOT NULL REFERENCES hosts(id),
            seq BIGINT NOT NULL,
            rnic TEXT[] NOT NULL,
            endpoint TEXT[] NOT NULL,
            latency_us DOUBLE PRECISION[] NOT NULL,
            bandwidth_gbps DOUBLE PRECISION[] NOT NULL,
            PRIMARY KEY (host_id, seq)
        );
        INSERT INTO host_samples
            SELECT host_id, -age,
                   array_agg(rnic ORDER BY rnic, endpoint),
                   array_agg(endpoint ORDER BY rnic, endpoint),
                   array_agg(l ORDER BY rnic, endpoint),
                   array_agg(b ORDER BY rnic, endpoint)
            FROM (SELECT hp.host_id, hp.rnic, hp.endpoint, u.l, u.b,
                         cardinality(hp.latency_recent) - u.o AS age
                  FROM host_paths hp
                  CROSS JOIN LATERAL unnest(hp.latency_recent, hp.bandwidth_recent)
                      WITH ORDINALITY AS u(l, b, o)) x
            GROUP BY host_id, age;
        DROP TABLE host_paths;
        -- Every run rewrites its host's summary row: room left on each page lets
        -- PostgreSQL update it in place (a HOT update).
        ALTER TABLE hosts SET (fillfactor = 70);
        -- The report kept as the agent's JSON text: the collector only stores and returns
        -- it (the tables hold what is queried), and JSONB's conversion of a 15 kB report
        -- was the costliest part of ingest. Compressed with LZ4 where the server has it
        -- (PostgreSQL 14 and later, built with lz4, as Debian's is). Storing 10,000 such
        -- reports: JSONB with pglz 5.8 s, JSONB with LZ4 3.2 s, JSON with LZ4 0.95 s, for
        -- 3.2, 4.2 and 5.6 kB a report (BENCHMARKS.md).
        ALTER TABLE runs ALTER COLUMN report TYPE json USING report::json;
        DO $$ BEGIN
            IF current_setting('server_version_num')::int >= 140000 THEN
                ALTER TABLE runs ALTER COLUMN report SET COMPRESSION lz4;
            END IF;
        EXCEPTION WHEN feature_not_supported THEN NULL;
        END $$;",
    ),
    (
        5,
        // The thresholds the host's latest run was judged with (the report carries them),
        // so that the collector judges a host as its agent does: slow hosts are ranked
        // against each host's own Abnormal_th. NULL: a report without them, judged with
        // Hostping 5's defaults. Filled from the latest runs already stored.
        "ALTER TABLE hosts ADD COLUMN latest_thresholds JSON;
        UPDATE hosts h SET latest_thresholds = r.report -> 'thresholds'
            FROM runs r WHERE r.id = h.latest_run_id AND r.report -> 'thresholds' IS NOT NULL;",
    ),
    (
        6,
        // Whether a run found nothing wrong but could not judge every link (DESIGN 4.3's
        // `inconclusive`, as `analyze::fleet::is_inconclusive` reads a report), per run and
        // for each host's latest run: such a host is neither healthy nor unhealthy. Adding a
        // column with a constant default rewrites no row. Runs stored before were sent by
        // agents older than the field (false); a newer agent's run that an older collector
        // stored keeps the field in its report, which a host's latest run is read back from
        // (one run per host, not the whole table), with a diagnosis or an abnormal path
        // making it unhealthy, as at ingest.
        "ALTER TABLE runs ADD COLUMN inconclusive BOOLEAN NOT NULL DEFAULT false;
        ALTER TABLE hosts ADD COLUMN latest_inconclusive BOOLEAN NOT NULL DEFAULT false;
        UPDATE runs r SET inconclusive = true
            FROM hosts h
            WHERE r.id = h.latest_run_id AND NOT r.healthy
              AND (r.report ->> 'inconclusive') = 'true'
              AND cardinality(h.latest_causes) = 0
              AND NOT EXISTS (SELECT 1 FROM run_paths p
                              WHERE p.run_id = r.id AND 'abnormal' = ANY(p.status));
        UPDATE hosts h SET latest_inconclusive = true
            FROM runs r WHERE r.id = h.latest_run_id AND r.inconclusive;",
    ),
    // Switch-port counters posted by samplers (crate::fabric::store).
    (7, crate::fabric::store::MIGRATION),
    // Where each agent listens and its RNIC ids, for pair probes (crate::agents).
    (8, crate::agents::MIGRATION),
    // Each pair's recorded baseline, for real meshes and the job verdict's probes
    // (crate::pair_baselines).
    (9, crate::pair_baselines::MIGRATION),
    // The switch ports a job verdict asks the samplers to read now, shared by every
    // collector on the database (crate::fabric::board).
    (10, crate::fabric::board::MIGRATION),
    // Jobs' collectives: the agents' per-rank summaries and their read counts
    // (crate::collectives).
    (11, crate::collectives::MIGRATION),
    // The verdicts the collector reached by itself on jobs that slowed (crate::slow_jobs).
    (12, crate::verdicts::MIGRATION),
    // The actions the policy proposed, took or refused on those verdicts (crate::actions).
    (13, crate::actions::store::MIGRATION),
    // Whether a job's records were written by a simulation (crate::collectives): a
    // constant default rewrites no row; reads stored before were real records' or
    // unlabelled ones'.
    (14, crate::collectives::SIMULATED_MIGRATION),
    // What each agent's host's links allow a job's collectives (crate::agents): null for
    // the agents registered before, which did not say.
    (15, crate::agents::EXPECTED_MIGRATION),
];

/// Applies the migrations not yet applied. An advisory lock makes two collectors starting
/// on one database take turns.
pub async fn migrate(client: &mut Client) -> Result<Vec<i32>, tokio_postgres::Error> {
    migrate_to(client, i32::MAX).await
}

/// Applies the migrations not yet applied up to version `last`: a database as an older
/// collector left it, for the tests of upgrades.
pub async fn migrate_to(client: &mut Client, last: i32) -> Result<Vec<i32>, tokio_postgres::Error> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )",
        )
        .await?;
    let mut applied = Vec::new();
    for &(version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v <= last) {
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
