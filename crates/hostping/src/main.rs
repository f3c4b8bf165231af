//! `hostping`: parse the flags, hand them to the command's module, and map what it concluded
//! to the exit status of DESIGN 4.3 (0 healthy, 1 bottleneck found, 2 usage or input error,
//! 3 inconclusive: some link could not be judged).
//! Every command is one module (`*_cmd`); the work itself is in the library crates
//! (docs/ARCHITECTURE.md).

mod agent_cmd;
mod baseline_cmd;
mod bench_cmd;
mod check_cmd;
mod cli;
mod collector_cmd;
mod counters_cmd;
mod fabric_cmd;
mod fleet_cmd;
mod job_cmd;
mod lint_cmd;
mod mesh_cmd;
mod nccl_cmd;
mod odp_bench_cmd;
mod output;
mod pair_cmd;
mod progress;
mod topology_cmd;

use clap::FromArgMatches;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::from_arg_matches(&cli::command().get_matches()).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Check(args) => check_cmd::run(args),
        Command::Baseline(args) => baseline_cmd::run(args),
        Command::Topology(args) => topology_cmd::run(args),
        Command::Counters(args) => counters_cmd::run(args),
        Command::Lint(args) => lint_cmd::run(args),
        Command::OdpBench(args) => odp_bench_cmd::run(&args),
        Command::Agent(args) => agent_cmd::run(args),
        Command::Collector(args) => collector_cmd::run(args),
        Command::Fleet(args) => fleet_cmd::run(&args),
        Command::Bench(cmd) => bench_cmd::run(cmd),
        Command::Fabric(cmd) => fabric_cmd::run(cmd),
        Command::Mesh(args) => mesh_cmd::run(args),
        Command::Pair(cmd) => pair_cmd::run(cmd),
        Command::Job(args) => job_cmd::run(args),
        Command::Nccl(cmd) => nccl_cmd::run(cmd),
    };
    match result {
        Ok(outcome) => ExitCode::from(outcome.exit_status()),
        Err(e) if is_broken_pipe(&e) => ExitCode::from(0),
        Err(e) => {
            // Each message once: a typed error that quotes its source in its own words is
            // not followed by that source again, as anyhow's `{:#}` would.
            eprintln!("hostping: error: {}", model::error::chain(&*e));
            ExitCode::from(2)
        }
    }
}

/// A reader that went away (`hostping ... | head`) is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
