//! One post of a JSON body to the collector with a bearer token, and what became of it: the
//! rule agents (runs, `POST /api/runs`) and samplers (sweeps, `POST /api/fabric/sweeps`)
//! share. Stored (2xx) is delivered; a 400, 413 or 422 is refused for good (the same body
//! would be refused again and would hold back everything queued behind it); anything else (a
//! network error, a timeout, a 5xx, a 401/403 while tokens are being rolled out) is tried
//! again later.

use std::time::Duration;

/// The first wait after a failed post, doubled on each failure up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between attempts while the collector is unreachable.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Connect and whole-request limits of one post: a collector that hangs is a failed post,
/// tried again, never a sender stuck for good.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The HTTP client a sender posts with: statuses as answers (not errors), the timeouts
/// above, and `tls` for an https:// collector.
pub fn client(tls: ureq::tls::TlsConfig) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_global(Some(REQUEST_TIMEOUT))
        .tls_config(tls)
        .build()
        .into()
}

/// What one post came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Stored (now or before).
    Delivered,
    /// Refused for good (400, 413, 422), with the collector's words.
    Refused(String),
    /// Not stored, try again (network, 5xx, 401/403), with why.
    Retry(String),
}

/// Posts `body` to `url` with `token`.
pub fn post(client: &ureq::Agent, url: &str, token: &str, body: &[u8]) -> Delivery {
    post_reading(client, url, token, body).0
}

/// The most of a 2xx answer [`post_reading`] reads.
pub const ANSWER_LIMIT: u64 = 1 << 16;

/// As [`post`], with the text of a 2xx answer (up to [`ANSWER_LIMIT`] bytes; empty when
/// it could not be read): what the collector asks of a sampler rides on it.
pub fn post_reading(
    client: &ureq::Agent,
    url: &str,
    token: &str,
    body: &[u8],
) -> (Delivery, String) {
    let response = client
        .post(url)
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(body);
    let delivery = match response {
        Err(e) => Delivery::Retry(format!("{url}: {e}")),
        Ok(mut r) => {
            let status = r.status().as_u16();
            if r.status().is_success() {
                let text = r
                    .body_mut()
                    .with_config()
                    .limit(ANSWER_LIMIT)
                    .read_to_string()
                    .unwrap_or_default();
                return (Delivery::Delivered, text);
            }
            let text = r
                .body_mut()
                .with_config()
                .limit(4096)
                .read_to_string()
                .unwrap_or_default();
            let message = error_words(&text);
            match status {
                400 | 413 | 422 => Delivery::Refused(format!(
                    "the collector refused it ({status} from {url}): {message}"
                )),
                _ => Delivery::Retry(format!("{url}: {status} {message}")),
            }
        }
    };
    (delivery, String::new())
}

/// The words of an error answer (the collector's or an agent's): the `error` of its JSON
/// (DESIGN 4.5), or the text as it came (a proxy's page, say).
pub fn error_words(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| text.trim().to_owned())
}

/// Why [`ask`] got no answer; each names the URL.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The body could not be written as JSON.
    #[error("{url}: writing the request: {source}")]
    Body {
        /// The URL asked.
        url: String,
        /// Why.
        source: serde_json::Error,
    },
    /// The request could not be sent, or no answer came in time.
    #[error("{url}: {source}")]
    Send {
        /// The URL asked.
        url: String,
        /// Why.
        source: ureq::Error,
    },
    /// The answer's body could not be read (cut short, or over the limit).
    #[error("{url}: reading the answer: {source}")]
    Read {
        /// The URL asked.
        url: String,
        /// Why.
        source: ureq::Error,
    },
}

/// Posts the JSON `body` to `url` with `token` and waits at most `wait` for the whole
/// answer, read up to `limit` bytes: its status and text, whatever the status (a request
/// that is answered, unlike [`post`]'s deliveries, is not retried). The error names `url`.
/// What the mesh's requests share: the CLI asking the collector, the collector asking an
/// agent, an agent asking its peer.
pub fn ask(
    client: &ureq::Agent,
    url: &str,
    token: &str,
    body: &impl serde::Serialize,
    wait: Duration,
    limit: u64,
) -> Result<(u16, String), AskError> {
    let mut answer = client
        .post(url)
        .config()
        .timeout_global(Some(wait))
        .build()
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(serde_json::to_vec(body).map_err(|source| AskError::Body {
            url: url.to_owned(),
            source,
        })?)
        .map_err(|source| AskError::Send {
            url: url.to_owned(),
            source,
        })?;
    let status = answer.status().as_u16();
    let text = answer
        .body_mut()
        .with_config()
        .limit(limit)
        .read_to_string()
        .map_err(|source| AskError::Read {
            url: url.to_owned(),
            source,
        })?;
    Ok((status, text))
}
