//! A diagnosis as plain text, for terminals and `diagnosis.txt`.

use std::fmt::Write;

use super::diagnose::{Diagnosis, MAX_LISTED_ROOTS};

const WIDTH: usize = 92;

/// Cause and summary, the samples used, the root links, and congestion by stage.
pub fn render_text(diagnosis: &Diagnosis) -> String {
    let evidence = &diagnosis.evidence;
    let t = &evidence.thresholds;
    let mut out = String::new();
    writeln!(out, "diagnosis: {}", diagnosis.cause.as_str()).unwrap();
    out += &wrap(&diagnosis.summary, "  ");
    writeln!(out, "  samples: {}", evidence.samples_described).unwrap();
    writeln!(
        out,
        "  congested links: {} (congested fraction >= {} over >= {} weighted packets sampled); \
         congested hops {:.4}",
        evidence.congested_links,
        t.congested_fraction,
        t.min_count,
        evidence.congested_hop_fraction
    )
    .unwrap();
    if !evidence.roots.is_empty() {
        writeln!(
            out,
            "\nroots of congestion trees (line rate {:.0} Gb/s; at line rate from {:.0} %)",
            evidence.line_rate_gbps,
            t.line_rate_fraction * 100.0
        )
        .unwrap();
        let link_width = evidence
            .roots
            .iter()
            .map(|r| r.link.len())
            .max()
            .unwrap_or(0)
            .max("link".len());
        writeln!(
            out,
            "  {:<link_width$}  {:>9}  {:>7}  {:>10}  cause",
            "link", "congested", "Gb/s", "tree links"
        )
        .unwrap();
        for root in &evidence.roots {
            writeln!(
                out,
                "  {:<link_width$}  {:>9.3}  {:>7.1}  {:>10}  {}",
                root.link,
                root.congested_fraction,
                root.gbps,
                root.tree_links,
                root.cause.as_str()
            )
            .unwrap();
        }
        if evidence.roots_not_listed > 0 {
            writeln!(
                out,
                "  ... and {} smaller trees (the {MAX_LISTED_ROOTS} largest are listed)",
                evidence.roots_not_listed
            )
            .unwrap();
        }
    }
    writeln!(out, "\nby stage").unwrap();
    writeln!(
        out,
        "  {:<20}  {:>6}  {:>9}  {:>16}  {:>5}",
        "stage", "links", "congested", "congested hops", "worst"
    )
    .unwrap();
    for stage in &evidence.stages {
        writeln!(
            out,
            "  {:<20}  {:>6}  {:>9}  {:>16.4}  {:>5.3}",
            stage.stage.describe(),
            stage.links,
            stage.congested_links,
            stage.congested_fraction,
            stage.worst_fraction
        )
        .unwrap();
    }
    out
}

/// Greedy word wrap to [`WIDTH`] columns, every line indented.
fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > WIDTH {
            out += &format!("{indent}{line}\n");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line += word;
    }
    if !line.is_empty() {
        out += &format!("{indent}{line}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_word_within_the_width() {
        let text = "word ".repeat(60);
        let wrapped = wrap(&text, "  ");
        assert!(wrapped
            .lines()
            .all(|l| l.len() <= WIDTH && l.starts_with("  ")));
        assert_eq!(wrapped.split_whitespace().count(), 60);
    }
}
