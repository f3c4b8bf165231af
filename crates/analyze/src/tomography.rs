//! Binary tomography over the loopback matrix: Hostping Algorithm 1, and the groups of links
//! that no set of path statuses can tell apart.
//!
//! Both functions are pure: they see paths only as (RNIC, links, status), so they can be
//! property-tested on any host without a probe run.
//!
//! # Algorithm 1 (Hostping 4.3), as written
//!
//! 1. every link is uncertain, `abnormal_cnt` 0;
//! 2. every link of a normal path is normal;
//! 3. for each abnormal path: its uncertain links become abnormal and record the path's
//!    RNIC; its abnormal links record the RNIC if it is a new one; if all its links are
//!    normal, they all become gray ("some links may be flapping").
//!
//! Uncertain paths take no part. `abnormal_cnt` is the number of distinct RNICs that marked
//! the link. One reading had to be chosen: the paper's line 15 tests "all links normal",
//! which would make a path whose links are normal or already gray (from an earlier gray
//! path) leave its normal links untouched, so the result would depend on path order. Gray
//! links lie on normal paths too, so here "normal or gray" counts as normal. With that, the
//! outcome does not depend on order: a link is normal iff it lies on a normal path and on
//! no gray path; abnormal iff it lies on an abnormal path and no normal one; gray iff it
//! lies on an abnormal path all of whose links lie on normal paths.
//!
//! # Indistinguishable links (beyond the paper)
//!
//! Two links that lie on exactly the same judged (normal or abnormal) paths get the same
//! status and count from any outcome of the run, so tomography cannot tell them apart: on
//! dgx-a100, `gpu1--lsw1` and `lsw1--usw0` lie on exactly the same probed paths. Uncertain
//! paths carry no evidence, so links that differ only by uncertain paths are grouped as
//! well (on amd-2s, `sw0--cpu0` and `mem0--cpu0` differ only by paths to remote memory,
//! which is not affinitive there). Everything downstream works on these groups and a
//! diagnosis names the whole group, never one member at random.
//!
//! A busy RNIC's path is abnormal relative to its best affinitive path (Hostping 4.3): the
//! deficit lies on links of the slow path that the best path does not cross, since a link
//! on both would slow both. So a link on the reference path of an abnormal path does not
//! explain it ([`LinkGroup::explains`]), and links that differ only in that are told apart.

use model::{ComponentId, LinkId, LinkStatus, PathStatus};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One path as Algorithm 1 sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedPath {
    /// The probing RNIC (what `abnormal_cnt` counts).
    pub rnic: ComponentId,
    /// The endpoint, for evidence only.
    pub endpoint: ComponentId,
    /// The links this path may judge. In busy mode, links under an abnormal RNIC's root
    /// port are left out of other RNICs' paths (Hostping 4.3).
    pub links: Vec<LinkId>,
    /// The path status.
    pub status: PathStatus,
    /// The index (into the same path list) of the path this one was judged against, when it
    /// was judged relatively (a busy RNIC's best affinitive path, Hostping 4.3). Algorithm 1
    /// ignores it; a link on that reference path cannot explain this path's deficit, which
    /// the groups and their `explains` take into account.
    pub reference: Option<usize>,
}

/// The status Algorithm 1 gives one link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkVerdict {
    /// The link.
    pub id: LinkId,
    /// Uncertain, normal, abnormal or gray.
    pub status: LinkStatus,
    /// How many distinct RNICs marked it abnormal.
    pub abnormal_cnt: u32,
    /// Those RNICs, sorted.
    pub marked_by: Vec<ComponentId>,
}

/// Runs Algorithm 1 over `paths`; returns one verdict per entry of `links`, in that order.
/// Links of a path that are not in `links` are ignored.
pub fn detect_abnormal_links(paths: &[ObservedPath], links: &[LinkId]) -> Vec<LinkVerdict> {
    let index: HashMap<&LinkId, usize> = links.iter().enumerate().map(|(i, l)| (l, i)).collect();
    let mut status = vec![LinkStatus::Uncertain; links.len()];
    let mut marked_by: Vec<BTreeSet<ComponentId>> = vec![BTreeSet::new(); links.len()];
    let links_of = |p: &ObservedPath| -> Vec<usize> {
        let mut v: Vec<usize> = p
            .links
            .iter()
            .filter_map(|l| index.get(l).copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    // Lines 3-5: links of normal paths are normal.
    for p in paths.iter().filter(|p| p.status == PathStatus::Normal) {
        for i in links_of(p) {
            status[i] = LinkStatus::Normal;
        }
    }
    // Lines 6-17.
    for p in paths.iter().filter(|p| p.status == PathStatus::Abnormal) {
        let on = links_of(p);
        if on.is_empty() {
            continue;
        }
        for &i in &on {
            if status[i] == LinkStatus::Uncertain {
                status[i] = LinkStatus::Abnormal;
            }
        }
        for &i in &on {
            if status[i] == LinkStatus::Abnormal {
                // A set: only a new RNIC increments abnormal_cnt.
                marked_by[i].insert(p.rnic.clone());
            }
        }
        if on
            .iter()
            .all(|&i| matches!(status[i], LinkStatus::Normal | LinkStatus::Gray))
        {
            for &i in &on {
                status[i] = LinkStatus::Gray;
            }
        }
    }
    links
        .iter()
        .zip(status)
        .zip(marked_by)
        .map(|((id, status), by)| LinkVerdict {
            id: id.clone(),
            status,
            abnormal_cnt: by.len() as u32,
            marked_by: by.into_iter().collect(),
        })
        .collect()
}

/// Links that no outcome of the judged paths can tell apart.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkGroup {
    /// The links, in the order of the link list given.
    pub links: Vec<LinkId>,
    /// Indices (into the paths given) of the normal and abnormal paths they lie on, sorted.
    pub judged_paths: Vec<usize>,
    /// The abnormal paths among `judged_paths` that a fault on these links would explain:
    /// all of them, less those judged against a reference path these links also lie on.
    pub explains: Vec<usize>,
    /// True when the links also lie on exactly the same paths counting uncertain ones
    /// ("lie on exactly the same probed paths"); false when only uncertain paths tell them
    /// apart.
    pub same_probed_paths: bool,
}

/// Partitions `links` into groups of links that lie on exactly the same judged paths (and
/// on the reference paths of the same relatively judged abnormal paths). Groups come in the
/// order of their first link.
pub fn indistinguishable_groups(paths: &[ObservedPath], links: &[LinkId]) -> Vec<LinkGroup> {
    let index: HashMap<&LinkId, usize> = links.iter().enumerate().map(|(i, l)| (l, i)).collect();
    let mut judged: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); links.len()];
    let mut all: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); links.len()];
    let mut excused: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); links.len()];
    for (j, p) in paths.iter().enumerate() {
        for l in &p.links {
            if let Some(&i) = index.get(l) {
                all[i].insert(j);
                if p.status != PathStatus::Uncertain {
                    judged[i].insert(j);
                }
            }
        }
        if p.status == PathStatus::Abnormal {
            if let Some(reference) = p.reference.and_then(|k| paths.get(k)) {
                for l in &reference.links {
                    if let Some(&i) = index.get(l) {
                        excused[i].insert(j);
                    }
                }
            }
        }
    }
    let mut by_key: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut first_of: HashMap<(&BTreeSet<usize>, &BTreeSet<usize>), usize> = HashMap::new();
    for i in 0..links.len() {
        let first = *first_of.entry((&judged[i], &excused[i])).or_insert(i);
        by_key.entry(first).or_default().push(i);
    }
    by_key
        .into_values()
        .map(|members| {
            let first = members[0];
            LinkGroup {
                same_probed_paths: members.iter().all(|&i| all[i] == all[first]),
                judged_paths: judged[first].iter().copied().collect(),
                explains: judged[first]
                    .iter()
                    .copied()
                    .filter(|&j| {
                        paths[j].status == PathStatus::Abnormal && !excused[first].contains(&j)
                    })
                    .collect(),
                links: members.into_iter().map(|i| links[i].clone()).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(rnic: &str, links: &[&str], status: PathStatus) -> ObservedPath {
        ObservedPath {
            rnic: rnic.into(),
            endpoint: "mem0".into(),
            links: links.iter().map(|l| LinkId::from(*l)).collect(),
            status,
            reference: None,
        }
    }

    fn ids(v: &[&str]) -> Vec<LinkId> {
        v.iter().map(|l| LinkId::from(*l)).collect()
    }

    #[test]
    fn algorithm_1_marks_normal_abnormal_and_gray() {
        use LinkStatus::*;
        use PathStatus as P;
        let links = ids(&["a", "b", "c", "d", "e", "f"]);
        let paths = [
            p("r0", &["a", "b"], P::Normal),
            p("r0", &["a", "c"], P::Abnormal),
            p("r1", &["d", "c"], P::Abnormal),
            p("r1", &["c"], P::Abnormal),
            p("r2", &["b", "a"], P::Abnormal),
            p("r2", &["f"], P::Uncertain),
        ];
        let v = detect_abnormal_links(&paths, &links);
        let got: Vec<_> = v.iter().map(|v| (v.status, v.abnormal_cnt)).collect();
        assert_eq!(
            got,
            [
                (Gray, 0),
                (Gray, 0),
                (Abnormal, 2),
                (Abnormal, 1),
                (Uncertain, 0),
                (Uncertain, 0)
            ]
        );
        assert_eq!(
            v[2].marked_by,
            ["r0".into(), "r1".into()] as [ComponentId; 2]
        );
    }

    #[test]
    fn a_path_on_normal_and_gray_links_is_gray_whatever_the_order() {
        use PathStatus as P;
        let links = ids(&["a", "b", "c"]);
        let mut paths = vec![
            p("r0", &["a"], P::Normal),
            p("r0", &["b"], P::Normal),
            p("r0", &["c"], P::Normal),
            p("r1", &["a", "b"], P::Abnormal),
            p("r1", &["b", "c"], P::Abnormal),
        ];
        let forward = detect_abnormal_links(&paths, &links);
        paths.swap(3, 4);
        let backward = detect_abnormal_links(&paths, &links);
        assert_eq!(forward, backward);
        assert!(forward.iter().all(|v| v.status == LinkStatus::Gray));
    }

    #[test]
    fn dgx_gpu1_and_its_leaf_uplink_are_one_group() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let links: Vec<LinkId> = host.links().iter().map(|l| l.id.clone()).collect();
        let paths: Vec<ObservedPath> = host
            .paths()
            .iter()
            .map(|q| ObservedPath {
                rnic: q.rnic.clone(),
                endpoint: q.endpoint.clone(),
                links: q.links.clone(),
                status: PathStatus::Normal,
                reference: None,
            })
            .collect();
        let groups = indistinguishable_groups(&paths, &links);
        let multi: Vec<Vec<String>> = groups
            .iter()
            .filter(|g| g.links.len() > 1)
            .map(|g| g.links.iter().map(|l| l.to_string()).collect())
            .collect();
        assert_eq!(
            multi,
            [
                ["lsw1--usw0", "gpu1--lsw1"],
                ["lsw3--usw1", "gpu3--lsw3"],
                ["lsw5--usw2", "gpu5--lsw5"],
                ["lsw7--usw3", "gpu7--lsw7"]
            ]
        );
        assert!(groups.iter().all(|g| g.same_probed_paths));
        assert_eq!(
            groups.iter().map(|g| g.links.len()).sum::<usize>(),
            links.len()
        );
    }

    #[test]
    fn links_told_apart_only_by_uncertain_paths_are_grouped_and_flagged() {
        use PathStatus as P;
        let links = ids(&["a", "b"]);
        let paths = [
            p("r0", &["a", "b"], P::Abnormal),
            p("r1", &["b"], P::Uncertain),
        ];
        let groups = indistinguishable_groups(&paths, &links);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].links, links);
        assert_eq!(groups[0].judged_paths, [0]);
        assert_eq!(groups[0].explains, [0]);
        assert!(!groups[0].same_probed_paths);
    }

    #[test]
    fn a_link_on_the_reference_path_does_not_explain_a_relative_deficit() {
        use PathStatus as P;
        // r0 is busy: its path over [a, c] is 30 % below its path over [a, b].
        let links = ids(&["a", "b", "c"]);
        let mut slow = p("r0", &["a", "c"], P::Abnormal);
        slow.reference = Some(1);
        let paths = [slow, p("r0", &["a", "b"], P::Uncertain)];
        let v = detect_abnormal_links(&paths, &links);
        assert_eq!(
            v[0].status,
            LinkStatus::Abnormal,
            "Algorithm 1 ignores the reference"
        );
        let groups = indistinguishable_groups(&paths, &links);
        let got: Vec<(Vec<LinkId>, Vec<usize>)> = groups
            .iter()
            .map(|g| (g.links.clone(), g.explains.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (ids(&["a"]), vec![]),
                (ids(&["b"]), vec![]),
                (ids(&["c"]), vec![0])
            ]
        );
    }
}
