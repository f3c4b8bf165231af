//! Delivery of finished runs to the fleet collector (`hostping agent --collector URL`,
//! DESIGN 4.5). The probe loop only queues: each run enters the store's outbox in the
//! transaction that stores it. This thread posts the queue oldest first to
//! `POST {URL}/api/runs` and removes a run only when the collector answered 2xx (which it
//! does after its commit). A network error, a timeout, a 5xx (the collector or its database
//! unavailable) or a 401/403 (a token being fixed) keeps the run and backs off (doubling
//! from [`FIRST_BACKOFF`] to [`MAX_BACKOFF`]); a 400, 413 or 422 (the run outside the
//! contract, over the size limit, or refused by the database for what it holds) drops it
//! with a log line, for the same run would be refused again and, first in the queue, would
//! hold back every run behind it. The queue lives in SQLite, so a
//! restart of the agent or of the collector loses nothing, and the collector stores a
//! resend once (idempotent by host, the database's instance id and run id: a wiped database
//! numbers its runs from 1 again under a new instance id, and its runs are not taken for
//! resends).

use crate::Control;
use fleet_api::post::{post, Delivery, FIRST_BACKOFF, MAX_BACKOFF};
use fleet_api::upload::RunUpload;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use store::{Metrics, OutboxRun, Store, StoreError};

/// How often an empty outbox is looked at again.
const POLL: Duration = Duration::from_millis(200);
/// Runs read from the outbox per pass.
const BATCH: u32 = 32;
/// How long a stopping agent keeps delivering what is queued (the rest waits for the next
/// start).
const DRAIN: Duration = Duration::from_secs(5);

/// Where runs go and as whom.
#[derive(Debug, Clone)]
pub struct CollectorTarget {
    /// The collector's base URL, `http://HOST:PORT`.
    pub url: String,
    /// This host's bearer token.
    pub token: String,
    /// This host's name in the fleet.
    pub host: String,
    /// What an https:// collector's certificate is checked against.
    pub tls: ureq::tls::TlsConfig,
    /// The rack the host stands in (`--rack`, `agent.rack`), sent with each run.
    pub rack: Option<String>,
}

/// What a collector's base URL looks like, for the refusals that want one.
const EXPECTED_URL: &str = "expected http://HOST:PORT or https://HOST:PORT";

/// A `--collector` that is not a collector's base URL; each names the text.
#[derive(Debug, thiserror::Error)]
pub enum CollectorUrlError {
    /// Not a URI at all.
    #[error("`{text}` is not a URL ({source}); {EXPECTED_URL}")]
    NotUrl {
        /// The text as given.
        text: String,
        /// Why it does not parse.
        source: ureq::http::uri::InvalidUri,
    },
    /// A scheme other than http or https.
    #[error("`{text}`: scheme `{scheme}` is not http or https")]
    Scheme {
        /// The text as given.
        text: String,
        /// Its scheme.
        scheme: String,
    },
    /// No scheme.
    #[error("`{text}` has no scheme; {EXPECTED_URL}")]
    NoScheme {
        /// The text as given.
        text: String,
    },
    /// No host.
    #[error("`{text}` names no host; {EXPECTED_URL}")]
    NoHost {
        /// The text as given.
        text: String,
    },
    /// A query string.
    #[error("`{text}`: a query has no place in the collector's base URL")]
    Query {
        /// The text as given.
        text: String,
    },
}

/// Checks a collector's base URL (`--collector`): http or https, with a host, and nothing
/// after the path (the agent appends `/api/runs`). Returns it as given, or why it is not one.
pub fn collector_url(text: &str) -> Result<String, CollectorUrlError> {
    let uri: ureq::http::Uri = text.parse().map_err(|source| CollectorUrlError::NotUrl {
        text: text.to_owned(),
        source,
    })?;
    let text = || text.to_owned();
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => {
            return Err(CollectorUrlError::Scheme {
                text: text(),
                scheme: other.to_owned(),
            })
        }
        None => return Err(CollectorUrlError::NoScheme { text: text() }),
    }
    if uri.host().unwrap_or_default().is_empty() {
        return Err(CollectorUrlError::NoHost { text: text() });
    }
    if uri.query().is_some() {
        return Err(CollectorUrlError::Query { text: text() });
    }
    Ok(text())
}

/// Why this host's collector token could not be had; each names the flag, never the token.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// `--token-file` cannot be read.
    #[error("--token-file `{}`: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--token-file` holds no token.
    #[error("--token-file `{}` is empty", file.display())]
    Empty {
        /// The file.
        file: PathBuf,
    },
    /// `--token-file` holds more than one word.
    #[error(
        "--token-file `{}` must hold the token alone, on one line (not the collector's \
         \"NAME TOKEN\" tokens file)",
        file.display()
    )]
    NotAlone {
        /// The file.
        file: PathBuf,
    },
    /// Neither `--token-file` nor `--token` with `--collector`.
    #[error("--collector {url} needs this host's token: give --token-file FILE (or --token)")]
    Missing {
        /// The collector's URL.
        url: String,
    },
}

/// Reads this host's collector token from `file` (`--token-file`): its one non-empty line,
/// trimmed, so the secret need not appear in `ps`. The message names the file and never
/// holds its content.
pub fn read_token_file(file: &std::path::Path) -> Result<String, TokenError> {
    let text = std::fs::read_to_string(file).map_err(|source| TokenError::Read {
        file: file.to_owned(),
        source,
    })?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match (lines.next(), lines.next()) {
        (Some(token), None) if !token.contains(char::is_whitespace) => Ok(token.to_owned()),
        (None, _) => Err(TokenError::Empty {
            file: file.to_owned(),
        }),
        _ => Err(TokenError::NotAlone {
            file: file.to_owned(),
        }),
    }
}

/// This host's token for `--collector url`: the one in `file` (`--token-file`) if given,
/// else `token` (`--token`); neither is an error naming what to give.
pub fn collector_token(
    url: &str,
    file: Option<&std::path::Path>,
    token: Option<&str>,
) -> Result<String, TokenError> {
    match (file, token) {
        (Some(file), _) => read_token_file(file),
        (None, Some(token)) => Ok(token.to_owned()),
        (None, None) => Err(TokenError::Missing {
            url: url.to_owned(),
        }),
    }
}

/// Who sends: the target's host and rack, and the database's instance id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSource<'a> {
    /// This host's name in the fleet.
    pub host: &'a str,
    /// The agent database's instance id ([`Store::instance_id`]).
    pub instance: &'a str,
    /// The rack, when known.
    pub rack: Option<&'a str>,
}

/// The sender thread; [`Sender::finish`] drains briefly and joins it.
pub struct Sender {
    stop: Arc<Control>,
    thread: JoinHandle<()>,
}

impl Sender {
    /// Stops after a last delivery pass of at most a few seconds, and waits for the thread.
    pub fn finish(self) {
        self.stop.stop();
        let _ = self.thread.join();
    }
}

/// The body of `POST /api/runs` for a queued run.
pub fn upload(from: &RunSource<'_>, run: &OutboxRun) -> serde_json::Result<RunUpload> {
    Ok(RunUpload {
        host: from.host.to_owned(),
        id: run.id,
        instance: from.instance.to_owned(),
        rack: from.rack.map(str::to_owned),
        trigger: run.trigger.clone(),
        started_unix_ms: run.started_unix_ms,
        report: serde_json::value::to_raw_value(&run.report)?,
    })
}

fn deliver(
    client: &ureq::Agent,
    target: &CollectorTarget,
    instance: &str,
    run: &OutboxRun,
) -> Delivery {
    let url = format!("{}/api/runs", target.url.trim_end_matches('/'));
    let from = RunSource {
        host: &target.host,
        instance,
        rack: target.rack.as_deref(),
    };
    let payload = match upload(&from, run).and_then(|u| serde_json::to_vec(&u)) {
        Ok(p) => p,
        Err(e) => return Delivery::Refused(format!("cannot encode run {}: {e}", run.id)),
    };
    post(client, &url, &target.token, &payload)
}

/// Starts the sender on its own connection to `database`.
pub fn start(
    target: CollectorTarget,
    database: PathBuf,
    metrics: Arc<Mutex<Metrics>>,
    log: fn(&str),
) -> Result<Sender, StoreError> {
    let store = Store::open(&database)?;
    let instance = store.instance_id()?;
    let stop = Arc::new(Control::default());
    let thread_stop = stop.clone();
    let thread = std::thread::Builder::new()
        .name("hostping-outbox".into())
        .spawn(move || run(target, &instance, store, metrics, &thread_stop, log))
        .expect("spawn the outbox thread");
    Ok(Sender { stop, thread })
}

fn run(
    target: CollectorTarget,
    instance: &str,
    mut store: Store,
    metrics: Arc<Mutex<Metrics>>,
    stop: &Control,
    log: fn(&str),
) {
    let client = fleet_api::post::client(target.tls.clone());
    let mut backoff = FIRST_BACKOFF;
    let mut failing = false;
    let mut drain_until: Option<Instant> = None;
    loop {
        if drain_until.is_none() && stop.is_stopped() {
            drain_until = Some(Instant::now() + DRAIN);
        }
        if drain_until.is_some_and(|t| Instant::now() >= t) {
            return;
        }
        let pending = match store.outbox_pending(BATCH) {
            Ok(p) => p,
            Err(e) => {
                log(&format!("outbox: {e}"));
                Vec::new()
            }
        };
        let (mut sent, mut dropped) = (0, 0);
        let mut retry = None;
        for run in &pending {
            match deliver(&client, &target, instance, run) {
                Delivery::Delivered => {
                    sent += 1;
                    if let Err(e) = store.outbox_delivered(run.id) {
                        log(&format!("outbox: {e}"));
                    }
                }
                Delivery::Refused(why) => {
                    dropped += 1;
                    log(&format!("outbox: run {} dropped: {why}", run.id));
                    if let Err(e) = store.outbox_delivered(run.id) {
                        log(&format!("outbox: {e}"));
                    }
                }
                Delivery::Retry(why) => {
                    let _ = store.outbox_failed(run.id, &why);
                    retry = Some(why);
                    break;
                }
            }
            if drain_until.is_some_and(|t| Instant::now() >= t) {
                break;
            }
        }
        let queued = store.outbox_stats().map_or(0, |s| s.queued);
        {
            let mut m = metrics.lock().expect("metrics");
            m.observe_outbox(queued, sent);
            m.observe_outbox_dropped(dropped);
        }
        match retry {
            Some(why) => {
                if drain_until.is_some() {
                    // Stopping: what is left is sent after the next start.
                    return;
                }
                if !failing {
                    log(&format!(
                        "outbox: collector unreachable, {queued} runs kept: {why}"
                    ));
                    failing = true;
                }
                stop.sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            None => {
                if failing && sent > 0 {
                    log(&format!(
                        "outbox: collector reachable again, {sent} runs sent"
                    ));
                }
                failing = false;
                backoff = FIRST_BACKOFF;
                if pending.is_empty() {
                    if drain_until.is_some() {
                        return;
                    }
                    stop.sleep(POLL);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_collector::answering;

    #[test]
    fn the_body_is_the_design_envelope() {
        let run = OutboxRun {
            id: 7,
            started_unix_ms: 1_700_000_000_000,
            trigger: "pfc".into(),
            report: serde_json::json!({"host": "dgx-a100"}),
            attempts: 0,
        };
        let from = RunSource {
            host: "node-1",
            instance: "0123456789abcdef0123456789abcdef",
            rack: Some("r12"),
        };
        let body =
            |from: &RunSource<'_>| serde_json::to_value(upload(from, &run).unwrap()).unwrap();
        assert_eq!(
            body(&from),
            serde_json::json!({"host": "node-1",
                               "instance": "0123456789abcdef0123456789abcdef",
                               "rack": "r12", "id": 7, "trigger": "pfc",
                               "started_unix_ms": 1_700_000_000_000i64,
                               "report": {"host": "dgx-a100"}})
        );
        let unracked = RunSource { rack: None, ..from };
        assert_eq!(body(&unracked)["rack"], serde_json::Value::Null);
    }

    fn deliver_to(addr: std::net::SocketAddr) -> Delivery {
        let client: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .into();
        let target = CollectorTarget {
            url: format!("http://{addr}"),
            token: "t".into(),
            host: "node-1".into(),
            tls: ureq::tls::TlsConfig::default(),
            rack: None,
        };
        let run = OutboxRun {
            id: 7,
            started_unix_ms: 0,
            trigger: "idle".into(),
            report: serde_json::json!({"host": "dgx-a100"}),
            attempts: 0,
        };
        deliver(&client, &target, "i", &run)
    }

    #[test]
    fn a_run_refused_for_what_it_is_is_dropped_with_the_collectors_words() {
        for status in [
            "400 Bad Request",
            "413 Payload Too Large",
            "422 Unprocessable Entity",
        ] {
            let addr = answering(status, r#"{"error": "run 7 of host node-1 refused: 0x00"}"#);
            let code = &status[..3];
            assert_eq!(
                deliver_to(addr),
                Delivery::Refused(format!(
                    "the collector refused it ({code} from http://{addr}/api/runs): \
                     run 7 of host node-1 refused: 0x00"
                ))
            );
        }
    }

    #[test]
    fn a_run_the_collector_could_not_take_now_is_kept() {
        // 5xx: the collector or its database, for now; 401/403: a token being fixed.
        for status in [
            "401 Unauthorized",
            "403 Forbidden",
            "500 Internal Server Error",
            "503 Service Unavailable",
        ] {
            let addr = answering(status, r#"{"error": "the database is unavailable"}"#);
            let code = &status[..3];
            assert_eq!(
                deliver_to(addr),
                Delivery::Retry(format!(
                    "http://{addr}/api/runs: {code} the database is unavailable"
                ))
            );
        }
    }

    #[test]
    fn an_unreachable_collector_is_retried_not_dropped() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let client: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .into();
        let target = CollectorTarget {
            url: format!("http://{addr}"),
            token: "t".into(),
            host: "h".into(),
            tls: ureq::tls::TlsConfig::default(),
            rack: None,
        };
        let run = OutboxRun {
            id: 1,
            started_unix_ms: 0,
            trigger: "idle".into(),
            report: serde_json::json!({}),
            attempts: 0,
        };
        assert!(matches!(
            deliver(&client, &target, "i", &run),
            Delivery::Retry(_)
        ));
    }

    #[test]
    fn a_collector_url_needs_http_or_https_and_a_host() {
        for good in [
            "http://collector:9470",
            "https://c.example.org",
            "http://10.0.0.1:9470/",
        ] {
            assert_eq!(collector_url(good).unwrap(), good);
        }
        for (bad, said) in [
            ("notaurl", "has no scheme"),
            ("ftp://collector:21", "scheme `ftp`"),
            ("http://", "is not a URL"),
            ("collector:9470", "has no scheme"),
            ("http://c:9470/?x=1", "query"),
            ("", "is not a URL"),
        ] {
            let e = collector_url(bad).unwrap_err().to_string();
            assert!(
                e.contains(said) && e.contains(&format!("`{bad}`")),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn a_token_file_holds_the_token_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret-token\n").unwrap();
        assert_eq!(read_token_file(&file).unwrap(), "s3cret-token");
        for (text, said) in [
            ("\n \n", "is empty"),
            ("host-1 s3cret\n", "alone"),
            ("a\nb\n", "alone"),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = read_token_file(&file).unwrap_err().to_string();
            assert!(e.contains(said) && !e.contains("s3cret"), "{text:?}: {e}");
        }
        let e = read_token_file(&dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
