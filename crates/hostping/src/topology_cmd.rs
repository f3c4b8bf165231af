//! `hostping topology`: what discovery found on a real host, or a virtual host's model.

use crate::cli::{Format, TopologyArgs};
use crate::output::{write_stdout, Outcome};
use anyhow::Result;
use check::host::{Host, HostOptions};

/// Runs `hostping topology`.
pub fn run(args: TopologyArgs) -> Result<Outcome> {
    let host = Host::open(&args.host.spec(), HostOptions::default())?;
    // A real host shows what discovery found (devices, bindings, what it could not
    // place); a virtual one its model.
    let text = match (host.discovery(), host.model(), args.format) {
        (Some(d), _, Format::Json) => {
            serde_json::to_string_pretty(&views::discovery_json(d))? + "\n"
        }
        (Some(d), _, Format::Table) => views::discovery(d),
        (None, Some(model), Format::Json) => {
            serde_json::to_string_pretty(&views::topology_json(model))? + "\n"
        }
        (None, Some(model), Format::Table) => views::topology(model),
        (None, None, _) => unreachable!("a virtual host always has a model"),
    };
    write_stdout(&text)?;
    Ok(Outcome::Healthy)
}
