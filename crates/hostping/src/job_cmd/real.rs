//! `hostping job --nodes LIST | --slurm JOBID --collector URL`: the verdict on real hosts.
//! The collector holds the hosts' runs and the switch ports' counters and judges them
//! (`GET /api/jobs/verdict`, collector/src/job/); this asks it and prints its answer as it
//! came (`--format json`) or in words. With `--what-if` the collector replays the job's
//! traffic on its fabric against the job's own time (`--observed-time`). With `--nccl DIR`
//! the job's own collectives go with the question (`POST`, DESIGN 4.8): the collector
//! judges them with what it holds, and the job's hosts and window default to the records'.

use std::time::{Duration, SystemTime};

use anyhow::{bail, Result};
use fleet_api::client::Client;
use fleet_api::collectives::JobCollectives;
use fleet_api::job::{Collective, VerdictQuery, WhatIf};
use model::job::CollectiveEvidence;

use super::{outcome, words};
use crate::cli::job::JobArgs;
use crate::output::{collector_error, print_to, Outcome};

/// The longest wait for the verdict without probes: the collector reads within 30 s.
const READ_WAIT: Duration = Duration::from_secs(60);
/// With `--probe`: the mesh's pairs each have the collector's own deadline; this bounds the
/// wait, not the probes.
const PROBE_WAIT: Duration = Duration::from_secs(3600);
/// With `--what-if` and no probes: the replays take seconds to a minute (about 15 s for 256
/// hosts), one request at a time at the collector.
const WHAT_IF_WAIT: Duration = Duration::from_secs(600);

/// Asks the collector for the verdict, with the job's own `collectives` when read, and
/// prints it.
pub fn run(
    args: &JobArgs,
    collectives: Option<CollectiveEvidence>,
    policy: Option<&verdict::actions::Policy>,
) -> Result<Outcome> {
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
    let wait = match (&token, &what_if) {
        (Some(_), _) => PROBE_WAIT,
        (None, Some(_)) => WHAT_IF_WAIT,
        (None, None) => READ_WAIT,
    };
    let query = VerdictQuery {
        probe: token.is_some(),
        what_if,
        ..asked(args, collectives.as_ref(), now_s)?
    };
    let posted = collectives.map(|c| JobCollectives {
        job: None,
        records: c.records,
        skipped: c.skipped,
        dropped: 0,
        summaries: c.summaries,
        simulated: c.simulated,
    });
    let mut client = Client::new(collector, Default::default());
    if let Some(token) = token {
        client = client.with_token(token);
    }
    let mut report = client
        .job_verdict(&query, posted.as_ref(), wait)
        .map_err(collector_error)?;
    super::propose(&mut report, policy);
    print_to(args.output.as_deref(), args.format, &report, |r, style| {
        words::render(r, words::Observed::Measured, style)
    })?;
    Ok(outcome(&report))
}

/// `--what-if` on real hosts: the collector replays a ring or tree all-reduce of `--bytes`
/// and compares it with `--observed-time`, which only the job knows.
fn what_if(args: &JobArgs) -> Result<Option<WhatIf>> {
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
    let Ok(collective) = args.traffic.parse::<Collective>() else {
        bail!(
            "--traffic {}: with --collector the what-if replays `ring` or `tree`; a \
             workload file is replayed on a simulated cluster only (--sim-cluster)",
            args.traffic
        );
    };
    Ok(Some(WhatIf {
        collective,
        bytes: args.bytes,
        observed_us: observed.as_secs_f64() * 1e6,
    }))
}

/// The job's nodes and window: from Slurm with `--slurm` (`--since`/`--until` override
/// its times), else `--nodes` and the times given; with the job's `collectives`, the hosts
/// they name and their span stand for what is not given. Neither probes nor a what-if.
fn asked(
    args: &JobArgs,
    collectives: Option<&CollectiveEvidence>,
    now_s: i64,
) -> Result<VerdictQuery> {
    let time = |flag: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| model::time::unix_seconds(flag, t))
            .transpose()
    };
    let (since, until) = (time("--since", &args.since)?, time("--until", &args.until)?);
    let Some(id) = &args.slurm else {
        let nodes = match (&args.nodes, collectives) {
            (Some(nodes), _) => nodes.0.clone(),
            (None, Some(c)) => super::hosts_in_rank_order(c),
            (None, None) => unreachable!("clap: --nodes, --slurm or --nccl"),
        };
        let span = collectives.and_then(span_s);
        return Ok(VerdictQuery {
            job: None,
            nodes,
            since_s: since.or(span.map(|s| s.0)),
            until_s: until.or(span.map(|s| s.1)),
            probe: false,
            what_if: None,
        });
    };
    let job = slurm::job::ask(id, now_s)?;
    let since_s = since.unwrap_or(job.start_s);
    // A job that ran for less than a second still has a window to judge.
    let until_s = until.unwrap_or(job.end_s.max(job.start_s + 1));
    Ok(VerdictQuery {
        job: Some(id.clone()),
        nodes: job.nodes,
        since_s: Some(since_s),
        until_s: Some(until_s),
        probe: false,
        what_if: None,
    })
}

/// The window the records span, Unix seconds: from just before the first bucket's start
/// (the window's start is exclusive) to the last one's end.
fn span_s(collectives: &CollectiveEvidence) -> Option<(i64, i64)> {
    let first = collectives
        .summaries
        .iter()
        .map(|s| s.start_s)
        .reduce(f64::min)?;
    let last = collectives
        .summaries
        .iter()
        .map(|s| s.start_s + s.width_s)
        .reduce(f64::max)?;
    Some((first.floor() as i64 - 1, last.ceil() as i64))
}
