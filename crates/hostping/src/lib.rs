/*!
The hostping binary's library: the check pipeline that wires a probe engine and monitor to
the analyzer, baselines, scenario files, benchmarks and the human-readable views. It is the
only crate that depends on every other one; the CLI in `main.rs` only dispatches to it.

```
use hostping::pipeline::{check, CheckSettings};
let host = model::builtin::load("single-socket").unwrap().unwrap();
let settings = CheckSettings { latency: probe::LatencySpec { iterations: 50, ..Default::default() }, ..Default::default() };
let baseline = hostping::baseline::simulated(&host, hostping::baseline::DEFAULT_RUNS, 1, &settings.latency, 0.02);
let mut vhost = vhost::VirtualHost::new(host.clone(), vec![], vhost::VhostConfig::default());
let source = hostping::pipeline::BaselineSource::Given(&baseline, model::BaselineKind::Simulated);
let reports = check(&mut vhost, &host, source, &settings, &mut |_| {}, &mut |_, _, _| {});
assert!(reports[0].healthy);
```
*/

pub mod agent;
pub mod baseline;
pub mod bench;
pub mod cli;
pub mod collector;
pub mod fabric;
pub mod fleet_cli;
pub mod host;
pub mod iotlb;
pub mod odp_bench;
pub mod pipeline;
pub mod render;
pub mod scenario;
pub mod sim;
