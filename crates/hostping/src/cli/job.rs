//! `hostping job`: the job verdict's flags (DESIGN 4.7).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{capped_f64, capped_u32, capped_u64, parse_hostlist, Above, Format, HostNames};
use model::limits;

/// `hostping job`.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// The simulated cluster: `pod-32` or a cluster TOML file (docs/cluster.md).
    #[arg(long, value_name = "NAME|FILE", required_unless_present_any = ["collector", "nccl"])]
    pub sim_cluster: Option<String>,
    /// The fleet collector holding the hosts' runs and the switch ports' counters.
    #[arg(long, value_name = "URL", conflicts_with = "sim_cluster",
          value_parser = agent::sender::collector_url)]
    pub collector: Option<String>,
    /// The job's hosts, Slurm hostlist syntax (`node[001-016,020]`), in rank order; on a
    /// simulated cluster all of them by default.
    #[arg(long, value_name = "LIST", value_parser = parse_hostlist,
          required_unless_present_any = ["slurm", "sim_cluster", "nccl"])]
    pub nodes: Option<HostNames>,
    /// A Slurm job: its hosts and its window from `scontrol show job` (or `sacct` once it
    /// has ended).
    #[arg(
        long,
        value_name = "JOBID",
        conflicts_with_all = ["nodes", "sim_cluster"],
        requires = "collector"
    )]
    pub slurm: Option<String>,
    /// Start of the window judged (Unix seconds or RFC 3339); the job's start with
    /// --slurm, else an hour before --until.
    #[arg(
        long,
        value_name = "TIME",
        requires = "collector",
        conflicts_with = "sim_cluster"
    )]
    pub since: Option<String>,
    /// End of the window (Unix seconds or RFC 3339); the job's end, else now.
    #[arg(
        long,
        value_name = "TIME",
        requires = "collector",
        conflicts_with = "sim_cluster"
    )]
    pub until: Option<String>,
    /// Run follow-up measurements when the evidence leaves several hypotheses (pair probes
    /// through the agents need a probe token: --token or --token-file).
    #[arg(long)]
    pub probe: bool,
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
    /// Replay the job's traffic on the simulated fabric and say what explains its time
    /// (its pattern, its mapping, other jobs' traffic, a degraded element, or nothing
    /// measured). With --collector: on the collector's fabric (its --fabric), against the
    /// job's own time (--observed-time).
    #[arg(long)]
    pub what_if: bool,
    /// With --collector --what-if: how long the job took to run the --traffic it replays,
    /// measured by the job itself (one all-reduce of --bytes: `8.2ms`, `350us`, `1.5s`).
    /// On a simulated cluster the replay of the injected faults is the observed time.
    #[arg(long, value_name = "DURATION", requires = "what_if",
          conflicts_with = "sim_cluster", value_parser = positive_duration)]
    pub observed_time: Option<Duration>,
    /// The job's traffic for --what-if: `ring` or `tree` all-reduce, or a workload file
    /// (`hostping fabric sim` format; on a simulated cluster only).
    #[arg(long, value_name = "ring|tree|FILE", default_value = "ring")]
    pub traffic: String,
    /// Bytes each rank reduces in the --what-if all-reduce (1 GiB at most).
    #[arg(long, value_name = "BYTES", default_value_t = fleet_api::job::DEFAULT_WHAT_IF_BYTES,
          value_parser = capped_u64("bytes", 1, limits::WHAT_IF_BYTES))]
    pub bytes: u64,
    /// A fault on the simulated cluster (repeatable), as for `hostping mesh`, any of them
    /// starting mid-run with `@<seconds>s`; with --nccl-out, also a host-side straggler:
    /// `<host>:straggler:<gpu>:<delay>` (one rank late), `<host>:slow-gpu:<gpu>:<speed>` (a
    /// GPU at a fraction of its speed), `<host>:cpu-starved:<delay>` (every rank of the host
    /// late). docs/cluster.md lists them.
    #[arg(long, value_name = "FAULT", conflicts_with = "collector")]
    pub inject: Vec<String>,
    /// Seed of every random choice on the simulated cluster.
    #[arg(long, default_value_t = 1, conflicts_with = "collector")]
    pub seed: u64,
    /// Relative noise of the virtual hosts' measurements (standard deviation).
    #[arg(long, default_value_t = 0.02, conflicts_with = "collector",
          value_parser = capped_f64("noise", Above::OrAtZero, limits::NOISE))]
    pub noise: f64,
    /// The job's own collectives: the directory NCCL's Inspector plugin wrote
    /// (NCCL_INSPECTOR_DUMP_DIR, by default nccl-inspector-<jobid>), JSON dumps or
    /// node_exporter textfiles; every file under it is read. They say whether the job is
    /// slow, since when, and which rank arrives late (a straggler names its host). Alone,
    /// with --sim-cluster, or with --collector (sent with the question, judged with what
    /// the collector holds; its window is the records' span unless --since/--until or
    /// --slurm say); --nodes then limits the blame to those hosts, else they are the hosts
    /// the records name.
    #[arg(long, value_name = "DIR")]
    pub nccl: Option<PathBuf>,
    /// The action policy (TOML, as `hostping collector --actions`): the report gains
    /// `actions`, what the policy would do with this verdict's confirmed culprits: only
    /// follow-up probes confirm one (a host's: the host checked again), so give --probe too.
    /// The CLI never acts (only the collector does), and does not ask Slurm: the partitions' share
    /// is not checked, and each verdict counts as the only window seen.
    #[arg(long, value_name = "FILE")]
    pub actions: Option<PathBuf>,
    /// On a simulated cluster: run the job's collectives step by step on the packet
    /// simulator (an all-reduce of --bytes a step; faults start at their `@<seconds>s`) and
    /// write them into DIR as NCCL's Inspector plugin would (one file per process, v4.0
    /// JSON, labelled simulated); the verdict then reads them as --nccl reads a dump.
    #[arg(
        long,
        value_name = "DIR",
        requires = "sim_cluster",
        conflicts_with = "nccl"
    )]
    pub nccl_out: Option<PathBuf>,
    /// With --nccl-out: collectives the job runs (steps).
    #[arg(long, value_name = "N", requires = "nccl_out",
          default_value_t = simcluster::collectives::DEFAULT_STEPS,
          value_parser = capped_u32("steps", 1, u64::from(simcluster::collectives::MAX_STEPS)))]
    pub steps: u32,
    /// With --nccl-out: compute between one step's collective and the next, ms.
    #[arg(long, value_name = "MS", requires = "nccl_out",
          default_value_t = simcluster::collectives::DEFAULT_STEP_MS,
          value_parser = capped_f64("step-ms", Above::OrAtZero, simcluster::collectives::MAX_STEP_MS))]
    pub step_ms: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the verdict to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `--observed-time`: a duration (`8.2ms`, `350us`), more than zero.
fn positive_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| {
        format!("{e}: wants a duration with its unit, such as 8.2ms, 350us or 1.5s")
    })?;
    if d.is_zero() {
        return Err("a job takes some time: wants more than zero".to_string());
    }
    Ok(d)
}
