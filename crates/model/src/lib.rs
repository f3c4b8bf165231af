/*!
The vocabulary of hostping: host topology, paths, measurements, monitor snapshots,
baselines and diagnoses.

This crate owns the types every other crate exchanges, and the host-model file format. It
does no I/O, never reads a clock, and keeps no global state: parsing takes text, not paths,
and timestamps are passed in. Backends (`vhost`, and the real `rdma` backend) *produce*
these values; `analyze` and the stores *consume* them.

```
let host = model::builtin::load("dgx-a100").unwrap().unwrap();
let rnic0 = model::ComponentId::from("rnic0");
let affinitive: Vec<_> = host.affinitive_endpoints(&rnic0).map(|e| e.to_string()).collect();
assert_eq!(affinitive, ["mem0", "mem1", "gpu0", "gpu1"]);
```
*/
#![deny(missing_docs)]

pub mod action;
pub mod baseline;
pub mod builtin;
pub mod config;
pub mod counters;
pub mod error;
pub mod host_tree;
pub mod hostfile;
pub mod hostlist;
pub mod hwloc_xml;
pub mod ids;
pub mod inspector;
pub mod iommu;
pub mod job;
pub mod layer;
pub mod limits;
pub mod measure;
pub mod nccl_topo;
pub mod odp_bench;
pub mod odp_model;
pub mod pair;
pub mod report;
pub mod snapshot;
pub mod sockets;
pub mod switch_port;
pub mod thresholds;
pub mod time;
pub mod topology;

pub use baseline::{Baseline, BaselinePath};
pub use config::{
    AcsPort, AtsState, HostConfig, IommuConfig, IommuGroup, LinkTraining, TransportTimeout,
};
pub use counters::{CounterReport, SourceReport, SourceStatus};
pub use hostfile::ModelError;
pub use ids::{ComponentId, LinkId};
pub use iommu::IommuModel;
pub use measure::{
    LatencyStats, Mode, Op, PathMeasurement, PathOutcome, PathProbe, ProbeRun, Provenance,
    StreamResult,
};
pub use odp_model::OdpModel;
pub use report::{
    BaselineKind, Cause, Diagnosis, LinkBound, LinkReport, LinkStatus, NotJudged, NotJudgedReason,
    PathReport, PathStatus, Report, Setting,
};
pub use snapshot::{
    GpuActivity, HostSnapshot, IommuActivity, LinkUtilisation, MemoryBandwidth, OdpKind, OdpRegion,
    RnicActivity, TransportCounters,
};
pub use thresholds::Thresholds;
pub use topology::{
    Component, ComponentClass, ComponentKind, HostTopology, Link, LinkKind, Path, Rnic, Turnaround,
};
