//! The web UI (issue 14 part 3, issue 28's job page): three pages, one stylesheet and one
//! script, compiled into the binary (`crates/fleet-api/ui/`), so it works without internet
//! and needs no files beside the binary. The pages are static; the script fills them from
//! the read API, so the collector and the agent serve the same files:
//!
//! | page | collector | agent |
//! |---|---|---|
//! | fleet overview (`overview.html`) | `/` | |
//! | host page (`host.html`) | `/hosts/{host}` | `/` (its own host) |
//! | job page (`job.html`) | `/job?nodes=LIST&since=T&until=T[&job=ID]` | |
//!
//! The UI only reads. Every string from the API reaches the DOM through `textContent` or
//! `setAttribute` (never `innerHTML`), and the Content-Security-Policy allows scripts and
//! styles from this origin only, so a host name or an evidence text cannot run as code.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const OVERVIEW_HTML: &str = include_str!("../ui/overview.html");
const HOST_HTML: &str = include_str!("../ui/host.html");
const JOB_HTML: &str = include_str!("../ui/job.html");
const APP_CSS: &str = include_str!("../ui/app.css");
const APP_JS: &str = include_str!("../ui/app.js");

/// Only this origin's script and style; no inline script, no frames, no forms posting out.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// What the pages weigh, bytes (HTML + CSS + script, uncompressed): the number the docs
/// quote.
pub fn page_weight() -> usize {
    [OVERVIEW_HTML, HOST_HTML, JOB_HTML]
        .iter()
        .map(|page| page.len())
        .max()
        .unwrap_or(0)
        + APP_CSS.len()
        + APP_JS.len()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // Small, and a new binary may change them: revalidate rather than cache stale.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The fleet overview page.
pub async fn overview_page() -> Response {
    asset("text/html; charset=utf-8", OVERVIEW_HTML)
}

/// The host page (the script reads the host from the URL, or from `/api/hosts` on an
/// agent).
pub async fn host_page() -> Response {
    asset("text/html; charset=utf-8", HOST_HTML)
}

/// The job page: the script reads the nodes and window from the URL and asks
/// `/api/jobs/verdict`; bare, it shows the form that fills them.
pub async fn job_page() -> Response {
    asset("text/html; charset=utf-8", JOB_HTML)
}

/// `/ui/app.css` and `/ui/app.js`, for any router state.
pub fn asset_routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
}

/// The collector's pages: the overview at `/`, a host at `/hosts/{host}`, a job at `/job`,
/// and the assets.
pub fn collector_routes() -> Router {
    asset_routes()
        .route("/", get(overview_page))
        .route("/hosts/{host}", get(host_page))
        .route("/job", get(job_page))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing is fetched from elsewhere: no absolute URL in any asset (the SVG namespace
    /// is a name, not a fetch).
    #[test]
    fn assets_reference_nothing_outside_the_origin() {
        for (name, text) in [
            ("overview.html", OVERVIEW_HTML),
            ("host.html", HOST_HTML),
            ("job.html", JOB_HTML),
            ("app.css", APP_CSS),
            ("app.js", APP_JS),
        ] {
            let stripped = text.replace("http://www.w3.org/2000/svg", "");
            for scheme in ["http://", "https://", "//fonts", "@import"] {
                assert!(!stripped.contains(scheme), "{name} holds {scheme}");
            }
            assert!(!text.contains("innerHTML"), "{name} uses innerHTML");
        }
        // Every page loads the one stylesheet and the one script.
        for page in [OVERVIEW_HTML, HOST_HTML, JOB_HTML] {
            assert!(page.contains(r#"<script src="/ui/app.js" defer></script>"#));
            assert!(page.contains(r#"<link rel="stylesheet" href="/ui/app.css">"#));
        }
        assert!(page_weight() < 64 * 1024, "{} bytes", page_weight());
    }
}
