//! Command-line flags. Parsing only validates: nothing here opens a file, loads a library or
//! builds a host; `main` does that once parsing is done.

pub mod fabric;
mod help;
pub mod job;
pub mod nccl;
pub mod pair;

pub use help::command;

use clap::{Args, Parser, Subcommand, ValueEnum};
use model::limits;
use std::path::PathBuf;

/// hostping finds intra-host network bottlenecks in RDMA servers (PCIe links, root ports,
/// memory channels, inter-socket buses, ACS/ATS and RNIC settings) and names their root
/// cause, by loopback probes between every RNIC and every memory node and GPU (Hostping,
/// NSDI'23).
///
/// On a server with RDMA hardware it discovers the host from sysfs and probes through
/// libibverbs (loaded at run time). Without RDMA hardware, `--sim` runs everything on a
/// virtual host: a built-in model (dgx-a100, amd-2s, single-socket) or a TOML host-model
/// file, with faults injected by `--inject`. Simulated numbers are always labelled as
/// simulated; measured ones as measured.
///
/// Exit status: 0 healthy, 1 bottleneck found, 2 usage or input error, 3 inconclusive (some
/// link could not be judged, so the host cannot be called healthy).
///
/// Every command takes --format table|json; -o/--output names a file to write (baseline,
/// job, mesh, pair probe, fabric net, fabric suggest-mapping, fabric route --dump), --out-dir
/// a folder (README: "Command-line conventions").
#[derive(Debug, Parser)]
#[command(name = "hostping", version, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Probe every RNIC x endpoint path and diagnose.
    ///
    /// Without --sim, this host: every ACTIVE RDMA port x every NUMA memory node and GPU,
    /// through a self-connected RC QP (RDMA WRITE, or READ with --op read). With no
    /// --baseline, each path is judged against its RNIC's line rate (affinitive paths) and
    /// against the paths like it in the same run.
    ///
    /// Idle host: full mesh, each path judged against the baseline. Busy host (an RNIC above
    /// Thp_low = 5 % of line rate): affinitive paths only, judged relative to each other.
    /// Binary tomography then localises the abnormal links, and the root-cause rules name
    /// a cause (listed below).
    #[command(after_long_help = "\
Examples:
  hostping check                            # this host, through libibverbs
  hostping check --op read --stream-qps 4   # RDMA READ, plus a 4-QP stream
  hostping check --sim dgx-a100 --inject degrade:gpu4--lsw4:0.5
  hostping check --sim dgx-a100 --inject flap:mem1--cpu1:0.15 --runs 4
  hostping check --sim dgx-a100 --inject service:rnic0:150:mem1 \\
      --inject overload:cpu0--cpu1:0.95
  hostping check --sim my-host.toml --format json | jq '.diagnoses'")]
    Check(CheckArgs),
    /// Record a baseline (per-path latency and bandwidth of a healthy idle host) to a file.
    ///
    /// Record it on a healthy idle host and reuse it on hosts of the same kind: the
    /// discovered model's name encodes the hardware (RNICs, rates, GPUs, PCIe tree), so a
    /// baseline only fits hosts built the same way.
    #[command(after_long_help = "\
Examples:
  hostping baseline --runs 5 -o a100-node.baseline.json   # this host, measured
  hostping baseline --sim dgx-a100 --runs 5 -o dgx-a100.baseline.json")]
    Baseline(BaselineArgs),
    /// Print the host model: components, links, every path with its links, affinity.
    ///
    /// Without --sim, what discovery finds on this host (NUMA nodes, RDMA ports, GPUs, the
    /// PCIe tree) and the model built from it; memory nodes are listed even without RDMA.
    Topology(TopologyArgs),
    /// Print one snapshot of every counter source: RNIC counters, pause and drops, PCIe
    /// links, AER, ACS/ATS, GPUs (NVML), memory and inter-socket buses (perf uncore), IOMMU
    /// and huge pages.
    ///
    /// A source this host lacks is listed as unavailable with the reason (no RDMA device, no
    /// NVIDIA driver, no uncore PMUs in a VM); the others are still read.
    #[command(after_long_help = "\
Examples:
  hostping counters
  hostping counters --format json | jq '.sources[] | {source, status}'
  hostping counters --sim dgx-a100 --inject service:rnic0:250  # virtual host")]
    Counters(CountersArgs),
    /// Report risky configuration found without probing: ACS redirect on GPU-RNIC paths,
    /// ATS off, downtrained PCIe links, IOMMU translation without huge pages, GPUs with no
    /// RNIC under their root port; each with why it matters and the paper section.
    ///
    /// Exit status: 0 nothing found, 1 findings, 2 error.
    #[command(after_long_help = "\
Examples:
  hostping lint
  hostping lint --sim dgx-a100 --inject acs:lsw2 --format json")]
    Lint(LintArgs),
    /// ISPASS'21's ODP micro-benchmarks on a device: damming (two 100 B READs on one QP at
    /// a swept interval, ODP memory on both sides; each READ's completion time) or flood
    /// (8192 100 B READs round robin over 1..N QPs, client-side ODP; time and packets).
    /// Every QP is connected to itself on the one device, with the smallest ACK timeout;
    /// each point uses new, never-touched memory. Packets and transport counters are the
    /// port's (hw_counters), page faults the MRs' (RDMA netlink) where the driver counts.
    ///
    /// A device without ODP RDMA READ over RC is named with what it lacks, exit status 2.
    /// A READ that does not complete within --timeout-ms stops the sweep: the points
    /// measured before it are printed, then the error (exit status 2).
    /// With --sim the virtual host's RNIC transport model runs them (labelled simulated).
    #[command(after_long_help = "\
Examples:
  hostping odp-bench damming --device mlx5_0
  hostping odp-bench damming --intervals 500,1500,2500,3500,4500 --format json
  hostping odp-bench flood --qps 16")]
    OdpBench(OdpBenchArgs),
    /// Run the Hostping agent: watch counters, probe when the host is idle (every 5 min) or
    /// when symptoms appear (Tx pause ratio above PFC_high or drops, checked every second),
    /// store every run in SQLite, and serve Prometheus /metrics and a JSON API.
    ///
    /// Without --sim it watches this host (with no RDMA device it says so and still reads
    /// its other counters). With --sim it watches a virtual host whose clock runs
    /// --time-scale times faster than the wall clock; --schedule makes faults appear later.
    #[command(after_long_help = "\
Examples:
  hostping agent --config /etc/hostping/agent.toml
  hostping agent --sim dgx-a100 --db /tmp/runs.db --time-scale 600 \\
      --inject flap:mem1--cpu1:0.15
  hostping agent --sim dgx-a100 --db /tmp/runs.db --time-scale 60 \\
      --schedule 2m=service:rnic0:250 --run-for 5m
  curl -s localhost:9469/api/runs | jq '.[0]'")]
    Agent(AgentArgs),
    /// The fleet's collector: agents push their runs (POST /api/runs with a per-host bearer
    /// token); it stores them in PostgreSQL and serves the fleet's read API and web UI
    /// (docs/fleet.md).
    ///
    /// The database comes from exactly one of --database-file FILE, the environment variable
    /// HOSTPING_DATABASE_URL or --database URL: keep a password in the file or the variable,
    /// where `ps` does not show it. Errors show the URL with its password as ***.
    #[command(after_long_help = "\
Web UI (in a browser, on the --listen address):
  /                     the fleet: every host's health, causes, kind, rack
  /hosts/{host}         one host: diagnoses, what was not judged, paths

Read API (JSON; no token):
  GET /api/hosts[?health=H][&cause=C]
                        every host's latest verdict; health is
                        healthy|unhealthy|inconclusive|stale
  GET /api/hosts/{host}/runs?limit=N
                        runs, newest first: report + id, trigger
  GET /api/hosts/{host}/timeline?rnic=R&endpoint=E[&since_unix_ms=T]
  GET /api/hosts/{host}/baseline
                        each path against its baseline, a verdict
  GET /api/kinds/{kind}/baseline
                        a kind's fleet baseline per path
  GET /api/fleet/status host counts, kinds, causes, last ingest
  GET /api/fleet/causes each cause with its hosts
  GET /api/fleet/slow-hosts?kind=K&limit=N
                        hosts persistently below their baseline
  GET /api/fabric/ports?since=MS&until=MS[&ports=SWITCH/PORT,...]
                        switch-port counter deltas and rates in a window
  GET /api/health       200 when the database answers (probes)
  GET /metrics          Prometheus text: what retention deleted, per table
Agents: POST /api/runs (Authorization: Bearer TOKEN of the --tokens file).
Samplers (fabric sample --collector): POST /api/fabric/sweeps, same tokens.

Examples:
  HOSTPING_DATABASE_URL=postgres://hostping@localhost:5432/hostping \\
      hostping collector --tokens /etc/hostping/tokens
  hostping collector --database-file /run/secrets/database-url \\
      --tokens /etc/hostping/tokens
  curl -s localhost:9470/api/hosts | jq .")]
    Collector(CollectorArgs),
    /// Ask the fleet's collector: the fleet's state, its hosts, one host judged against its
    /// baseline, the causes found, the hosts slower than their kind's fleet baseline.
    ///
    /// A read-only client of the collector's HTTP API (no token needed). Tables for people,
    /// --format json for machines (the API's JSON). Exit status: 0 nothing wrong, 1 an
    /// unhealthy or slow host or a cause was found, 2 the collector could not be asked
    /// (unreachable, or it answered an error: the message names the URL), 3 no finding but
    /// a host is inconclusive (its latest run could not judge every link).
    #[command(after_long_help = "\
Examples:
  hostping fleet status                 # the collector on 127.0.0.1:9470
  hostping fleet hosts --collector http://collector:9470 --cause link_failure
  hostping fleet hosts --health inconclusive   # hosts with links not judged
  hostping fleet host node-17           # each path against its baseline
  hostping fleet causes --format json | jq '.[] | {cause, count}'
  hostping fleet slow --kind dgx-a100   # hosts persistently slow, with evidence")]
    Fleet(FleetArgs),
    /// Benchmarks: the scenario suite with accuracy and false alarms, the CPU cost of a
    /// check, the agent's own cost, or the time of a counter snapshot.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The fabric layer: simulate a fat tree with in-packet reservoir-sampling telemetry and
    /// tell a bad communication pattern from a bad mapping from background traffic (Taffet's
    /// thesis); suggest mappings; reproduce the thesis' case studies; benchmark against CODES.
    #[command(subcommand)]
    Fabric(fabric::FabricCommand),
    /// Probe RNIC to RNIC between hosts and split each pair's time into host A's own path,
    /// host B's and the network between them.
    ///
    /// Each host's part is its own loopback measurement of the RNIC and the endpoint the
    /// data lives in (half the loopback latency: a write crosses each host's path once);
    /// the network's part is the rest. A slow pair whose host parts are normal is a network
    /// problem; one whose network part is normal is a host problem.
    ///
    /// Pairs: a ring of same-leaf pairs on every leaf, then cross-leaf pairs until every
    /// cable between the hosts is crossed and no two cables are crossed by the same pairs, so
    /// that a single bad cable is named by the pairs it makes abnormal. Every rail is
    /// probed; two RNICs of one host never are. The budget is R-Pingmesh's: latency probes a
    /// second per same-leaf and per cross-leaf target over --duration.
    ///
    /// On a simulated cluster (--sim-cluster) each host is a virtual host and the fabric is
    /// the packet simulator; every number is labelled simulated. docs/cluster.md has the
    /// model. On real hosts (--collector), the collector asks each pair's agent to probe
    /// (agents with --probe-tokens, registered with the collector); without the cabling it
    /// pairs the same RNIC across hosts (per rail only). Exit status: 0 every pair normal,
    /// 1 some pair abnormal, failed or unreachable, 2 error, 3 some pair not judged.
    #[command(after_long_help = "\
Examples:
  hostping mesh --sim-cluster pod-32
  hostping mesh --sim-cluster pod-32 --inject fabric:degrade:leaf2/9:0.5
  hostping mesh --sim-cluster pod-32 --nodes 'node[001-016]' \\
      --inject node007:degrade:rnic2--lsw4:0.5
  hostping mesh --sim-cluster lab.toml --format json | \\
      jq '.pairs[] | select(.status != \"normal\") | {a, b, reason}'
  hostping mesh --nodes 'node[01-04]' --collector http://fleet:9470 \\
      --token-file /etc/hostping/probe-token

Fabric faults (--inject), besides <host>:<fault of `hostping check`>:
  fabric:degrade:<port>:<fraction>   the cable keeps <fraction> of its rate
  fabric:flap:<port>:<fraction>      it alternates healthy / degraded (1 s each)
  fabric:errors:<port>:<per_second>  it corrupts packets (RC sends them again)
  fabric:down:<port>                 the cable is down; routes go around it
  fabric:background:<load>           other jobs' traffic at that share of line rate
A port is <switch>/<port> (leaf2/9, spine3/4) or <host>/<rnic> (node007/rnic2);
either end names the cable.")]
    Mesh(MeshArgs),
    /// A real RNIC-to-RNIC probe between two hosts (`serve` on one, `probe` from the other),
    /// its latency split into host A's own path, host B's and the network.
    #[command(subcommand)]
    Pair(pair::PairCommand),
    /// My job is slow: is it a host or the network, and which part? A verdict for the
    /// job's hosts over its window, with the culprits ranked.
    ///
    /// It joins each host's own check (its intra-host paths against its kind's baseline),
    /// RNIC-to-RNIC pairs between the job's hosts with each host's own path taken out, the
    /// switch ports on the job's routes (errors, link downs and waits during the window,
    /// against the same ports before it and against ports off its routes) and, with
    /// --what-if, a replay of the job's traffic on the simulated fabric. One tomography
    /// over every pair's whole path names a host's link, a cable or both; a fault on a
    /// host or cable the job does not use is listed apart, never blamed. With --nccl, the
    /// job's own collectives (NCCL Inspector records) say whether it is slow, since when,
    /// and which rank arrives late: a straggler names its host.
    ///
    /// Verdicts: host, network, both, neither (the infrastructure is healthy: a slow job
    /// then comes from its pattern or its mapping), inconclusive (too little was
    /// measured; `not_judged` says what). Exit status: 0 neither, 1 host, network or
    /// both, 2 usage or input error, 3 inconclusive.
    #[command(after_long_help = "\
Examples:
  hostping job --sim-cluster pod-32 --nodes 'node[001-016]'
  hostping job --sim-cluster pod-32 --nodes 'node[001-016]' \\
      --inject fabric:errors:leaf2/9:1e5 --format json | jq .culprits
  hostping job --slurm 12345 --collector http://fleet:9470
  hostping job --nccl nccl-inspector-12345 --format json | jq .symptom
  hostping job --nccl nccl-inspector-12345 --collector http://fleet:9470
  hostping job --nodes 'node[01-04]' --collector http://fleet:9470 \\
      --since 2026-11-27T10:00:00Z --probe \\
      --token-file /etc/hostping/probe-token")]
    Job(job::JobArgs),
    /// NCCL Inspector records: replay a simulated job's into a real dump folder.
    #[command(subcommand)]
    Nccl(nccl::NcclCommand),
}

/// `hostping mesh`.
#[derive(Debug, Args)]
pub struct MeshArgs {
    /// The simulated cluster: `pod-32` (32 dgx-a100 hosts on a rail-optimised two-level
    /// tree of 16-port switches) or a cluster TOML file (docs/cluster.md).
    #[arg(long, value_name = "NAME|FILE", required_unless_present = "collector")]
    pub sim_cluster: Option<String>,
    /// Probe real hosts through this fleet collector (it asks their agents), with --nodes.
    #[arg(long, value_name = "URL", conflicts_with = "sim_cluster", requires = "nodes",
          value_parser = agent::sender::collector_url)]
    pub collector: Option<String>,
    /// A token of the collector's probe-tokens file. Visible in `ps`: prefer --token-file.
    #[arg(
        long,
        value_name = "TOKEN",
        requires = "collector",
        conflicts_with_all = ["token_file", "sim_cluster"]
    )]
    pub token: Option<String>,
    /// A file holding that token alone on one line.
    #[arg(
        long,
        value_name = "FILE",
        requires = "collector",
        conflicts_with = "sim_cluster"
    )]
    pub token_file: Option<PathBuf>,
    /// WRITEs of each real pair's bandwidth phase (ib_write_bw -n); 0: none.
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "collector",
          conflicts_with = "sim_cluster",
          value_parser = capped_u64("bandwidth iterations", 0, limits::ITERATIONS))]
    pub bw_iterations: u64,
    /// WRITEs outstanding in each real pair's bandwidth phase (ib_write_bw -t).
    #[arg(long, value_name = "N", default_value_t = 128, requires = "collector",
          conflicts_with = "sim_cluster",
          value_parser = capped_u32("depth", 1, limits::STREAM_DEPTH))]
    pub depth: u32,
    /// Store each measured pair as its baseline (on a healthy fabric); later meshes and
    /// `job --probe` judge each pair against its own.
    #[arg(long, requires = "collector", conflicts_with = "sim_cluster")]
    pub record_baseline: bool,
    /// A fault (repeatable): `<host>:<fault>` with a fault of `hostping check`, or a fabric
    /// fault (listed below).
    #[arg(long, value_name = "FAULT", conflicts_with = "collector")]
    pub inject: Vec<String>,
    /// Hosts to probe between, Slurm hostlist syntax (`node[001-016,020]`); all by default.
    #[arg(long, value_name = "LIST", value_parser = parse_hostlist)]
    pub nodes: Option<HostNames>,
    /// Where each probe's data lives: the GPU nearest each RNIC (GPUDirect, as collectives
    /// use it) or the nearest memory node (perftest's default).
    #[arg(long, value_enum, default_value_t = MeshEndpoint::Gpu)]
    pub endpoint: MeshEndpoint,
    /// Seconds the probes are spread over.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0,
          value_parser = capped_f64("duration", Above::Zero, 86_400.0))]
    pub duration: f64,
    /// Latency probes a second to each same-leaf target (R-Pingmesh's default).
    #[arg(long, value_name = "PER_SECOND", default_value_t = 10.0,
          value_parser = capped_f64("rate", Above::Zero, 10_000.0))]
    pub rate_same_leaf: f64,
    /// Latency probes a second to each cross-leaf target (R-Pingmesh's default).
    #[arg(long, value_name = "PER_SECOND", default_value_t = 1.0,
          value_parser = capped_f64("rate", Above::Zero, 10_000.0))]
    pub rate_cross_leaf: f64,
    /// Seed of every random choice (host noise, other jobs' traffic, losses, flap phase).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Relative noise of the virtual hosts' measurements (standard deviation).
    #[arg(long, default_value_t = 0.02, value_parser = capped_f64("noise", Above::OrAtZero, limits::NOISE))]
    pub noise: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the mesh's report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `hostping bench job --suite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JobSuite {
    /// Two jobs a class.
    Fast,
    /// Twenty-five jobs a class.
    Full,
}

/// `hostping mesh --endpoint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MeshEndpoint {
    /// The GPU nearest each RNIC; the nearest memory node on a host without GPUs.
    Gpu,
    /// The memory node nearest each RNIC.
    Memory,
}

/// `hostping counters`.
#[derive(Debug, Args)]
pub struct CountersArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Inject a fault into the simulated host (repeatable), as for `check`.
    #[arg(long, value_name = "FAULT", requires = "sim")]
    pub inject: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `hostping lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Inject a fault into the simulated host (repeatable): `acs:`, `ats-off:`, `iommu:` (the
    /// RNIC's IOMMU group and page size) and `odp:` (ODP regions) show up here.
    #[arg(long, value_name = "FAULT", requires = "sim")]
    pub inject: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `hostping agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Configuration file (TOML; packaging/hostping-agent.toml lists every key). Without
    /// one, Hostping's defaults: 5 min / 1 s cadences, PFC_high 3 %, 5 % duty cycle.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The run database (overrides `agent.database`).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Address of /metrics and the JSON API (overrides `agent.listen`; port 0 picks one and
    /// prints it).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Inject a fault into the simulated host from the start (repeatable).
    #[arg(long, value_name = "FAULT", requires = "sim")]
    pub inject: Vec<String>,
    /// A fault that appears later on the virtual clock: AT=FAULT, e.g. 10m=service:rnic0:250.
    #[arg(long, value_name = "AT=FAULT", requires = "sim")]
    pub schedule: Vec<String>,
    /// Virtual seconds per wall second on a simulated host (600: 5 min pass in 0.5 s).
    #[arg(long, default_value_t = 1.0, requires = "sim")]
    pub time_scale: f64,
    /// Seed of the simulated host.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop after this much time on the agent's clock (virtual time with --sim), e.g. 1h.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub run_for: Option<std::time::Duration>,
    /// The fleet collector, http://HOST:PORT or https://HOST:PORT: every finished run is
    /// queued in the database and sent there, and kept until the collector has stored it
    /// (docs/fleet.md). Needs --token-file or --token.
    #[arg(long, value_name = "URL", value_parser = agent::sender::collector_url)]
    pub collector: Option<String>,
    /// This host's token for the collector (the TOKEN of its line "NAME TOKEN" in the
    /// collector's tokens file). Visible in `ps`: prefer --token-file.
    #[arg(
        long,
        value_name = "TOKEN",
        requires = "collector",
        conflicts_with = "token_file"
    )]
    pub token: Option<String>,
    /// A file holding this host's token for the collector, alone on one line (a mounted
    /// secret), so that the token does not appear in `ps`.
    #[arg(long, value_name = "FILE", requires = "collector")]
    pub token_file: Option<PathBuf>,
    /// Trust only this CA (PEM) for an https:// collector, e.g. a fleet's private CA.
    /// Default: the web PKI roots.
    #[arg(long, value_name = "FILE", requires = "collector")]
    pub collector_ca: Option<PathBuf>,
    /// This host's name in the fleet, sent to the collector and shown on the agent's page.
    /// Default: the hostname, or the model name with --sim.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Who may ask for a probe now (POST /api/probe): a file of "NAME TOKEN" lines, kept
    /// only as digests (overrides `agent.probe_tokens`). Without one, probing on request is
    /// off.
    #[arg(long, value_name = "FILE")]
    pub probe_tokens: Option<PathBuf>,
    /// The rack this host stands in, sent with every run to the collector (overrides
    /// `agent.rack`); the fleet API and UI group and filter hosts by it.
    #[arg(long, value_name = "NAME", requires = "collector", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub rack: Option<String>,
    /// The job's own collectives: watch DIR, where NCCL's Inspector plugin writes (and the
    /// nccl-inspector-<jobid> folders in it), tail its files as they grow and send each
    /// job's per-rank summaries to the collector every 5 s (never raw records).
    #[arg(long, value_name = "DIR", requires = "collector")]
    pub nccl_dir: Option<PathBuf>,
    /// The most runs kept waiting for the collector; past it the oldest are dropped unsent
    /// (they stay in the database), counted in hostping_outbox_dropped_total.
    #[arg(long, value_name = "RUNS", default_value_t = 10_000)]
    pub outbox_cap: u32,
    /// Pair probes (POST /api/pair/probe) only from these RDMA devices, numbered rnic0..
    /// in the order given (two agents in one host each own one). Default: every RNIC, as
    /// `hostping check` names them.
    #[arg(
        long,
        value_name = "DEV,..",
        value_delimiter = ',',
        conflicts_with = "sim"
    )]
    pub devices: Option<Vec<String>>,
    /// Where the collector reaches this agent's API for pair probes, registered with it
    /// at start. Default: http://HOSTNAME:PORT of --listen.
    #[arg(long, value_name = "URL", requires = "collector", value_parser = agent::sender::collector_url)]
    pub advertise: Option<String>,
}

/// `hostping collector`.
#[derive(Debug, Args)]
pub struct CollectorArgs {
    /// The PostgreSQL database, postgres://USER@HOST:PORT/DB, on the command line (where
    /// `ps` shows it: put a password in --database-file or HOSTPING_DATABASE_URL instead).
    /// The schema is created or migrated at start.
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
    /// A file holding the database's URL (postgres://USER:PASSWORD@HOST:PORT/DB), e.g. a
    /// Kubernetes Secret mounted as a file.
    #[arg(long, value_name = "FILE")]
    pub database_file: Option<PathBuf>,
    /// Address of the API.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9470")]
    pub listen: std::net::SocketAddr,
    /// The agents' tokens, one "HOST TOKEN" per line (# comments); only their SHA-256
    /// digests are kept. Without it every run is refused.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Who may ask for a mesh through the agents (POST /api/mesh): a file of "NAME TOKEN"
    /// lines, as the agents' --probe-tokens. Without one, mesh is off (403).
    #[arg(long, value_name = "FILE")]
    pub probe_tokens: Option<PathBuf>,
    /// A file holding one token of --probe-tokens: the collector probes with it when it
    /// judges a job that slowed by itself (checks of hosts without one, pairs, follow-ups,
    /// as `hostping job --collector --probe`). Without it those verdicts run on what the
    /// collector holds, without probes.
    #[arg(long, value_name = "FILE", requires = "probe_tokens")]
    pub judge_probe_token_file: Option<PathBuf>,
    /// The action policy (TOML, docs/fleet.md "Acting on verdicts"): what the collector
    /// does with the culprits of its own verdicts that follow-ups confirmed (drain in
    /// Slurm, alert through Alertmanager), within its limits; `mode = "dry-run"` (the
    /// default) only proposes. Without it nothing acts. A bad file is refused at start.
    /// Give --judge-probe-token-file too: a host's culprit is confirmed only by the host
    /// checked again, which those verdicts do only when they probe.
    #[arg(long, value_name = "FILE")]
    pub actions: Option<PathBuf>,
    /// Who may undo an action (POST /api/actions/{id}/undo): a file of "NAME TOKEN" lines,
    /// as --probe-tokens. Without one, undo is refused (401).
    #[arg(long, value_name = "FILE")]
    pub action_tokens: Option<PathBuf>,
    /// The fabric's ibnetdiscover file, each CA described "HOST DEVICE": a mesh then
    /// picks pairs that cross every cable between its nodes, each with its route.
    /// Without it, pairs are per rail and carry no route.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// The subnet manager's tables for --fabric (`hostping fabric route --dump`): the
    /// routes the switches hold. Without it, routes are reconstructed from the cabling.
    #[arg(long, value_name = "FILE", requires = "fabric")]
    pub routes: Option<PathBuf>,
    /// The most a pushed run or sweep may weigh, in bytes (413 above it).
    #[arg(long, value_name = "BYTES", default_value_t = collector::DEFAULT_MAX_BODY)]
    pub max_body: usize,
    /// How long samplers' switch-port sweeps are kept (1d, 6h, ...); older ones are
    /// deleted as new sweeps arrive. A day of a 3,888-port fabric at 1 Hz is about 150 GB.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration,
          default_value = "1d")]
    pub keep_sweeps: std::time::Duration,
    /// How long runs are kept (30d, 90d, ...), by their start time; older ones are deleted
    /// in batches every minute, except each host's latest run (baselines are kept apart
    /// and stay). `forever` keeps every run. About 2.8 MB a host a day at the 5-minute cadence (BENCHMARKS.md).
    #[arg(long, value_name = "DURATION|forever", value_parser = parse_keep_runs,
          default_value = "30d")]
    pub keep_runs: KeepRuns,
    /// Serve HTTPS with this certificate (PEM: the server's, then intermediates).
    /// Agents then use an https:// URL (and --collector-ca for a private CA).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Also read jobs' NCCL Inspector series from this Prometheus server (http://HOST:PORT),
    /// for clusters whose jobs run the plugin's textfile mode (NCCL_INSPECTOR_PROM_DUMP=1)
    /// scraped from node_exporter: every 5 s, over its HTTP API; the jobs are then listed,
    /// watched and judged as those agents post.
    #[arg(long, value_name = "URL", value_parser = collector::prometheus::PrometheusUrl::parse)]
    pub prometheus: Option<collector::prometheus::PrometheusUrl>,
    /// The time buckets --prometheus's series are summarised in: at least Prometheus's
    /// scrape interval of node_exporter, and a dump or two of the plugin (every 30 s at
    /// least in its textfile mode); a bucket is read a width after its end.
    #[arg(long, value_name = "DURATION", value_parser = parse_bucket, default_value = "60s",
          requires = "prometheus")]
    pub prometheus_bucket: std::time::Duration,
}

/// `--prometheus-bucket`: a duration of at least a second.
fn parse_bucket(text: &str) -> Result<std::time::Duration, String> {
    let width =
        humantime::parse_duration(text).map_err(|e| format!("{e} (a duration such as 60s)"))?;
    if width < std::time::Duration::from_secs(1) {
        return Err("less than a second: give a duration such as 60s".into());
    }
    Ok(width)
}

/// `--keep-runs`: how old a run may get; `None` keeps every run.
#[derive(Debug, Clone, Copy)]
pub struct KeepRuns(pub Option<std::time::Duration>);

/// `forever`, or a duration of at least a second (`0s` would delete every run but the
/// latest: refused as a slip).
fn parse_keep_runs(text: &str) -> Result<KeepRuns, String> {
    if text == "forever" {
        return Ok(KeepRuns(None));
    }
    let keep = humantime::parse_duration(text)
        .map_err(|e| format!("{e} (a duration such as 30d, or forever)"))?;
    if keep < std::time::Duration::from_secs(1) {
        return Err("less than a second: give a duration such as 30d, or forever".into());
    }
    Ok(KeepRuns(Some(keep)))
}

/// `hostping fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// What to ask.
    #[command(subcommand)]
    pub command: FleetCommand,
    /// The collector's base URL.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:9470",
        global = true
    )]
    pub collector: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table, global = true)]
    pub format: Format,
}

/// Host names from a Slurm hostlist (`--nodes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostNames(pub Vec<String>);

/// A `--nodes` list: each host once (`model::hostlist::expand_unique`: a repeat is refused,
/// naming it, on every command that takes a list).
fn parse_hostlist(list: &str) -> Result<HostNames, String> {
    model::hostlist::expand_unique(list)
        .map(HostNames)
        .map_err(|e| e.to_string())
}

/// The questions `hostping fleet` asks the collector.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Hosts (healthy, unhealthy, inconclusive, stale), kinds, causes, runs stored, last ingest
    /// (GET /api/fleet/status).
    Status,
    /// Every host: kind, rack, health and causes of its latest run, runs stored
    /// (GET /api/hosts), optionally filtered.
    Hosts {
        /// Only hosts of this kind (model name).
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// Only hosts in this rack.
        #[arg(long, value_name = "RACK")]
        rack: Option<String>,
        /// Only hosts whose latest run has this cause.
        #[arg(long, value_name = "CAUSE", value_parser = clap::builder::PossibleValuesParser::new(model::Cause::ALL.map(model::Cause::as_str)))]
        cause: Option<String>,
        /// Only hosts of this health: unhealthy (a bottleneck found), inconclusive (some
        /// link not judged), stale (no recent run), healthy.
        #[arg(long, value_name = "HEALTH", value_parser = clap::builder::PossibleValuesParser::new(analyze::fleet::Health::ALL.map(analyze::fleet::Health::as_str)))]
        health: Option<String>,
        /// Only these hosts, in Slurm's hostlist syntax (`node[001-016,020]`, as
        /// `$SLURM_JOB_NODELIST` names a job's nodes). One the collector has no run from is
        /// named on stderr as not judged (exit 3 when nothing else is found).
        #[arg(long, value_name = "LIST", value_parser = parse_hostlist)]
        nodes: Option<HostNames>,
    },
    /// One host: its latest run's diagnoses, and each path against its own baseline or its
    /// kind's fleet baseline with a verdict (GET /api/hosts/NAME/baseline).
    Host {
        /// The host's name in the fleet.
        name: String,
    },
    /// Each cause with the hosts whose latest run has it (GET /api/fleet/causes).
    Causes,
    /// Hosts whose paths stay below their kind's fleet baseline, though by less than the
    /// 20 % that makes one run's path abnormal (Abnormal_th),
    /// worst first, with the evidence (GET /api/fleet/slow-hosts).
    Slow {
        /// Only hosts of this kind.
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// At most this many hosts.
        #[arg(long, default_value_t = 50, value_parser = capped_u32("slow hosts", 1, fleet_api::read::query::MAX_SLOW_HOSTS as u64))]
        limit: u32,
    },
}

/// Output formats, the same two on every command (a few add their own, e.g. `fabric
/// discover --format ibnetdiscover`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables and words for people (colour on a terminal).
    #[value(alias = "text")]
    Table,
    /// JSON for machines; a command that prints a series (check --runs N, fabric sample)
    /// prints one compact document per line (JSON Lines).
    Json,
}

/// Which host: this one (default), a simulated one, or one described by a copy of sysfs.
#[derive(Debug, Args)]
pub struct HostArgs {
    /// Simulate this host: a built-in model (dgx-a100, amd-2s, single-socket) or a TOML
    /// host-model file (docs/host-model.md).
    #[arg(long, value_name = "MODEL|FILE")]
    pub sim: Option<String>,
    /// Discover the host from sysfs under DIR instead of / (DIR/sys/class/infiniband,
    /// DIR/sys/bus/pci/devices, ...): a captured tree, or a test fixture.
    #[arg(long, value_name = "DIR", conflicts_with = "sim")]
    pub sysfs_root: Option<PathBuf>,
}

impl HostArgs {
    /// The host these flags name, as the check crate takes it.
    pub fn spec(&self) -> check::host::HostSpec {
        check::host::HostSpec {
            sim: self.sim.clone(),
            sysfs_root: self.sysfs_root.clone(),
        }
    }
}

/// How the mode of a run is chosen (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// From the monitors: busy if any RNIC carries more than Thp_low of its line rate or
    /// any GPU is busy (Hostping 4.2, 5), idle otherwise.
    Auto,
    /// Full mesh, judged against the baseline.
    Idle,
    /// Affinitive paths only, judged relatively.
    Busy,
}

impl From<ModeArg> for analyze::ModeChoice {
    fn from(mode: ModeArg) -> analyze::ModeChoice {
        match mode {
            ModeArg::Auto => analyze::ModeChoice::Auto,
            ModeArg::Idle => analyze::ModeChoice::Idle,
            ModeArg::Busy => analyze::ModeChoice::Busy,
        }
    }
}

/// The RDMA operation of the probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OpArg {
    /// RDMA WRITE from the read region to the write region (Hostping Fig. 7).
    Write,
    /// RDMA READ: what latency-bound GPU paths expose (Hostping 3.2.2).
    Read,
}

impl From<OpArg> for model::Op {
    fn from(op: OpArg) -> model::Op {
        match op {
            OpArg::Write => model::Op::Write,
            OpArg::Read => model::Op::Read,
        }
    }
}

/// `hostping check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Inject a fault into the simulated host (repeatable; needs --sim). Each thing is set
    /// once: two degrade (or a degrade and a flap) on one link, two overload on one link, two
    /// settings of one kind on one RNIC, are refused, not combined; service above the RNIC's
    /// line rate saturates it. Sizes are capped (flood QPs 4096, tx-window 1 GiB, service
    /// 1600 Gb/s, iommu 1 TiB).
    #[arg(long, value_name = "FAULT")]
    pub inject: Vec<String>,
    /// Run the check this many times in a row (5 simulated minutes apart), keeping history:
    /// a link gray in 3 consecutive runs, or abnormal and normal by turns (two changes) over
    /// the last 6 runs, is flapping. Within each idle run, a path that alone judges a link is
    /// probed again (--reprobe-rounds): a path seen at both levels there names its flapping
    /// link in that run and the next 5. A simulated flap meets each
    /// run at its own phase.
    #[arg(long, default_value_t = 1, value_parser = capped_u32("runs", 1, limits::RUNS))]
    pub runs: u32,
    /// Rounds of re-probes, 100 ms apart, of the paths that alone judge a link in each idle
    /// run (each round probes them and their witness paths again); 0 turns them off and
    /// leaves flaps to the rules across runs.
    #[arg(long, value_name = "N", default_value_t = model::Thresholds::default().reprobe_rounds, value_parser = capped_u32("reprobe rounds", 0, limits::REPROBE_ROUNDS))]
    pub reprobe_rounds: u32,
    /// Seed of the virtual host's noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Baseline file (from `hostping baseline`). Default on a simulated host: a healthy
    /// virtual host of the same model, 3 runs; on a real host: line rate and peers.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Idle (full mesh) or busy (affinitive only) mode; auto reads the monitors.
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    pub mode: ModeArg,
    /// Timed iterations per message size per path.
    #[arg(long, default_value_t = 1000, value_parser = capped_u32("iterations", 1, limits::ITERATIONS))]
    pub iterations: u32,
    /// Also run a streaming bandwidth test on every path with this many QPs.
    #[arg(long, value_name = "QPS", value_parser = capped_u32("stream QPs", 1, limits::STREAM_QPS))]
    pub stream_qps: Option<u32>,
    /// Outstanding work requests per QP in the streaming test.
    #[arg(long, value_name = "DEPTH", default_value_t = 16, value_parser = capped_u32("stream depth", 1, limits::STREAM_DEPTH))]
    pub stream_depth: u32,
    /// Duration of the streaming test per path, ms.
    #[arg(long, value_name = "MS", default_value_t = 10.0, value_parser = capped_f64("stream ms", Above::Zero, limits::STREAM_MS))]
    pub stream_ms: f64,
    /// RDMA WRITE or READ probes.
    #[arg(long, value_enum, default_value_t = OpArg::Write)]
    pub op: OpArg,
    /// Longest wait for one work completion on a real host, ms: a hung path fails after
    /// this and the run goes on.
    #[arg(long, value_name = "MS", default_value_t = 2000, value_parser = capped_u64("timeout ms", 1, limits::TIMEOUT_MS))]
    pub timeout_ms: u64,
    /// Provoke a failure on a real host's paths to one endpoint (tests of the error
    /// paths): reg-mr:ENDPOINT, hang:ENDPOINT or bad-rkey:ENDPOINT.
    #[arg(long, value_name = "KIND:ENDPOINT", hide = true)]
    pub verbs_fault: Vec<String>,
    /// Relative noise of the virtual host's samples (standard deviation).
    #[arg(long, default_value_t = 0.02, value_parser = capped_f64("noise", Above::OrAtZero, limits::NOISE))]
    pub noise: f64,
    /// Also sweep a stream's working set from 16 KiB to 16 GiB with 4 KiB and 2 MiB pages
    /// from each translated RNIC to each memory node, and report where throughput falls off
    /// (HotNets'22 3.1, Figures 3-5; JSON: the `iotlb` field).
    #[arg(long)]
    pub iotlb: bool,
    /// The largest working set of the IOTLB sweep, MiB (the sweep goes 16 KiB, 64 KiB, ...
    /// up to it; two regions this large are allocated per point on a real host).
    #[arg(long, value_name = "MIB", default_value_t = check::iotlb::DEFAULT_MAX_MIB, requires = "iotlb", value_parser = capped_u64("iotlb max MiB", 1, limits::IOMMU_WORKING_SET_MIB as u64))]
    pub iotlb_max_mib: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Which ODP micro-benchmark (ISPASS'21).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OdpBenchKind {
    /// Two 100 B READs at each interval; a page fault on the second stalls it for the
    /// transport timeout.
    Damming,
    /// 8192 100 B READs over 1, 2, ... N QPs; page-status updates fail across QPs.
    Flood,
}

/// `hostping odp-bench`.
#[derive(Debug, Args)]
pub struct OdpBenchArgs {
    /// The micro-benchmark.
    #[arg(value_enum)]
    pub kind: OdpBenchKind,
    /// RDMA device (default: the first one).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// Damming: intervals between the two READs, us (ISPASS'21 sweeps 500..4500).
    #[arg(long, value_name = "US", value_delimiter = ',', default_values_t = [500u32, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500], value_parser = capped_u32("odp damming interval us", 1, limits::ODP_INTERVAL_US))]
    pub intervals: Vec<u32>,
    /// Flood: the largest number of QPs (the sweep runs 1..=N).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = capped_u32("odp flood QPs", 1, limits::ODP_FLOOD_QPS))]
    pub qps: u32,
    /// Longest wait for one work completion, ms (a damming stall lasts ~500 ms or more).
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = capped_u64("timeout ms", 1, limits::TIMEOUT_MS))]
    pub timeout_ms: u64,
    /// Run on the virtual host's RNIC transport model instead of a device (a built-in
    /// model name or a host TOML file); --device then names its RNIC (default: the first).
    #[arg(long, value_name = "MODEL|FILE")]
    pub sim: Option<String>,
    /// Also draw the report to FILE (.svg or .png): elapsed ms against the interval
    /// (damming), or elapsed s and packets against QPs (flood).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `hostping baseline`: on this host (default) or a simulated one.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Healthy idle runs to take the per-path median of.
    #[arg(long, default_value_t = 5, value_parser = capped_u32("runs", 1, limits::RUNS))]
    pub runs: u32,
    /// Seed of the virtual host's noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Timed iterations per message size per path.
    #[arg(long, default_value_t = 1000, value_parser = capped_u32("iterations", 1, limits::ITERATIONS))]
    pub iterations: u32,
    /// RDMA WRITE or READ probes.
    #[arg(long, value_enum, default_value_t = OpArg::Write)]
    pub op: OpArg,
    /// Longest wait for one work completion on a real host, ms.
    #[arg(long, value_name = "MS", default_value_t = 2000, value_parser = capped_u64("timeout ms", 1, limits::TIMEOUT_MS))]
    pub timeout_ms: u64,
    /// Where to write the baseline (JSON).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

/// `hostping topology`.
#[derive(Debug, Args)]
pub struct TopologyArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `hostping bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The job verdict on labelled simulated jobs (each host and fabric fault class, both
    /// at once, faults off the job's hosts or routes, healthy clusters with noise, other
    /// jobs' traffic, bad mappings and patterns) on pod-32 and on full-891's three-level
    /// tree, each run as `job --probe --what-if`: precision and recall of "the
    /// infrastructure is at fault", verdict accuracy, top-1 and top-3 culprit accuracy per
    /// class, time to verdict. Seeded and reproducible.
    Job {
        /// `full`: 25 jobs a class on pod-32, 5 a class on full-891; `fast`: 2 a class on
        /// pod-32 (what the test suite runs).
        #[arg(long, value_enum, default_value_t = JobSuite::Full)]
        suite: JobSuite,
        /// Seed of the cases (hosts, faults, noise).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Run only the suite's jobs on this cluster (`pod-32` or `full-891`); the cases
        /// and their seeds stay those of the whole suite.
        #[arg(long, value_name = "NAME")]
        cluster: Option<String>,
        /// List every case whose verdict or first culprit is wrong.
        #[arg(long)]
        show_failures: bool,
        /// Run the passive classes instead (issue 39 item 5): a straggler host, a rail
        /// slowed by a cable, other jobs' traffic, healthy, a host's slow GPU link, each
        /// simulated step by step
        /// writing NCCL Inspector records with its fault starting mid-run; detection time
        /// from the onset, top-1 accuracy without probes (the records alone) and with them.
        /// On pod-32.
        #[arg(long, conflicts_with = "cluster")]
        passive: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Run every scenario (case / expected / got / pass), the accuracy, and the false-alarm
    /// rate over healthy noisy runs of each built-in model.
    Scenarios {
        /// Run the scenario files (*.toml) of this folder instead of the suite built into
        /// hostping (the repository's scenarios/ folder; its README.md gives the format).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Healthy noisy runs per built-in model for the false-alarm rate.
        #[arg(long, default_value_t = 200, value_parser = capped_u32("healthy runs", 1, limits::HEALTHY_RUNS))]
        healthy_runs: u32,
        /// Print the full report of every scenario that fails.
        #[arg(long)]
        show_failures: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// The agent's steady-state cost: CPU share of one core and resident memory while it
    /// monitors a virtual host at 1 s cadence (it starts `hostping agent` and samples
    /// /proc/<pid>).
    Agent {
        /// Host model.
        #[arg(long, default_value = "dgx-a100")]
        sim: String,
        /// Wall seconds to measure, after a warm-up of 5 s.
        #[arg(long, default_value_t = 60, value_parser = capped_u64("bench seconds", 5, limits::BENCH_AGENT_SECONDS))]
        seconds: u64,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Time of one full counter snapshot (every source) of this host, or of a captured tree.
    Counters {
        /// Read under DIR instead of /.
        #[arg(long, value_name = "DIR")]
        sysfs_root: Option<PathBuf>,
        /// Snapshots to time.
        #[arg(long, default_value_t = 50, value_parser = capped_u32("repeats", 1, limits::BENCH_REPEATS))]
        repeat: u32,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// The fleet collector at scale: ingest rate through POST /api/runs (one day of a fleet's
    /// runs from concurrent senders), then read latency (fleet overview, host page, one path's
    /// timeline) with the whole history loaded (the other days copied inside PostgreSQL).
    /// Needs an empty PostgreSQL database it may fill; the runs are of a virtual host.
    #[command(after_long_help = "\
Example (1000 hosts x 7 days at a 5-minute cadence: 2 M runs):
  createdb hostping_bench
  hostping bench collector \\
      --database postgres://$USER@localhost/hostping_bench")]
    Collector {
        /// The empty database, postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "URL")]
        database: String,
        /// Simulated hosts.
        #[arg(long, default_value_t = 1000, value_parser = capped_u32("bench hosts", 1, limits::BENCH_HOSTS))]
        hosts: u32,
        /// Days of history.
        #[arg(long, default_value_t = 7, value_parser = capped_u32("bench days", 1, limits::BENCH_DAYS))]
        days: u32,
        /// Time between two runs of one host.
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        cadence: std::time::Duration,
        /// Concurrent senders while ingesting: agents pushing at the same moment. The
        /// collector stores the runs that wait together in one transaction, so the more
        /// arrive at once, the cheaper each is.
        #[arg(long, default_value_t = 64, value_parser = capped_u32("bench clients", 1, limits::BENCH_CLIENTS))]
        clients: u32,
        /// Hosts whose pages and timelines are read (each request kind this many times).
        #[arg(long, default_value_t = 200, value_parser = capped_u32("bench queries", 1, limits::BENCH_QUERIES))]
        queries: u32,
        /// Host model of the simulated runs.
        #[arg(long, default_value = "dgx-a100")]
        sim: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// The fleet collector ingesting switch-port sweeps: --samplers senders, each with its
    /// share of a --ports-port fabric, post one sweep a second each for --duration (post
    /// latency: does the collector keep up?), then as fast as it answers (the headroom);
    /// then a job's window query over what was stored. Beside it, --run-clients senders
    /// post simulated hosts' runs back to back, alone and during the paced sweeps: does
    /// the collector hold its run ingest rate? Needs an empty PostgreSQL database it may
    /// fill; the counters and runs are synthetic.
    #[command(after_long_help = "\
Example (4 samplers of a 3,888-port fabric, 4 run senders, a minute a phase):
  createdb hostping_bench
  hostping bench sweeps --database postgres://$USER@localhost/hostping_bench")]
    Sweeps {
        /// The empty database, postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "URL")]
        database: String,
        /// Concurrent samplers (the Delegator's split).
        #[arg(long, default_value_t = 4, value_parser = capped_u32("bench samplers", 1, limits::BENCH_CLIENTS))]
        samplers: u32,
        /// Switch ports of the fabric.
        #[arg(long, default_value_t = 3888, value_parser = capped_u32("bench ports", 1, limits::BENCH_HOSTS))]
        ports: u32,
        /// How long each phase lasts.
        #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
        duration: std::time::Duration,
        /// Concurrent senders of agents' runs (0: sweeps only).
        #[arg(long, default_value_t = 4, value_parser = capped_u32("bench run clients", 0, limits::BENCH_CLIENTS))]
        run_clients: u32,
        /// Simulated hosts whose runs they post.
        #[arg(long, default_value_t = 1000, value_parser = capped_u32("bench hosts", 1, limits::BENCH_HOSTS))]
        run_hosts: u32,
        /// Host model of the simulated runs.
        #[arg(long, default_value = "dgx-a100")]
        sim: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// CPU cost of one full-mesh check of a simulated host (median over repeats).
    Check {
        /// Host model.
        #[arg(long, default_value = "dgx-a100")]
        sim: String,
        /// Checks to time.
        #[arg(long, default_value_t = 20, value_parser = capped_u32("repeats", 1, limits::BENCH_REPEATS))]
        repeat: u32,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

/// A whole-number flag from `min` up to its cap in [`model::limits`]; the error names the
/// cap ("runs 20000 is above the cap of 10000"), and clap exits 2 on it.
fn capped_u64(
    what: &'static str,
    min: u64,
    cap: u64,
) -> impl Fn(&str) -> Result<u64, limits::WholeError> + Clone + Send + Sync + 'static {
    move |text| limits::whole(what, text, min, cap)
}

/// [`capped_u64`] for a flag held in a `u32`: a cap above `u32::MAX` is lowered to it, so
/// the value always fits.
fn capped_u32(
    what: &'static str,
    min: u64,
    cap: u64,
) -> impl Fn(&str) -> Result<u32, limits::WholeError> + Clone + Send + Sync + 'static {
    let cap = cap.min(u64::from(u32::MAX));
    move |text| limits::whole(what, text, min, cap).map(|v| v as u32)
}

/// Where a number flag's range starts.
#[derive(Clone, Copy)]
enum Above {
    /// Above 0.
    Zero,
    /// At 0 or above.
    OrAtZero,
}

/// A finite number flag from 0 (included or not) up to its cap in [`model::limits`].
fn capped_f64(
    what: &'static str,
    from: Above,
    cap: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text| {
        let value: f64 = match text.parse() {
            Ok(v) if f64::is_finite(v) => v,
            _ => return Err(format!("{what} `{text}` is not a number")),
        };
        match from {
            Above::Zero if value <= 0.0 => Err(format!("{what} must be above 0, got {text}")),
            Above::OrAtZero if value < 0.0 => Err(format!("{what} must be 0 or more, got {text}")),
            _ => limits::at_most(what, value, cap).map_err(|e| e.to_string()),
        }
    }
}
