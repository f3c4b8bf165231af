//! `hostping fabric route`: the route between two ports as the switches' forwarding tables
//! hold it, or every switch's table (`--dump`), through a umad port
//! (`rdma::subnet::route`, which also lays the route out as `ibtracert` does). This module
//! opens the port, discovers, and prints.

use super::switches::{open, settings, walk};
use crate::cli::fabric::RouteArgs;
use crate::cli::Format;
use crate::output::Outcome;
use anyhow::{Context, Result};
use rdma::mad::MgmtClass;
use rdma::subnet::route::{dump, locate, trace, TableReader};
use std::io::Write;

/// `hostping fabric route`: `Findings` when the route breaks or a table of the dump could
/// not be read (exit status 1).
pub fn route_command(args: &RouteArgs) -> Result<Outcome> {
    let mut port = open(&args.umad)?;
    let subnet = walk(&mut port, &args.umad)?;
    let agent = port.register(MgmtClass::SubnDirectedRoute)?;
    if args.dump {
        let tables = dump(&mut port, agent, settings(&args.umad), &subnet)
            .with_context(|| format!("fabric route --dump from {}", port.name()))?;
        for e in &tables.errors {
            eprintln!("fabric route --dump: {e}");
        }
        let text = serde_json::to_string_pretty(&tables.to_json())? + "\n";
        match &args.output {
            Some(path) => {
                std::fs::write(path, text)
                    .with_context(|| format!("{}: cannot write", path.display()))?;
                eprintln!(
                    "wrote the forwarding tables of {} switches to {}",
                    tables.switches.len(),
                    path.display()
                );
            }
            None => std::io::stdout().lock().write_all(text.as_bytes())?,
        }
        return Ok(Outcome::found(!tables.errors.is_empty()));
    }
    let (Some(from), Some(to)) = (args.from, args.to) else {
        unreachable!("clap requires --from and --to without --dump");
    };
    let from = locate(&subnet, from).context("--from")?;
    let to = locate(&subnet, to).context("--to")?;
    let mut reader = TableReader::new(&mut port, agent, settings(&args.umad), &subnet);
    let traced = trace(&subnet, from, to, |node, block| reader.block(node, block))?;
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&traced.to_json())? + "\n",
        Format::Table => traced.to_ibtracert(),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Outcome::found(traced.broken.is_some()))
}
