//! `hostping mesh --nodes LIST --collector URL`: asks the collector for a mesh of real hosts
//! (`POST /api/mesh`, which asks their agents pair by pair; collector/src/mesh.rs), then
//! prints its answer as it came (`--format json`) or as a table.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{bail, Result};
use fleet_api::client::Client;
use fleet_api::mesh::{MeshAnswer, MeshRequest};
use fleet_api::pair::{End, PairStatus};

use crate::cli::MeshArgs;
use crate::output::{collector_error, print_to, Outcome};
use crate::progress;
use views::Style;

/// The longest wait for the collector's answer beyond `--duration`: every pair may take the
/// collector's own limit of 5 minutes, so this bounds the wait, not the mesh.
const ANSWER_WAIT: Duration = Duration::from_secs(3600);

/// Runs a real mesh.
pub fn run(args: &MeshArgs) -> Result<Outcome> {
    let collector = args.collector.as_deref().expect("clap: --collector");
    let nodes = &args.nodes.as_ref().expect("clap: --nodes").0;
    let token = match (&args.token_file, &args.token) {
        (Some(file), _) => agent::sender::read_token_file(file).map_err(anyhow::Error::msg)?,
        (None, Some(token)) => token.clone(),
        (None, None) => bail!(
            "--collector {collector} needs a token of its probe-tokens file: give --token-file FILE (or --token)"
        ),
    };
    let client = Client::new(collector, Default::default()).with_token(token);
    let body = MeshRequest {
        nodes: nodes.clone(),
        duration_s: Some(args.duration),
        rate: Some(args.rate_cross_leaf),
        rate_same_leaf: Some(args.rate_same_leaf),
        bw_iterations: Some(args.bw_iterations),
        depth: Some(args.depth),
        record_baseline: Some(args.record_baseline),
    };
    let bar = progress::spinner("mesh");
    bar.set_message(format!(
        "{} nodes, pairs asked of their agents by {collector}",
        nodes.len()
    ));
    let answer = client.mesh(&body, Duration::from_secs_f64(args.duration) + ANSWER_WAIT);
    bar.finish_and_clear();
    let report = answer.map_err(collector_error)?;
    // Printed through a JSON value, whose objects sort their keys: as it was printed when
    // it was read as one.
    print_to(
        args.output.as_deref(),
        args.format,
        &serde_json::to_value(&report)?,
        |_, style| table(&report, collector, style),
    )?;
    Ok(outcome(&report))
}

/// DESIGN 4.3's exit status over the pairs: 1 when one is abnormal, failed or unreachable,
/// else 3 when one was not judged (a pair without a recorded baseline, or one being
/// recorded: `uncertain`) or there is no pair at all, else 0.
fn outcome(report: &MeshAnswer) -> Outcome {
    let statuses: Vec<PairStatus> = report.pairs.iter().map(|p| p.status()).collect();
    if statuses.iter().any(|s| {
        matches!(
            s,
            PairStatus::Abnormal | PairStatus::Failed | PairStatus::Unreachable
        )
    }) {
        Outcome::Findings
    } else if statuses.is_empty() || statuses.iter().any(|s| *s != PairStatus::Normal) {
        Outcome::Inconclusive
    } else {
        Outcome::Healthy
    }
}

/// The mesh for people: a summary, the nodes whose pairs could not run, then every pair.
fn table(report: &MeshAnswer, collector: &str, style: Style) -> String {
    let mut out = String::new();
    let (pairs, nodes) = (&report.pairs, &report.nodes);
    let count = |s: PairStatus| pairs.iter().filter(|p| p.status() == s).count();
    // A simulated number is always labelled: agents run with `--sim` answer from their
    // virtual hosts.
    let simulated = pairs.iter().filter(|p| p.simulated()).count();
    let provenance = match simulated {
        0 => "measured, not simulated".to_string(),
        n if n == pairs.len() => style.yellow("SIMULATED: the agents run virtual hosts"),
        n => style.yellow(&format!("{n} of {} pairs SIMULATED", pairs.len())),
    };
    let _ = writeln!(
        out,
        "{} {} hosts, {} pairs through {collector} ({provenance})",
        style.bold("mesh:"),
        nodes.len(),
        pairs.len(),
    );
    let bad =
        count(PairStatus::Abnormal) + count(PairStatus::Failed) + count(PairStatus::Unreachable);
    let verdict = if bad > 0 {
        style.red(&format!(
            "{} abnormal, {} failed, {} unreachable",
            count(PairStatus::Abnormal),
            count(PairStatus::Failed),
            count(PairStatus::Unreachable)
        ))
    } else if pairs.is_empty() {
        style.yellow("no pair: no two hosts share an RNIC index")
    } else if let Some(recorded) = report.baselines_recorded {
        style.green(&format!("{recorded} pairs recorded as their baselines"))
    } else if count(PairStatus::Uncertain) > 0 {
        style.yellow(&format!(
            "{} normal, {} measured, not judged (no baseline recorded)",
            count(PairStatus::Normal),
            count(PairStatus::Uncertain)
        ))
    } else {
        style.green(&format!(
            "{} pairs normal against their recorded baselines",
            count(PairStatus::Normal)
        ))
    };
    let _ = writeln!(out, "{verdict}");
    for node in nodes {
        if let Some(error) = &node.error {
            let _ = writeln!(out, "  {}: {error}", node.host);
        }
    }
    let _ = writeln!(out, "cover: {}", report.cover);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<20} {:<20} {:>8} {:>7}  {:>7} {:>7} {:>7}  {:<11} why",
        "A", "B", "lat us", "host A", "network", "host B", "Gb/s", "status"
    );
    let end = |e: &End| format!("{}/{}", e.host, e.rnic);
    let num =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    for p in pairs {
        let status = p.status();
        let shown = format!("{:<11}", status.as_str());
        let shown = match status {
            PairStatus::Normal => style.green(&shown),
            PairStatus::Uncertain => style.yellow(&shown),
            _ => style.red(&shown),
        };
        let f = p.figures();
        let _ = writeln!(
            out,
            "{:<20} {:<20} {:>8} {:>7}  {:>7} {:>7} {:>7}  {shown} {}",
            end(&f.a),
            end(&f.b),
            num(f.latency_us, 2),
            num(f.host_a_us, 2),
            num(f.network_us, 2),
            num(f.host_b_us, 2),
            num(f.bandwidth_gbps, 1),
            style.gray(p.why()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// An answer of `pairs` and `nodes`, on a budget no test reads.
    fn answer(pairs: Value, nodes: Value) -> MeshAnswer {
        serde_json::from_value(json!({
            "pairs": pairs, "nodes": nodes, "simulated": false, "cover": "per rail only",
            "budget": {"duration_s": 10.0, "rate": 1.0, "rate_same_leaf": 10.0,
                       "latency_probes_per_pair": 10, "latency_probes_same_leaf_pair": 100,
                       "latency_probes": 0, "bw_iterations": 1000},
            "elapsed_s": 1.0
        }))
        .unwrap()
    }

    /// A pair that did not run, with `status` and the figures in `more`.
    fn pair(a: &str, b: &str, status: &str, why: &str, more: Value) -> Value {
        let mut p = json!({
            "a": {"host": a, "rnic": "rnic0"}, "b": {"host": b, "rnic": "rnic0"},
            "status": status, "reason": why, "error": why, "simulated": false
        });
        p.as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        p
    }

    fn pairs(statuses: &[&str]) -> MeshAnswer {
        let pairs: Vec<Value> = statuses
            .iter()
            .map(|s| pair("a", "b", s, "", json!({})))
            .collect();
        answer(json!(pairs), json!([]))
    }

    #[test]
    fn the_exit_status_never_calls_healthy_what_was_not_judged() {
        assert_eq!(outcome(&pairs(&["normal", "normal"])), Outcome::Healthy);
        assert_eq!(
            outcome(&pairs(&["normal", "uncertain"])),
            Outcome::Inconclusive
        );
        assert_eq!(outcome(&pairs(&[])), Outcome::Inconclusive);
        assert_eq!(
            outcome(&pairs(&["uncertain", "unreachable"])),
            Outcome::Findings
        );
        assert_eq!(outcome(&pairs(&["failed"])), Outcome::Findings);
    }

    #[test]
    fn the_table_names_every_pair_and_why_a_node_could_not_run() {
        let node = |host: &str, error: Option<&str>| {
            json!({"host": host, "agent_url": null, "rnics": ["rnic0"], "devices": [],
                   "error": error})
        };
        let report = answer(
            json!([
                pair(
                    "node01",
                    "node02",
                    "uncertain",
                    "measured, not judged",
                    json!({"latency_us": 30.5, "host_a_us": 12.0, "host_b_us": 12.5,
                            "network_us": 6.0, "bandwidth_gbps": 3.25})
                ),
                pair(
                    "node02",
                    "node03",
                    "unreachable",
                    "node03's agent: refused",
                    json!({})
                )
            ]),
            json!([
                node("node01", None),
                node("node02", None),
                node("node03", Some("node03's agent: refused"))
            ]),
        );
        let text = table(&report, "http://c:9470", Style { color: false });
        assert!(
            text.contains("3 hosts, 2 pairs through http://c:9470"),
            "{text}"
        );
        assert!(
            text.contains("0 abnormal, 0 failed, 1 unreachable"),
            "{text}"
        );
        assert!(text.contains("  node03: node03's agent: refused"), "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("node01/rnic0"))
            .unwrap();
        for cell in ["30.50", "12.00", "6.00", "12.50", "3.2", "uncertain"] {
            assert!(row.contains(cell), "{row}");
        }
        assert!(text
            .lines()
            .any(|l| l.starts_with("node02/rnic0") && l.contains("unreachable")));
    }
}
