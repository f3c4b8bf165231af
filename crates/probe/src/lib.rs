/*!
What a loopback probe is, independent of what runs it.

This crate owns the [`ProbeEngine`] and [`Monitor`] traits that the virtual host (`vhost`)
and the real verbs backend implement, the probe plans of Hostping 4.2 (full mesh when the
host is idle, affinitive-only when it is busy), and the statistics that turn raw latency
samples into a [`model::PathMeasurement`] (percentiles, and bandwidth by Hostping eq. 1-3).
Both engines go through the same statistics, so a simulated and a measured matrix are
computed the same way. It does no I/O of its own.

```
use model::{builtin, Mode};
let host = builtin::load("dgx-a100").unwrap().unwrap();
assert_eq!(probe::plan(&host, probe::Plan::FullMesh).len(), 40);
assert_eq!(probe::plan(&host, probe::Plan::for_mode(Mode::Busy)).len(), 16);
```
*/
#![deny(missing_docs)]

mod engine;
mod plan;
mod stats;

pub use engine::{LatencySamples, LatencySpec, Monitor, ProbeEngine, ProbeError, StreamSpec};
pub use plan::{plan, run, Plan, RunSpec};
pub use stats::{bandwidth_from_latency_gbps, half_iqr_us, latency_stats, measurement};
