//! Localisation of the abnormal paths no earlier rule explained: a minimal explanation by
//! greedy set cover over Algorithm 1's abnormal link groups (beyond the paper).
//!
//! Algorithm 1 marks every uncertain link of an abnormal path abnormal, so a single failed
//! link also drags in the links it shares paths with that no normal path clears. Hostping
//! 4.3 ranks them by `abnormal_cnt` ("links with the highest abnormal_cnt are most likely
//! abnormal"); here the ranking is sharpened into a cover: repeatedly pick the abnormal
//! group that explains the most still-unexplained abnormal paths; on a tie the higher
//! `abnormal_cnt`, then the group whose first link comes first in the host model. A chosen
//! group is overloaded or failed by its utilisation (Hostping 4.1.2, 4.3). Abnormal paths
//! that no abnormal group covers lie only on normal links: those links are gray
//! (Algorithm 1), and one run names no cause for them (rule 6c; see `flapping`).

use crate::causes::link_cause;
use crate::evidence;
use crate::facts::Facts;
use model::{ComponentClass, Diagnosis, LinkKind, LinkStatus, Mode};
use std::collections::BTreeSet;

/// Rule 6b: covers `remaining` abnormal paths, removing those it explains.
pub(crate) fn set_cover(f: &Facts<'_>, remaining: &mut BTreeSet<usize>) -> Vec<Diagnosis> {
    let candidates: Vec<usize> = (0..f.groups.len())
        .filter(|&g| f.group_status(g) == LinkStatus::Abnormal)
        .collect();
    let mut out = Vec::new();
    loop {
        let covers = |g: usize| -> Vec<usize> {
            f.groups[g]
                .explains
                .iter()
                .copied()
                .filter(|j| remaining.contains(j))
                .collect()
        };
        // Groups are in host order of their first link, so the first maximum wins the tie.
        let best = candidates
            .iter()
            .map(|&g| (g, covers(g).len(), f.group_cnt(g)))
            .filter(|&(_, n, _)| n > 0)
            .fold(None::<(usize, usize, u32)>, |acc, c| match acc {
                Some((_, n, cnt)) if (n, cnt) >= (c.1, c.2) => acc,
                _ => Some(c),
            });
        let Some((g, _, _)) = best else { break };
        let covered = covers(g);
        for j in &covered {
            remaining.remove(j);
        }
        out.push(diagnose_group(f, g, &covered));
    }
    out
}

fn diagnose_group(f: &Facts<'_>, g: usize, covered: &[usize]) -> Diagnosis {
    let group = &f.groups[g];
    let names = evidence::list(&group.links);
    let paths: Vec<String> = covered
        .iter()
        .map(|&j| f.verdict(j).describe_bandwidth())
        .collect();
    let cnt = f.group_cnt(g);
    let marked_by = group
        .links
        .first()
        .and_then(|l| f.link(l))
        .map(|v| v.marked_by.clone())
        .unwrap_or_default();
    let mut words =
        format!(
        "{} {} abnormal; {names} {} on no normal path and {} marked abnormal by {cnt} RNIC{} ({})",
        evidence::list_capped(&paths, 6),
        if paths.len() == 1 { "is" } else { "are" },
        if group.links.len() == 1 { "lies" } else { "lie" },
        if group.links.len() == 1 { "was" } else { "were" },
        if cnt == 1 { "" } else { "s" },
        evidence::list(&marked_by),
    );
    if let Some(phrase) = f.group_phrase(g) {
        words += &format!("; {phrase}");
    }
    if let Some(s) = gpu_latency_note(f, g, covered) {
        words += &format!("; {s}");
    }
    let (cause, util) = link_cause(f, &group.links);
    words += &format!("; {util}");
    Diagnosis {
        cause,
        links: Facts::sorted(group.links.clone()),
        rnic: None,
        setting: None,
        evidence: words,
    }
}

/// Hostping 4.3: for a GPU PCIe link, the latency of its same-root-port paths tells a
/// failure (normal latency) from a misconfiguration; a busy RNIC's latency cannot.
fn gpu_latency_note(f: &Facts<'_>, g: usize, covered: &[usize]) -> Option<String> {
    let has_gpu_link = f.groups[g]
        .links
        .iter()
        .any(|l| f.host.link(l).is_some_and(|l| l.kind == LinkKind::GpuPcie));
    if !has_gpu_link {
        return None;
    }
    let near: Vec<usize> = covered
        .iter()
        .copied()
        .filter(|&j| {
            let v = f.verdict(j);
            v.path.is_some_and(|p| !p.p2p_through_cpu)
                && f.host.component(&v.endpoint).map(|c| c.class()) == Some(ComponentClass::Gpu)
        })
        .collect();
    if near.is_empty() {
        return None;
    }
    let busy: Vec<String> = near
        .iter()
        .map(|&j| f.verdict(j))
        .filter(|v| f.mode == Mode::Busy && f.rnic(&v.rnic).is_some_and(|r| r.busy))
        .map(|v| v.rnic.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !busy.is_empty() {
        return Some(format!(
            "{} carries service traffic, so its latency cannot tell a failure from a \
             misconfiguration: inspect the link and the ACS/ATS settings (Hostping 4.3)",
            evidence::list(&busy)
        ));
    }
    let lat: Vec<String> = near
        .iter()
        .map(|&j| {
            format!(
                "{} {}",
                f.verdict(j).label(),
                f.verdict(j).describe_latency()
            )
        })
        .collect();
    Some(format!(
        "the latency is normal ({}), so it is not a misconfiguration (Hostping 4.3)",
        evidence::list(&lat)
    ))
}
