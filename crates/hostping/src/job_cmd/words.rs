//! The job verdict for people: the verdict, each culprit with its evidence and the action it
//! calls for, the follow-ups run and why, what was not judged, and the faults found that are
//! not the job's.

use std::fmt::Write as _;

use analyze::job::listed;
use analyze::job::sensitivity::percent;
use model::inspector::Symptom;
use model::job::{Culprit, JobHostSummary, JobReport, Verdict};

use views::Style;

/// Where the job's observed time (the what-if's `observed`) comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// The simulated cluster simulated the job.
    Simulated,
    /// The job measured it (`--observed-time`), whatever its hosts' runs came from.
    Measured,
}

/// The report in words.
pub fn render(report: &JobReport, observed: Observed, style: Style) -> String {
    let mut out = String::new();
    let label = if report.simulated { " (SIMULATED)" } else { "" };
    let who = match &report.job {
        Some(job) => format!("job {job}"),
        None => "the job".to_string(),
    };
    let _ = writeln!(
        out,
        "{} {} host(s), {}{label}",
        style.bold(&format!("{who}:")),
        report.nodes.len(),
        probed(report),
    );
    let verdict = match report.verdict {
        Verdict::Neither => style.green(&report.summary),
        Verdict::Inconclusive => style.yellow(&report.summary),
        _ => style.red(&report.summary),
    };
    let _ = writeln!(out, "{verdict}");
    if let Some(symptom) = &report.symptom {
        write_symptom(&mut out, symptom, style);
    }
    for (i, c) in report.culprits.iter().enumerate() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}. {}", i + 1, style.bold(&culprit_title(c)));
        let _ = writeln!(out, "   evidence: {}", c.evidence);
        if !c.candidates.is_empty() {
            let _ = writeln!(out, "   one of: {}", c.candidates.join(", "));
        }
        let _ = writeln!(out, "   action: {}", c.action);
    }
    write_judged(&mut out, report, style);
    if !report.follow_ups.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", style.bold("follow-ups run:"));
        for f in &report.follow_ups {
            let round = f.round.map(|r| format!(", {r}")).unwrap_or_default();
            let _ = writeln!(out, "  {} {}{round}: {}", f.kind, f.target, f.outcome);
            let _ = writeln!(out, "    why: {}", f.why);
        }
    }
    if !report.actions.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            style.bold("what the policy would do (--actions):")
        );
        for a in &report.actions {
            let target = a.host.as_deref().or(a.component.as_deref()).unwrap_or("-");
            let _ = writeln!(
                out,
                "  {} {target} ({}): {}",
                a.kind.as_str(),
                a.state.as_str(),
                a.reason
            );
            if let Some(limit) = &a.refused_by {
                let _ = writeln!(out, "    refused by {limit}");
            }
            if let Some(w) = a.wins_back {
                let _ = writeln!(
                    out,
                    "    wins back: the job's time to {}",
                    verdict::actions::wins_back::in_words(&w)
                );
            }
        }
    }
    if !report.not_judged.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", style.yellow("not judged:"));
        for n in &report.not_judged {
            let _ = writeln!(out, "  {}: {}", n.what, n.why);
        }
    }
    if !report.not_the_jobs.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            style.gray("found, but not the job's (off its hosts' paths or its routes):")
        );
        for c in &report.not_the_jobs {
            let _ = writeln!(out, "  {}: {}", culprit_title(c), c.evidence);
        }
    }
    if let Some(w) = &report.what_if {
        // Through a collector the observed time is the job's own, measured, though its
        // hosts' runs may come from simulated hosts; every replay is simulated either way.
        let (labels, measured) = match observed {
            Observed::Simulated => (", SIMULATED", None),
            Observed::Measured => (
                "; observed: measured, the replays: SIMULATED",
                Some("observed"),
            ),
        };
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "what-if ({}{labels}): explains {}",
            w.traffic, w.explains
        );
        for s in &w.scenarios {
            let moved = if measured == Some(s.name.as_str()) {
                "measured".to_string()
            } else {
                format!("{} packets", s.packets)
            };
            let _ = writeln!(
                out,
                "  {:<18} {:>12.1} us  {:>18}  {}",
                s.name, s.time_us, moved, s.setting
            );
        }
    }
    out
}

/// What the job's own collectives say (DESIGN 4.8): slow or not and since when, each
/// communicator that slowed, and the ranks that arrive late.
fn write_symptom(out: &mut String, symptom: &Symptom, style: Style) {
    let _ = writeln!(out);
    let gbs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} GB/s"));
    let expected = symptom
        .busbw_gbs
        .expected
        .map(|e| format!("; a ring of its size reaches {e:.1} GB/s on its links"))
        .unwrap_or_default();
    let state = match (symptom.slow, symptom.since) {
        (true, Some(since)) => style.red(&format!(
            "slow since {} (bus bandwidth {} before, {} during{expected})",
            unix_time(since),
            gbs(symptom.busbw_gbs.before),
            gbs(symptom.busbw_gbs.during),
        )),
        (true, None) => style.red(&format!(
            "slow (bus bandwidth {}{expected})",
            gbs(symptom.busbw_gbs.during)
        )),
        (false, _) => style.green(&format!(
            "not slow (bus bandwidth {}{expected})",
            gbs(symptom.busbw_gbs.before)
        )),
    };
    let skipped = &symptom.skipped;
    let _ = writeln!(
        out,
        "{} {} records: {state}",
        style.bold("the job's collectives (NCCL Inspector):"),
        symptom.records
    );
    if skipped.unknown_records + skipped.bad_records > 0 {
        let _ = writeln!(
            out,
            "  skipped: {} record(s) of kinds or versions not read, {} malformed",
            skipped.unknown_records, skipped.bad_records
        );
    }
    for c in symptom.communicators.iter().filter(|c| c.slow) {
        let _ = writeln!(
            out,
            "  slowed: {} {} of {} on {} rank(s) over {} host(s){}, {:.1} GB/s{}",
            c.id,
            c.collective,
            size(c.bytes),
            c.ranks,
            c.nnodes,
            rail(c),
            c.busbw_gbs,
            c.since
                .map(|s| format!(" since {}", unix_time(s)))
                .unwrap_or_default()
        );
    }
    for s in &symptom.stragglers {
        let _ = writeln!(
            out,
            "  straggler: rank {} of {} on {}{}, {:.0} us late in {} collective(s)",
            s.rank,
            s.communicator,
            s.host,
            s.gpu
                .as_ref()
                .map(|g| format!(" ({g})"))
                .unwrap_or_default(),
            s.late_us,
            s.collectives
        );
    }
}

/// `, rail 3 (gpu3 through rnic3)`: the GPU index every rank of a communicator across
/// hosts drives, and the RNICs nearest it where known; nothing when it has no rail.
fn rail(c: &model::inspector::CommunicatorSymptom) -> String {
    c.rail_route().map_or(String::new(), |(gpu, route)| {
        format!(", rail {gpu} ({route})")
    })
}

/// A message size as `256MiB`, or `1000 B` where no binary unit divides it.
fn size(bytes: u64) -> String {
    let text = fabric::traffic::units::format_bytes(bytes);
    if text.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{text} B")
    } else {
        text
    }
}

/// Unix seconds as RFC 3339 (UTC, to the second).
fn unix_time(s: f64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(s.max(0.0));
    humantime::format_rfc3339_seconds(at).to_string()
}

/// How small a loss each layer could have seen, and the hosts judged on the job's paths
/// only: what `neither` vouches for, and what it does not.
fn write_judged(out: &mut String, report: &JobReport, style: Style) {
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", style.bold("judged down to:"));
    for (layer, s) in [
        ("host", &report.sensitivity.host),
        ("network", &report.sensitivity.network),
    ] {
        let loss = s.min_visible_loss.map_or("not measured".to_string(), |l| {
            format!("losses of up to {} do not show", percent(l))
        });
        let _ = writeln!(out, "  {layer:<8} {loss}: {}", s.basis);
    }
    let partly: Vec<&JobHostSummary> = report
        .hosts
        .iter()
        .filter(|h| !h.unjudged_links.is_empty())
        .collect();
    if let Some(first) = partly.first() {
        let _ = writeln!(
            out,
            "  {} host(s) judged on the job's paths only ({}): e.g. {}: {}",
            partly.len(),
            listed(partly.iter().map(|h| h.host.as_str())),
            first.host,
            first.judged
        );
    }
}

/// `46 pair(s) probed, 92 probes in 2 rounds`: each pair counted once, however many
/// rounds probed it (issue 38); a report without the count (an older collector's) says
/// how many probes it lists.
fn probed(report: &JobReport) -> String {
    let c = &report.probed;
    if c.probes == 0 {
        return format!("{} pair(s) probed", report.pairs.len());
    }
    let mesh = c.probes - c.follow_up_probes;
    let rounds = |n: u32| match n {
        0 => String::new(),
        1 => " in 1 round".to_string(),
        n => format!(" in {n} rounds"),
    };
    let mut out = format!("{} pair(s) probed, {} probes", c.pairs, c.probes);
    if c.follow_up_probes == 0 {
        out.push_str(&rounds(c.mesh_rounds));
    } else {
        out.push_str(&format!(
            " ({mesh} in the mesh{}, {} follow-ups{})",
            rounds(c.mesh_rounds),
            c.follow_up_probes,
            rounds(c.follow_up_rounds)
        ));
    }
    out
}

/// `link_errors at leaf2/9 (fabric, score 0.95)`.
fn culprit_title(c: &Culprit) -> String {
    let what = match (&c.host, &c.component) {
        (Some(h), Some(x)) => format!(" at {x} on {h}"),
        (Some(h), None) => format!(" on {h}"),
        (None, Some(x)) => format!(" at {x}"),
        (None, None) => String::new(),
    };
    let layer = serde_json::to_value(c.layer)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!("{}{what} ({layer}, score {:.2})", c.cause, c.score)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::job::{LayerSensitivity, Sensitivity};

    #[test]
    fn the_words_say_how_small_a_loss_was_seen_and_what_hosts_were_judged_on() {
        let report = JobReport {
            job: None,
            nodes: vec!["node012".into()],
            verdict: Verdict::Neither,
            culprits: Vec::new(),
            pairs: Vec::new(),
            not_judged: Vec::new(),
            simulated: true,
            summary: "neither".into(),
            not_the_jobs: Vec::new(),
            hosts: vec![JobHostSummary {
                host: "node012".into(),
                healthy: Some(true),
                causes: Vec::new(),
                job_paths_healthy: Some(true),
                unjudged_links: vec!["mem0--cpu0".into()],
                judged: "the job's paths are healthy; links not on them were not judged: \
                         mem0--cpu0"
                    .into(),
            }],
            ports: Vec::new(),
            what_if: None,
            follow_ups: Vec::new(),
            probed: Default::default(),
            symptom: None,
            actions: Vec::new(),
            sensitivity: Sensitivity {
                host: LayerSensitivity {
                    min_visible_loss: Some(0.2),
                    basis: "Abnormal_th".into(),
                },
                network: LayerSensitivity {
                    min_visible_loss: None,
                    basis: "no pair".into(),
                },
            },
        };
        let text = render(&report, Observed::Simulated, Style { color: false });
        assert!(
            text.contains("host     losses of up to 20 % do not show"),
            "{text}"
        );
        assert!(text.contains("network  not measured"), "{text}");
        assert!(
            text.contains("links not on them were not judged: mem0--cpu0"),
            "{text}"
        );
    }
}
