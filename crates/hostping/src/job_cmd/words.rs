//! The job verdict for people: the verdict, each culprit with its evidence and the action it
//! calls for, the follow-ups run and why, what was not judged, and the faults found that are
//! not the job's.

use std::fmt::Write as _;

use model::job::{Culprit, JobReport, Verdict};

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
    for (i, c) in report.culprits.iter().enumerate() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}. {}", i + 1, style.bold(&culprit_title(c)));
        let _ = writeln!(out, "   evidence: {}", c.evidence);
        if !c.candidates.is_empty() {
            let _ = writeln!(out, "   one of: {}", c.candidates.join(", "));
        }
        let _ = writeln!(out, "   action: {}", c.action);
    }
    if !report.follow_ups.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", style.bold("follow-ups run:"));
        for f in &report.follow_ups {
            let round = f.round.map(|r| format!(", {r}")).unwrap_or_default();
            let _ = writeln!(out, "  {} {}{round}: {}", f.kind, f.target, f.outcome);
            let _ = writeln!(out, "    why: {}", f.why);
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
