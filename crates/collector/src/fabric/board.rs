//! The collector's requests to read switch ports now (a job verdict's follow-up, issue 28
//! section 2): the collector cannot reach the switches, the samplers can, and no sampler
//! listens on a port. So the request waits on the board, by sampler, and the answer of that
//! sampler's next `POST /api/fabric/sweeps` hands it over (`read_now`); the sampler reads
//! those ports twice [`READ_GAP`] apart and posts both reads (`hostping fabric sample`),
//! and the verdict reads the deltas whose interval began after it asked.
//!
//! The board is a table of PostgreSQL (schema migration 10, `fabric_read_board`), not the
//! collector's memory: several collectors may share one database, and a sampler posting to
//! one of them must be handed what a verdict asked through another. A request lives as
//! long as the verdict that waits for it: its deadline is the database's clock (`now()`),
//! which every collector reads alike, and a request past it is dropped unsent.

use std::time::Duration;
use tokio_postgres::{Client, GenericClient};

/// Between a sampler's two reads of the ports asked for: the contract's.
pub use fleet_api::sweep::READ_GAP;

/// Most ports waiting on the board, all samplers together: a verdict asks at most
/// `verdict::follow_up::MAX_PORT_READS`, so this is 64 verdicts at once; past it a request
/// is refused (said in the verdict's follow-up) rather than the table grown without bound.
pub const MAX_PENDING: usize = 4096;

/// The migration that creates the board (schema.rs appends it). A port is keyed by the
/// sampler asked and the port as `read_now` lists it; `until` is when the asking verdict
/// stops waiting.
pub const MIGRATION: &str = "CREATE TABLE fabric_read_board (
        sampler TEXT NOT NULL,
        guid TEXT NOT NULL,
        port SMALLINT NOT NULL,
        until TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (sampler, guid, port)
    );
    -- the requests past their deadline, pruned at every ask and take
    CREATE INDEX fabric_read_board_until ON fabric_read_board (until);";

/// The advisory lock that makes the collectors' asks take turns, so that the count of
/// waiting ports each checks against [`MAX_PENDING`] is not stale by the time it adds to
/// it (schema.rs's migrations hold 7247, the baselines' refresh 7248).
const ASK_LOCK: i64 = 7249;

/// One port asked for, as `read_now` lists it in the sweep's answer: the contract's.
pub use fleet_api::sweep::ReadNow;

/// Why a request was not put on the board.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The board is full: refused, nothing of it was added.
    #[error("{MAX_PENDING} switch-port reads are already waiting for their samplers")]
    Full,
    /// The database.
    #[error(transparent)]
    Database(#[from] tokio_postgres::Error),
}

/// Asks `sampler` to read `ports` at its next post, for as long as `wait` from now (the
/// database's clock); a port already waiting for it is asked once, with the later
/// deadline. All or nothing: a request that would take the board past [`MAX_PENDING`]
/// is refused whole.
pub async fn ask(
    client: &mut Client,
    sampler: &str,
    ports: &[ReadNow],
    wait: Duration,
) -> Result<(), AskError> {
    let guids: Vec<&str> = ports.iter().map(|p| p.guid.as_str()).collect();
    let numbers: Vec<i16> = ports.iter().map(|p| i16::from(p.port)).collect();
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&ASK_LOCK])
        .await?;
    prune(&tx).await?;
    let row = tx
        .query_one(
            "SELECT (SELECT count(*) FROM fabric_read_board),
                    (SELECT count(*) FROM (SELECT DISTINCT guid, port
                                           FROM unnest($2::text[], $3::int2[]) AS a(guid, port)) a
                     WHERE NOT EXISTS (SELECT 1 FROM fabric_read_board b
                                       WHERE b.sampler = $1 AND b.guid = a.guid
                                         AND b.port = a.port))",
            &[&sampler, &guids, &numbers],
        )
        .await?;
    let (waiting, new): (i64, i64) = (row.get(0), row.get(1));
    if waiting + new > MAX_PENDING as i64 {
        return Err(AskError::Full);
    }
    tx.execute(
        "INSERT INTO fabric_read_board (sampler, guid, port, until)
         SELECT DISTINCT $1, guid, port, now() + make_interval(secs => $4)
         FROM unnest($2::text[], $3::int2[]) AS a(guid, port)
         ON CONFLICT (sampler, guid, port)
         DO UPDATE SET until = GREATEST(fabric_read_board.until, EXCLUDED.until)",
        &[&sampler, &guids, &numbers, &wait.as_secs_f64()],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// What `sampler` is asked to read now, each port once, taken off the board in one
/// statement (two collectors answering posts of one sampler hand each port to one of
/// them); a request no one waits for any more is dropped, whichever sampler it was for.
pub async fn take(
    client: &impl GenericClient,
    sampler: &str,
) -> Result<Vec<ReadNow>, tokio_postgres::Error> {
    let rows = client
        .query(
            "WITH taken AS (
                 DELETE FROM fabric_read_board WHERE sampler = $1 OR until <= now()
                 RETURNING sampler, guid, port, until)
             SELECT guid, port FROM taken WHERE sampler = $1 AND until > now()
             ORDER BY guid, port",
            &[&sampler],
        )
        .await?;
    // Every port was stored from a u8 (`ask`).
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some(ReadNow {
                guid: r.get(0),
                port: u8::try_from(r.get::<_, i16>(1)).ok()?,
            })
        })
        .collect())
}

/// Drops the requests past their deadline.
async fn prune(client: &impl GenericClient) -> Result<(), tokio_postgres::Error> {
    client
        .execute("DELETE FROM fabric_read_board WHERE until <= now()", &[])
        .await?;
    Ok(())
}
