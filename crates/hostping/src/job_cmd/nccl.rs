//! `hostping job --nccl DIR`: the job's collectives from the files NCCL's Inspector plugin
//! wrote (DESIGN 4.8): every file under DIR, JSON dumps and node_exporter textfiles alike
//! (`model::inspector::parse` tells them apart), summarised per rank and time bucket
//! (`analyze::collectives::summarize`) as the agents summarise them for the collector, so a
//! directory and a fleet are judged from the same evidence.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use model::inspector::{CollectiveRecord, Skipped};
use model::job::CollectiveEvidence;

/// What one file gave.
struct FileRead {
    records: Vec<CollectiveRecord>,
    skipped: Skipped,
    simulated_records: u64,
}

/// Reads every file under `dir` and summarises the records (`simulated` when any record is
/// labelled so, `model::inspector::SIMULATED_GIT_REV`: a verdict from them is simulated), in at most `max_summaries`
/// summaries when given (the buckets widened until they fit). An unreadable file is an
/// error naming it; a directory with no record at all is one too (a wrong path, or a job
/// whose plugin writes only at teardown: reference/nccl-inspector.md).
pub fn read(dir: &Path, max_summaries: Option<usize>) -> Result<CollectiveEvidence> {
    let files = files_under(dir)?;
    if files.is_empty() {
        bail!("--nccl {}: no file in it (the Inspector plugin writes one per process into NCCL_INSPECTOR_DUMP_DIR, by default nccl-inspector-<jobid>)", dir.display());
    }
    let read = read_all(&files)?;
    let mut skipped = Skipped::default();
    let mut records = Vec::new();
    let mut simulated_records = 0;
    for file in read {
        skipped.add(&file.skipped);
        records.extend(file.records);
        simulated_records += file.simulated_records;
    }
    if records.is_empty() {
        let why = if skipped.unknown_records > 0 {
            "the records there are of kinds or versions not read (point-to-point operations; \
             a later plugin's textfile, `version=\"v5.x\"`, has no rank or sequence number to \
             compare ranks by: set NCCL_INSPECTOR_PROM_DUMP=0 for its JSON dumps)"
        } else {
            "a job whose NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS is unset writes its \
             records only when it ends"
        };
        bail!(
            "--nccl {}: no NCCL Inspector collective record in its {} file(s) ({} unknown and {} malformed objects skipped); {why}",
            dir.display(),
            files.len(),
            skipped.unknown_records,
            skipped.bad_records
        );
    }
    let mut width_s = analyze::collectives::bucket_width_s(&records);
    let mut summaries = analyze::collectives::summarize(&records, width_s);
    while max_summaries.is_some_and(|cap| summaries.len() > cap) {
        // Each doubling halves the buckets; one bucket a rank and kind is the least.
        width_s *= 2.0;
        let wider = analyze::collectives::summarize(&records, width_s);
        if wider.len() >= summaries.len() {
            bail!(
                "--nccl {}: its records make {} summaries even in one bucket per rank, \
                 collective and size, more than the {} a collector takes",
                dir.display(),
                wider.len(),
                max_summaries.unwrap_or_default()
            );
        }
        summaries = wider;
    }
    Ok(CollectiveEvidence {
        records: records.len() as u64,
        summaries,
        skipped,
        simulated: simulated_records > 0,
        ..CollectiveEvidence::default()
    })
}

/// Every file under `dir`, recursively (the plugin may write into per-job folders), in a
/// stable order.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(dir).with_context(|| format!("--nccl {}", dir.display()))?;
    if !meta.is_dir() {
        bail!(
            "--nccl {}: not a directory (give the dump directory, NCCL_INSPECTOR_DUMP_DIR)",
            dir.display()
        );
    }
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        let entries =
            std::fs::read_dir(&at).with_context(|| format!("--nccl: {}", at.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("--nccl: {}", at.display()))?;
            let kind = entry
                .file_type()
                .with_context(|| format!("--nccl: {}", entry.path().display()))?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Reads and parses `files` on every core: a minute of a 128-rank job is about 70 MB.
fn read_all(files: &[PathBuf]) -> Result<Vec<FileRead>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len());
    let chunk = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(|f| read_one(f)).collect::<Vec<_>>()))
            .collect();
        let mut read = Vec::with_capacity(files.len());
        for worker in workers {
            for file in worker.join().expect("a reader thread panicked") {
                read.push(file?);
            }
        }
        Ok(read)
    })
}

/// One file's records. A record cut at the end (a file still being written) is left for
/// the next read, as the agent's tailing reader leaves it.
fn read_one(file: &Path) -> Result<FileRead> {
    let bytes = std::fs::read(file).with_context(|| format!("--nccl: {}", file.display()))?;
    let parsed = model::inspector::parse(&bytes);
    Ok(FileRead {
        records: parsed.records,
        skipped: parsed.skipped,
        simulated_records: parsed.simulated_records,
    })
}
