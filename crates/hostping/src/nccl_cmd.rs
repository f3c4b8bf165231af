//! `hostping nccl replay` (issue 39 item 6): a simulated job's NCCL Inspector records
//! (`job --sim-cluster ... --nccl-out DIR`) written into a real dump folder as the plugin
//! writes them while a job runs, so that a real agent (`agent --nccl-dir`) tails them and a
//! real collector judges the job, on a node with no GPU and no NCCL.
//!
//! [`plan`] decides what goes where and when; this module reads the files, keeps the clock
//! and appends. The records stay labelled simulated: only such records are taken, and they
//! are written with the same label (`model::inspector::simulated_record_json`).

mod plan;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use model::inspector::{parse_json, simulated_record_json};

use crate::cli::nccl::{NcclCommand, NcclReplayArgs, MAX_HISTORY_S};
use crate::output::Outcome;
use plan::{Input, Plan};

/// Runs `hostping nccl ...`.
pub fn run(cmd: NcclCommand) -> Result<Outcome> {
    match cmd {
        NcclCommand::Replay(args) => replay(&args),
    }
}

fn replay(args: &NcclReplayArgs) -> Result<Outcome> {
    let inputs = read_inputs(&args.from)?;
    let started_us = started_us(args, now_us())?;
    let plan = plan::plan(inputs, &args.hosts, now_us(), started_us)?;
    let mut files = open_outputs(&args.out_dir, &plan)?;
    let at_once = plan.writes.iter().filter(|w| w.due_us <= now_us()).count();
    let span_s = plan
        .writes
        .last()
        .map_or(0.0, |w| (w.due_us - now_us()) / 1e6)
        .max(0.0);
    eprintln!(
        "nccl replay: {} files of {} into {}, times moved by {:.0} s: {at_once} records written \
         at once (the job began {:.1} s ago), {} more over {span_s:.1} s{}",
        plan.files.len(),
        hosts_text(args),
        args.out_dir.display(),
        plan.shift_us / 1e6,
        (now_us() - started_us) / 1e6,
        plan.writes.len() - at_once,
        if plan.left_out.is_empty() {
            String::new()
        } else {
            let hosts: Vec<&str> = plan.left_out.iter().map(String::as_str).collect();
            format!(" (not replayed here: {})", hosts.join(", "))
        }
    );
    let mut next = 0;
    while next < plan.writes.len() {
        // Everything due by now, each file's text in one append; then wait for the next.
        let now = now_us();
        let mut texts: BTreeMap<usize, String> = BTreeMap::new();
        while let Some(w) = plan.writes.get(next).filter(|w| w.due_us <= now) {
            texts
                .entry(w.file)
                .or_default()
                .push_str(&simulated_record_json(&w.record));
            next += 1;
        }
        for (file, text) in texts {
            let path = args.out_dir.join(&plan.files[file]);
            files[file]
                .write_all(text.as_bytes())
                .and_then(|()| files[file].flush())
                .with_context(|| format!("--out-dir: appending to {}", path.display()))?;
        }
        if let Some(w) = plan.writes.get(next) {
            // Bounded: the plan's last write is at most plan::MAX_LIVE_S after its start.
            std::thread::sleep(Duration::from_micros((w.due_us - now_us()).max(0.0) as u64));
        }
    }
    eprintln!(
        "nccl replay: done, {} records in {}",
        plan.writes.len(),
        args.out_dir.display()
    );
    Ok(Outcome::Healthy)
}

/// When the replayed job began, Unix us: `--started`, or `--history` before `now_us`. A
/// start over [`MAX_HISTORY_S`] ago is refused as `--history` is; a start to come is
/// waited for (the plan bounds how long the replay runs).
fn started_us(args: &NcclReplayArgs, now_us: f64) -> Result<f64> {
    let Some(started_s) = args.started else {
        return Ok(now_us - args.history * 1e6);
    };
    let ago_s = now_us / 1e6 - started_s;
    if ago_s > MAX_HISTORY_S {
        bail!(
            "--started {started_s}: {ago_s:.0} s ago, more history than a replay writes \
             ({MAX_HISTORY_S:.0} s)"
        );
    }
    Ok(started_s * 1e6)
}

/// Every file of the simulated dump, read whole (a finished simulation: nothing is being
/// written there).
fn read_inputs(dir: &Path) -> Result<Vec<Input>> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("--from {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("--from {}", dir.display()))?
            .path();
        if path.is_file() {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        bail!(
            "--from {}: no file (the folder `job --sim-cluster ... --nccl-out` writes)",
            dir.display()
        );
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let bytes =
                std::fs::read(&path).with_context(|| format!("--from: {}", path.display()))?;
            Ok(Input {
                name: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                parsed: parse_json(&bytes),
                path,
            })
        })
        .collect()
}

/// Creates the dump folder and each process's file in it, refusing one that exists: a file
/// already there is another run's, and the agent would read both as one process.
fn open_outputs(dir: &Path, plan: &Plan) -> Result<Vec<File>> {
    // All checked before any is made: a refused replay leaves the folder as it was.
    if let Some(path) = plan.files.iter().map(|n| dir.join(n)).find(|p| p.exists()) {
        bail!(
            "--out-dir: {} exists already: a dump folder holds one job",
            path.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("--out-dir {}", dir.display()))?;
    plan.files
        .iter()
        .map(|name| {
            let path = dir.join(name);
            OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(&path)
                .with_context(|| format!("--out-dir: {}", path.display()))
        })
        .collect()
}

/// The wall clock, Unix us.
fn now_us() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_micros() as f64)
}

/// `node002 as gpu-a17, ...`, for the start message.
fn hosts_text(args: &NcclReplayArgs) -> String {
    let each: Vec<String> = args
        .hosts
        .iter()
        .map(|h| format!("{} as {}", h.sim, h.node))
        .collect();
    each.join(", ")
}
