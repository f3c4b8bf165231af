//! `hostping fleet status|hosts|host NAME|causes|slow`: a blocking HTTP client of the
//! collector's read API (docs/fleet.md), printing tables for people or the API's JSON for
//! machines. It only reads: nothing here needs a token.

use crate::cli::{FleetArgs, FleetCommand, Format};
use crate::output::Outcome;
use serde_json::{json, Value};
use std::time::Duration;

/// Whole-request limit of one call to the collector.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Why a `fleet` command could not answer; each message names the URL.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// No connection, a timeout, a broken answer.
    #[error("cannot reach the collector at {url}: {reason}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// Why.
        reason: String,
    },
    /// The collector answered with an error status.
    #[error("the collector at {url} answered {status}: {message}")]
    Refused {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Its `error` message, or the body.
        message: String,
    },
    /// The answer is not the JSON the API promises.
    #[error(
        "the collector at {url} answered something that is not the fleet API's JSON: {reason}"
    )]
    NotJson {
        /// The URL asked.
        url: String,
        /// Why.
        reason: String,
    },
    /// Writing the output failed.
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
}

/// The read API at one base URL.
struct Api {
    base: String,
    agent: ureq::Agent,
}

impl Api {
    fn new(base: &str) -> Api {
        Api {
            base: base.trim_end_matches('/').to_owned(),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(TIMEOUT))
                .build()
                .into(),
        }
    }

    fn get(&self, path: &str) -> Result<Value, FleetError> {
        let url = format!("{}{path}", self.base);
        let mut response = self
            .agent
            .get(&url)
            .call()
            .map_err(|e| FleetError::Unreachable {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| FleetError::Unreachable {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        let parsed = serde_json::from_str::<Value>(&text);
        if !response.status().is_success() {
            let message = match &parsed {
                Ok(v) => v["error"].as_str().unwrap_or(text.trim()).to_owned(),
                Err(_) => text.trim().chars().take(200).collect(),
            };
            return Err(FleetError::Refused {
                url,
                status,
                message,
            });
        }
        parsed.map_err(|e| FleetError::NotJson {
            url,
            reason: e.to_string(),
        })
    }
}

/// A path segment with the characters a URL cannot hold as they are escaped.
fn segment(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Runs `hostping fleet ...`: exit status 1 when an unhealthy or slow host or a cause was
/// found.
pub fn run(args: &FleetArgs) -> anyhow::Result<Outcome> {
    let found = answer(args, &mut std::io::stdout().lock())?;
    Ok(Outcome::found(found))
}

/// Runs one `fleet` command, writing to `out`; returns whether it found something wrong
/// (an unhealthy host, a cause, a slow host): exit status 1, as `check` does.
fn answer(args: &FleetArgs, out: &mut dyn std::io::Write) -> Result<bool, FleetError> {
    let api = Api::new(&args.collector);
    let now = now_unix_ms();
    let (value, findings, table) = match &args.command {
        FleetCommand::Status => {
            let v = api.get("/api/fleet/status")?;
            let findings = v["unhealthy"].as_i64().unwrap_or(0) > 0;
            let table = status_table(&api.base, &v, now);
            (v, findings, table)
        }
        FleetCommand::Hosts { kind, rack, cause } => {
            let all = api.get("/api/hosts")?;
            let keep = |h: &&Value| {
                kind.as_ref().is_none_or(|k| h["kind"] == k.as_str())
                    && rack.as_ref().is_none_or(|r| h["rack"] == r.as_str())
                    && cause.as_ref().is_none_or(|c| {
                        h["causes"]
                            .as_array()
                            .is_some_and(|cs| cs.iter().any(|x| x == c.as_str()))
                    })
            };
            let hosts: Vec<Value> = all
                .as_array()
                .map(|a| a.iter().filter(keep).cloned().collect())
                .unwrap_or_default();
            let findings = hosts.iter().any(|h| h["healthy"] == false);
            let table = hosts_table(&hosts, now);
            (Value::Array(hosts), findings, table)
        }
        FleetCommand::Host { name } => {
            let baseline = api.get(&format!("/api/hosts/{}/baseline", segment(name)))?;
            let runs = api.get(&format!("/api/hosts/{}/runs?limit=1", segment(name)))?;
            let latest = runs.get(0).cloned().unwrap_or(Value::Null);
            let v = json!({
                "host": name,
                "kind": baseline["kind"],
                "rack": baseline["rack"],
                "healthy": latest["healthy"],
                "diagnoses": latest["diagnoses"],
                "baseline": baseline,
            });
            let findings = latest["healthy"] == false
                || baseline["paths"].as_array().is_some_and(|ps| {
                    ps.iter()
                        .any(|p| p["verdict"] != "normal" && p["verdict"] != "uncertain")
                });
            let table = host_table(&v, now);
            (v, findings, table)
        }
        FleetCommand::Causes => {
            let v = api.get("/api/fleet/causes")?;
            let findings = v.as_array().is_some_and(|c| !c.is_empty());
            let table = causes_table(&v);
            (v, findings, table)
        }
        FleetCommand::Slow { kind, limit } => {
            let mut path = format!("/api/fleet/slow-hosts?limit={limit}");
            if let Some(k) = kind {
                path.push_str(&format!("&kind={}", segment(k)));
            }
            let v = api.get(&path)?;
            let findings = v.as_array().is_some_and(|h| !h.is_empty());
            let table = slow_table(&v);
            (v, findings, table)
        }
    };
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&value).expect("JSON values serialise") + "\n",
        Format::Table => table,
    };
    out.write_all(text.as_bytes())?;
    Ok(findings)
}

fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
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

fn text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn number(v: &Value, decimals: usize) -> String {
    v.as_f64().map_or_else(
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

fn status_table(url: &str, v: &Value, now: i64) -> String {
    let mut out = format!(
        "collector {url}: {} hosts, {} healthy, {} unhealthy, {} stale (no run for {} min)\n",
        text(&v["hosts"]),
        text(&v["healthy"]),
        text(&v["unhealthy"]),
        text(&v["stale"]),
        v["stale_after_ms"].as_i64().unwrap_or(0) / 60_000,
    );
    out.push_str(&format!(
        "{} runs stored; last run received {}\n",
        text(&v["runs"]),
        ago(v["last_ingest_unix_ms"].as_i64(), now)
    ));
    let empty = Vec::new();
    let kinds: Vec<Vec<String>> = v["kinds"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|k| {
            vec![
                text(&k["kind"])
                    + if k["kind_known"] == false {
                        " (unknown kind)"
                    } else {
                        ""
                    },
                text(&k["hosts"]),
                text(&k["unhealthy"]),
                text(&k["stale"]),
            ]
        })
        .collect();
    if !kinds.is_empty() {
        out.push('\n');
        out.push_str(&table(
            &["KIND", "HOSTS", "UNHEALTHY", "STALE"],
            &kinds,
            &[1, 2, 3],
        ));
    }
    let causes: Vec<Vec<String>> = v["causes"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|c| vec![text(&c["cause"]), text(&c["hosts"])])
        .collect();
    out.push('\n');
    if causes.is_empty() {
        out.push_str("no cause in any host's latest run\n");
    } else {
        out.push_str(&table(&["CAUSE", "HOSTS"], &causes, &[1]));
    }
    out
}

fn hosts_table(hosts: &[Value], now: i64) -> String {
    if hosts.is_empty() {
        return "no hosts\n".into();
    }
    let rows: Vec<Vec<String>> = hosts
        .iter()
        .map(|h| {
            let causes: Vec<String> = h["causes"]
                .as_array()
                .map(|c| c.iter().map(text).collect())
                .unwrap_or_default();
            vec![
                text(&h["host"]),
                text(&h["kind"]),
                text(&h["rack"]),
                match h["healthy"].as_bool() {
                    Some(true) => "healthy".into(),
                    Some(false) => "UNHEALTHY".into(),
                    None => "-".into(),
                },
                ago(h["last_run_unix_ms"].as_i64(), now),
                text(&h["runs"]),
                if causes.is_empty() {
                    "-".into()
                } else {
                    causes.join(",")
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

fn host_table(v: &Value, now: i64) -> String {
    let b = &v["baseline"];
    let run = &b["run"];
    let mut out = format!(
        "{}: kind {}, rack {}; latest run {} ({}, {} mode, judged against {})\n",
        text(&v["host"]),
        text(&v["kind"]),
        text(&v["rack"]),
        text(&run["id"]),
        ago(run["started_unix_ms"].as_i64(), now),
        text(&run["mode"]),
        match b["paths"].as_array().and_then(|p| p.first()) {
            Some(p) if p["source"] == "own" => "its own baseline",
            Some(p) if p["source"] == "fleet" => "the fleet baseline",
            _ => "no baseline",
        },
    );
    match v["healthy"].as_bool() {
        Some(true) => out.push_str("healthy\n"),
        Some(false) => out.push_str("UNHEALTHY\n"),
        None => {}
    }
    if let Some(diagnoses) = v["diagnoses"].as_array() {
        for d in diagnoses {
            out.push_str(&format!(
                "  {}: {}\n",
                text(&d["cause"]),
                text(&d["evidence"])
            ));
        }
    }
    let empty = Vec::new();
    let rows: Vec<Vec<String>> = b["paths"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|p| {
            vec![
                text(&p["rnic"]),
                text(&p["endpoint"]),
                text(&p["source"]),
                number(&p["bandwidth_gbps"], 1),
                number(&p["measured_bandwidth_gbps"], 1),
                number(&p["deficit_pct"], 1),
                number(&p["latency_us"], 2),
                number(&p["measured_latency_us"], 2),
                text(&p["verdict"]),
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

fn causes_table(v: &Value) -> String {
    let empty = Vec::new();
    let causes = v.as_array().unwrap_or(&empty);
    if causes.is_empty() {
        return "no cause in any host's latest run\n".into();
    }
    let mut rows = Vec::new();
    for c in causes {
        for h in c["hosts"].as_array().unwrap_or(&empty) {
            let links: Vec<String> = h["diagnoses"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .flat_map(|d| {
                    let mut names: Vec<String> = d["links"]
                        .as_array()
                        .map(|l| l.iter().map(text).collect())
                        .unwrap_or_default();
                    names.extend(d["rnic"].as_str().map(String::from));
                    names
                })
                .collect();
            rows.push(vec![
                text(&c["cause"]),
                text(&h["host"]),
                text(&h["kind"]),
                text(&h["rack"]),
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

fn slow_table(v: &Value) -> String {
    let empty = Vec::new();
    let hosts = v.as_array().unwrap_or(&empty);
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
                text(&h["host"]),
                text(&h["kind"]),
                text(&h["rack"]),
                number(&h["score"], 1),
                h["paths"].as_array().map_or(0, Vec::len).to_string(),
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
        out.push_str(&format!("{}: {}\n", text(&h["host"]), text(&h["evidence"])));
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
        assert_eq!(number(&json!(-0.04), 1), "0.0");
        assert_eq!(number(&json!(-0.06), 1), "-0.1");
        assert_eq!(number(&json!(12.346), 2), "12.35");
        assert_eq!(number(&Value::Null, 1), "-");
    }

    #[test]
    fn times_read_as_ages() {
        assert_eq!(ago(None, 0), "-");
        assert_eq!(ago(Some(1_000), 13_500), "12 s ago");
        assert_eq!(ago(Some(0), 600_000), "10 min ago");
        assert_eq!(ago(Some(0), 3 * 86_400_000), "3 d ago");
    }

    #[test]
    fn url_segments_are_escaped() {
        assert_eq!(segment("node-1.rack_2"), "node-1.rack_2");
        assert_eq!(segment("a b/c?"), "a%20b%2Fc%3F");
    }

    #[test]
    fn an_unreachable_collector_is_named() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let err = Api::new(&format!("http://{addr}/"))
            .get("/api/fleet/status")
            .unwrap_err();
        assert!(matches!(err, FleetError::Unreachable { .. }));
        assert!(
            err.to_string().starts_with(&format!(
                "cannot reach the collector at http://{addr}/api/fleet/status: "
            )),
            "{err}"
        );
    }
}
