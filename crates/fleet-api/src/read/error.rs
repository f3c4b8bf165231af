//! A refused read: its status and `{"error": "..."}` body, mapped here once for the agent's
//! and the collector's endpoints alike.

use super::query::QueryError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::error::Error;

/// The body of every refusal of the fleet API: what went wrong, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The message.
    pub error: String,
}

/// Why a read was refused. A store's own failures are kept as their source (the message is
/// theirs); the variant decides the status.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A query string outside the contract: 400.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// No such host: 404. `only` is the one host a store of one host (an agent) holds.
    #[error(
        "no host {host}{}",
        .only.as_ref().map_or(String::new(), |o| format!(": this agent watches {o}"))
    )]
    NoHost {
        /// The host asked for.
        host: String,
        /// The host the store holds, when it holds one only.
        only: Option<String>,
    },
    /// No host of this kind: 404.
    #[error("no kind {0}")]
    NoKind(String),
    /// The store cannot be reached now (the database is down, the file cannot be opened):
    /// 503, try again later.
    #[error(transparent)]
    Unavailable(Box<dyn Error + Send + Sync>),
    /// The store answered, but what it holds cannot be served (a stored report that does
    /// not read back, a failed query): 500.
    #[error(transparent)]
    Internal(Box<dyn Error + Send + Sync>),
}

impl ReadError {
    /// The HTTP status it is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            ReadError::Query(_) => StatusCode::BAD_REQUEST,
            ReadError::NoHost { .. } | ReadError::NoKind(_) => StatusCode::NOT_FOUND,
            ReadError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ReadError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// An unreachable store's error.
    pub fn unavailable(e: impl Error + Send + Sync + 'static) -> ReadError {
        ReadError::Unavailable(Box::new(e))
    }

    /// A failing store's error.
    pub fn internal(e: impl Error + Send + Sync + 'static) -> ReadError {
        ReadError::Internal(Box::new(e))
    }
}

impl IntoResponse for ReadError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.to_string(),
        };
        (self.status(), Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("database: connection refused")]
    struct Down;

    #[test]
    fn each_refusal_has_its_status_and_words() {
        let cases = [
            (
                ReadError::from(QueryError::NoPath),
                400,
                "rnic and endpoint are required: ?rnic=R&endpoint=E",
            ),
            (
                ReadError::NoHost {
                    host: "node-9".into(),
                    only: None,
                },
                404,
                "no host node-9",
            ),
            (
                ReadError::NoHost {
                    host: "node-9".into(),
                    only: Some("node-a".into()),
                },
                404,
                "no host node-9: this agent watches node-a",
            ),
            (ReadError::NoKind("k".into()), 404, "no kind k"),
            (
                ReadError::unavailable(Down),
                503,
                "database: connection refused",
            ),
            (
                ReadError::internal(Down),
                500,
                "database: connection refused",
            ),
        ];
        for (error, status, message) in cases {
            assert_eq!(error.status().as_u16(), status, "{error}");
            assert_eq!(error.to_string(), message);
        }
        // The source is kept, not flattened.
        let e = ReadError::unavailable(Down);
        assert!(matches!(e, ReadError::Unavailable(ref s) if s.downcast_ref::<Down>().is_some()));
    }
}
