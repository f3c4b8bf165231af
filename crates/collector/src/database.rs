//! PostgreSQL's failures as the read API's: the pool or a query failing is the database
//! being unreachable or restarting, answered 503 so that a client tries again, with the
//! words the collector always used ("database: ...").

use crate::refresh::RefreshError;
use fleet_api::read::ReadError;

/// The pool or a query failed.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    /// No connection from the pool (the database is down, or every connection busy for
    /// the pool's bounded wait).
    #[error("database: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// A query failed.
    #[error("database: {0}")]
    Query(#[from] tokio_postgres::Error),
}

/// `.db()?` on a pool's or a query's result, in a handler that answers [`ReadError`]s.
pub(crate) trait Db<T> {
    /// The error as a 503.
    fn db(self) -> Result<T, ReadError>;
}

impl<T, E: Into<DatabaseError>> Db<T> for Result<T, E> {
    fn db(self) -> Result<T, ReadError> {
        self.map_err(|e| ReadError::unavailable(e.into()))
    }
}

/// A refresh that failed: the database (503, as any read), or stored values it cannot use
/// (500, naming them: asking again will not help until they are gone).
impl From<RefreshError> for ReadError {
    fn from(e: RefreshError) -> Self {
        match e {
            RefreshError::Database(e) => ReadError::unavailable(DatabaseError::Query(e)),
            unusable @ RefreshError::UnevenSamples { .. } => ReadError::internal(unusable),
        }
    }
}
