//! What a store must answer for the shared read endpoints ([`super::routes`]): the
//! collector's PostgreSQL and an agent's SQLite file implement it.

use super::error::ReadError;
use super::hosts::{HostRun, HostSummary, TimelinePoint};
use super::query::TimelineRequest;
use serde::Serialize;
use std::future::Future;

/// A store of runs the read API answers from. The queries are checked before a store is
/// asked; a store answers `Ok(None)` for a host it does not know (404), and keeps its own
/// failures as [`ReadError::Unavailable`] (503) or [`ReadError::Internal`] (500).
///
/// Async with `Send` futures, so that axum can serve it on any runtime: the collector awaits
/// its pool; an agent reads its SQLite file inline (see the module docs of [`super`]).
pub trait ReadStore: Clone + Send + Sync + 'static {
    /// A run's report as the store holds it (see [`HostRun`]).
    type Report: Serialize + Send;

    /// The one host this store holds, when it holds one only (an agent): any other is
    /// refused before the store is asked, and the 404 names the one it holds.
    fn single_host(&self) -> Option<&str> {
        None
    }

    /// Every host, by name.
    fn hosts(&self) -> impl Future<Output = Result<Vec<HostSummary>, ReadError>> + Send;

    /// The newest `limit` runs of `host`, newest first; `None` for an unknown host.
    fn host_runs(
        &self,
        host: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Option<Vec<HostRun<Self::Report>>>, ReadError>> + Send;

    /// The newest `request.limit` measurements of one path of `host` in runs started at or
    /// after `request.since_unix_ms`, oldest first; `None` for an unknown host.
    fn timeline(
        &self,
        host: &str,
        request: &TimelineRequest,
    ) -> impl Future<Output = Result<Option<Vec<TimelinePoint>>, ReadError>> + Send;
}
