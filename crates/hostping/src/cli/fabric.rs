//! Flags of `hostping fabric ...`. Parsing only validates; the command functions in
//! `fabric_cmd` build topologies, workloads and mappings and report their file errors.

use super::Format;
use clap::{Args, Subcommand, ValueEnum};
use rdma::subnet::route::Endpoint;
use std::path::PathBuf;
use std::time::Duration;

/// `hostping fabric ...`: the fabric layer: the packet-level fat-tree simulator, and a real
/// InfiniBand subnet's discovery, routes and switch-port counters.
#[derive(Debug, Subcommand)]
pub enum FabricCommand {
    /// Simulate a workload on a fat tree with in-packet telemetry, then diagnose congestion.
    ///
    /// Runs a packet-level simulation (input and output queues, credit-based flow control,
    /// adaptive routing up, deterministic down) of the workload placed by the mapping. The
    /// switches sample hops and congested hops into every packet (reservoir sampling, thesis
    /// 3.2 and 5.2-5.7); the receivers' samples give the congested fraction of every link,
    /// and the diagnosis names the cause of the congestion: the communication pattern
    /// (endpoint congestion, Theorem 4.1), the mapping (internal links saturated, Theorem 4.2)
    /// or background traffic (congested links well below line rate in the application's own
    /// samples). Every number is simulated.
    ///
    /// Writes to --out-dir: summary.json (config, per-job results, diagnosis), ports.csv (per
    /// link: exact counts and telemetry estimates), diagnosis.txt, and congested-fraction
    /// plots (SVG and PNG).
    ///
    /// Topologies: full (3564 nodes, radix 36), tapered (4608 nodes, radix 48, 2:1 taper),
    /// radix8 (128 nodes), or a TOML file with radix, nodes_per_leaf, leaves, leaves_per_pod,
    /// aggs_per_pod, or a real fabric's ibnetdiscover file. A fabric that is no fat tree (a
    /// ring, a mesh, switches of several radixes) is simulated as cabled and routed as
    /// opensm's updn engine routes it; --routing routes any topology so.
    ///
    /// Workloads: stencil[:WxH][,bytes=128KiB][,rounds=N]; reduction:naive|tree[,ranks=1024,
    /// arrays=50,bytes=4KiB,root=0]; ring[,bytes=128KiB,rounds=N]; ring+background[,rounds=3,
    /// load=0.5,messages=4] (the ring exchange with uniform random background traffic on a
    /// scattered node split, thesis 4.4; the jobs are named ring and uniform);
    /// uniform,load=0.5[,bytes=SIZE][,messages=N] (exponential inter-arrival times; give
    /// --end or messages); or a file of `time source destination bytes` lines.
    ///
    /// Mappings: row-major, random, rcm, partition (METIS), incremental, tiling[:WxH], or a
    /// file of `rank node` lines.
    ///
    /// Exit status: 0 no congestion found, 1 congestion diagnosed, 2 usage or input error,
    /// 3 inconclusive (too little delivered or sampled to judge).
    #[command(after_long_help = "\
Examples:
  hostping fabric sim --workload stencil:64x72 --mapping row-major --out-dir rm
  hostping fabric sim --workload stencil:64x72 --mapping tiling:8x4 \\
      --out-dir tiled
  hostping fabric sim --workload ring+background --samples ring \\
      --packet-bytes 512
  hostping fabric sim --topology full --workload reduction:naive \\
      --telemetry single-bit
  hostping fabric sim --topology radix8 --workload uniform,load=0.5 --end 20us")]
    Sim(SimArgs),
    /// Propose a better mapping of ranks onto nodes for a communication pattern.
    ///
    /// Tiling when the pattern is a 2-D grid (one tile of ranks per leaf switch, thesis
    /// 4.2.3), graph partitioning (METIS, one part per leaf) otherwise; prints the average
    /// path length and the leaf-level edge cut before (row-major) and after, and writes the
    /// mapping as a file of `rank node` lines for `--mapping`.
    #[command(after_long_help = "\
Examples:
  hostping fabric suggest-mapping --workload stencil:64x72 -o tiled.map
  hostping fabric suggest-mapping --topology full --matrix comm.txt \\
      -o app.map")]
    SuggestMapping(SuggestArgs),
    /// Benchmarks: the thesis' case studies, or the peer simulator's workloads.
    #[command(subcommand)]
    Bench(FabricBenchCommand),
    /// Merge the summaries of many runs (e.g. the tasks of a Slurm job array) into one table.
    ///
    /// Each argument is a run's --out-dir folder or its summary.json. Rows keep the order given.
    #[command(after_long_help = "\
Examples:
  hostping fabric merge runs/*
  hostping fabric merge runs/* --format csv > sweep.csv")]
    Merge(MergeArgs),
    /// Discover a real InfiniBand subnet with directed-route SMPs.
    ///
    /// Needs libibumad and access to /dev/infiniband/umad*, usually root or the rdma group.
    ///
    /// Walks the subnet breadth first from the local port, with many SMPs in flight at
    /// once, and prints every switch and channel adapter, their LIDs and the links between
    /// their ports with width and speed. A port that does not answer is reported on stderr
    /// and its branch left out; the rest is still printed.
    ///
    /// Formats: table; json (nodes with GUID, type, description, LID and port count; links
    /// with both ends, width and speed); ibnetdiscover (the topology file `ibnetdiscover`
    /// writes, which `fabric sample --topology` and `fabric sim --topology` read back).
    ///
    /// Exit status: 0 every port answered, 1 some did not (the rest printed), 2 nothing
    /// could be discovered (no umad port, the local node silent).
    #[command(after_long_help = "\
Examples:
  hostping fabric discover
  hostping fabric discover --ca mlx5_0 --port 1 --format ibnetdiscover \\
      > fabric.topo
  hostping fabric discover --format json | jq '.links | length'")]
    Discover(DiscoverArgs),
    /// Trace the route between two ports through the switches' forwarding tables.
    ///
    /// Needs libibumad and access to /dev/infiniband/umad*, usually root or the rdma group.
    ///
    /// The route the subnet manager programmed, as `ibtracert` prints it: discovers the
    /// subnet, then from the source port follows each switch's LinearForwardingTable entry
    /// for the destination LID (read with directed-route SMPs) and the cable out of that
    /// port, to the destination. Ports are named by LID (decimal) or port GUID (0x...).
    ///
    /// --dump reads every switch's whole table instead (the `ibroute` of each switch) and
    /// writes it as JSON: per switch its GUID, description, LID and each LID's output port.
    ///
    /// Formats: table; json (from, to, and one hop per switch crossed: GUID, description,
    /// in_port, out_port; `error` says where a broken route stops).
    ///
    /// Exit status: 0 the route reaches the destination (or every table was read), 1 it
    /// breaks (no entry for the LID, a loop, a port without a link; the switch and LID are
    /// named) or some table of the dump could not be read, 2 usage or input error (a port
    /// not in the subnet, no umad port, a switch on the route that did not answer).
    #[command(after_long_help = "\
Examples:
  hostping fabric route --from 2 --to 6
  hostping fabric route --from 0x0002c90300a1b2c4 --to 17 --format json
  hostping fabric route --dump -o tables.json")]
    Route(RouteArgs),
    /// Sample every switch port's counters (the LDMS ibfabric sampler).
    ///
    /// One sweep reads all ports with their MADs in flight at once, timestamps each port and measures the
    /// sweep's spread (first query to last answer).
    ///
    /// The switches come from --topology (an ibnetdiscover file, e.g. from `fabric
    /// discover --format ibnetdiscover`) or from a discovery at start. Data counters are in
    /// bytes (64-bit PortCountersExtended where the switch offers it). A switch that does
    /// not answer gets an error on its ports for that sweep; no sweep waits longer than
    /// its deadlines (--timeout-ms, --retries).
    ///
    /// Output: a table per sweep, or JSON Lines, one object per sweep (each port's counters,
    /// data counters in bytes; a port that did not answer has `counters: null` and `error`).
    /// With --collector each sweep is also posted to the fleet collector, which keeps the
    /// per-port deltas for GET /api/fabric/ports; exit status 1 when a sweep was not stored.
    /// Ports the collector asks for in a sweep's answer (a job verdict's --probe) are read
    /// at once, twice a second apart, and posted too (not printed).
    #[command(after_long_help = "\
Examples:
  hostping fabric sample --once
  hostping fabric sample --topology fabric.topo --hz 10 --duration 1m \\
      --format json
  hostping fabric sample --ports out/node001.ports \\
      --collector http://collector:9470 --token-file /etc/hostping/token")]
    Sample(SampleArgs),
    /// Split the switch ports of a subnet among several samplers (the LDMS ibfabric
    /// Delegator).
    ///
    /// Every linked switch port exactly once, each switch whole to the nearest
    /// sampler (fewest hops), balanced by port count. Writes one port list per sampler
    /// (an LDMS ibnet lidfile: `lid guid nports portlist`) for `fabric sample --ports`.
    ///
    /// Samplers are named by node description or GUID. --failed leaves a sampler out and
    /// gives its ports to the others.
    #[command(after_long_help = "\
Examples:
  hostping fabric delegate --topology fabric.topo --samplers node01,node17 \\
      --out-dir lists
  hostping fabric delegate --topology fabric.topo --samplers node01,node17 \\
      --failed node17 --out-dir lists")]
    Delegate(DelegateArgs),
    /// Write a simulated fat tree as an ibsim net file.
    ///
    /// So that the management stack (ibsim, opensm, infiniband-diags, `fabric discover`/`sample`) runs on the simulator's
    /// trees.
    ///
    /// Switches are named leaf-N, agg-POD-N and core-N, hosts node-N; tree port p is IB port
    /// p + 1. `fabric discover --format ibnetdiscover` on the result gives a topology file
    /// that `fabric sim --topology FILE` recognises as the same tree.
    #[command(after_long_help = "\
Examples:
  hostping fabric net --topology radix8 -o radix8.net
  ibsim -s radix8.net")]
    Net(NetArgs),
}

/// `hostping fabric delegate`.
#[derive(Debug, Args)]
pub struct DelegateArgs {
    /// The subnet as an ibnetdiscover topology file.
    #[arg(long, value_name = "FILE")]
    pub topology: PathBuf,
    /// The samplers, by node description or GUID, separated by commas.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',', required = true)]
    pub samplers: Vec<String>,
    /// Samplers that are gone, separated by commas: their ports go to the others.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    pub failed: Vec<String>,
    /// Folder for the port lists (`<sampler>.ports`); without it they go to stdout.
    #[arg(long, value_name = "DIR", alias = "out", short_alias = 'o')]
    pub out_dir: Option<PathBuf>,
}

/// Which umad port, and the MAD deadlines.
#[derive(Debug, Args)]
pub struct UmadArgs {
    /// Channel adapter to send from (default: the first one with an active port).
    #[arg(long, value_name = "NAME")]
    pub ca: Option<String>,
    /// Its port (default: the first active one).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u8,
    /// Deadline of one MAD, ms.
    #[arg(long, value_name = "MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub timeout_ms: u64,
    /// Tries after the first, per MAD.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=20))]
    pub retries: u32,
    /// MADs in flight at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub window: u64,
}

/// `hostping fabric discover`.
#[derive(Debug, Args)]
pub struct DiscoverArgs {
    #[command(flatten)]
    pub umad: UmadArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiscoverFormat::Table)]
    pub format: DiscoverFormat,
}

/// `fabric discover`'s output formats: the common two, and the ibnetdiscover file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiscoverFormat {
    /// Tables for people.
    #[value(alias = "text")]
    Table,
    /// JSON: nodes and links.
    Json,
    /// The topology file `ibnetdiscover` writes (`fabric sim --topology` reads it).
    Ibnetdiscover,
}

/// `hostping fabric route`.
#[derive(Debug, Args)]
pub struct RouteArgs {
    #[command(flatten)]
    pub umad: UmadArgs,
    /// The source port: a LID (decimal) or a port GUID (0x...).
    #[arg(long, value_name = "PORT", required_unless_present = "dump")]
    pub from: Option<Endpoint>,
    /// The destination port: a LID (decimal) or a port GUID (0x...).
    #[arg(long, value_name = "PORT", required_unless_present = "dump")]
    pub to: Option<Endpoint>,
    /// Write every switch's forwarding table as JSON instead of tracing a route.
    #[arg(long, conflicts_with_all = ["from", "to", "format"])]
    pub dump: bool,
    /// With --dump: the file to write (default: stdout).
    #[arg(short = 'o', long, value_name = "FILE", requires = "dump")]
    pub output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `hostping fabric sample`.
#[derive(Debug, Args)]
pub struct SampleArgs {
    #[command(flatten)]
    pub umad: UmadArgs,
    /// The subnet as an ibnetdiscover topology file (default: discover it first).
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// Only these ports: a port list from `fabric delegate` (an LDMS ibnet lidfile).
    #[arg(long, value_name = "FILE")]
    pub ports: Option<PathBuf>,
    /// Sweeps per second.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub hz: f64,
    /// How long to sample (1s, 5m, ...); until interrupted when neither this nor --once.
    #[arg(long, value_name = "D", value_parser = humantime::parse_duration, conflicts_with = "once")]
    pub duration: Option<Duration>,
    /// One sweep, then exit.
    #[arg(long)]
    pub once: bool,
    /// Output format: a table per sweep, or JSON Lines (one object per sweep).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The fleet collector, http://HOST:PORT or https://HOST:PORT: each sweep is also
    /// posted there as it completes (POST /api/fabric/sweeps), kept and retried while the
    /// collector is unreachable (docs/fleet.md). Needs --token-file or --token.
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
    /// A file holding this host's token for the collector, alone on one line.
    #[arg(long, value_name = "FILE", requires = "collector")]
    pub token_file: Option<PathBuf>,
    /// Trust only this CA (PEM) for an https:// collector. Default: the web PKI roots.
    #[arg(long, value_name = "FILE", requires = "collector")]
    pub collector_ca: Option<PathBuf>,
    /// The sampler's name at the collector, the NAME of its token's line. Default: the
    /// hostname.
    #[arg(long, value_name = "NAME", requires = "collector")]
    pub name: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum FabricBenchCommand {
    /// Reproduce the three case studies of thesis chapter 4 and print them beside the
    /// thesis' figures: the stencil mappings (Table 4.1), the naive vs tree reduction, and
    /// the ring exchange with background traffic.
    #[command(after_long_help = "\
Examples:
  hostping fabric bench cases                       # all three, full size
  hostping fabric bench cases --case stencil --out-dir cases")]
    Cases(CasesArgs),
    /// Beyond the papers: on the three case studies, which congestion-tree roots does a
    /// switch-port counter sampler (PortXmitData, PortXmitWait) find at 1, 10, 100, 1000 and
    /// 10,000 Hz, against in-packet reservoir sampling and the simulator's ground truth?
    ///
    /// Each cell is `found/true`: roots found, and how many of them are ground-truth roots.
    /// Every number is simulated.
    #[command(after_long_help = "\
Examples:
  hostping fabric bench roots --scale small
  hostping fabric bench roots --format json > roots.json")]
    Roots(RootsArgs),
    /// Run workloads A to D of the CODES fat-tree simulator (codes-org/codes on ROSS, the
    /// simulator of Taffet's thesis) and print wall time, packets delivered per wall second
    /// and peak memory beside the CODES figures measured on this project's build machine
    /// (Debian 12, 2 cores). A: radix 8, 4 % load; B: radix 8, 50 %; C: radix 36 (3564
    /// nodes), 4 %; D: radix 36, 50 %.
    ///
    /// Each workload runs in a child process so that its peak memory is its own.
    #[command(after_long_help = "\
Examples:
  hostping fabric bench peer
  hostping fabric bench peer --workload D --format json")]
    Peer(PeerArgs),
    /// Reproduce the LDMS ibfabric sampler study ("Measuring Minimum Switch Port Metric
    /// Retrieval Time and Impact for Multi-Layer InfiniBand Fabrics", Sandia) on the simulator: sweep spread against ports per sampler (36/72/108), distance
    /// (local, 1 hop, 2 hops), 1 vs 16 redundant samplers, idle and under a bandwidth test;
    /// then the bandwidth test's throughput at 1, 10 and 100 Hz with 1 sampler, 16
    /// redundant samplers and the Delegator's split. Every figure is simulated.
    #[command(after_long_help = "\
Examples:
  hostping fabric bench sampling
  hostping fabric bench sampling --duration 200ms --format json")]
    Sampling(SamplingArgs),
}

/// The telemetry the switches run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TelemetryChoice {
    /// Two reservoirs of (switch, port) per packet (thesis algorithms 2-4).
    Reservoir,
    /// Two reservoirs of a 1-bit hash (algorithms 5-7).
    #[value(name = "reservoir-1bit")]
    Reservoir1Bit,
    /// One 1-bit reservoir and a congested bit, 5-6 header bits (algorithms 8-9).
    SingleBit,
    /// No telemetry: exact counts only.
    Off,
}

/// A subnet manager's routing engine, as opensm names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoutingChoice {
    /// A shortest path to every destination (opensm -R minhop).
    Minhop,
    /// Up to a root, then down; deadlock free on any cabling (opensm -R updn).
    Updn,
}

/// Which directions the congested-fraction plot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlotDirections {
    /// Both directions of a link averaged, one plot (thesis 3.4).
    Both,
    /// One plot for links going up and one for links going down.
    Split,
}

#[derive(Debug, Args)]
pub struct TopologyArg {
    /// Fat tree: full, tapered, radix8, a TOML file of tree parameters, or a real fabric's
    /// ibnetdiscover topology file (recognised as the fat tree it is; a fabric that is none,
    /// a ring or a mesh, is simulated as cabled).
    #[arg(long, default_value = "tapered")]
    pub topology: String,
}

/// `hostping fabric net`.
#[derive(Debug, Args)]
pub struct NetArgs {
    #[command(flatten)]
    pub topology: TopologyArg,
    /// Write the net file here instead of stdout.
    #[arg(short, long, value_name = "FILE", alias = "out")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub topology: TopologyArg,
    /// Route as the subnet manager programmed the fabric: the forwarding tables of every
    /// switch, as `hostping fabric route --dump -o FILE` wrote them (the --topology must be
    /// that fabric's ibnetdiscover file). Routing is then deterministic.
    #[arg(long, value_name = "FILE")]
    pub routes: Option<PathBuf>,
    /// Route as opensm's engine would and simulate the fabric as cabled. Without it fat
    /// trees route adaptively, and real fabrics that are no fat tree route updn.
    #[arg(long, value_enum, value_name = "ENGINE", conflicts_with = "routes")]
    pub routing: Option<RoutingChoice>,
    /// What the ranks send (see above), or a workload file.
    #[arg(long)]
    pub workload: String,
    /// Where ranks run (see above), or a mapping file.
    #[arg(long, default_value = "row-major")]
    pub mapping: String,
    /// Telemetry in the switches.
    #[arg(long, value_enum, default_value_t = TelemetryChoice::Reservoir)]
    pub telemetry: TelemetryChoice,
    /// Width of the saturating hop counters in bits (thesis 5.6: 3 suffice for fat trees).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub hop_bits: u8,
    /// Fraction of packets the senders tag (thesis 5.1).
    #[arg(long, default_value_t = 1.0)]
    pub tag_fraction: f64,
    /// Seed of every random choice (routing ties, telemetry, random traffic and mappings).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Folder for the summary, per-port counts, diagnosis and plots.
    #[arg(long, value_name = "DIR", default_value = "fabric-out", alias = "out")]
    pub out_dir: PathBuf,
    /// Stop at this simulated time (e.g. 100us); default: when every rank has finished.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub end: Option<Duration>,
    /// Also split telemetry into windows of this width by packet arrival time (thesis
    /// Figure 4.11), with one plot per window; at most 100 windows (memory), the last one
    /// running to the end.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub window: Option<Duration>,
    /// Link bandwidth, Gb/s, every link. Default: the rates a real fabric's topology file
    /// gives, each link at its own (4xEDR is 100, 4xHDR 200); 100 for other trees.
    #[arg(long)]
    pub link_gbps: Option<f64>,
    /// Link propagation delay, ns.
    #[arg(long, default_value_t = 20.0)]
    pub link_latency_ns: f64,
    /// Switch latency (arrival to output queue), ns.
    #[arg(long, default_value_t = 90.0)]
    pub switch_latency_ns: f64,
    /// Largest packet, bytes.
    #[arg(long, default_value_t = 4096)]
    pub packet_bytes: u32,
    /// Flow-control unit (credit), bytes.
    #[arg(long, default_value_t = 64)]
    pub flow_unit_bytes: u32,
    /// Buffer of each switch input and output port, bytes.
    #[arg(long, default_value_t = 65536)]
    pub buffer_bytes: u32,
    /// Route up by destination instead of to the least-loaded port.
    #[arg(long)]
    pub deterministic_routing: bool,
    /// Congestion definition: queue-exceeds-credits (thesis 3.2), queue-above:BYTES or
    /// credits-below:BYTES (5.10).
    #[arg(long, default_value = "queue-exceeds-credits")]
    pub congestion: String,
    /// Which job's samples the diagnosis uses: all, or a job name (e.g. primary) to see
    /// what one application sees of the fabric.
    #[arg(long, default_value = "all")]
    pub samples: String,
    /// Plot both directions averaged, or up and down separately.
    #[arg(long, value_enum, default_value_t = PlotDirections::Both)]
    pub plot: PlotDirections,
    /// Plot only the first K leaf switches (with their pods), as the thesis crops wide trees.
    #[arg(long, value_name = "K")]
    pub crop_leaves: Option<u32>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct SuggestArgs {
    #[command(flatten)]
    pub topology: TopologyArg,
    /// The pattern as a workload spec or workload file.
    #[arg(long, conflicts_with = "matrix", required_unless_present = "matrix")]
    pub workload: Option<String>,
    /// The pattern as a communication matrix file of `source destination bytes` lines.
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// Seed for the partitioner.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the mapping (`rank node` lines) here.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct CasesArgs {
    /// Which case study: stencil, reduction, background, or all.
    #[arg(long, default_value = "all")]
    pub case: String,
    /// Also keep each run under this folder: its jobs and configuration (run.json) and its
    /// congested-fraction plot (SVG and PNG).
    #[arg(long, value_name = "DIR", alias = "out")]
    pub out_dir: Option<PathBuf>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct RootsArgs {
    /// The thesis' tree sizes, or the same shapes on trees of a few hundred nodes.
    #[arg(long, value_enum, default_value_t = CaseScale::Thesis)]
    pub scale: CaseScale,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CaseScale {
    /// 64 x 72 stencil on `tapered`, 1024-rank reduction on `full`, ring and background on
    /// `tapered`.
    Thesis,
    /// The same shapes on trees of a few hundred nodes (seconds).
    Small,
}

#[derive(Debug, Args)]
pub struct PeerArgs {
    /// Which workloads (A, B, C, D); repeat or leave out for all.
    #[arg(long = "workload", value_name = "ID")]
    pub workloads: Vec<String>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run one workload in this process and print its figures as JSON (used by the parent
    /// to measure each workload's own peak memory).
    #[arg(long, hide = true)]
    pub child: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct SamplingArgs {
    /// Sweep rate of the spread experiment.
    #[arg(long, default_value_t = 100.0)]
    pub spread_hz: f64,
    /// Sweeps each sampler makes in a spread cell.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub sweeps: u32,
    /// Simulated length of each bandwidth run (at least one period of the lowest rate for
    /// a sweep to happen in it).
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Sampling rates of the bandwidth experiment, Hz.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    pub hz: Vec<f64>,
    /// A switch processor's time to answer one query, ns (default: the model's 1100, from
    /// the paper's smallest spread).
    #[arg(long)]
    pub service_ns: Option<f64>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Run folders (with summary.json) or summary files.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = MergeFormat::Table)]
    pub format: MergeFormat,
}

/// `fabric merge`'s output formats: the common two, and CSV for spreadsheets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MergeFormat {
    /// A table for people.
    #[value(alias = "text")]
    Table,
    /// JSON: the summaries' rows.
    Json,
    /// CSV, one row per run.
    Csv,
}
