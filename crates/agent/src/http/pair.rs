//! Pair probes between agents (DESIGN 4.6, a real `hostping mesh`), for holders of a probe
//! token, the same rules as `POST /api/probe`:
//!
//! - `POST /api/pair/probe` (`fleet_api::pair::ProbeRequest`) makes this agent the initiator:
//!   it measures its own part, posts its offer to the peer agent's `/api/pair/accept`
//!   (forwarding the caller's token), runs the probe and answers the pair's report
//!   (`fleet_api::pair::PairReport`, as `hostping pair probe --format json` prints it).
//! - `POST /api/pair/accept {"rnic", "offer"}` makes it the responder: on a thread of its
//!   own it measures its part, connects and answers its offer (`agent::pair::Answer`), then
//!   serves the probe until done or `pair::SERVE_LIMIT`; a vanished initiator ends it at the
//!   probe's per-wait deadline.
//!
//! One pair at a time per agent, as initiator or responder: a second request is 409 while
//! one runs. A simulated host has no device to probe from: 503. An RNIC id the agent does
//! not have: 404, naming the ones it has.

use super::{error, Shared};
use crate::pair::{self, Answer, Local, LocalOptions, PairReport, PeerFailure};
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use fleet_api::pair::ProbeRequest;
use rdma::engine::pair::{PairOffer, PairSpec};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What pair probes need of the agent: which devices it owns, and the one-pair-at-a-time
/// flag.
#[derive(Clone, Default)]
pub struct PairAccess {
    /// `--devices`: the devices this agent probes from, `rnic0`.. in this order; `None`:
    /// every RNIC of the host, as `hostping check` names them.
    pub devices: Option<Vec<String>>,
    /// Whether the agent watches a real host (a simulated one has no device to probe from).
    pub real: bool,
    busy: Arc<AtomicBool>,
}

impl PairAccess {
    /// Pair probes on a real host (`real`), from `devices` or every RNIC.
    pub fn new(devices: Option<Vec<String>>, real: bool) -> PairAccess {
        PairAccess {
            devices,
            real,
            busy: Arc::default(),
        }
    }

    /// The flag, taken; `None` while a pair runs.
    fn take(&self) -> Option<Busy> {
        (!self.busy.swap(true, Ordering::AcqRel)).then(|| Busy(self.busy.clone()))
    }
}

/// A pair in progress: the flag is released when this is dropped, on whatever thread
/// finishes the pair.
struct Busy(Arc<AtomicBool>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The local side's settings for the agent (`hostping pair`'s defaults).
const LOCAL: LocalOptions = LocalOptions {
    loopback_iterations: 200,
    timeout_ms: 2000,
};

/// The probe `request` asks for, `hostping pair probe`'s defaults where it says nothing.
fn spec(request: &ProbeRequest) -> PairSpec {
    PairSpec {
        latency_iterations: request.iterations.unwrap_or(1000),
        latency_bytes: request.size.unwrap_or(2),
        bw_iterations: request.bw_iterations.unwrap_or(1000),
        bw_bytes: request.bw_size.unwrap_or(65536),
        depth: request.depth.unwrap_or(128),
        timeout_ms: request.timeout_ms.unwrap_or(LOCAL.timeout_ms),
        ..PairSpec::default()
    }
}

/// `POST /api/pair/accept`'s body, as the initiating agent sends it. It stays here, not in
/// `fleet_api`: only agents exchange it, and its offer is `rdma`'s.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AcceptRequest {
    /// This agent's RNIC.
    rnic: String,
    /// The initiator's offer (with its host and part).
    offer: PairOffer,
}

/// A refusal: its status and words.
type Refusal = (StatusCode, String);

fn refused((code, why): Refusal) -> Response {
    error(code, why)
}

/// The body, or a 400 that says what is wrong with it.
fn body<T>(what: &str, parsed: Result<Json<T>, JsonRejection>) -> Result<T, Refusal> {
    parsed.map(|Json(t)| t).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("{what}: {}", e.body_text()),
        )
    })
}

/// The presented probe token and the pair flag, taken: what both endpoints check first
/// (the token, a real host, no pair running), in this order.
fn admit(s: &Shared, headers: &HeaderMap) -> Result<(String, Busy), Refusal> {
    let (_, token) = super::probe_holder(s, headers)?;
    if !s.pair.real {
        return Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "this agent watches a simulated host: pair probes need a real RNIC".into(),
        ));
    }
    let busy = s.pair.take().ok_or_else(|| {
        (
            StatusCode::CONFLICT,
            "this agent is in a pair probe already (one pair at a time); ask again when it ends"
                .into(),
        )
    })?;
    Ok((token, busy))
}

/// Opens this host's side for the agent's RNIC id `rnic`, named `name` in reports.
fn open_local(name: &str, devices: Option<&[String]>, rnic: &str) -> Result<Local, Refusal> {
    let unavailable = |why: String| (StatusCode::SERVICE_UNAVAILABLE, why);
    let host = pair::open_host().map_err(|e| unavailable(e.to_string()))?;
    let offered = pair::rnics(&host, devices);
    let Some((_, device)) = offered.iter().find(|(id, _)| id == rnic) else {
        let has: Vec<String> = offered.iter().map(|(i, d)| format!("{i} ({d})")).collect();
        let has = if has.is_empty() {
            "none".to_string()
        } else {
            has.join(", ")
        };
        return Err((
            StatusCode::NOT_FOUND,
            format!("no RNIC {rnic} on this agent (it has {has})"),
        ));
    };
    Local::open(host, device, name.to_string(), &LOCAL)
        .map_err(|why| unavailable(format!("{rnic} ({device}): {why}")))
}

/// `POST /api/pair/probe`.
pub(super) async fn probe(
    State(s): State<Shared>,
    headers: HeaderMap,
    request: Result<Json<ProbeRequest>, JsonRejection>,
) -> Response {
    let (token, busy) = match admit(&s, &headers) {
        Ok(admitted) => admitted,
        Err(refusal) => return refused(refusal),
    };
    let request = match body("the pair probe request", request).and_then(|r| {
        let peer = crate::sender::collector_url(&r.peer)
            .map_err(|why| (StatusCode::BAD_REQUEST, format!("peer: {why}")))?;
        pair::acceptable(&spec(&r)).map_err(|why| (StatusCode::BAD_REQUEST, why.to_string()))?;
        Ok(ProbeRequest { peer, ..r })
    }) {
        Ok(r) => r,
        Err(refusal) => return refused(refusal),
    };
    let name = s.name.clone();
    let devices = s.pair.devices.clone();
    let ran = tokio::task::spawn_blocking(move || {
        let _busy = busy;
        let mut local = open_local(&name, devices.as_deref(), &request.rnic)?;
        Ok::<PairReport, Refusal>(initiate(&mut local, &request, &token))
    })
    .await;
    match ran {
        Ok(Ok(report)) => Json(report).into_response(),
        Ok(Err(refusal)) => refused(refusal),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the pair probe failed: {e}"),
        ),
    }
}

/// Runs the probe as the initiator, the offers carried by the peer agent's API.
fn initiate(local: &mut Local, request: &ProbeRequest, token: &str) -> PairReport {
    let peer = request.peer.trim_end_matches('/');
    let url = format!("{peer}/api/pair/accept");
    let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
    let exchange = |mine: &PairOffer| -> Result<Answer, PeerFailure> {
        let body = AcceptRequest {
            rnic: request.peer_rnic.clone(),
            offer: mine.clone(),
        };
        let (status, text) =
            fleet_api::post::ask(&client, &url, token, &body, pair::ANSWER_WAIT, 1 << 20)
                .map_err(|e| PeerFailure::Unreachable(e.to_string()))?;
        if status == 200 {
            serde_json::from_str(&text).map_err(|e| {
                PeerFailure::Other(format!("{url}: the answer is not a pair answer: {e}"))
            })
        } else {
            Ok(Answer::refusal(format!(
                "{status} from {url}: {}",
                fleet_api::post::error_words(&text)
            )))
        }
    };
    pair::initiate_probe(
        local,
        &spec(request),
        peer,
        (Some(&request.rnic), Some(&request.peer_rnic)),
        exchange,
    )
    .report
}

/// `POST /api/pair/accept`.
pub(super) async fn accept(
    State(s): State<Shared>,
    headers: HeaderMap,
    request: Result<Json<AcceptRequest>, JsonRejection>,
) -> Response {
    let (_, busy) = match admit(&s, &headers) {
        Ok(admitted) => admitted,
        Err(refusal) => return refused(refusal),
    };
    let request = match body("the pair accept request", request) {
        Ok(r) => r,
        Err(refusal) => return refused(refusal),
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<Result<Answer, Refusal>>();
    let name = s.name.clone();
    let devices = s.pair.devices.clone();
    let from = request.offer.host.clone().unwrap_or_default();
    let spawned = std::thread::Builder::new()
        .name("hostping-pair".into())
        .spawn(move || {
            let _busy = busy;
            let mut local = match open_local(&name, devices.as_deref(), &request.rnic) {
                Ok(l) => l,
                Err(refusal) => {
                    let _ = tx.send(Err(refusal));
                    return;
                }
            };
            let deliver = |answer: &Answer| {
                tx.send(Ok(answer.clone()))
                    .map_err(|_| "the initiator's request was dropped".to_string())
            };
            match pair::serve_offer(&mut local, &request.offer, deliver) {
                Ok(done) => eprintln!("hostping agent: pair from {from}: {done}"),
                Err(e) => eprintln!("hostping agent: pair from {from}: {e}"),
            }
        });
    if let Err(e) = spawned {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot start the responder: {e}"),
        );
    }
    match tokio::time::timeout(pair::ANSWER_WAIT, rx).await {
        Ok(Ok(Ok(answer))) => Json(answer).into_response(),
        Ok(Ok(Err(refusal))) => refused(refusal),
        Ok(Err(_)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the responder ended without an answer".into(),
        ),
        Err(_) => error(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "the responder gave no answer within {} s",
                pair::ANSWER_WAIT.as_secs()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pair_at_a_time_and_the_flag_comes_back_when_the_pair_ends() {
        let access = PairAccess::new(None, true);
        // The router's state is cloned per request: every clone shares the one flag.
        let handler = access.clone();
        let running = access.take().expect("no pair runs yet");
        assert!(handler.take().is_none(), "a second pair while one runs");
        // Released on whatever thread ends the pair.
        std::thread::spawn(move || drop(running)).join().unwrap();
        assert!(handler.take().is_some());
    }
}
