/*!
The job verdict's pipeline (DESIGN 4.7, issue 37): what to measure next and in what order,
for a simulated job and a real one alike.

A verdict is one sequence ([`pipeline::run`]): gather the window's evidence, judge it
(`analyze::job`), run the pairs that separate a culprit's candidate cables and judge again,
read switch ports now and judge again, check the suspected hosts again, then replay the job's traffic (the what-if) and judge
a last time. What can be measured is a trait ([`pipeline::Measure`]): the simulated cluster
(`simcluster`: virtual hosts on the packet simulator) and the fleet collector (`collector`:
agents, samplers and PostgreSQL) implement it, so the two cannot drift apart.

- `spec`: the cluster a job runs on: its hosts, fabric, RNIC ports, cables and their labels
  (`leaf2/9`, `node007/rnic2`); a real fabric is placed into one too. `file`: the cluster
  TOML file.
- `job`: a job on a cluster: the paths its data crosses on each host, the cables its routes
  cross, a pair's cables.
- `pairs`: which RNIC pairs to probe so that every cable is crossed and a single bad one is
  identifiable.
- `follow_up`: the pairs that split a group of cables a verdict cannot tell apart, and the
  switch ports to read now.
- `recheck`: the suspected hosts checked again now, which alone confirm or clear a host's
  culprit before anything acts on it.
- `links`: the fabric's link states, and the fabric as they leave it.
- `whatif`: a job's traffic replayed on the fabric with its placement and link states, and
  what explains its time.
- `pipeline`: the sequence, over [`pipeline::Measure`].
- `actions`: confirm, then act (DESIGN 4.9): the policy file and what it does with a
  verdict's confirmed culprits, within its limits (no I/O: the collector acts).

This crate plans and sequences; it must not judge (that is `analyze`'s), measure a host or a
pair itself, or touch a database or the network. It depends on `model`, `analyze` and
`fabric` only: never on `vhost`, `check` or `rdma`, so the fleet server links no simulated
host. Every time the what-if replays is simulated and says so.
*/
#![deny(missing_docs)]

pub mod actions;
pub mod background;
pub mod file;
pub mod follow_up;
pub mod job;
pub mod links;
pub mod pairs;
pub mod pipeline;
pub mod recheck;
pub mod spec;
pub mod whatif;

pub use job::Endpoint;
pub use spec::{Cable, Cluster, ClusterHost, RnicPort};

/// Why a cluster could not be described or a what-if not planned. One line each, naming the
/// input.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A host model could not be loaded.
    #[error("{0}")]
    Host(String),
    /// The fabric cannot be built, routed or replayed on.
    #[error("{0}")]
    Fabric(String),
    /// The link states leave no fabric to simulate.
    #[error(transparent)]
    Faulted(#[from] links::FaultedFabricError),
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
    /// Fewer than two hosts to replay between.
    #[error("--nodes: a mesh needs at least two hosts, not {0}")]
    TooFewHosts(usize),
}
