//! `hostping bench job`'s tables: the scores against the targets and the best
//! published figures, per class, and the jobs it got wrong (as `fabric`'s case studies and
//! the agent's cost print theirs).

use std::fmt::Write as _;

/// `hostping bench job`'s table: the scores overall, against the best published figures,
/// then per class.
pub fn scores_table(s: &super::Scores) -> String {
    let pct = |v: f64| format!("{:.1} %", 100.0 * v);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "job verdicts on {} labelled simulated jobs ({} pairs probed, SIMULATED)",
        s.cases, s.pairs
    );
    let _ = writeln!(out, "{:<36} {:>9}  target (published best)", "", "measured");
    for (name, value, target) in [
        (
            "precision, infrastructure at fault",
            pct(s.precision),
            ">= 99 % (SkeletonHunter 98.2 %)",
        ),
        (
            "recall, infrastructure at fault",
            pct(s.recall),
            ">= 99.5 % (SkeletonHunter 99.3 %)",
        ),
        ("verdict accuracy", pct(s.verdict_accuracy), ""),
        (
            "top-1 culprit",
            pct(s.top1),
            ">= 97 % (SkeletonHunter 95.7 %)",
        ),
        ("top-3 culprit", pct(s.top3), ""),
        (
            "false culprits, healthy / not the job's",
            s.false_culprits_on_healthy.to_string(),
            "0",
        ),
        ("inconclusive", s.inconclusive.to_string(), ""),
        (
            "actions (dry run), healthy / not the job's",
            s.actions_on_healthy.to_string(),
            "0",
        ),
        (
            "actions on culprits probes cleared",
            s.actions_on_cleared.to_string(),
            "0",
        ),
        (
            "time to verdict, median / p95",
            format!("{:.2} / {:.2} s", s.seconds_median, s.seconds_p95),
            "<= 2 min with follow-ups (mesh, follow-ups, what-if)",
        ),
        (
            "verdict from collected evidence",
            format!(
                "{:.1} / {:.1} ms",
                1e3 * s.judge_seconds_median,
                1e3 * s.judge_seconds_p95
            ),
            "",
        ),
    ] {
        let _ = writeln!(out, "{name:<36} {value:>9}  {target}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<9} {:<18} {:>5} {:>9} {:>7} {:>7} {:>8}",
        "cluster", "class", "jobs", "verdict", "top-1", "top-3", "actions"
    );
    for c in &s.classes {
        let _ = writeln!(
            out,
            "{:<9} {:<18} {:>5} {:>9} {:>7} {:>7} {:>8}",
            c.cluster,
            c.class,
            c.cases,
            pct(c.verdict_accuracy),
            pct(c.top1),
            pct(c.top3),
            c.actions
        );
    }
    out
}

/// Every job whose verdict or first culprit is wrong, with what it was given.
pub fn failures(outcomes: &[super::Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes.iter().filter(|o| !o.verdict_right || !o.top1) {
        let _ = writeln!(
            out,
            "\n{} {} nodes={} inject=[{}] seed={}: expected {}, got {} [{}]",
            o.case.class,
            o.case.cluster,
            o.case.nodes.len(),
            o.case.inject.join(" "),
            o.case.seed,
            o.case.verdict.as_str(),
            o.verdict.as_str(),
            o.culprits
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    out
}
