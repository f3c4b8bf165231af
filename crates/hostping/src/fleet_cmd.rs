//! `hostping fleet status|hosts|host NAME|causes|slow`: a blocking HTTP client of the
//! collector's read API (docs/fleet.md), printing tables for people or the API's JSON for
//! machines. It only reads: nothing here needs a token.
//!
//! The answers are read into the API's own types (`fleet_api::read`), the ones the collector
//! writes them from: a field renamed there does not compile here. The JSON printed is those
//! values with their keys sorted, as this command has always printed what it read.

use crate::cli::{FleetArgs, FleetCommand, Format};
use crate::output::Outcome;
use analyze::fleet::{health, is_inconclusive, Health};
use fleet_api::client::{Client, ClientError};
use fleet_api::read::{
    CauseHosts, FleetStatus, HostBaseline, HostSummary, HostsQuery, RunsQuery, SlowHost,
    SlowHostsQuery, Source, Verdict,
};
use model::{Diagnosis, NotJudged};
use serde::Serialize;
use std::time::SystemTime;

/// Why a `fleet` command could not answer; the collector's errors name the URL.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The collector gave no answer (unreachable, refused, not the API's JSON).
    #[error(transparent)]
    Collector(#[from] ClientError),
    /// The answer could not be written as JSON again.
    #[error("writing the answer as JSON: {0}")]
    Encode(#[from] serde_json::Error),
    /// Writing the output failed.
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
}

/// `hostping fleet host NAME --format json`: the host's baseline with its latest run's
/// health, diagnoses and what it could not judge (`null` without a run).
#[derive(Debug, Serialize)]
struct HostView {
    baseline: HostBaseline,
    diagnoses: Option<Vec<Diagnosis>>,
    healthy: Option<bool>,
    host: String,
    inconclusive: Option<bool>,
    kind: String,
    not_judged: Option<Vec<NotJudged>>,
    rack: Option<String>,
}

/// Runs `hostping fleet ...`: exit status 1 when an unhealthy or slow host or a cause was
/// found, else 3 when a host is inconclusive (DESIGN 4.3), else 0.
pub fn run(args: &FleetArgs) -> anyhow::Result<Outcome> {
    Ok(answer(args, &mut std::io::stdout().lock())?)
}

/// What hosts conclude together: a finding on any outranks an inconclusive one, as a
/// report's exit status does.
fn outcome(unhealthy: bool, inconclusive: bool) -> Outcome {
    if unhealthy {
        Outcome::Findings
    } else if inconclusive {
        Outcome::Inconclusive
    } else {
        Outcome::Healthy
    }
}

/// An answer as JSON for machines and as a table for people, and what it concludes.
struct Answer {
    json: serde_json::Value,
    outcome: Outcome,
    table: String,
}

impl Answer {
    fn new(typed: &impl Serialize, outcome: Outcome, table: String) -> Result<Answer, FleetError> {
        // Through a Value: its map sorts the keys (see the module docs).
        Ok(Answer {
            json: serde_json::to_value(typed)?,
            outcome,
            table,
        })
    }
}

/// A host's health: as the collector says, or (a collector older than the field) from the
/// fields it does send, judged the same way.
fn health_of(host: &HostSummary, now: i64) -> Option<Health> {
    host.health.or_else(|| {
        health(
            host.healthy,
            host.inconclusive == Some(true),
            host.last_run_unix_ms,
            now,
        )
    })
}

/// Runs one `fleet` command, writing to `out`; returns what it concluded: a finding (an
/// unhealthy host, a cause, a slow host) exit status 1, as `check` does; an inconclusive
/// host and no finding 3.
fn answer(args: &FleetArgs, out: &mut dyn std::io::Write) -> Result<Outcome, FleetError> {
    let api = Client::new(&args.collector, Default::default());
    let now = model::time::unix_ms(SystemTime::now());
    let answer = match &args.command {
        FleetCommand::Status => {
            let status = api.fleet_status()?;
            let table = status_table(api.base(), &status, now);
            let inconclusive = status.inconclusive.unwrap_or(0) > 0;
            Answer::new(&status, outcome(status.unhealthy > 0, inconclusive), table)?
        }
        FleetCommand::Hosts {
            kind,
            rack,
            cause,
            health,
            nodes,
        } => {
            // Filtered here rather than by the collector, so that an older collector, which
            // knows no `?health=`, is filtered alike (the values were checked by the flags).
            let filter = HostsQuery {
                cause: cause.clone(),
                health: health.clone(),
            }
            .filter()
            .expect("clap checked the values");
            let all = api.hosts()?;
            // A named node the collector never heard from was not judged: it cannot count
            // as healthy (DESIGN 4.3).
            let unknown = nodes
                .as_ref()
                .map_or_else(Vec::new, |n| unknown_hosts(&n.0, &all));
            let hosts: Vec<HostSummary> = all
                .into_iter()
                .map(|mut h| {
                    h.health = health_of(&h, now);
                    h
                })
                .filter(|h| {
                    kind.as_ref().is_none_or(|k| &h.kind == k)
                        && rack.as_ref().is_none_or(|r| rack_of(h) == Some(r.as_str()))
                        && nodes.as_ref().is_none_or(|n| n.0.contains(&h.host))
                        && filter.keeps(h)
                })
                .collect();
            if !unknown.is_empty() {
                eprintln!(
                    "hostping: {} of the nodes named have no run at {}, so they are not judged: {}",
                    unknown.len(),
                    api.base(),
                    unknown.join(", ")
                );
            }
            let unhealthy = hosts.iter().any(|h| h.health == Some(Health::Unhealthy));
            let inconclusive = !unknown.is_empty()
                || hosts.iter().any(|h| {
                    h.health == Some(Health::Inconclusive)
                        || (h.health == Some(Health::Stale) && h.inconclusive == Some(true))
                });
            let table = hosts_table(&hosts, now);
            Answer::new(&hosts, outcome(unhealthy, inconclusive), table)?
        }
        FleetCommand::Host { name } => {
            let baseline = api.host_baseline(name)?;
            let newest = RunsQuery {
                limit: Some("1".into()),
            };
            let runs = api.host_runs(name, &newest)?;
            let latest = runs.into_iter().next().map(|run| run.report);
            let inconclusive = latest.as_ref().map(is_inconclusive);
            let view = HostView {
                kind: baseline.kind.clone(),
                rack: baseline.rack.clone(),
                baseline,
                diagnoses: latest.as_ref().map(|r| r.diagnoses.clone()),
                healthy: latest.as_ref().map(|r| r.healthy),
                host: name.clone(),
                inconclusive,
                not_judged: latest.as_ref().map(|r| r.not_judged.clone()),
            };
            let findings = (view.healthy == Some(false) && inconclusive != Some(true))
                || view
                    .baseline
                    .paths
                    .iter()
                    .any(|p| !matches!(p.verdict, Verdict::Normal | Verdict::Uncertain));
            let table = host_table(&view, now);
            Answer::new(&view, outcome(findings, inconclusive == Some(true)), table)?
        }
        FleetCommand::Causes => {
            let causes = api.causes()?;
            let table = causes_table(&causes);
            Answer::new(&causes, Outcome::found(!causes.is_empty()), table)?
        }
        FleetCommand::Slow { kind, limit } => {
            let query = SlowHostsQuery {
                kind: kind.clone(),
                limit: Some(limit.to_string()),
            };
            let hosts = api.slow_hosts(&query)?;
            let table = slow_table(&hosts);
            Answer::new(&hosts, Outcome::found(!hosts.is_empty()), table)?
        }
    };
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&answer.json)? + "\n",
        Format::Table => answer.table,
    };
    out.write_all(text.as_bytes())?;
    Ok(answer.outcome)
}

/// The names in `wanted` that no host of `known` has, once each, in the order given.
fn unknown_hosts(wanted: &[String], known: &[HostSummary]) -> Vec<String> {
    let mut unknown: Vec<String> = Vec::new();
    for name in wanted {
        if !known.iter().any(|h| &h.host == name) && !unknown.contains(name) {
            unknown.push(name.clone());
        }
    }
    unknown
}

/// The rack a host's latest run named: a collector says, an agent does not.
fn rack_of(host: &HostSummary) -> Option<&str> {
    host.rack.as_ref().and_then(|r| r.as_deref())
}

/// A value's name in the API's JSON (`own`, `slow`, `idle`, `link_failure`), as printed.
fn name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "-".into(),
    }
}

/// "12 s ago", "5 min ago", "3 h ago", "2 d ago", or "-" without a time.
fn ago(then: Option<i64>, now: i64) -> String {
    let Some(then) = then else {
        return "-".into();
    };
    let s = (now - then).max(0) / 1000;
    match s {
        0..=119 => format!("{s} s ago"),
        120..=7_199 => format!("{} min ago", s / 60),
        7_200..=172_799 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// Columns padded to their widest cell; numbers right-aligned.
fn table(header: &[&str], rows: &[Vec<String>], right: &[usize]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let last = i + 1 == cells.len();
            let pad = w.saturating_sub(cell.chars().count());
            if right.contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if !last {
                    s.push_str(&" ".repeat(pad));
                }
            }
            if !last {
                s.push_str("  ");
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `-` for nothing.
fn or_dash(text: Option<&str>) -> String {
    text.unwrap_or("-").to_owned()
}

fn number(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(
        || "-".into(),
        |x| {
            let text = format!("{x:.decimals$}");
            // -0.0 after rounding reads as a deficit of nothing, without the sign.
            match text.strip_prefix('-') {
                Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_owned(),
                _ => text,
            }
        },
    )
}

fn status_table(url: &str, s: &FleetStatus, now: i64) -> String {
    let mut out = format!(
        "collector {url}: {} hosts, {} healthy, {} unhealthy, {} inconclusive, {} stale (no run for {} min)\n",
        s.hosts,
        s.healthy,
        s.unhealthy,
        s.inconclusive.map_or("-".into(), |n| n.to_string()),
        s.stale,
        s.stale_after_ms / 60_000,
    );
    out.push_str(&format!(
        "{} runs stored; last run received {}\n",
        s.runs,
        ago(s.last_ingest_unix_ms, now)
    ));
    let kinds: Vec<Vec<String>> = s
        .kinds
        .iter()
        .map(|k| {
            vec![
                k.kind.clone() + if k.kind_known { "" } else { " (unknown kind)" },
                k.hosts.to_string(),
                k.unhealthy.to_string(),
                k.inconclusive.map_or("-".into(), |n| n.to_string()),
                k.stale.to_string(),
            ]
        })
        .collect();
    if !kinds.is_empty() {
        out.push('\n');
        out.push_str(&table(
            &["KIND", "HOSTS", "UNHEALTHY", "INCONCLUSIVE", "STALE"],
            &kinds,
            &[1, 2, 3, 4],
        ));
    }
    let causes: Vec<Vec<String>> = s
        .causes
        .iter()
        .map(|c| vec![c.cause.clone(), c.hosts.to_string()])
        .collect();
    out.push('\n');
    if causes.is_empty() {
        out.push_str("no cause in any host's latest run\n");
    } else {
        out.push_str(&table(&["CAUSE", "HOSTS"], &causes, &[1]));
    }
    out
}

/// A host's health for people: what needs a look in capitals.
fn health_word(health: Option<Health>) -> String {
    match health {
        Some(Health::Healthy) => "healthy",
        Some(Health::Unhealthy) => "UNHEALTHY",
        Some(Health::Inconclusive) => "INCONCLUSIVE",
        Some(Health::Stale) => "stale",
        None => "-",
    }
    .into()
}

fn hosts_table(hosts: &[HostSummary], now: i64) -> String {
    if hosts.is_empty() {
        return "no hosts\n".into();
    }
    let rows: Vec<Vec<String>> = hosts
        .iter()
        .map(|h| {
            vec![
                h.host.clone(),
                h.kind.clone(),
                or_dash(rack_of(h)),
                health_word(h.health),
                ago(h.last_run_unix_ms, now),
                h.runs.to_string(),
                if h.causes.is_empty() {
                    "-".into()
                } else {
                    h.causes.join(",")
                },
            ]
        })
        .collect();
    table(
        &[
            "HOST", "KIND", "RACK", "HEALTH", "LAST RUN", "RUNS", "CAUSES",
        ],
        &rows,
        &[5],
    )
}

fn host_table(v: &HostView, now: i64) -> String {
    let b = &v.baseline;
    let run = b.run.as_ref();
    let mut out = format!(
        "{}: kind {}, rack {}; latest run {} ({}, {} mode, judged against {})\n",
        v.host,
        v.kind,
        or_dash(v.rack.as_deref()),
        run.map_or("-".into(), |r| r.id.to_string()),
        ago(run.map(|r| r.started_unix_ms), now),
        run.map_or("-".into(), |r| name(&r.mode)),
        match b.paths.first().map(|p| p.source) {
            Some(Source::Own) => "its own baseline",
            Some(Source::Fleet) => "the fleet baseline",
            _ => "no baseline",
        },
    );
    match (v.healthy, v.inconclusive) {
        (Some(_), Some(true)) => out.push_str(
            "INCONCLUSIVE: some links could not be judged, so the host is not called healthy\n",
        ),
        (Some(true), _) => out.push_str("healthy\n"),
        (Some(false), _) => out.push_str("UNHEALTHY\n"),
        (None, _) => {}
    }
    for d in v.diagnoses.iter().flatten() {
        out.push_str(&format!("  {}: {}\n", name(&d.cause), d.evidence));
    }
    for n in v.not_judged.iter().flatten() {
        let links: Vec<String> = n.links.iter().map(ToString::to_string).collect();
        out.push_str(&format!(
            "  not judged ({}): {}{}\n",
            n.reason.as_str(),
            n.detail,
            if links.is_empty() {
                String::new()
            } else {
                format!(" [links {}]", links.join(", "))
            }
        ));
    }
    let rows: Vec<Vec<String>> = b
        .paths
        .iter()
        .map(|p| {
            vec![
                p.rnic.clone(),
                p.endpoint.clone(),
                name(&p.source),
                number(p.bandwidth_gbps, 1),
                number(p.measured_bandwidth_gbps, 1),
                number(p.deficit_pct, 1),
                number(p.latency_us, 2),
                number(p.measured_latency_us, 2),
                name(&p.verdict),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&table(
        &[
            "RNIC",
            "ENDPOINT",
            "SOURCE",
            "BASE Gb/s",
            "Gb/s",
            "DEFICIT %",
            "BASE us",
            "us",
            "VERDICT",
        ],
        &rows,
        &[3, 4, 5, 6, 7],
    ));
    out
}

fn causes_table(causes: &[CauseHosts]) -> String {
    if causes.is_empty() {
        return "no cause in any host's latest run\n".into();
    }
    let mut rows = Vec::new();
    for c in causes {
        for h in &c.hosts {
            let links: Vec<String> = h
                .diagnoses
                .iter()
                .flat_map(|d| d.links.iter().cloned().chain(d.rnic.clone()))
                .collect();
            rows.push(vec![
                c.cause.clone(),
                h.host.clone(),
                h.kind.clone(),
                or_dash(h.rack.as_deref()),
                if links.is_empty() {
                    "-".into()
                } else {
                    links.join(",")
                },
            ]);
        }
    }
    table(&["CAUSE", "HOST", "KIND", "RACK", "WHERE"], &rows, &[])
}

fn slow_table(hosts: &[SlowHost]) -> String {
    if hosts.is_empty() {
        return "no host is persistently slower than its kind's fleet baseline\n".into();
    }
    let mut out = String::new();
    let rows: Vec<Vec<String>> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            vec![
                (i + 1).to_string(),
                h.host.clone(),
                h.kind.clone(),
                or_dash(h.rack.as_deref()),
                number(Some(h.score), 1),
                h.paths.len().to_string(),
            ]
        })
        .collect();
    out.push_str(&table(
        &["RANK", "HOST", "KIND", "RACK", "SCORE", "SLOW PATHS"],
        &rows,
        &[0, 4, 5],
    ));
    out.push('\n');
    for h in hosts {
        out.push_str(&format!("{}: {}\n", h.host, h.evidence));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_columns_and_align_numbers_right() {
        let t = table(
            &["HOST", "RUNS", "CAUSES"],
            &[
                vec!["node-1".into(), "7".into(), "-".into()],
                vec!["n2".into(), "120".into(), "link_failure".into()],
            ],
            &[1],
        );
        assert_eq!(
            t,
            "HOST    RUNS  CAUSES\nnode-1     7  -\nn2       120  link_failure\n"
        );
    }

    #[test]
    fn numbers_lose_the_sign_of_a_rounded_zero() {
        assert_eq!(number(Some(-0.04), 1), "0.0");
        assert_eq!(number(Some(-0.06), 1), "-0.1");
        assert_eq!(number(Some(12.346), 2), "12.35");
        assert_eq!(number(None, 1), "-");
    }

    #[test]
    fn times_read_as_ages() {
        assert_eq!(ago(None, 0), "-");
        assert_eq!(ago(Some(1_000), 13_500), "12 s ago");
        assert_eq!(ago(Some(0), 600_000), "10 min ago");
        assert_eq!(ago(Some(0), 3 * 86_400_000), "3 d ago");
    }
}
