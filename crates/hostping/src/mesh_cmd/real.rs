//! `hostping mesh --nodes LIST --collector URL`: asks the collector for a mesh of real hosts
//! (`POST /api/mesh`, which asks their agents pair by pair; collector/src/mesh.rs), then
//! prints its answer as it came (`--format json`) or as a table.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use fleet_api::mesh::MeshRequest;
use serde_json::Value;

use crate::cli::MeshArgs;
use crate::output::{print, Outcome};
use crate::progress;
use crate::render::Style;

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
    let url = format!("{}/api/mesh", collector.trim_end_matches('/'));
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
    let answer = ask(
        &url,
        &token,
        &body,
        Duration::from_secs_f64(args.duration) + ANSWER_WAIT,
    );
    bar.finish_and_clear();
    let report = answer?;
    print(args.format, &report, |r| {
        table(r, collector, Style::for_stdout())
    })?;
    Ok(outcome(&report))
}

/// One POST to the collector: its JSON answer, or an error naming the collector and saying
/// why (its own words for a refusal).
fn ask(url: &str, token: &str, body: &MeshRequest, wait: Duration) -> Result<Value> {
    let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
    let (status, text) = fleet_api::post::ask(&client, url, token, body, wait, 64 << 20)
        .map_err(|e| anyhow!("--collector: {e}"))?;
    let parsed: Option<Value> = serde_json::from_str(&text).ok();
    if status != 200 {
        let words = fleet_api::post::error_words(&text);
        bail!("--collector: {status} from {url}: {words}");
    }
    parsed.ok_or_else(|| anyhow!("--collector: {url} answered something else than JSON"))
}

/// DESIGN 4.3's exit status over the pairs: 1 when one is abnormal, failed or unreachable,
/// else 3 when one was not judged (a pair without a recorded baseline, or one being
/// recorded: `uncertain`) or there is no pair at all, else 0.
fn outcome(report: &Value) -> Outcome {
    let statuses: Vec<&str> = report["pairs"]
        .as_array()
        .map(|p| p.iter().filter_map(|p| p["status"].as_str()).collect())
        .unwrap_or_default();
    if statuses
        .iter()
        .any(|s| matches!(*s, "abnormal" | "failed" | "unreachable"))
    {
        Outcome::Findings
    } else if statuses.is_empty() || statuses.iter().any(|s| *s != "normal") {
        Outcome::Inconclusive
    } else {
        Outcome::Healthy
    }
}

/// The mesh for people: a summary, the nodes whose pairs could not run, then every pair.
fn table(report: &Value, collector: &str, style: Style) -> String {
    let mut out = String::new();
    let pairs: &[Value] = report["pairs"].as_array().map_or(&[], Vec::as_slice);
    let nodes: &[Value] = report["nodes"].as_array().map_or(&[], Vec::as_slice);
    let count = |s: &str| pairs.iter().filter(|p| p["status"] == s).count();
    let _ = writeln!(
        out,
        "{} {} hosts, {} pairs through {collector} (measured, not simulated)",
        style.bold("mesh:"),
        nodes.len(),
        pairs.len(),
    );
    let bad = count("abnormal") + count("failed") + count("unreachable");
    let verdict = if bad > 0 {
        style.red(&format!(
            "{} abnormal, {} failed, {} unreachable",
            count("abnormal"),
            count("failed"),
            count("unreachable")
        ))
    } else if pairs.is_empty() {
        style.yellow("no pair: no two hosts share an RNIC index")
    } else if let Some(recorded) = report["baselines_recorded"].as_u64() {
        style.green(&format!("{recorded} pairs recorded as their baselines"))
    } else if count("uncertain") > 0 {
        style.yellow(&format!(
            "{} normal, {} measured, not judged (no baseline recorded)",
            count("normal"),
            count("uncertain")
        ))
    } else {
        style.green(&format!(
            "{} pairs normal against their recorded baselines",
            count("normal")
        ))
    };
    let _ = writeln!(out, "{verdict}");
    for node in nodes.iter().filter(|n| !n["error"].is_null()) {
        let _ = writeln!(
            out,
            "  {}: {}",
            node["host"].as_str().unwrap_or("?"),
            node["error"].as_str().unwrap_or("")
        );
    }
    if let Some(cover) = report["cover"].as_str() {
        let _ = writeln!(out, "cover: {cover}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<20} {:<20} {:>8} {:>7}  {:>7} {:>7} {:>7}  {:<11} why",
        "A", "B", "lat us", "host A", "network", "host B", "Gb/s", "status"
    );
    let end = |e: &Value| {
        format!(
            "{}/{}",
            e["host"].as_str().unwrap_or("?"),
            e["rnic"].as_str().unwrap_or("?")
        )
    };
    let num = |v: &Value, digits: usize| {
        v.as_f64()
            .map_or("-".to_string(), |v| format!("{v:.digits$}"))
    };
    for p in pairs {
        let status = p["status"].as_str().unwrap_or("?");
        let shown = format!("{status:<11}");
        let shown = match status {
            "normal" => style.green(&shown),
            "uncertain" => style.yellow(&shown),
            _ => style.red(&shown),
        };
        let why = p["error"]
            .as_str()
            .or(p["reason"].as_str())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<20} {:<20} {:>8} {:>7}  {:>7} {:>7} {:>7}  {shown} {}",
            end(&p["a"]),
            end(&p["b"]),
            num(&p["latency_us"], 2),
            num(&p["host_a_us"], 2),
            num(&p["network_us"], 2),
            num(&p["host_b_us"], 2),
            num(&p["bandwidth_gbps"], 1),
            style.gray(why),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(statuses: &[&str]) -> Value {
        let pairs: Vec<Value> = statuses.iter().map(|s| json!({"status": s})).collect();
        json!({"pairs": pairs, "simulated": false})
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
        let report = json!({
            "pairs": [
                {"a": {"host": "node01", "rnic": "rnic0"}, "b": {"host": "node02", "rnic": "rnic0"},
                 "latency_us": 30.5, "host_a_us": 12.0, "host_b_us": 12.5, "network_us": 6.0,
                 "bandwidth_gbps": 3.25, "status": "uncertain", "reason": "measured, not judged"},
                {"a": {"host": "node02", "rnic": "rnic0"}, "b": {"host": "node03", "rnic": "rnic0"},
                 "latency_us": null, "status": "unreachable", "error": "node03's agent: refused"}
            ],
            "nodes": [{"host": "node01", "error": null}, {"host": "node02", "error": null},
                      {"host": "node03", "error": "node03's agent: refused"}],
            "cover": "per rail only", "simulated": false
        });
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
