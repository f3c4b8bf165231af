/*!
The real-host backends of hostping: what runs on a server with RDMA hardware.

- [`sysfs`] discovers the host from sysfs (RDMA devices and ports, NUMA nodes, GPUs, the
  PCIe tree above each of them) and turns it into the same [`model::HostTopology`] that the
  virtual host uses, with the bindings from model ids to devices.
- [`verbs`] loads libibverbs at run time (dlopen, as NCCL does): the binary has no build-time
  dependency on rdma-core and says "no RDMA devices" where it is absent.
- [`memory`] allocates probe memory on an endpoint: host memory bound to a NUMA node, or GPU
  memory through the CUDA driver API, also loaded at run time.
- [`engine`] is the loopback engine: a self-connected RC QP per path, RDMA WRITE/READ
  between two regions on the endpoint, implementing [`probe::ProbeEngine`].
- [`counters`] reads the counter sources one module each (RNIC counters, ethtool pause and
  drops, PCIe links with AER/ACS/ATS, NVML, perf uncore, IOMMU and huge pages).
- [`mad`] has InfiniBand management datagrams as byte views and representations: subnet
  management (NodeInfo, NodeDescription, PortInfo, SwitchInfo) and performance management
  (ClassPortInfo, PortCounters, PortCountersExtended).
- [`umad`] loads libibumad at run time and exchanges MADs on a port: a window of requests
  in flight with hostping's own deadlines and retries.
- [`subnet`] discovers an InfiniBand subnet with directed-route SMPs, and writes and reads
  `ibnetdiscover`'s topology file.
- [`netlink`] reads RDMA netlink: the memory regions of each device, which of them use
  on-demand paging, and their page-fault counters.
- [`monitor`] reads them together and maps them to model ids: the hardware and bus
  monitor's [`model::HostSnapshot`] (a [`probe::Monitor`]), the [`model::HostConfig`] that
  `analyze::lint` judges, and the [`model::CounterReport`] of `hostping counters`.
- [`odp_bench`] runs ISPASS'21's on-demand-paging micro-benchmarks on one device (damming:
  two READs at a swept interval; flood: 8192 READs over 1..N QPs), each point on QPs
  connected to itself, with a deadline on every wait, the check of the bytes that arrived,
  and what the port's transport counters and RDMA netlink's MR page faults say around it;
  `hostping odp-bench` drives it through `check`.
- [`host`] puts it together: a discovered host with an RNIC to probe from, its verbs engine
  and monitor behind the `probe` traits, and plain-words errors when either is missing.

It must not decide anything about health: it produces `model` values and `analyze` judges.
*/

#![deny(missing_docs)]

pub mod counters;
pub mod engine;
pub mod host;
pub mod mad;
pub mod memory;
pub mod monitor;
pub mod netlink;
pub mod odp_bench;
pub mod subnet;
pub mod sysfs;
pub mod umad;
pub mod verbs;
