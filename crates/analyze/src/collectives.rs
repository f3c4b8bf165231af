//! The job's own symptom from its collectives (DESIGN 4.8; the reasoning is the reference's
//! "What can be read from them", `shared/reference/nccl-inspector.md`): whether a
//! communicator slowed against its own earlier collectives of the same kind and size, or
//! runs far under what its topology allows; since when; and which ranks arrive late again
//! and again (stragglers). Pure functions, no I/O: [`summarize`] turns raw records into the
//! bounded per-rank summaries agents send, [`symptom`] judges summaries wherever they came
//! from.

use std::collections::{BTreeMap, BTreeSet};

use model::inspector::{
    BusBandwidth, CollectiveRecord, CommunicatorSymptom, RankPlace, RankSummary, Straggler, Symptom,
};
use model::job::CollectiveEvidence;

use crate::ring_model::ring_busbw_gbs;
use crate::robust::{median, Robust, MAD_TO_SIGMA};

/// A bucket is slow when its bus bandwidth is more than this share under the earlier
/// level: run-to-run spread of one collective's busbw is a few percent, so a fifth is a
/// loss no noise makes, and small enough to see a link down to a lower width or speed.
pub const SLOW_DROP: f64 = 0.2;
/// ... and more than this many scaled MADs (standard deviations) under it: a communicator
/// whose busbw swings widely by itself (shared links, varying overlap with compute) is not
/// called slow for a swing it has made before.
pub const SLOW_MADS: f64 = 3.0;
/// Consecutive slow buckets before a slowdown is called: one bucket can be a checkpoint or
/// an evaluation step; two say the collectives stayed slow.
pub const SUSTAINED_BUCKETS: usize = 2;
/// Earlier buckets needed for an earlier level: a median and MAD of fewer is no level.
pub const MIN_EARLIER_BUCKETS: usize = 3;
/// A communicator under this share of what its topology allows at its size (DESIGN 4.8's
/// `expected`, [`ring_busbw_gbs`]), with no earlier level it fell from, is slow from its
/// start: a ring's busbw approaches the slowest link's rate (the reference), and NCCL's
/// model has taken off the latency, so under half of it is a link at half its rate or worse,
/// not the algorithm's overhead.
pub const UNDER_EXPECTED: f64 = 0.5;
/// A rank is late in a bucket only by more than this, us: launch skew between the ranks of
/// one collective is tens to hundreds of us; a millisecond is the rank's own delay.
pub const LATE_FLOOR_US: f64 = 1000.0;
/// ... and by more than this share of the other ranks' execution time: a quarter of their
/// time spent waiting for one rank is the wait, not the transfer, that makes them slow.
pub const LATE_SHARE: f64 = 0.25;
/// Collectives a straggler must have been late in, over its late buckets: fewer are a
/// hiccup (a page fault, a log flush), not a rank that keeps the others waiting.
pub const STRAGGLER_MIN_COLLECTIVES: u64 = 5;

/// Buckets per communicator over the records' span at most: the summaries stay bounded
/// however long the job ran (a one-minute dump gets buckets of 0.1 s or wider).
pub const MAX_BUCKETS: f64 = 600.0;
/// The bucket when the records show no step (no collective of one kind and size recurs on
/// a rank): a second of collectives.
pub const NO_STEP_BUCKET_S: f64 = 1.0;

/// A bucket is this share of a step: a little narrower, so that it holds at most one of a
/// collective's recurrences on a rank whatever the steps' jitter (some buckets stay empty
/// and are skipped), and two slow buckets in a row are two steps.
pub const STEP_SHARE: f64 = 0.9;

/// The summaries' bucket for `records`: about one step of the job ([`step_s`] times
/// [`STEP_SHARE`]), so that [`SUSTAINED_BUCKETS`] slow buckets are that many steps and a
/// slowdown is called within two steps of its onset (issue 39 item 7); [`NO_STEP_BUCKET_S`]
/// when the records show no step; widened so that the records' span fits in
/// [`MAX_BUCKETS`]. One collective's timing is noisier than a second's median, which the
/// level's spread ([`SLOW_MADS`] of the earlier buckets) and the two buckets in a row absorb.
pub fn bucket_width_s(records: &[CollectiveRecord]) -> f64 {
    let (first, last) = records.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| {
        (lo.min(r.at_us), hi.max(r.at_us))
    });
    let fits = (last - first) / 1e6 / MAX_BUCKETS;
    step_s(records)
        .map_or(NO_STEP_BUCKET_S, |step| step * STEP_SHARE)
        .max(fits)
}

/// The job's step in seconds: how often a collective of one kind and size recurs on one
/// rank of one communicator (the median gap between its consecutive sequence numbers), the
/// median over those; `None` when none recurs. A training step issues the same collectives
/// each time, so this is the step, or a fraction of it when one size recurs within a step.
pub fn step_s(records: &[CollectiveRecord]) -> Option<f64> {
    let gaps = series(records)
        .into_values()
        .filter_map(|rs| median(rs.windows(2).map(|w| (w[1].at_us - w[0].at_us) / 1e6)));
    median(gaps).filter(|&g| g > 0.0 && g.is_finite())
}

/// A rank's collectives of one kind and size in one communicator.
type SeriesKey<'a> = (&'a str, u32, &'a str, u64);

/// The records by communicator, rank, collective and size, each series in sequence order:
/// what a step recurs in ([`step_s`]) and what a summary summarises ([`summarize`]).
fn series(records: &[CollectiveRecord]) -> BTreeMap<SeriesKey<'_>, Vec<&CollectiveRecord>> {
    let mut by: BTreeMap<SeriesKey<'_>, Vec<&CollectiveRecord>> = BTreeMap::new();
    for r in records {
        by.entry((&r.communicator, r.rank, &r.collective, r.bytes))
            .or_default()
            .push(r);
    }
    for rs in by.values_mut() {
        rs.sort_by(|a, b| a.seq.cmp(&b.seq).then(a.at_us.total_cmp(&b.at_us)));
    }
    by
}

/// Summarises `records` per communicator, rank, collective, size and time bucket of
/// `width_s` seconds (bucket `floor(at_us / 1e6 / width_s)`): the count, the first and last
/// sequence numbers, and the median execution time and bus bandwidth. One summary per group
/// and bucket, ordered by communicator, rank, collective, size and bucket, whatever the
/// records' order. `width_s` must be positive and finite: no summary otherwise.
pub fn summarize(records: &[CollectiveRecord], width_s: f64) -> Vec<RankSummary> {
    if !(width_s > 0.0 && width_s.is_finite()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for ((communicator, rank, collective, bytes), rs) in series(records) {
        let mut buckets: BTreeMap<i64, Vec<&CollectiveRecord>> = BTreeMap::new();
        for r in rs {
            let bucket = (r.at_us / 1e6 / width_s).floor() as i64;
            buckets.entry(bucket).or_default().push(r);
        }
        out.extend(buckets.into_iter().map(|(bucket, rs)| {
            let (first, last) = (rs[0], rs[rs.len() - 1]);
            RankSummary {
                communicator: communicator.to_string(),
                rank,
                n_ranks: first.n_ranks,
                n_nodes: first.n_nodes,
                hostname: first.hostname.clone(),
                pid: first.pid,
                gpu: first.gpu,
                collective: collective.to_string(),
                bytes,
                start_s: bucket as f64 * width_s,
                width_s,
                count: rs.len() as u64,
                first_seq: first.seq,
                last_seq: last.seq,
                exec_us: median(rs.iter().map(|r| r.exec_us)).unwrap_or_default(),
                busbw_gbs: median(rs.iter().map(|r| r.busbw_gbs)).unwrap_or_default(),
            }
        }));
    }
    out
}

/// The job's symptom (DESIGN 4.8) from its ranks' summaries: each communicator's
/// collectives of one kind and size, slow when their bus bandwidth (per bucket, the median
/// over the ranks) fell below its own earlier level ([`SLOW_DROP`], [`SLOW_MADS`]) for
/// [`SUSTAINED_BUCKETS`] buckets, or runs under [`UNDER_EXPECTED`] of what the topology
/// allows with no earlier level to fall from; and the ranks late in most of their
/// communicator's buckets ([`Straggler`]), over its slow period or the whole window.
pub fn symptom(evidence: &CollectiveEvidence) -> Symptom {
    let groups = groups(&evidence.summaries);
    let levels: Vec<Level> = groups
        .iter()
        .map(|g| level(g, &evidence.expected_busbw_gbs))
        .collect();
    // The slowest hit: slow ones first, then the lowest share of their reference (the first
    // of equals: groups are in a fixed order).
    let worst = levels
        .iter()
        .min_by(|a, b| (!a.slow()).cmp(&!b.slow()).then(a.hit.total_cmp(&b.hit)));
    let gpus = Gpus::index(&evidence.summaries);
    let stragglers = stragglers(&groups, &levels, &gpus);
    Symptom {
        source: "nccl_inspector".to_string(),
        records: evidence.records,
        slow: levels.iter().any(Level::slow),
        since: levels.iter().filter_map(|l| l.since).min_by(f64::total_cmp),
        busbw_gbs: worst.map(|l| l.busbw.clone()).unwrap_or_default(),
        communicators: groups
            .iter()
            .zip(&levels)
            .map(|(g, l)| communicator(g, l, &gpus))
            .collect(),
        stragglers,
        skipped: evidence.skipped.clone(),
    }
}

/// One communicator's summaries of one collective and size, by bucket.
struct Group<'a> {
    id: &'a str,
    collective: &'a str,
    bytes: u64,
    /// Bucket start in ms (an exact key) -> the ranks' summaries in it.
    buckets: BTreeMap<i64, Vec<&'a RankSummary>>,
}

impl Group<'_> {
    fn n_ranks(&self) -> u32 {
        self.summaries().map(|s| s.n_ranks).max().unwrap_or(0)
    }

    fn n_nodes(&self) -> u32 {
        self.summaries().map(|s| s.n_nodes).max().unwrap_or(0)
    }

    fn summaries(&self) -> impl Iterator<Item = &RankSummary> + '_ {
        self.buckets.values().flatten().copied()
    }
}

fn bucket_key(start_s: f64) -> i64 {
    (start_s * 1e3).round() as i64
}

/// The summaries by communicator, collective and size, in that order.
fn groups(summaries: &[RankSummary]) -> Vec<Group<'_>> {
    let mut by: BTreeMap<(&str, &str, u64), BTreeMap<i64, Vec<&RankSummary>>> = BTreeMap::new();
    for s in summaries {
        by.entry((&s.communicator, &s.collective, s.bytes))
            .or_default()
            .entry(bucket_key(s.start_s))
            .or_default()
            .push(s);
    }
    by.into_iter()
        .map(|((id, collective, bytes), buckets)| Group {
            id,
            collective,
            bytes,
            buckets,
        })
        .collect()
}

/// A group's bus bandwidth over the window, judged.
struct Level {
    /// (bucket start, median busbw over the ranks), one a bucket.
    series: Vec<(f64, f64)>,
    busbw: BusBandwidth,
    /// Its onset, when slow.
    since: Option<f64>,
    /// Its bandwidth as a share of its reference (the earlier level, else the expected
    /// rate, else 1): how hard it was hit.
    hit: f64,
}

impl Level {
    fn slow(&self) -> bool {
        self.since.is_some()
    }

    /// The group's bandwidth: during the slowdown when slow, else over the window.
    fn busbw(&self) -> f64 {
        self.busbw.during.or(self.busbw.before).unwrap_or_default()
    }
}

fn level(g: &Group<'_>, expected: &model::job::ExpectedBusBandwidth) -> Level {
    // A bucket holding under half the ranks a bucket typically holds caught a fraction of a
    // collective at its edge: the ranks that started late, whose own times stay short, alone
    // (the reference's late arrival). Its median is theirs, not the communicator's: skipped.
    let typical = median(g.buckets.values().map(|b| b.len() as f64)).unwrap_or_default();
    let series: Vec<(f64, f64)> = g
        .buckets
        .values()
        .filter(|b| 2.0 * b.len() as f64 >= typical)
        .map(|b| {
            let busbw = median(b.iter().map(|s| s.busbw_gbs)).unwrap_or_default();
            (b[0].start_s, busbw)
        })
        .collect();
    let values: Vec<f64> = series.iter().map(|p| p.1).collect();
    // DESIGN 4.8: a communicator within one host exercises NVLink/PCIe only, one across
    // hosts the RNICs too (the reference). What its links allow, NCCL's model brings down to
    // what a ring of its size reaches: a small collective is latency-bound, not slow.
    let bound = if g.n_nodes() > 1 {
        expected.across_hosts
    } else {
        expected.within_host
    };
    let expected = bound
        .and_then(|b| ring_busbw_gbs(b, g.collective, g.bytes, g.n_ranks(), g.n_nodes().max(1)));
    let window = median(values.iter().copied()).unwrap_or_default();
    let (since, before, during, hit) = if let Some(i) = onset(&values) {
        let before = median(values[..i].iter().copied()).unwrap_or_default();
        let during = median(values[i..].iter().copied()).unwrap_or_default();
        (
            Some(series[i].0),
            Some(before),
            Some(during),
            during / before,
        )
    } else {
        let hit = expected.map_or(1.0, |e| window / e);
        let under = expected.is_some() && hit < UNDER_EXPECTED && !series.is_empty();
        if under {
            (Some(series[0].0), None, Some(window), hit)
        } else {
            (None, Some(window), None, hit)
        }
    };
    Level {
        series,
        busbw: BusBandwidth {
            before,
            during,
            expected,
        },
        since,
        hit,
    }
}

/// The first bucket of a sustained slowdown: the first of [`SUSTAINED_BUCKETS`] buckets in
/// a row each under the level of every bucket before the run.
fn onset(values: &[f64]) -> Option<usize> {
    (MIN_EARLIER_BUCKETS..values.len()).find(|&i| {
        let Some(earlier) = Robust::of(&values[..i]) else {
            return false;
        };
        let below = |v: f64| {
            v < earlier.median * (1.0 - SLOW_DROP)
                && earlier.median - v > SLOW_MADS * MAD_TO_SIGMA * earlier.mad
        };
        values
            .get(i..i + SUSTAINED_BUCKETS)
            .is_some_and(|run| run.iter().all(|&v| below(v)))
    })
}

fn communicator(g: &Group<'_>, l: &Level, gpus: &Gpus<'_>) -> CommunicatorSymptom {
    let hosts: BTreeSet<&str> = g.summaries().map(|s| s.hostname.as_str()).collect();
    // Each rank once: its GPU, when known.
    let ranks: BTreeMap<u32, (&str, Option<u32>)> = g
        .summaries()
        .map(|s| (s.rank, (s.hostname.as_str(), gpus.of(s))))
        .collect();
    let places: BTreeSet<RankPlace> = ranks
        .values()
        .filter_map(|&(host, gpu)| {
            Some(RankPlace {
                host: host.to_string(),
                gpu: gpu?,
                rnic: None,
            })
        })
        .collect();
    // A rail: across hosts, one GPU index known for every rank.
    let indices: BTreeSet<Option<u32>> = ranks.values().map(|&(_, gpu)| gpu).collect();
    let rail = indices
        .first()
        .copied()
        .flatten()
        .filter(|_| indices.len() == 1 && g.n_nodes() > 1);
    CommunicatorSymptom {
        id: g.id.to_string(),
        collective: g.collective.to_string(),
        bytes: g.bytes,
        ranks: g.n_ranks(),
        nnodes: g.n_nodes(),
        hosts: hosts.into_iter().map(str::to_string).collect(),
        slow: l.slow(),
        busbw_gbs: l.busbw(),
        since: l.since,
        series: l.series.clone(),
        places: places.into_iter().collect(),
        rail,
    }
}

/// How late one rank was in one group's bucket, and in how many collectives.
struct Late {
    late_us: f64,
    collectives: u64,
}

/// How late `rank` arrived in one bucket, by the reference's rule: a collective completes on
/// every rank only when the slowest has contributed, so the late rank's own execution time
/// stays short while the others' grow; it is late by the others' median time less its own,
/// when that exceeds [`LATE_FLOOR_US`] and [`LATE_SHARE`] of the others' time.
fn lateness(bucket: &[&RankSummary], rank: &RankSummary) -> Option<f64> {
    let others = median(
        bucket
            .iter()
            .filter(|s| s.rank != rank.rank)
            .map(|s| s.exec_us),
    )?;
    let late = others - rank.exec_us;
    (late > LATE_FLOOR_US && late > LATE_SHARE * others).then_some(late)
}

/// The stragglers of each communicator: ranks late in most of the buckets they ran in over
/// its slow period (from its earliest onset on), or over the window when it did not slow,
/// and in at least [`STRAGGLER_MIN_COLLECTIVES`] collectives there.
fn stragglers(groups: &[Group<'_>], levels: &[Level], gpus: &Gpus<'_>) -> Vec<Straggler> {
    // communicator -> its slow period's start (its earliest onset), when it slowed
    let mut from: BTreeMap<&str, f64> = BTreeMap::new();
    for (g, l) in groups.iter().zip(levels) {
        if let Some(s) = l.since {
            let t = from.entry(g.id).or_insert(s);
            *t = t.min(s);
        }
    }
    // (communicator, rank) -> (buckets it ran in, its late ones)
    let mut ranks: BTreeMap<(&str, u32), (usize, Vec<Late>, &RankSummary)> = BTreeMap::new();
    for g in groups {
        let start = from.get(g.id).copied().unwrap_or(f64::NEG_INFINITY);
        let buckets = g.buckets.values().filter(|b| b[0].start_s >= start);
        for bucket in buckets {
            for s in bucket {
                let entry = ranks.entry((g.id, s.rank)).or_insert((0, Vec::new(), s));
                entry.0 += 1;
                if let Some(late_us) = lateness(bucket, s) {
                    entry.1.push(Late {
                        late_us,
                        collectives: s.count,
                    });
                }
            }
        }
    }
    ranks
        .into_iter()
        .filter_map(|((communicator, rank), (ran, late, s))| {
            let collectives: u64 = late.iter().map(|l| l.collectives).sum();
            if late.len() * 2 <= ran || collectives < STRAGGLER_MIN_COLLECTIVES {
                return None;
            }
            Some(Straggler {
                rank,
                communicator: communicator.to_string(),
                host: s.hostname.clone(),
                gpu: gpus.of(s).map(|g| format!("gpu{g}")),
                late_us: median(late.iter().map(|l| l.late_us)).unwrap_or_default(),
                collectives,
            })
        })
        .collect()
}

/// The GPU each rank drives: as its records say, else its process's rank in its host's
/// one-node communicator (one process a GPU, ranked by device there); unknown otherwise.
/// Indexed once over all the summaries.
struct Gpus<'a> {
    /// (communicator, rank) -> the GPU its records name.
    named: BTreeMap<(&'a str, u32), u32>,
    /// (host, process) -> its lowest rank in a one-node communicator.
    local_rank: BTreeMap<(&'a str, u64), u32>,
}

impl<'a> Gpus<'a> {
    fn index(all: &'a [RankSummary]) -> Self {
        let mut named = BTreeMap::new();
        let mut local_rank: BTreeMap<(&str, u64), u32> = BTreeMap::new();
        for s in all {
            if let Some(g) = s.gpu {
                named.entry((s.communicator.as_str(), s.rank)).or_insert(g);
            }
            if let (1, Some(pid)) = (s.n_nodes, s.pid) {
                let r = local_rank
                    .entry((s.hostname.as_str(), pid))
                    .or_insert(s.rank);
                *r = (*r).min(s.rank);
            }
        }
        Self { named, local_rank }
    }

    fn of(&self, rank: &RankSummary) -> Option<u32> {
        if let Some(&g) = self.named.get(&(rank.communicator.as_str(), rank.rank)) {
            return Some(g);
        }
        let pid = rank.pid?;
        self.local_rank.get(&(rank.hostname.as_str(), pid)).copied()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use model::inspector::{CollectiveRecord, Skipped};
    use model::job::{CollectiveEvidence, ExpectedBusBandwidth};
    use proptest::prelude::*;

    use super::*;

    /// The window's start, Unix seconds (a multiple of the bucket width).
    pub(crate) const T0: f64 = 1_795_000_000.0;
    /// The bucket width of the tests, seconds.
    pub(crate) const WIDTH: f64 = 5.0;
    const SECONDS: u32 = 60;
    const PER_SECOND: u32 = 2;
    const BYTES: u64 = 64 << 20;
    /// The healthy execution time of a 64 MiB collective, us.
    pub(crate) const EXEC: f64 = 6000.0;

    /// The 16-rank job on 8 hosts: rank r on `node00{r % 8 + 1}`, process 1000 + r.
    pub(crate) fn host_of(rank: u32) -> String {
        format!("node{:03}", rank % 8 + 1)
    }

    /// A record of `communicator` (ranks `ranks`, n_nodes `nodes`), its rank-th rank being
    /// global rank `global`, at second `t` of the window.
    #[allow(clippy::too_many_arguments)]
    fn record(
        communicator: &str,
        collective: &str,
        bytes: u64,
        (rank, n_ranks, n_nodes): (u32, u32, u32),
        global: u32,
        seq: u64,
        t: f64,
        exec_us: f64,
    ) -> CollectiveRecord {
        let algobw = bytes as f64 / (exec_us * 1e-6) / 1e9;
        let n = n_ranks as f64;
        CollectiveRecord {
            communicator: communicator.into(),
            rank,
            n_ranks,
            n_nodes,
            hostname: host_of(global),
            pid: Some(1000 + global as u64),
            gpu: None,
            collective: collective.into(),
            seq,
            bytes,
            exec_us,
            algobw_gbs: algobw,
            busbw_gbs: algobw * 2.0 * (n - 1.0) / n,
            kernel_start_us: None,
            at_us: (T0 + t) * 1e6,
            job: None,
        }
    }

    /// A few percent of deterministic jitter.
    fn jitter(seq: u64, rank: u32) -> f64 {
        1.0 + 0.03 * ((seq * 7 + rank as u64 * 3) % 5) as f64 / 4.0
    }

    /// The healthy job's two communicators: `0xa` (all 16 ranks, AllReduce) and `0xb`
    /// (global ranks 8..16, AllReduce), both across hosts; `exec(communicator, global rank,
    /// second)` is each rank's execution time before jitter.
    pub(crate) fn job(exec: impl Fn(&str, u32, f64) -> f64) -> Vec<CollectiveRecord> {
        let mut out = Vec::new();
        for k in 0..SECONDS * PER_SECOND {
            let t = k as f64 / PER_SECOND as f64;
            for (id, members) in [("0xa", 0..16), ("0xb", 8..16)] {
                let n = members.len() as u32;
                for (rank, global) in members.enumerate() {
                    let e = exec(id, global, t) * jitter(k as u64, global);
                    let shape = (rank as u32, n, 8);
                    out.push(record(
                        id,
                        "AllReduce",
                        BYTES,
                        shape,
                        global,
                        k as u64,
                        t,
                        e,
                    ));
                }
            }
        }
        out
    }

    /// The collective evidence of `records`, summarised.
    pub(crate) fn evidence(records: &[CollectiveRecord]) -> CollectiveEvidence {
        CollectiveEvidence {
            records: records.len() as u64,
            summaries: summarize(records, WIDTH),
            skipped: Skipped::default(),
            expected_busbw_gbs: ExpectedBusBandwidth::default(),
            simulated: false,
        }
    }

    /// Rank 6 (on node007) starts every collective of `0xa` 40 ms late: its own time stays
    /// short, the others wait. node007's one-node communicator `0x7` ranks its two
    /// processes (global ranks 6 and 14) 0 and 1.
    pub(crate) fn straggler_job() -> Vec<CollectiveRecord> {
        let mut records = job(|id, global, _| {
            if id == "0xa" && global != 6 {
                EXEC + 40_000.0
            } else {
                EXEC
            }
        });
        for k in 0..SECONDS {
            for (rank, global) in [(0, 6), (1, 14)] {
                let shape = (rank, 2, 1);
                records.push(record(
                    "0x7",
                    "AllGather",
                    1 << 20,
                    shape,
                    global,
                    k as u64,
                    k as f64,
                    200.0,
                ));
            }
        }
        records
    }

    #[test]
    fn a_healthy_job_is_not_slow_and_has_no_straggler() {
        let s = symptom(&evidence(&job(|_, _, _| EXEC)));
        assert!(!s.slow, "{s:?}");
        assert_eq!(s.since, None);
        assert!(s.stragglers.is_empty(), "{:?}", s.stragglers);
        assert_eq!(s.records, 16 * 120 + 8 * 120);
        assert_eq!(s.communicators.len(), 2);
        let a = &s.communicators[0];
        assert_eq!((a.id.as_str(), a.ranks, a.nnodes), ("0xa", 16, 8));
        assert_eq!(a.hosts.len(), 8);
        assert_eq!(a.series.len(), 12, "one point a bucket");
        assert!(!a.slow && a.since.is_none());
        assert!(s.busbw_gbs.before.is_some() && s.busbw_gbs.during.is_none());
    }

    #[test]
    fn a_rank_that_starts_late_is_a_straggler_placed_on_its_gpu() {
        let s = symptom(&evidence(&straggler_job()));
        assert_eq!(s.stragglers.len(), 1, "{:?}", s.stragglers);
        let st = &s.stragglers[0];
        assert_eq!((st.rank, st.communicator.as_str()), (6, "0xa"));
        assert_eq!(st.host, "node007");
        assert_eq!(st.gpu.as_deref(), Some("gpu0"), "its rank in 0x7");
        assert!((st.late_us - 40_000.0).abs() < 2_000.0, "{}", st.late_us);
        assert_eq!(st.collectives, 120, "every collective of the window");
        assert!(!s.slow, "no earlier level, no expected rate: {s:?}");
    }

    #[test]
    fn a_straggler_since_the_onset_is_judged_over_the_slow_period() {
        // Late in the last 6 of 12 buckets: not most of the window, all of the slow period.
        let records = job(|id, global, t| {
            if id == "0xa" && global != 6 && t >= 30.0 {
                EXEC + 40_000.0
            } else {
                EXEC
            }
        });
        let s = symptom(&evidence(&records));
        assert!(s.slow && s.communicators[0].slow, "{s:?}");
        assert_eq!(s.since, Some(T0 + 30.0));
        assert_eq!(s.stragglers.len(), 1, "{:?}", s.stragglers);
        assert_eq!((s.stragglers[0].rank, s.stragglers[0].collectives), (6, 60));
        assert_eq!(
            s.stragglers[0].gpu, None,
            "no GPU said, no one-node communicator"
        );
    }

    #[test]
    fn a_gpu_the_records_name_is_the_stragglers() {
        let mut records = straggler_job();
        for r in records.iter_mut().filter(|r| r.communicator == "0xa") {
            r.gpu = Some(3);
        }
        let s = symptom(&evidence(&records));
        assert_eq!(s.stragglers[0].gpu.as_deref(), Some("gpu3"));
        // Without a GPU or a one-node communicator, none.
        records.retain(|r| r.communicator != "0x7");
        records.iter_mut().for_each(|r| r.gpu = None);
        let s = symptom(&evidence(&records));
        assert_eq!(s.stragglers[0].gpu, None);
    }

    #[test]
    fn a_slow_rail_is_slow_from_its_onset_without_a_straggler() {
        let records = job(|id, _, t| {
            if id == "0xb" && t >= 30.0 {
                2.0 * EXEC
            } else {
                EXEC
            }
        });
        let s = symptom(&evidence(&records));
        assert!(s.slow, "{s:?}");
        let since = s.since.expect("an onset");
        assert!((since - (T0 + 30.0)).abs() <= WIDTH, "{since}");
        assert!(s.stragglers.is_empty(), "{:?}", s.stragglers);
        let b = &s.communicators[1];
        assert_eq!(b.id, "0xb");
        assert!(b.slow && !s.communicators[0].slow);
        let (before, during) = (s.busbw_gbs.before.unwrap(), s.busbw_gbs.during.unwrap());
        assert!((during / before - 0.5).abs() < 0.05, "{before} -> {during}");
        assert_eq!(b.busbw_gbs, during);
    }

    /// A rail-optimised job: four hosts (`node001`..`node004`) of two GPUs, process
    /// `2000 + 2 host + gpu` driving GPU `gpu` of host `host` (0-based); a communicator a
    /// rail (`0xr0`, `0xr1`: GPU i of every host, ranked by host) and each host's one-node
    /// communicator (`0xh1`..`0xh4`: its two GPUs, ranked by device). Rail `slow`'s
    /// collectives take twice as long from second 30.
    pub(crate) fn rail_job(slow: u32) -> Vec<CollectiveRecord> {
        let mut out = Vec::new();
        for k in 0..SECONDS * PER_SECOND {
            let t = k as f64 / PER_SECOND as f64;
            for host in 0..4u32 {
                for gpu in 0..2u32 {
                    let slowed = gpu == slow && t >= 30.0;
                    let exec = if slowed { 2.0 * EXEC } else { EXEC } * jitter(k as u64, host);
                    let place = |mut r: CollectiveRecord| {
                        r.hostname = format!("node{:03}", host + 1);
                        r.pid = Some(u64::from(2000 + 2 * host + gpu));
                        r
                    };
                    let rail = format!("0xr{gpu}");
                    let (rank, seq) = (host, k as u64);
                    out.push(place(record(
                        &rail,
                        "AllReduce",
                        BYTES,
                        (rank, 4, 4),
                        0,
                        seq,
                        t,
                        exec,
                    )));
                    let local = format!("0xh{}", host + 1);
                    out.push(place(record(
                        &local,
                        "AllGather",
                        1 << 20,
                        (gpu, 2, 1),
                        0,
                        seq,
                        t,
                        EXEC / 10.0,
                    )));
                }
            }
        }
        out
    }

    #[test]
    fn a_slow_rails_communicator_says_its_rail_and_gpus() {
        let s = symptom(&evidence(&rail_job(1)));
        assert!(s.slow, "{s:?}");
        assert!(s.stragglers.is_empty(), "{:?}", s.stragglers);
        let by_id = |id: &str| s.communicators.iter().find(|c| c.id == id).unwrap();
        let (r0, r1) = (by_id("0xr0"), by_id("0xr1"));
        assert!(r1.slow && !r0.slow);
        // Each rank's GPU from its rank in its host's one-node communicator.
        assert_eq!((r0.rail, r1.rail), (Some(0), Some(1)));
        let places: Vec<(&str, u32)> = r1.places.iter().map(|p| (p.host.as_str(), p.gpu)).collect();
        assert_eq!(
            places,
            [
                ("node001", 1),
                ("node002", 1),
                ("node003", 1),
                ("node004", 1)
            ]
        );
        assert!(
            r1.places.iter().all(|p| p.rnic.is_none()),
            "no host model here"
        );
        // A host's own communicator spans its GPUs: no rail.
        let local = by_id("0xh2");
        assert_eq!(local.rail, None);
        assert_eq!(local.places.len(), 2);
    }

    #[test]
    fn a_bucket_holding_only_the_late_ranks_at_its_edge_does_not_hide_a_slowdown() {
        // 8 ranks of one host each, one all-reduce a second; from second 30 on rank 7 starts
        // 0.6 s late, in the next half-second bucket, and the others wait for it.
        let mut records = Vec::new();
        for k in 0..SECONDS {
            for rank in 0..8u32 {
                let late = k >= 30 && rank == 7;
                let (t, exec) = match (k >= 30, late) {
                    (_, true) => (f64::from(k) + 0.6, EXEC),
                    (true, false) => (f64::from(k), EXEC + 600_000.0),
                    _ => (f64::from(k), EXEC),
                };
                records.push(record(
                    "0xa",
                    "AllReduce",
                    BYTES,
                    (rank, 8, 8),
                    rank,
                    u64::from(k),
                    t,
                    exec,
                ));
            }
        }
        let e = CollectiveEvidence {
            summaries: summarize(&records, 0.5),
            ..evidence(&records)
        };
        let s = symptom(&e);
        // Its buckets alternate: the seven waiting ranks, then rank 7 alone, fast.
        assert!(s.slow, "{s:#?}");
        let since = s.since.unwrap();
        assert!((since - (T0 + 30.0)).abs() < 0.01, "{since}");
        assert_eq!(
            s.stragglers.len(),
            0,
            "late alone in its bucket: no other rank to wait"
        );
    }

    #[test]
    fn a_communicator_over_gpus_of_several_indices_has_no_rail() {
        // 0xa spans every rank of the 16-rank job; the records name each rank's GPU.
        let records: Vec<CollectiveRecord> = job(|_, _, _| EXEC)
            .into_iter()
            .map(|mut r| {
                r.gpu = Some(r.rank % 2);
                r
            })
            .collect();
        let s = symptom(&evidence(&records));
        let a = s.communicators.iter().find(|c| c.id == "0xa").unwrap();
        assert_eq!(a.rail, None);
        let b = s.communicators.iter().find(|c| c.id == "0xb").unwrap();
        assert_eq!(b.rail, None);
        // From the records' own GPU, not a one-node communicator (there is none).
        assert!(a.places.iter().any(|p| p.gpu == 1));
        // One GPU named for all: a rail.
        let records: Vec<CollectiveRecord> = job(|_, _, _| EXEC)
            .into_iter()
            .map(|mut r| {
                r.gpu = Some(3);
                r
            })
            .collect();
        let s = symptom(&evidence(&records));
        assert!(s.communicators.iter().all(|c| c.rail == Some(3)));
    }

    #[test]
    fn a_communicator_at_a_third_of_its_expected_rate_is_slow_from_its_start() {
        let mut e = evidence(&job(|_, _, _| EXEC));
        let healthy = symptom(&e).communicators[0].busbw_gbs;
        e.expected_busbw_gbs.across_hosts = Some(3.0 * healthy);
        let s = symptom(&e);
        assert!(s.slow, "{s:?}");
        assert_eq!(s.since, Some(T0));
        // What the links allow, brought down by NCCL's model to what a ring of 64 MiB over
        // this communicator's ranks reaches.
        let at = |bound, ranks| ring_busbw_gbs(bound, "AllReduce", BYTES, ranks, 8);
        let expected = s.busbw_gbs.expected.unwrap();
        assert!(
            [at(3.0 * healthy, 16), at(3.0 * healthy, 8)].contains(&Some(expected)),
            "{s:?}"
        );
        assert!(expected < 3.0 * healthy);
        assert_eq!(s.busbw_gbs.before, None, "no earlier level");
        // 0xb under half of what the links allow, but not of what a ring of 64 MiB over its
        // 8 hosts reaches (NCCL's model gives it 0.3 ms of latency to its 2.8 of transfer):
        // not slow.
        let bound = 2.0 * healthy;
        e.expected_busbw_gbs.across_hosts = Some(bound);
        let s = symptom(&e);
        assert!(!s.slow, "{s:?}");
        assert!(s.communicators[1].busbw_gbs < 0.5 * bound, "{s:?}");
        // Within one host is another rate: it does not judge these communicators.
        e.expected_busbw_gbs = ExpectedBusBandwidth {
            across_hosts: None,
            within_host: Some(3.0 * healthy),
        };
        assert!(!symptom(&e).slow);
        // At its expected rate: not slow.
        e.expected_busbw_gbs.across_hosts = Some(healthy * 1.1);
        assert!(!symptom(&e).slow);
    }

    #[test]
    fn kinds_and_sizes_are_judged_apart() {
        // From t0 + 30 s, 0xa also gathers 1 MiB, at a far lower busbw: mixed with the
        // all-reduce it would look like a slowdown.
        let mut records = job(|_, _, _| EXEC);
        for k in 60..120u64 {
            for global in 0..16 {
                let shape = (global, 16, 8);
                let t = k as f64 / 2.0;
                records.push(record(
                    "0xa",
                    "AllGather",
                    1 << 20,
                    shape,
                    global,
                    1000 + k,
                    t,
                    900.0,
                ));
            }
        }
        let s = symptom(&evidence(&records));
        assert!(!s.slow, "{s:?}");
        let kinds: Vec<(&str, &str, u64)> = s
            .communicators
            .iter()
            .map(|c| (c.id.as_str(), c.collective.as_str(), c.bytes))
            .collect();
        assert_eq!(
            kinds,
            [
                ("0xa", "AllGather", 1 << 20),
                ("0xa", "AllReduce", BYTES),
                ("0xb", "AllReduce", BYTES)
            ]
        );
        let summaries = summarize(&records, WIDTH);
        assert!(summaries
            .iter()
            .filter(|s| s.collective == "AllGather")
            .all(|s| s.bytes == 1 << 20 && s.start_s >= T0 + 30.0));
    }

    #[test]
    fn summarize_is_one_summary_per_group_and_bucket_in_a_fixed_order() {
        let records = job(|_, _, _| EXEC);
        let summaries = summarize(&records, WIDTH);
        assert_eq!(summaries.len(), (16 + 8) * 12);
        assert!(summaries
            .iter()
            .all(|s| s.count == 10 && s.width_s == WIDTH));
        let first = &summaries[0];
        assert_eq!((first.communicator.as_str(), first.rank), ("0xa", 0));
        assert_eq!((first.start_s, first.first_seq, first.last_seq), (T0, 0, 9));
        assert_eq!(summaries[1].start_s, T0 + WIDTH);
        let mut reversed = records.clone();
        reversed.reverse();
        assert_eq!(summarize(&reversed, WIDTH), summaries);
        assert!(summarize(&records, 0.0).is_empty());
    }

    proptest! {
        #[test]
        fn permuting_the_records_does_not_change_the_summaries(
            (records, shuffled) in prop::collection::vec((0u32..4, 0u64..40, 1.0f64..1e5, 0.0f64..30.0), 1..60)
                .prop_map(|raw| {
                    raw.into_iter()
                        .enumerate()
                        .map(|(i, (rank, bytes, exec, t))| {
                            record("0xc", "AllReduce", bytes % 3, (rank, 4, 2), rank, i as u64, t, exec)
                        })
                        .collect::<Vec<_>>()
                })
                .prop_flat_map(|records| (Just(records.clone()), Just(records).prop_shuffle()))
        ) {
            prop_assert_eq!(summarize(&shuffled, WIDTH), summarize(&records, WIDTH));
        }
    }

    /// A job of one all-reduce a step over 8 ranks, `step_s` apart (launch skew and 1 %
    /// of jitter on the period), its busbw cut to `kept` from step `onset` on; its records
    /// through step `last`.
    fn stepped_job(step_s: f64, onset: u64, kept: f64, last: u64) -> Vec<CollectiveRecord> {
        let mut out = Vec::new();
        let mut t = 0.0;
        for k in 0..=last {
            let slow = if k >= onset { 1.0 / kept } else { 1.0 };
            for rank in 0..8 {
                let skew = ((k * 13 + rank as u64 * 7) % 50) as f64 * 1e-6;
                let e = EXEC * slow * jitter(k, rank);
                out.push(record(
                    "0xs",
                    "AllReduce",
                    BYTES,
                    (rank, 8, 8),
                    rank,
                    k,
                    t + skew,
                    e,
                ));
            }
            t += step_s * (1.0 + 0.01 * ((k * 5) % 3) as f64 - 0.01);
        }
        out
    }

    proptest! {
        /// Issue 39 item 7: a slowdown is detected within 2 steps of its onset, whatever
        /// the step: the records through its second slow step say slow, since the first;
        /// through its first alone they do not (one slow step is a checkpoint, not a
        /// slowdown).
        #[test]
        fn a_slowdown_is_called_on_its_second_slow_step(
            step_ms in 10u32..5000, onset in 10u64..40, kept in 0.2f64..0.6,
        ) {
            let step_s = step_ms as f64 / 1e3;
            let judged = |last: u64| {
                let records = stepped_job(step_s, onset, kept, last);
                let width = bucket_width_s(&records);
                symptom(&CollectiveEvidence {
                    records: records.len() as u64,
                    summaries: summarize(&records, width),
                    ..CollectiveEvidence::default()
                })
            };
            let two = judged(onset + 1);
            prop_assert!(two.slow, "{two:?}");
            let onset_at = stepped_job(step_s, onset, kept, onset)
                .iter()
                .filter(|r| r.seq == onset)
                .map(|r| r.at_us / 1e6)
                .fold(f64::INFINITY, f64::min);
            let since = two.since.unwrap();
            prop_assert!(
                since <= onset_at && onset_at - since < step_s,
                "since {since}, onset {onset_at}, step {step_s}"
            );
            let one = judged(onset);
            prop_assert!(!one.slow, "{one:?}");
        }
    }
}
