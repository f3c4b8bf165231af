//! An agent tells the collector where its API listens and which RNICs it probes from
//! (`PUT /api/hosts/{host}/agent`, with the host's token), so that the collector can ask it
//! for pair probes; `GET /api/agents` lists what was registered.

use serde::{Deserialize, Serialize};

/// `PUT /api/hosts/{host}/agent`'s body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRegistration {
    /// Where the agent's API is reached (`http://HOST:PORT`).
    pub url: String,
    /// The RNIC ids a pair probe may name (`rnic0`..).
    pub rnics: Vec<String>,
    /// Their RDMA devices (`mlx5_0`), in the same order, or none (a simulated host).
    #[serde(default)]
    pub devices: Vec<String>,
}

/// One agent as registered: the answer to its registration, and an entry of
/// `GET /api/agents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentEntry {
    /// The host's fleet name.
    pub host: String,
    /// Its agent's API.
    pub agent_url: String,
    /// Its RNIC ids (`rnic0`..).
    pub rnics: Vec<String>,
    /// Their RDMA devices' names, in the same order; empty for a host without devices.
    pub devices: Vec<String>,
    /// When it registered, ms since the Unix epoch.
    pub registered_unix_ms: i64,
}
