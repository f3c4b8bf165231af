//! The job verdict in words for people: the verdict and its one-sentence summary, each
//! culprit with its score, evidence and action, what was not judged, and the faults found
//! that are not the job's.

use std::fmt::Write as _;

use model::job::{Culprit, JobReport, Verdict};

use crate::render::Style;

/// `report` in words; `source` says where the evidence came from.
pub fn words(report: &JobReport, source: &str, style: Style) -> String {
    let mut out = String::new();
    let verdict = report.verdict.as_str();
    let shown = match report.verdict {
        Verdict::Neither => style.green(verdict),
        Verdict::Inconclusive => style.yellow(verdict),
        Verdict::Host | Verdict::Network | Verdict::Both => style.red(verdict),
    };
    let job = report
        .job
        .as_deref()
        .map_or_else(String::new, |id| format!(" {id}"));
    let _ = writeln!(
        out,
        "{} {shown} ({} nodes; {source})",
        style.bold(&format!("job{job}:")),
        report.nodes.len()
    );
    let _ = writeln!(out, "{}", report.summary);
    if !report.culprits.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("culprits, most likely first:"));
        for (i, c) in report.culprits.iter().enumerate() {
            culprit(&mut out, &format!("{}.", i + 1), c, style);
        }
    }
    if !report.not_judged.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("not judged:"));
        for n in &report.not_judged {
            let _ = writeln!(out, "  - {}: {}", n.what, n.why);
        }
    }
    if !report.not_the_jobs.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            style.bold("faults found that are not the job's (off its hosts, paths or routes):")
        );
        for c in &report.not_the_jobs {
            culprit(&mut out, "-", c, style);
        }
    }
    let judged = report.hosts.iter().filter(|h| h.healthy.is_some()).count();
    let unhealthy = report
        .hosts
        .iter()
        .filter(|h| h.healthy == Some(false))
        .count();
    let _ = writeln!(
        out,
        "\nhosts: {} judged ({unhealthy} with findings), {} not judged; pairs probed: {}",
        judged,
        report.hosts.len() - judged,
        report.pairs.len()
    );
    out
}

/// One culprit: where, what, how sure, why and what to do.
fn culprit(out: &mut String, mark: &str, c: &Culprit, style: Style) {
    let place = [c.host.as_deref(), c.component.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let layer = serde_json::to_value(c.layer)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let place = if place.is_empty() {
        String::new()
    } else {
        format!(" {place}")
    };
    let _ = writeln!(
        out,
        "  {mark} {}{place}: {} (score {:.2})",
        layer,
        style.red(&c.cause),
        c.score
    );
    if !c.candidates.is_empty() {
        let _ = writeln!(out, "     one of: {}", c.candidates.join(", "));
    }
    let _ = writeln!(out, "     evidence: {}", c.evidence);
    let _ = writeln!(out, "     action: {}", c.action);
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::job::{JobHostSummary, Layer, NotJudgedItem};

    #[test]
    fn a_network_verdict_names_its_culprit_the_action_and_the_rest() {
        let leaf = Culprit {
            layer: Layer::Fabric,
            host: None,
            component: Some("leaf2/9".into()),
            cause: "link_errors".into(),
            score: 0.94,
            evidence: "symbol errors 12/s on leaf2/9 during the job, 0 before".into(),
            candidates: vec![],
            action: "reseat or replace the cable at leaf2/9".into(),
        };
        let elsewhere = Culprit {
            component: Some("leaf7/3".into()),
            ..leaf.clone()
        };
        let report = JobReport {
            job: Some("12345".into()),
            nodes: vec!["n1".into(), "n2".into()],
            verdict: Verdict::Network,
            culprits: vec![leaf],
            pairs: vec![],
            not_judged: vec![NotJudgedItem {
                what: "n2".into(),
                why: "no run in the window".into(),
            }],
            simulated: false,
            summary: "network: leaf2/9 corrupts packets".into(),
            not_the_jobs: vec![elsewhere],
            hosts: vec![
                JobHostSummary {
                    host: "n1".into(),
                    healthy: Some(true),
                    causes: vec![],
                },
                JobHostSummary {
                    host: "n2".into(),
                    healthy: None,
                    causes: vec![],
                },
            ],
            ports: vec![],
            what_if: None,
            follow_ups: vec![],
        };
        let text = words(
            &report,
            "measured, from http://fleet:9470",
            Style { color: false },
        );
        let want = "job 12345: network (2 nodes; measured, from http://fleet:9470)
network: leaf2/9 corrupts packets

culprits, most likely first:
  1. fabric leaf2/9: link_errors (score 0.94)
     evidence: symbol errors 12/s on leaf2/9 during the job, 0 before
     action: reseat or replace the cable at leaf2/9

not judged:
  - n2: no run in the window

faults found that are not the job's (off its hosts, paths or routes):
  - fabric leaf7/3: link_errors (score 0.94)
     evidence: symbol errors 12/s on leaf2/9 during the job, 0 before
     action: reseat or replace the cable at leaf2/9

hosts: 1 judged (0 with findings), 1 not judged; pairs probed: 0
";
        assert_eq!(text, want);
    }
}
