//! `hostping job --nodes LIST | --slurm JOBID --collector URL`: the verdict on real hosts.
//! The collector holds the hosts' runs and the switch ports' counters and judges them
//! (`GET /api/jobs/verdict`, collector/src/job/); this asks it and prints its answer as it
//! came (`--format json`) or in words. With `--what-if` the collector replays the job's
//! traffic on its fabric against the job's own time (`--observed-time`).

use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail, Result};
use model::job::JobReport;

use super::{outcome, words};
use crate::cli::job::JobArgs;
use crate::output::{print, Outcome};
use crate::render::Style;

/// The longest wait for the verdict without probes: the collector reads within 30 s.
const READ_WAIT: Duration = Duration::from_secs(60);
/// With `--probe`: the mesh's pairs each have the collector's own deadline; this bounds the
/// wait, not the probes.
const PROBE_WAIT: Duration = Duration::from_secs(3600);
/// With `--what-if` and no probes: the replays take seconds to a minute (about 15 s for 256
/// hosts), one request at a time at the collector.
const WHAT_IF_WAIT: Duration = Duration::from_secs(600);

/// What is asked: the job's id, nodes and window (Unix seconds; the collector's default
/// where not given: the hour before now).
#[derive(Debug, PartialEq, Eq)]
struct Asked {
    job: Option<String>,
    nodes: Vec<String>,
    since_s: Option<i64>,
    until_s: Option<i64>,
}

/// The what-if asked of the collector: its query parameters (`what_if`, `bytes`,
/// `observed_us`).
#[derive(Debug, PartialEq)]
struct WhatIfAsked {
    traffic: &'static str,
    bytes: u64,
    observed_us: f64,
}

/// Asks the collector for the verdict and prints it.
pub fn run(args: &JobArgs) -> Result<Outcome> {
    let collector = args.collector.as_deref().expect("clap: --collector");
    let what_if = what_if(args)?;
    let token = if args.probe {
        Some(match (&args.token_file, &args.token) {
            (Some(file), _) => agent::sender::read_token_file(file).map_err(anyhow::Error::msg)?,
            (None, Some(token)) => token.clone(),
            (None, None) => bail!(
                "--probe: the pair probes need a token of {collector}'s probe-tokens file: give --token-file FILE (or --token)"
            ),
        })
    } else {
        None
    };
    let now_s = model::time::unix_ms(SystemTime::now()) / 1000;
    let asked = asked(args, now_s)?;
    let url = format!("{}/api/jobs/verdict", collector.trim_end_matches('/'));
    let report = ask(&url, &asked, token.as_deref(), what_if.as_ref())?;
    print(args.format, &report, |r| {
        words::render(r, Style::for_stdout())
    })?;
    Ok(outcome(&report))
}

/// `--what-if` on real hosts: the collector replays a ring or tree all-reduce of `--bytes`
/// and compares it with `--observed-time`, which only the job knows.
fn what_if(args: &JobArgs) -> Result<Option<WhatIfAsked>> {
    if !args.what_if {
        return Ok(None);
    }
    let Some(observed) = args.observed_time else {
        bail!(
            "--what-if with --collector needs --observed-time DURATION: the job's own measured \
             time of the --traffic it replays (one {} all-reduce of {} bytes), which the \
             replays are compared with",
            args.traffic,
            args.bytes
        );
    };
    // A workload file stays on this machine: the collector's GET carries no file, and the
    // collector reads none of its callers' paths. Refused rather than sent some other way.
    let traffic = match args.traffic.as_str() {
        "ring" => "ring",
        "tree" => "tree",
        file => bail!(
            "--traffic {file}: with --collector the what-if replays `ring` or `tree`; a \
             workload file is replayed on a simulated cluster only (--sim-cluster)"
        ),
    };
    Ok(Some(WhatIfAsked {
        traffic,
        bytes: args.bytes,
        observed_us: observed.as_secs_f64() * 1e6,
    }))
}

/// The job's nodes and window: from Slurm with `--slurm` (`--since`/`--until` override
/// its times), else `--nodes` and the times given.
fn asked(args: &JobArgs, now_s: i64) -> Result<Asked> {
    let time = |flag: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| slurm::time::unix_seconds(flag, t))
            .transpose()
    };
    let (since, until) = (time("--since", &args.since)?, time("--until", &args.until)?);
    let Some(id) = &args.slurm else {
        let nodes = args.nodes.as_ref().expect("clap: --nodes or --slurm");
        return Ok(Asked {
            job: None,
            nodes: nodes.0.clone(),
            since_s: since,
            until_s: until,
        });
    };
    let job = slurm::job::ask(id, now_s)?;
    let since_s = since.unwrap_or(job.start_s);
    // A job that ran for less than a second still has a window to judge.
    let until_s = until.unwrap_or(job.end_s.max(job.start_s + 1));
    Ok(Asked {
        job: Some(id.clone()),
        nodes: job.nodes,
        since_s: Some(since_s),
        until_s: Some(until_s),
    })
}

/// One GET to the collector: its verdict, or an error naming the URL and saying why (its
/// own words for a refusal).
fn ask(
    url: &str,
    asked: &Asked,
    token: Option<&str>,
    what_if: Option<&WhatIfAsked>,
) -> Result<JobReport> {
    let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
    let mut request = client.get(url).query("nodes", asked.nodes.join(","));
    for (key, value) in [("since", asked.since_s), ("until", asked.until_s)] {
        if let Some(value) = value {
            request = request.query(key, value.to_string());
        }
    }
    if let Some(job) = &asked.job {
        request = request.query("job", job);
    }
    if let Some(token) = token {
        request = request
            .query("probe", "1")
            .header("Authorization", format!("Bearer {token}"));
    }
    if let Some(w) = what_if {
        request = request
            .query("what_if", w.traffic)
            .query("bytes", w.bytes.to_string())
            .query("observed_us", w.observed_us.to_string());
    }
    let wait = match (token, what_if) {
        (Some(_), _) => PROBE_WAIT,
        (None, Some(_)) => WHAT_IF_WAIT,
        (None, None) => READ_WAIT,
    };
    let mut answer = request
        .config()
        .timeout_global(Some(wait))
        .build()
        .call()
        .map_err(|e| anyhow!("--collector {url}: {e}"))?;
    let status = answer.status().as_u16();
    let text = answer
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .map_err(|e| anyhow!("--collector {url}: reading the answer: {e}"))?;
    if status != 200 {
        let words = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| text.trim().chars().take(300).collect());
        bail!("--collector: {status} from {url}: {words}");
    }
    serde_json::from_str(&text)
        .map_err(|e| anyhow!("--collector {url}: the answer is not a job verdict: {e}"))
}
