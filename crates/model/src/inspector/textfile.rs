//! The plugin's node_exporter textfile mode (`NCCL_INSPECTOR_PROM_DUMP=1`): per collective,
//! three samples with the same labels, one per metric, which are joined here into one record
//! by (`comm_id`, `rank`, `coll_sn`).
//!
//! The labels are those NVIDIA/nccl `ext-profiler/inspector/inspector_prom.cc` writes
//! (`inspectorPromCacheStaticLabels`, `inspectorPromGetLabels`): `comm_id`, `hostname`,
//! `rank`, `slurm_job`, `slurm_job_id`, `nranks` (the README's example says `n_ranks`; both
//! are read), `n_nodes`, `gpu_device_id`, `collective`, `coll_sn`, `timestamp`,
//! `message_size`; `pid` where a version writes it.
//!
//! Later plugins (`version="v5.1"` in their README, NVIDIA/nccl `plugins/profiler/inspector`)
//! write another layout: no `comm_id`, `rank`, `coll_sn` or `timestamp`, a `node` and `gpu`
//! in their stead, a bucketed `message_size` (`4-5GB`), and point-to-point series
//! (`nccl_p2p_bus_bandwidth_gbs`, `nccl_p2p_exec_time_microseconds`). Without a rank or a
//! sequence number no rank can be compared with another, so such a collective, and each
//! point-to-point operation, counts as one
//! [`Skipped::unknown_records`](super::Skipped::unknown_records): a version not read, never a
//! malformed record.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::UNIX_EPOCH;

use super::{CollectiveRecord, Parsed};

/// Reads a node_exporter textfile of the plugin's metrics. `# HELP`/`# TYPE` lines and
/// metrics other than the plugin's are ignored; a later version's collective and a
/// point-to-point operation count as unknown (see the module documentation); a sample line
/// that does not parse, or lacks a label a record needs, counts as one
/// [`Skipped::bad_records`](super::Skipped::bad_records), and so does a collective missing
/// one of its three samples. Every line is read, the last one too with no newline after it:
/// the plugin rewrites a textfile whole each interval (its README, "Prometheus Mode"), so
/// no reader tails one and nothing is left for a later read.
pub fn parse_textfile(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<(Cow<str>, u32, u64), usize> = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix(UNKNOWN_KIND_METRIC) {
            // One line a point-to-point operation (its other series is its bandwidth).
            if rest.starts_with(['{', ' ', '\t']) {
                parsed.skipped.unknown_records += 1;
            }
            continue;
        }
        let Some((metric, rest)) = metric_of(line) else {
            continue;
        };
        let Some((labels, after)) = labels(rest) else {
            parsed.skipped.bad_records += 1;
            continue;
        };
        if label(&labels, "version").is_some_and(|v| !reads_textfile_version(&v)) {
            // One line a collective: its execution time.
            if metric == EXEC_TIME {
                parsed.skipped.unknown_records += 1;
            }
            continue;
        }
        let Some(sample) = sample(&labels, after) else {
            parsed.skipped.bad_records += 1;
            continue;
        };
        let key = (sample.comm_id.clone(), sample.rank, sample.seq);
        let value = sample.value;
        let at = *index.entry(key).or_insert_with(|| {
            groups.push(Group::new(sample));
            groups.len() - 1
        });
        // A repeated sample (the same collective written twice) replaces the earlier value.
        groups[at].values[metric] = Some(value);
    }
    for group in groups {
        match group.record() {
            Some(record) => parsed.records.push(record),
            None => parsed.skipped.bad_records += 1,
        }
    }
    parsed
}

/// The plugin's metrics, in the order of a record's values (algorithm bandwidth, bus
/// bandwidth, execution time).
pub const METRICS: [&str; 3] = [
    "nccl_algorithm_bandwidth_gbs",
    "nccl_bus_bandwidth_gbs",
    "nccl_collective_exec_time_microseconds",
];

/// Whether a textfile's `version` label is one read here: the v4 layout (the README's,
/// which writes no `version`; see the module documentation for a later one).
pub fn reads_textfile_version(version: &str) -> bool {
    version.starts_with("v4.")
}

/// The index of the execution time among [`METRICS`].
const EXEC_TIME: usize = 2;
/// A later plugin's series of each point-to-point operation (one of its two).
const UNKNOWN_KIND_METRIC: &str = "nccl_p2p_exec_time_microseconds";

/// The index of the line's metric among [`METRICS`], and the line after the name; `None` for
/// any other metric.
fn metric_of(line: &str) -> Option<(usize, &str)> {
    let end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let at = METRICS.iter().position(|m| *m == &line[..end])?;
    Some((at, &line[end..]))
}

/// One collective's samples so far.
struct Group<'a> {
    first: Sample<'a>,
    /// Algorithm bandwidth, bus bandwidth, execution time.
    values: [Option<f64>; 3],
}

impl<'a> Group<'a> {
    fn new(first: Sample<'a>) -> Self {
        Group {
            first,
            values: [None; 3],
        }
    }

    /// The record, when all three samples came.
    fn record(self) -> Option<CollectiveRecord> {
        let [Some(algobw_gbs), Some(busbw_gbs), Some(exec_us)] = self.values else {
            return None;
        };
        let s = self.first;
        Some(CollectiveRecord {
            communicator: s.comm_id.into_owned(),
            rank: s.rank,
            n_ranks: s.n_ranks,
            n_nodes: s.n_nodes,
            hostname: s.hostname.into_owned(),
            pid: s.pid,
            gpu: s.gpu,
            collective: s.collective.into_owned(),
            seq: s.seq,
            bytes: s.bytes,
            exec_us,
            algobw_gbs,
            busbw_gbs,
            kernel_start_us: None,
            at_us: s.at_us,
            job: s.job.map(Cow::into_owned),
        })
    }
}

/// What one sample line's labels say about its collective.
struct Sample<'a> {
    comm_id: Cow<'a, str>,
    rank: u32,
    seq: u64,
    n_ranks: u32,
    n_nodes: u32,
    hostname: Cow<'a, str>,
    collective: Cow<'a, str>,
    pid: Option<u64>,
    gpu: Option<u32>,
    job: Option<Cow<'a, str>>,
    bytes: u64,
    at_us: f64,
    /// The metric's value.
    value: f64,
}

/// A label's name and (unescaped) value.
type Label<'a> = (&'a str, Cow<'a, str>);

/// The value of the label `name`.
fn label<'a>(labels: &[Label<'a>], name: &str) -> Option<Cow<'a, str>> {
    labels
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.clone())
}

/// Reads a sample line from its `labels` and what follows them (`after`: its value and
/// time); `None` when that does not parse or a label the record needs is missing.
fn sample<'a>(labels: &[Label<'a>], after: &str) -> Option<Sample<'a>> {
    let mut fields = after.split_ascii_whitespace();
    let value = fields.next()?.parse::<f64>().ok()?;
    let sample_ms = fields.next().map(str::parse::<i64>).transpose().ok()?;
    if fields.next().is_some() {
        return None;
    }
    labelled(labels, sample_ms, value)
}

/// What the labels say of their collective (the sample's own time, Unix ms, standing in for
/// a missing `timestamp` label), with the sample's `value`; `None` without a label the
/// record needs.
fn labelled<'a>(labels: &[Label<'a>], sample_ms: Option<i64>, value: f64) -> Option<Sample<'a>> {
    let label = |name: &str| label(labels, name);
    let number = |name: &str| label(name)?.parse::<u64>().ok();
    let small = |name: &str| u32::try_from(number(name)?).ok();
    let at_us = match label("timestamp") {
        Some(stamp) => rfc3339_us(&stamp)?,
        None => sample_ms? as f64 * 1000.0,
    };
    Some(Sample {
        comm_id: label("comm_id")?,
        rank: small("rank")?,
        seq: number("coll_sn")?,
        n_ranks: small("nranks").or_else(|| small("n_ranks"))?,
        n_nodes: small("n_nodes")?,
        hostname: label("hostname")?,
        collective: label("collective")?,
        pid: number("pid"),
        gpu: label("gpu_device_id").and_then(|g| g.strip_prefix("GPU")?.parse().ok()),
        job: label("slurm_job_id").filter(|j| j != "unknown"),
        bytes: message_size(&label("message_size")?)?,
        at_us,
        value,
    })
}

/// One collective's record from the labels its three series share (the plugin's, as
/// node_exporter serves them and Prometheus stores them, with whatever labels those add)
/// and their values in the order of [`METRICS`]: the textfile reader's rules, for readers
/// that get the series from elsewhere (the collector's `--prometheus`). `sample_ms` (Unix
/// ms) stands in for a missing `timestamp` label. `None` when a label the record needs is
/// missing or does not parse.
pub fn record_from_labels<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    values: [f64; 3],
    sample_ms: Option<i64>,
) -> Option<CollectiveRecord> {
    let labels: Vec<Label<'a>> = labels
        .into_iter()
        .map(|(k, v)| (k, Cow::Borrowed(v)))
        .collect();
    let group = Group {
        first: labelled(&labels, sample_ms, values[0])?,
        values: values.map(Some),
    };
    group.record()
}

/// Splits `{k="v",...}` from the start of `rest` into pairs (values unescaped) and what
/// follows; no braces is no labels.
fn labels(rest: &str) -> Option<(Vec<Label<'_>>, &str)> {
    let Some(mut s) = rest.strip_prefix('{') else {
        return Some((Vec::new(), rest));
    };
    let mut pairs = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Some((pairs, after));
        }
        let (name, after) = s.split_once('=')?;
        let (value, after) = quoted(after.trim_start().strip_prefix('"')?)?;
        pairs.push((name.trim(), value));
        s = after.trim_start();
        s = s.strip_prefix(',').unwrap_or(s);
    }
}

/// A label value up to its closing quote (after the opening one), and what follows it; the
/// exposition format escapes `\\`, `\"` and `\n`.
fn quoted(s: &str) -> Option<(Cow<'_, str>, &str)> {
    let end = s.find(['"', '\\'])?;
    if s.as_bytes()[end] == b'"' {
        return Some((Cow::Borrowed(&s[..end]), &s[end + 1..]));
    }
    let mut value = String::from(&s[..end]);
    let mut chars = s[end..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((Cow::Owned(value), &s[end + i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => value.push('\n'),
                other => value.push(other),
            },
            other => value.push(other),
        }
    }
    None
}

/// `2025-10-17T03:31:47Z` as us since the epoch.
fn rfc3339_us(stamp: &str) -> Option<f64> {
    let time = humantime::parse_rfc3339(stamp).ok()?;
    Some(time.duration_since(UNIX_EPOCH).ok()?.as_micros() as f64)
}

/// The plugin's `message_size` (`2.00GB`, `512.00MB`, `1024B`) in bytes. The units are
/// binary: `inspectorFormatHumanReadableSize` in NVIDIA/nccl
/// `ext-profiler/inspector/inspector_prom.cc` divides by 1024 per unit (B, KB, MB, GB, TB) and
/// prints two decimals, so a size is exact only to a hundredth of its unit.
fn message_size(text: &str) -> Option<u64> {
    let digits = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(digits);
    let scale = match unit {
        "B" => 1u64,
        "KB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return None,
    };
    let number: f64 = number.parse().ok()?;
    (number >= 0.0 && number.is_finite()).then(|| (number * scale as f64).round() as u64)
}
