//! One blocking client of the collector, for `hostping fleet`, `hostping mesh` and `hostping
//! job`: its read API, the mesh (`POST /api/mesh`) and the job verdict (`GET
//! /api/jobs/verdict`), each answer read into the type the collector writes it from, so a
//! field renamed there does not compile here. A refusal keeps the collector's own words.

use crate::job::VerdictQuery;
use crate::mesh::{MeshAnswer, MeshRequest};
use crate::read::query::escape;
use crate::read::{
    CauseHosts, FleetStatus, HostBaseline, HostRun, HostSummary, RunsQuery, SlowHost,
    SlowHostsQuery,
};
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The most of an answer read: a fleet's hosts or a mesh of thousands of pairs fit.
const ANSWER_LIMIT: u64 = 64 << 20;
/// The whole-request limit of a read of the read API.
const READ_WAIT: Duration = Duration::from_secs(30);
/// The most of a refusal's body quoted when it is not the API's JSON (a proxy's page, say).
const WORDS_LIMIT: usize = 300;

/// Why the collector gave no answer; each names the URL asked.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No connection, a timeout, an answer cut short or over the limit.
    #[error("cannot reach the collector at {url}: {source}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// Why.
        #[source]
        source: ureq::Error,
    },
    /// The collector answered with an error status.
    #[error("the collector at {url} answered {status}: {words}")]
    Refused {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Its `error` (DESIGN 4.5), or the start of the body.
        words: String,
    },
    /// The answer is not the JSON of the type asked for.
    #[error("the collector at {url} answered something that is not {what}: {source}")]
    NotJson {
        /// The URL asked.
        url: String,
        /// What was expected, in words.
        what: &'static str,
        /// Why it does not read as one.
        #[source]
        source: serde_json::Error,
    },
    /// The request's body could not be written as JSON.
    #[error("{url}: writing the request: {source}")]
    Body {
        /// The URL asked.
        url: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// The collector at one base URL, with a probe token for what needs one (the mesh, a job
/// verdict with probes).
pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

/// What one request waits for, and what its answer is read as.
struct Ask<'a> {
    url: String,
    wait: Duration,
    what: &'static str,
    body: Option<&'a [u8]>,
}

impl Client {
    /// The collector at `base` (a trailing `/` dropped), `tls` for an https:// one; without
    /// a token until [`Client::with_token`].
    pub fn new(base: &str, tls: ureq::tls::TlsConfig) -> Client {
        Client {
            base: base.trim_end_matches('/').to_owned(),
            token: None,
            agent: crate::post::client(tls),
        }
    }

    /// The same client sending `token` as its bearer.
    pub fn with_token(self, token: String) -> Client {
        Client {
            token: Some(token),
            ..self
        }
    }

    /// The base URL, as asked.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET /api/fleet/status`.
    pub fn fleet_status(&self) -> Result<FleetStatus, ClientError> {
        self.read("/api/fleet/status")
    }

    /// `GET /api/hosts`.
    pub fn hosts(&self) -> Result<Vec<HostSummary>, ClientError> {
        self.read("/api/hosts")
    }

    /// `GET /api/hosts/HOST/baseline`.
    pub fn host_baseline(&self, host: &str) -> Result<HostBaseline, ClientError> {
        self.read(&format!("/api/hosts/{}/baseline", escape(host)))
    }

    /// `GET /api/hosts/HOST/runs`.
    pub fn host_runs(&self, host: &str, query: &RunsQuery) -> Result<Vec<HostRun>, ClientError> {
        self.read(&format!(
            "/api/hosts/{}/runs{}",
            escape(host),
            query.to_query_string()
        ))
    }

    /// `GET /api/fleet/causes`.
    pub fn causes(&self) -> Result<Vec<CauseHosts>, ClientError> {
        self.read("/api/fleet/causes")
    }

    /// `GET /api/fleet/slow-hosts`.
    pub fn slow_hosts(&self, query: &SlowHostsQuery) -> Result<Vec<SlowHost>, ClientError> {
        self.read(&format!("/api/fleet/slow-hosts{}", query.to_query_string()))
    }

    /// `POST /api/mesh`, waiting at most `wait` for the whole answer (the mesh runs while
    /// the request is open).
    pub fn mesh(&self, request: &MeshRequest, wait: Duration) -> Result<MeshAnswer, ClientError> {
        let url = format!("{}/api/mesh", self.base);
        let body = serde_json::to_vec(request).map_err(|source| ClientError::Body {
            url: url.clone(),
            source,
        })?;
        self.ask(Ask {
            url,
            wait,
            what: "a mesh answer",
            body: Some(&body),
        })
    }

    /// `GET /api/jobs/verdict?...` (DESIGN 4.7), or with the job's own `collectives` a
    /// `POST` of them to the same URL, waiting at most `wait` (probes and replays run while
    /// the request is open).
    pub fn job_verdict(
        &self,
        query: &VerdictQuery,
        collectives: Option<&crate::collectives::JobCollectives>,
        wait: Duration,
    ) -> Result<model::job::JobReport, ClientError> {
        let url = format!(
            "{}{}{}",
            self.base,
            crate::job::PATH,
            query.to_query_string()
        );
        // With the job's own collectives, a POST of them (the collector judges with them
        // rather than with those its agents sent); else a GET.
        let body = collectives
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|source| ClientError::Body {
                url: url.clone(),
                source,
            })?;
        self.ask(Ask {
            url,
            wait,
            what: "a job verdict",
            body: body.as_deref(),
        })
    }

    /// `GET path` of the read API, within the client's own time limit.
    fn read<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.ask(Ask {
            url: format!("{}{path}", self.base),
            wait: READ_WAIT,
            what: "the fleet API's JSON",
            body: None,
        })
    }

    /// One request: a GET, or a POST of a JSON `body`; its answer read as `T`.
    fn ask<T: DeserializeOwned>(&self, ask: Ask<'_>) -> Result<T, ClientError> {
        let Ask {
            url,
            wait,
            what,
            body,
        } = ask;
        let unreachable = |source| ClientError::Unreachable {
            url: url.clone(),
            source,
        };
        let bearer = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let answer = match body {
            Some(body) => {
                let mut request = self
                    .agent
                    .post(&url)
                    .config()
                    .timeout_global(Some(wait))
                    .build();
                if let Some(bearer) = &bearer {
                    request = request.header("Authorization", bearer);
                }
                request
                    .header("Content-Type", "application/json")
                    .send(body)
            }
            None => {
                let mut request = self
                    .agent
                    .get(&url)
                    .config()
                    .timeout_global(Some(wait))
                    .build();
                if let Some(bearer) = &bearer {
                    request = request.header("Authorization", bearer);
                }
                request.call()
            }
        };
        let mut answer = answer.map_err(unreachable)?;
        let status = answer.status().as_u16();
        let text = answer
            .body_mut()
            .with_config()
            .limit(ANSWER_LIMIT)
            .read_to_string()
            .map_err(unreachable)?;
        if !answer.status().is_success() {
            return Err(ClientError::Refused {
                url,
                status,
                words: crate::post::error_words(&text)
                    .chars()
                    .take(WORDS_LIMIT)
                    .collect(),
            });
        }
        serde_json::from_str(&text).map_err(|source| ClientError::NotJson { url, what, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_segments_are_escaped() {
        assert_eq!(escape("node-1.rack_2"), "node-1.rack_2");
        assert_eq!(escape("a b/c?"), "a%20b%2Fc%3F");
    }

    #[test]
    fn an_unreachable_collector_is_named() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let client = Client::new(&format!("http://{addr}/"), Default::default());
        let err = client.fleet_status().unwrap_err();
        assert!(matches!(err, ClientError::Unreachable { .. }));
        assert!(
            err.to_string().starts_with(&format!(
                "cannot reach the collector at http://{addr}/api/fleet/status: "
            )),
            "{err}"
        );
    }
}
