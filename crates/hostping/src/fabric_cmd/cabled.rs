//! `--topology` of the simulator's commands: a built-in tree, a TOML file of tree
//! parameters, or a real fabric's ibnetdiscover topology file (from `ibnetdiscover` or
//! `hostping fabric discover --format ibnetdiscover`), which is recognised as the fat tree it
//! is (`fabric::cabling`) so that a real fabric can be simulated; and `hostping fabric net`,
//! which writes a tree as an ibsim net file so that the simulator's trees run on ibsim.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use fabric::cabling::{Cable, CableEnd, Cabling, Device};
use fabric::input::InputError;
use fabric::summary::FabricOrigin;
use fabric::topology::{FatTreeParams, Level, Topology};
use rdma::subnet::{guid_text, topofile, NodeKind, Subnet};

use crate::cli::fabric::NetArgs;

/// The tree to simulate, and the real fabric it stands for when it came from one.
pub struct TreeInput {
    pub topology: Topology,
    pub fabric: Option<FabricOrigin>,
}

impl TreeInput {
    /// A built-in name, a TOML file, or an ibnetdiscover file (recognised by its
    /// `switchguid=` / `Switch` lines).
    pub fn resolve(arg: &str) -> Result<TreeInput> {
        let topology = match FatTreeParams::builtin(arg) {
            Some(params) => Topology::new(params).expect("built-in tree is valid"),
            None => {
                let text = InputError::read(Path::new(arg))?;
                if is_ibnetdiscover(&text) {
                    return Self::from_ibnetdiscover(arg, &text);
                }
                Topology::parse(Path::new(arg), &text)?
            }
        };
        Ok(TreeInput {
            topology,
            fabric: None,
        })
    }

    fn from_ibnetdiscover(file: &str, text: &str) -> Result<TreeInput> {
        let subnet = topofile::parse(text, file)?;
        let name = Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
        let recognized = cabling_of(&subnet)
            .recognize(&name)
            .with_context(|| format!("{file}: not a fat tree the simulator models"))?;
        let fabric = FabricOrigin::of(file, &recognized);
        Ok(TreeInput {
            topology: recognized.topology,
            fabric: Some(fabric),
        })
    }

    /// One line on what was recognised, for stderr; `None` for a tree given by parameters.
    pub fn describe(&self) -> Option<String> {
        let fabric = self.fabric.as_ref()?;
        let t = &self.topology;
        let shape = if t.num_cores() == 0 {
            format!(
                "a two-level fat tree: {} leaves ({} node ports each) under {} spines",
                t.num_leaves(),
                t.nodes_per_leaf(),
                t.num_aggs()
            )
        } else {
            format!(
                "a three-level fat tree: {} leaves ({} node ports each) and {} aggregation \
                 switches in {} pods under {} cores",
                t.num_leaves(),
                t.nodes_per_leaf(),
                t.num_aggs(),
                t.num_pods(),
                t.num_cores()
            )
        };
        let mut line = format!("{}: {shape}; radix {}", fabric.file, t.radix());
        if !fabric.free_nodes.is_empty() {
            line += &format!(
                "; {} of its {} nodes have no host cabled and idle unless mapped",
                fabric.free_nodes.len(),
                t.num_nodes()
            );
        }
        Some(line)
    }
}

fn is_ibnetdiscover(text: &str) -> bool {
    text.lines().any(|line| {
        line.starts_with("switchguid=")
            || line.starts_with("Switch\t")
            || line.starts_with("caguid=")
    })
}

/// A subnet's switches and channel adapters as cables, named by node description (with the
/// GUID where two share one, as every unconfigured switch of a vendor does).
fn cabling_of(subnet: &Subnet) -> Cabling {
    let name = |guid: u64, description: &str| {
        let shared = subnet
            .nodes
            .iter()
            .filter(|n| n.description == description)
            .count()
            > 1;
        if description.is_empty() || shared {
            format!("{description} ({})", guid_text(guid))
                .trim()
                .to_string()
        } else {
            description.to_string()
        }
    };
    let mut cabling = Cabling::default();
    let mut device = std::collections::HashMap::new();
    for node in &subnet.nodes {
        let named = name(node.guid, &node.description);
        let d = match node.kind {
            NodeKind::Switch => {
                cabling.switches.push(named);
                Device::Switch(cabling.switches.len() - 1)
            }
            // A router is an end of the tree for the simulator, as a host is.
            NodeKind::Ca | NodeKind::Router => {
                cabling.hosts.push(named);
                Device::Host(cabling.hosts.len() - 1)
            }
        };
        device.insert(node.guid, d);
    }
    for link in &subnet.links {
        let end = |e: rdma::subnet::End| {
            device.get(&e.guid).map(|&d| CableEnd {
                device: d,
                port: u16::from(e.port),
            })
        };
        if let (Some(a), Some(b)) = (end(link.a), end(link.b)) {
            cabling.cables.push(Cable { a, b });
        }
    }
    cabling
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
