//! The schema as an ordered list of migrations (see the crate doc for the tables).

/// SQL batches, in order: `MIGRATIONS[i]` takes a database from schema version `i` to
/// `i + 1`. Append only: a released batch is never edited.
pub const MIGRATIONS: &[&str] = &[
    // v1: runs with their JSON, and the report normalised into paths, links, diagnoses.
    "CREATE TABLE runs (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        started_unix_ms INTEGER NOT NULL,
        clock_ns        INTEGER NOT NULL,
        duration_ns     INTEGER NOT NULL,
        trigger         TEXT NOT NULL,
        trigger_detail  TEXT NOT NULL,
        host            TEXT NOT NULL,
        mode            TEXT NOT NULL,
        provenance      TEXT NOT NULL,
        healthy         INTEGER NOT NULL CHECK (healthy IN (0, 1)),
        snapshot        TEXT NOT NULL,
        report          TEXT NOT NULL
    );
    CREATE INDEX runs_trigger ON runs (trigger, id);
    CREATE TABLE paths (
        run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        idx             INTEGER NOT NULL,
        rnic            TEXT NOT NULL,
        endpoint        TEXT NOT NULL,
        latency_us      REAL,
        bandwidth_gbps  REAL,
        status          TEXT NOT NULL,
        error           TEXT,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE links (
        run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        idx             INTEGER NOT NULL,
        id              TEXT NOT NULL,
        kind            TEXT NOT NULL,
        status          TEXT NOT NULL,
        abnormal_cnt    INTEGER NOT NULL,
        utilisation     REAL,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE diagnoses (
        run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        idx             INTEGER NOT NULL,
        cause           TEXT NOT NULL,
        links           TEXT NOT NULL,
        rnic            TEXT,
        evidence        TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    );",
    // v2: the full counter snapshot of a run; per-host and per-path history lookups.
    "ALTER TABLE runs ADD COLUMN counters TEXT;
    CREATE INDEX runs_host ON runs (host, id);
    CREATE INDEX paths_path ON paths (rnic, endpoint, run_id);",
    // v3: sweeps of switch-port counters (the agent's `[fabric]` sampler), one row per sweep
    // and one per port in it; counters are NULL where the port did not answer.
    "CREATE TABLE fabric_sweeps (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        sweep           INTEGER NOT NULL,
        start_unix_ns   INTEGER NOT NULL,
        spread_us       REAL NOT NULL,
        sampler         TEXT NOT NULL
    );
    CREATE INDEX fabric_sweeps_start ON fabric_sweeps (start_unix_ns);
    CREATE TABLE fabric_ports (
        sweep_id        INTEGER NOT NULL REFERENCES fabric_sweeps (id) ON DELETE CASCADE,
        idx             INTEGER NOT NULL,
        guid            TEXT NOT NULL,
        lid             INTEGER NOT NULL,
        port            INTEGER NOT NULL,
        at_unix_ns      INTEGER NOT NULL,
        xmit_data_bytes INTEGER,
        rcv_data_bytes  INTEGER,
        xmit_pkts       INTEGER,
        rcv_pkts        INTEGER,
        xmit_wait       INTEGER,
        symbol_errors   INTEGER,
        link_downed     INTEGER,
        rcv_errors      INTEGER,
        xmit_discards   INTEGER,
        error           TEXT,
        PRIMARY KEY (sweep_id, idx)
    );
    CREATE INDEX fabric_ports_port ON fabric_ports (guid, port, sweep_id);",
    // v4: the runs not yet delivered to the fleet collector (`hostping agent --collector`),
    // oldest first; a run leaves when the collector acknowledged it.
    "CREATE TABLE outbox (
        run_id          INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        queued_unix_ms  INTEGER NOT NULL,
        attempts        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT
    );",
    // v5: this database's instance id, made once at random (SQLite's randomblob, seeded from
    // the OS). Run ids restart from 1 in a new file; the fleet collector keys a run by
    // (host, instance, run id), so the runs of a wiped and restarted agent are new runs, not
    // resends of the old ones.
    "CREATE TABLE instance (
        id              TEXT NOT NULL
    );
    INSERT INTO instance (id) VALUES (lower(hex(randomblob(16))));",
    // v6: whether a run was inconclusive (DESIGN 4.3: some link could not be judged, so the
    // host was not called healthy). Runs stored before it were judged: 0.
    "ALTER TABLE runs ADD COLUMN inconclusive INTEGER NOT NULL DEFAULT 0 CHECK (inconclusive IN (0, 1));",
];

/// The schema version this build writes: the number of [`MIGRATIONS`].
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;
