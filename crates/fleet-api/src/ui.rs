//! The web UI (issue 14 part 3, issue 28's job page, issue 39's jobs): four pages, one
//! stylesheet and two scripts, compiled into the binary (`crates/fleet-api/ui/`), so it
//! works without internet and needs no files beside the binary. The pages are static; the
//! scripts fill them from the read API, so the collector and the agent serve the same files.
//! `app.js` serves every page; the jobs' pages add `jobs.js` (the jobs list, the job page's
//! collectives and its picture of hosts and switches), kept apart so that neither script
//! grows into one huge file:
//!
//! | page | collector | agent |
//! |---|---|---|
//! | fleet overview (`overview.html`) | `/` | |
//! | host page (`host.html`) | `/hosts/{host}` | `/` (its own host) |
//! | job page (`job.html`) | `/job?nodes=LIST&since=T&until=T[&job=ID]`, `/job?job=ID` | |
//! | jobs list (`jobs.html`) | `/jobs` | |
//! | actions (`actions.html`, DESIGN 4.9) | `/actions` | |
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
const JOBS_HTML: &str = include_str!("../ui/jobs.html");
const ACTIONS_HTML: &str = include_str!("../ui/actions.html");
const APP_CSS: &str = include_str!("../ui/app.css");
const APP_JS: &str = include_str!("../ui/app.js");
const JOBS_JS: &str = include_str!("../ui/jobs.js");

/// Only this origin's script and style; no inline script, no frames, no forms posting out.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// What the heaviest page weighs, bytes (its HTML, the CSS and the scripts it loads,
/// uncompressed): the number the docs quote.
pub fn page_weight() -> usize {
    let plain = APP_CSS.len() + APP_JS.len();
    [
        OVERVIEW_HTML.len() + plain,
        HOST_HTML.len() + plain,
        JOB_HTML.len() + plain + JOBS_JS.len(),
        JOBS_HTML.len() + plain + JOBS_JS.len(),
        ACTIONS_HTML.len() + plain + JOBS_JS.len(),
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
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
/// `/api/jobs/verdict`; with a job alone, the collector's own verdict on it and its
/// collectives; bare, it shows the form that fills them.
pub async fn job_page() -> Response {
    asset("text/html; charset=utf-8", JOB_HTML)
}

/// The jobs list: the script reads `/api/jobs`.
pub async fn jobs_page() -> Response {
    asset("text/html; charset=utf-8", JOBS_HTML)
}

/// The actions page: the script reads `/api/actions`.
pub async fn actions_page() -> Response {
    asset("text/html; charset=utf-8", ACTIONS_HTML)
}

/// `/ui/app.css`, `/ui/app.js` and `/ui/jobs.js`, for any router state.
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
        .route(
            "/ui/jobs.js",
            get(|| async { asset("text/javascript; charset=utf-8", JOBS_JS) }),
        )
}

/// The collector's pages: the overview at `/`, a host at `/hosts/{host}`, a job at `/job`,
/// the jobs at `/jobs`, the actions at `/actions`, and the assets.
pub fn collector_routes() -> Router {
    asset_routes()
        .route("/", get(overview_page))
        .route("/hosts/{host}", get(host_page))
        .route("/job", get(job_page))
        .route("/jobs", get(jobs_page))
        .route("/actions", get(actions_page))
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
            ("jobs.html", JOBS_HTML),
            ("actions.html", ACTIONS_HTML),
            ("app.css", APP_CSS),
            ("app.js", APP_JS),
            ("jobs.js", JOBS_JS),
        ] {
            let stripped = text.replace("http://www.w3.org/2000/svg", "");
            for scheme in ["http://", "https://", "//fonts", "@import"] {
                assert!(!stripped.contains(scheme), "{name} holds {scheme}");
            }
            assert!(!text.contains("innerHTML"), "{name} uses innerHTML");
        }
        // Every page loads the one stylesheet and app.js; the jobs' pages jobs.js after it
        // (it uses what app.js shares).
        let app = r#"<script src="/ui/app.js" defer></script>"#;
        let jobs = r#"<script src="/ui/jobs.js" defer></script>"#;
        for page in [OVERVIEW_HTML, HOST_HTML, JOB_HTML, JOBS_HTML, ACTIONS_HTML] {
            assert!(page.contains(app));
            assert!(page.contains(r#"<link rel="stylesheet" href="/ui/app.css">"#));
        }
        for page in [JOB_HTML, JOBS_HTML, ACTIONS_HTML] {
            let (a, j) = (page.find(app), page.find(jobs));
            assert!(a.is_some() && j.is_some() && a < j, "app.js, then jobs.js");
        }
        // The job page is the heaviest (both scripts): 74 KB; the others stay under 52 KB.
        assert!(page_weight() < 80 * 1024, "{} bytes", page_weight());
    }
}
