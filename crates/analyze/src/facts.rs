//! What one run shows before any root-cause rule: RNIC conditions, path status, the busy-mode
//! scoping of links, Algorithm 1 and the indistinguishable groups. The rules read these
//! facts; none of them changes them.

use crate::bound;
use crate::status::{self, PathVerdict, Reference, RnicCondition};
use crate::tomography::{self, LinkGroup, LinkVerdict, ObservedPath};
use crate::Input;
use model::{ComponentId, HostTopology, LinkId, LinkStatus, Mode, PathStatus, Thresholds};
use std::collections::{BTreeSet, HashMap};

/// Everything the rules read.
pub(crate) struct Facts<'a> {
    /// The host.
    pub host: &'a HostTopology,
    /// Idle or busy.
    pub mode: Mode,
    /// The monitors' view before the probe.
    pub snapshot: &'a model::HostSnapshot,
    /// Thresholds.
    pub th: &'a Thresholds,
    /// Every RNIC's condition, host order.
    pub rnics: Vec<RnicCondition>,
    /// Every probed path, run order.
    pub verdicts: Vec<PathVerdict<'a>>,
    /// The paths Algorithm 1 sees (those the host model knows), with their scoped links.
    pub observed: Vec<ObservedPath>,
    /// `observed[j]` judges `verdicts[observed_verdict[j]]`.
    pub observed_verdict: Vec<usize>,
    /// Algorithm 1's verdict per link, host order; a link only latency-bound paths cross
    /// is normal down to its bound ([`crate::bound`]).
    pub links: Vec<LinkVerdict>,
    /// Per link, host order: how far it was judged, when only latency-bound paths did.
    pub bounds: Vec<Option<model::LinkBound>>,
    /// Indistinguishable groups, in order of their first link.
    pub groups: Vec<LinkGroup>,
    /// Link -> index of its group.
    pub group_of: HashMap<LinkId, usize>,
    /// Link -> host order.
    pub link_index: HashMap<LinkId, usize>,
}

impl<'a> Facts<'a> {
    /// Judges the paths and runs the tomography.
    pub fn gather(input: &Input<'a>) -> Facts<'a> {
        let host = input.host;
        let th = input.thresholds;
        let rnics = status::rnic_conditions(host, input.snapshot, th);
        let verdicts = status::judge(host, input.run, input.baseline, &rnics, th);
        let scope = busy_scope(host, input.run.mode, &rnics);
        let mut observed = Vec::new();
        let mut observed_verdict = Vec::new();
        for (i, v) in verdicts.iter().enumerate() {
            let Some(path) = v.path else { continue };
            let links = path
                .links
                .iter()
                .filter(|l| !matches!(scope.get(*l), Some(judges) if !judges.contains(&v.rnic)))
                .cloned()
                .collect();
            observed.push(ObservedPath {
                rnic: v.rnic.clone(),
                endpoint: v.endpoint.clone(),
                links,
                status: v.status,
                reference: None,
            });
            observed_verdict.push(i);
        }
        // A busy RNIC's abnormal path was judged against its best affinitive path.
        for j in 0..observed.len() {
            if let Reference::Siblings { best_endpoint, .. } =
                &verdicts[observed_verdict[j]].reference
            {
                let rnic = &observed[j].rnic;
                observed[j].reference = (0..observed.len())
                    .find(|&k| &observed[k].rnic == rnic && &observed[k].endpoint == best_endpoint);
            }
        }
        let link_ids: Vec<LinkId> = host.links().iter().map(|l| l.id.clone()).collect();
        let mut links = tomography::detect_abnormal_links(&observed, &link_ids);
        let bounds = bound::judge(
            host,
            &observed,
            &verdicts,
            &observed_verdict,
            &mut links,
            th,
        );
        let groups = tomography::indistinguishable_groups(&observed, &link_ids);
        let mut group_of = HashMap::new();
        for (g, group) in groups.iter().enumerate() {
            for l in &group.links {
                group_of.insert(l.clone(), g);
            }
        }
        let link_index = link_ids
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), i))
            .collect();
        Facts {
            host,
            mode: input.run.mode,
            snapshot: input.snapshot,
            th,
            rnics,
            verdicts,
            observed,
            observed_verdict,
            links,
            bounds,
            groups,
            group_of,
            link_index,
        }
    }

    /// The verdict behind observed path `j`.
    pub fn verdict(&self, j: usize) -> &PathVerdict<'a> {
        &self.verdicts[self.observed_verdict[j]]
    }

    /// Observed paths with status abnormal.
    pub fn abnormal_paths(&self) -> BTreeSet<usize> {
        (0..self.observed.len())
            .filter(|&j| self.observed[j].status == PathStatus::Abnormal)
            .collect()
    }

    /// Algorithm 1's verdict on a link.
    pub fn link(&self, id: &LinkId) -> Option<&LinkVerdict> {
        self.link_index.get(id).map(|&i| &self.links[i])
    }

    /// The status Algorithm 1 gave a group (its members share it).
    pub fn group_status(&self, g: usize) -> LinkStatus {
        self.groups[g]
            .links
            .first()
            .and_then(|l| self.link(l))
            .map_or(LinkStatus::Uncertain, |v| v.status)
    }

    /// The `abnormal_cnt` of a group (its members share it).
    pub fn group_cnt(&self, g: usize) -> u32 {
        self.groups[g]
            .links
            .first()
            .and_then(|l| self.link(l))
            .map_or(0, |v| v.abnormal_cnt)
    }

    /// The condition of an RNIC.
    pub fn rnic(&self, id: &ComponentId) -> Option<&RnicCondition> {
        self.rnics.iter().find(|r| &r.id == id)
    }

    /// The highest utilisation the bus monitor read on any of `links`.
    pub fn max_utilisation(&self, links: &[LinkId]) -> Option<(LinkId, f64)> {
        links
            .iter()
            .filter_map(|l| self.snapshot.utilisation(l).map(|u| (l.clone(), u)))
            .fold(None, |acc: Option<(LinkId, f64)>, (l, u)| match acc {
                Some((_, best)) if best >= u => acc,
                _ => Some((l, u)),
            })
    }

    /// Says why a group is named whole; `None` for a single link.
    pub fn group_phrase(&self, g: usize) -> Option<String> {
        let group = &self.groups[g];
        if group.links.len() < 2 {
            return None;
        }
        let names = crate::evidence::list(&group.links);
        Some(if group.same_probed_paths {
            format!("{names} lie on exactly the same probed paths, so tomography cannot tell them apart")
        } else {
            format!(
                "{names} lie on exactly the same judged paths (only uncertain paths run through one \
                 and not the other), so tomography cannot tell them apart"
            )
        })
    }

    /// `links` sorted as diagnoses name them.
    pub fn sorted(links: impl IntoIterator<Item = LinkId>) -> Vec<LinkId> {
        let set: BTreeSet<LinkId> = links.into_iter().collect();
        set.into_iter().collect()
    }
}

/// Busy mode (Hostping 4.3): "for the links under the same root port as the abnormal RNIC,
/// we only use this abnormal RNIC to judge their status". Returns link -> the RNICs allowed
/// to judge it; links not in the map may be judged by every RNIC.
fn busy_scope(
    host: &HostTopology,
    mode: Mode,
    rnics: &[RnicCondition],
) -> HashMap<LinkId, BTreeSet<ComponentId>> {
    let mut scope: HashMap<LinkId, BTreeSet<ComponentId>> = HashMap::new();
    if mode != Mode::Busy {
        return scope;
    }
    for r in rnics.iter().filter(|r| r.abnormal) {
        if let Some(rp) = host.root_port_above(&r.id) {
            for l in host.links_under_root_port(&rp) {
                scope.entry(l).or_default().insert(r.id.clone());
            }
        }
    }
    scope
}
