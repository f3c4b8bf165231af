//! Flapping within one run, from its re-probes (beyond the paper; [`crate::reprobe`]).
//!
//! A re-probed path that was abnormal in some of its probes and normal in others within the
//! run (about a second) changed level there: a failed link stays degraded, a healthy one stays
//! healthy, a flapping one does both (Hostping 6 #6, the memory channel that "switches
//! between normal and abnormal"). The link that flaps is found as Algorithm 1 finds a failed
//! one, with "changed level" in place of "abnormal": it lies on a path that changed level,
//! on every other re-probed path over that path's links that changed level too, and on no re-probed path that stayed normal in every probe so often
//! that luck cannot explain it ([`LUCK`]). Links the re-probes cannot tell apart are named
//! together.
//!
//! The flap is the evidence for the run it was seen in and for the later runs of the
//! history window ([`crate::flap_common::window`]): a run that meets the link in its healthy
//! phase throughout still names it, as Hostping 6 #6 warns ("no performance issues could be
//! discovered in subsequent manual testing"). A failure diagnosis on a path that changed
//! level is explained by the flap and withdrawn.

use crate::evidence;
use crate::flap_common;
use crate::history::RunRecord;
use model::{Cause, ComponentId, Diagnosis, HostTopology, LinkId, PathStatus};
use std::collections::BTreeSet;

/// One re-probed path of a run: its probe and re-probes.
#[derive(Clone, PartialEq)]
struct Looks {
    rnic: ComponentId,
    endpoint: ComponentId,
    links: Vec<LinkId>,
    /// The run's probe first, then the re-probes.
    statuses: Vec<PathStatus>,
}

impl Looks {
    fn count(&self, s: PathStatus) -> usize {
        self.statuses.iter().filter(|x| **x == s).count()
    }

    /// Seen at each level at least [`LOOKS_PER_LEVEL`] times.
    fn changed_level(&self) -> bool {
        self.count(PathStatus::Abnormal) >= LOOKS_PER_LEVEL
            && self.count(PathStatus::Normal) >= LOOKS_PER_LEVEL
    }

    fn stayed_normal(&self) -> bool {
        self.statuses.iter().all(|s| *s == PathStatus::Normal)
    }

    fn label(&self) -> String {
        format!("{}->{}", self.rnic, self.endpoint)
    }

    /// `rnic3->gpu6 abnormal in 3 and normal in 4 of 7 probes`.
    fn said(&self) -> String {
        format!(
            "{} abnormal in {} and normal in {} of {} probes",
            self.label(),
            self.count(PathStatus::Abnormal),
            self.count(PathStatus::Normal),
            self.statuses.len()
        )
    }
}

/// Looks at each level that make a change of level: one look of eleven at the other level
/// is an outlier of a noisy device (a Soft-RoCE device in an emulated guest showed one
/// abnormal look in eleven on a healthy path), as one abnormal run between normal ones is
/// for the alternation rule across runs, which needs two changes.
const LOOKS_PER_LEVEL: usize = 2;

/// Below this chance of meeting a flapping link healthy in every probe by luck, the paths
/// that stayed normal clear it: 0.5 %. The chance takes the abnormal share of other paths,
/// and a fast witness meets a deep flap's degraded phase less often than they do (its large
/// messages finish in the healthy phase), so the bound is half the usual 1 %: at 1 %, one
/// seed of 30 of `flap:rnic2--lsw4:0.2` let a witness clear the flapping link and named the
/// uplink beside it alone; at 0.5 % it names both.
const LUCK: f64 = 0.005;

/// The chance that the `steady` paths over `l` stayed normal in every probe had `l` flapped:
/// a path with `n` probes that is abnormal in a share `f` of them stays normal with chance
/// `(1 - f)^n`, independently. The share differs from path to path (a probe is abnormal
/// when most of its large messages meet the degraded phase, and the slower a path is
/// then, the fewer do), so `f` is the smallest share among the paths over `l` that changed
/// level: the chance is not understated.
fn luck(changed: &[Looks], steady: &[Looks], l: &LinkId) -> f64 {
    let over = |q: &&Looks| q.links.contains(l);
    let Some(f) = changed
        .iter()
        .filter(over)
        .map(|q| q.count(PathStatus::Abnormal) as f64 / q.statuses.len() as f64)
        .min_by(f64::total_cmp)
    else {
        return 1.0;
    };
    steady
        .iter()
        .filter(over)
        .map(|q| (1.0 - f).powi(q.statuses.len() as i32))
        .product()
}

/// A flap seen within one run.
struct Flap {
    run: u32,
    /// The flapping link, or the links the re-probes cannot tell apart.
    links: Vec<LinkId>,
    /// The re-probed paths over them that changed level.
    changed: Vec<Looks>,
    /// The re-probed paths over other links of those paths that stayed normal.
    steady: Vec<Looks>,
}

/// The flaps the re-probes of run `r` show.
fn find(host: &HostTopology, r: &RunRecord) -> Vec<Flap> {
    let looks: Vec<Looks> = r
        .paths
        .iter()
        .filter(|p| !p.reprobes.is_empty())
        .filter_map(|p| {
            let path = host.path(&p.rnic, &p.endpoint)?;
            let mut statuses = vec![p.status];
            statuses.extend(p.reprobes.iter().copied());
            Some(Looks {
                rnic: p.rnic.clone(),
                endpoint: p.endpoint.clone(),
                links: path.links.clone(),
                statuses,
            })
        })
        .collect();
    let mut flaps: Vec<Flap> = Vec::new();
    for p in looks.iter().filter(|p| p.changed_level()) {
        let shares = |q: &Looks| q != p && q.links.iter().any(|l| p.links.contains(l));
        let changed: Vec<Looks> = std::iter::once(p.clone())
            .chain(
                looks
                    .iter()
                    .filter(|q| shares(q) && q.changed_level())
                    .cloned(),
            )
            .collect();
        let steady: Vec<Looks> = looks
            .iter()
            .filter(|q| shares(q) && q.stayed_normal())
            .cloned()
            .collect();
        let on_every_changed: BTreeSet<&LinkId> = p
            .links
            .iter()
            .filter(|l| changed.iter().all(|q| q.links.contains(l)))
            .collect();
        // A path off a flapping link never changes level, so the flap is on every path that
        // did; a path over it may stay normal by meeting one phase in every probe, so the
        // paths that stayed normal clear a link only beyond luck.
        let links: BTreeSet<LinkId> = on_every_changed
            .iter()
            .filter(|l| luck(&changed, &steady, l) >= LUCK)
            .map(|l| (*l).clone())
            .collect();
        if links.is_empty() {
            continue;
        }
        let links: Vec<LinkId> = links.into_iter().collect();
        match flaps.iter_mut().find(|f| f.links == links) {
            Some(f) => {
                for q in changed {
                    if !f.changed.contains(&q) {
                        f.changed.push(q);
                    }
                }
                for q in steady {
                    if !f.steady.contains(&q) {
                        f.steady.push(q);
                    }
                }
            }
            None => flaps.push(Flap {
                run: r.run,
                links,
                changed,
                steady,
            }),
        }
    }
    flaps
}

/// Names the flaps that the re-probes of the current run (the last of `runs`, oldest first)
/// and of the earlier runs of the window show, unless a flapping diagnosis already explains
/// them; withdraws the failures they explain.
pub(crate) fn diagnose(host: &HostTopology, runs: &[&RunRecord], diagnoses: &mut Vec<Diagnosis>) {
    let Some((current, earlier)) = runs.split_last() else {
        return;
    };
    for flap in find(host, current) {
        apply(&flap, None, diagnoses);
    }
    for r in earlier.iter().rev() {
        for flap in find(host, r) {
            apply(&flap, Some(current.run), diagnoses);
        }
    }
}

/// Adds one flap's diagnosis; `now` is the current run when the flap was seen in an earlier
/// one. Beside the flapping diagnoses of the cross-run rules:
/// - one that names the same links says it already;
/// - a group out of which the flap singles some links is narrowed to them;
/// - one that lies wholly on the paths that changed level, beside a flap elsewhere that
///   several of them showed, is withdrawn: the flap explains those paths;
/// - one that crosses a path that changed level otherwise explains that change, and the
///   flap is left unsaid.
fn apply(flap: &Flap, now: Option<u32>, diagnoses: &mut Vec<Diagnosis>) {
    let on_changed = |l: &LinkId| flap.changed.iter().any(|q| q.links.contains(l));
    let flapping = |d: &Diagnosis| d.cause == Cause::LinkFlapping;
    if diagnoses
        .iter()
        .any(|d| flapping(d) && d.links == flap.links)
    {
        return;
    }
    let splits = |d: &Diagnosis| flapping(d) && flap.links.iter().all(|l| d.links.contains(l));
    if let Some(d) = diagnoses.iter_mut().find(|d| splits(d)) {
        d.evidence += &format!(
            "; {}, so of these it is {} that flaps",
            said(flap),
            evidence::list(&flap.links)
        );
        d.links = flap.links.clone();
        return;
    }
    // Only a flap that paths off the lone links showed too (two or more changed level):
    // one path alone may have singled out its lone links because a witness over the
    // flapping link met it healthy in every probe, however unlikely that looked.
    let superseded = |d: &Diagnosis| {
        flapping(d)
            && flap.changed.len() >= 2
            && d.links.iter().all(on_changed)
            && !d.links.iter().any(|l| flap.links.contains(l))
    };
    let mut withdrawn: Vec<String> = diagnoses
        .iter()
        .filter(|d| superseded(d))
        .map(|d| format!("link_flapping on {}", evidence::list(&d.links)))
        .collect();
    diagnoses.retain(|d| !superseded(d));
    if diagnoses
        .iter()
        .any(|d| flapping(d) && d.links.iter().any(on_changed))
    {
        return;
    }
    let explained = |d: &Diagnosis| d.cause == Cause::LinkFailure && d.links.iter().all(on_changed);
    withdrawn.extend(
        diagnoses
            .iter()
            .filter(|d| explained(d))
            .filter(|d| d.links != flap.links)
            .map(|d| format!("link_failure on {}", evidence::list(&d.links))),
    );
    diagnoses.retain(|d| !explained(d));

    let mut words = said(flap);
    words += &format!(
        "; {} {} between healthy and degraded within a second (Hostping 6 #6), where a failed \
         link stays degraded",
        evidence::list(&flap.links),
        if flap.links.len() == 1 {
            "switches"
        } else {
            "(which these probes cannot tell apart) switch"
        },
    );
    if let Some(now) = now {
        words += &format!(
            "; run {} saw no change of level, as a flap met in one phase shows none",
            flap_common::run_number(now)
        );
    }
    diagnoses.push(flap_common::diagnosis(
        flap.links.clone(),
        words,
        &withdrawn,
    ));
}

/// `within run 3, re-probed about 100 ms apart: rnic3->gpu6 abnormal in 3 and normal in 4 of
/// 7 probes, while rnic3->mem1 normal in all 7`.
fn said(flap: &Flap) -> String {
    let changed: Vec<String> = flap.changed.iter().map(Looks::said).collect();
    let mut words = format!(
        "within run {}, re-probed about {} ms apart: {}",
        flap_common::run_number(flap.run),
        crate::reprobe::GAP_NS / 1_000_000,
        evidence::list(&changed)
    );
    if !flap.steady.is_empty() {
        let steady: Vec<String> = flap
            .steady
            .iter()
            .map(|q| format!("{} normal in all {}", q.label(), q.statuses.len()))
            .collect();
        words += &format!(", while {}", evidence::list(&steady));
    }
    words
}
