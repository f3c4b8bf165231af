/*!
Sockets, their memory nodes and the links between them, from the NUMA nodes' CPU packages
and distances. Pure: no I/O.

- A socket is a CPU package (`physical_package_id`). Every NUMA node with CPUs is a memory
  node of the socket of its CPUs, so several nodes of one package (AMD NPS2/NPS4, Intel
  sub-NUMA clustering) are memory nodes of one socket, not sockets of their own. Without
  package ids (an old kernel, a capture without `topology/`), each node with CPUs is taken
  as a socket of its own, with a note.
- A node with memory but no CPUs (GPU memory onlined as NUMA memory, CXL expanders, HBM in
  flat mode) is a memory node of the socket nearest to it by the distance matrix (ACPI SLIT,
  ACPI 6.5 section 5.2.17: the relative cost of reaching a node's memory), ties to the lowest
  package; without distances, of the first socket, with a note.
- Inter-socket links come from the distance matrix: the distance between two sockets is the
  smallest between a node of one and a node of the other; sockets at the smallest of these
  distances are joined directly (a full mesh when all are equal, a ring, the near pairs of
  a 2-hop topology). When that leaves sockets apart, the next distance joins the groups
  still apart, and so on, so the sockets are always connected. Without distances the
  sockets are chained in package order, with a note.
*/

use super::NumaNode;
use serde::Serialize;
use std::collections::BTreeMap;

/// One CPU socket and the NUMA nodes whose memory hangs from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Socket {
    /// Its package id (`physical_package_id`), or the NUMA node id standing for it when
    /// the kernel gives no package ids.
    pub package: u32,
    /// The NUMA nodes of its memory, ascending: its own nodes with CPUs (and memory) and
    /// the CPU-less memory nodes nearest to it.
    pub memory_nodes: Vec<u32>,
}

/// The sockets of a host and how they are joined.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SocketLayout {
    /// By package id.
    pub sockets: Vec<Socket>,
    /// Inter-socket links as (lower package, higher package), ascending.
    pub links: Vec<(u32, u32)>,
    /// NUMA node to socket (package), for every node with CPUs or memory.
    #[serde(skip)]
    node_socket: BTreeMap<u32, u32>,
}

impl SocketLayout {
    /// The socket (package) a NUMA node belongs to; `None` for a node without CPUs or
    /// memory.
    pub fn socket_of_node(&self, node: u32) -> Option<u32> {
        self.node_socket.get(&node).copied()
    }
}

/// The socket layout of `nodes` (sorted by id, as discovery reads them).
pub(crate) fn layout(nodes: &[NumaNode], notes: &mut Vec<String>) -> SocketLayout {
    let mut node_socket = BTreeMap::new();
    let with_cpus: Vec<&NumaNode> = nodes.iter().filter(|n| n.has_cpus()).collect();
    let package_ids_known = with_cpus.iter().any(|n| !n.packages.is_empty());
    // With one such node there is one socket whatever the packages say.
    if with_cpus.len() > 1 && !package_ids_known {
        notes.push(
            "CPU package ids are not in sysfs (cpu*/topology/physical_package_id): each NUMA node with CPUs is taken as one socket"
                .to_string(),
        );
    }
    for n in &with_cpus {
        let package = match n.packages.as_slice() {
            [] if package_ids_known => {
                notes.push(format!(
                    "NUMA node {}'s CPUs report no package: taken as socket cpu{}",
                    n.id, n.id
                ));
                n.id
            }
            [] => n.id,
            [one] => *one,
            [first, ..] => {
                notes.push(format!(
                    "NUMA node {}'s CPUs are in packages {}: modelled as one socket, cpu{first}",
                    n.id,
                    join(&n.packages)
                ));
                *first
            }
        };
        node_socket.insert(n.id, package);
    }
    let mut packages: Vec<u32> = node_socket.values().copied().collect();
    packages.sort_unstable();
    packages.dedup();

    // A host whose nodes report no CPUs (a capture without cpulists) still has a socket.
    if packages.is_empty() {
        if let Some(first) = nodes.first() {
            packages.push(first.id);
            node_socket.insert(first.id, first.id);
        }
    }
    for n in nodes.iter().filter(|n| !n.has_cpus() && n.has_memory()) {
        let package = match nearest_sockets(nodes, n, &node_socket) {
            Some((nearest, distance)) => {
                let tie = match &nearest[1..] {
                    [] => String::new(),
                    others => format!(
                        "; as near to {}: the lowest taken",
                        others
                            .iter()
                            .map(|p| format!("cpu{p}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                notes.push(format!(
                    "NUMA node {} has memory but no CPUs (GPU memory, CXL or HBM): mem{} hangs from cpu{}, the nearest socket (distance {distance}{tie})",
                    n.id, n.id, nearest[0]
                ));
                nearest[0]
            }
            None => {
                notes.push(format!(
                    "NUMA node {} has memory but no CPUs (GPU memory, CXL or HBM) and no distances: mem{} hangs from cpu{}",
                    n.id, n.id, packages[0]
                ));
                packages[0]
            }
        };
        node_socket.insert(n.id, package);
    }

    let sockets: Vec<Socket> = packages
        .iter()
        .map(|&package| Socket {
            package,
            memory_nodes: nodes
                .iter()
                .filter(|n| n.has_memory() && node_socket.get(&n.id) == Some(&package))
                .map(|n| n.id)
                .collect(),
        })
        .collect();
    for s in &sockets {
        let own: Vec<u32> = with_cpus
            .iter()
            .filter(|n| node_socket.get(&n.id) == Some(&s.package))
            .map(|n| n.id)
            .collect();
        if own.len() > 1 {
            notes.push(format!(
                "package {} holds NUMA nodes {} (sub-NUMA clustering or NPS): one socket, cpu{}, with a memory node each",
                s.package,
                join(&own),
                s.package
            ));
        }
    }
    for n in nodes
        .iter()
        .filter(|n| n.has_cpus() && !n.has_memory())
        .map(|n| n.id)
    {
        notes.push(format!(
            "NUMA node {n} has CPUs but no memory: no memory endpoint"
        ));
    }

    let links = socket_links(nodes, &packages, &node_socket, notes);
    SocketLayout {
        sockets,
        links,
        node_socket,
    }
}

/// The sockets nearest to a CPU-less node by its distance row (ascending, several on a
/// tie), with that distance.
fn nearest_sockets(
    nodes: &[NumaNode],
    node: &NumaNode,
    node_socket: &BTreeMap<u32, u32>,
) -> Option<(Vec<u32>, u32)> {
    let row = node.distance.as_ref()?;
    let by_socket: Vec<(u32, u32)> = nodes
        .iter()
        .zip(row)
        .filter(|(n, _)| n.has_cpus())
        .filter_map(|(n, d)| Some((*d, *node_socket.get(&n.id)?)))
        .collect();
    let nearest = by_socket.iter().map(|(d, _)| *d).min()?;
    let mut sockets: Vec<u32> = by_socket
        .iter()
        .filter(|(d, _)| *d == nearest)
        .map(|(_, p)| *p)
        .collect();
    sockets.sort_unstable();
    sockets.dedup();
    Some((sockets, nearest))
}

/// Inter-socket links from the distances (see the module doc), or a chain without them.
fn socket_links(
    nodes: &[NumaNode],
    packages: &[u32],
    node_socket: &BTreeMap<u32, u32>,
    notes: &mut Vec<String>,
) -> Vec<(u32, u32)> {
    if packages.len() < 2 {
        return Vec::new();
    }
    let Some(distances) = socket_distances(nodes, node_socket) else {
        notes.push(
            "NUMA distances are not in sysfs (node*/distance): sockets chained in package order"
                .to_string(),
        );
        return packages.windows(2).map(|p| (p[0], p[1])).collect();
    };
    // `packages` is ascending, so index pairs map to (lower, higher) package pairs in order.
    model::sockets::joined_by_distance(packages.len(), |a, b| {
        distances
            .get(&(packages[a], packages[b]))
            .map(|&d| u64::from(d))
    })
    .into_iter()
    .map(|(a, b)| (packages[a], packages[b]))
    .collect()
}

/// The distance between each pair of sockets (lower package first): the smallest between
/// their nodes with CPUs. `None` when a node with CPUs has no distance row.
fn socket_distances(
    nodes: &[NumaNode],
    node_socket: &BTreeMap<u32, u32>,
) -> Option<BTreeMap<(u32, u32), u32>> {
    let mut out: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    for a in nodes.iter().filter(|n| n.has_cpus()) {
        let row = a.distance.as_ref()?;
        for (b, d) in nodes.iter().zip(row).filter(|(b, _)| b.has_cpus()) {
            let (pa, pb) = (node_socket[&a.id], node_socket[&b.id]);
            if pa < pb {
                let entry = out.entry((pa, pb)).or_insert(*d);
                *entry = (*entry).min(*d);
            }
        }
    }
    Some(out)
}

fn join(ids: &[u32]) -> String {
    ids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn node(id: u32, cpus: &str, packages: &[u32], mem: u64, distance: &[u32]) -> NumaNode {
        NumaNode {
            id,
            cpulist: cpus.into(),
            mem_total_kib: Some(mem),
            distance: (!distance.is_empty()).then(|| distance.to_vec()),
            packages: packages.to_vec(),
        }
    }

    fn sockets(layout: &SocketLayout) -> Vec<(u32, Vec<u32>)> {
        layout
            .sockets
            .iter()
            .map(|s| (s.package, s.memory_nodes.clone()))
            .collect()
    }

    #[test]
    fn four_sockets_at_equal_distance_are_a_full_mesh() {
        let d = [10, 20, 20, 20];
        let nodes: Vec<NumaNode> = (0..4)
            .map(|i| {
                let mut row = d;
                row.rotate_right(i as usize);
                node(i, &format!("{}", i * 10), &[i], 1024, &row)
            })
            .collect();
        let mut notes = Vec::new();
        let l = layout(&nodes, &mut notes);
        assert_eq!(
            sockets(&l),
            [(0, vec![0]), (1, vec![1]), (2, vec![2]), (3, vec![3])]
        );
        assert_eq!(l.links, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn a_ring_links_neighbours_only() {
        // 0-1-2-3-0 at 16, the diagonals at 22.
        let rows = [
            [10, 16, 22, 16],
            [16, 10, 16, 22],
            [22, 16, 10, 16],
            [16, 22, 16, 10],
        ];
        let nodes: Vec<NumaNode> = (0..4)
            .map(|i| node(i, &i.to_string(), &[i], 1, &rows[i as usize]))
            .collect();
        let l = layout(&nodes, &mut Vec::new());
        assert_eq!(l.links, [(0, 1), (0, 3), (1, 2), (2, 3)]);
    }

    #[test]
    fn groups_left_apart_are_joined_at_the_next_distance() {
        // Two pairs at 12, the pairs 30 apart: 0-1 and 2-3, then every pair at 30
        // between the two groups.
        let rows = [
            [10, 12, 30, 30],
            [12, 10, 30, 30],
            [30, 30, 10, 12],
            [30, 30, 12, 10],
        ];
        let nodes: Vec<NumaNode> = (0..4)
            .map(|i| node(i, &i.to_string(), &[i], 1, &rows[i as usize]))
            .collect();
        let l = layout(&nodes, &mut Vec::new());
        assert_eq!(l.links, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
    }

    #[test]
    fn several_nodes_of_one_package_are_memory_nodes_of_one_socket() {
        // NPS2 on two sockets: nodes 0, 1 in package 0, nodes 2, 3 in package 1.
        let rows = [
            [10, 12, 32, 32],
            [12, 10, 32, 32],
            [32, 32, 10, 12],
            [32, 32, 12, 10],
        ];
        let packages = [0, 0, 1, 1];
        let nodes: Vec<NumaNode> = (0..4)
            .map(|i| {
                node(
                    i,
                    &i.to_string(),
                    &[packages[i as usize]],
                    1,
                    &rows[i as usize],
                )
            })
            .collect();
        let mut notes = Vec::new();
        let l = layout(&nodes, &mut notes);
        assert_eq!(sockets(&l), [(0, vec![0, 1]), (1, vec![2, 3])]);
        assert_eq!(l.links, [(0, 1)]);
        assert_eq!(l.socket_of_node(3), Some(1));
        assert_eq!(
            notes,
            [
                "package 0 holds NUMA nodes 0, 1 (sub-NUMA clustering or NPS): one socket, cpu0, with a memory node each",
                "package 1 holds NUMA nodes 2, 3 (sub-NUMA clustering or NPS): one socket, cpu1, with a memory node each",
            ]
        );
    }

    #[test]
    fn cpu_less_memory_hangs_from_the_nearest_socket() {
        // POWER9 with V100 memory onlined: nodes 0 and 8 with CPUs, 252 and 253 GPU memory.
        let nodes = [
            node(0, "0-3", &[0], 1, &[10, 40, 80, 80]),
            node(8, "4-7", &[8], 1, &[40, 10, 80, 80]),
            node(252, "", &[], 16, &[80, 80, 10, 80]),
            node(253, "", &[], 16, &[80, 40, 80, 10]),
        ];
        let mut notes = Vec::new();
        let l = layout(&nodes, &mut notes);
        assert_eq!(sockets(&l), [(0, vec![0, 252]), (8, vec![8, 253])]);
        assert_eq!(l.links, [(0, 8)]);
        assert_eq!(
            notes,
            [
                "NUMA node 252 has memory but no CPUs (GPU memory, CXL or HBM): mem252 hangs from cpu0, the nearest socket (distance 80; as near to cpu8: the lowest taken)",
                "NUMA node 253 has memory but no CPUs (GPU memory, CXL or HBM): mem253 hangs from cpu8, the nearest socket (distance 40)",
            ]
        );
    }

    #[test]
    fn without_packages_or_distances_nodes_are_chained_sockets() {
        let nodes = [
            node(0, "0-1", &[], 1, &[]),
            node(1, "2-3", &[], 1, &[]),
            node(2, "", &[], 0, &[]),
        ];
        let mut notes = Vec::new();
        let l = layout(&nodes, &mut notes);
        assert_eq!(sockets(&l), [(0, vec![0]), (1, vec![1])]);
        assert_eq!(l.links, [(0, 1)]);
        assert_eq!(l.socket_of_node(2), None);
        assert_eq!(
            notes,
            [
                "CPU package ids are not in sysfs (cpu*/topology/physical_package_id): each NUMA node with CPUs is taken as one socket",
                "NUMA distances are not in sysfs (node*/distance): sockets chained in package order",
            ]
        );
    }

    proptest! {
        /// Whatever the distances, every socket is reached and no link is repeated.
        #[test]
        fn the_sockets_are_always_connected(
            n in 2usize..7,
            raw in prop::collection::vec(11u32..40, 49),
        ) {
            let nodes: Vec<NumaNode> = (0..n)
                .map(|i| {
                    let row: Vec<u32> = (0..n)
                        .map(|j| match i.cmp(&j) {
                            std::cmp::Ordering::Equal => 10,
                            std::cmp::Ordering::Less => raw[i * 7 + j],
                            std::cmp::Ordering::Greater => raw[j * 7 + i],
                        })
                        .collect();
                    node(i as u32, &i.to_string(), &[i as u32], 1, &row)
                })
                .collect();
            let l = layout(&nodes, &mut Vec::new());
            let mut reached = vec![0u32];
            while let Some(next) = l.links.iter().find_map(|(a, b)| {
                match (reached.contains(a), reached.contains(b)) {
                    (true, false) => Some(*b),
                    (false, true) => Some(*a),
                    _ => None,
                }
            }) {
                reached.push(next);
            }
            prop_assert_eq!(reached.len(), n);
            let mut dedup = l.links.clone();
            dedup.dedup();
            prop_assert_eq!(dedup.len(), l.links.len());
        }
    }
}
