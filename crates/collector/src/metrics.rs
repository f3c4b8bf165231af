//! `GET /metrics`: the collector's own series in Prometheus's text form (OpenMetrics 1.0),
//! open like the read API. Today: what retention did (crate::retention).

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// The content type of the exposition.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The route serving `registry`.
pub fn routes(registry: Arc<Registry>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || async move {
            let mut text = String::new();
            // Writing into a String fails only on a series that does not encode, which
            // registered series always do.
            let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
            ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
        }),
    )
}
