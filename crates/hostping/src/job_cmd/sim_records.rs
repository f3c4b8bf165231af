//! `hostping job --sim-cluster ... --nccl-out DIR` (issue 39 item 5): the simulated job's
//! collectives, step by step on the packet simulator (`simcluster::collectives`), written
//! into DIR as NCCL's Inspector plugin writes a dump (one file per process), then read back
//! by the same reader as `--nccl DIR`: the verdict judges the simulated job's records as it
//! judges a real one's.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use model::inspector::simulated_record_json;
use model::job::CollectiveEvidence;
use simcluster::collectives::{self, StepSettings};
use simcluster::{Cluster, ClusterError, ClusterFaults};

use crate::progress;

/// A process's text is appended to its file once it holds this much: a few hundred
/// records, and never thousands of files' worth of text in memory at once.
const FLUSH_BYTES: usize = 64 << 10;

/// Runs the job over `nodes` (all the cluster's hosts when `None`), writes its records
/// into `dir`, and reads them back. Returns them as evidence, and the faults present at the
/// job's end (those started by then), which the rest of the verdict measures.
pub fn write_and_read(
    cluster: &Cluster,
    faults: &ClusterFaults,
    nodes: Option<&[String]>,
    settings: &StepSettings,
    dir: &Path,
) -> Result<(CollectiveEvidence, ClusterFaults)> {
    let names: Vec<String> = match nodes {
        Some(nodes) => nodes.to_vec(),
        None => cluster.hosts.iter().map(|h| h.name.clone()).collect(),
    };
    let unknown: Vec<&str> = names
        .iter()
        .filter(|n| cluster.host_index(n).is_none())
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(ClusterError::UnknownHosts {
            cluster: cluster.name.clone(),
            hosts: unknown.join(", "),
        }
        .into());
    }
    let hosts: Vec<usize> = names.iter().filter_map(|n| cluster.host_index(n)).collect();
    let processes = collectives::processes(cluster, &hosts);
    // Nothing is written for a job that cannot run.
    collectives::check(&processes, &hosts, settings)?;
    std::fs::create_dir_all(dir).with_context(|| format!("--nccl-out {}", dir.display()))?;
    let paths: Vec<_> = processes.iter().map(|p| dir.join(p.file_name())).collect();
    // A dump folder holds one job: an earlier run's files would be read as this job's.
    for path in &paths {
        std::fs::write(path, "").with_context(|| format!("--nccl-out: {}", path.display()))?;
    }
    let mut buffers = vec![String::new(); processes.len()];
    let mut failed: Option<anyhow::Error> = None;
    let mut flush = |i: usize, text: &mut String| {
        if failed.is_some() || text.is_empty() {
            return;
        }
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .open(&paths[i])
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = appended {
            failed =
                Some(anyhow::Error::new(e).context(format!("--nccl-out: {}", paths[i].display())));
        }
        text.clear();
    };
    let bar = progress::counted(u64::from(settings.steps), "job", "steps simulated");
    let run = collectives::run(
        cluster,
        faults,
        &hosts,
        settings,
        &mut |i, record| {
            buffers[i].push_str(&simulated_record_json(record));
            if buffers[i].len() >= FLUSH_BYTES {
                let mut text = std::mem::take(&mut buffers[i]);
                flush(i, &mut text);
                buffers[i] = text;
            }
        },
        &|done, _| bar.set_position(u64::from(done)),
    )?;
    bar.finish_and_clear();
    for (i, text) in buffers.iter_mut().enumerate() {
        flush(i, text);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    eprintln!(
        "job: {} simulated NCCL Inspector records ({} steps of {} processes, {} replays, {} packets simulated) in {}{}",
        run.records,
        run.steps,
        run.processes.len(),
        run.replays,
        run.packets,
        dir.display(),
        run.hung_on
            .as_ref()
            .map_or(String::new(), |c| format!("; the job hung when the cable at {c} went down"))
    );
    let evidence = super::nccl::read(dir, None)?;
    // The mesh and the what-if measure the cluster as it is at the job's end.
    let at_end = faults.started_by(run.duration_s(), cluster)?;
    Ok((evidence, at_end))
}
