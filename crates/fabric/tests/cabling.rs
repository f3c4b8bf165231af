//! A fabric's cables and the simulator's fat trees: every tree's own cabling is recognised as
//! that tree, however its switches, ports and cables are numbered; a fabric that is not one
//! of the simulator's trees is refused with the cable that does not fit; the ibsim net file
//! lists every cable from both ends.

use std::collections::BTreeMap;

use fabric::cabling::{Cable, CableEnd, Cabling, Device, NotAFatTree};
use fabric::topology::{FatTreeParams, Peer, PortRef, SwitchId, Topology};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn two_level_36() -> FatTreeParams {
    FatTreeParams {
        name: "two-level-36".into(),
        radix: 36,
        nodes_per_leaf: 18,
        leaves: 36,
        leaves_per_pod: 36,
        aggs_per_pod: 18,
    }
}

fn trees() -> Vec<FatTreeParams> {
    vec![
        FatTreeParams::full(),
        FatTreeParams::tapered(),
        FatTreeParams::radix8(),
        two_level_36(),
    ]
}

fn same_shape(a: &FatTreeParams, b: &FatTreeParams) -> bool {
    (
        a.radix,
        a.nodes_per_leaf,
        a.leaves,
        a.leaves_per_pod,
        a.aggs_per_pod,
    ) == (
        b.radix,
        b.nodes_per_leaf,
        b.leaves,
        b.leaves_per_pod,
        b.aggs_per_pod,
    )
}

#[test]
fn every_tree_is_recognised_as_itself_with_its_names_and_ports() {
    for params in trees() {
        let tree = Topology::new(params.clone()).unwrap();
        let cabling = Cabling::of_tree(&tree);
        let found = cabling.recognize("from-cables").unwrap();
        assert!(
            same_shape(found.topology.params(), &params),
            "{}",
            params.name
        );
        assert_eq!(found.topology.name(), "from-cables");
        assert_eq!(found.switch_names, cabling.switches, "{}", params.name);
        for (n, host) in found.node_hosts.iter().enumerate() {
            assert_eq!(host.as_ref(), Some(&(format!("node-{n}"), 1)));
        }
        for index in 0..tree.num_ports() {
            let port = tree.port_ref(index as u32);
            assert_eq!(found.fabric_ports[index], port.port + 1, "{}", params.name);
        }
    }
}

/// The cabling of a tree with switches listed in another order, every switch's ports
/// renumbered and the cables shuffled: the same fabric, as a real one would be cabled.
fn scrambled(tree: &Topology, seed: u64) -> Cabling {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cabling = Cabling::of_tree(tree);
    let mut order: Vec<usize> = (0..cabling.switches.len()).collect();
    order.shuffle(&mut rng);
    let mut new_index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let radix = tree.radix() as u16;
    let port_maps: Vec<Vec<u16>> = (0..order.len())
        .map(|_| {
            let mut ports: Vec<u16> = (1..=radix).collect();
            ports.shuffle(&mut rng);
            ports
        })
        .collect();
    let relabel = |end: CableEnd| match end.device {
        Device::Switch(s) => CableEnd {
            device: Device::Switch(new_index[s]),
            port: port_maps[s][usize::from(end.port) - 1],
        },
        Device::Host(_) => end,
    };
    let mut cables: Vec<Cable> = cabling
        .cables
        .iter()
        .map(|c| Cable {
            a: relabel(c.a),
            b: relabel(c.b),
        })
        .collect();
    cables.shuffle(&mut rng);
    Cabling {
        switches: order.iter().map(|&s| cabling.switches[s].clone()).collect(),
        hosts: cabling.hosts.clone(),
        cables,
    }
}

/// Every tree link, named by the recognised fabric ports, is a cable of the fabric.
fn links_are_cables(found: &fabric::cabling::Recognized, cabling: &Cabling) {
    let tree = &found.topology;
    let mut cables: BTreeMap<(String, u16), String> = BTreeMap::new();
    for c in &cabling.cables {
        for (here, far) in [(c.a, c.b), (c.b, c.a)] {
            if let Device::Switch(_) = here.device {
                cables.insert(
                    (cabling.name(here.device).to_string(), here.port),
                    cabling.name(far.device).to_string(),
                );
            }
        }
    }
    for s in 0..tree.num_switches() {
        for port in 0..tree.ports(SwitchId(s)) {
            let at = PortRef {
                switch: SwitchId(s),
                port,
            };
            if tree.is_absent(at) {
                continue;
            }
            let fabric_port = found.fabric_ports[tree.port_index(at) as usize];
            let far = match tree.peer(at) {
                Peer::Node(node) => found.node_hosts[node.0 as usize]
                    .as_ref()
                    .map(|(host, _)| host.clone())
                    .unwrap(),
                Peer::Switch { switch, .. } => found.switch_names[switch.0 as usize].clone(),
            };
            let name = &found.switch_names[s as usize];
            assert_eq!(
                cables.get(&(name.clone(), fabric_port)),
                Some(&far),
                "{name} port {fabric_port}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn scrambled_cabling_is_the_same_tree(seed in any::<u64>(), which in 0usize..3) {
        let params = [FatTreeParams::radix8(), two_level_36(), FatTreeParams::tapered()][which].clone();
        let tree = Topology::new(params.clone()).unwrap();
        let cabling = scrambled(&tree, seed);
        let found = cabling.recognize("x").unwrap();
        prop_assert!(same_shape(found.topology.params(), &params));
        links_are_cables(&found, &cabling);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// A scrambled tree with a few switch-to-switch cables pulled out at random is the same
    /// tree with exactly those links absent (every cable still there is a link of it), or is
    /// refused because some leaf lost its way up.
    #[test]
    fn pulled_cables_are_exactly_the_absent_links(seed in any::<u64>(), pulled in 1usize..6) {
        let params = FatTreeParams::radix8();
        let tree = Topology::new(params.clone()).unwrap();
        let mut cabling = scrambled(&tree, seed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
        let trunks: Vec<usize> = (0..cabling.cables.len())
            .filter(|&c| matches!(
                (cabling.cables[c].a.device, cabling.cables[c].b.device),
                (Device::Switch(_), Device::Switch(_))
            ))
            .collect();
        let mut gone: Vec<usize> = trunks.choose_multiple(&mut rng, pulled).copied().collect();
        gone.sort_unstable();
        for &c in gone.iter().rev() {
            cabling.cables.remove(c);
        }
        match cabling.recognize("x") {
            Ok(found) => {
                prop_assert!(same_shape(found.topology.params(), &params));
                prop_assert_eq!(found.topology.absent_links().len(), 2 * pulled);
                let missing: usize = found.missing_cables.iter().map(|m| m.tree - m.fabric).sum();
                prop_assert_eq!(missing, pulled);
                links_are_cables(&found, &cabling);
            }
            Err(NotAFatTree::Cut { .. } | NotAFatTree::NoUplinks { .. }) => {}
            Err(other) => prop_assert!(false, "{}", other),
        }
    }
}

fn switch(cabling: &Cabling, name: &str) -> usize {
    cabling.switches.iter().position(|s| s == name).unwrap()
}

fn cable_between(cabling: &Cabling, a: &str, b: &str) -> usize {
    let (a, b) = (switch(cabling, a), switch(cabling, b));
    cabling
        .cables
        .iter()
        .position(|c| {
            let ends = [c.a.device, c.b.device];
            ends.contains(&Device::Switch(a)) && ends.contains(&Device::Switch(b))
        })
        .unwrap()
}

#[test]
fn a_leaf_cabled_twice_to_one_spine_is_refused_by_name() {
    let tree = Topology::new(FatTreeParams::radix8()).unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    // leaf-0's cable to agg-0-0 moved to agg-0-1: two to one, none to the other.
    let c = cable_between(&cabling, "leaf-0", "agg-0-0");
    let agg1 = switch(&cabling, "agg-0-1");
    let cable = &mut cabling.cables[c];
    let far = if cable.a.device == Device::Switch(0) {
        &mut cable.b
    } else {
        &mut cable.a
    };
    far.device = Device::Switch(agg1);
    far.port = 99;
    let err = cabling.recognize("x").unwrap_err();
    assert!(
        matches!(&err, NotAFatTree::UnevenUplinks { leaf, .. } if leaf == "leaf-0"),
        "{err}"
    );
    assert!(err.to_string().contains("leaf-0"), "{err}");
}

/// A real fabric runs without a cable that failed or was never plugged: recognised as the
/// tree it is, with that link absent.
#[test]
fn a_missing_core_cable_is_an_absent_link() {
    let tree = Topology::new(FatTreeParams::radix8()).unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    let core = switch(&cabling, "core-0");
    let c = cabling
        .cables
        .iter()
        .position(|c| c.b.device == Device::Switch(core) || c.a.device == Device::Switch(core))
        .unwrap();
    let removed = cabling.cables.remove(c);
    let found = cabling.recognize("x").unwrap();
    assert!(same_shape(
        found.topology.params(),
        &FatTreeParams::radix8()
    ));
    let [missing] = &found.missing_cables[..] else {
        panic!("{:?}", found.missing_cables)
    };
    let other = if removed.a.device == Device::Switch(core) {
        removed.b.device
    } else {
        removed.a.device
    };
    assert_eq!((missing.fabric, missing.tree), (0, 1));
    assert_eq!(
        [missing.a.as_str(), missing.b.as_str()],
        [cabling.name(other), "core-0"]
    );
    assert_eq!(
        missing.to_string(),
        format!("'{}' -- 'core-0' (0 of 1 cables)", cabling.name(other))
    );
    assert_eq!(found.topology.absent_links().len(), 2);
}

/// Two leaves of a pod that share no aggregation switch any more could only meet through a
/// core, a path the tree does not have: refused, naming them.
#[test]
fn leaves_left_without_a_common_switch_are_refused() {
    let tree = Topology::new(FatTreeParams::radix8()).unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    for (leaf, agg) in [
        ("leaf-0", "agg-0-2"),
        ("leaf-0", "agg-0-3"),
        ("leaf-1", "agg-0-0"),
        ("leaf-1", "agg-0-1"),
    ] {
        let c = cable_between(&cabling, leaf, agg);
        cabling.cables.remove(c);
    }
    let err = cabling.recognize("x").unwrap_err();
    assert_eq!(
        err,
        NotAFatTree::Cut {
            from: "leaf-0".into(),
            to: "leaf-1".into(),
            missing: 4
        }
    );
}

#[test]
fn leaves_cabled_together_and_lone_switches_are_refused() {
    let tree = Topology::new(FatTreeParams::radix8()).unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    cabling.cables.push(Cable {
        a: CableEnd {
            device: Device::Switch(0),
            port: 20,
        },
        b: CableEnd {
            device: Device::Switch(1),
            port: 20,
        },
    });
    let err = cabling.recognize("x").unwrap_err();
    assert_eq!(
        err,
        NotAFatTree::LeafToLeaf {
            a: "leaf-0".into(),
            b: "leaf-1".into()
        }
    );

    assert_eq!(
        Cabling::default().recognize("x").unwrap_err(),
        NotAFatTree::NoHosts
    );
}

#[test]
fn a_partly_filled_leaf_leaves_free_nodes() {
    let tree = Topology::new(two_level_36()).unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    // Unplug the last host of leaf-3.
    let host = cabling.hosts.iter().position(|h| h == "node-71").unwrap();
    cabling.cables.retain(|c| c.b.device != Device::Host(host));
    let found = cabling.recognize("x").unwrap();
    assert!(same_shape(found.topology.params(), &two_level_36()));
    assert_eq!(found.node_hosts[71], None);
    assert_eq!(found.node_hosts.iter().filter(|h| h.is_none()).count(), 1);
}

#[test]
fn the_ibsim_net_lists_every_cable_from_both_ends() {
    let tree = Topology::new(FatTreeParams::radix8()).unwrap();
    let cabling = Cabling::of_tree(&tree);
    let net = cabling.to_ibsim_net(8, "radix8");
    let mut device = String::new();
    let mut seen: BTreeMap<(String, u16), (String, u16)> = BTreeMap::new();
    let (mut switches, mut hcas) = (0, 0);
    for line in net.lines() {
        if let Some(rest) = line.strip_prefix("Switch\t8 ") {
            switches += 1;
            device = rest.trim_matches('"').to_string();
        } else if let Some(rest) = line.strip_prefix("Hca\t1 ") {
            hcas += 1;
            device = rest.trim_matches('"').to_string();
        } else if let Some(rest) = line.strip_prefix('[') {
            let (port, rest) = rest.split_once("]\t\"").unwrap();
            let (far, far_port) = rest.split_once("\"[").unwrap();
            seen.insert(
                (device.clone(), port.parse().unwrap()),
                (
                    far.to_string(),
                    far_port.trim_end_matches(']').parse().unwrap(),
                ),
            );
        }
    }
    assert_eq!((switches, hcas), (80, 128));
    assert_eq!(seen.len(), 2 * cabling.cables.len());
    for (here, far) in &seen {
        assert_eq!(seen.get(far), Some(here), "{here:?}");
    }
}
