//! An agent tells the collector where its API listens and which RNICs it probes from
//! (`PUT /api/hosts/{host}/agent`, with the host's token), so that the collector can ask it
//! for pair probes, and what its host's links allow a job's collectives; `GET /api/agents`
//! lists what was registered.

use model::job::ExpectedBusBandwidth;
use serde::{Deserialize, Serialize};

/// `PUT /api/hosts/{host}/agent`'s body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRegistration {
    /// Where the agent's API is reached (`http://HOST:PORT`).
    pub url: String,
    /// The RNIC ids a pair probe may name (`rnic0`..).
    pub rnics: Vec<String>,
    /// Their RDMA devices (`mlx5_0`), in the same order, or none (a simulated host).
    #[serde(default)]
    pub devices: Vec<String>,
    /// What the host's links allow a job's communicators' bus bandwidth to reach, GB/s,
    /// from its model (DESIGN 4.8's `expected` before NCCL's model brings it to a
    /// collective's size; `verdict::job::expected_busbw`): unknown sides null, both null
    /// from an agent that does not say (an older one).
    #[serde(default)]
    pub expected_busbw_gbs: ExpectedBusBandwidth,
}

/// One agent as registered: the answer to its registration, and an entry of
/// `GET /api/agents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// What its links allow a job's collectives, as it registered it.
    #[serde(default)]
    pub expected_busbw_gbs: ExpectedBusBandwidth,
}
