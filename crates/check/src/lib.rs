/*!
hostping's check flow, the library every command that probes a host runs on: which host
([`host`]: a virtual host from a model and faults, or this machine from sysfs and
libibverbs), one check end to end ([`pipeline`]: monitor snapshot, mode, plan, probe,
analysis, history), a baseline recorded from healthy runs ([`record`]), the scenario files
and the accuracy suite that reproduce Hostping Section 6 ([`scenario`], [`accuracy`]), the
IOTLB sweep of HotNets'22 3.1 ([`iotlb`]) and ISPASS'21's ODP micro-benchmarks
([`odp_bench`]).

It wires `probe`, `vhost`, `rdma` and `analyze` together and decides nothing itself:
every judgement is `analyze`'s. It prints nothing and reads no flags: the CLI, the agent
and the collector's bench call it with plain values and render what it returns.

```
use check::pipeline::{check, BaselineSource, CheckSettings};
let host = model::builtin::load("single-socket").unwrap().unwrap();
let settings = CheckSettings { latency: probe::LatencySpec { iterations: 50, ..Default::default() }, ..Default::default() };
let baseline = check::record::simulated(&host, check::record::DEFAULT_RUNS, 1, &settings.latency, 0.02);
let mut vhost = vhost::VirtualHost::new(host.clone(), vec![], vhost::VhostConfig::default());
let source = BaselineSource::Given(&baseline, model::BaselineKind::Simulated);
let reports = check(&mut vhost, &host, source, &settings, &mut |_| {}, &mut |_, _, _| {});
assert!(reports[0].healthy);
```
*/
#![deny(missing_docs)]

pub mod accuracy;
pub mod bench_reports;
pub mod cost;
pub mod host;
pub mod iotlb;
pub mod odp_bench;
pub mod pipeline;
pub mod record;
pub mod scenario;
pub mod sim;
