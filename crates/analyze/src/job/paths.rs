//! One tomography over the whole path of every pair (issue 28): each host's job paths as its
//! own loopback judged them, and each pair's network part over the cables it crossed, in one
//! run of Algorithm 1 (Hostping 4.3, `crate::tomography`), then a minimal cover of the
//! abnormal observations by groups of elements no judged observation tells apart.
//!
//! Elements are a host's job path (`node001:rnic0->gpu0`: inside it, the host's own check
//! names the link) and a cable (`leaf2/9`). A half-width PCIe link on a host shows on that
//! host's loopback and on the host part of its pairs; a corrupting leaf port on the network
//! parts of the pairs crossing it and nowhere else; both at once need two elements.

use std::collections::{BTreeMap, BTreeSet};

use model::job::{JobPair, NotJudgedItem};
use model::pair::PartStatus;
use model::{ComponentId, LinkId, LinkStatus, PathStatus};

use crate::job::direction;
use crate::job::hosts::Segment;
use crate::tomography::{self, ObservedPath};

/// What one observation saw.
#[derive(Clone, Debug)]
pub struct Observation {
    /// In words: `node001 loopback rnic0->gpu0`, `network node001/rnic0->node009/rnic0`.
    pub what: String,
    /// The elements it crosses.
    pub elements: Vec<String>,
    /// Its status.
    pub status: PathStatus,
    /// The pair it came from, for a network part.
    pub pair: Option<usize>,
}

/// A group of elements that explains some abnormal observations.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The elements no judged observation tells apart (the culprit is one of them).
    pub elements: Vec<String>,
    /// The abnormal observations it explains (indices).
    pub explains: Vec<usize>,
    /// Found only as gray: each observation it explains has every element normal on some
    /// other observation, which a flapping element does (Algorithm 1's gray links).
    pub gray: bool,
    /// For a gray group: its members crossed by the fewest normal observations. A flapping
    /// element is normal on about as many observations as it is abnormal on; an element
    /// beside it on those pairs (a host's own cable) is normal on all of its host's other
    /// pairs. The likeliest, not a proof.
    pub likeliest: Vec<String>,
}

/// The tomography's outcome.
#[derive(Debug, Default)]
pub struct Tomography {
    /// Every observation.
    pub observations: Vec<Observation>,
    /// The cover, largest first.
    pub findings: Vec<Finding>,
    /// Elements some normal or abnormal observation crossed.
    pub judged: BTreeSet<String>,
    /// Pairs whose abnormal network part was set aside: a host part of theirs was abnormal
    /// or not judged, or an end's host found a job path of its own abnormal in its check,
    /// and a busy host inflates a probe (R-Pingmesh's stated weakness).
    pub host_noise: Vec<usize>,
    /// Pairs that judged nothing.
    pub not_judged: Vec<NotJudgedItem>,
}

/// A pair's name in words.
pub fn pair_name(pair: &JobPair) -> String {
    format!(
        "{}/{}<->{}/{}",
        pair.parts.a.host, pair.parts.a.rnic, pair.parts.b.host, pair.parts.b.rnic
    )
}

/// Runs the tomography over the hosts' segments and the pairs' network parts. A pair's
/// abnormal network part is set aside as host noise when a host part of it is abnormal or
/// not judged, or when the host at either end found one of its own job paths abnormal in
/// its check (a slow host path bounds the pair's stream as the network would: the pair's
/// host part, half a loopback's median latency, misses a host whose CPU is starved); not
/// when the pair lost packets (retransmissions, or its RNIC's counters:
/// [`crate::job::direction`]), which a busy host does not cause. A cable in
/// `accused` (its own port counters count errors or a link down) is never cleared by a pair
/// that crossed it unharmed: corruption hits some packets, not every one, while Algorithm 1's
/// rule that a normal path clears its links assumes a fault harms every path over it.
pub fn run(segments: &[Segment], pairs: &[JobPair], accused: &BTreeSet<String>) -> Tomography {
    let mut out = Tomography::default();
    let slow_hosts: BTreeSet<&str> = segments
        .iter()
        .filter(|s| s.status == PathStatus::Abnormal)
        .map(|s| s.host)
        .collect();
    for s in segments {
        out.observations.push(Observation {
            what: format!("{} loopback {}->{}", s.host, s.path.rnic, s.path.endpoint),
            elements: vec![s.element()],
            status: s.status,
            pair: None,
        });
    }
    for (i, pair) in pairs.iter().enumerate() {
        if pair.cables.is_empty() {
            out.not_judged.push(NotJudgedItem {
                what: pair_name(pair),
                why: "its route is unknown, so its network part judges no cable".to_string(),
            });
            continue;
        }
        let noisy_host = [pair.parts.host_a_status, pair.parts.host_b_status]
            .iter()
            .any(|s| matches!(s, PartStatus::Abnormal | PartStatus::Uncertain))
            || slow_hosts.contains(pair.parts.a.host.as_str())
            || slow_hosts.contains(pair.parts.b.host.as_str());
        let lost = pair.retransmitted_packets > 0 || direction::lossy_from(pair).is_some();
        let status = match pair.parts.network_status {
            PartStatus::Normal => PathStatus::Normal,
            PartStatus::Abnormal if noisy_host && !lost => {
                out.host_noise.push(i);
                PathStatus::Uncertain
            }
            // A probe that could not run at all: something on its way is down.
            PartStatus::Abnormal | PartStatus::Failed => PathStatus::Abnormal,
            PartStatus::Uncertain => {
                out.not_judged.push(NotJudgedItem {
                    what: pair_name(pair),
                    why: pair
                        .reason
                        .clone()
                        .unwrap_or_else(|| "its network part was not judged".to_string()),
                });
                PathStatus::Uncertain
            }
        };
        let elements = pair
            .cables
            .iter()
            .filter(|c| status != PathStatus::Normal || !accused.contains(*c))
            .cloned()
            .collect();
        out.observations.push(Observation {
            what: format!("network {}", pair_name(pair)),
            elements,
            status,
            pair: Some(i),
        });
    }
    let observed: Vec<ObservedPath> = out
        .observations
        .iter()
        .map(|o| ObservedPath {
            rnic: ComponentId::new(o.what.clone()),
            endpoint: ComponentId::new(""),
            links: o
                .elements
                .iter()
                .map(|e| LinkId::from(e.as_str()))
                .collect(),
            status: o.status,
            reference: None,
        })
        .collect();
    let elements: Vec<LinkId> = observed
        .iter()
        .flat_map(|o| o.links.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let verdicts = tomography::detect_abnormal_links(&observed, &elements);
    let status: BTreeMap<&str, LinkStatus> =
        verdicts.iter().map(|v| (v.id.as_str(), v.status)).collect();
    out.judged = verdicts
        .iter()
        .filter(|v| v.status != LinkStatus::Uncertain)
        .map(|v| v.id.as_str().to_string())
        .collect();
    let groups: Vec<(Vec<String>, Vec<usize>)> =
        tomography::indistinguishable_groups(&observed, &elements)
            .into_iter()
            .filter(|g| {
                g.links
                    .iter()
                    .all(|l| status.get(l.as_str()) == Some(&LinkStatus::Abnormal))
            })
            .map(|g| {
                let names = g.links.iter().map(|l| l.as_str().to_string()).collect();
                (names, g.explains)
            })
            .filter(|(_, explains)| !explains.is_empty())
            .collect();
    let abnormal: BTreeSet<usize> = (0..out.observations.len())
        .filter(|&i| out.observations[i].status == PathStatus::Abnormal)
        .collect();
    let mut uncovered = abnormal;
    out.findings = greedy_cover(&groups, &mut uncovered, false);
    // What is left lies on elements that are normal elsewhere: gray (Algorithm 1, line 15).
    let gray_groups: Vec<(Vec<String>, Vec<usize>)> = elements
        .iter()
        .map(|e| {
            let on: Vec<usize> = uncovered
                .iter()
                .copied()
                .filter(|&i| out.observations[i].elements.iter().any(|x| x == e.as_str()))
                .collect();
            (vec![e.as_str().to_string()], on)
        })
        .filter(|(_, on)| !on.is_empty())
        .collect();
    let gray = merge_equal(gray_groups);
    let mut gray_findings = greedy_cover(&gray, &mut uncovered, true);
    for finding in &mut gray_findings {
        let normal_on = |e: &String| {
            out.observations
                .iter()
                .filter(|o| o.status == PathStatus::Normal && o.elements.contains(e))
                .count()
        };
        let fewest = finding.elements.iter().map(normal_on).min().unwrap_or(0);
        finding.likeliest = finding
            .elements
            .iter()
            .filter(|e| normal_on(e) == fewest)
            .cloned()
            .collect();
    }
    out.findings.extend(gray_findings);
    out
}

/// Elements that explain the same observations form one group.
fn merge_equal(groups: Vec<(Vec<String>, Vec<usize>)>) -> Vec<(Vec<String>, Vec<usize>)> {
    let mut by_explains: BTreeMap<Vec<usize>, Vec<String>> = BTreeMap::new();
    for (names, explains) in groups {
        by_explains.entry(explains).or_default().extend(names);
    }
    by_explains
        .into_iter()
        .map(|(explains, names)| (names, explains))
        .collect()
}

/// A minimal cover, greedily: the group explaining the most uncovered observations first
/// (fewer members, then name order, on a tie), until none is left or no group explains one.
fn greedy_cover(
    groups: &[(Vec<String>, Vec<usize>)],
    uncovered: &mut BTreeSet<usize>,
    gray: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    loop {
        let best = groups
            .iter()
            .map(|(names, explains)| {
                let new = explains.iter().filter(|i| uncovered.contains(i)).count();
                (new, names, explains)
            })
            .filter(|(new, _, _)| *new > 0)
            .max_by(|a, b| {
                a.0.cmp(&b.0)
                    .then(b.1.len().cmp(&a.1.len()))
                    .then(b.1.cmp(a.1))
            });
        let Some((_, names, explains)) = best else {
            return out;
        };
        let explained: Vec<usize> = explains
            .iter()
            .copied()
            .filter(|i| uncovered.contains(i))
            .collect();
        for i in &explained {
            uncovered.remove(i);
        }
        out.push(Finding {
            elements: names.clone(),
            explains: explained,
            gray,
            likeliest: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::job::JobPath;

    /// The job tests' pair between hosts `a` and `b`, over `cables`.
    fn pair(a: &str, b: &str, cables: &[&str], network: PartStatus) -> JobPair {
        let mut pair = crate::job::tests::pair(network);
        pair.parts.a.host = a.into();
        pair.parts.b.host = b.into();
        pair.cables = cables.iter().map(|c| c.to_string()).collect();
        pair
    }

    fn path() -> JobPath {
        JobPath {
            rnic: "rnic0".into(),
            endpoint: "gpu0".into(),
            links: vec![],
        }
    }

    #[test]
    fn a_cable_on_every_abnormal_pair_and_no_normal_one_is_named_alone() {
        use PartStatus::*;
        let pairs = [
            pair("n1", "n2", &["c1", "c2", "x"], Abnormal),
            pair("n1", "n3", &["c1", "c3", "x"], Abnormal),
            pair("n2", "n3", &["c2", "c3"], Normal),
        ];
        let t = run(&[], &pairs, &BTreeSet::new());
        assert_eq!(t.findings.len(), 1);
        // c1 and x lie on the same two pairs: tomography cannot tell them apart.
        assert_eq!(t.findings[0].elements, ["c1", "x"]);
        assert_eq!(t.findings[0].explains.len(), 2);
    }

    /// The job path `p` abnormal on n1 and normal on n2.
    fn n1_abnormal_n2_normal(p: &JobPath) -> [Segment<'_>; 2] {
        [
            Segment {
                host: "n1",
                path: p,
                status: PathStatus::Abnormal,
            },
            Segment {
                host: "n2",
                path: p,
                status: PathStatus::Normal,
            },
        ]
    }

    #[test]
    fn a_host_segment_and_a_cable_are_found_together() {
        use PartStatus::*;
        let p = path();
        let segments = n1_abnormal_n2_normal(&p);
        let pairs = [
            pair("n2", "n3", &["c2", "c3", "bad"], Abnormal),
            pair("n2", "n4", &["c2", "c4"], Normal),
            pair("n3", "n4", &["c3", "c4"], Normal),
        ];
        let t = run(&segments, &pairs, &BTreeSet::new());
        let found: Vec<&[String]> = t.findings.iter().map(|f| f.elements.as_slice()).collect();
        assert_eq!(found.len(), 2);
        assert!(found.contains(&&["n1:rnic0->gpu0".to_string()][..]));
        assert!(found.contains(&&["bad".to_string()][..]));
    }

    #[test]
    fn a_cable_whose_counters_count_errors_is_not_cleared_by_a_lucky_pair() {
        use PartStatus::*;
        let pairs = [
            pair("n1", "n2", &["c1", "bad", "c2"], Abnormal),
            pair("n3", "n4", &["c3", "bad", "c4"], Normal),
            pair("n1", "n3", &["c1", "c3"], Normal),
            pair("n2", "n4", &["c2", "c4"], Normal),
        ];
        let cleared = run(&[], &pairs, &BTreeSet::new());
        assert!(
            cleared.findings.iter().all(|f| f.gray),
            "{:?}",
            cleared.findings
        );
        let accused = BTreeSet::from(["bad".to_string()]);
        let t = run(&[], &pairs, &accused);
        assert_eq!(t.findings.len(), 1);
        assert_eq!(t.findings[0].elements, ["bad"]);
        assert!(!t.findings[0].gray);
    }

    #[test]
    fn host_noise_sets_a_network_verdict_aside() {
        let mut noisy = pair("n1", "n2", &["c1", "c2"], PartStatus::Abnormal);
        noisy.parts.host_a_status = PartStatus::Abnormal;
        let t = run(&[], &[noisy], &BTreeSet::new());
        assert!(t.findings.is_empty());
        assert_eq!(t.host_noise, [0]);
    }

    #[test]
    fn a_host_slow_in_its_own_check_sets_its_pairs_network_part_aside_unless_they_lost_packets() {
        let p = path();
        let segments = n1_abnormal_n2_normal(&p);
        // The pair's own host parts look normal (a starved CPU leaves a loopback's median
        // alone), its bandwidth does not: n1's own check says why.
        let slow = pair("n1", "n2", &["n1/rxe_a", "n2/rxe_b"], PartStatus::Abnormal);
        let t = run(&segments, std::slice::from_ref(&slow), &BTreeSet::new());
        assert_eq!(t.host_noise, [0]);
        let found: Vec<&[String]> = t.findings.iter().map(|f| f.elements.as_slice()).collect();
        assert_eq!(found, [&["n1:rnic0->gpu0".to_string()][..]]);
        // Counted losses are the network's whatever the hosts say.
        let mut lossy = slow;
        lossy.counters_a = Some(model::odp_bench::TransportDelta {
            packet_seq_err: Some(4),
            ..Default::default()
        });
        let t = run(&segments, &[lossy], &BTreeSet::new());
        assert!(t.host_noise.is_empty());
        assert!(t
            .findings
            .iter()
            .any(|f| f.elements == ["n1/rxe_a", "n2/rxe_b"]));
    }

    #[test]
    fn an_element_normal_elsewhere_is_found_gray() {
        use PartStatus::*;
        let pairs = [
            pair("n1", "n2", &["c1", "f"], Abnormal),
            pair("n3", "n4", &["c3", "f"], Normal),
            pair("n1", "n5", &["c1", "c5"], Normal),
            pair("n1", "n6", &["c1", "c6"], Normal),
        ];
        let t = run(&[], &pairs, &BTreeSet::new());
        assert_eq!(t.findings.len(), 1);
        assert!(t.findings[0].gray);
        assert_eq!(t.findings[0].elements, ["c1", "f"]);
        // c1 is normal on n1's other pair too; f only on the pair at another time.
        assert_eq!(t.findings[0].likeliest, ["f"]);
    }
}
