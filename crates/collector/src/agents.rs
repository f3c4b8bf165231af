//! Where each agent listens, and which RNICs it probes from, so that the collector can ask
//! agents for pair probes ([`crate::mesh`]).
//!
//! | path | what |
//! |---|---|
//! | `PUT /api/hosts/{host}/agent {"url", "rnics"[, "devices", "expected_busbw_gbs"]}` | an agent registers (its host's token, DESIGN 4.5's rules: 401, 403 for another host's token, 400 a body outside this) |
//! | `GET /api/agents` | `[{"host", "agent_url", "rnics", "devices", "registered_unix_ms", "expected_busbw_gbs"}]`, by host |
//!
//! `devices` are the RDMA devices' names (`mlx5_0`), one per RNIC id in the same order, or
//! none (a simulated host has no device): with `--fabric` the collector finds each RNIC on
//! the fabric by its device ([`crate::mesh`]). `expected_busbw_gbs` (`{"across_hosts",
//! "within_host"}`, GB/s, null where not known) is what the host's links allow a job's
//! collectives, from the agent's own model of its host: the job verdict's `expected`
//! ([`crate::job::hosts::expected_busbw`]).
//!
//! A registration replaces the host's previous one; it is stored in the `agents` table,
//! keyed by the host's fleet name (an agent registers at start, before any run of it).

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use deadpool_postgres::Pool;
use fleet_api::read::ErrorBody;
use fleet_api::tokens::Tokens;
use model::job::ExpectedBusBandwidth;
use std::sync::Arc;

/// The `agents` table (schema version 8).
pub const MIGRATION: &str = "CREATE TABLE agents (
        host TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        rnics TEXT[] NOT NULL,
        devices TEXT[] NOT NULL,
        registered_unix_ms BIGINT NOT NULL
    );";

/// What the registrations say their links allow (schema version 15): null where the agent
/// did not say, as agents registered before it did not.
pub const EXPECTED_MIGRATION: &str = "ALTER TABLE agents
        ADD COLUMN expected_across_gbs DOUBLE PRECISION,
        ADD COLUMN expected_within_gbs DOUBLE PRECISION;";

/// The most a link may be said to allow, GB/s: far above any RNIC or GPU link made.
const MAX_EXPECTED_GBS: f64 = 100_000.0;

/// The most RNICs one agent may register.
const MAX_RNICS: usize = 64;
/// The longest device name (the kernel's IB_DEVICE_NAME_MAX is 64 with its NUL).
const MAX_DEVICE: usize = 63;

/// One agent as registered: the contract's.
pub use fleet_api::register::AgentEntry;
/// `PUT /api/hosts/{host}/agent`'s body: the contract's.
use fleet_api::register::AgentRegistration as Registration;

/// Whether `id` is an RNIC id (`rnic` and a number).
pub fn is_rnic_id(id: &str) -> bool {
    id.strip_prefix("rnic")
        .is_some_and(|n| !n.is_empty() && n.len() <= 4 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks a registration: an http(s) URL with a host, RNIC ids, each once. Returns why not.
fn check(r: &Registration) -> Result<(), String> {
    let uri: axum::http::Uri = r
        .url
        .parse()
        .map_err(|e| format!("url `{}` is not a URL ({e})", r.url))?;
    if !matches!(uri.scheme_str(), Some("http" | "https"))
        || uri.host().unwrap_or_default().is_empty()
    {
        return Err(format!(
            "url `{}`: expected http://HOST:PORT or https://HOST:PORT",
            r.url
        ));
    }
    if r.rnics.len() > MAX_RNICS {
        return Err(format!("rnics: {} is more than {MAX_RNICS}", r.rnics.len()));
    }
    if let Some(bad) = r.rnics.iter().find(|id| !is_rnic_id(id)) {
        return Err(format!(
            "rnics: `{bad}` is not an RNIC id (rnic0, rnic1, ..)"
        ));
    }
    let mut seen = r.rnics.clone();
    seen.sort();
    seen.dedup();
    if seen.len() != r.rnics.len() {
        return Err("rnics: an RNIC id is given twice".into());
    }
    if !r.devices.is_empty() && r.devices.len() != r.rnics.len() {
        return Err(format!(
            "devices: {} names for {} RNIC ids (one per RNIC id, in the same order, or none)",
            r.devices.len(),
            r.rnics.len()
        ));
    }
    if let Some(bad) = r.devices.iter().find(|d| {
        d.is_empty()
            || d.len() > MAX_DEVICE
            || d.chars().any(|c| c.is_whitespace() || c.is_control())
    }) {
        return Err(format!(
            "devices: `{}` is not a device name (1 to {MAX_DEVICE} characters, no spaces)",
            bad.escape_debug()
        ));
    }
    let mut seen = r.devices.clone();
    seen.sort();
    seen.dedup();
    if seen.len() != r.devices.len() {
        return Err("devices: a device is given twice".into());
    }
    let e = &r.expected_busbw_gbs;
    for (field, gbs) in [
        ("across_hosts", e.across_hosts),
        ("within_host", e.within_host),
    ] {
        if gbs.is_some_and(|g| !(g > 0.0 && g <= MAX_EXPECTED_GBS)) {
            return Err(format!(
                "expected_busbw_gbs.{field}: {} is not a rate (more than 0, at most {MAX_EXPECTED_GBS} GB/s)",
                gbs.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// The routes, over the database and the hosts' tokens.
pub fn routes(pool: Pool, tokens: Arc<Tokens>) -> Router {
    Router::new()
        .route("/api/hosts/{host}/agent", put(register))
        .route("/api/agents", get(list))
        .with_state((pool, tokens))
}

/// A refusal in the fleet API's error body (`WWW-Authenticate: Bearer` with a 401).
pub(crate) fn refuse(code: StatusCode, error: String) -> Response {
    let mut response = (code, Json(ErrorBody { error })).into_response();
    if code == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
    }
    response
}

/// The token presented as `Authorization: Bearer TOKEN`.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

async fn register(
    State((pool, tokens)): State<(Pool, Arc<Tokens>)>,
    UrlPath(host): UrlPath<String>,
    headers: HeaderMap,
    body: Result<Json<Registration>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Some(token_host) = bearer(&headers).and_then(|t| tokens.host_of(t)) else {
        return refuse(StatusCode::UNAUTHORIZED, "no valid bearer token".into());
    };
    if token_host != host {
        return refuse(
            StatusCode::FORBIDDEN,
            format!("the token belongs to host {token_host}, not {host}"),
        );
    }
    let registration = match body {
        Ok(Json(r)) => r,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e.body_text()),
    };
    if let Err(why) = check(&registration) {
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    let now = model::time::unix_ms(std::time::SystemTime::now());
    let stored = async {
        let client = pool.get().await.map_err(|e| e.to_string())?;
        client
            .execute(
                "INSERT INTO agents (host, url, rnics, devices, registered_unix_ms,
                                     expected_across_gbs, expected_within_gbs)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (host) DO UPDATE
                 SET url = EXCLUDED.url, rnics = EXCLUDED.rnics, devices = EXCLUDED.devices,
                     registered_unix_ms = EXCLUDED.registered_unix_ms,
                     expected_across_gbs = EXCLUDED.expected_across_gbs,
                     expected_within_gbs = EXCLUDED.expected_within_gbs",
                &[
                    &host,
                    &registration.url,
                    &registration.rnics,
                    &registration.devices,
                    &now,
                    &registration.expected_busbw_gbs.across_hosts,
                    &registration.expected_busbw_gbs.within_host,
                ],
            )
            .await
            .map_err(|e| crate::server_words(&e))
    }
    .await;
    match stored {
        Ok(_) => Json(AgentEntry {
            host,
            agent_url: registration.url,
            rnics: registration.rnics,
            devices: registration.devices,
            registered_unix_ms: now,
            expected_busbw_gbs: registration.expected_busbw_gbs,
        })
        .into_response(),
        Err(e) => refuse(StatusCode::SERVICE_UNAVAILABLE, format!("database: {e}")),
    }
}

async fn list(State((pool, _)): State<(Pool, Arc<Tokens>)>) -> Response {
    match load(&pool, None).await {
        Ok(agents) => Json(agents).into_response(),
        Err(e) => refuse(StatusCode::SERVICE_UNAVAILABLE, format!("database: {e}")),
    }
}

/// Why the registered agents could not be read: the database, in its own words (the
/// callers add `database: `).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No connection from the pool.
    #[error("{0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// The query failed.
    #[error("{}", crate::server_words(.0))]
    Query(#[from] tokio_postgres::Error),
}

/// The hosts of `names` the collector does not know, in the order given: no agent registered
/// it and it sent no run. A job or a mesh naming one is an input error (a typo, another
/// fleet's host), not a host without a run in the window.
pub async fn unknown_hosts(pool: &Pool, names: &[String]) -> Result<Vec<String>, LoadError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT n FROM unnest($1::text[]) WITH ORDINALITY AS given(n, i)
             WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.host = n)
               AND NOT EXISTS (SELECT 1 FROM hosts h WHERE h.name = n)
             ORDER BY i",
            &[&names],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The refusal of a request naming hosts the collector does not know (404), each named, in
/// hostlist syntax: the job verdict's and the mesh's words.
pub(crate) fn unknown_refusal(unknown: &[String]) -> (StatusCode, String) {
    let (s, them, it) = if unknown.len() > 1 {
        ("s", "them", "they")
    } else {
        ("", "it", "it")
    };
    (
        StatusCode::NOT_FOUND,
        format!(
            "unknown node{s}: {} (no agent registered {them} and {it} sent no run)",
            model::hostlist::compress(unknown)
        ),
    )
}

/// The registered agents, of `hosts` only when given, by host.
pub async fn load(pool: &Pool, hosts: Option<&[String]>) -> Result<Vec<AgentEntry>, LoadError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT host, url, rnics, devices, registered_unix_ms, expected_across_gbs,
                    expected_within_gbs
             FROM agents WHERE $1::text[] IS NULL OR host = ANY($1) ORDER BY host",
            &[&hosts],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| AgentEntry {
            host: r.get(0),
            agent_url: r.get(1),
            rnics: r.get(2),
            devices: r.get(3),
            registered_unix_ms: r.get(4),
            expected_busbw_gbs: ExpectedBusBandwidth {
                across_hosts: r.get(5),
                within_host: r.get(6),
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration(url: &str, rnics: &[&str]) -> Registration {
        Registration {
            url: url.into(),
            rnics: rnics.iter().map(|s| s.to_string()).collect(),
            devices: Vec::new(),
            expected_busbw_gbs: ExpectedBusBandwidth::default(),
        }
    }

    #[test]
    fn devices_are_one_per_rnic_id_each_once_or_none() {
        let with = |devices: &[&str]| Registration {
            devices: devices.iter().map(|s| s.to_string()).collect(),
            ..registration("http://n:1", &["rnic0", "rnic1"])
        };
        assert_eq!(check(&with(&["mlx5_0", "mlx5_1"])), Ok(()));
        assert_eq!(check(&with(&[])), Ok(()));
        assert_eq!(
            check(&with(&["mlx5_0"])).unwrap_err(),
            "devices: 1 names for 2 RNIC ids (one per RNIC id, in the same order, or none)"
        );
        assert_eq!(
            check(&with(&["mlx5_0", "mlx5_0"])).unwrap_err(),
            "devices: a device is given twice"
        );
        for bad in ["", "mlx5 0", "a\nb"] {
            let e = check(&with(&["mlx5_0", bad])).unwrap_err();
            assert!(e.starts_with("devices: `"), "{e}");
        }
        let long = "d".repeat(64);
        assert!(check(&with(&["mlx5_0", &long])).is_err());
    }

    #[test]
    fn a_registration_needs_an_http_url_and_rnic_ids_each_once() {
        assert_eq!(
            check(&registration("http://node01:9469", &["rnic0", "rnic1"])),
            Ok(())
        );
        assert_eq!(check(&registration("https://10.0.0.1:9469/", &[])), Ok(()));
        let e = check(&registration("ftp://node01", &["rnic0"])).unwrap_err();
        assert!(e.starts_with("url `ftp://node01`: expected http"), "{e}");
        let e = check(&registration("node01:9469", &["rnic0"])).unwrap_err();
        assert!(e.starts_with("url `node01:9469`"), "{e}");
        let e = check(&registration("http://n:1", &["rnic0", "mlx5_0"])).unwrap_err();
        assert_eq!(e, "rnics: `mlx5_0` is not an RNIC id (rnic0, rnic1, ..)");
        let e = check(&registration("http://n:1", &["rnic0", "rnic0"])).unwrap_err();
        assert_eq!(e, "rnics: an RNIC id is given twice");
    }

    #[test]
    fn rnic_ids_are_rnic_and_a_number() {
        for ok in ["rnic0", "rnic7", "rnic15"] {
            assert!(is_rnic_id(ok), "{ok}");
        }
        for bad in ["rnic", "rnicx", "gpu0", "rnic-1", "rnic123456", ""] {
            assert!(!is_rnic_id(bad), "{bad}");
        }
    }
}
