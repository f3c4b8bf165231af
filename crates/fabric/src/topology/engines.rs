//! opensm's two deterministic routing engines on a graph of switches, as its sources compute
//! them (opensm 3.3, `osm_ucast_mgr.c` for min-hop, `osm_ucast_updn.c` for up/down):
//!
//! - **min-hop** (`-R minhop`, opensm's default): every switch sends a destination out of a
//!   port on a shortest path to it;
//! - **up/down** (`-R updn`): switches are ranked by their hop distance to a set of roots
//!   (rank 0), and a route may go up (towards a lower rank, or at equal rank towards the
//!   smaller GUID) and then only down: no route turns from down to up, which breaks every
//!   cycle of channel dependencies and so makes the routing deadlock free on rings and meshes
//!   as well as on trees. Without a root file opensm finds the roots from the min-hop tables;
//!   of those it finds, the top rank are the roots here ([`Links::roots`]); where none
//!   qualifies opensm disables up/down and routes min-hop instead.
//!
//! This module answers, for one destination switch, which links of every switch lead on
//! (the candidates); [`super::graph`] picks among them as opensm balances.

use std::collections::VecDeque;

/// A switch graph as the engines see it.
pub(super) struct Links {
    /// Per switch: the far switch of each of its cables to another switch, in the order of
    /// its ports (parallel cables appear once each).
    pub far: Vec<Vec<u32>>,
    /// Per switch: the hosts (channel adapters) cabled to it.
    pub hosts: Vec<u32>,
    /// Per switch: its GUID (any distinct numbers for a fabric without them); up/down breaks
    /// ties between equal ranks by it.
    pub ids: Vec<u64>,
}

/// No path.
pub(super) const UNREACHED: u16 = u16::MAX;

impl Links {
    fn switches(&self) -> usize {
        self.far.len()
    }

    /// Hops between every pair of switches, at `a * switches + b` ([`UNREACHED`] where the
    /// graph is in pieces): a breadth-first search from each.
    pub fn distances(&self) -> Vec<u16> {
        let n = self.switches();
        let mut dist = vec![UNREACHED; n * n];
        let mut queue = VecDeque::new();
        for from in 0..n {
            let row = &mut dist[from * n..(from + 1) * n];
            row[from] = 0;
            queue.push_back(from as u32);
            while let Some(s) = queue.pop_front() {
                let next = row[s as usize] + 1;
                for &t in &self.far[s as usize] {
                    if row[t as usize] == UNREACHED {
                        row[t as usize] = next;
                        queue.push_back(t);
                    }
                }
            }
        }
        dist
    }

    /// The up/down roots, found without a root file as opensm finds them, at the top rank.
    ///
    /// opensm's test (`updn_find_root_nodes_by_min_hop`, opensm/osm_ucast_updn.c): count
    /// the hosts by their hop distance from the switch (at the switch they hang from); the
    /// switch qualifies when one distance holds more than 90 % of all hosts and no other
    /// holds more than 5 %. A fat tree's cores qualify, and a ring or a mesh usually has no
    /// switch that does. But on a fat tree of more than 20 pods a pod holds under 5 % of the
    /// hosts, so its aggregation switches and leaves qualify too (they see their own pod
    /// near and the rest, over 90 %, farther), and up/down with nearly every switch a root
    /// is no up/down at all. So of the switches that qualify only the top rank are roots, as
    /// opensm's fat-tree engine roots a tree at the rank farthest from the CAs' leaves
    /// (`fabric_rank_from_hcas`, opensm/osm_ucast_ftree.c): the switches that see the bulk
    /// of the hosts at the fewest hops, the cores, from which every leaf is equally far.
    /// The switches below them, and management switches cabled into the cores (an extra
    /// pod), see the bulk one hop or more farther. Where the top rank leaves a switch
    /// without an up/down path to a switch with hosts (two management switches cabled to
    /// different cores), the next ranks join the roots until none is left without.
    pub fn roots(&self, dist: &[u16]) -> Vec<u32> {
        let n = self.switches();
        let hosts: u32 = self.hosts.iter().sum();
        let (thd1, thd2) = (f64::from(hosts) * 0.9, f64::from(hosts) * 0.05);
        // Each switch that passes opensm's test, with the distance of its 90 % bar.
        let mut qualified: Vec<(usize, u32)> = (0..n)
            .filter_map(|s| {
                let mut bars: Vec<u32> = Vec::new();
                for (t, &h) in self.hosts.iter().enumerate().filter(|(_, &h)| h > 0) {
                    let d = dist[s * n + t];
                    if d == UNREACHED {
                        continue;
                    }
                    if bars.len() <= usize::from(d) {
                        bars.resize(usize::from(d) + 1, 0);
                    }
                    bars[usize::from(d)] += h;
                }
                let over = |thd: f64| bars.iter().filter(|&&b| f64::from(b) > thd).count();
                let bulk = bars.iter().position(|&b| f64::from(b) > thd1)?;
                (over(thd1) == 1 && over(thd2) == 1).then_some((bulk, s as u32))
            })
            .collect();
        qualified.sort_unstable();
        let mut roots = Vec::new();
        for rank in qualified.chunk_by(|a, b| a.0 == b.0) {
            roots.extend(rank.iter().map(|&(_, s)| s));
            let rank = self.ranks(&roots, dist);
            let mut with_hosts = (0..n).filter(|&t| self.hosts[t] > 0);
            if with_hosts.all(|dst| self.updn(&rank, dst as u32).is_ok()) {
                break;
            }
        }
        roots.sort_unstable();
        roots
    }

    /// Each switch's rank: hops to the nearest root (`updn_subn_rank`); 0 for every switch
    /// when there are no roots.
    pub fn ranks(&self, roots: &[u32], dist: &[u16]) -> Vec<u32> {
        let n = self.switches();
        (0..n)
            .map(|s| {
                roots
                    .iter()
                    .map(|&r| u32::from(dist[r as usize * n + s]))
                    .min()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// Whether a move from switch `a` to its neighbour `b` goes up (`updn_get_dir`): towards
    /// a lower rank; at equal rank towards the smaller GUID; between two roots up both ways
    /// (opensm's rule for roots cabled to each other).
    pub fn goes_up(&self, rank: &[u32], a: u32, b: u32) -> bool {
        let (ra, rb) = (rank[a as usize], rank[b as usize]);
        if ra == 0 && rb == 0 {
            return true;
        }
        ra > rb || (ra == rb && self.ids[a as usize] > self.ids[b as usize])
    }

    /// Min-hop: per switch, which of its links (indexes into [`Links::far`]) lie on a
    /// shortest path to switch `dst`; empty at `dst` itself.
    pub fn minhop(&self, dist: &[u16], dst: u32) -> Vec<Vec<usize>> {
        let n = self.switches();
        let to_dst = |s: u32| dist[s as usize * n + dst as usize];
        (0..n as u32)
            .map(|s| {
                let here = to_dst(s);
                self.far[s as usize]
                    .iter()
                    .enumerate()
                    .filter(|&(_, &t)| s != dst && to_dst(t).wrapping_add(1) == here)
                    .map(|(k, _)| k)
                    .collect()
            })
            .collect()
    }

    /// Up/down: per switch, which of its links lead to switch `dst` on a shortest up*-down*
    /// path, with one rule per switch so that a destination-based table never turns a
    /// packet from down to up: a switch that reaches `dst` going only down takes its
    /// shortest way down; any other goes up, on the shortest way to a switch that does.
    /// `Err(switch)` when some switch has no up/down path to `dst`.
    pub fn updn(&self, rank: &[u32], dst: u32) -> Result<Vec<Vec<usize>>, u32> {
        let n = self.switches();
        // Hops going only down to `dst`: a breadth-first search back from it.
        let mut down = vec![UNREACHED; n];
        down[dst as usize] = 0;
        let mut queue = VecDeque::from([dst]);
        while let Some(t) = queue.pop_front() {
            for &s in &self.far[t as usize] {
                if down[s as usize] == UNREACHED && !self.goes_up(rank, s, t) {
                    down[s as usize] = down[t as usize] + 1;
                    queue.push_back(s);
                }
            }
        }
        // Hops up to the nearest switch that goes down, and on from there (Dial's buckets:
        // the down region starts at its own distances).
        let mut total = down.clone();
        let mut buckets: Vec<Vec<u32>> = Vec::new();
        for (s, &d) in down.iter().enumerate().filter(|(_, &d)| d != UNREACHED) {
            if buckets.len() <= usize::from(d) {
                buckets.resize(usize::from(d) + 1, Vec::new());
            }
            buckets[usize::from(d)].push(s as u32);
        }
        let mut at = 0;
        while at < buckets.len() {
            let here = std::mem::take(&mut buckets[at]);
            for t in here {
                if usize::from(total[t as usize]) != at {
                    continue;
                }
                for &s in &self.far[t as usize] {
                    let via = total[t as usize] + 1;
                    if down[s as usize] == UNREACHED
                        && self.goes_up(rank, s, t)
                        && via < total[s as usize]
                    {
                        total[s as usize] = via;
                        if buckets.len() <= usize::from(via) {
                            buckets.resize(usize::from(via) + 1, Vec::new());
                        }
                        buckets[usize::from(via)].push(s);
                    }
                }
            }
            at += 1;
        }
        if let Some(s) = total.iter().position(|&d| d == UNREACHED) {
            return Err(s as u32);
        }
        Ok((0..n as u32)
            .map(|s| {
                let going_down = down[s as usize] != UNREACHED;
                let (dist, up) = if going_down {
                    (&down, false)
                } else {
                    (&total, true)
                };
                self.far[s as usize]
                    .iter()
                    .enumerate()
                    .filter(|&(_, &t)| {
                        s != dst
                            && self.goes_up(rank, s, t) == up
                            && dist[t as usize].wrapping_add(1) == dist[s as usize]
                    })
                    .map(|(k, _)| k)
                    .collect()
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn links(n: usize, cables: &[(usize, usize)], hosts: Vec<u32>) -> Links {
        let mut far = vec![Vec::new(); n];
        for &(a, b) in cables {
            far[a].push(b as u32);
            far[b].push(a as u32);
        }
        Links {
            far,
            hosts,
            ids: (1..=n as u64).collect(),
        }
    }

    /// Walks from `from` to `dst` taking candidate `pick` (modulo their number) at every
    /// switch: the switches visited, or `None` if the walk loops or stops.
    fn walk(
        l: &Links,
        routes: &[Vec<usize>],
        from: u32,
        dst: u32,
        pick: usize,
    ) -> Option<Vec<u32>> {
        let mut path = vec![from];
        while *path.last()? != dst {
            let s = *path.last()?;
            let leads = &routes[s as usize];
            let next = l.far[s as usize][*leads.get(pick % leads.len().max(1))?];
            if path.contains(&next) {
                return None;
            }
            path.push(next);
        }
        Some(path)
    }

    #[test]
    fn a_fat_trees_spines_are_its_roots_and_a_rings_switches_are_not() {
        // Two leaves with 8 hosts each under two spines.
        let tree = links(4, &[(0, 2), (0, 3), (1, 2), (1, 3)], vec![8, 8, 0, 0]);
        assert_eq!(tree.roots(&tree.distances()), [2, 3]);
        let ring = links(4, &[(0, 1), (1, 2), (2, 3), (3, 0)], vec![2; 4]);
        assert!(ring.roots(&ring.distances()).is_empty());
    }

    #[test]
    fn equal_ranks_go_up_towards_the_smaller_guid_and_roots_up_both_ways() {
        let l = links(3, &[(0, 1), (1, 2)], vec![1; 3]);
        let rank = [0, 0, 1];
        assert!(l.goes_up(&rank, 0, 1) && l.goes_up(&rank, 1, 0));
        assert!(l.goes_up(&rank, 2, 1) && !l.goes_up(&rank, 1, 2));
        let rank = [1, 1, 0];
        assert!(l.goes_up(&rank, 1, 0) && !l.goes_up(&rank, 0, 1));
    }

    fn connected() -> impl Strategy<Value = (usize, Vec<(usize, usize)>)> {
        (2usize..12).prop_flat_map(|n| {
            (
                Just(n),
                proptest::collection::vec(0usize..1000, n - 1),
                proptest::collection::vec((0..n, 0..n), 0..3 * n),
            )
                .prop_map(|(n, parents, extra)| {
                    let mut cables: Vec<(usize, usize)> = parents
                        .iter()
                        .enumerate()
                        .map(|(i, &p)| (i + 1, p % (i + 1)))
                        .collect();
                    cables.extend(extra.into_iter().filter(|(a, b)| a != b));
                    (n, cables)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Whichever shortest-path link a switch takes, the walk reaches the destination in
        /// exactly the distance.
        #[test]
        fn minhop_walks_are_shortest((n, cables) in connected(), pick in 0usize..4) {
            let l = links(n, &cables, vec![1; n]);
            let dist = l.distances();
            for dst in 0..n as u32 {
                let routes = l.minhop(&dist, dst);
                for from in 0..n as u32 {
                    let path = walk(&l, &routes, from, dst, pick).expect("reaches");
                    prop_assert_eq!(path.len() - 1, usize::from(dist[from as usize * n + dst as usize]));
                }
            }
        }

        /// With one root every switch reaches every other up then down; no walk turns from
        /// down to up, and none is shorter than the shortest path.
        #[test]
        fn updn_walks_go_up_then_down((n, cables) in connected(), root in 0usize..12, pick in 0usize..4) {
            let l = links(n, &cables, vec![1; n]);
            let dist = l.distances();
            let rank = l.ranks(&[(root % n) as u32], &dist);
            for dst in 0..n as u32 {
                let routes = l.updn(&rank, dst).expect("one root reaches every switch");
                for from in 0..n as u32 {
                    let path = walk(&l, &routes, from, dst, pick).expect("reaches without a loop");
                    let ups: Vec<bool> = path.windows(2).map(|w| l.goes_up(&rank, w[0], w[1])).collect();
                    prop_assert!(!ups.windows(2).any(|w| !w[0] && w[1]), "down then up: {:?}", path);
                    prop_assert!(path.len() > usize::from(dist[from as usize * n + dst as usize]));
                }
            }
        }
    }
}
