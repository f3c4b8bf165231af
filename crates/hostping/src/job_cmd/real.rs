//! `hostping job --nodes LIST | --slurm JOBID --collector URL`: the verdict on real hosts.
//! The collector holds the hosts' runs and the switch ports' counters and judges them
//! (`GET /api/jobs/verdict`, collector/src/job/); this asks it and prints its answer as it
//! came (`--format json`) or in words.

mod slurm;
mod time_arg;

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

/// What is asked: the job's id, nodes and window (Unix seconds; the collector's default
/// where not given: the hour before now).
#[derive(Debug, PartialEq, Eq)]
struct Asked {
    job: Option<String>,
    nodes: Vec<String>,
    since_s: Option<i64>,
    until_s: Option<i64>,
}

/// Asks the collector for the verdict and prints it.
pub fn run(args: &JobArgs) -> Result<Outcome> {
    let collector = args.collector.as_deref().expect("clap: --collector");
    if args.what_if {
        bail!("--what-if: not available with --collector yet (use --sim-cluster)");
    }
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
    let report = ask(&url, &asked, token.as_deref())?;
    print(args.format, &report, |r| {
        words::render(r, Style::for_stdout())
    })?;
    Ok(outcome(&report))
}

/// The job's nodes and window: from Slurm with `--slurm` (`--since`/`--until` override
/// its times), else `--nodes` and the times given.
fn asked(args: &JobArgs, now_s: i64) -> Result<Asked> {
    let time = |flag: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| time_arg::unix_seconds(flag, t))
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
    let job = slurm::job(id, now_s)?;
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
fn ask(url: &str, asked: &Asked, token: Option<&str>) -> Result<JobReport> {
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
    let wait = if token.is_some() {
        PROBE_WAIT
    } else {
        READ_WAIT
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
