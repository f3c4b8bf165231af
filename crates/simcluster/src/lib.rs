/*!
A simulated cluster and hostping's RNIC-to-RNIC mesh on it (DESIGN 4.6, issue 27).

A cluster is hosts, each the existing virtual host of its model (`vhost`), whose RNICs are
cabled to a fabric that the existing packet simulator runs (`fabric`). A probe between two
hosts crosses host A's own path (RNIC to the endpoint its data lives in), the network, and
host B's; the mesh measures all three and says which part of a slow pair is slow.

- `collectives`: a job's collectives step by step on the packet simulator, faults starting
  mid-run, written as NCCL Inspector records (issue 39 item 5).
- `host_paths`: what the job's hosts' faults of DESIGN 4.2 leave of its ranks' GPU<->RNIC
  paths and of its hosts' own rings over PCIe: how much slower its collectives run.
- `fault`: `--inject` on a cluster: a host's fault of DESIGN 4.2 or a fabric fault, with
  the ground truth a verdict is scored against.
- `network`: a pair's network part from the packet simulator, faults applied.
- `mesh`: the run: each host's own check, the pairs' network parts, the split (judged by
  `analyze::pair`), the switch ports' counters.
- `report`: the JSON of DESIGN 4.6.
- `job`: a job's verdict of DESIGN 4.7 on the simulated cluster: the `verdict` crate's
  pipeline over what the mesh measures (`job::Simulated`).
- `labelled`: `bench job`'s labelled jobs and their scores.

The cluster's description (`spec`: the built-in `pod-32`, rail-optimised trees, the ids
`leaf2/9` and `node007/rnic2`; `file`: the cluster TOML file), the pair choice (`pairs`), the follow-ups' planning
(`follow_up`) and the what-if (`whatif`) are the `verdict` crate's, since a real job is
planned with them too; they are re-exported here under their old paths.

Every number here is simulated and says so (`MeshReport::simulated`). docs/cluster.md gives
the model and its parameters.
*/
#![deny(missing_docs)]

pub mod collectives;
pub mod fault;
pub mod host_paths;
pub mod job;
pub mod labelled;
pub mod mesh;
pub mod network;
pub mod report;

// The cluster's description, the pair choice, the follow-ups' planning and the what-if are
// the verdict's (a real job is planned with them too); their paths stay valid here for the
// simulated cluster's callers.
pub use verdict::{file, follow_up, pairs, spec, whatif};

pub use fault::{ClusterFaults, Expected, FabricFault, Lateness, StragglerFault};
pub use mesh::MeshSettings;
pub use report::{Endpoint, MeshReport, PairReport, PartStatus};
pub use spec::{Cable, Cluster, ClusterHost, RnicPort};

/// Why a cluster, its faults or its mesh could not be set up. One line each, naming the input.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The cluster could not be described, or a what-if not planned.
    #[error(transparent)]
    Plan(#[from] verdict::PlanError),
    /// The faults leave no fabric to simulate.
    #[error(transparent)]
    Faulted(#[from] verdict::links::FaultedFabricError),
    /// An `--inject` text is malformed or names what the cluster lacks.
    #[error("--inject `{text}`: {reason}")]
    Fault {
        /// The text as given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// `--nodes` names hosts the cluster lacks.
    #[error("--nodes: cluster `{cluster}` has no host {hosts}")]
    UnknownHosts {
        /// The cluster.
        cluster: String,
        /// The names it lacks.
        hosts: String,
    },
    /// A simulated job would write more records than it may.
    #[error("the simulated job would write {records} NCCL Inspector records, above the cap of {cap}: fewer --steps or --nodes")]
    TooManyRecords {
        /// Records it would write.
        records: u64,
        /// The cap.
        cap: u64,
    },
    /// Fewer than two hosts to probe between.
    #[error("--nodes: a mesh needs at least two hosts, not {0}")]
    TooFewHosts(usize),
}
