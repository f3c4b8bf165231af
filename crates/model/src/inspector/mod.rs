//! A job's collectives as NCCL's Inspector plugin records them (DESIGN 4.8,
//! `shared/reference/nccl-inspector.md`): one record per collective per communicator per
//! process, as JSON objects (format `v4.0`) or as node_exporter textfile series; the compact
//! per-rank summaries agents send instead of raw records; and the job's symptom, the
//! `symptom` of the job report.
//!
//! Parsing takes text, not paths (the callers walk the dump directories and tail the files).
//! Records of kinds or versions this parser does not know (point-to-point operations,
//! `dump_stats`, a later format) are counted and skipped, never fatal: one odd object must not
//! lose a directory's evidence.

use serde::{Deserialize, Serialize};

mod json;
mod textfile;
mod write;

pub use json::parse_json;
pub use textfile::{
    parse_textfile, reads_textfile_version, record_from_labels, METRICS as TEXTFILE_METRICS,
};
pub use write::{record_json, simulated_record_json, SIMULATED_GIT_REV, SIMULATED_MECHANISM};

/// Reads one file's text, whichever mode wrote it: JSON when its first non-whitespace byte is
/// `{`, else the textfile mode (where text that is not UTF-8 is all bad: one bad record per
/// non-blank line). The one entry point for callers that walk dump directories.
pub fn parse(bytes: &[u8]) -> Parsed {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => parse_json(bytes),
        _ => match std::str::from_utf8(bytes) {
            Ok(text) => parse_textfile(text),
            Err(_) => Parsed {
                skipped: Skipped {
                    bad_records: bytes
                        .split(|b| *b == b'\n')
                        .filter(|line| !line.trim_ascii().is_empty())
                        .count() as u64,
                    ..Skipped::default()
                },
                ..Parsed::default()
            },
        },
    }
}

/// One collective on one rank of one communicator: the fields of a `v4.0` record (or of one
/// textfile sample) that the symptom uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveRecord {
    /// The communicator (`header.id`, a hex string such as `0x7f8c496ae9f661`).
    pub communicator: String,
    /// The rank in that communicator.
    pub rank: u32,
    /// The communicator's ranks.
    pub n_ranks: u32,
    /// The hosts the communicator spans (`nnodes`).
    pub n_nodes: u32,
    /// The host the rank runs on (`metadata.hostname`).
    pub hostname: String,
    /// The process (`metadata.pid`), when written.
    pub pid: Option<u64>,
    /// The GPU index the rank drives, when the records say it (textfile `gpu_device_id`,
    /// `GPU4` -> 4).
    pub gpu: Option<u32>,
    /// The collective (`AllReduce`, `ReduceScatter`, `AllGather`, `Broadcast`, ...).
    pub collective: String,
    /// Its sequence number in the communicator (`coll_sn`): the same collective has the same
    /// number on every rank.
    pub seq: u64,
    /// Message size in bytes (`coll_msg_size_bytes`).
    pub bytes: u64,
    /// Execution time on this rank, in us (`coll_exec_time_us`).
    pub exec_us: f64,
    /// Algorithm bandwidth, GB/s (`coll_algobw_gbs`).
    pub algobw_gbs: f64,
    /// Bus bandwidth, GB/s (`coll_busbw_gbs`).
    pub busbw_gbs: f64,
    /// The earliest kernel start of the collective on this rank, us since the epoch (verbose
    /// records' `event_trace_ts.kernel_events[].kernel_start_ts`); `None` without a trace.
    pub kernel_start_us: Option<f64>,
    /// When the collective ran, us since the epoch: the kernel start where traced, else the
    /// traced collective start (`event_trace_ts.coll_start_ts`), else the record's dump time
    /// less its execution time (`dump_timestamp_us - coll_exec_time_us`, at most one dump
    /// interval late); in the textfile mode, the sample's `timestamp` label (the dump time, to
    /// the second), else the sample's own timestamp.
    pub at_us: f64,
    /// The job, where the record names it (textfile `slurm_job_id`, other than `unknown`).
    pub job: Option<String>,
}

/// What a parse could not use, by why (DESIGN 4.8's `skipped`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Well-formed objects of a kind or version not read: point-to-point records,
    /// `dump_stats`, a format version other than `v4.x`.
    pub unknown_records: u64,
    /// Objects or lines that are not a record at all (broken JSON, a field of the wrong
    /// type, a textfile line that does not parse).
    pub bad_records: u64,
}

impl Skipped {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Skipped) {
        self.unknown_records += other.unknown_records;
        self.bad_records += other.bad_records;
    }
}

/// The records read from one text, and what was skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The collectives, in the order written.
    pub records: Vec<CollectiveRecord>,
    /// What was not used.
    pub skipped: Skipped,
    /// Bytes at the end of the text that do not yet hold a whole object (a file being
    /// written): a tailing reader keeps them and parses them again with what follows.
    pub incomplete_tail: usize,
    /// Of `records`, those a simulation wrote ([`simulated_record_json`]): never to be
    /// reported as measured.
    pub simulated_records: u64,
}

/// One rank's collectives of one kind and size over one time bucket: what agents send the
/// collector instead of raw records (bounded: a few per communicator and bucket), and what
/// the symptom is judged from wherever the records were read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    /// The communicator.
    pub communicator: String,
    /// The rank.
    pub rank: u32,
    /// The communicator's ranks.
    pub n_ranks: u32,
    /// The hosts it spans.
    pub n_nodes: u32,
    /// The rank's host.
    pub hostname: String,
    /// The rank's process, when known.
    pub pid: Option<u64>,
    /// The rank's GPU index, when the records said it.
    pub gpu: Option<u32>,
    /// The collective.
    pub collective: String,
    /// Message size in bytes.
    pub bytes: u64,
    /// The bucket's start, Unix seconds.
    pub start_s: f64,
    /// The bucket's width in seconds.
    pub width_s: f64,
    /// Collectives in the bucket.
    pub count: u64,
    /// The first and last sequence numbers seen in the bucket.
    pub first_seq: u64,
    /// See `first_seq`.
    pub last_seq: u64,
    /// Median execution time, us.
    pub exec_us: f64,
    /// Median bus bandwidth, GB/s.
    pub busbw_gbs: f64,
}

/// The job's symptom (DESIGN 4.8), the job report's `symptom`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Symptom {
    /// `nccl_inspector`.
    pub source: String,
    /// Records read.
    pub records: u64,
    /// Whether any communicator slowed.
    pub slow: bool,
    /// Unix seconds: the first slow collective's start; `None` when not slow.
    pub since: Option<f64>,
    /// The slowest-hit communicator's bus bandwidth before and during the slowdown, and what
    /// its topology allows where the hosts are known.
    pub busbw_gbs: BusBandwidth,
    /// Each communicator, collective kind and size.
    pub communicators: Vec<CommunicatorSymptom>,
    /// Ranks that start the same collective late, again and again.
    pub stragglers: Vec<Straggler>,
    /// What was not used.
    pub skipped: Skipped,
}

/// Bus bandwidth before and during a slowdown, GB/s.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BusBandwidth {
    /// Before the onset (the whole window when not slow).
    pub before: Option<f64>,
    /// From the onset on.
    pub during: Option<f64>,
    /// What the topology allows, where the hosts are known.
    pub expected: Option<f64>,
}

/// One communicator's collectives of one kind and size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommunicatorSymptom {
    /// The communicator.
    pub id: String,
    /// The collective.
    pub collective: String,
    /// Message size in bytes (an addition to DESIGN 4.8).
    pub bytes: u64,
    /// Its ranks.
    pub ranks: u32,
    /// The hosts it spans.
    pub nnodes: u32,
    /// The hosts its ranks run on, as read.
    pub hosts: Vec<String>,
    /// Whether it slowed.
    pub slow: bool,
    /// Its bus bandwidth: during the slowdown when slow, else over the window.
    pub busbw_gbs: f64,
    /// Its onset, Unix seconds, when slow (an addition).
    pub since: Option<f64>,
    /// Its bus bandwidth over time, one point a bucket: (Unix seconds, GB/s) (an addition,
    /// for the job page's plot).
    pub series: Vec<(f64, f64)>,
    /// Where its ranks run, by host and GPU, for the ranks whose GPU is known (an
    /// addition): which GPUs, and through which RNICs, its traffic goes.
    #[serde(default)]
    pub places: Vec<RankPlace>,
    /// The GPU index every one of its ranks drives, when it spans hosts and each rank's GPU
    /// is known (an addition): a rail's communicator, whose traffic in a rail-optimised
    /// cluster takes GPU i's RNIC and rail i's leaf on every host.
    #[serde(default)]
    pub rail: Option<u32>,
}

impl CommunicatorSymptom {
    /// Whether each of its hosts has a placed rank and every placed rank's RNIC is known:
    /// then its traffic's paths are those RNICs', else only its hosts are known.
    pub fn fully_placed(&self) -> bool {
        self.places.iter().all(|p| p.rnic.is_some())
            && self
                .hosts
                .iter()
                .all(|h| self.places.iter().any(|p| &p.host == h))
    }

    /// Its rail and the route its traffic takes on each host, in words: (3, `gpu3 through
    /// rnic3`, its placed ranks' RNICs each once, in order), or (3, `gpu3`) where no rank's
    /// RNIC is known; `None` without a rail.
    pub fn rail_route(&self) -> Option<(u32, String)> {
        let gpu = self.rail?;
        let rnics: std::collections::BTreeSet<&str> = self
            .places
            .iter()
            .filter_map(|p| p.rnic.as_deref())
            .collect();
        let route = if rnics.is_empty() {
            format!("gpu{gpu}")
        } else {
            let rnics: Vec<&str> = rnics.into_iter().collect();
            format!("gpu{gpu} through {}", rnics.join(" or "))
        };
        Some((gpu, route))
    }
}

/// Where some of a communicator's ranks run: a host and a GPU there, and the RNIC nearest
/// that GPU when the host's job paths say it (the rule the job paths use: an RNIC's traffic
/// goes to its nearest GPU).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RankPlace {
    /// The host.
    pub host: String,
    /// The GPU's index (`gpu3` is 3).
    pub gpu: u32,
    /// The RNIC nearest it (`rnic3`), when known.
    #[serde(default)]
    pub rnic: Option<String>,
}

/// A rank that arrives late at its communicator's collectives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    /// Its rank.
    pub rank: u32,
    /// The communicator.
    pub communicator: String,
    /// Its host.
    pub host: String,
    /// Its GPU (`gpu3`), `None` when the records do not say.
    pub gpu: Option<String>,
    /// How late it starts, typically (us): the others' wait.
    pub late_us: f64,
    /// Collectives it was late in.
    pub collectives: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rail(rail: Option<u32>, rnics: [Option<&str>; 3]) -> CommunicatorSymptom {
        let places = ["node001", "node002", "node003"]
            .iter()
            .zip(rnics)
            .map(|(host, rnic)| RankPlace {
                host: host.to_string(),
                gpu: 3,
                rnic: rnic.map(String::from),
            })
            .collect();
        CommunicatorSymptom {
            id: "0xr3".into(),
            collective: "AllReduce".into(),
            bytes: 1 << 24,
            ranks: 3,
            nnodes: 3,
            hosts: vec!["node001".into(), "node002".into(), "node003".into()],
            slow: true,
            busbw_gbs: 10.0,
            since: None,
            series: Vec::new(),
            places,
            rail,
        }
    }

    #[test]
    fn a_rails_route_names_its_gpu_and_each_rnic_its_ranks_use_once() {
        let placed = rail(Some(3), [Some("rnic3"), Some("rnic3"), Some("rnic1")]);
        assert_eq!(
            placed.rail_route(),
            Some((3, "gpu3 through rnic1 or rnic3".to_string()))
        );
        assert!(placed.fully_placed());
        // Where the hosts' paths placed no RNIC, the GPU alone.
        let unplaced = rail(Some(3), [None; 3]);
        assert_eq!(unplaced.rail_route(), Some((3, "gpu3".to_string())));
        assert!(!unplaced.fully_placed());
        assert_eq!(rail(None, [Some("rnic3"); 3]).rail_route(), None);
    }
}
