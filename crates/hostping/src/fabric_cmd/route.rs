//! `hostping fabric route`: the route between two ports as the switches' forwarding tables
//! hold it, or every switch's table (`--dump`), through a umad port
//! (`rdma::subnet::route`). This module opens the port, discovers, and prints.

use super::switches::{open, settings, walk};
use crate::cli::fabric::RouteArgs;
use crate::cli::Format;
use crate::output::Outcome;
use anyhow::{Context, Result};
use rdma::mad::MgmtClass;
use rdma::subnet::route::{dump, locate, trace, Located, TableReader, Traced};
use rdma::subnet::{guid_text, NodeKind};
use std::fmt::Write as _;
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
        Format::Table => render(&traced),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Outcome::found(traced.broken.is_some()))
}

/// A port as `ibtracert` writes it: `ca {0x...} portnum 1 lid 2 "host-1"`.
fn port_text(p: &Located) -> String {
    format!(
        "{} {{{}}} portnum {} lid {} \"{}\"",
        p.kind.word(),
        guid_text(p.port_guid),
        p.port,
        p.lid,
        p.description
    )
}

/// The route as `ibtracert` lays it out: each line the port left by, then the port
/// entered.
fn render(t: &Traced) -> String {
    let mut out = format!("From {}\n", port_text(&t.from));
    let mut left_by = t.from.port;
    for h in &t.hops {
        // A route that starts at a switch enters it by no port.
        if h.in_port != 0 {
            let lid = h.lid.map_or("-".into(), |l| l.to_string());
            let _ = writeln!(
                out,
                "[{left_by}] -> switch {{{}}}[{}] lid {lid} \"{}\"",
                guid_text(h.guid),
                h.in_port,
                h.description
            );
        }
        left_by = h.out_port;
    }
    match &t.broken {
        Some(b) => {
            let _ = writeln!(out, "route broken: {b}");
        }
        None => {
            if t.to.kind != NodeKind::Switch && !t.hops.is_empty() {
                let _ = writeln!(
                    out,
                    "[{left_by}] -> {} {{{}}}[{}] lid {} \"{}\"",
                    t.to.kind.word(),
                    guid_text(t.to.port_guid),
                    t.to.port,
                    t.to.lid,
                    t.to.description
                );
            }
            let _ = writeln!(out, "To {}", port_text(&t.to));
        }
    }
    let _ = writeln!(
        out,
        "{} {} crossed",
        t.hops.len(),
        if t.hops.len() == 1 {
            "switch"
        } else {
            "switches"
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma::subnet::route::{Broken, Hop};

    fn port(kind: NodeKind, guid: u64, port: u8, lid: u16, name: &str) -> Located {
        Located {
            node: guid - u64::from(port),
            kind,
            description: name.into(),
            port,
            port_guid: guid,
            lid,
        }
    }

    fn hop(guid: u64, name: &str, lid: u16, in_port: u8, out_port: u8) -> Hop {
        Hop {
            guid,
            description: name.into(),
            lid: Some(lid),
            in_port,
            out_port,
        }
    }

    #[test]
    fn the_table_reads_like_ibtracert() {
        let t = Traced {
            from: port(NodeKind::Ca, 0x100001, 1, 2, "host-1"),
            to: port(NodeKind::Ca, 0x100007, 1, 6, "host-4"),
            hops: vec![
                hop(0x200000, "leaf-a", 1, 1, 8),
                hop(0x200001, "leaf-b", 3, 8, 2),
            ],
            broken: None,
        };
        assert_eq!(
            render(&t),
            "From ca {0x0000000000100001} portnum 1 lid 2 \"host-1\"\n\
             [1] -> switch {0x0000000000200000}[1] lid 1 \"leaf-a\"\n\
             [8] -> switch {0x0000000000200001}[8] lid 3 \"leaf-b\"\n\
             [2] -> ca {0x0000000000100007}[1] lid 6 \"host-4\"\n\
             To ca {0x0000000000100007} portnum 1 lid 6 \"host-4\"\n\
             2 switches crossed\n"
        );
        let broken = Traced {
            hops: vec![hop(0x200000, "leaf-a", 1, 1, 8)],
            broken: Some(Broken::NoRoute {
                switch: "\"leaf-b\"".into(),
                lid: 6,
            }),
            ..t
        };
        let text = render(&broken);
        assert!(
            text.ends_with(
                "route broken: no route to LID 6 at switch \"leaf-b\": its forwarding table \
                 entry is 0xFF\n1 switch crossed\n"
            ),
            "{text}"
        );
    }
}
