//! The plugin's JSON files: pretty-printed objects one after another (NVIDIA/nccl
//! `ext-profiler/inspector/README.md`, "Output Example"), appended while the job runs.
//!
//! One pass of serde_json's stream deserializer over the bytes, typing each object's sections
//! as it goes (borrowed strings, nothing kept but the records). An object whose fields do not
//! type is read again as raw sections, so that the version is checked before the fields: a
//! later format or another kind of record is then "unknown", not "bad", whatever its fields
//! look like; the common case is read once.

use std::borrow::Cow;

use serde::de::{self, IgnoredAny, Visitor};
use serde::Deserialize;
use serde_json::error::Category;
use serde_json::value::RawValue;

use super::{CollectiveRecord, Parsed};

/// Reads a stream of Inspector JSON objects (any whitespace between them, pretty-printed or
/// not). `v4.x` collective records become [`CollectiveRecord`]s; other well-formed objects
/// (point-to-point records, `dump_stats`, other versions) count as
/// [`Skipped::unknown_records`](super::Skipped::unknown_records); broken ones as
/// [`Skipped::bad_records`](super::Skipped::bad_records), after which reading resumes at the
/// next `{` that starts a line. An object cut by the end of the text is not bad: its length is
/// [`Parsed::incomplete_tail`].
pub fn parse_json(bytes: &[u8]) -> Parsed {
    let mut parsed = Parsed::default();
    let mut pos = 0;
    while pos < bytes.len() {
        pos = parse_from(bytes, pos, &mut parsed);
    }
    parsed
}

/// Reads objects from `pos` until the end or the first error, and returns where to go on
/// (`bytes.len()` when done). A stream deserializer stops for good at its first error, so
/// each error starts a new one past the broken object.
fn parse_from(bytes: &[u8], pos: usize, parsed: &mut Parsed) -> usize {
    let mut stream = serde_json::Deserializer::from_slice(&bytes[pos..]).into_iter::<Sections>();
    loop {
        let before = pos + stream.byte_offset();
        match stream.next() {
            None => return bytes.len(),
            Some(Ok(sections)) => count(read_record(sections), parsed),
            Some(Err(error)) => {
                let start = before + leading_whitespace(&bytes[before..]);
                if error.classify() != Category::Data {
                    return recover(bytes, start, error.classify(), parsed);
                }
                return read_raw_from(bytes, start, parsed);
            }
        }
    }
}

/// Reads the object at `start`, whose fields did not type, as raw sections; returns where
/// to go on.
fn read_raw_from(bytes: &[u8], start: usize, parsed: &mut Parsed) -> usize {
    let mut stream = serde_json::Deserializer::from_slice(&bytes[start..]).into_iter::<RawObject>();
    match stream.next() {
        Some(Ok(raw)) => {
            count(read_raw(&raw), parsed);
            start + stream.byte_offset()
        }
        Some(Err(error)) => recover(bytes, start, error.classify(), parsed),
        None => bytes.len(),
    }
}

/// After an error in the object starting at `start`: counts it and returns where to go on.
fn recover(bytes: &[u8], start: usize, category: Category, parsed: &mut Parsed) -> usize {
    let next_line_object = next_line_object(bytes, start + 1);
    let cut = match category {
        Category::Eof => true,
        // A number cut after its `.` or `e` is a syntax error, not an end of input.
        Category::Syntax => next_line_object.is_none() && fails_at_end(&bytes[start..]),
        Category::Io | Category::Data => false,
    };
    match (cut, category, next_line_object) {
        // Cut by the end of the text, and no other object after it: a file being written.
        (true, _, None) => {
            parsed.incomplete_tail = bytes.len() - start;
            bytes.len()
        }
        // Well-formed JSON that is not an object of ours (a wrong type, a duplicate key, a
        // top-level array): skip exactly that value, which keeps objects written on one line.
        (_, Category::Data, _) => {
            parsed.skipped.bad_records += 1;
            skip_value(bytes, start).unwrap_or(next_line_object.unwrap_or(bytes.len()))
        }
        // Broken text, or an object that never closed before the next one began.
        _ => {
            parsed.skipped.bad_records += 1;
            next_line_object.unwrap_or(bytes.len())
        }
    }
}

/// Whether parsing `object` (the last in the text) fails on its last line at or past its
/// last byte, as it does where a writer stopped mid-number: it may yet complete. A broken
/// last byte is taken for a cut too; the next read, with more text, tells them apart.
fn fails_at_end(object: &[u8]) -> bool {
    let Err(error) = serde_json::from_slice::<IgnoredAny>(object) else {
        return false;
    };
    let lines = object.iter().filter(|&&b| b == b'\n').count() + 1;
    let last_line = object.len()
        - object
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    error.line() == lines && error.column() >= last_line
}

/// The end of the well-formed JSON value starting at `start`, if it is one.
fn skip_value(bytes: &[u8], start: usize) -> Option<usize> {
    let mut stream =
        serde_json::Deserializer::from_slice(&bytes[start..]).into_iter::<IgnoredAny>();
    match stream.next() {
        Some(Ok(_)) => Some(start + stream.byte_offset()),
        _ => None,
    }
}

/// Where the next `{` at the start of a line is, from `from` on. The plugin writes each
/// top-level object from column 0 and indents the nested ones, so this is where the next
/// object begins after a broken one.
fn next_line_object(bytes: &[u8], from: usize) -> Option<usize> {
    let from = from.min(bytes.len());
    bytes[from..]
        .windows(2)
        .position(|w| w == b"\n{")
        .map(|i| from + i + 1)
}

/// JSON whitespace at the start of `bytes`.
fn leading_whitespace(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .count()
}

/// Adds one well-formed top-level object: a record, or a count of what it was.
fn count(read: Result<Option<(CollectiveRecord, bool)>, ()>, parsed: &mut Parsed) {
    match read {
        Ok(Some((record, simulated))) => {
            parsed.records.push(record);
            parsed.simulated_records += u64::from(simulated);
        }
        Ok(None) => parsed.skipped.unknown_records += 1,
        Err(()) => parsed.skipped.bad_records += 1,
    }
}

/// [`read_record`] on raw sections, typing each only once the ones before it said the
/// object is a `v4.x` collective record.
fn read_raw(raw: &RawObject) -> Result<Option<(CollectiveRecord, bool)>, ()> {
    let metadata: Option<Metadata> = raw.metadata.map(typed).transpose()?;
    if !metadata.as_ref().is_some_and(Metadata::known_version) {
        return Ok(None);
    }
    let coll_perf: Option<CollPerf> = raw.coll_perf.map(typed).transpose()?;
    if !matches!(&coll_perf, Some(CollPerf { coll: Some(_), .. })) {
        return Ok(None);
    }
    read_record(Sections {
        header: raw.header.map(typed).transpose()?,
        metadata,
        coll_perf,
    })
}

/// `Ok(None)`: not a `v4.x` collective record; `Err`: one with a field missing. The flag:
/// the record says it was simulated.
fn read_record(sections: Sections) -> Result<Option<(CollectiveRecord, bool)>, ()> {
    let Some(metadata) = sections.metadata.filter(Metadata::known_version) else {
        return Ok(None);
    };
    let Some(perf) = sections.coll_perf else {
        return Ok(None);
    };
    let Some(collective) = perf.coll else {
        return Ok(None);
    };
    let header = sections.header.ok_or(())?;

    let exec_us = perf.coll_exec_time_us.ok_or(())?.as_f64();
    let trace = perf.event_trace_ts.as_ref();
    let kernel_start_us = trace
        .and_then(|t| t.kernel_events.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|e| e.kernel_start_ts.map(Num::as_f64))
        .reduce(f64::min);
    let coll_start_us = trace.and_then(|t| t.coll_start_ts).map(Num::as_f64);
    let at_us = match kernel_start_us.or(coll_start_us) {
        Some(at) => at,
        None => metadata.dump_timestamp_us.ok_or(())?.as_f64() - exec_us,
    };
    let simulated = metadata.git_rev.as_deref() == Some(super::SIMULATED_GIT_REV);
    let record = CollectiveRecord {
        communicator: header.id.ok_or(())?.into_owned(),
        rank: uint(header.rank)?,
        n_ranks: uint(header.n_ranks)?,
        n_nodes: uint(header.nnodes)?,
        hostname: metadata.hostname.ok_or(())?.into_owned(),
        pid: metadata.pid.map(|p| p.as_u64().ok_or(())).transpose()?,
        gpu: None,
        collective: collective.into_owned(),
        seq: uint(perf.coll_sn)?,
        bytes: uint(perf.coll_msg_size_bytes)?,
        exec_us,
        algobw_gbs: perf.coll_algobw_gbs.ok_or(())?.as_f64(),
        busbw_gbs: perf.coll_busbw_gbs.ok_or(())?.as_f64(),
        kernel_start_us,
        at_us,
        job: None,
    };
    Ok(Some((record, simulated)))
}

/// One section of an object, typed; a mistyped field is a bad record.
fn typed<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Result<T, ()> {
    serde_json::from_str(raw.get()).map_err(|_| ())
}

/// A present, whole, non-negative number that fits `T`.
fn uint<T: TryFrom<u64>>(n: Option<Num>) -> Result<T, ()> {
    n.and_then(Num::as_u64)
        .and_then(|n| T::try_from(n).ok())
        .ok_or(())
}

/// A top-level object's sections, typed; other keys (`dump_stats`, a point-to-point
/// record's own section) are skipped unread.
#[derive(Deserialize)]
struct Sections<'a> {
    #[serde(borrow)]
    header: Option<Header<'a>>,
    #[serde(borrow)]
    metadata: Option<Metadata<'a>>,
    #[serde(borrow)]
    coll_perf: Option<CollPerf<'a>>,
}

/// A top-level object, split into the sections read; other keys (`dump_stats`, a
/// point-to-point record's own section) are skipped unread.
#[derive(Deserialize)]
struct RawObject<'a> {
    #[serde(borrow)]
    header: Option<&'a RawValue>,
    #[serde(borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow)]
    coll_perf: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    rank: Option<Num>,
    n_ranks: Option<Num>,
    nnodes: Option<Num>,
}

#[derive(Deserialize)]
struct Metadata<'a> {
    #[serde(borrow)]
    inspector_output_format_version: Option<Cow<'a, str>>,
    dump_timestamp_us: Option<Num>,
    #[serde(borrow)]
    hostname: Option<Cow<'a, str>>,
    pid: Option<Num>,
    /// `hostping-simulated` on a simulated job's records ([`super::SIMULATED_GIT_REV`]).
    #[serde(borrow)]
    git_rev: Option<Cow<'a, str>>,
}

impl Metadata<'_> {
    /// Format `v4.x`, the one this reader knows.
    fn known_version(&self) -> bool {
        self.inspector_output_format_version
            .as_deref()
            .is_some_and(|v| v.starts_with("v4."))
    }
}

#[derive(Deserialize)]
struct CollPerf<'a> {
    #[serde(borrow)]
    coll: Option<Cow<'a, str>>,
    coll_sn: Option<Num>,
    coll_msg_size_bytes: Option<Num>,
    coll_exec_time_us: Option<Num>,
    coll_algobw_gbs: Option<Num>,
    coll_busbw_gbs: Option<Num>,
    event_trace_ts: Option<EventTrace>,
}

/// Verbose records' timestamps (us since the epoch).
#[derive(Deserialize)]
struct EventTrace {
    coll_start_ts: Option<Num>,
    kernel_events: Option<Vec<KernelEvent>>,
}

#[derive(Deserialize)]
struct KernelEvent {
    kernel_start_ts: Option<Num>,
}

/// A JSON number as written: the plugin prints counts as integers, but a writer (or a later
/// version) may print any of them as a float; both are read, exactly where integral.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(u64),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(n) => n as f64,
            Num::Float(x) => x,
        }
    }

    /// The number as a count: `None` when negative, fractional or too large.
    fn as_u64(self) -> Option<u64> {
        match self {
            Num::Int(n) => Some(n),
            // 2^64 as f64 is exact; anything at or above it does not fit.
            Num::Float(x) if x >= 0.0 && x.fract() == 0.0 && x < 18_446_744_073_709_551_616.0 => {
                Some(x as u64)
            }
            Num::Float(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NumVisitor;
        impl Visitor<'_> for NumVisitor {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Num, E> {
                Ok(Num::Int(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Num, E> {
                Ok(Num::Float(n as f64))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Num, E> {
                Ok(Num::Float(x))
            }
        }
        deserializer.deserialize_any(NumVisitor)
    }
}
