/*!
The virtual host: a flow-level model of an RDMA server that yields what Hostping's loopback
probe and monitors would measure on it, with faults injected (DESIGN 1, 4.2).

This crate owns the simulated backend of the probe and counter stages: [`VirtualHost`]
implements [`probe::ProbeEngine`] (latency and streaming tests of a path) and
[`probe::Monitor`] (RNIC throughput and pause ratio, GPU activity, link utilisation), and
[`Fault`] is the `--inject` grammar of DESIGN 4.2. It is a product of its own (a what-if
tool for a host) and the ground truth for accuracy checks, not a mock.

It must not do I/O, read the wall clock, or use a global or thread RNG: time is the host's
own simulated clock, and all randomness comes from one seeded RNG owned by the
[`VirtualHost`], so a seed replays a run bit for bit. A number it produces is always
labelled simulated ([`model::Provenance::Simulated`]). It never judges: whether a path is
abnormal is `analyze`'s business.

# The model, module by module

- `fault`: the grammar ([`Fault`], [`FaultError`]), parsed strictly against a host, and
  the faults of one host checked together ([`parse_faults`]: one setting per target).
- `net`: link directions, memory buses and RNIC receive sides as resources; the probe
  and the service traffic as flows; detours (ACS, ATS off); the bus monitor's view.
- `maxmin`: a generic max-min fair (water-filling) solver.
- `latency`: Lat_host with queueing, and the bandwidth limits (read window, Tx window).
- `transfer`: transfer times, and the RNIC's slow-start ramp.
- `noise`: the seeded, multiplicative measurement noise.
- `config`: the static configuration the faults imply (ACS, ATS, IOMMU groups, ODP
  regions, transport timeout floors) for `hostping lint`.
- `counters`: the IOTLB, memory-bus split, transport error and ODP region counters of the
  snapshot (HotNets'22 3.1, 3.2; ISPASS'21).
- `odp`: the ODP pitfalls (damming, flood) as RNIC counters and memory regions.
- [`odp_transport`]: a discrete-event model of RC READs over ODP memory (page faults,
  per-QP page status, timeouts, go-back-N), from which the pitfalls emerge (ISPASS'21).
- [`odp_micro`]: ISPASS'21's damming and flood micro-benchmarks on that model.
- `host`: the clock, the flap square wave, the trait implementations.

# Example

```
use model::{builtin, ComponentId, Mode};
use probe::{LatencySpec, ProbeEngine, RunSpec};
use vhost::{Fault, VhostConfig, VirtualHost};

let host = builtin::load("dgx-a100").unwrap().unwrap();
let fault = Fault::parse("degrade:rnic0--lsw0:0.5", &host).unwrap();
let mut vh = VirtualHost::new(host.clone(), vec![fault], VhostConfig::default());

let path = host.path(&ComponentId::from("rnic0"), &ComponentId::from("mem0")).unwrap();
let spec = RunSpec { latency: LatencySpec { iterations: 100, ..Default::default() }, stream: None };
let run = probe::run(&mut vh, &host, Mode::Idle, &[path], &spec, &mut |_, _| {});
let bw = run.paths[0].measurement().unwrap().bandwidth_gbps;
// Half of a PCIe Gen4 x16 link is left: about 126 Gb/s instead of the 200 Gb/s line rate.
assert!((bw - 126.0).abs() < 4.0, "{bw}");
assert_eq!(run.provenance, model::Provenance::Simulated);
assert!(vh.now_ns() > 0);
```
*/
#![deny(missing_docs)]

mod config;
mod counters;
mod fault;
mod host;
mod latency;
mod maxmin;
mod net;
mod noise;
mod odp;
pub mod odp_micro;
pub mod odp_transport;
mod transfer;

pub use fault::{
    parse_faults, Fault, FaultError, OdpPitfall, PageSize, FLOOD_DEFAULT_QPS, KINDS as FAULT_KINDS,
};
pub use host::{VhostConfig, VirtualHost, MESSAGE_TIMEOUT_NS};
pub use odp::{FLOOD_READS_PER_S, TRANSPORT_TIMEOUT_FLOOR_MS};
