//! A job's bus bandwidth over time (DESIGN 4.8), the job page's plot: per communicator,
//! collective kind and message size, the median over the ranks' summaries of each time
//! bucket (`fleet_api::job_series`).
//!
//! | path | what |
//! |---|---|
//! | `GET /api/jobs/{job}/busbw?since=T` | the job's series over the summaries whose buckets end at or after `T` (Unix seconds; the last 24 h by default); 404 naming the job when it has none there, 400 a `since` that is not a number |
//!
//! The read is the symptom's (crate::collectives::newest_summaries): the job's newest
//! [`MAX_ROWS_PER_JOB`](crate::collectives::MAX_ROWS_PER_JOB) summaries in the window, the oldest bucket dropped when the cap cut
//! it (a median over some of its ranks would draw a drop or a rise that is not there), and
//! at most [`MAX_POINTS`] points a series: a longer series merges neighbouring buckets, each
//! point then the median over all the ranks' summaries of its buckets. The median per bucket
//! is the one `analyze::collectives` reads a communicator's level from, so the line drawn
//! falls where the symptom's onset says.

use crate::api::ApiError;
use crate::collectives::{newest_summaries, WindowParams};
use axum::extract::{Path as UrlPath, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use deadpool_postgres::Pool;
use fleet_api::job_series::{BusbwPoint, BusbwSeries, JobBusbw, MAX_POINTS};
use model::inspector::RankSummary;
use std::collections::BTreeMap;

/// The routes, over the database.
pub fn routes(pool: Pool) -> Router {
    Router::new()
        .route("/api/jobs/{job}/busbw", get(job_busbw))
        .with_state(pool)
}

/// `GET /api/jobs/{job}/busbw?since=T`.
async fn job_busbw(
    State(pool): State<Pool>,
    UrlPath(job): UrlPath<String>,
    Query(params): Query<WindowParams>,
) -> Result<Json<JobBusbw>, ApiError> {
    let since = params.since()?;
    let none = || ApiError::NotFound(format!("job {job}: no collectives since {since}"));
    // The unnamed job '' is stored but never shown (crate::collectives).
    if job.is_empty() {
        return Err(none());
    }
    let client = pool.get().await?;
    let (rows, truncated) = newest_summaries(&client, &job, since).await?;
    let summaries = rows.len() as u64;
    let series = series(rows);
    if series.is_empty() {
        return Err(none());
    }
    Ok(Json(JobBusbw {
        job,
        since,
        summaries,
        truncated,
        series,
    }))
}

/// The series of `rows`, a job's summaries as read (crate::collectives::newest_summaries).
fn series(rows: Vec<RankSummary>) -> Vec<BusbwSeries> {
    // (communicator, collective, bytes) -> bucket start -> its rows.
    type Buckets = BTreeMap<u64, Vec<RankSummary>>;
    let mut groups: BTreeMap<(String, String, u64), Buckets> = BTreeMap::new();
    for r in rows {
        // Starts are not negative (the post's contract): their bits sort as the numbers do
        // (`+ 0.0` makes a -0.0 the 0.0 it equals).
        let key = (r.communicator.clone(), r.collective.clone(), r.bytes);
        groups
            .entry(key)
            .or_default()
            .entry((r.start_s + 0.0).to_bits())
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((communicator, collective, bytes), buckets)| {
            let buckets: Vec<Vec<RankSummary>> = buckets.into_values().collect();
            let ranks = buckets.iter().flatten().map(|r| r.n_ranks).max();
            // Neighbouring buckets merged, so that no series has more than MAX_POINTS.
            let per_point = buckets.len().div_ceil(MAX_POINTS).max(1);
            let points = buckets.chunks(per_point).map(point).collect();
            BusbwSeries {
                communicator,
                collective,
                bytes,
                ranks: ranks.unwrap_or_default(),
                points,
            }
        })
        .collect()
}

/// One point of consecutive buckets (oldest first, none empty): the median over all their
/// rows.
fn point(buckets: &[Vec<RankSummary>]) -> BusbwPoint {
    let first = &buckets[0][0];
    let end = buckets
        .iter()
        .flatten()
        .map(|r| r.start_s + r.width_s)
        .fold(first.start_s, f64::max);
    let values: Vec<f64> = buckets.iter().flatten().map(|r| r.busbw_gbs).collect();
    BusbwPoint {
        start_s: first.start_s,
        width_s: end - first.start_s,
        busbw_gbs: analyze::robust::median(values.iter().copied()).unwrap_or_default(),
        summaries: values.len() as u32,
        buckets: buckets.len() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(communicator: &str, start_s: f64, busbw_gbs: f64) -> RankSummary {
        RankSummary {
            communicator: communicator.into(),
            busbw_gbs,
            ..crate::collectives::tests::summary(start_s)
        }
    }

    #[test]
    fn each_bucket_is_the_median_of_its_ranks_one_series_per_communicator() {
        let rows = vec![
            row("0xb", 5.0, 9.0),
            row("0xa", 5.0, 4.0),
            row("0xa", 5.0, 1.0),
            row("0xa", 5.0, 3.0),
            row("0xa", 0.0, 2.0),
            row("0xa", 0.0, 6.0),
        ];
        let series = series(rows);
        assert_eq!(series.len(), 2);
        let a = &series[0];
        assert_eq!((a.communicator.as_str(), a.ranks), ("0xa", 4));
        let points: Vec<(f64, f64, u32)> = a
            .points
            .iter()
            .map(|p| (p.start_s, p.busbw_gbs, p.summaries))
            .collect();
        assert_eq!(points, [(0.0, 4.0, 2), (5.0, 3.0, 3)], "oldest first");
        assert_eq!(series[1].points[0].busbw_gbs, 9.0);
    }

    #[test]
    fn a_long_series_merges_neighbouring_buckets_into_at_most_600_points() {
        let rows: Vec<RankSummary> = (0..1500)
            .map(|b| row("0xa", 5.0 * b as f64, b as f64))
            .collect();
        let series = series(rows);
        let points = &series[0].points;
        assert_eq!(points.len(), 500, "three buckets a point");
        assert!(points.len() <= MAX_POINTS);
        let p = &points[1];
        assert_eq!((p.start_s, p.width_s, p.buckets), (15.0, 15.0, 3));
        assert_eq!(p.busbw_gbs, 4.0, "the median of 3, 4 and 5");
    }
}
