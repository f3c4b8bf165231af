//! A real fabric's topology file as the packet simulator's input: `--topology` of the
//! simulator's commands and a cluster file's `[fabric] topology` name a built-in tree, a
//! TOML file of tree parameters, or an ibnetdiscover topology file (from `ibnetdiscover` or
//! `hostping fabric discover --format ibnetdiscover`). The file is parsed by rdma's
//! reader of the format (`rdma::subnet::topofile`, the same that writes it after a
//! discovery) and handed to [`crate::real_fabric`], which recognises it as the fat tree it
//! is, or, when it is none, simulates it as cabled and routed as opensm's up/down engine
//! routes it; a routes file (`rdma::subnet::route::Dump`) routes it by a subnet manager's
//! tables instead.

use std::path::Path;

use crate::input::InputError;
use crate::real_fabric::{
    RealEnd, RealFabricError, RealLink, RealNode, RealNodeKind, RealSubnet, RouteTables, TreeInput,
};
use crate::topology::{Engine, FatTreeParams, Topology};

use rdma::subnet::route::{Dump, DumpFileError};
use rdma::subnet::topofile::{self, Format, Skipped, TopologyError};
use rdma::subnet::{NodeKind, Subnet};

/// Why `--topology` (or a cluster file's fabric) gives no simulator input; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum TreeInputError {
    /// A file that cannot be read, or a malformed TOML tree.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A file of a kind hostping does not read as a topology (empty, comments only,
    /// `ibnetdiscover -p`, `iblinkinfo`), named for what it is.
    #[error("{file}: {what}; {FORMATS}")]
    NotATopology {
        /// The file.
        file: String,
        /// What it is instead.
        what: &'static str,
    },
    /// A malformed ibnetdiscover file.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A fabric the simulator cannot take, or routes that do not fit it.
    #[error(transparent)]
    RealFabric(#[from] RealFabricError),
    /// A routes file that is not a dump of `fabric route --dump`.
    #[error(transparent)]
    Routes(#[from] DumpFileError),
}

/// The format wanted, for a file that is not one hostping reads.
const FORMATS: &str = "--topology takes a built-in tree (full, tapered, radix8), a fat-tree \
     TOML file (radix, nodes_per_leaf, leaves, leaves_per_pod, aggs_per_pod), or the topology \
     file that `ibnetdiscover > FILE` or `hostping fabric discover --format ibnetdiscover > FILE` \
     writes";

/// A built-in name, a TOML file, or an ibnetdiscover file; a file of another kind (empty,
/// only comments, `ibnetdiscover -p`, `iblinkinfo`) is named for what it is. A real fabric
/// that is no fat tree is simulated as cabled, routed up/down; with `engine`, any fabric (a
/// fat tree too) is simulated as cabled and routed as the subnet manager's engine would;
/// with `routes` (a dump of `fabric route --dump -o FILE`), by the subnet manager's tables.
pub fn read(
    arg: &str,
    engine: Option<Engine>,
    routes: Option<&Path>,
) -> Result<TreeInput, TreeInputError> {
    let input = resolve(arg, engine)?;
    match routes {
        Some(routes) => with_routes(input, routes),
        None => Ok(input),
    }
}

fn resolve(arg: &str, engine: Option<Engine>) -> Result<TreeInput, TreeInputError> {
    let topology = match FatTreeParams::builtin(arg) {
        Some(params) => Topology::new(params).expect("built-in tree is valid"),
        None => {
            let text = InputError::read(Path::new(arg))?;
            let what = match topofile::identify(&text) {
                Format::Topology => return from_ibnetdiscover(arg, &text, engine),
                Format::Other => None,
                Format::Empty => Some("is empty"),
                Format::CommentsOnly => Some(
                    "holds only comments, no topology (what `fabric discover > FILE` leaves \
                     when discovery fails)",
                ),
                // One line per port, named by its port GUID: no node GUID, so neither the
                // nodes' ids nor which ports are one CA's are in it (ibnetdiscover.c,
                // dump_ports_report).
                Format::PortsList => Some(
                    "is a ports list of `ibnetdiscover -p`, which names ports by their port \
                     GUIDs and no node by its own, so its nodes cannot be told apart; run \
                     ibnetdiscover without -p",
                ),
                Format::LinkInfo => Some("is the output of `iblinkinfo`, not a topology file"),
            };
            if let Some(what) = what {
                return Err(TreeInputError::NotATopology {
                    file: arg.to_string(),
                    what,
                });
            }
            Topology::parse(Path::new(arg), &text)?
        }
    };
    Ok(TreeInput::tree(topology, engine)?)
}

/// A real fabric's ibnetdiscover file, read and handed to `fabric` as its subnet; what
/// reading it passed over is noted (a refused fabric's error keeps the notes).
fn from_ibnetdiscover(
    file: &str,
    text: &str,
    engine: Option<Engine>,
) -> Result<TreeInput, TreeInputError> {
    let reading = topofile::read(text, file)?;
    let notes = skipped_note(&reading.skipped).into_iter().collect();
    Ok(TreeInput::real(
        file,
        &real_subnet(&reading.subnet),
        notes,
        engine,
    )?)
}

/// `input` routed by the subnet manager's tables in `file` (`fabric route --dump -o FILE`)
/// instead of the simulator's rules ([`TreeInput::with_routes`]); a tree given by parameters is refused.
fn with_routes(input: TreeInput, file: &Path) -> Result<TreeInput, TreeInputError> {
    let shown = file.display().to_string();
    // A tree given by parameters is refused before the file is read.
    let mut tables = RouteTables::new();
    if input.is_real() {
        let text = InputError::read(file)?;
        let dump = Dump::from_json(&text, &shown)?;
        tables = dump
            .switches
            .into_iter()
            .map(|s| (s.guid, s.routes))
            .collect();
    }
    Ok(input.with_routes(&shown, &tables)?)
}

/// A subnet as `fabric` takes it.
fn real_subnet(subnet: &Subnet) -> RealSubnet {
    let end = |e: rdma::subnet::End| RealEnd {
        guid: e.guid,
        port: e.port,
    };
    RealSubnet {
        nodes: subnet
            .nodes
            .iter()
            .map(|n| RealNode {
                guid: n.guid,
                kind: match n.kind {
                    NodeKind::Switch => RealNodeKind::Switch,
                    NodeKind::Ca => RealNodeKind::Ca,
                    NodeKind::Router => RealNodeKind::Router,
                },
                description: n.description.clone(),
                ports: n.ports,
                device_id: n.device_id,
                lids: n.addressed_ports.iter().map(|a| (a.port, a.lid)).collect(),
            })
            .collect(),
        links: subnet
            .links
            .iter()
            .map(|l| RealLink {
                a: end(l.a),
                b: end(l.b),
                rate: format!("{}{}", l.width, l.speed),
                data_gbps: l.data_gbps(),
            })
            .collect(),
    }
}

/// One note for the lines the reader passed over, naming them (the first few in full).
fn skipped_note(skipped: &[Skipped]) -> Option<String> {
    const SHOWN: usize = 4;
    let first = skipped.first()?;
    let mut note = format!(
        "skipped {} that {} not topology: line {} (`{}`, {})",
        lines(skipped.len()),
        if skipped.len() == 1 { "is" } else { "are" },
        first.line,
        first.text,
        first.kind.words()
    );
    for s in skipped.iter().skip(1).take(SHOWN - 1) {
        note += &format!("; line {} (`{}`, {})", s.line, s.text, s.kind.words());
    }
    if skipped.len() > SHOWN {
        note += &format!("; and {} more", skipped.len() - SHOWN);
    }
    Some(note)
}

/// `1 line`, `3 lines`.
fn lines(n: usize) -> String {
    format!("{n} line{}", if n == 1 { "" } else { "s" })
}
