//! The collector's writers: the runs that arrive while a batch is being stored wait in a
//! queue and go into the next batch together (group commit), so that the cost of a
//! transaction and of each statement is shared by the runs of a busy moment instead of paid
//! by every run. A lone run is stored at once: a writer never waits for company.
//!
//! A request is answered only after its batch commits. When PostgreSQL refuses a batch
//! (a value it will not take), its runs are stored again one by one, so that one bad run
//! fails alone and the others are stored.

use crate::batch::{self, Arrival, Stored};
use deadpool_postgres::Pool;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Mutex};

/// The most runs one transaction stores.
const MAX_BATCH: usize = 64;

/// Runs waiting for a writer; a full queue holds the requests back (bounded memory: a run
/// is tens of kB).
const QUEUE: usize = 256;

/// What a request is told: stored (now or before), or why not.
pub type Outcome = Result<Stored, String>;

struct Job {
    arrival: Arrival,
    reply: oneshot::Sender<Outcome>,
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

    /// Stores a run; returns after the commit of its batch.
    pub async fn store(&self, arrival: Arrival) -> Outcome {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Job { arrival, reply })
            .await
            .map_err(|_| "the collector's writers have stopped".to_owned())?;
        answer
            .await
            .unwrap_or_else(|_| Err("the collector's writer stopped mid-batch".to_owned()))
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
        write(&pool, std::mem::take(&mut jobs)).await;
    }
}

/// Stores a batch and answers its requests; a batch the server refused is stored run by run.
async fn write(pool: &Pool, jobs: Vec<Job>) {
    let (arrivals, replies): (Vec<Arrival>, Vec<_>) =
        jobs.into_iter().map(|j| (j.arrival, j.reply)).unzip();
    match store_all(pool, &arrivals).await {
        Ok(stored) => {
            for (reply, stored) in replies.into_iter().zip(stored) {
                // A request gone (its agent hung up) still has its run stored: a resend is
                // answered as a duplicate.
                let _ = reply.send(Ok(stored));
            }
        }
        Err(Failure::Refused(_)) if arrivals.len() > 1 => {
            for (arrival, reply) in arrivals.into_iter().zip(replies) {
                let outcome = store_all(pool, std::slice::from_ref(&arrival))
                    .await
                    .map(|mut stored| stored.remove(0))
                    .map_err(|f| f.to_string());
                let _ = reply.send(outcome);
            }
        }
        Err(failure) => {
            let reason = failure.to_string();
            for reply in replies {
                let _ = reply.send(Err(reason.clone()));
            }
        }
    }
}

/// Why a batch was not stored.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// PostgreSQL answered with an error: something in the batch it will not take.
    #[error("{0}")]
    Refused(String),
    /// No connection, or it broke: nothing to gain from trying the runs one by one.
    #[error("{0}")]
    Unreachable(String),
}

async fn store_all(pool: &Pool, arrivals: &[Arrival]) -> Result<Vec<Stored>, Failure> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| Failure::Unreachable(e.to_string()))?;
    batch::store_batch(&mut client, arrivals)
        .await
        .map_err(|e| match e.as_db_error() {
            // The server's own words ("ERROR: ..."), not tokio-postgres's bare "db error".
            Some(db) => Failure::Refused(db.to_string()),
            None => Failure::Unreachable(e.to_string()),
        })
}
