//! DESIGN 4.6's pair object between hosts, as it travels (its one type is
//! [`model::pair::PairReport`], re-exported here for the wire's readers), and the request
//! that asks an agent for one.

use serde::{Deserialize, Serialize};

/// One side of the pair.
pub use model::pair::PairEnd as End;
pub use model::pair::{
    MeshNotes, NetworkFrom, PairReport, PairStatus, RouteSource, TimestampSource,
};

/// `POST /api/pair/probe`'s body: the agent asked is the initiator. Unset fields take
/// `hostping pair probe`'s defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeRequest {
    /// The initiating agent's RNIC (`rnic0`).
    pub rnic: String,
    /// The peer agent's base URL.
    pub peer: String,
    /// The peer's RNIC.
    pub peer_rnic: String,
    /// Latency probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// Bytes of a ping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Messages of the bandwidth phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw_iterations: Option<u64>,
    /// Bytes of a bandwidth message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw_size: Option<u32>,
    /// Messages outstanding in the bandwidth phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Longest wait for one completion, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}
