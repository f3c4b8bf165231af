//! `hostping fabric net`: a tree as an ibsim net file, so that the simulator's trees run on
//! ibsim. (Reading `--topology` is `fabric::topology_file`'s.)

use std::io::Write;

use anyhow::{Context, Result};
use fabric::cabling::Cabling;
use fabric::topology::{Level, Topology};

use crate::cli::fabric::NetArgs;

/// `hostping fabric net`: a tree as an ibsim net file.
pub fn net_command(args: &NetArgs) -> Result<()> {
    let topology = Topology::resolve(&args.topology.topology)?;
    let title = format!(
        "The fat tree '{}' as an ibsim net file ({} switches of {} ports, {} hosts; \
         hostping fabric net --topology {})",
        topology.name(),
        topology.num_switches(),
        topology.radix(),
        topology.num_nodes(),
        args.topology.topology
    );
    let net = Cabling::of_tree(&topology).to_ibsim_net(topology.radix(), &title);
    match &args.output {
        Some(path) => std::fs::write(path, net)
            .with_context(|| format!("{}: cannot write", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(net.as_bytes())
            .context("cannot write the net file to stdout")?,
    }
    let cores = topology.switches_at(Level::Core).len();
    eprintln!(
        "{} leaves, {} aggregation switches, {cores} cores, {} hosts",
        topology.num_leaves(),
        topology.num_aggs(),
        topology.num_nodes()
    );
    Ok(())
}
