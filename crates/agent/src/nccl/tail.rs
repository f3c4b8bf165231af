//! One dump file followed as the plugin writes it (DESIGN 4.8, `reference/nccl-inspector.md`):
//! JSON files grow by appended objects and are read from where the last read stopped;
//! textfiles are rewritten whole every interval and are read whole when they change.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use model::inspector::{parse, parse_json, CollectiveRecord, Skipped};

/// How a file is written, known from its first non-whitespace byte (as
/// `model::inspector::parse` tells them apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Objects appended one after another: tailed.
    Json,
    /// node_exporter series, the whole file rewritten each interval: reread on change.
    Textfile,
}

/// What one read of a file gave.
#[derive(Debug, Default)]
pub(super) struct Read1 {
    /// The new records.
    pub records: Vec<CollectiveRecord>,
    /// What was not used, with the incomplete objects dropped at the tail cap.
    pub skipped: Skipped,
    /// Some of the new records were written by a simulation (`SIMULATED_GIT_REV`).
    pub simulated: bool,
}

/// A dump file and how far it has been read.
#[derive(Debug)]
pub(super) struct TailedFile {
    path: PathBuf,
    /// The file's identity when last read: a different one is a file replaced.
    identity: Option<(u64, u64)>,
    /// Bytes of the file consumed, the kept tail included.
    offset: u64,
    /// The end of the text that did not yet hold a whole object.
    tail: Vec<u8>,
    mode: Option<Mode>,
    /// Textfile mode: the size and modification time last read, to reread only a change.
    stamp: Option<(u64, SystemTime)>,
    /// Textfile mode: the last sequence number per series (communicator, rank, collective):
    /// a rewrite repeats the series whose collectives did not move on, and each collective
    /// must be counted once.
    last_seq: HashMap<(String, u32, String), u64>,
}

impl TailedFile {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            path,
            identity: None,
            offset: 0,
            tail: Vec::new(),
            mode: None,
            stamp: None,
            last_seq: HashMap::new(),
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes kept between reads (the incomplete object at the end).
    pub(super) fn kept_bytes(&self) -> usize {
        self.tail.len()
    }

    /// Reads what was written since the last read, at most `chunk` new bytes (a backlog is
    /// read over several polls, never all in memory), keeping an incomplete object of up to
    /// `tail_cap` bytes for the next read. `Ok(None)`: the file is gone.
    pub(super) fn read(&mut self, chunk: usize, tail_cap: usize) -> io::Result<Option<Read1>> {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let identity = (meta.dev(), meta.ino());
        // Replaced (another inode) or cut short (rewritten in place): read from the start.
        if self.identity != Some(identity) || meta.len() < self.offset {
            self.restart();
            self.identity = Some(identity);
        }
        match self.mode {
            Some(Mode::Textfile) => self.read_textfile(&mut file, &meta, chunk),
            _ => self.read_json(&mut file, meta.len(), chunk, tail_cap),
        }
        .map(Some)
    }

    fn restart(&mut self) {
        self.offset = 0;
        self.tail.clear();
        self.mode = None;
        self.stamp = None;
        self.last_seq.clear();
    }

    fn read_json(
        &mut self,
        file: &mut File,
        len: u64,
        chunk: usize,
        tail_cap: usize,
    ) -> io::Result<Read1> {
        if len == self.offset {
            return Ok(Read1::default());
        }
        let want = (len - self.offset).min(chunk as u64) as usize;
        let mut text = std::mem::take(&mut self.tail);
        let kept = text.len();
        text.resize(kept + want, 0);
        file.seek(SeekFrom::Start(self.offset))?;
        let got = read_up_to(file, &mut text[kept..])?;
        text.truncate(kept + got);
        self.offset += got as u64;
        if self.mode.is_none() {
            match text.iter().find(|b| !b.is_ascii_whitespace()) {
                // Nothing but whitespace yet: the mode is not known.
                None => return Ok(Read1::default()),
                Some(b'{') => self.mode = Some(Mode::Json),
                Some(_) => {
                    self.mode = Some(Mode::Textfile);
                    self.offset = 0;
                    return self.read_textfile(file, &file.metadata()?, chunk);
                }
            }
        }
        let parsed = parse_json(&text);
        let mut skipped = parsed.skipped;
        let tail_start = text.len() - parsed.incomplete_tail;
        if parsed.incomplete_tail > tail_cap {
            // No record is this long (200-500 bytes, the reference): garbage, or a file
            // that is not a dump. Dropping it keeps memory bounded; the parser resumes at
            // the next object that starts a line.
            skipped.bad_records += 1;
        } else {
            text.drain(..tail_start);
            self.tail = text;
        }
        Ok(Read1 {
            simulated: parsed.simulated_records > 0,
            records: parsed.records,
            skipped,
        })
    }

    fn read_textfile(
        &mut self,
        file: &mut File,
        meta: &std::fs::Metadata,
        chunk: usize,
    ) -> io::Result<Read1> {
        let stamp = (meta.len(), meta.modified()?);
        if self.stamp == Some(stamp) {
            return Ok(Read1::default());
        }
        // A textfile's size is bounded (the plugin rewrites it with the latest samples);
        // anything past `chunk` is not read.
        let mut text = vec![0; (meta.len() as usize).min(chunk)];
        file.seek(SeekFrom::Start(0))?;
        let got = read_up_to(file, &mut text)?;
        text.truncate(got);
        self.stamp = Some(stamp);
        self.mode = Some(Mode::Textfile);
        self.offset = got as u64;
        let parsed = parse(&text);
        let mut records = parsed.records;
        records.retain(|r| {
            let key = (r.communicator.clone(), r.rank, r.collective.clone());
            match self.last_seq.get_mut(&key) {
                Some(last) if *last >= r.seq => false,
                Some(last) => {
                    *last = r.seq;
                    true
                }
                None => {
                    self.last_seq.insert(key, r.seq);
                    true
                }
            }
        });
        Ok(Read1 {
            records,
            skipped: parsed.skipped,
            simulated: parsed.simulated_records > 0,
        })
    }
}

/// Fills `buf` from `file`, stopping early only at its end.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
