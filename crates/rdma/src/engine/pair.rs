//! RNIC-to-RNIC probes (DESIGN 4.6): one RC QP between two verbs contexts that may be on
//! different hosts, measured as perftest's `ib_write_lat` and `ib_write_bw` measure.
//!
//! # The exchange
//! The two sides swap a [`PairOffer`] (port, LID, GID and its index, QP number, PSN, MTU,
//! rkey, the buffer the peer may write) by any channel: the agents' HTTP API, a file, a
//! pipe. Two steps, so neither side ever sends to a QP that is not ready:
//! 1. [`initiate`] makes its QP and buffer and hands its offer (with the [`PairSpec`] both
//!    sides follow) to its `exchange` callback, which returns the responder's answer;
//! 2. [`respond`], given that offer, makes its own QP, connects it (RTR, RTS) and only then
//!    hands its answer to its `answer` callback; it then serves.
//! 3. The initiator connects on the answer and starts: the responder is already listening.
//!
//! # Latency (`ib_write_lat`)
//! A WRITE ping-pong: the initiator writes `latency_bytes` whose last byte is the round's
//! number into the responder's buffer; the responder polls that last byte, and on seeing it
//! writes the same back; the initiator polls the last byte of its own buffer. One sample is
//! half of the round trip, as perftest reports (`t_typical` is the median of such halves).
//!
//! # Pacing
//! A probe budget sends a few pings a second, not a burst ([`PairSpec::latency_interval_us`]).
//! The initiator posts ping `r` at `start + r x interval`. The responder, which has no
//! completion to sleep on (a WRITE makes none at its target), sleeps after each pong until
//! a margin before the next ping is due by its own clock (the first ping's arrival plus `r`
//! intervals: no ping comes earlier, since the initiator's sleeps only ever make it later),
//! then busy-polls: its CPU is busy for about the margin per ping instead of the
//! whole interval. A ping already there when it wakes is counted
//! ([`PairServed::late_wakeups`]: that round's sample holds the responder's lateness) and
//! doubles the margin, from [`PACE_MARGIN`] up to half the interval: a host whose sleeps
//! overshoot (a loaded guest's do by tens of milliseconds) costs more CPU, not wrong samples
//! for the rest of the probe. [`PACE_EARLY_ROUNDS`] wake-ups in a row that leave most of
//! the margin to poll halve it, down to [`PACE_MARGIN_MIN`]: a host whose sleeps are exact
//! pays little.
//!
//! # Host parts
//! The pair's latency holds both hosts' own paths; each host's part is half its loopback's
//! latency (docs/cluster.md, "The split"). Measured in a phase of their own, before the
//! probe, those parts moved between about 11 and 20 us from one phase to the next on
//! rdma_rxe, while the pair's latency was taken in another (issue 38). So the timed
//! ping-pong is cut into [`PairSpec::loopback_segments`] segments, and after each one both
//! sides run a batch of their own loopback (the caller's `between`) while the pair is quiet:
//! the responder, once its last pong of the segment is acknowledged, then writes a *host
//! part* record (its part so far) into the initiator's control area; the initiator, after
//! its own batch, waits for that record before its next ping. The responder's part is the
//! last record's ([`PairResult::peer_part`]). With no timed rounds, one batch each is run
//! before the bandwidth phase.
//!
//! # Bandwidth (`ib_write_bw`)
//! The initiator keeps `depth` WRITEs of `bw_bytes` outstanding, posted one at a time or in
//! chains of `post_list` with only the last signalled (perftest's `--post_list`), for an
//! iteration count or a duration; Gb/s is the bytes over the time from the first post to the last
//! completion. Then the data is checked: the initiator writes a *done* record (the pattern's
//! seed, the count) into the responder's control area, the responder compares what arrived
//! with the pattern, and writes a *verdict* record (match, FNV-1a checksum) back.
//!
//! # Deadlines
//! Every wait, on a completion or on a byte in memory, has a deadline. A peer that vanishes
//! (its QP destroyed, its process killed) shows as a completion in error (the transport's
//! retries run out) or as a byte that never comes: a [`PairError`] naming the phase and
//! round, which keeps the latency samples already taken.
//!
//! # Timestamps
//! The ping-pong's samples come from the CPU's clock (the TSC, as perftest's), so both
//! hosts' processing (posting, polling, the responder's turn-around) is in them. R-Pingmesh
//! (SIGCOMM'24, section 4) takes host processing out with the RNIC's own completion
//! timestamps. Where the initiator's device stamps completions (`completion_timestamp_mask`
//! and `hca_core_clock` non-zero, and `ibv_create_cq_ex` accepts
//! `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`), a second phase follows the ping-pong: each round
//! reads the device's clock (`ibv_query_rt_values_ex`), posts one signalled WRITE and takes
//! its completion's timestamp. An RC WRITE completes when the responder's RNIC acknowledges
//! it, without the responder's software, so that interval is the network's round trip as
//! the RNICs see it ([`PairResult::nic_round_trip_ns`]). rdma_rxe offers no timestamps:
//! there only the CPU's samples exist, and [`TimestampSource`] says so.

use super::clock::Ticks;
use super::loopback::{pattern_byte, verbs_error, wait, RnicPort};
use super::{open_port, OpenPortError};
use crate::memory::host::{HostRegion, Pages};
use crate::sysfs::{LinkLayer, RnicBinding};
use crate::verbs::ffi::{ibv_wc, IBV_WC_SUCCESS, IBV_WR_RDMA_WRITE};
use crate::verbs::{CompletionClock, Context, Cq, CqWaitError, Destination, Pd, Post, Qp, Verbs};
use probe::{LatencySamples, ProbeError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes at the end of each side's receive area for one control record.
const CONTROL: usize = 64;
/// The last word of a *done* record ("hpdone\0\x01"): written last, polled for.
const DONE_MAGIC: u64 = 0x6870_646f_6e65_0001;
/// The last word of a *verdict* record.
const VERDICT_MAGIC: u64 = 0x6870_7665_7264_0001;
/// The last word of a *host part* record, XOR its segment's number (from 1): the responder
/// writes one after each segment of the ping-pong (module docs, "Host parts").
const PART_MAGIC: u64 = 0x6870_7061_7274_0000;
/// How long the initiator sleeps between looks for the responder's host part record: the
/// responder is running its own loopback then, and on a shared or emulated CPU a busy poll
/// here would slow what it waits for.
const PART_NAP: Duration = Duration::from_micros(200);
/// The least either side allows for the other's batch at a segment's end, beyond the
/// timeout of any one wait: a host with a fault, or a busy one, may take far longer over its
/// batch than this side took over its own (job-agents in the Soft-RoCE guest: a responder
/// that allowed its 2 s timeout gave up at round 67 of 216).
const OTHER_BATCH_FLOOR: Duration = Duration::from_secs(60);
/// The most segments a probe may ask for.
pub const MAX_LOOPBACK_SEGMENTS: u32 = 64;
/// ACK timeout exponent: 4.096 us x 2^14 = 67 ms per retry, 7 retries: a vanished peer is
/// a completion in error within half a second, while a slow (emulated) host still answers.
const ACK_TIMEOUT: u8 = 14;
/// Pings of up to this many bytes go inline in the work request, where the device takes
/// them so: what perftest asks for a WRITE latency test (`DEF_INLINE_WRITE` in
/// perftest_parameters.h); no DMA read of the send buffer per ping. (On rdma_rxe perftest
/// reports "Max inline data: 0[B]"; hostping's QP is made with 2 B inline there.)
const MAX_INLINE: u32 = 220;
/// How long the responder sleeps between looks for the done record while the bandwidth
/// phase runs: it has nothing to time, and every wake-up is CPU taken from the transport.
const BANDWIDTH_NAP: Duration = Duration::from_millis(20);
/// How often a busy-polling wait reads the clock: every that many polls. A clock read is a
/// system call where the kernel has no stable TSC clocksource, and in a QEMU TCG guest an
/// emulated HPET read that waits for QEMU's global lock: tens of microseconds. Read every
/// 1024 polls (a few per round trip there) it made the probe's half round trip 10 % longer
/// than perftest's, whose polling loop reads no clock. 65536 polls are ~0.1 ms on a real
/// host and a few ms under TCG: deadlines of seconds stay exact enough.
const CLOCK_EVERY: u32 = 1 << 16;
/// How long before a paced ping is due the responder starts polling for it, at first: most
/// of a real kernel's timer slack (tens of us) and a guest's scheduler tick (1 to 4 ms) are
/// covered, and at 10 pings a second it is 2 % of a core. Doubled on each late wake-up,
/// halved (down to [`PACE_MARGIN_MIN`]) while the responder wakes in good time.
const PACE_MARGIN: Duration = Duration::from_millis(2);
/// The least margin: a real kernel's timer slack (50 us by default) and a wake-up.
const PACE_MARGIN_MIN: Duration = Duration::from_micros(100);
/// Rounds in a row the responder must wake with most of its margin to spare before the
/// margin is halved: a late wake-up (a sample holding the responder's lateness) then comes
/// at most once in that many rounds, where the sleeps' overshoot sits between two margins.
const PACE_EARLY_ROUNDS: u32 = 16;

/// What a pair probe does; the initiator's choice, carried to the responder in its offer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairSpec {
    /// Bytes of a ping (`ib_write_lat -s`; perftest's default is 2).
    pub latency_bytes: u32,
    /// Untimed rounds before the timed ones.
    pub warmup: u32,
    /// Timed rounds (`ib_write_lat -n`); 0: no latency phase.
    pub latency_iterations: u32,
    /// Bytes of a bandwidth message (`ib_write_bw -s`).
    pub bw_bytes: u32,
    /// Messages to move (`ib_write_bw -n`); 0: bounded by `bw_duration_ms` only.
    pub bw_iterations: u64,
    /// How long to move them (`ib_write_bw -D`); 0: bounded by `bw_iterations` only. Both
    /// 0: no bandwidth phase.
    pub bw_duration_ms: u64,
    /// WRITEs outstanding (`ib_write_bw -t`, 128 by default).
    pub depth: u32,
    /// Pings per signalled ping (perftest's `--cq-mod`, whose default `DEF_CQ_MOD` is 100):
    /// the others make no completion, so neither the RNIC nor the prober spends time on one
    /// per round. A deviation from `ib_write_lat`, which runs with a TX depth of 1 and so
    /// signals every ping: on rdma_rxe in the TCG guest, signalling every ping (1 here) put
    /// the median half round trip at 34.4 us against perftest's 27.6 us in the same boot,
    /// with 100 it is within 2-3 % of perftest's (why perftest pays less for its
    /// completions there is not known yet).
    pub cq_mod: u32,
    /// WRITEs per post, only the last signalled (`ib_write_bw --post_list`, 1 by default:
    /// every WRITE posted and signalled on its own).
    pub post_list: u32,
    /// Longest wait for any one completion or byte.
    pub timeout_ms: u64,
    /// Seed of the bandwidth phase's data pattern.
    pub seed: u8,
    /// Time from one ping to the next, us; 0: back to back, as `ib_write_lat`. A probe
    /// budget's pings are paced (R-Pingmesh's 10 a second to a same-leaf target is
    /// 100,000 us): the initiator posts each on a fixed schedule and the responder sleeps
    /// between them (module docs, "Pacing").
    #[serde(default)]
    pub latency_interval_us: u64,
    /// Segments of the timed ping-pong, each followed by a batch of each host's own
    /// loopback (module docs, "Host parts"). 0, as in an offer from a version without
    /// them: no batches, and no host part comes with the result.
    #[serde(default)]
    pub loopback_segments: u32,
}

impl Default for PairSpec {
    fn default() -> Self {
        PairSpec {
            latency_bytes: 2,
            warmup: 16,
            latency_iterations: 1000,
            bw_bytes: 65536,
            bw_iterations: 1000,
            bw_duration_ms: 0,
            depth: 128,
            cq_mod: 100,
            post_list: 1,
            timeout_ms: 2000,
            seed: 0x5a,
            latency_interval_us: 0,
            loopback_segments: 4,
        }
    }
}

impl PairSpec {
    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }

    fn has_bandwidth(&self) -> bool {
        self.bw_iterations > 0 || self.bw_duration_ms > 0
    }

    /// The rounds (counted from the first, warm-up included) after which a segment ends
    /// and the host parts are measured; empty without segments. Without timed rounds,
    /// one end at the warm-up's.
    pub fn segment_ends(&self) -> Vec<u64> {
        let n = u64::from(self.loopback_segments.min(MAX_LOOPBACK_SEGMENTS));
        let timed = u64::from(self.latency_iterations);
        let mut ends: Vec<u64> = (1..=n)
            .map(|k| u64::from(self.warmup) + (timed * k).div_ceil(n))
            .collect();
        ends.dedup();
        ends
    }

    /// Bytes of the data part of each side's receive and send areas.
    fn data_bytes(&self) -> usize {
        let lat = if self.latency_iterations > 0 {
            self.latency_bytes.max(1)
        } else {
            0
        };
        let bw = if self.has_bandwidth() {
            self.bw_bytes.max(1)
        } else {
            0
        };
        (lat.max(bw).max(1) as usize).next_multiple_of(CONTROL)
    }
}

/// One side's connection details, exchanged by any channel (JSON through serde).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairOffer {
    /// The RDMA device (`mlx5_0`, `rxe_a`), for messages.
    pub device: String,
    /// The port number.
    pub port: u8,
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The GID the peer sends to, as sysfs prints it (`0000:...:ffff:c0a8:4d01`); `None`
    /// for a LID-routed InfiniBand port.
    pub gid: Option<String>,
    /// The local index of that GID (the peer does not use it; for reports).
    pub gid_index: Option<u8>,
    /// The QP number.
    pub qp_num: u32,
    /// The first PSN this side sends with (24 bits).
    pub psn: u32,
    /// The port's active MTU (enum ibv_mtu: 1 = 256 B .. 5 = 4096 B); the QP uses the
    /// smaller of the two sides'.
    pub mtu: u32,
    /// The rkey of the buffer the peer writes into.
    pub rkey: u32,
    /// The buffer's address: data at the start, a control record in its last 64 bytes.
    pub addr: u64,
    /// The buffer's length.
    pub len: u64,
    /// Whether this side's device stamps completions with its own clock.
    pub completion_timestamps: bool,
    /// What the probe does (the initiator's; the responder echoes it).
    pub spec: PairSpec,
    /// The host this side runs on, for reports (set by whoever carries the offer; the
    /// probe itself neither sets nor reads it). Each side's own part travels in the probe's
    /// records (module docs, "Host parts").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Where a probe's times come from: a word of the pair's report (DESIGN 4.6), so its
/// vocabulary is `model`'s.
pub use model::pair::TimestampSource;

/// The initiator's completion timestamps, as far as they go.
enum Stamps {
    /// The device offers none.
    NotOffered,
    /// Offered, but not usable: why.
    Unusable(String),
    /// The CQ stamps completions with this clock.
    Ready(CompletionClock),
}

/// A host's own part of the pair's latency as its side measured it: half its loopback's
/// median latency and that half's noise, us.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OwnPart {
    /// The part, us.
    pub us: f64,
    /// Its noise, us.
    pub noise_us: f64,
}

/// What each side runs between two segments of the ping-pong, while the pair is quiet: a
/// batch of its own loopback, returning its part over every batch so far (`None` when it
/// has none). The initiator's return is not used: its caller keeps its own.
pub type Between<'a> = &'a mut dyn FnMut() -> Option<OwnPart>;

/// What the initiator measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairResult {
    /// Half round trips in ns (`small_ns`; `large_ns` stays empty), and the bytes the
    /// responder verified. Serialized as the list of half round trips.
    #[serde(rename = "latency_half_rtt_ns", serialize_with = "half_rtts")]
    pub latency: LatencySamples,
    /// Bytes of a ping.
    pub latency_bytes: u32,
    /// Bandwidth in Gb/s (10^9 bit/s); `None` without a bandwidth phase.
    pub bandwidth_gbps: Option<f64>,
    /// Bytes of a bandwidth message.
    pub bw_bytes: u32,
    /// Bytes the bandwidth phase moved.
    pub bytes: u64,
    /// Messages the bandwidth phase moved.
    pub iterations: u64,
    /// Time from the first post to the last completion, in us.
    pub duration_us: f64,
    /// The responder found the pattern the initiator wrote, and its checksum matches the
    /// initiator's (true without a bandwidth phase only if nothing needed checking).
    pub verified: bool,
    /// FNV-1a of the bytes the responder received.
    pub checksum: Option<u64>,
    /// Where the times come from.
    pub timestamps: TimestampSource,
    /// Why the device's completion timestamps, offered, were not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps_note: Option<String>,
    /// Round trips from the post of a WRITE to its completion (the responder's RNIC
    /// acknowledged it) by the initiator's device clock, ns: the network without either
    /// host's software. Empty unless [`TimestampSource::CompletionTimestamps`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nic_round_trip_ns: Vec<f64>,
    /// The responder's own part, measured between the segments (its last host part
    /// record); `None` without segments, or when it had none to give.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_part: Option<OwnPart>,
    /// The responder's answer.
    pub peer: PairOffer,
}

fn half_rtts<S: serde::Serializer>(l: &LatencySamples, s: S) -> Result<S::Ok, S::Error> {
    l.small_ns.serialize(s)
}

/// What the responder did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairServed {
    /// Ping-pong rounds answered (warm-up included).
    pub rounds: u64,
    /// Messages the initiator says it wrote.
    pub messages: u64,
    /// Bytes compared with the pattern.
    pub verified_bytes: u64,
    /// Whether every one matched.
    pub verified: bool,
    /// FNV-1a of the received bytes.
    pub checksum: Option<u64>,
    /// Paced rounds whose ping had already arrived when the responder woke for it (module
    /// docs, "Pacing"): their samples hold the responder's lateness.
    #[serde(default)]
    pub late_wakeups: u64,
    /// How long before each paced ping the responder was polling for it in the end, us.
    #[serde(default)]
    pub pace_margin_us: u64,
    /// The first byte that did not match, if one did not.
    pub first_mismatch: Option<u64>,
}

/// A pair probe that stopped: the phase and cause, and what was measured before.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{context}: {source} ({} latency samples kept)", .kept.small_ns.len())]
pub struct PairError {
    /// Where it stopped (`latency round 523 on rxe_a`).
    pub context: String,
    /// Why.
    #[source]
    pub source: ProbeError,
    /// The half round trips measured before it stopped (ns).
    pub kept: Box<LatencySamples>,
}

/// An opened RNIC port to probe from.
pub struct PairPort(RnicPort);

impl PairPort {
    /// Opens `device` port `port`, addressed by the GID at `gid_index` (RoCE; `None` for a
    /// LID-routed InfiniBand port).
    pub fn open(
        verbs: &Arc<Verbs>,
        device: &str,
        port: u8,
        gid_index: Option<u32>,
    ) -> Result<PairPort, OpenPortError> {
        let binding = RnicBinding {
            device: device.to_string(),
            port,
            gid_index,
            link_layer: if gid_index.is_some() {
                LinkLayer::Ethernet
            } else {
                LinkLayer::InfiniBand
            },
            lid: None,
            software: false,
            numa_node: None,
        };
        open_port(verbs, &binding).map(PairPort)
    }

    /// Opens the port of a discovered binding.
    pub fn from_binding(
        verbs: &Arc<Verbs>,
        binding: &RnicBinding,
    ) -> Result<PairPort, OpenPortError> {
        open_port(verbs, binding).map(PairPort)
    }

    /// Whether the device stamps completions (`completion_timestamp_mask`); a failed query
    /// counts as no.
    pub fn completion_timestamps(&self) -> bool {
        self.offered_clock().is_some()
    }

    fn offered_clock(&self) -> Option<CompletionClock> {
        self.0.ctx.completion_clock().ok().filter(|c| c.offered())
    }
}

/// `gid` as sysfs prints it: eight groups of four hex digits.
pub fn format_gid(gid: &[u8; 16]) -> String {
    gid.chunks(2)
        .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
        .collect::<Vec<_>>()
        .join(":")
}

/// The inverse of [`format_gid`] (colons optional).
pub fn parse_gid(text: &str) -> Option<[u8; 16]> {
    let hex: String = text.chars().filter(|&c| c != ':').collect();
    if hex.len() != 32 || !hex.is_ascii() {
        return None;
    }
    let mut gid = [0u8; 16];
    for (i, b) in gid.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(gid)
}

/// FNV-1a, 64 bits: a checksum both sides compute the same way, cheap under emulation.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A control record: six words, a check word (FNV-1a of the six and the magic), then the
/// magic. The magic alone does not say the record is whole: rxe copies a payload with the
/// kernel's memcpy, which may store the last bytes first, so a reader polling the magic can
/// see it before the words. The check word catches that (the reader looks again). It covers
/// the magic too: where a record lands on an earlier one (the host part records, then the
/// verdict), a reader that sees the new magic beside the old words and the old check word
/// must not take the old words for the new record's.
fn encode_record(words: [u64; 6], magic: u64) -> [u8; CONTROL] {
    let mut rec = [0u8; CONTROL];
    for (i, w) in words.iter().enumerate() {
        rec[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    let check = record_check(&rec, magic);
    rec[48..56].copy_from_slice(&check.to_le_bytes());
    rec[56..64].copy_from_slice(&magic.to_le_bytes());
    rec
}

/// The words of a record with `magic`, or `None` while it has not (wholly) arrived.
fn decode_record(rec: &[u8; CONTROL], magic: u64) -> Option<[u64; 6]> {
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&rec[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    };
    (word(7) == magic && word(6) == record_check(rec, magic)).then(|| std::array::from_fn(word))
}

/// The check word of a record with `magic`: FNV-1a of its six words and the magic.
fn record_check(rec: &[u8; CONTROL], magic: u64) -> u64 {
    let mut covered = [0u8; 56];
    covered[..48].copy_from_slice(&rec[..48]);
    covered[48..].copy_from_slice(&magic.to_le_bytes());
    fnv1a(&covered)
}

/// The value of a ping-pong round's last byte: never 0, so a fresh (zeroed) buffer never
/// passes for an arrival, and different from the round before.
fn round_byte(round: u64) -> u8 {
    (round % 255 + 1) as u8
}

/// A random-enough 24-bit PSN (perftest takes `lrand48() & 0xffffff`): a stale packet of an
/// earlier QP with the same number is then out of sequence, not accepted.
fn initial_psn() -> u32 {
    let mix = Ticks::now() ^ (u64::from(std::process::id()) << 20);
    (mix.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as u32 & 0xff_ffff
}

/// Each side's memory: the receive area the peer writes (data, then a control record) and
/// the send area this side writes from, `area` bytes each.
struct Buffers {
    region: HostRegion,
    area: usize,
}

impl Buffers {
    fn new(spec: &PairSpec) -> Result<Buffers, ProbeError> {
        let area = spec.data_bytes() + CONTROL;
        let region = HostRegion::on_node(2 * area, None, Pages::Base).map_err(|e| {
            ProbeError::Registration {
                endpoint: "the pair probe's buffer".into(),
                reason: e.to_string(),
            }
        })?;
        // SAFETY: the mapping holds 2 * area bytes (rounded up to pages) and is ours.
        unsafe { std::ptr::write_bytes(region.as_ptr(), 0, 2 * area) };
        Ok(Buffers { region, area })
    }

    fn recv(&self) -> *mut u8 {
        self.region.as_ptr()
    }

    fn send(&self) -> *mut u8 {
        // SAFETY: area < the mapping's length.
        unsafe { self.region.as_ptr().add(self.area) }
    }

    fn data(&self) -> usize {
        self.area - CONTROL
    }

    /// A byte of the receive area, read afresh (the RNIC writes it behind our back).
    fn recv_byte(&self, at: usize) -> u8 {
        debug_assert!(at < self.area);
        // SAFETY: in bounds; a volatile read of memory the RNIC may be writing.
        unsafe { std::ptr::read_volatile(self.recv().add(at)) }
    }

    fn set_send_byte(&self, at: usize, v: u8) {
        debug_assert!(at < self.area);
        // SAFETY: in bounds; the RNIC only reads the send area, and only while a WRITE
        // posted after this store is in flight.
        unsafe { std::ptr::write_volatile(self.send().add(at), v) }
    }

    fn recv_control(&self) -> [u8; CONTROL] {
        let mut rec = [0u8; CONTROL];
        for (i, b) in rec.iter_mut().enumerate() {
            *b = self.recv_byte(self.data() + i);
        }
        rec
    }

    fn set_send_control(&self, rec: &[u8; CONTROL]) {
        for (i, &b) in rec.iter().enumerate() {
            self.set_send_byte(self.data() + i, b);
        }
    }

    /// The first `len` bytes of the receive area, copied.
    fn received(&self, len: usize) -> Vec<u8> {
        (0..len.min(self.data()))
            .map(|i| self.recv_byte(i))
            .collect()
    }
}

/// A connected QP and what posting to the peer needs.
struct Link<'a> {
    qp: &'a Qp<'a>,
    /// Whether pings go inline (the QP was made for them).
    inline: bool,
    cq: &'a Cq<'a>,
    lkey: u32,
    buf: &'a Buffers,
    peer: &'a PairOffer,
    timeout: Duration,
}

impl Link<'_> {
    /// Posts `count` WRITEs of `len` bytes from the start of the send area to the start of
    /// the peer's buffer (the last one signalled if `signaled`), inline where the QP takes
    /// them so.
    fn write_data(
        &self,
        wr_id: u64,
        len: u32,
        count: u32,
        signaled: bool,
    ) -> Result<(), ProbeError> {
        let how = Post {
            inline: self.inline && len <= MAX_INLINE,
            unsignaled: !signaled,
        };
        self.qp
            .post_rdma_with(
                wr_id,
                IBV_WR_RDMA_WRITE,
                (self.buf.send() as u64, self.lkey),
                (self.peer.addr, self.peer.rkey),
                len,
                count,
                how,
            )
            .map_err(verbs_error)
    }

    /// Busy-polls for at least one completion into `wc`, as [`wait`] but reading the clock
    /// lazily ([`LazyDeadline`]).
    fn completions(
        &self,
        wc: &mut [ibv_wc],
        what: impl Fn() -> String,
    ) -> Result<usize, ProbeError> {
        let mut clock = LazyDeadline::new(self.timeout, far_future());
        loop {
            let n = self.cq.poll_checked(wc).map_err(|e| cq_error(e, &what()))?;
            if n > 0 {
                return Ok(n);
            }
            clock.check(&what)?;
        }
    }

    /// R-Pingmesh's round trips without host processing (module docs, "Timestamps"):
    /// `rounds` signalled WRITEs of `len` bytes, each timed by the device's clock from just
    /// before its post to its completion. `Ok(Err(why))` where the clock cannot be read or
    /// its readings cannot be right (longer than the CPU's own interval around them, which
    /// holds the device's).
    fn nic_round_trips(
        &self,
        ctx: &Context,
        clock: CompletionClock,
        rounds: u64,
        len: u32,
    ) -> Result<Result<Vec<f64>, String>, ProbeError> {
        let mut out = Vec::with_capacity(rounds as usize);
        for round in 0..rounds {
            let what = || format!("the completion of stamped WRITE {} of {rounds}", round + 1);
            let cpu = Instant::now();
            let posted = match ctx.raw_clock() {
                Ok(c) => c,
                Err(e) => return Ok(Err(e.to_string())),
            };
            self.write_data(round, len, 1, true)?;
            let mut deadline = LazyDeadline::new(self.timeout, far_future());
            let done = loop {
                match self.cq.poll_stamped() {
                    Ok(Some(done)) => break done,
                    Ok(None) => deadline.check(&what)?,
                    Err(e) => return Ok(Err(e.to_string())),
                }
            };
            if done.status != IBV_WC_SUCCESS {
                let failed = CqWaitError::Failed {
                    text: ctx.verbs().wc_status(done.status),
                    status: done.status,
                    vendor_err: 0,
                    wr_id: done.wr_id,
                };
                return Err(cq_error(failed, &what()));
            }
            let cpu_ns = cpu.elapsed().as_nanos() as f64;
            let ns = clock.elapsed_ns(posted, done.timestamp);
            if !(ns > 0.0 && ns <= cpu_ns) {
                return Ok(Err(format!(
                    "stamped WRITE {}: {ns:.0} ns by the device's clock from post to \
                     completion, {cpu_ns:.0} ns by the CPU's around them: the completions are \
                     not stamped by the clock ibv_query_rt_values_ex reads (a device in \
                     real-time clock mode?)",
                    round + 1
                )));
            }
            out.push(ns);
        }
        Ok(Ok(out))
    }

    /// Writes the send area's control record into the peer's and waits for it to complete.
    fn write_control(&self, what: &str) -> Result<(), ProbeError> {
        let remote = self.peer.addr + self.peer.len - CONTROL as u64;
        self.qp
            .post_rdma(
                u64::MAX,
                IBV_WR_RDMA_WRITE,
                (self.buf.send() as u64 + self.buf.data() as u64, self.lkey),
                (remote, self.peer.rkey),
                CONTROL as u32,
                1,
            )
            .map_err(verbs_error)?;
        let mut wc = [ibv_wc::default(); 1];
        wait(self.cq, &mut wc, self.timeout, what).map(drop)
    }

    /// The initiator's end of segment `seg` (from 1): its own batch (`between`), then the
    /// responder's host part record for that segment. Returns the responder's part.
    fn initiator_segment_end(
        &self,
        seg: u64,
        between: &mut dyn FnMut() -> Option<OwnPart>,
    ) -> Result<Option<OwnPart>, ProbeError> {
        let began = Instant::now();
        between();
        let deadline = Instant::now() + self.other_batch_allowance(began.elapsed());
        let [_, has, us, noise, ..] = self.await_record(
            PART_MAGIC ^ seg,
            deadline,
            Some(PART_NAP),
            &format!("the host part of {} after segment {seg}", self.peer.device),
        )?;
        Ok((has == 1).then(|| OwnPart {
            us: f64::from_bits(us),
            noise_us: f64::from_bits(noise),
        }))
    }

    /// How long one side waits for the other to end its batch, having spent `own` on its
    /// own: a few times that, at least [`OTHER_BATCH_FLOOR`], and the timeout of any one
    /// wait beyond it.
    fn other_batch_allowance(&self, own: Duration) -> Duration {
        (own * 4).max(OTHER_BATCH_FLOOR) + self.timeout
    }

    /// The responder's end of segment `seg` (from 1), its pongs all acknowledged: its own
    /// batch (`between`), then its part so far into the initiator's control area. Returns
    /// how long to wait for the next ping, which comes after the initiator's own batch.
    fn responder_segment_end(
        &self,
        seg: u64,
        between: &mut dyn FnMut() -> Option<OwnPart>,
    ) -> Result<Duration, ProbeError> {
        let began = Instant::now();
        let part = between();
        let allowance = self.other_batch_allowance(began.elapsed());
        self.buf.set_send_control(&encode_record(
            [
                seg,
                u64::from(part.is_some()),
                part.map_or(0, |p| p.us.to_bits()),
                part.map_or(0, |p| p.noise_us.to_bits()),
                0,
                0,
            ],
            PART_MAGIC ^ seg,
        ));
        self.write_control("the host part record")
            .map(|()| allowance)
    }

    /// Busy-polls until the receive area's byte `at` reads `value`, also reaping up to
    /// `pending` completions of this side's WRITEs (so a peer that vanished shows as the
    /// transport's error rather than only as a timeout). Returns the tick the byte was seen
    /// at; the completions still pending are left in `pending`. Gives up `timeout` after
    /// the wait began, or at `limit`.
    fn await_byte(
        &self,
        at: usize,
        value: u8,
        (timeout, limit): (Duration, Instant),
        pending: &mut u32,
        what: impl Fn() -> String,
    ) -> Result<u64, ProbeError> {
        let mut wc = [ibv_wc::default(); 4];
        let mut clock = LazyDeadline::new(timeout, limit);
        loop {
            if self.buf.recv_byte(at) == value {
                let t = Ticks::now();
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                return Ok(t);
            }
            // The CQ is looked at while a signalled WRITE is owed, and now and then
            // otherwise: an unsignaled WRITE that fails still makes a completion (in error).
            if *pending > 0 || clock.due() {
                let n = self
                    .cq
                    .poll_checked(&mut wc)
                    .map_err(|e| cq_error(e, &what()))?;
                *pending -= (n as u32).min(*pending);
            }
            clock.check(&what)?;
        }
    }

    /// Busy-polls until the `pending` completions still owed have come.
    fn reap(&self, pending: &mut u32, what: impl Fn() -> String) -> Result<(), ProbeError> {
        let mut wc = [ibv_wc::default(); 4];
        let mut clock = LazyDeadline::new(self.timeout, far_future());
        while *pending > 0 {
            let n = self
                .cq
                .poll_checked(&mut wc)
                .map_err(|e| cq_error(e, &what()))?;
            *pending -= (n as u32).min(*pending);
            if n == 0 {
                clock.check(&what)?;
            }
        }
        Ok(())
    }

    /// Polls the receive area's control record until it carries `magic`, busy (`nap`
    /// `None`) or sleeping `nap` between looks.
    fn await_record(
        &self,
        magic: u64,
        deadline: Instant,
        nap: Option<Duration>,
        what: &str,
    ) -> Result<[u64; 6], ProbeError> {
        let mut spins: u32 = 0;
        let started = Instant::now();
        loop {
            // The magic is the last word: once it reads right, the rest has landed.
            if let Some(words) = decode_record(&self.buf.recv_control(), magic) {
                return Ok(words);
            }
            if let Some(nap) = nap {
                std::thread::sleep(nap);
            }
            spins = spins.wrapping_add(1);
            if (nap.is_some() || spins.is_multiple_of(CLOCK_EVERY / 64))
                && Instant::now() > deadline
            {
                return Err(timed_out(what, started));
            }
        }
    }
}

/// The deadline of a busy-polling wait, read lazily: the clock is first read after
/// [`CLOCK_EVERY`] polls (a clock read is a system call costing microseconds where the
/// kernel has no stable TSC clocksource, as in a QEMU TCG guest, and a wait that ends within
/// those polls, the common case of a ping-pong, should not pay for it), and every
/// [`CLOCK_EVERY`] polls after that. The wait is bounded by `timeout` from that first read
/// (microseconds after it began) or `limit`, whichever comes first.
struct LazyDeadline {
    timeout: Duration,
    limit: Instant,
    spins: u32,
    since: Option<(Instant, Instant)>,
}

impl LazyDeadline {
    fn new(timeout: Duration, limit: Instant) -> LazyDeadline {
        LazyDeadline {
            timeout,
            limit,
            spins: 0,
            since: None,
        }
    }

    /// Whether the next [`LazyDeadline::check`] reads the clock.
    fn due(&self) -> bool {
        self.spins.wrapping_add(1).is_multiple_of(CLOCK_EVERY)
    }

    fn check(&mut self, what: &impl Fn() -> String) -> Result<(), ProbeError> {
        self.spins = self.spins.wrapping_add(1);
        if !self.spins.is_multiple_of(CLOCK_EVERY) {
            return Ok(());
        }
        let now = Instant::now();
        let (started, deadline) = *self
            .since
            .get_or_insert_with(|| (now, (now + self.timeout).min(self.limit)));
        if now > deadline {
            return Err(timed_out(&what(), started));
        }
        Ok(())
    }
}

/// Sleeps until `margin` before `due` (not at all when that has passed): a paced responder
/// wakes that early and polls for the ping.
fn sleep_until_margin_before(due: Instant, margin: Duration) {
    let wake = due.checked_sub(margin).filter(|&w| w > Instant::now());
    if let Some(wake) = wake {
        std::thread::sleep(wake - Instant::now());
    }
}

/// A limit that is no limit.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365)
}

fn cq_error(e: CqWaitError, what: &str) -> ProbeError {
    match e {
        CqWaitError::Timeout => ProbeError::Timeout {
            what: what.to_string(),
            after_ms: 0,
        },
        CqWaitError::Failed { .. } => ProbeError::WorkCompletion {
            status: format!("{e} on {what}"),
        },
        CqWaitError::Poll(e) => verbs_error(e),
    }
}

fn timed_out(what: &str, since: Instant) -> ProbeError {
    ProbeError::Timeout {
        what: what.to_string(),
        after_ms: since.elapsed().as_millis() as u64,
    }
}

/// Pings per signalled one: the spec's, at most what a send queue of `max_send_wr` holds
/// (the unsignaled stay in it until the signalled one completes).
fn cq_mod_of(spec: &PairSpec, max_send_wr: u32) -> u32 {
    spec.cq_mod
        .clamp(1, max_send_wr.saturating_sub(2).clamp(1, 4096))
}

/// The probe's QP, taking the pings inline where the device allows (a device whose inline
/// limit is smaller refuses the QP: then one without).
fn make_qp<'q>(
    pd: &'q Pd<'_>,
    cq: &'q Cq<'_>,
    max_send_wr: u32,
    spec: &PairSpec,
) -> Result<(Qp<'q>, bool), ProbeError> {
    let lat = spec.latency_bytes.max(1);
    if spec.latency_iterations > 0 && lat <= MAX_INLINE {
        if let Ok(qp) = pd.create_rc_qp_inline(cq, max_send_wr, lat) {
            return Ok((qp, true));
        }
    }
    let qp = pd.create_rc_qp(cq, max_send_wr).map_err(verbs_error)?;
    Ok((qp, false))
}

/// This side's offer for a QP and buffer.
fn offer_of(
    port: &PairPort,
    qp: &Qp<'_>,
    rkey: u32,
    buf: &Buffers,
    psn: u32,
    spec: &PairSpec,
) -> PairOffer {
    let p = &port.0;
    PairOffer {
        device: p.ctx.name().to_string(),
        port: p.port,
        lid: p.info.lid,
        gid: p.gid.map(|(g, _)| format_gid(&g)),
        gid_index: p.gid.map(|(_, i)| i),
        qp_num: qp.qp_num(),
        psn,
        mtu: p.info.active_mtu,
        rkey,
        addr: buf.recv() as u64,
        len: buf.area as u64,
        completion_timestamps: port.completion_timestamps(),
        spec: *spec,
        host: None,
    }
}

/// Connects `qp` to the peer of `offer`, sending from `psn`.
fn connect(port: &PairPort, qp: &Qp<'_>, offer: &PairOffer, psn: u32) -> Result<(), ProbeError> {
    let p = &port.0;
    let gid = match (&offer.gid, p.gid) {
        (Some(text), Some((_, local_index))) => {
            let gid = parse_gid(text).ok_or_else(|| ProbeError::Unavailable {
                reason: format!("the peer's offer has no valid GID: {text:?}"),
            })?;
            Some((gid, local_index))
        }
        (None, None) => None,
        (peer, local) => {
            return Err(ProbeError::Unavailable {
                reason: format!(
                    "{} and the peer {} do not address alike (peer GID {peer:?}, local GID index {:?}): RoCE and InfiniBand cannot be paired",
                    p.ctx.name(),
                    offer.device,
                    local.map(|(_, i)| i)
                ),
            })
        }
    };
    let mut dest: Destination = p.destination(offer.qp_num, ACK_TIMEOUT);
    dest.mtu = dest.mtu.min(offer.mtu);
    dest.gid = gid;
    dest.lid = offer.lid;
    dest.rq_psn = offer.psn & 0xff_ffff;
    dest.sq_psn = psn;
    qp.connect(&dest).map_err(verbs_error)
}

/// The initiator: makes its QP and buffer, hands its offer to `exchange` (which delivers it
/// to the responder and returns the responder's answer, or why it could not: its words
/// become the stop's reason), connects, and measures latency then bandwidth as `spec` says.
pub fn initiate<E: std::fmt::Display>(
    port: &PairPort,
    spec: &PairSpec,
    exchange: impl FnOnce(&PairOffer) -> Result<PairOffer, E>,
    between: Between<'_>,
) -> Result<PairResult, PairError> {
    let mut kept = LatencySamples::default();
    let mut context = format!("setting up the pair probe on {}", port.0.ctx.name());
    match initiate_inner(port, spec, exchange, between, &mut kept, &mut context) {
        Ok(r) => Ok(r),
        Err(source) => Err(PairError {
            context,
            source,
            kept: Box::new(kept),
        }),
    }
}

fn initiate_inner<E: std::fmt::Display>(
    port: &PairPort,
    spec: &PairSpec,
    exchange: impl FnOnce(&PairOffer) -> Result<PairOffer, E>,
    between: Between<'_>,
    kept: &mut LatencySamples,
    context: &mut String,
) -> Result<PairResult, ProbeError> {
    let p = &port.0;
    let device = p.ctx.name().to_string();
    let buf = Buffers::new(spec)?;
    let pd = p.ctx.alloc_pd().map_err(verbs_error)?;
    // SAFETY: `buf` is declared before `pd`, so it outlives the MR.
    let mr = unsafe { pd.reg_mr(buf.recv(), 2 * buf.area) }.map_err(verbs_error)?;
    // Two send-queue slots beyond the window: the done record, and slack.
    let depth = spec
        .depth
        .clamp(1, p.caps.max_qp_wr.saturating_sub(2).max(1));
    let (cq, stamps) = match port.offered_clock() {
        None => (p.ctx.create_cq(depth + 4), Stamps::NotOffered),
        Some(clock) => match p.ctx.create_stamped_cq(depth + 4) {
            Ok(cq) => (Ok(cq), Stamps::Ready(clock)),
            Err(e) => (
                p.ctx.create_cq(depth + 4),
                Stamps::Unusable(format!("the device stamps completions, but {e}")),
            ),
        },
    };
    let cq = cq.map_err(verbs_error)?;
    let (qp, inline) = make_qp(&pd, &cq, depth + 2, spec)?;
    let psn = initial_psn();
    let mine = offer_of(port, &qp, mr.rkey(), &buf, psn, spec);
    *context = format!("exchanging offers from {device}");
    let peer = exchange(&mine).map_err(|reason| ProbeError::Unavailable {
        reason: format!("the offer exchange failed: {reason}"),
    })?;
    *context = format!("connecting {device} to {} QP {}", peer.device, peer.qp_num);
    if peer.spec != *spec {
        let older = PairSpec {
            loopback_segments: 0,
            ..*spec
        };
        let reason = if peer.spec == older {
            format!(
                "{} runs an older hostping, which does not measure its host part between \
                 the ping-pong's segments: upgrade it",
                peer.device
            )
        } else {
            format!("the responder answered for another probe: {:?}", peer.spec)
        };
        return Err(ProbeError::Unavailable { reason });
    }
    if (peer.len as usize) < buf.area {
        return Err(ProbeError::Unavailable {
            reason: format!(
                "the responder's buffer ({} B) is smaller than ours",
                peer.len
            ),
        });
    }
    connect(port, &qp, &peer, psn)?;
    let link = Link {
        qp: &qp,
        inline,
        cq: &cq,
        lkey: mr.lkey(),
        buf: &buf,
        peer: &peer,
        timeout: spec.timeout(),
    };
    let far = far_future();

    // -- latency: ib_write_lat's ping-pong --------------------------------------------------
    let clock = Ticks::start();
    let mut ticks = Vec::with_capacity(spec.latency_iterations as usize);
    let lat_len = spec.latency_bytes.max(1);
    let last = lat_len as usize - 1;
    let mut pending = 0u32;
    let rounds = u64::from(spec.warmup) + u64::from(spec.latency_iterations);
    let cq_mod = cq_mod_of(spec, depth + 2);
    let segment_ends = spec.segment_ends();
    let mut peer_part = None;
    if spec.latency_iterations > 0 {
        // Nothing but the post and the polls between the two clock reads: no clock read
        // for a deadline, no message formatted unless it is needed.
        let peer_device = peer.device.as_str();
        let what = |round: u64| {
            move || {
                format!(
                    "the pong of round {} of {rounds} from {peer_device}",
                    round + 1
                )
            }
        };
        let interval = Duration::from_micros(spec.latency_interval_us);
        // The schedule, from when and which round; it starts again after a segment's host
        // parts only where they took past the next round's time.
        let mut paced_from = (Instant::now(), 0u64);
        let due_of = |(from, from_round): (Instant, u64), round: u64| {
            from + interval * (round - from_round) as u32
        };
        for round in 0..rounds {
            if !interval.is_zero() {
                let due = due_of(paced_from, round);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            let v = round_byte(round);
            let signaled = (round + 1) % u64::from(cq_mod) == 0 || round + 1 == rounds;
            buf.set_send_byte(last, v);
            let t0 = Ticks::now();
            let t1 = link
                .write_data(round, lat_len, 1, signaled)
                .and_then(|()| {
                    pending += u32::from(signaled);
                    link.await_byte(last, v, (link.timeout, far), &mut pending, what(round))
                })
                // The ACK of a signalled ping comes with (or just before) the pong: reap it
                // now, so the send queue (holding the unsignaled ones until then) never
                // fills.
                .and_then(|t1| link.reap(&mut pending, what(round)).map(|()| t1));
            let t1 = t1.and_then(|t1| {
                if let Some(seg) = segment_ends.iter().position(|&end| end == round + 1) {
                    peer_part = link.initiator_segment_end(seg as u64 + 1, between)?;
                    if Instant::now() > due_of(paced_from, round + 1) {
                        paced_from = (Instant::now(), round + 1);
                    }
                }
                Ok(t1)
            });
            match t1 {
                Ok(t1) if round >= u64::from(spec.warmup) => ticks.push(t1.wrapping_sub(t0)),
                Ok(_) => {}
                Err(e) => {
                    // Keep what was measured: the samples are the point of a failed probe.
                    let k = clock.ns_per_tick();
                    kept.small_ns = ticks.iter().map(|&t| t as f64 * k / 2.0).collect();
                    *context = format!(
                        "latency round {} of {rounds} from {device} to {}",
                        round + 1,
                        peer.device
                    );
                    return Err(e);
                }
            }
        }
        let k = clock.ns_per_tick();
        // perftest reports half the round trip as the latency of a WRITE.
        kept.small_ns = ticks.iter().map(|&t| t as f64 * k / 2.0).collect();
    } else if !segment_ends.is_empty() {
        *context = format!("the host parts of {device} and {}", peer.device);
        peer_part = link.initiator_segment_end(1, between)?;
    }

    // -- the network's round trip by the device's clock (R-Pingmesh) ------------------------
    let (timestamps, timestamps_note, nic_round_trip_ns) = match stamps {
        Stamps::NotOffered => (TimestampSource::CpuNoCompletionTimestamps, None, Vec::new()),
        Stamps::Unusable(why) => (
            TimestampSource::CpuCompletionTimestampsUnusable,
            Some(why),
            Vec::new(),
        ),
        Stamps::Ready(clock) => {
            *context = format!("stamped WRITEs from {device} to {}", peer.device);
            let rounds = u64::from(spec.latency_iterations);
            match link.nic_round_trips(&p.ctx, clock, rounds, lat_len)? {
                Ok(rtts) => (TimestampSource::CompletionTimestamps, None, rtts),
                Err(why) => (
                    TimestampSource::CpuCompletionTimestampsUnusable,
                    Some(why),
                    Vec::new(),
                ),
            }
        }
    };

    // -- bandwidth: ib_write_bw's window of WRITEs ---------------------------------------------
    let mut result = PairResult {
        latency: kept.clone(),
        latency_bytes: spec.latency_bytes,
        bandwidth_gbps: None,
        bw_bytes: spec.bw_bytes,
        bytes: 0,
        iterations: 0,
        duration_us: 0.0,
        verified: !spec.has_bandwidth(),
        checksum: None,
        timestamps,
        timestamps_note,
        nic_round_trip_ns,
        peer_part,
        peer: peer.clone(),
    };
    if !spec.has_bandwidth() {
        return Ok(result);
    }
    *context = format!("bandwidth from {device} to {}", peer.device);
    let len = spec.bw_bytes.max(1);
    let pattern: Vec<u8> = (0..len as usize)
        .map(|i| pattern_byte(spec.seed, i))
        .collect();
    for (i, &b) in pattern.iter().enumerate() {
        buf.set_send_byte(i, b);
    }
    let batch = spec.post_list.clamp(1, depth);
    let window = (depth / batch).max(1);
    let limit = if spec.bw_iterations > 0 {
        spec.bw_iterations
    } else {
        u64::MAX
    };
    let what = format!("{len} B WRITEs from {device} to {}", peer.device);
    // Times from the TSC ([`Ticks`]), calibrated over the phase: a clock read per
    // completion would be a system call each under emulation. The monotonic clock is read
    // per completion only when the phase is bounded by time.
    let timed = spec.bw_duration_ms > 0;
    let start = Instant::now();
    let ticks = Ticks::start();
    let first_tick = Ticks::now();
    let end = if timed {
        start + Duration::from_millis(spec.bw_duration_ms)
    } else {
        far
    };
    let mut posted = 0u64;
    let mut outstanding = 0u32;
    // Each chain's work request id is its message count: a completion says how many it
    // closes (the last chain may be short).
    let post_next = |posted: &mut u64, outstanding: &mut u32| -> Result<(), ProbeError> {
        let n = u64::from(batch).min(limit - *posted) as u32;
        link.write_data(u64::from(n), len, n, true)?;
        *posted += u64::from(n);
        *outstanding += 1;
        Ok(())
    };
    for _ in 0..window {
        if posted < limit {
            post_next(&mut posted, &mut outstanding)?;
        }
    }
    let mut wc = [ibv_wc::default(); 32];
    let mut completed = 0u64;
    let mut last_tick = first_tick;
    while outstanding > 0 {
        let n = link.completions(&mut wc, || what.clone())?;
        last_tick = Ticks::now();
        let more = !timed || Instant::now() < end;
        for w in &wc[..n] {
            completed += w.wr_id;
            outstanding -= 1;
            if more && posted < limit {
                post_next(&mut posted, &mut outstanding)?;
            }
        }
    }
    let elapsed = last_tick.wrapping_sub(first_tick) as f64 * ticks.ns_per_tick() / 1e9;
    result.iterations = completed;
    result.bytes = completed * u64::from(len);
    result.duration_us = elapsed * 1e6;
    result.bandwidth_gbps =
        Some(result.bytes as f64 * 8.0 / (elapsed * 1e9).max(f64::MIN_POSITIVE));

    // -- verification: the responder compares what arrived with the pattern -----------------
    *context = format!("verifying the data {device} wrote to {}", peer.device);
    buf.set_send_control(&encode_record(
        [u64::from(spec.seed), completed, u64::from(len), 0, 0, 0],
        DONE_MAGIC,
    ));
    link.write_control("the done record")?;
    let verdict = link.await_record(
        VERDICT_MAGIC,
        Instant::now() + link.timeout,
        None,
        &format!("the verdict of {}", peer.device),
    )?;
    let [ok, checksum, checked, ..] = verdict;
    result.checksum = Some(checksum);
    result.verified = ok == 1 && checked == u64::from(len) && checksum == fnv1a(&pattern);
    result.latency.verified_bytes = result.verified.then_some(checked);
    Ok(result)
}

/// The responder: makes its QP and buffer for the initiator's `offer`, connects to it,
/// hands its answer to `answer` (which delivers it, or says why not: its words become the
/// stop's reason), then serves: answers the ping-pong and checks the bandwidth phase's data,
/// until done or `serve_for` has passed.
pub fn respond<E: std::fmt::Display>(
    port: &PairPort,
    offer: &PairOffer,
    answer: impl FnOnce(&PairOffer) -> Result<(), E>,
    serve_for: Duration,
    between: Between<'_>,
) -> Result<PairServed, PairError> {
    let mut context = format!("setting up the responder on {}", port.0.ctx.name());
    respond_inner(port, offer, answer, serve_for, between, &mut context).map_err(|source| {
        PairError {
            context,
            source,
            kept: Box::default(),
        }
    })
}

fn respond_inner<E: std::fmt::Display>(
    port: &PairPort,
    offer: &PairOffer,
    answer: impl FnOnce(&PairOffer) -> Result<(), E>,
    serve_for: Duration,
    between: Between<'_>,
    context: &mut String,
) -> Result<PairServed, ProbeError> {
    let limit = Instant::now() + serve_for;
    let spec = offer.spec;
    let p = &port.0;
    let device = p.ctx.name().to_string();
    let buf = Buffers::new(&spec)?;
    let pd = p.ctx.alloc_pd().map_err(verbs_error)?;
    // SAFETY: `buf` is declared before `pd`, so it outlives the MR.
    let mr = unsafe { pd.reg_mr(buf.recv(), 2 * buf.area) }.map_err(verbs_error)?;
    let cq_mod = cq_mod_of(&spec, u32::MAX);
    let cqe = cq_mod + 4;
    let cq = p.ctx.create_cq(cqe).map_err(verbs_error)?;
    let (qp, inline) = make_qp(&pd, &cq, cqe, &spec)?;
    let psn = initial_psn();
    *context = format!(
        "connecting {device} to {} QP {}",
        offer.device, offer.qp_num
    );
    connect(port, &qp, offer, psn)?;
    let mine = offer_of(port, &qp, mr.rkey(), &buf, psn, &spec);
    *context = format!("answering {} from {device}", offer.device);
    answer(&mine).map_err(|reason| ProbeError::Unavailable {
        reason: format!("the answer could not be delivered: {reason}"),
    })?;
    let link = Link {
        qp: &qp,
        inline,
        cq: &cq,
        lkey: mr.lkey(),
        buf: &buf,
        peer: offer,
        timeout: spec.timeout(),
    };
    let mut served = PairServed {
        rounds: 0,
        messages: 0,
        verified_bytes: 0,
        verified: false,
        checksum: None,
        first_mismatch: None,
        late_wakeups: 0,
        pace_margin_us: 0,
    };
    if spec.latency_iterations > 0 {
        let lat_len = spec.latency_bytes.max(1);
        let last = lat_len as usize - 1;
        let rounds = u64::from(spec.warmup) + u64::from(spec.latency_iterations);
        let mut pending = 0u32;
        let peer_device = offer.device.as_str();
        let what =
            |round: u64| move || format!("the ping of round {} from {peer_device}", round + 1);
        let interval = Duration::from_micros(spec.latency_interval_us);
        let mut margin = PACE_MARGIN.min(interval / 2);
        // When the first ping of the schedule came, and its round: the schedule starts
        // again after each segment's host parts.
        let mut first_ping: Option<(Instant, u64)> = None;
        // When the last ping came, paced: the first ping after a segment's host parts is due
        // an interval after it (the initiator keeps its schedule unless the parts took
        // longer).
        let mut last_ping: Option<Instant> = None;
        let segment_ends = spec.segment_ends();
        // When the responder woke for this round, paced; and how many rounds in a row it
        // woke with most of its margin to spare.
        let mut woke: Option<Instant> = None;
        let mut early = 0u32;
        // The bound of the wait for the next ping: longer after a segment's end.
        let mut ping_timeout = link.timeout;
        for round in 0..rounds {
            let v = round_byte(round);
            let signaled = (round + 1) % u64::from(cq_mod) == 0 || round + 1 == rounds;
            if !interval.is_zero() && first_ping.is_some() && buf.recv_byte(last) == v {
                served.late_wakeups += 1;
                margin = (margin * 2).min(interval / 2);
                woke = None;
                early = 0;
            }
            // The first ping waits for the initiator to connect: the same bound.
            let answered = link
                .await_byte(last, v, (ping_timeout, limit), &mut pending, what(round))
                .and_then(|_| {
                    ping_timeout = link.timeout;
                    // Unpaced, no clock is read between the ping and the pong: under
                    // emulation a clock read costs microseconds (CLOCK_EVERY).
                    if !interval.is_zero() {
                        let now = Instant::now();
                        first_ping.get_or_insert((now, round));
                        last_ping = Some(now);
                        // Woke in good time, most of the margin spent polling, round after
                        // round: the sleeps are more exact than the margin allows for.
                        if woke.is_some_and(|w| now - w > margin * 3 / 4) {
                            early += 1;
                            if early == PACE_EARLY_ROUNDS {
                                margin = (margin / 2).max(PACE_MARGIN_MIN);
                                early = 0;
                            }
                        }
                    }
                    buf.set_send_byte(last, v);
                    link.write_data(round, lat_len, 1, signaled)
                });
            if let Err(e) = answered {
                *context = format!("answering round {} of {rounds} on {device}", round + 1);
                return Err(e);
            }
            // Not reaped here: the next ping's wait polls the CQ for it.
            pending += u32::from(signaled);
            if pending > 1 {
                link.reap(&mut pending, what(round))?;
            }
            served.rounds += 1;
            if let Some(seg) = segment_ends.iter().position(|&end| end == round + 1) {
                link.reap(&mut pending, what(round))?;
                match link.responder_segment_end(seg as u64 + 1, between) {
                    Ok(allowance) => ping_timeout = allowance,
                    Err(e) => {
                        *context = format!("the host part after segment {} on {device}", seg + 1);
                        return Err(e);
                    }
                }
                // The schedule is anchored again on the next ping, due an interval after
                // the last one: sleep until just before it, then poll.
                first_ping = None;
                woke = None;
                early = 0;
                if let Some(last) = last_ping {
                    sleep_until_margin_before(last + interval, margin);
                }
                continue;
            }
            if let Some((first, first_round)) = first_ping {
                sleep_until_margin_before(
                    first + interval * (round + 1 - first_round) as u32,
                    margin,
                );
                woke = Some(Instant::now());
            }
        }
        link.reap(&mut pending, || "the last pong".to_string())?;
        if !interval.is_zero() {
            served.pace_margin_us = margin.as_micros() as u64;
        }
    } else if !spec.segment_ends().is_empty() {
        *context = format!("the host part on {device}");
        link.responder_segment_end(1, between)?;
    }
    if spec.has_bandwidth() {
        *context = format!(
            "awaiting the bandwidth phase from {} on {device}",
            offer.device
        );
        let [seed, messages, len, ..] = link.await_record(
            DONE_MAGIC,
            limit,
            // The responder has nothing to time while the WRITEs stream in: it sleeps
            // between looks, as perftest's ib_write_bw server sleeps on its socket, and
            // leaves the CPU to the transport (rxe moves the data on the host's CPUs).
            Some(BANDWIDTH_NAP),
            &format!("the done record of {}", offer.device),
        )?;
        served.messages = messages;
        let len = (len as usize).min(buf.data());
        let arrived = buf.received(len);
        let seed = seed as u8;
        served.first_mismatch = arrived
            .iter()
            .enumerate()
            .position(|(i, &b)| b != pattern_byte(seed, i))
            .map(|i| i as u64);
        let checksum = fnv1a(&arrived);
        served.verified = served.first_mismatch.is_none() && len > 0 && messages > 0;
        served.verified_bytes = len as u64;
        served.checksum = Some(checksum);
        *context = format!("sending the verdict to {}", offer.device);
        buf.set_send_control(&encode_record(
            [
                u64::from(served.verified),
                checksum,
                len as u64,
                served.first_mismatch.unwrap_or(u64::MAX),
                0,
                0,
            ],
            VERDICT_MAGIC,
        ));
        link.write_control("the verdict record")?;
    }
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_round_trips_through_json_with_its_gid_as_sysfs_prints_it() {
        let gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 77, 1];
        let offer = PairOffer {
            device: "rxe_a".into(),
            port: 1,
            lid: 0,
            gid: Some(format_gid(&gid)),
            gid_index: Some(1),
            qp_num: 0x11,
            psn: 0xabcdef,
            mtu: 3,
            rkey: 0x1234,
            addr: 0x7f00_0000_1000,
            len: 65536 + 64,
            completion_timestamps: false,
            spec: PairSpec::default(),
            host: None,
        };
        assert_eq!(
            offer.gid.as_deref(),
            Some("0000:0000:0000:0000:0000:ffff:c0a8:4d01")
        );
        let json = serde_json::to_string(&offer).unwrap();
        let back: PairOffer = serde_json::from_str(&json).unwrap();
        assert_eq!(back, offer);
        assert_eq!(parse_gid(back.gid.as_deref().unwrap()), Some(gid));
        // The optional fields stay out of the JSON when unset, and an offer written before
        // they existed still reads.
        assert!(!json.contains("host"), "{json}");
        let with = PairOffer {
            host: Some("node-b".into()),
            ..offer.clone()
        };
        let text = serde_json::to_string(&with).unwrap();
        assert!(text.contains("\"host\":\"node-b\""), "{text}");
        assert_eq!(serde_json::from_str::<PairOffer>(&text).unwrap(), with);
    }

    #[test]
    fn a_gid_that_is_not_32_hex_digits_is_refused() {
        assert_eq!(parse_gid("fe80::1"), None);
        assert_eq!(parse_gid(&"zz".repeat(16)), None);
        let all = parse_gid("fe80000000000000020000fffe000001").unwrap();
        assert_eq!(all[0], 0xfe);
        assert_eq!(all[15], 0x01);
    }

    #[test]
    fn a_record_is_complete_only_with_its_magic() {
        let rec = encode_record([1, 2, 3, 4, 5, 6], DONE_MAGIC);
        assert_eq!(decode_record(&rec, DONE_MAGIC), Some([1, 2, 3, 4, 5, 6]));
        assert_eq!(decode_record(&rec, VERDICT_MAGIC), None);
        let mut no_magic = rec;
        no_magic[CONTROL - 1] = 0;
        assert_eq!(decode_record(&no_magic, DONE_MAGIC), None);
        // The magic has landed, the first word not yet (a memcpy storing its tail first).
        let mut torn = rec;
        torn[..8].fill(0);
        assert_eq!(decode_record(&torn, DONE_MAGIC), None);
        assert_eq!(decode_record(&[0; CONTROL], DONE_MAGIC), None);
        // A verdict landing on the last host part record, read with its magic new and all
        // else old: not the verdict (the guest's pair probe once read [1, 1, ..] so, a part
        // record's segment and flag, as the verdict's match and checksum).
        let part = encode_record([4, 1, 7, 8, 0, 0], PART_MAGIC ^ 4);
        let verdict = encode_record([1, 99, 65536, u64::MAX, 0, 0], VERDICT_MAGIC);
        let mut landing = part;
        landing[56..].copy_from_slice(&verdict[56..]);
        assert_eq!(decode_record(&landing, VERDICT_MAGIC), None);
        assert_eq!(
            decode_record(&verdict, VERDICT_MAGIC),
            Some([1, 99, 65536, u64::MAX, 0, 0])
        );
    }

    #[test]
    fn segments_end_evenly_through_the_timed_rounds() {
        let spec = |warmup, latency_iterations, loopback_segments| PairSpec {
            warmup,
            latency_iterations,
            loopback_segments,
            ..PairSpec::default()
        };
        assert_eq!(PairSpec::default().loopback_segments, 4);
        assert_eq!(spec(16, 1000, 4).segment_ends(), [266, 516, 766, 1016]);
        // The last segment ends with the last round, however the rounds divide.
        assert_eq!(spec(0, 10, 3).segment_ends(), [4, 7, 10]);
        // Fewer rounds than segments: one end per round, none repeated.
        assert_eq!(spec(2, 3, 4).segment_ends(), [3, 4, 5]);
        // No timed rounds: one batch each, before the bandwidth phase.
        assert_eq!(spec(16, 0, 4).segment_ends(), [16]);
        // An offer from before segments: none.
        assert!(spec(16, 1000, 0).segment_ends().is_empty());
        // Capped.
        assert_eq!(spec(0, 1_000_000, u32::MAX).segment_ends().len(), 64);
        // An older initiator's offer has no field: no segments.
        let mut json = serde_json::to_value(PairSpec::default()).unwrap();
        json.as_object_mut().unwrap().remove("loopback_segments");
        let old: PairSpec = serde_json::from_value(json).unwrap();
        assert_eq!(old.loopback_segments, 0);
    }

    #[test]
    fn round_bytes_are_never_zero_and_change_every_round() {
        assert!((0..1000).all(|r| round_byte(r) != 0));
        assert!((0..1000).all(|r| round_byte(r) != round_byte(r + 1)));
    }

    #[test]
    fn the_buffer_holds_the_larger_message_and_a_control_record() {
        let spec = PairSpec::default();
        assert_eq!(spec.data_bytes(), 65536);
        let lat_only = PairSpec {
            bw_iterations: 0,
            bw_duration_ms: 0,
            latency_bytes: 2,
            ..spec
        };
        assert!(!lat_only.has_bandwidth());
        assert_eq!(lat_only.data_bytes(), CONTROL);
        let bw_by_time = PairSpec {
            bw_iterations: 0,
            bw_duration_ms: 100,
            ..spec
        };
        assert!(bw_by_time.has_bandwidth());
    }

    #[test]
    fn fnv1a_matches_its_reference_values() {
        // From the FNV reference (Fowler, Noll, Vo): FNV-1a 64 of "" and of "a".
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn psns_fit_24_bits() {
        assert!((0..100).all(|_| initial_psn() <= 0xff_ffff));
    }

    #[test]
    fn timestamp_sources_serialise_as_the_reports_name_them() {
        use TimestampSource::*;
        let names: Vec<String> = [
            CpuNoCompletionTimestamps,
            CpuCompletionTimestampsUnusable,
            CompletionTimestamps,
        ]
        .iter()
        .map(|s| serde_json::to_string(s).unwrap())
        .collect();
        assert_eq!(
            names,
            [
                "\"cpu_no_completion_timestamps\"",
                "\"cpu_completion_timestamps_unusable\"",
                "\"completion_timestamps\""
            ]
        );
    }
}
