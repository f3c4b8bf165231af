//! A Slurm job's nodes and window (`hostping job --slurm JOBID`). `scontrol show job -o
//! JOBID` while slurmctld remembers the job (`NodeList=`, `StartTime=`, `EndTime=`; a
//! running job's EndTime is its time limit, so the window ends now), else
//! `sacct -j JOBID -X -n -P -o NodeList,Start,End` from the accounting database. Both run
//! with `SLURM_TIME_FORMAT=%s`, so that times come as Unix seconds rather than in the local
//! time of whoever runs them, and within [`TOOL_WAIT`].

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use model::hostlist::HostlistError;

/// The longest `scontrol` or `sacct` may take (slurmctld answers in milliseconds; a
/// controller that does not answer makes them retry for about a minute).
pub const TOOL_WAIT: Duration = Duration::from_secs(20);

/// Why Slurm could not say which nodes a job ran on and when. Each names the job (or the
/// tool) as `--slurm` gave it.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// The id has characters no Slurm job id has (it goes on a command line).
    #[error("--slurm {job:?}: not a Slurm job id (digits, or ARRAYID_TASK, HETID+N)")]
    NotAJobId {
        /// The id as given.
        job: String,
    },
    /// scontrol does not know the job, and sacct failed.
    #[error(
        "--slurm {job}: scontrol does not know the job ({scontrol}) and sacct failed ({sacct})"
    )]
    Unknown {
        /// The job id.
        job: String,
        /// What scontrol said on stderr.
        scontrol: String,
        /// What sacct said on stderr.
        sacct: String,
    },
    /// scontrol reached no controller (no slurm.conf, slurmctld down or unreachable), and
    /// sacct failed too.
    #[error(
        "--slurm {job}: scontrol could not reach a Slurm controller ({scontrol}) and sacct \
         failed ({sacct})"
    )]
    NoController {
        /// The job id.
        job: String,
        /// What scontrol said on stderr.
        scontrol: String,
        /// What sacct said on stderr.
        sacct: String,
    },
    /// scontrol does not know the job, and sacct lists nothing.
    #[error("--slurm {job}: no such job: scontrol does not know it ({scontrol}) and sacct lists nothing")]
    NoSuchJob {
        /// The job id.
        job: String,
        /// What scontrol said on stderr.
        scontrol: String,
    },
    /// The tool is not on the PATH.
    #[error("--slurm: `{tool}` is not installed (Slurm's client tools: Debian's slurm-client)")]
    NotInstalled {
        /// `scontrol` or `sacct`.
        tool: String,
    },
    /// The tool could not be started or waited for.
    #[error("--slurm: running `{tool}`")]
    Run {
        /// `scontrol` or `sacct`.
        tool: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The tool did not end within [`TOOL_WAIT`].
    #[error("--slurm: `{command}` did not answer within {} s (is slurmctld reachable?)", TOOL_WAIT.as_secs())]
    Timeout {
        /// The command line run.
        command: String,
    },
    /// The tool's output is not what this reader knows, or the job has nothing to judge yet.
    #[error("--slurm {job}: {reason}")]
    Output {
        /// The job id.
        job: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// The job's NodeList is no hostlist.
    #[error("--slurm {job}: NodeList {list}")]
    NodeList {
        /// The job id.
        job: String,
        /// The list as Slurm printed it.
        list: String,
        /// Why it does not expand.
        #[source]
        source: HostlistError,
    },
}

/// [`SlurmError::Output`] for `job`.
fn output(job: &str, reason: impl Into<String>) -> SlurmError {
    SlurmError::Output {
        job: job.to_string(),
        reason: reason.into(),
    }
}

/// A Slurm job as the verdict needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmJob {
    /// Its nodes, expanded from Slurm's hostlist.
    pub nodes: Vec<String>,
    /// When it started, Unix seconds.
    pub start_s: i64,
    /// When it ended, Unix seconds; now for a job still running.
    pub end_s: i64,
}

/// Asks Slurm about `job` at `now_s`.
pub fn ask(job: &str, now_s: i64) -> Result<SlurmJob, SlurmError> {
    if job.is_empty()
        || !job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+.".contains(c))
    {
        return Err(SlurmError::NotAJobId {
            job: job.to_string(),
        });
    }
    let scontrol = run("scontrol", &["show", "job", "-o", job])?;
    if scontrol.status.success() {
        return parse_scontrol(job, &text(&scontrol.stdout), now_s);
    }
    let sacct = run(
        "sacct",
        &["-j", job, "-X", "-n", "-P", "-o", "NodeList,Start,End"],
    )?;
    let said = |o: &Output| stderr_line(&o.stderr);
    if !sacct.status.success() {
        if !controller_answered(&text(&scontrol.stderr)) {
            return Err(SlurmError::NoController {
                job: job.to_string(),
                scontrol: said(&scontrol),
                sacct: said(&sacct),
            });
        }
        return Err(SlurmError::Unknown {
            job: job.to_string(),
            scontrol: said(&scontrol),
            sacct: said(&sacct),
        });
    }
    parse_sacct(job, &text(&sacct.stdout), now_s)?.ok_or_else(|| SlurmError::NoSuchJob {
        job: job.to_string(),
        scontrol: said(&scontrol),
    })
}

/// Whether scontrol's failure is the controller's answer that it does not know the job
/// (`slurm_load_jobs error: Invalid job id specified`), rather than no controller reached
/// (`Could not establish a configuration source`, `Unable to contact slurm controller`).
fn controller_answered(stderr: &str) -> bool {
    stderr.contains("Invalid job id")
}

/// A tool's stderr in one line: its lines joined with `; `.
pub(crate) fn stderr_line(bytes: &[u8]) -> String {
    let text = text(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("; ")
}

/// A tool's output as text.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Why a Slurm tool could not be run to its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The tool is not on the PATH.
    #[error("`{tool}` is not installed (Slurm's client tools: Debian's slurm-client)")]
    NotInstalled {
        /// `scontrol` or `sacct`.
        tool: String,
    },
    /// The tool could not be started or waited for.
    #[error("running `{tool}`")]
    Run {
        /// `scontrol` or `sacct`.
        tool: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The tool did not end within [`TOOL_WAIT`].
    #[error("`{command}` did not answer within {} s (is slurmctld reachable?)", TOOL_WAIT.as_secs())]
    Timeout {
        /// The command line run.
        command: String,
    },
}

impl From<RunError> for SlurmError {
    fn from(e: RunError) -> SlurmError {
        match e {
            RunError::NotInstalled { tool } => SlurmError::NotInstalled { tool },
            RunError::Run { tool, source } => SlurmError::Run { tool, source },
            RunError::Timeout { command } => SlurmError::Timeout { command },
        }
    }
}

/// Runs a Slurm tool to its end within [`TOOL_WAIT`], its output read meanwhile.
pub(crate) fn run(tool: &str, args: &[&str]) -> Result<Output, RunError> {
    let mut child = Command::new(tool)
        .args(args)
        .env("SLURM_TIME_FORMAT", "%s")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => RunError::NotInstalled {
                tool: tool.to_string(),
            },
            _ => RunError::Run {
                tool: tool.to_string(),
                source: e,
            },
        })?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + TOOL_WAIT;
    let status = loop {
        let waited = child.try_wait().map_err(|e| RunError::Run {
            tool: tool.to_string(),
            source: e,
        })?;
        if let Some(status) = waited {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::Timeout {
                command: format!("{tool} {}", args.join(" ")),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// The value of `key=` among the whitespace-separated fields of a `scontrol -o` line (the
/// key whole: `NodeList=`, not `ReqNodeList=`).
pub(crate) fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
}

/// The job in `scontrol show job -o` output (its first line: an array's first task).
pub fn parse_scontrol(job: &str, out: &str, now_s: i64) -> Result<SlurmJob, SlurmError> {
    let line = out
        .lines()
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| output(job, "scontrol printed nothing"))?;
    let state = field(line, "JobState").unwrap_or("UNKNOWN");
    let get = |key: &str| {
        field(line, key)
            .ok_or_else(|| output(job, format!("scontrol's line has no {key}= field: {line}")))
    };
    let nodes = nodes(job, get("NodeList")?, state)?;
    let start_s = seconds(job, "StartTime", get("StartTime")?)?
        .ok_or_else(|| output(job, format!("the job ({state}) has not started")))?;
    let end_s = match seconds(job, "EndTime", get("EndTime")?)? {
        Some(end) if !is_running(state) => end.min(now_s),
        _ => now_s,
    };
    window(job, nodes, start_s, end_s)
}

/// The job in `sacct -X -n -P -o NodeList,Start,End` output; `None` when it lists nothing.
pub fn parse_sacct(job: &str, out: &str, now_s: i64) -> Result<Option<SlurmJob>, SlurmError> {
    let Some(line) = out.lines().find(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    let fields: Vec<&str> = line.trim().split('|').collect();
    let [list, start, end] = fields[..] else {
        return Err(output(
            job,
            format!("sacct's line is not NodeList|Start|End: {line}"),
        ));
    };
    let nodes = nodes(job, list, "")?;
    let start_s = seconds(job, "Start", start)?.ok_or_else(|| {
        output(
            job,
            format!("the job has not started (sacct: Start={start})"),
        )
    })?;
    let end_s = seconds(job, "End", end)?.unwrap_or(now_s).min(now_s);
    window(job, nodes, start_s, end_s).map(Some)
}

/// Whether a job in this state still runs (its EndTime is a limit, not an end).
fn is_running(state: &str) -> bool {
    matches!(
        state,
        "RUNNING"
            | "SUSPENDED"
            | "CONFIGURING"
            | "COMPLETING"
            | "STAGE_OUT"
            | "RESIZING"
            | "SIGNALING"
    )
}

/// The job's nodes from Slurm's hostlist; a clear error for a job without any yet.
fn nodes(job: &str, list: &str, state: &str) -> Result<Vec<String>, SlurmError> {
    let list = list.trim();
    if list.is_empty() || list == "(null)" || list == "None assigned" {
        let state = if state.is_empty() {
            String::new()
        } else {
            format!(" is {state} and")
        };
        return Err(output(
            job,
            format!("the job{state} has no nodes yet: nothing to judge"),
        ));
    }
    model::hostlist::expand(list).map_err(|source| SlurmError::NodeList {
        job: job.to_string(),
        list: list.to_string(),
        source,
    })
}

/// A Slurm time in Unix seconds; `None` for one not known yet (`Unknown`, `None`, `N/A`).
fn seconds(job: &str, key: &str, value: &str) -> Result<Option<i64>, SlurmError> {
    match value {
        "Unknown" | "None" | "N/A" | "" => Ok(None),
        v => v.parse::<i64>().map(Some).map_err(|_| {
            output(
                job,
                format!("{key}={v} is not Unix seconds (SLURM_TIME_FORMAT=%s is set)"),
            )
        }),
    }
}

/// The job's window, refused when it ends before it starts.
fn window(job: &str, nodes: Vec<String>, start_s: i64, end_s: i64) -> Result<SlurmJob, SlurmError> {
    if end_s < start_s {
        return Err(output(
            job,
            format!("it starts at {start_s}, after its end {end_s}"),
        ));
    }
    Ok(SlurmJob {
        nodes,
        start_s,
        end_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: i64 = 1_795_787_200;

    fn fixture(name: &str) -> String {
        let path = format!("{}/testdata/slurm/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn a_running_job_ends_now_and_a_completed_one_at_its_end() {
        // The running job's EndTime (1795787465) is its 5-minute limit.
        let running = parse_scontrol("1", &fixture("scontrol-running.txt"), NOW).unwrap();
        assert_eq!(
            running,
            SlurmJob {
                nodes: vec!["vm".into()],
                start_s: 1_795_787_165,
                end_s: NOW
            }
        );
        let done = parse_scontrol("3", &fixture("scontrol-completed.txt"), NOW).unwrap();
        assert_eq!(
            (done.nodes, done.start_s, done.end_s),
            (vec!["vm".into()], 1_795_787_165, 1_795_787_165)
        );
    }

    #[test]
    fn a_pending_job_has_no_nodes_to_judge() {
        let e = parse_scontrol("2", &fixture("scontrol-pending.txt"), NOW).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--slurm 2: the job is PENDING and has no nodes yet: nothing to judge"
        );
        let e = parse_sacct("2", &fixture("sacct-pending.txt"), NOW).unwrap_err();
        assert!(e.to_string().contains("has no nodes yet"), "{e}");
    }

    #[test]
    fn sacct_gives_a_finished_jobs_nodes_and_window() {
        let job = parse_sacct("7", &fixture("sacct-finished.txt"), 1_795_800_000)
            .unwrap()
            .unwrap();
        assert_eq!(job.nodes, ["node001", "node002", "node017"]);
        assert_eq!((job.start_s, job.end_s), (1_795_787_165, 1_795_790_765));
        assert_eq!(parse_sacct("7", "", NOW).unwrap(), None);
        assert!(parse_sacct("7", "a|b", NOW)
            .unwrap_err()
            .to_string()
            .contains("NodeList|Start|End"));
    }

    #[test]
    fn the_tools_own_refusals_are_real_output() {
        // What the error messages quote: the captured stderr of each tool.
        assert_eq!(
            fixture("scontrol-unknown.stderr").trim(),
            "slurm_load_jobs error: Invalid job id specified"
        );
        assert_eq!(
            fixture("sacct-no-accounting.stderr").trim(),
            "Slurm accounting storage is disabled"
        );
        assert!(ask("12;rm", NOW)
            .unwrap_err()
            .to_string()
            .contains("not a Slurm job id"));
    }

    #[test]
    fn no_controller_is_told_apart_from_an_unknown_job() {
        let scontrol = fixture("scontrol-no-controller.stderr");
        assert!(!controller_answered(&scontrol));
        assert!(controller_answered(&fixture("scontrol-unknown.stderr")));
        let e = SlurmError::NoController {
            job: "12345".into(),
            scontrol: stderr_line(scontrol.as_bytes()),
            sacct: stderr_line(fixture("sacct-no-controller.stderr").as_bytes()),
        };
        assert_eq!(
            e.to_string(),
            "--slurm 12345: scontrol could not reach a Slurm controller (scontrol: error: \
             resolve_ctls_from_dns_srv: res_nsearch error: Unknown host; scontrol: error: \
             fetch_config: DNS SRV lookup failed; scontrol: error: _establish_config_source: \
             failed to fetch config; scontrol: fatal: Could not establish a configuration \
             source) and sacct failed (sacct: error: resolve_ctls_from_dns_srv: res_nsearch \
             error: Unknown host; sacct: error: fetch_config: DNS SRV lookup failed; sacct: \
             error: _establish_config_source: failed to fetch config; sacct: fatal: Could not \
             establish a configuration source)"
        );
    }

    proptest! {
        /// Any scontrol line with a hostlist and two times reads back; the window never
        /// ends after now and never before its start.
        #[test]
        fn scontrol_lines_read_back(
            prefix in "[a-z]{1,6}", lo in 0u32..50, len in 0u32..20, start in 0i64..2_000_000_000,
            dur in 0i64..100_000, running in any::<bool>(), noise in "X[a-z]{0,8}=[a-z0-9()]{0,8}"
        ) {
            let list = format!("{prefix}[{lo}-{}]", lo + len);
            let state = if running { "RUNNING" } else { "COMPLETED" };
            let line = format!(
                "JobId=5 {noise} JobState={state} ReqNodeList=(null) StartTime={start} EndTime={} NodeList={list} Power= \n",
                start + dur
            );
            let now = start + 50_000;
            let job = parse_scontrol("5", &line, now).unwrap();
            prop_assert_eq!(job.nodes.len() as u32, len + 1);
            prop_assert!(job.start_s == start && job.end_s >= start && job.end_s <= now);
            if running {
                prop_assert_eq!(job.end_s, now);
            } else {
                prop_assert_eq!(job.end_s, (start + dur).min(now));
            }
        }

        #[test]
        fn arbitrary_output_never_panics(out in ".{0,200}") {
            let _ = parse_scontrol("1", &out, NOW);
            let _ = parse_sacct("1", &out, NOW);
        }
    }
}
