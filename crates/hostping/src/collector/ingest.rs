//! One pushed run: checked against the contract (DESIGN 4.3 inside the 4.5 envelope), then
//! stored in one transaction (the run, its paths, links and diagnoses, or nothing).

use model::Report;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio_postgres::types::{Json, ToSql};

/// The body of `POST /api/runs`: the agent's run, with the 4.3 report inside.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunUpload {
    /// The host's name in the fleet (the token must belong to it).
    pub host: String,
    /// The agent's run id (its SQLite `runs.id`): with `host` and `instance`, what makes a
    /// resend a no-op.
    pub id: i64,
    /// The agent database's instance id (store schema v5), made once per database: the
    /// runs of a wiped database, numbered from 1 again, are new runs. Empty when the agent
    /// sends none (older agents).
    #[serde(default)]
    pub instance: String,
    /// The rack the host stands in, when the agent was told (`--rack`).
    #[serde(default)]
    pub rack: Option<String>,
    /// What started the run: `idle`, `pfc`, `drops`, `manual`, ...
    pub trigger: String,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// The report (DESIGN 4.3); its `host` is the host's kind (model name). Kept as the
    /// agent's text, which PostgreSQL stores as it came (a `json` column), and parsed once
    /// into a [`Report`] for the tables.
    pub report: Box<RawValue>,
}

/// A body outside the contract, in words that name the field.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// Not JSON, or a field of the wrong type or missing.
    #[error("{0}")]
    Json(String),
    /// A field that parses but cannot be right.
    #[error("{field}: {reason}")]
    Field {
        /// The field.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
}

/// Parses and checks a body; the report is returned typed for the tables.
pub fn parse(body: &[u8]) -> Result<(RunUpload, Report), ContractError> {
    // Plain serde first: tracking the path of every field costs about as much again as the
    // parse, and only a refused body needs it, for its message.
    let upload: RunUpload = match serde_json::from_slice(body) {
        Ok(upload) => upload,
        Err(_) => return Err(explain(body)),
    };
    let report: Report = match serde_json::from_str(upload.report.get()) {
        Ok(report) => report,
        Err(_) => return Err(explain(body)),
    };
    let field = |field, reason| Err(ContractError::Field { field, reason });
    if upload.host.is_empty() || upload.host.len() > 253 {
        return field("host", "must be 1 to 253 characters");
    }
    if upload.instance.len() > 64 {
        return field("instance", "must be at most 64 characters");
    }
    if upload
        .rack
        .as_ref()
        .is_some_and(|r| r.is_empty() || r.len() > 253)
    {
        return field("rack", "must be 1 to 253 characters, or null");
    }
    if upload.trigger.is_empty() {
        return field("trigger", "must not be empty");
    }
    if upload.started_unix_ms < 0 {
        return field("started_unix_ms", "must not be negative");
    }
    if report.host.is_empty() {
        return field("report.host", "must name the host's kind");
    }
    Ok((upload, report))
}

/// Why a body that plain serde refused is out of the contract, naming the field: parsed
/// again with its path tracked.
fn explain(body: &[u8]) -> ContractError {
    let mut de = serde_json::Deserializer::from_slice(body);
    let upload: RunUpload = match serde_path_to_error::deserialize(&mut de) {
        Ok(upload) => upload,
        Err(e) => return ContractError::Json(format!("{}: {}", e.path(), e.inner())),
    };
    if let Err(e) = de.end() {
        return ContractError::Json(format!("after the run: {e}"));
    }
    let mut report_de = serde_json::Deserializer::from_str(upload.report.get());
    match serde_path_to_error::deserialize::<_, Report>(&mut report_de) {
        Ok(_) => ContractError::Json("the body is not valid JSON".into()),
        Err(e) => ContractError::Json(format!("report.{}: {}", e.path(), e.inner())),
    }
}

/// What happened to a pushed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored now, under this collector id.
    New(i64),
    /// Stored before (a resend), under this collector id.
    Duplicate(i64),
}

/// The serde name of an enum value (`normal`, `gpu_pcie`, ...).
fn label<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Stores a run in one transaction; returns after the commit.
///
/// Four round trips to PostgreSQL whatever the run holds: `BEGIN`; the host and the run in
/// one statement; the run's paths, links, diagnoses, baseline values and host summary sent
/// together (tokio-postgres pipelines statements polled at once); `COMMIT`. Statements are
/// prepared once per pooled connection. `hostping bench collector` measured a round trip
/// per statement plus one per prepare at about half of ingest (BENCHMARKS.md).
pub async fn store(
    client: &mut deadpool_postgres::Client,
    upload: &RunUpload,
    report: &Report,
) -> Result<Stored, tokio_postgres::Error> {
    let kind = report.host.as_str();
    let kind_known = model::builtin::names().any(|n| n == kind);
    let tx = client.transaction().await?;
    // A resend inserts no run (the conflict) and returns no row; the host row is still
    // upserted, which the rollback below undoes.
    let insert_run = tx
        .prepare_cached(
            "WITH h AS (
                 INSERT INTO hosts (name, kind, kind_known) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE
                     SET kind = EXCLUDED.kind, kind_known = EXCLUDED.kind_known
                 RETURNING id)
             INSERT INTO runs (host_id, agent_run_id, trigger, started_unix_ms, kind, kind_known,
                               healthy, mode, report, instance)
             SELECT h.id, $4, $5, $6, $2, $3, $7, $8, $9, $10 FROM h
             ON CONFLICT (host_id, instance, agent_run_id) DO NOTHING
             RETURNING id, host_id",
        )
        .await?;
    let inserted = tx
        .query_opt(
            &insert_run,
            &[
                &upload.host,
                &kind,
                &kind_known,
                &upload.id,
                &upload.trigger,
                &upload.started_unix_ms,
                &report.healthy,
                &label(&report.mode),
                &Json(&upload.report),
                &upload.instance,
            ],
        )
        .await?;
    let Some(row) = inserted else {
        // A resend: the first copy stays, and the host row is left as it was.
        let id = tx
            .query_one(
                "SELECT r.id FROM runs r JOIN hosts h ON h.id = r.host_id
                 WHERE h.name = $1 AND r.instance = $2 AND r.agent_run_id = $3",
                &[&upload.host, &upload.instance, &upload.id],
            )
            .await?
            .get(0);
        tx.rollback().await?;
        return Ok(Stored::Duplicate(id));
    };
    let (run_id, host_id): (i64, i64) = (row.get(0), row.get(1));

    let (paths_sql, links_sql, diagnoses_sql, rings_sql, summary_sql) = tokio::try_join!(
        tx.prepare_cached(
            "INSERT INTO run_paths (run_id, host_id, started_unix_ms, agent_run_id, rnic,
                                    endpoint, latency_us, bandwidth_gbps, status)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        ),
        tx.prepare_cached(
            "INSERT INTO run_links (run_id, link, kind, status, abnormal_cnt)
             VALUES ($1, $2, $3, $4, $5)",
        ),
        // The diagnoses as the report's JSON, so that any number of them is one statement.
        tx.prepare_cached(
            "INSERT INTO diagnoses (run_id, host_id, cause, links, rnic, evidence)
             SELECT $1, $2, d->>'cause', ARRAY(SELECT jsonb_array_elements_text(d->'links')),
                    d->>'rnic', d->>'evidence'
             FROM jsonb_array_elements($3::jsonb) AS d",
        ),
        tx.prepare_cached(super::baseline::RECORD_SQL),
        tx.prepare_cached(SUMMARY_SQL),
    )?;

    let p = &report.paths;
    let rnics: Vec<String> = p.iter().map(|x| x.rnic.to_string()).collect();
    let endpoints: Vec<String> = p.iter().map(|x| x.endpoint.to_string()).collect();
    let latency: Vec<Option<f64>> = p.iter().map(|x| x.latency_us).collect();
    let bandwidth: Vec<Option<f64>> = p.iter().map(|x| x.bandwidth_gbps).collect();
    let path_status: Vec<String> = p.iter().map(|x| label(&x.status)).collect();
    let l = &report.links;
    let link_ids: Vec<String> = l.iter().map(|x| x.id.to_string()).collect();
    let link_kinds: Vec<String> = l.iter().map(|x| label(&x.kind)).collect();
    let link_status: Vec<String> = l.iter().map(|x| label(&x.status)).collect();
    let counts: Vec<i32> = l
        .iter()
        .map(|x| i32::try_from(x.abnormal_cnt).unwrap_or(i32::MAX))
        .collect();
    let samples = super::baseline::Samples::of(report);
    let mut causes: Vec<String> = report.diagnoses.iter().map(|d| label(&d.cause)).collect();
    causes.sort();
    causes.dedup();
    // A host row moves its `paths_version` when the run added values for the fleet
    // baselines: that tells the next refresh to look at the host's kind.
    let new_path_values = i64::from(!samples.is_empty());

    let diagnoses = Json(&report.diagnoses);
    let paths_params: [&(dyn ToSql + Sync); 9] = [
        &run_id,
        &host_id,
        &upload.started_unix_ms,
        &upload.id,
        &rnics,
        &endpoints,
        &latency,
        &bandwidth,
        &path_status,
    ];
    let links_params: [&(dyn ToSql + Sync); 5] =
        [&run_id, &link_ids, &link_kinds, &link_status, &counts];
    let diagnoses_params: [&(dyn ToSql + Sync); 3] = [&run_id, &host_id, &diagnoses];
    let rings_params: [&(dyn ToSql + Sync); 7] = [
        &host_id,
        &run_id,
        &samples.rnics,
        &samples.endpoints,
        &samples.latency_us,
        &samples.bandwidth_gbps,
        &super::baseline::HOST_RUNS,
    ];
    let summary_params: [&(dyn ToSql + Sync); 7] = [
        &host_id,
        &run_id,
        &upload.started_unix_ms,
        &report.healthy,
        &causes,
        &upload.rack,
        &new_path_values,
    ];
    tokio::try_join!(
        tx.execute(&paths_sql, &paths_params),
        tx.execute(&links_sql, &links_params),
        tx.execute(&diagnoses_sql, &diagnoses_params),
        tx.execute(&rings_sql, &rings_params),
        tx.execute(&summary_sql, &summary_params),
    )?;
    tx.commit().await?;
    Ok(Stored::New(run_id))
}

/// Counts the run on its host row and, when it is the host's latest by start time (ties: the
/// later stored), makes it the row's latest run: id, start, health, causes, and rack (the
/// latest run's rack wins). $7 (0 or 1) moves `paths_version`. The row is locked since the upsert at the start of the
/// transaction, so concurrent runs of one host take turns here.
const SUMMARY_SQL: &str = "UPDATE hosts SET runs = runs + 1,
             latest_run_id = CASE WHEN n.latest THEN $2 ELSE latest_run_id END,
             latest_started_unix_ms = CASE WHEN n.latest THEN $3 ELSE latest_started_unix_ms END,
             latest_healthy = CASE WHEN n.latest THEN $4 ELSE latest_healthy END,
             latest_causes = CASE WHEN n.latest THEN $5 ELSE latest_causes END,
             rack = CASE WHEN n.latest THEN $6 ELSE rack END,
             paths_version = paths_version + $7,
             last_received_unix_ms = (extract(epoch FROM clock_timestamp()) * 1000)::int8
         FROM (SELECT latest_run_id IS NULL
                      OR ($3::int8, $2::int8) > (latest_started_unix_ms, latest_run_id) AS latest
               FROM hosts WHERE id = $1) n
         WHERE hosts.id = $1";
