//! The job's hosts as the verdict sees them: each node's newest run that started in the
//! window (the report as its agent sent it and the collector stored it), and the paths the
//! job's traffic crosses on it: each GPU through its nearest RNIC, or each RNIC to its
//! nearest memory node on a host without GPUs, as the simulated job counts them.
//!
//! A run its host judged without a baseline of its own (line rate and like paths only) is
//! judged again against its kind's fleet baseline, as `GET /api/hosts/{host}/baseline` does
//! (`analyze::fleet::judge`, Hostping 5's Abnormal_th): a host as slow on every path as its
//! peers in the same run passes its own check, not its fleet's.

use super::query::Window;
use crate::refresh;
use analyze::fleet::baseline::FleetPath;
use analyze::fleet::judge::{has_own_baseline, judge, Verdict};
use model::job::{ExpectedBusBandwidth, FleetAbnormal, JobHost, JobPath, NotJudgedItem};
use model::{ComponentId, HostTopology, Mode, PathStatus, Report};
use std::collections::{BTreeMap, HashMap};
use tokio_postgres::Client;

/// What the job's hosts allow its communicators' bus bandwidth to reach (DESIGN 4.8's
/// `expected`), on the host that allows least, as their agents registered it from their
/// own models (`crate::agents`; `verdict::job::expected_busbw`): a side is unknown when a
/// node has no agent registered or its agent did not say (an older agent, a host without
/// GPUs or with links of unknown capacity).
pub async fn expected_busbw(
    client: &Client,
    nodes: &[String],
) -> Result<ExpectedBusBandwidth, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT expected_across_gbs, expected_within_gbs FROM agents WHERE host = ANY($1)",
            &[&nodes],
        )
        .await?;
    if rows.len() != nodes.len() {
        // A node with no agent registered: what it allows is not known.
        return Ok(ExpectedBusBandwidth::default());
    }
    let hosts: Vec<ExpectedBusBandwidth> = rows
        .iter()
        .map(|r| ExpectedBusBandwidth {
            across_hosts: r.get(0),
            within_host: r.get(1),
        })
        .collect();
    Ok(ExpectedBusBandwidth::least_of(&hosts))
}

/// A kind's fleet baseline per path (`(rnic, endpoint)`).
type Fleet = BTreeMap<(String, String), FleetPath>;

/// Each node's host, in the order given; what could not be read is said in `not_judged`.
pub async fn hosts(
    client: &mut Client,
    nodes: &[String],
    window: Window,
    not_judged: &mut Vec<NotJudgedItem>,
) -> Result<Vec<JobHost>, refresh::RefreshError> {
    let rows = client
        .query(
            "SELECT DISTINCT ON (h.name) h.name, r.kind, r.report::text
             FROM hosts h JOIN runs r ON r.host_id = h.id
             WHERE h.name = ANY($1) AND r.started_unix_ms > $2 AND r.started_unix_ms <= $3
             ORDER BY h.name, r.started_unix_ms DESC, r.id DESC",
            &[&nodes, &(window.since_s * 1000), &(window.until_s * 1000)],
        )
        .await?;
    let mut found: HashMap<String, (String, String)> = rows
        .into_iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    let mut hosts = Vec::with_capacity(nodes.len());
    let mut fleets = Fleets::new();
    for node in nodes {
        let run = found.remove(node);
        hosts.push(judged_host(client, node, run, &mut fleets, not_judged).await?);
    }
    Ok(hosts)
}

/// The fleet baselines read so far, by kind.
pub type Fleets = HashMap<String, Fleet>;

/// `node` from its run (`kind` and the report's text) as [`job_host`] reads it, judged
/// against its kind's fleet baseline when its check had no baseline of its own.
pub async fn judged_host(
    client: &mut Client,
    node: &str,
    run: Option<(String, String)>,
    fleets: &mut Fleets,
    not_judged: &mut Vec<NotJudgedItem>,
) -> Result<JobHost, refresh::RefreshError> {
    let kind = run.as_ref().map(|(kind, _)| kind.clone());
    let mut host = job_host(node, run, not_judged);
    if let (Some(report), Some(kind)) = (&host.report, kind) {
        if !has_own_baseline(report) {
            if !fleets.contains_key(&kind) {
                refresh::ensure_fresh(client, &kind).await?;
                fleets.insert(kind.clone(), refresh::load(client, &kind).await?);
            }
            host.fleet_abnormal = against_fleet(report, &fleets[&kind]);
        }
    }
    Ok(host)
}

/// The paths of `report` its kind's fleet baseline finds abnormal where the host's own
/// check did not, with the figures.
fn against_fleet(report: &Report, fleet: &Fleet) -> Vec<FleetAbnormal> {
    let th = report.judged_with();
    let busy = report.mode == Mode::Busy;
    report
        .paths
        .iter()
        .filter(|p| p.status != PathStatus::Abnormal)
        .filter_map(|path| {
            let key = (path.rnic.to_string(), path.endpoint.to_string());
            let fleet_path = fleet.get(&key)?;
            let judged = judge(path, false, Some(fleet_path), busy, &th);
            (judged.verdict == Verdict::Abnormal).then(|| FleetAbnormal {
                rnic: key.0,
                endpoint: key.1,
                evidence: format!(
                    "{}->{} at {} vs the fleet's {} over {} host(s) (Abnormal_th {:.0} %)",
                    path.rnic,
                    path.endpoint,
                    figures(path.bandwidth_gbps, path.latency_us),
                    figures(judged.bandwidth_gbps, judged.latency_us),
                    judged.hosts.unwrap_or(0),
                    th.abnormal_th * 100.0
                ),
            })
        })
        .collect()
}

fn figures(gbps: Option<f64>, us: Option<f64>) -> String {
    let part = |v: Option<f64>, unit: &str, digits: usize| {
        v.map_or(format!("no {unit}"), |v| format!("{v:.digits$} {unit}"))
    };
    format!("{} and {}", part(gbps, "Gb/s", 0), part(us, "us", 2))
}

/// `node` as its own check saw it, from its run (`kind` and the report's text) when it has
/// one; a run that does not read as a report is said in `not_judged`.
fn job_host(
    node: &str,
    run: Option<(String, String)>,
    not_judged: &mut Vec<NotJudgedItem>,
) -> JobHost {
    let report = run.and_then(|(kind, text)| match serde_json::from_str::<Report>(&text) {
        Ok(report) => Some((kind, report)),
        Err(e) => {
            not_judged.push(NotJudgedItem {
                what: node.to_string(),
                why: format!("its run in the window does not read as a check report: {e}"),
            });
            None
        }
    });
    let job_paths = match &report {
        Some((kind, report)) => job_paths(kind, report),
        None => Vec::new(),
    };
    JobHost {
        host: node.to_string(),
        report: report.map(|(_, r)| r),
        job_paths,
        fleet_abnormal: Vec::new(),
    }
}

/// The paths of a host of `kind` whose check is `report`: with its links when the kind is
/// a built-in model, else the RNIC/endpoint pairs the report probed (no links).
pub fn job_paths(kind: &str, report: &Report) -> Vec<JobPath> {
    match model::builtin::load(kind) {
        Some(Ok(model)) => paths_on_model(&model),
        _ => paths_in_report(report),
    }
}

/// The paths of a host of a built-in model, as the simulated job counts them
/// ([`verdict::job::job_paths`]: each GPU through its nearest RNIC).
fn paths_on_model(model: &HostTopology) -> Vec<JobPath> {
    let rnics: Vec<ComponentId> = model.rnics().map(|c| c.id.clone()).collect();
    verdict::job::job_paths(model, &rnics, verdict::Endpoint::Gpu)
}

/// Each RNIC the report probed to a GPU it reaches at line rate (ids `gpu*`), else an
/// endpoint it reaches at line rate, else the first it probed; in report order.
fn paths_in_report(report: &Report) -> Vec<JobPath> {
    let mut rnics: Vec<&str> = Vec::new();
    for p in &report.paths {
        if !rnics.contains(&p.rnic.as_str()) {
            rnics.push(p.rnic.as_str());
        }
    }
    rnics
        .into_iter()
        .filter_map(|rnic| {
            let mine = || report.paths.iter().filter(move |p| p.rnic.as_str() == rnic);
            let path = mine()
                .find(|p| p.affinitive && p.endpoint.as_str().starts_with("gpu"))
                .or_else(|| mine().find(|p| p.affinitive))
                .or_else(|| mine().next())?;
            Some(JobPath {
                rnic: rnic.to_string(),
                endpoint: path.endpoint.to_string(),
                links: Vec::new(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_in_kind_gives_each_gpu_through_its_nearest_rnic_with_links() {
        // DESIGN 4.1: leaf switch 2r holds RNIC r and GPU 2r, leaf switch 2r+1 GPU 2r+1.
        let report: Report = serde_json::from_value(serde_json::json!({
            "host": "dgx-a100", "mode": "idle", "healthy": true, "provenance": "measured",
            "run": 0, "links": [], "diagnoses": [], "paths": []}))
        .unwrap();
        let paths = job_paths("dgx-a100", &report);
        let got: Vec<(String, String)> = paths
            .iter()
            .map(|p| (p.rnic.clone(), p.endpoint.clone()))
            .collect();
        let want: Vec<(String, String)> = (0..8)
            .map(|g| (format!("rnic{}", g / 2), format!("gpu{g}")))
            .collect();
        assert_eq!(got, want);
        let links: Vec<&str> = paths[2].links.iter().map(|l| l.as_str()).collect();
        assert_eq!(links, ["rnic1--lsw2", "gpu2--lsw2"]);
    }

    #[test]
    fn without_a_model_the_reports_paths_are_used_without_links() {
        let path = |rnic: &str, endpoint: &str, affinitive: bool| {
            serde_json::json!({"rnic": rnic, "endpoint": endpoint, "latency_us": 2.0,
                "bandwidth_gbps": 190.0, "baseline_latency_us": null,
                "baseline_bandwidth_gbps": null, "status": "normal",
                "latency_abnormal": false, "affinitive": affinitive})
        };
        // A host of its own kind: rnic0 reaches gpu0 through the CPU only, gpu1 at line
        // rate; rnic1 reaches no GPU at line rate.
        let mut report: Report = serde_json::from_value(serde_json::json!({
            "host": "a-kind-of-its-own", "mode": "idle", "healthy": true,
            "provenance": "measured", "run": 0, "links": [], "diagnoses": [],
            "paths": [path("rnic0", "mem0", true), path("rnic0", "gpu0", false),
                      path("rnic0", "gpu1", true), path("rnic1", "gpu1", false),
                      path("rnic1", "mem0", true)]}))
        .unwrap();
        let paths = job_paths("a-kind-of-its-own", &report);
        let got: Vec<(&str, &str, usize)> = paths
            .iter()
            .map(|p| (p.rnic.as_str(), p.endpoint.as_str(), p.links.len()))
            .collect();
        assert_eq!(got, [("rnic0", "gpu1", 0), ("rnic1", "mem0", 0)]);
        report.paths.clear();
        assert!(job_paths("a-kind-of-its-own", &report).is_empty());
    }
}
