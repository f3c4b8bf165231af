//! What real fabrics hold besides a tree, as recognition meets it: hosts cabled to spines
//! (UFM, login, storage) are left out rather than making the spine a leaf; a fabric of one
//! switch is the one-level tree it is; the radix is the switches' own, not what the
//! cables use; a missing cable is named and simulated absent; management switches cabled
//! into a three-level tree's cores, or into a two-level tree's spines, are an extra pod, left
//! out, and the tree beside them is recognised.

use fabric::cabling::{Cable, CableEnd, Cabling, Device, NotAFatTree};
use fabric::topology::{FatTreeParams, Topology};

fn end(device: Device, port: u16) -> CableEnd {
    CableEnd { device, port }
}

/// radix8's two-level cousin: 4 leaves of 2 hosts under 2 spines, plus `extra` cables.
fn two_level(extra: &[(Device, u16, Device, u16)], hosts: usize) -> Cabling {
    let mut cabling = Cabling {
        switches: (0..4)
            .map(|l| format!("leaf-{l}"))
            .chain((0..2).map(|s| format!("spine-{s}")))
            .collect(),
        hosts: (0..hosts).map(|h| format!("host-{h}")).collect(),
        cables: Vec::new(),
    };
    for leaf in 0..4 {
        for h in 0..2 {
            cabling.cables.push(Cable {
                a: end(Device::Switch(leaf), h as u16 + 1),
                b: end(Device::Host(leaf * 2 + h), 1),
            });
        }
        for spine in 0..2 {
            cabling.cables.push(Cable {
                a: end(Device::Switch(leaf), 3 + spine as u16),
                b: end(Device::Switch(4 + spine), leaf as u16 + 1),
            });
        }
    }
    for &(a, ap, b, bp) in extra {
        cabling.cables.push(Cable {
            a: end(a, ap),
            b: end(b, bp),
        });
    }
    cabling
}

#[test]
fn a_management_host_on_a_spine_is_left_out_and_the_spine_stays_a_spine() {
    let ufm = (Device::Switch(4), 8, Device::Host(8), 1);
    let cabling = two_level(&[ufm], 9);
    // As it was: the spine with a host is a leaf, cabled to the leaves.
    assert!(matches!(
        cabling.recognize("lab"),
        Err(NotAFatTree::LeafToLeaf { .. })
    ));
    let (compute, left_out) = cabling.without_hosts_above_leaves();
    assert_eq!(left_out, ["host-8"]);
    let found = compute.recognize_with_radix("lab", Some(8)).unwrap();
    let t = &found.topology;
    assert_eq!((t.num_leaves(), t.num_aggs(), t.num_cores()), (4, 2, 0));
    // The header's radix, not the 4 ports the leaves use: 6 node ports a leaf.
    assert_eq!((t.radix(), t.nodes_per_leaf()), (8, 6));
    let cabled: usize = found.node_hosts.iter().filter(|h| h.is_some()).count();
    assert_eq!(cabled, 8);
}

#[test]
fn one_switch_is_a_one_level_tree() {
    let cabling = Cabling {
        switches: vec!["lab switch".into()],
        hosts: vec!["a".into(), "b".into()],
        cables: vec![
            Cable {
                a: end(Device::Switch(0), 3),
                b: end(Device::Host(0), 1),
            },
            Cable {
                a: end(Device::Switch(0), 1),
                b: end(Device::Host(1), 2),
            },
        ],
    };
    // The header's 8 ports: 8 nodes, 6 of them free.
    let found = cabling.recognize_with_radix("lab", Some(8)).unwrap();
    let t = &found.topology;
    assert_eq!((t.num_leaves(), t.num_aggs(), t.num_cores()), (1, 0, 0));
    assert_eq!((t.radix(), t.nodes_per_leaf(), t.num_nodes()), (8, 8, 8));
    assert_eq!(t.diameter(), 1);
    // Hosts in port order: port 1's host is node 0, port 3's node 1.
    assert_eq!(found.node_hosts[0], Some(("b".to_string(), 2)));
    assert_eq!(found.node_hosts[1], Some(("a".to_string(), 1)));
    assert_eq!(found.node_hosts.iter().filter(|h| h.is_none()).count(), 6);
    assert_eq!(&found.fabric_ports[..2], &[1, 3]);
    // Without a header, as many node ports as hosts.
    let bare = cabling.recognize("lab").unwrap();
    assert_eq!(bare.topology.num_nodes(), 2);
    // More hosts than the header's ports is not that switch.
    let e = cabling.recognize_with_radix("lab", Some(1)).unwrap_err();
    assert!(
        matches!(e, NotAFatTree::TooManyHosts { hosts: 2, .. }),
        "{e}"
    );
}

#[test]
fn a_missing_leaf_cable_is_named_and_simulated_absent() {
    let tree = Topology::new(FatTreeParams::radix8()).unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    let at = cabling
        .cables
        .iter()
        .position(|c| {
            matches!(
                (c.a.device, c.b.device),
                (Device::Switch(1), Device::Switch(_))
            )
        })
        .unwrap();
    cabling.cables.remove(at);
    let found = cabling.recognize_with_radix("radix8", Some(8)).unwrap();
    assert_eq!(found.missing_cables.len(), 1);
    assert_eq!(found.missing_cables[0].a, "leaf-1");
    let absent = found.topology.absent_links();
    assert_eq!(absent.len(), 2);
    // The absent link carries no fabric port; every other port keeps its own.
    for index in absent {
        assert_eq!(found.fabric_ports[index as usize], 0);
    }
}

/// A three-level tree of 6 pods (radix 8, 8 cores with 6 pods' links and 2 free ports) with
/// management switches, 2 hosts each, cabled into the cores: `cores_each` cores per switch,
/// in turn.
fn with_management(switches: usize, cores_each: usize) -> (Topology, Cabling) {
    let tree = Topology::new(FatTreeParams {
        name: "pods6".into(),
        radix: 8,
        nodes_per_leaf: 4,
        leaves: 12,
        leaves_per_pod: 2,
        aggs_per_pod: 2,
    })
    .unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    let cores: Vec<usize> = (0..cabling.switches.len())
        .filter(|&s| cabling.switches[s].starts_with("core-"))
        .collect();
    let mut next_port = vec![7u16; cabling.switches.len()];
    for m in 0..switches {
        cabling.switches.push(format!("mgmt-{m}"));
        let s = cabling.switches.len() - 1;
        for h in 0..2 {
            cabling.hosts.push(format!("ufm-{m}-{h}"));
            cabling.cables.push(Cable {
                a: end(Device::Switch(s), h + 1),
                b: end(Device::Host(cabling.hosts.len() - 1), 1),
            });
        }
        for k in 0..cores_each {
            let core = cores[(m * cores_each + k) % cores.len()];
            cabling.cables.push(Cable {
                a: end(Device::Switch(s), k as u16 + 3),
                b: end(Device::Switch(core), next_port[core]),
            });
            next_port[core] += 1;
        }
    }
    (tree, cabling)
}

#[test]
fn management_switches_cabled_into_the_cores_are_an_extra_pod_beside_the_tree() {
    for (switches, cores_each) in [(1, 8), (2, 4), (2, 8), (3, 5)] {
        let (tree, cabling) = with_management(switches, cores_each);
        // As it was: the cores, cabled to a switch with hosts, look like aggregation
        // switches, and the fabric is no fat tree.
        assert!(cabling.recognize("pods6").is_err());
        let (kept, extra) = cabling.without_extra_pods();
        let names: Vec<&str> = extra.iter().map(|(s, _)| s.as_str()).collect();
        let want: Vec<String> = (0..switches).map(|m| format!("mgmt-{m}")).collect();
        assert_eq!(names, want, "{switches} x {cores_each}");
        assert_eq!(extra[0].1, ["ufm-0-0", "ufm-0-1"]);
        let found = kept.recognize_with_radix("pods6", Some(8)).unwrap();
        let t = &found.topology;
        assert_eq!(
            (t.num_pods(), t.num_aggs(), t.num_cores()),
            (tree.num_pods(), tree.num_aggs(), tree.num_cores())
        );
        assert!(found.missing_cables.is_empty());
        assert_eq!(found.node_hosts.iter().flatten().count(), 48);
    }
}

#[test]
fn a_tree_without_an_extra_pod_keeps_every_switch() {
    for tree in [
        Topology::new(FatTreeParams::radix8()).unwrap(),
        with_management(0, 0).0,
    ] {
        let cabling = Cabling::of_tree(&tree);
        let (kept, extra) = cabling.without_extra_pods();
        assert!(extra.is_empty());
        assert_eq!(kept, cabling);
    }
    // A spine's management host is no extra pod: it is left out as a host above the leaves.
    let ufm = (Device::Switch(4), 8, Device::Host(8), 1);
    let cabling = two_level(&[ufm], 9);
    assert!(cabling.without_extra_pods().1.is_empty());
}

/// A two-level tree, 4 leaves of 4 hosts under 4 spines (one cable each, 4 spine ports
/// free), with management switches, 2 hosts each, cabled into the spines in turn: switch
/// `m` to spines `m`, `m + switches`, ... (issue 38, 3).
fn leaf_spine_with_management(switches: usize) -> (Topology, Cabling) {
    let tree = Topology::new(FatTreeParams {
        name: "leafspine".into(),
        radix: 8,
        nodes_per_leaf: 4,
        leaves: 4,
        leaves_per_pod: 4,
        aggs_per_pod: 4,
    })
    .unwrap();
    let mut cabling = Cabling::of_tree(&tree);
    let spines: Vec<usize> = (0..cabling.switches.len())
        .filter(|&s| cabling.switches[s].starts_with("agg-"))
        .collect();
    let mut next_port = vec![5u16; cabling.switches.len()];
    for m in 0..switches {
        cabling.switches.push(format!("mgmt-{m}"));
        let s = cabling.switches.len() - 1;
        for h in 0..2 {
            cabling.hosts.push(format!("ufm-{m}-{h}"));
            cabling.cables.push(Cable {
                a: end(Device::Switch(s), h + 1),
                b: end(Device::Host(cabling.hosts.len() - 1), 1),
            });
        }
        for (k, &spine) in spines.iter().skip(m).step_by(switches).enumerate() {
            cabling.cables.push(Cable {
                a: end(Device::Switch(s), k as u16 + 3),
                b: end(Device::Switch(spine), next_port[spine]),
            });
            next_port[spine] += 1;
        }
    }
    (tree, cabling)
}

#[test]
fn management_switches_cabled_into_the_spines_are_an_extra_pod_beside_the_tree() {
    for switches in [2, 3] {
        let (tree, cabling) = leaf_spine_with_management(switches);
        let (kept, extra) = cabling.without_extra_pods();
        let names: Vec<&str> = extra.iter().map(|(s, _)| s.as_str()).collect();
        let want: Vec<String> = (0..switches).map(|m| format!("mgmt-{m}")).collect();
        assert_eq!(names, want, "{switches} management switches");
        assert_eq!(extra[0].1, ["ufm-0-0", "ufm-0-1"]);
        let found = kept.recognize_with_radix("leafspine", Some(8)).unwrap();
        let t = &found.topology;
        assert_eq!(
            (t.num_leaves(), t.num_aggs(), t.num_cores()),
            (tree.num_leaves(), tree.num_aggs(), 0)
        );
        assert!(found.missing_cables.is_empty());
        assert_eq!(found.node_hosts.iter().flatten().count(), 16);
    }
    // One management switch cabled to every spine, as a leaf is, is a leaf with free ports.
    let (_, cabling) = leaf_spine_with_management(1);
    let (kept, extra) = cabling.without_extra_pods();
    assert!(extra.is_empty(), "{extra:?}");
    let found = kept.recognize_with_radix("leafspine", Some(8)).unwrap();
    assert_eq!(found.topology.num_leaves(), 5);
    // A leaf that lost its one cable to a spine is still a leaf (as many hosts as the
    // others): simulated without the cable, not left out.
    let (_, mut cabling) = leaf_spine_with_management(0);
    let at = cabling
        .cables
        .iter()
        .position(|c| {
            matches!(
                (c.a.device, c.b.device),
                (Device::Switch(1), Device::Switch(_))
            )
        })
        .unwrap();
    cabling.cables.remove(at);
    let (kept, extra) = cabling.without_extra_pods();
    assert!(extra.is_empty(), "{extra:?}");
    assert_eq!(kept, cabling);
}
