/*!
A simulated cluster and hostping's RNIC-to-RNIC mesh on it (DESIGN 4.6, issue 27).

A cluster is hosts, each the existing virtual host of its model (`vhost`), whose RNICs are
cabled to a fabric that the existing packet simulator runs (`fabric`). A probe between two
hosts crosses host A's own path (RNIC to the endpoint its data lives in), the network, and
host B's; the mesh measures all three and says which part of a slow pair is slow.

- `spec`: the cluster (the built-in `pod-32`, a rail-optimised tree for any hosts) and its
  component ids (`leaf2/9`, `node007/rnic2`).
- `file`: the cluster TOML file.
- `fault`: `--inject` on a cluster: a host's fault of DESIGN 4.2 or a fabric fault, with
  the ground truth a verdict is scored against.
- `pairs`: which pairs to probe so that every cable is crossed and a single bad one is
  identifiable.
- `network`: a pair's network part from the packet simulator, faults applied.
- `mesh`: the run: each host's own check, the pairs' network parts, the split (judged by
  `analyze::pair`), the switch ports' counters.
- `report`: the JSON of DESIGN 4.6.
- `job`: a job's evidence for the verdict of DESIGN 4.7 (`analyze::job` judges it).
- `follow_up`: the probes that split a group of cables a verdict cannot tell apart.
- `labelled`: `bench job`'s labelled jobs and their scores.
- `whatif`: a job's traffic replayed on the fabric with its placement and link states, and
  what explains its time (issue 28's what-if).

Every number here is simulated and says so (`MeshReport::simulated`). docs/cluster.md gives
the model and its parameters.
*/
#![deny(missing_docs)]

pub mod fault;
pub mod file;
pub mod follow_up;
pub mod job;
pub mod labelled;
pub mod mesh;
pub mod network;
pub mod pairs;
pub mod report;
pub mod spec;
pub mod whatif;

pub use fault::{ClusterFaults, Expected, FabricFault};
pub use mesh::MeshSettings;
pub use report::{Endpoint, MeshReport, PairReport, PartStatus};
pub use spec::{Cable, Cluster, ClusterHost, RnicPort};

/// Why a cluster, its faults or its mesh could not be set up. One line each, naming the input.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A host model could not be loaded.
    #[error("{0}")]
    Host(String),
    /// The fabric cannot be built or routed.
    #[error("{0}")]
    Fabric(String),
    /// The faults leave no fabric to simulate.
    #[error(transparent)]
    Faulted(#[from] network::FaultedFabricError),
    /// A cluster file is unreadable or malformed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What is wrong, with the line where there is one.
        reason: String,
    },
    /// Neither a built-in cluster nor a readable file.
    #[error("cannot read cluster `{name}`: {reason} (built-in clusters: {builtins})")]
    Unknown {
        /// What was given.
        name: String,
        /// The I/O error.
        reason: String,
        /// The built-in names.
        builtins: String,
    },
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
    /// Fewer than two hosts to probe between.
    #[error("--nodes: a mesh needs at least two hosts, not {0}")]
    TooFewHosts(usize),
}
