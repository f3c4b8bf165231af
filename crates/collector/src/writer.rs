//! The collector's writers: the runs that arrive while a batch is being stored wait in a
//! queue and go into the next batch together (group commit), so that the cost of a
//! transaction and of each statement is shared by the runs of a busy moment instead of paid
//! by every run. A lone run is stored at once: a writer never waits for company.
//!
//! A request is answered only after its batch commits. When PostgreSQL refuses a batch
//! (a value it will not take), its runs are stored again one by one, so that one bad run
//! fails alone and the others are stored.
//!
//! Whose fault a failure is decides what the agent does with the run, so it is told by
//! the server's SQLSTATE, not guessed from a message ([`WriteError`]): refused for what it
//! holds, the run is dropped (sending it again cannot help); the database out of reach,
//! the run is kept and sent again.

use crate::batch::{self, Arrival, BatchError, Stored};
use deadpool_postgres::{Pool, PoolError};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Mutex};

/// The most runs one transaction stores.
const MAX_BATCH: usize = 64;

/// Runs waiting for a writer; a full queue holds the requests back (bounded memory: a run
/// is tens of kB).
const QUEUE: usize = 256;

/// Why a run was not stored; nothing of it was. `api.rs` maps each to its HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// PostgreSQL refused the run for what it holds: a data exception (SQLSTATE class 22:
    /// a NUL character in text, which JSON allows and PostgreSQL does not, a number out of
    /// range), an integrity violation (23) or a value over one of its limits (54). The
    /// same run would be refused again.
    #[error("run {run} of host {host} refused by the database: {source}")]
    Refused {
        /// The host that sent it.
        host: String,
        /// The agent's run id.
        run: i64,
        /// The failed statement and the server's words.
        source: BatchError,
    },
    /// No connection from the pool within its bounded waits (the database down or
    /// unreachable, every connection busy): worth trying again later.
    #[error("no connection to the database: {0}")]
    NoConnection(#[source] Arc<PoolError>),
    /// The database stopped taking work while storing: the connection broke, the server
    /// is shutting down or out of resources, or the transaction must be tried again (a
    /// deadlock). Worth trying again later. Shared by the runs of the batch.
    #[error("the database is unavailable: {0}")]
    Unavailable(#[source] Arc<BatchError>),
    /// The database failed the collector's own statement for another reason (a schema it
    /// does not expect, an internal error, rows made to vanish beside it): the collector's
    /// or its database's fault, not the run's, so the run is worth keeping.
    #[error("run {run} of host {host} not stored: {source}")]
    Failed {
        /// The host that sent it.
        host: String,
        /// The agent's run id.
        run: i64,
        /// What failed.
        source: BatchError,
    },
    /// The writers have stopped: the collector is stopping.
    #[error("the collector's writers have stopped")]
    Stopped,
    /// The writer storing the run's batch failed without an answer (a bug: it panicked,
    /// and the collector's log says where). The writer itself goes on with the next batch.
    #[error("the collector's writer failed mid-batch")]
    Abandoned,
}

/// Whose fault a failed batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blame {
    /// What a run holds: store the runs one by one, and refuse the bad one.
    Run,
    /// The database's availability: every run of the batch waits for it alike.
    Database,
    /// Neither: the collector's statement or something done to its tables. Stored one by
    /// one, so that a fault tied to one run fails only that run.
    Collector,
}

fn blame(e: &BatchError) -> Blame {
    if !matches!(e, BatchError::Statement { .. }) {
        return Blame::Collector; // rows vanished beside the collector
    }
    let Some(code) = e.code() else {
        // No SQLSTATE: the server did not answer (I/O, a closed connection, a timeout).
        // tokio-postgres reports its own encoding and decoding failures so too, which the
        // collector's fixed statements and types do not produce; were one to, keeping the
        // run at the agent is the safe side.
        return Blame::Database;
    };
    match code.code().get(..2) {
        // Data exception, integrity constraint violation, program limit exceeded.
        Some("22" | "23" | "54") => Blame::Run,
        // Connection exception, transaction rollback (serialization failure, deadlock),
        // insufficient resources (disk full, out of memory, too many connections),
        // operator intervention (shutdown, cancelled statement), system error (I/O).
        Some("08" | "40" | "53" | "57" | "58") => Blame::Database,
        _ => Blame::Collector,
    }
}

/// The failure of a batch of one run as that run's error. (A failure blamed on the
/// database never comes here: [`store_all`] makes it the whole batch's.)
fn run_error(arrival: &Arrival, source: BatchError) -> WriteError {
    let (host, run) = (arrival.upload.host.clone(), arrival.upload.id);
    match blame(&source) {
        Blame::Run => WriteError::Refused { host, run, source },
        Blame::Database | Blame::Collector => WriteError::Failed { host, run, source },
    }
}

struct Job {
    arrival: Arrival,
    reply: oneshot::Sender<Result<Stored, WriteError>>,
}

/// The queue in front of the writers.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts `writers` writer tasks on the current tokio runtime, each storing one batch at
    /// a time through `pool`: while one waits for its commit, another stores the next batch.
    pub fn start(pool: Pool, writers: usize) -> Writer {
        let (queue, arrivals) = mpsc::channel(QUEUE);
        let arrivals = Arc::new(Mutex::new(arrivals));
        for _ in 0..writers.max(1) {
            tokio::spawn(write_batches(pool.clone(), arrivals.clone()));
        }
        Writer { queue }
    }

    /// Stores a run (now, or found stored before); returns after the commit of its batch.
    pub async fn store(&self, arrival: Arrival) -> Result<Stored, WriteError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Job { arrival, reply })
            .await
            .map_err(|_| WriteError::Stopped)?;
        answer.await.unwrap_or(Err(WriteError::Abandoned))
    }
}

/// One writer: takes what is queued (at least one run, at most [`MAX_BATCH`]) and stores it.
async fn write_batches(pool: Pool, arrivals: Arc<Mutex<mpsc::Receiver<Job>>>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    loop {
        let taken = arrivals.lock().await.recv_many(&mut jobs, MAX_BATCH).await;
        if taken == 0 {
            return; // the queue is closed: the collector is stopping
        }
        // Each batch in a task of its own: were storing it to panic (a bug), that batch's
        // requests are answered `Abandoned` and this writer goes on. A writer that died
        // would be gone until the collector restarts; with all of them gone, every run
        // would be refused.
        let _ = tokio::spawn(write(pool.clone(), std::mem::take(&mut jobs))).await;
    }
}

/// Stores a batch and answers its requests; a batch the server refused is stored run by run.
async fn write(pool: Pool, jobs: Vec<Job>) {
    let (arrivals, replies): (Vec<Arrival>, Vec<_>) =
        jobs.into_iter().map(|j| (j.arrival, j.reply)).unzip();
    match store_all(&pool, &arrivals).await {
        Ok(stored) => {
            for (reply, stored) in replies.into_iter().zip(stored) {
                // A request gone (its agent hung up) still has its run stored: a resend is
                // answered as a duplicate.
                let _ = reply.send(Ok(stored));
            }
        }
        Err(Failure::Batch(e)) if arrivals.len() == 1 => {
            if let (Some(arrival), Some(reply)) = (arrivals.first(), replies.into_iter().next()) {
                let _ = reply.send(Err(run_error(arrival, e)));
            }
        }
        Err(Failure::Batch(_)) => write_one_by_one(&pool, arrivals, replies).await,
        Err(Failure::Unreachable(u)) => {
            for reply in replies {
                let _ = reply.send(Err(u.error()));
            }
        }
    }
}

/// Stores each run of a refused batch in a transaction of its own. Once the database is
/// out of reach, the runs left get that answer at once rather than a wait each.
async fn write_one_by_one(
    pool: &Pool,
    arrivals: Vec<Arrival>,
    replies: Vec<oneshot::Sender<Result<Stored, WriteError>>>,
) {
    let mut unreachable: Option<Unreachable> = None;
    for (arrival, reply) in arrivals.into_iter().zip(replies) {
        let outcome = match &unreachable {
            Some(u) => Err(u.error()),
            None => match store_all(pool, std::slice::from_ref(&arrival)).await {
                // One run in, one answer out: store_batch answers each run of its batch.
                Ok(stored) => stored.into_iter().next().ok_or(WriteError::Abandoned),
                Err(Failure::Batch(e)) => Err(run_error(&arrival, e)),
                Err(Failure::Unreachable(u)) => Err(unreachable.insert(u).error()),
            },
        };
        let _ = reply.send(outcome);
    }
}

/// Why a batch was not stored.
enum Failure {
    /// Blamed on the database's availability: every run of the batch waits for it alike.
    Unreachable(Unreachable),
    /// Blamed on what a run holds, or on the collector: worth storing its runs one by one.
    Batch(BatchError),
}

/// A failure every run of a batch is answered alike, shared by their answers.
#[derive(Clone)]
enum Unreachable {
    /// No connection from the pool.
    Pool(Arc<PoolError>),
    /// The database stopped taking work while storing.
    Database(Arc<BatchError>),
}

impl Unreachable {
    fn error(&self) -> WriteError {
        match self {
            Unreachable::Pool(e) => WriteError::NoConnection(e.clone()),
            Unreachable::Database(e) => WriteError::Unavailable(e.clone()),
        }
    }
}

async fn store_all(pool: &Pool, arrivals: &[Arrival]) -> Result<Vec<Stored>, Failure> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| Failure::Unreachable(Unreachable::Pool(Arc::new(e))))?;
    batch::store_batch(&mut client, arrivals)
        .await
        .map_err(|e| match blame(&e) {
            Blame::Database => Failure::Unreachable(Unreachable::Database(Arc::new(e))),
            Blame::Run | Blame::Collector => Failure::Batch(e),
        })
}
