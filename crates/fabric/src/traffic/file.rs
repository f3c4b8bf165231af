//! The workload file: any traffic as a list of messages.
//!
//! ```text
//! # time      source  destination  bytes
//! 0           0       1            128KiB
//! 1.5us       1       0            4096
//! 250000      2       0            4KiB      # plain numbers are picoseconds
//! ```
//!
//! One message per line: the earliest time it may leave (picoseconds, or a number with `ps`,
//! `ns`, `us`, `ms` or `s`), source and destination ranks, and its size (bytes, or with `B`,
//! `KiB`, `MiB`, `GiB`, `KB`, `MB`, `GB`). Lines need not be sorted: each rank sends its
//! messages in time order (file order among equal times), one after the other, then waits
//! until every message addressed to it has arrived. The job has max rank + 1 ranks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::lines::{parse_records, parse_transfer, LineError};
use super::script::Script;
use super::units::parse_time_ps;
use super::Op;
use crate::input::InputError;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Message {
    at_ps: u64,
    dst: u32,
    bytes: u64,
}

/// A workload file, read: each rank's messages in the order it sends them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadFile {
    /// The file it was read from.
    pub path: PathBuf,
    ranks: u32,
    /// Per source rank, its messages in sending order. Maps, not arrays: one stray large
    /// rank number must not allocate millions of empty entries before the job is found not
    /// to fit.
    sends: BTreeMap<u32, Vec<Message>>,
    /// Per rank, how many messages are addressed to it.
    receives: BTreeMap<u32, u64>,
}

const FORM: &str = "'time source destination bytes'";

impl WorkloadFile {
    /// Reads a workload file; an error names the file and the line.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let text = InputError::read(path)?;
        Self::parse(path, &text)
    }

    /// Parses the text of `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, InputError> {
        let messages = parse_records(
            path,
            text,
            parse_line,
            &format!("no messages: expected lines {FORM}"),
        )?;
        let ranks = messages
            .iter()
            .map(|&(src, m)| src.max(m.dst) + 1)
            .max()
            .unwrap_or(0);
        let mut sends: BTreeMap<u32, Vec<Message>> = BTreeMap::new();
        let mut receives: BTreeMap<u32, u64> = BTreeMap::new();
        for (src, message) in messages {
            sends.entry(src).or_default().push(message);
            *receives.entry(message.dst).or_default() += 1;
        }
        for list in sends.values_mut() {
            list.sort_by_key(|m| m.at_ps); // stable: file order among equal times
        }
        Ok(WorkloadFile {
            path: path.to_path_buf(),
            ranks,
            sends,
            receives,
        })
    }

    /// Ranks of the job: the largest rank named, plus one.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// Messages in the file.
    pub fn messages(&self) -> usize {
        self.sends.values().map(Vec::len).sum()
    }
}

fn parse_line(fields: &[&str]) -> Result<(u32, Message), LineError> {
    let &[time, src, dst, bytes] = fields else {
        return Err(LineError::Fields {
            expected: format!("4 fields {FORM}"),
            found: fields.len(),
        });
    };
    let at_ps = parse_time_ps(time).map_err(LineError::Time)?;
    let (src, dst, bytes) = parse_transfer(src, dst, bytes)?;
    Ok((src, Message { at_ps, dst, bytes }))
}

impl Script for WorkloadFile {
    fn ranks(&self) -> u32 {
        WorkloadFile::ranks(self)
    }

    fn op(&self, rank: u32, index: u64) -> Option<Op> {
        let sends = self.sends.get(&rank).map_or(&[][..], Vec::as_slice);
        let received = self.receives.get(&rank).copied().unwrap_or(0);
        match sends.get(index as usize) {
            Some(m) => Some(Op::Send {
                dst: m.dst,
                bytes: m.bytes,
                not_before_ps: m.at_ps,
            }),
            None => (index as usize == sends.len() && received > 0)
                .then_some(Op::AwaitReceived { total: received }),
        }
    }
}
