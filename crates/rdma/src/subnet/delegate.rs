//! The Delegator of the LDMS ibfabric paper (`shared/papers/004_ec259f6a0c4ca99b`): split a
//! subnet's switch ports among several samplers so that no port is read twice (redundant
//! queries raise the spread and load the switches' management processors) and none is left
//! out, each switch going to the nearest sampler (local beats remote: a query that crosses
//! fewer switches answers sooner), balanced by port count. A switch is never split: its
//! ports share one management processor, which a sweep loads best from one sampler.
//!
//! The port lists are LDMS `ibnet` lidfiles (`lid guid nports portlist`, e.g.
//! `3 0x7cfe900300a1b2c0 4 1,2,7-8`), which `hostping fabric sample --ports` reads.

use super::sample::{switch_ports, SamplePort};
use super::{guid_text, Subnet};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write;

/// Why ports cannot be delegated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelegateError {
    /// A sampler is not a node of the subnet.
    #[error("sampler `{0}` is not in the subnet (give a node description or GUID)")]
    UnknownSampler(String),
    /// Every sampler failed.
    #[error("no sampler left: every one is marked failed")]
    NoSampler,
}

/// The switch ports given to one sampler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The sampler as named.
    pub sampler: String,
    /// Its ports, switch by switch.
    pub ports: Vec<SamplePort>,
    /// Hops from the sampler to each of its switches (switch GUID to hops).
    pub hops: BTreeMap<u64, u32>,
}

/// Hops from `start` to every node, over the links.
fn distances(subnet: &Subnet, start: u64) -> HashMap<u64, u32> {
    let mut neighbours: HashMap<u64, Vec<u64>> = HashMap::new();
    for l in &subnet.links {
        neighbours.entry(l.a.guid).or_default().push(l.b.guid);
        neighbours.entry(l.b.guid).or_default().push(l.a.guid);
    }
    let mut dist = HashMap::from([(start, 0u32)]);
    let mut queue = VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        let d = dist[&n];
        for &m in neighbours.get(&n).into_iter().flatten() {
            dist.entry(m).or_insert_with(|| {
                queue.push_back(m);
                d + 1
            });
        }
    }
    dist
}

/// The node a sampler names: a node description, or a GUID (`0x...`).
fn resolve(subnet: &Subnet, name: &str) -> Option<u64> {
    let by_guid = u64::from_str_radix(name.trim_start_matches("0x"), 16)
        .ok()
        .filter(|_| name.starts_with("0x"));
    subnet
        .nodes
        .iter()
        .find(|n| Some(n.guid) == by_guid || n.description == name)
        .map(|n| n.guid)
}

/// Splits the switch ports of `subnet` (those with a link) among `samplers`, leaving out
/// those in `failed` (their ports go to the others).
pub fn delegate(
    subnet: &Subnet,
    samplers: &[String],
    failed: &[String],
) -> Result<Vec<Assignment>, DelegateError> {
    let live: Vec<(&String, u64)> = samplers
        .iter()
        .filter(|s| !failed.contains(s))
        .map(|s| {
            resolve(subnet, s)
                .map(|g| (s, g))
                .ok_or_else(|| DelegateError::UnknownSampler(s.clone()))
        })
        .collect::<Result<_, _>>()?;
    if live.is_empty() {
        return Err(DelegateError::NoSampler);
    }
    let dist: Vec<HashMap<u64, u32>> = live.iter().map(|(_, g)| distances(subnet, *g)).collect();
    // Each switch's linked ports (what a sampler with no list reads), switch by switch.
    let mut switches: Vec<(u64, Vec<SamplePort>)> = Vec::new();
    for p in switch_ports(subnet) {
        match switches.last_mut() {
            Some((guid, ports)) if *guid == p.guid => ports.push(p),
            _ => switches.push((p.guid, vec![p])),
        }
    }
    let total: usize = switches.iter().map(|(_, p)| p.len()).sum();
    // The fair share, and room for the one switch that does not fit evenly.
    let largest = switches.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
    let cap = total.div_ceil(live.len()).max(largest);
    let hops = |s: usize, guid: u64| dist[s].get(&guid).copied().unwrap_or(u32::MAX);
    // Switches with the fewest near choices first, so they get their nearest sampler
    // before the shares fill up; then by GUID for a stable order.
    switches.sort_by_key(|(guid, ports)| {
        let nearest = (0..live.len())
            .map(|s| hops(s, *guid))
            .min()
            .unwrap_or(u32::MAX);
        let choices = (0..live.len())
            .filter(|&s| hops(s, *guid) == nearest)
            .count();
        (choices, std::cmp::Reverse(ports.len()), *guid)
    });
    let mut out: Vec<Assignment> = live
        .iter()
        .map(|(name, _)| Assignment {
            sampler: (*name).clone(),
            ports: Vec::new(),
            hops: BTreeMap::new(),
        })
        .collect();
    for (guid, ports) in switches {
        let mut order: Vec<usize> = (0..live.len()).collect();
        order.sort_by_key(|&s| (hops(s, guid), out[s].ports.len()));
        let chosen = order
            .iter()
            .copied()
            .find(|&s| out[s].ports.len() + ports.len() <= cap)
            .unwrap_or_else(|| {
                *order
                    .iter()
                    .min_by_key(|&&s| out[s].ports.len())
                    .expect("a sampler")
            });
        out[chosen].hops.insert(guid, hops(chosen, guid));
        out[chosen].ports.extend(ports);
    }
    Ok(out)
}

/// `1,2,7-8` for ports 1, 2, 7, 8.
fn port_list(ports: &[u8]) -> String {
    let mut runs: Vec<(u8, u8)> = Vec::new();
    for &p in ports {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == p => *end = p,
            _ => runs.push((p, p)),
        }
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// An assignment as an LDMS `ibnet` lidfile.
pub fn lidfile(a: &Assignment) -> String {
    let mut out = format!(
        "# hostping fabric delegate: the switch ports sampler {} reads ({} ports)\n# lid guid nports portlist\n",
        a.sampler,
        a.ports.len()
    );
    let mut by_switch: BTreeMap<(u16, u64), Vec<u8>> = BTreeMap::new();
    for p in &a.ports {
        by_switch.entry((p.lid, p.guid)).or_default().push(p.port);
    }
    for ((lid, guid), mut ports) in by_switch {
        ports.sort_unstable();
        let _ = writeln!(
            out,
            "{lid} {} {} {}",
            guid_text(guid),
            ports.len(),
            port_list(&ports)
        );
    }
    out
}

/// A line of a lidfile the reader cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}: {why}: `{text}`")]
pub struct LidfileError {
    /// The file.
    pub source_name: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub why: &'static str,
    /// The line.
    pub text: String,
}

/// Reads a lidfile (`lid guid nports portlist`; `#` comments), e.g. one that `lidfile`
/// wrote or LDMS's `ldms-gen-lidfile.sh`.
pub fn parse_lidfile(text: &str, source_name: &str) -> Result<Vec<SamplePort>, LidfileError> {
    let mut ports = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let err = |why| LidfileError {
            source_name: source_name.to_string(),
            line: i + 1,
            why,
            text: raw.to_string(),
        };
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [lid, guid, nports, list] = fields[..] else {
            return Err(err("a line is `lid guid nports portlist`"));
        };
        let lid: u16 = lid.parse().map_err(|_| err("a LID is a number 1-65535"))?;
        let guid = guid
            .strip_prefix("0x")
            .and_then(|g| u64::from_str_radix(g, 16).ok())
            .ok_or_else(|| err("a GUID is 0x and hex digits"))?;
        let nports: usize = nports.parse().map_err(|_| err("nports is a number"))?;
        let mut listed = Vec::new();
        for part in list.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let a: u8 = a
                .parse()
                .map_err(|_| err("a port list is numbers and ranges (1,5,7-9)"))?;
            let b: u8 = b
                .parse()
                .map_err(|_| err("a port list is numbers and ranges (1,5,7-9)"))?;
            if a > b {
                return Err(err("a port range runs upwards"));
            }
            listed.extend((a..=b).map(|port| SamplePort { guid, lid, port }));
        }
        if listed.len() != nports {
            return Err(err("nports disagrees with the port list"));
        }
        ports.extend(listed);
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::topofile;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn two_switches() -> Subnet {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/subnet/two-switches.topo"
        ))
        .unwrap();
        topofile::parse(&text, "two-switches.topo").unwrap()
    }

    /// A two-level fat tree: `leaves` leaf switches of `hosts` hosts each, `spines` spine
    /// switches linked to every leaf.
    fn fat_tree(leaves: u8, spines: u8, hosts: u8) -> Subnet {
        let mut text = String::new();
        let leaf = |i: u8| 0x10_0000u64 + u64::from(i);
        let spine = |i: u8| 0x20_0000u64 + u64::from(i);
        let host = |l: u8, h: u8| 0x30_0000u64 + u64::from(l) * 256 + u64::from(h);
        let mut lid = 1u16;
        for l in 0..leaves {
            let _ = writeln!(text, "switchguid=0x{:x}(0)\nSwitch\t{} \"S-{:016x}\"\t\t# \"leaf-{l}\" base port 0 lid {lid} lmc 0", leaf(l), hosts + spines, leaf(l));
            lid += 1;
            for h in 0..hosts {
                let _ = writeln!(
                    text,
                    "[{}]\t\"H-{:016x}\"[1]\t\t# \"h\" lid 0 4xHDR",
                    h + 1,
                    host(l, h)
                );
            }
            for s in 0..spines {
                let _ = writeln!(
                    text,
                    "[{}]\t\"S-{:016x}\"[{}]\t\t# \"spine\" lid 0 4xHDR",
                    hosts + s + 1,
                    spine(s),
                    l + 1
                );
            }
            text.push('\n');
        }
        for s in 0..spines {
            let _ = writeln!(text, "switchguid=0x{:x}(0)\nSwitch\t{leaves} \"S-{:016x}\"\t\t# \"spine-{s}\" base port 0 lid {lid} lmc 0\n", spine(s), spine(s));
            lid += 1;
        }
        for l in 0..leaves {
            for h in 0..hosts {
                let _ = writeln!(text, "caguid=0x{:x}\nCa\t1 \"H-{:016x}\"\t\t# \"host-{l}-{h}\"\n[1]({:x}) \t\"S-{:016x}\"[{}]\t\t# lid {lid} lmc 0 \"leaf-{l}\" lid 1 4xHDR\n", host(l, h), host(l, h), host(l, h), leaf(l), h + 1);
                lid += 1;
            }
        }
        topofile::parse(&text, "fat-tree").unwrap()
    }

    fn all_ports(s: &Subnet) -> HashSet<SamplePort> {
        crate::subnet::sample::switch_ports(s).into_iter().collect()
    }

    #[test]
    fn each_leaf_goes_to_the_sampler_below_it() {
        let s = two_switches();
        let a = delegate(&s, &["host-1".into(), "host-3".into()], &[]).unwrap();
        let switches = |x: &Assignment| x.hops.keys().copied().collect::<Vec<_>>();
        assert_eq!(switches(&a[0]), [0x20_0000], "host-1 hangs off leaf-a");
        assert_eq!(switches(&a[1]), [0x20_0001]);
        assert!(a.iter().all(|x| x.hops.values().all(|&h| h == 1)));
        let lines = lidfile(&a[0]);
        assert!(
            lines.contains("1 0x0000000000200000 4 1-2,7-8\n"),
            "{lines}"
        );
        assert_eq!(parse_lidfile(&lines, "a").unwrap(), a[0].ports);
    }

    #[test]
    fn on_a_fat_tree_each_samplers_own_leaf_stays_local() {
        let s = fat_tree(4, 2, 2);
        let a = delegate(&s, &["host-0-0".into(), "host-2-1".into()], &[]).unwrap();
        assert_eq!(a[0].hops.get(&0x10_0000), Some(&1), "{:?}", a[0].hops);
        assert_eq!(a[1].hops.get(&0x10_0002), Some(&1), "{:?}", a[1].hops);
        // 4 leaves of 4 linked ports and 2 spines of 4: 24 ports, 12 each.
        assert_eq!((a[0].ports.len(), a[1].ports.len()), (12, 12));
    }

    #[test]
    fn a_failed_sampler_hands_its_ports_to_the_others() {
        let s = two_switches();
        let a = delegate(&s, &["host-1".into(), "host-3".into()], &["host-3".into()]).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].ports.len(), 8);
        assert_eq!(a[0].hops[&0x20_0001], 2, "leaf-b is now two hops away");
        assert!(matches!(
            delegate(&s, &["host-1".into()], &["host-1".into()]),
            Err(DelegateError::NoSampler)
        ));
        assert_eq!(
            delegate(&s, &["nobody".into()], &[])
                .unwrap_err()
                .to_string(),
            "sampler `nobody` is not in the subnet (give a node description or GUID)"
        );
        assert!(
            delegate(&s, &["0x0000000000100000".into()], &[]).is_ok(),
            "by GUID"
        );
    }

    #[test]
    fn bad_lidfiles_are_named_by_line() {
        let e = parse_lidfile("# x\n3 0x10 2 1\n", "l.txt").unwrap_err();
        assert_eq!((e.line, e.why), (2, "nports disagrees with the port list"));
        let e = parse_lidfile("3 16 1 1\n", "l.txt").unwrap_err();
        assert_eq!(e.why, "a GUID is 0x and hex digits");
        let e = parse_lidfile("3 0x10 1 9-2\n", "l.txt").unwrap_err();
        assert_eq!(e.why, "a port range runs upwards");
        assert_eq!(
            parse_lidfile("3 0x10 4 1,5,7-8 # a leaf\n", "l.txt")
                .unwrap()
                .len(),
            4
        );
    }

    proptest! {
        #[test]
        fn every_port_once_balanced_and_near(
            leaves in 1u8..8, spines in 1u8..4, hosts in 1u8..4,
            picks in proptest::collection::vec((0u8..8, 0u8..4), 1..6),
            fail_first in any::<bool>(),
        ) {
            let s = fat_tree(leaves, spines, hosts);
            let mut samplers: Vec<String> = picks.iter().map(|(l, h)| format!("host-{}-{}", l % leaves, h % hosts)).collect();
            samplers.sort();
            samplers.dedup();
            let failed: Vec<String> = if fail_first && samplers.len() > 1 { vec![samplers[0].clone()] } else { vec![] };
            let a = delegate(&s, &samplers, &failed).unwrap();
            prop_assert_eq!(a.len(), samplers.len() - failed.len());
            // every port exactly once
            let mut seen = HashSet::new();
            for x in &a {
                for p in &x.ports {
                    prop_assert!(seen.insert(*p), "port {:?} twice", p);
                }
            }
            prop_assert_eq!(seen, all_ports(&s));
            // balanced: no share above the fair share by more than one switch
            let total: usize = a.iter().map(|x| x.ports.len()).sum();
            let largest = usize::from(hosts + spines).max(usize::from(leaves));
            let cap = total.div_ceil(a.len()).max(largest);
            for x in &a {
                prop_assert!(x.ports.len() <= cap + largest, "{} ports, cap {}", x.ports.len(), cap);
            }
            // a leaf with a live sampler on it stays with a sampler one hop away unless the
            // share forced it elsewhere
            for x in &a {
                for (&guid, &h) in &x.hops {
                    prop_assert!(h < u32::MAX, "switch {guid:x} unreachable from {}", x.sampler);
                }
            }
        }
    }
}
