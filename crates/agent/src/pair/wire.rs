//! `hostping pair serve|probe`'s socket: the two offers carried over a TCP connection, one
//! JSON line each way.
//!
//! 1. The initiator connects and sends its [`PairOffer`] as one JSON line, with its host
//!    name.
//! 2. The responder reads that line, connects its QP and sends one [`Answer`] line: its
//!    offer with its host (and why its own part cannot be measured, if it cannot), or why
//!    it refuses. It then serves the probe on the device (the socket is not used again; the
//!    host parts travel in the probe's own records, `rdma::engine::pair`, "Host parts") and
//!    takes the next connection.
//!
//! Every read and write on the socket has a deadline (the local side's timeout; the wait
//! for the answer also covers the peer opening its device, [`ANSWER_WAIT`]), and a line is at most
//! [`MAX_LINE`] bytes. The messages name the peer as `hostping pair probe --peer` gives it,
//! and so do the reports that carry them.

use super::{serve_offer, Answer, Local, PeerFailure, ServeError, ANSWER_WAIT};
use rdma::engine::pair::PairOffer;
use serde::Serialize;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Longest JSON line either side accepts (an offer is about 500 bytes).
pub const MAX_LINE: u64 = 64 * 1024;

/// Why a line did not come, or a connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The peer closed the connection first.
    #[error("the connection closed before {what}")]
    Closed {
        /// What was awaited.
        what: &'static str,
    },
    /// A line longer than [`MAX_LINE`], or cut short.
    #[error("{what} is not one line of at most {MAX_LINE} bytes")]
    NotALine {
        /// What was awaited.
        what: &'static str,
    },
    /// Nothing came in time.
    #[error("timed out after {} ms waiting for {what}", .wait.as_millis())]
    TimedOut {
        /// What was awaited.
        what: &'static str,
        /// How long.
        wait: Duration,
    },
    /// Reading failed.
    #[error("reading {what}: {source}")]
    Read {
        /// What was awaited.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The peer's name did not resolve.
    #[error("--peer {peer}: not a reachable HOST:PORT: {source}")]
    Resolve {
        /// The peer as given.
        peer: String,
        /// Why.
        source: std::io::Error,
    },
    /// No address of the peer took the connection.
    #[error("--peer {peer}: cannot connect to {addr}: {source} (is `hostping pair serve` running there?)")]
    Connect {
        /// The peer as given.
        peer: String,
        /// The last address tried.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The peer's name has no address.
    #[error("--peer {peer}: the name has no address")]
    NoAddress {
        /// The peer as given.
        peer: String,
    },
    /// A socket's deadline could not be set, or a line not written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The initiator's line is not an offer.
    #[error("the initiator's offer is not a pair offer: {0}")]
    NotAnOffer(#[source] serde_json::Error),
    /// The probe could not be served.
    #[error("{0}")]
    Serve(#[from] ServeError),
}

/// Writes `value` as one JSON line (the stream's write deadline applies).
fn send_line<T: Serialize>(mut stream: &TcpStream, value: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_string(value).map_err(std::io::Error::other)?;
    line.push('\n');
    stream.write_all(line.as_bytes())?;
    stream.flush()
}

/// Reads one line of at most [`MAX_LINE`] bytes, waiting at most `wait` (`what` names it in
/// the error).
fn read_line(stream: &TcpStream, wait: Duration, what: &'static str) -> Result<String, WireError> {
    stream.set_read_timeout(Some(wait))?;
    let mut line = String::new();
    let read = BufReader::new(stream.take(MAX_LINE)).read_line(&mut line);
    match read {
        Ok(0) => Err(WireError::Closed { what }),
        Ok(_) if !line.ends_with('\n') => Err(WireError::NotALine { what }),
        Ok(_) => Ok(line),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(WireError::TimedOut { what, wait })
        }
        Err(source) => Err(WireError::Read { what, source }),
    }
}

/// Connects to `peer` (HOST:PORT), within `timeout` per address.
fn connect(peer: &str, timeout: Duration) -> Result<TcpStream, WireError> {
    let addrs: Vec<SocketAddr> = peer
        .to_socket_addrs()
        .map_err(|source| WireError::Resolve {
            peer: peer.to_string(),
            source,
        })?
        .collect();
    let mut last = None;
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(stream) => {
                stream.set_write_timeout(Some(timeout))?;
                stream.set_read_timeout(Some(timeout))?;
                return Ok(stream);
            }
            Err(e) => last = Some((*addr, e)),
        }
    }
    match last {
        Some((addr, source)) => Err(WireError::Connect {
            peer: peer.to_string(),
            addr,
            source,
        }),
        None => Err(WireError::NoAddress {
            peer: peer.to_string(),
        }),
    }
}

/// The initiator's side of the socket: sends `mine` to `peer` and reads its answer, each
/// within `timeout` (the answer within [`ANSWER_WAIT`]). What `initiate_probe` hands its
/// offer to.
pub fn exchange(peer: &str, timeout: Duration, mine: &PairOffer) -> Result<Answer, PeerFailure> {
    let stream = connect(peer, timeout).map_err(|e| PeerFailure::Unreachable(e.to_string()))?;
    send_line(&stream, mine)
        .map_err(|e| PeerFailure::Unreachable(format!("sending the offer to {peer}: {e}")))?;
    let line = read_line(&stream, ANSWER_WAIT, "the responder's answer")
        .map_err(|e| PeerFailure::Unreachable(format!("{peer}: {e}")))?;
    serde_json::from_str(&line)
        .map_err(|e| PeerFailure::Other(format!("{peer}: the answer is not a pair answer: {e}")))
}

/// The responder's side: serves every initiator that connects to `listener`, one after
/// the other, for good. Each outcome goes to `log` with the initiator's address (`None`:
/// a connection could not be accepted).
pub fn serve(
    local: &mut Local,
    listener: &TcpListener,
    mut log: impl FnMut(Option<&str>, Result<String, WireError>),
) {
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                log(None, Err(WireError::Io(e)));
                continue;
            }
        };
        let from = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        log(Some(&from), serve_one(local, &stream));
    }
}

/// One initiator: its offer, this side's part, the answer, the probe served.
fn serve_one(local: &mut Local, stream: &TcpStream) -> Result<String, WireError> {
    let timeout = local.timeout();
    stream.set_write_timeout(Some(timeout))?;
    let line = read_line(stream, timeout, "the initiator's offer")?;
    let offer: PairOffer = serde_json::from_str(&line).map_err(WireError::NotAnOffer)?;
    Ok(serve_offer(local, &offer, |answer| {
        send_line(stream, answer)
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_names_the_peer() {
        // A port that was free a moment ago: nothing listens there now.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let peer = format!("127.0.0.1:{port}");
        let e = connect(&peer, Duration::from_secs(2)).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("--peer {peer}: cannot connect")),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
        let e = connect("no-such-host.invalid:9471", Duration::from_secs(2)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--peer no-such-host.invalid:9471:"),
            "{e}"
        );
    }

    #[test]
    fn a_peer_that_closes_or_stalls_is_an_error_that_says_so() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            // First connection: closed at once; second: held open, silent.
            drop(listener.accept().unwrap());
            let (held, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(600));
            drop(held);
        });
        let closed = connect(&addr, Duration::from_secs(2)).unwrap();
        let e = read_line(&closed, Duration::from_secs(2), "the responder's answer").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the connection closed before the responder's answer"
        );
        let silent = connect(&addr, Duration::from_secs(2)).unwrap();
        let e = read_line(
            &silent,
            Duration::from_millis(200),
            "the responder's answer",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "timed out after 200 ms waiting for the responder's answer"
        );
        server.join().unwrap();
    }
}
