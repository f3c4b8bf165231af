//! `--topology` of the simulator's commands: a built-in tree, a TOML file of tree
//! parameters, or a real fabric's ibnetdiscover topology file (from `ibnetdiscover` or
//! `hostping fabric discover --format ibnetdiscover`), read here (`rdma::subnet::topofile`)
//! and handed to `fabric::real_fabric`, which recognises it as the fat tree it is, or, when
//! it is none, simulates it as cabled and routed as opensm's up/down engine routes it;
//! `--routing minhop|updn` routes any of them so, and `--routes` by a subnet manager's
//! tables; and `hostping fabric net`, which writes a tree as an ibsim net file so that the
//! simulator's trees run on ibsim.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use fabric::cabling::Cabling;
use fabric::input::InputError;
use fabric::real_fabric::{
    RealEnd, RealFabricError, RealLink, RealNode, RealNodeKind, RealSubnet, RouteTables, TreeInput,
};
use fabric::topology::{Engine, FatTreeParams, Level, Topology};
use rdma::subnet::route::Dump;
use rdma::subnet::topofile::{self, Format, Skipped};
use rdma::subnet::{NodeKind, Subnet};

use crate::cli::fabric::NetArgs;

/// The format wanted, for a file that is not one hostping reads.
const FORMATS: &str = "--topology takes a built-in tree (full, tapered, radix8), a fat-tree \
     TOML file (radix, nodes_per_leaf, leaves, leaves_per_pod, aggs_per_pod), or the topology \
     file that `ibnetdiscover > FILE` or `hostping fabric discover --format ibnetdiscover > FILE` \
     writes";

/// A built-in name, a TOML file, or an ibnetdiscover file; a file of another kind (empty,
/// only comments, `ibnetdiscover -p`, `iblinkinfo`) is named for what it is. A real fabric
/// that is no fat tree is simulated as cabled, routed up/down.
pub fn resolve(arg: &str) -> Result<TreeInput> {
    resolve_routed(arg, None)
}

/// [`resolve`], simulated as cabled and routed by `engine` when one is given (a fat tree
/// too: its cables, routed as the subnet manager would).
pub fn resolve_routed(arg: &str, engine: Option<Engine>) -> Result<TreeInput> {
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
                Format::PortsList => Some(
                    "is a ports list of `ibnetdiscover -p`, which lacks the switches' port \
                     counts; run ibnetdiscover without -p",
                ),
                Format::LinkInfo => Some("is the output of `iblinkinfo`, not a topology file"),
            };
            if let Some(what) = what {
                bail!("{arg}: {what}; {FORMATS}");
            }
            Topology::parse(Path::new(arg), &text)?
        }
    };
    Ok(TreeInput::tree(topology, engine)?)
}

/// A real fabric's ibnetdiscover file, read and handed to `fabric` as its subnet; what
/// reading it passed over is noted, and still printed when the fabric is refused.
fn from_ibnetdiscover(file: &str, text: &str, engine: Option<Engine>) -> Result<TreeInput> {
    let reading = topofile::read(text, file)?;
    let notes = skipped_note(&reading.skipped).into_iter().collect();
    match TreeInput::real(file, &real_subnet(&reading.subnet), notes, engine) {
        Ok(input) => Ok(input),
        Err(e) => {
            if let RealFabricError::NotSimulable { notes, .. } = &e {
                // What was left out still says what the file holds.
                for note in notes {
                    eprintln!("{file}: note: {note}");
                }
            }
            Err(e.into())
        }
    }
}

/// `input` routed by the subnet manager's tables in `file` (`fabric route --dump -o FILE`)
/// instead of the simulator's rules ([`TreeInput::with_routes`]).
pub fn with_routes(input: TreeInput, file: &Path) -> Result<TreeInput> {
    let shown = file.display().to_string();
    // A tree given by parameters is refused before the file is read.
    let mut tables = RouteTables::new();
    if input.is_real() {
        let text = InputError::read(file)?;
        let dump = Dump::from_json(&text, &shown).map_err(anyhow::Error::msg)?;
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
