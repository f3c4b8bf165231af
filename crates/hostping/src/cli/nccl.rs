//! Flags of `hostping nccl replay`: a simulated job's NCCL Inspector records written into a
//! real dump folder as the plugin would write them (issue 39 item 6). Parsing only validates;
//! `nccl_cmd` reads the records and writes them.

use super::{capped_f64, Above};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// The longest history a replay writes at once, seconds: a day, far more than a slowdown is
/// judged against (the collector reads the hour before a window's end).
pub const MAX_HISTORY_S: f64 = 86_400.0;

/// `hostping nccl ...`.
#[derive(Debug, Subcommand)]
pub enum NcclCommand {
    /// Write a simulated job's NCCL Inspector records into a dump folder as the plugin
    /// would, live: each record once its time has come, so that an agent tailing the folder
    /// (`hostping agent --nccl-dir`) sees a running job.
    ///
    /// --from is what `hostping job --sim-cluster ... --nccl-out DIR` wrote: one file a
    /// process, every record labelled simulated (`git_rev: "hostping-simulated"`); a file
    /// with a malformed record, a record of another kind, or one that is not labelled
    /// simulated is refused, naming it, and the records written keep that label.
    ///
    /// Each --host SIM=NODE plays simulated host SIM's processes on NODE: their records say
    /// `hostname: NODE` and their files are named after it (`NODE-<pid>.log`). A dump folder
    /// holds one node's processes, so only the mapped hosts' files are written (the other
    /// simulated hosts' ran elsewhere); two simulated hosts on one node would drive each
    /// GPU twice and are refused.
    ///
    /// Times are shifted so that the job starts --history seconds ago (or at --started): the
    /// records of the time before now are written at once (an earlier level to judge a
    /// slowdown against), the rest each when its collective has ended (its
    /// `dump_timestamp_us`), in each file's order.
    /// The replay ends when the last is written. Exit status: 0 replayed, 2 usage or input
    /// error.
    #[command(after_long_help = "\
Examples:
  hostping job --sim-cluster pod-32 --nodes node001,node002 \\
      --inject node002:straggler:gpu3:40ms@25s --nccl-out /tmp/sim --steps 700
  hostping nccl replay --from /tmp/sim \\
      --out-dir \"$DUMPS/nccl-inspector-$SLURM_JOB_ID\" \\
      --host node002=\"$(hostname -s)\" --history 20
  hostping agent --nccl-dir \"$DUMPS\" ...   # tails it as a running job's records")]
    Replay(NcclReplayArgs),
}

/// `hostping nccl replay`.
#[derive(Debug, Args)]
// clap's own usage line runs past 80 columns; this one is wrapped.
#[command(
    override_usage = "hostping nccl replay --from <DIR> --out-dir <DIR> --host <SIM=NODE>...
       [--history <SECONDS> | --started <UNIX_SECONDS>]"
)]
pub struct NcclReplayArgs {
    /// The simulated records: the folder `job --nccl-out` wrote (its files, one a process).
    #[arg(long, value_name = "DIR")]
    pub from: PathBuf,
    /// The dump folder to write (`nccl-inspector-<jobid>`); made if missing. A file it
    /// would write that exists already is refused: one folder, one job.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// SIM=NODE: simulated host SIM's processes run on NODE (repeatable, one node each).
    #[arg(long = "host", value_name = "SIM=NODE", required = true, value_parser = host_map)]
    pub hosts: Vec<HostMap>,
    /// Seconds of the job already run: written at once, dated before now.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0,
          value_parser = capped_f64("history", Above::OrAtZero, MAX_HISTORY_S))]
    pub history: f64,
    /// When the job began, Unix seconds, instead of --history: the nodes of one job
    /// replaying their hosts each in its own process agree on it (`date +%s` taken once), so
    /// that one collective starts on all of them at the same moment, as ranks in step do.
    #[arg(long, value_name = "UNIX_SECONDS", conflicts_with = "history",
          value_parser = capped_f64("started", Above::Zero, f64::MAX))]
    pub started: Option<f64>,
}

/// One `--host SIM=NODE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostMap {
    /// The simulated host, as its records name it.
    pub sim: String,
    /// The node that plays it.
    pub node: String,
}

fn host_map(text: &str) -> Result<HostMap, String> {
    match text.split_once('=') {
        Some((sim, node)) if !sim.is_empty() && !node.is_empty() && !node.contains('/') => {
            Ok(HostMap {
                sim: sim.to_string(),
                node: node.to_string(),
            })
        }
        _ => Err(format!(
            "`{text}` is not SIM=NODE (a simulated host, then the node's name, no `/`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_map_is_sim_then_node() {
        assert_eq!(
            host_map("node002=gpu-a17"),
            Ok(HostMap {
                sim: "node002".into(),
                node: "gpu-a17".into()
            })
        );
        for bad in ["node002", "=gpu-a17", "node002=", "node002=../x"] {
            let e = host_map(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("SIM=NODE"), "{bad}: {e}");
        }
    }
}
