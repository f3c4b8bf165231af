//! A simulated job's collectives, step by step, as NCCL's Inspector plugin records them
//! (issue 39 item 5; DESIGN 4.8; `shared/reference/nccl-inspector.md`).
//!
//! The job is an all-reduce of `bytes` once a step over its hosts, `step_ms` of compute
//! between one step's end and the next's start. Each step:
//! - the fabric's state is the faults started by then (`--inject ...@<seconds>s`,
//!   [`ClusterFaults::fabric_at`]); the collective's time in that state is one replay of the
//!   job's ring all-reduce on the packet simulator, as the what-if replays it (one ring per
//!   rail, `verdict::whatif::replay_states`), once per distinct state and reused;
//! - the hosts' state is their faults of DESIGN 4.2 started by then
//!   ([`ClusterFaults::hosts_at`]): a rank's transfer across hosts goes no faster than its
//!   GPU<->RNIC path, and the ring waits for the slowest rank, so the replay's time grows by
//!   the job's [`host_paths::Slowdown`] (once per distinct state);
//! - each rank's kernel starts at the step's start plus a launch jitter, plus its delay if
//!   it is a straggler ([`StragglerFault`]); the collective completes on every rank when the
//!   last has arrived and the transfer is done, so each rank's execution time is that end
//!   less its own start: a late rank's stays short, the others' grow by its delay (the
//!   reference's "late arrival");
//! - then each host's own communicator (its GPUs, `nnodes` 1) reduces the same buffer over
//!   PCIe, which no fabric fault touches but a GPU's degraded PCIe link slows
//!   ([`host_paths`]): it is what places a rank on its GPU (a process drives one GPU, ranked
//!   by device in its host's communicator; `analyze::collectives`).
//!
//! Records are written as the plugin's verbose JSON (`kernel_start_ts`), one file per
//! process, and labelled simulated in their metadata (`model::inspector::SIMULATED_GIT_REV`).
//!
//! Limits of the model: a fault is judged at each step's start; a host's fault slows the
//! whole ring by its slowest rank's path, not by a ring's actual channel-to-NIC schedule
//! (two GPUs share a dgx-a100 RNIC, each counted as if it alone fed it); a flapping host
//! link counts at its average over a flap period, not phase by phase; the path's rate is
//! one QP's loopback stream, so an RNIC setting that limits a QP (`tx-window`) weighs as on
//! one QP; a host's own ring feels only its GPUs' own links, not the switch uplinks or
//! root ports it also crosses; and a host fault that does not touch these paths (`odp`,
//! `membw` on a memory node the GPUs never reach) leaves the records as they were.

use model::inspector::CollectiveRecord;
use model::job::CollectiveEvidence;
use model::topology::ComponentClass;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use verdict::spec::Cluster;
use verdict::whatif::{replay_states, JobTraffic, LinkStates, Replayed, WhatIfSettings};

use crate::fault::ClusterFaults;
use crate::host_paths::{self, Slowdown};
use crate::ClusterError;

/// Steps a simulated job runs by default: about 12 s at the default step, enough for an
/// earlier level and a sustained slowdown (`analyze::collectives`).
pub const DEFAULT_STEPS: u32 = 120;
/// The most steps: a simulated job writes steps x ranks x 2 records.
pub const MAX_STEPS: u32 = 100_000;
/// Compute between one step's collective and the next, ms, by default.
pub const DEFAULT_STEP_MS: f64 = 100.0;
/// The longest compute between collectives, ms: a minute.
pub const MAX_STEP_MS: f64 = 60_000.0;
/// The most records one simulated job writes: about half a gigabyte of JSON.
pub const MAX_RECORDS: u64 = 1_000_000;
/// When the simulated job starts, Unix us (2026-11-18): fixed, so that a seed gives the same
/// records byte for byte.
pub const START_UNIX_US: f64 = 1_795_000_000_000_000.0;
/// A rank's kernel launch skew, us at most: tens of us between the ranks of one collective
/// (`analyze::collectives::LATE_FLOOR_US` is far above it).
pub const LAUNCH_JITTER_US: f64 = 50.0;
/// Spread of a collective's transfer time from step to step (uniform, +-): a few percent is
/// what one collective's busbw varies by (`analyze::collectives::SLOW_DROP`).
pub const TIME_SPREAD: f64 = 0.01;
/// What a host's own all-reduce runs at, GB/s of bus bandwidth: PCIe Gen4 x16 between the
/// GPUs of a dgx-a100 (DESIGN 4.1), less its protocol overhead; on healthy links (a GPU's
/// link keeping a share of its capacity scales it by that share, `host_paths`).
pub const INTRA_HOST_BUSBW_GBS: f64 = 24.0;

/// How a simulated job runs.
#[derive(Clone, Debug, PartialEq)]
pub struct StepSettings {
    /// Collectives each communicator runs.
    pub steps: u32,
    /// Compute between one step's end and the next's start, ms.
    pub step_ms: f64,
    /// Bytes each rank reduces per step.
    pub bytes: u64,
    /// Seeds the launch jitter, the time spread and the simulator.
    pub seed: u64,
}

impl Default for StepSettings {
    fn default() -> Self {
        StepSettings {
            steps: DEFAULT_STEPS,
            step_ms: DEFAULT_STEP_MS,
            bytes: fleet_bytes(),
            seed: 1,
        }
    }
}

/// `hostping job --bytes`'s default, the what-if's.
fn fleet_bytes() -> u64 {
    crate::labelled::WHAT_IF_BYTES
}

/// One process of the job: one rank of the world communicator, one GPU of its host.
#[derive(Clone, Debug, PartialEq)]
pub struct Process {
    /// Its host.
    pub host: String,
    /// Its host's index in the job's hosts (rank order).
    pub job_host: usize,
    /// Its GPU index on the host (its rank in the host's communicator).
    pub gpu: u32,
    /// Its rank in the job's world communicator.
    pub rank: u32,
    /// Its process id (made up, distinct per process).
    pub pid: u64,
}

impl Process {
    /// The file the plugin would write for it: `<host>-<pid>.log`.
    pub fn file_name(&self) -> String {
        format!("{}-{}.log", self.host, self.pid)
    }
}

/// What a simulated job did.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRun {
    /// Its processes, indexed as the sink was called.
    pub processes: Vec<Process>,
    /// Steps run (fewer than asked when a cable of the job's RNICs went down: it hung).
    pub steps: u32,
    /// Records written.
    pub records: u64,
    /// Packets the simulator moved over its replays.
    pub packets: u64,
    /// Replays run: one per distinct fabric state met.
    pub replays: usize,
    /// When it started and ended, Unix seconds.
    pub start_unix_s: f64,
    /// See `start_unix_s`.
    pub end_unix_s: f64,
    /// The down cable that stopped it, when one did.
    pub hung_on: Option<String>,
}

impl JobRun {
    /// How long it ran, seconds: the faults present at its end are those started by then.
    pub fn duration_s(&self) -> f64 {
        self.end_unix_s - self.start_unix_s
    }
}

/// Runs the job over `nodes` (host indices, rank order) under `faults`, step by step, and
/// hands every record to `sink` with its process's index; `progress` gets (steps done,
/// steps). Fails, naming the input, on a job the what-if cannot place (fewer than two
/// hosts, no rail in common) or one of more than [`MAX_RECORDS`] records.
pub fn run(
    cluster: &Cluster,
    faults: &ClusterFaults,
    nodes: &[usize],
    settings: &StepSettings,
    sink: &mut dyn FnMut(usize, &CollectiveRecord),
    progress: &dyn Fn(u32, u32),
) -> Result<JobRun, ClusterError> {
    let processes = processes(cluster, nodes);
    check(&processes, nodes, settings)?;
    let traffic = JobTraffic::RingAllReduce {
        bytes: settings.bytes,
    };
    // The distinct fabric states, in start order: state i holds the faults started by
    // change point i.
    let changes = change_points(faults.fabric_start_s.iter().copied());
    // One replay per state, run when first met.
    let mut times: Vec<Option<Replayed>> = vec![None; changes.len()];
    let mut packets = 0;
    let whatif = WhatIfSettings {
        seed: settings.seed,
    };
    // Likewise the hosts' states, each host's faults started by change point i; a state's
    // slowdown is worked out when first met.
    let host_changes = change_points(faults.host_starts());
    let mut slowdowns: Vec<Option<Slowdown>> = vec![None; host_changes.len()];

    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let n = processes.len() as u32;
    let hosts = nodes.len() as u32;
    let world = format!("0x5e{:010x}", settings.seed & 0xff_ffff_ffff);
    let local = |h: usize| format!("0x7e{h:010x}");
    let local_us = intra_host_us(settings.bytes, &processes, nodes.len());
    // Each job host's processes, for its own communicator.
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, p) in processes.iter().enumerate() {
        members[p.job_host].push(i);
    }
    let mut t = START_UNIX_US;
    let mut written = 0;
    let mut hung_on = None;
    let mut steps = 0;
    for step in 0..settings.steps {
        let elapsed_s = (t - START_UNIX_US) / 1e6;
        let state = changes.iter().rposition(|&c| c <= elapsed_s).unwrap_or(0);
        let replayed = match &times[state] {
            Some(replayed) => replayed.clone(),
            None => {
                let states = LinkStates::from_faults(&faults.fabric_at(changes[state]));
                let replayed = replay_states(cluster, nodes, &traffic, &[states], &whatif)?
                    .pop()
                    .expect("one replay per state asked");
                if let Replayed::Ran { packets: p, .. } = replayed {
                    packets += p;
                }
                times[state] = Some(replayed.clone());
                replayed
            }
        };
        let transfer_us = match replayed {
            Replayed::Ran { time_us, .. } => time_us,
            Replayed::CannotRun(cable) => {
                hung_on = Some(cable);
                break;
            }
        };
        let host_state = host_changes
            .iter()
            .rposition(|&c| c <= elapsed_s)
            .unwrap_or(0);
        let slowdown = slowdowns[host_state]
            .get_or_insert_with(|| {
                host_paths::slowdown(cluster, nodes, &faults.hosts_at(host_changes[host_state]))
            })
            .clone();
        // The world all-reduce: ranks arrive, the last one's arrival starts the transfer,
        // which runs at the slowest rank's host path when that is below the fabric's rate.
        let transfer_us =
            transfer_us * slowdown.across * (1.0 + rng.gen_range(-TIME_SPREAD..=TIME_SPREAD));
        let starts: Vec<f64> = processes
            .iter()
            .map(|p| {
                t + rng.gen_range(0.0..LAUNCH_JITTER_US)
                    + delay_us(
                        faults,
                        nodes[p.job_host],
                        p.gpu,
                        elapsed_s,
                        settings.step_ms,
                    )
            })
            .collect();
        let end = starts.iter().copied().fold(f64::MIN, f64::max) + transfer_us;
        for (i, p) in processes.iter().enumerate() {
            let record = record(
                (&world, p.rank, n, hosts),
                p,
                step,
                settings.bytes,
                starts[i],
                end,
            );
            sink(i, &record);
        }
        // Each host's own all-reduce, once the world's is done on it.
        let mut step_end = end;
        for (h, members) in members.iter().enumerate() {
            let local_starts: Vec<f64> = members
                .iter()
                .map(|_| end + rng.gen_range(0.0..LAUNCH_JITTER_US))
                .collect();
            let local_end = local_starts.iter().copied().fold(f64::MIN, f64::max)
                + local_us * slowdown.within[h] * (1.0 + rng.gen_range(-TIME_SPREAD..=TIME_SPREAD));
            step_end = step_end.max(local_end);
            for (&i, &start) in members.iter().zip(&local_starts) {
                let p = &processes[i];
                let record = record(
                    (&local(nodes[h]), p.gpu, members.len() as u32, 1),
                    p,
                    step,
                    settings.bytes,
                    start,
                    local_end,
                );
                sink(i, &record);
            }
        }
        written += processes.len() as u64 * 2;
        steps += 1;
        t = step_end + settings.step_ms * 1e3;
        progress(step + 1, settings.steps);
    }
    Ok(JobRun {
        processes,
        steps,
        records: written,
        packets,
        replays: times.iter().flatten().count(),
        start_unix_s: START_UNIX_US / 1e6,
        end_unix_s: t / 1e6,
        hung_on,
    })
}

/// The distinct times a state changes at, seconds into the run, in order: 0 (the start)
/// and each of `starts`.
fn change_points(starts: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut changes: Vec<f64> = starts.chain([0.0]).collect();
    changes.sort_by(f64::total_cmp);
    changes.dedup();
    changes
}

/// Refuses, before anything is written, a job of fewer than two hosts (a collective across
/// hosts needs two) or one of more than [`MAX_RECORDS`] records.
pub fn check(
    processes: &[Process],
    nodes: &[usize],
    settings: &StepSettings,
) -> Result<(), ClusterError> {
    if nodes.len() < 2 {
        return Err(ClusterError::TooFewHosts(nodes.len()));
    }
    let records = u64::from(settings.steps) * processes.len() as u64 * 2;
    if records > MAX_RECORDS {
        return Err(ClusterError::TooManyRecords {
            records,
            cap: MAX_RECORDS,
        });
    }
    Ok(())
}

/// The job's processes: each host's GPUs in order, world ranks host after host.
pub fn processes(cluster: &Cluster, nodes: &[usize]) -> Vec<Process> {
    let mut out = Vec::new();
    for (job_host, &h) in nodes.iter().enumerate() {
        let host = &cluster.hosts[h];
        let gpus = host
            .model()
            .components()
            .iter()
            .filter(|c| c.class() == ComponentClass::Gpu)
            .count();
        for gpu in 0..gpus as u32 {
            let rank = out.len() as u32;
            out.push(Process {
                host: host.name.clone(),
                job_host,
                gpu,
                rank,
                pid: 10_000 + u64::from(rank),
            });
        }
    }
    out
}

/// How late the rank on `host`'s `gpu` starts a collective `elapsed_s` into the run of a
/// job computing `compute_ms` a step, us.
fn delay_us(faults: &ClusterFaults, host: usize, gpu: u32, elapsed_s: f64, compute_ms: f64) -> f64 {
    faults
        .stragglers
        .iter()
        .filter(|s| s.host == host && s.gpu.is_none_or(|g| g == gpu) && s.start_s <= elapsed_s)
        .map(|s| s.lateness.us(compute_ms))
        .sum()
}

/// A host's own ring all-reduce of `bytes` over its GPUs, us: 2 (g - 1) / g of the buffer
/// at [`INTRA_HOST_BUSBW_GBS`] (NCCL's bus bandwidth, the reference).
fn intra_host_us(bytes: u64, processes: &[Process], hosts: usize) -> f64 {
    let g = (processes.len() / hosts.max(1)).max(1) as f64;
    let factor = if g > 1.0 { 2.0 * (g - 1.0) / g } else { 1.0 };
    bytes as f64 * factor / (INTRA_HOST_BUSBW_GBS * 1e3)
}

/// One record of communicator `(id, rank, n_ranks, nnodes)`: the rank's kernel started at
/// `start` and the collective ended at `end` (Unix us, whole microseconds as the plugin
/// writes them).
fn record(
    (communicator, rank, n_ranks, n_nodes): (&str, u32, u32, u32),
    p: &Process,
    step: u32,
    bytes: u64,
    start: f64,
    end: f64,
) -> CollectiveRecord {
    let start = start.round();
    let exec_us = (end.round() - start).max(1.0);
    // NCCL's bandwidths: algbw is the buffer over the time; busbw scales it by 2 (n - 1) / n
    // for an all-reduce, so that it approaches the slowest link's speed (the reference).
    let algobw_gbs = bytes as f64 / exec_us / 1e3;
    let n = f64::from(n_ranks.max(1));
    // To the MB/s, as a short decimal reads back exactly (serde_json's fast path).
    let mbs = |gbs: f64| (gbs * 1e3).round() / 1e3;
    CollectiveRecord {
        communicator: communicator.to_string(),
        rank,
        n_ranks,
        n_nodes,
        hostname: p.host.clone(),
        pid: Some(p.pid),
        gpu: None,
        collective: "AllReduce".to_string(),
        seq: u64::from(step),
        bytes,
        exec_us,
        algobw_gbs: mbs(algobw_gbs),
        busbw_gbs: mbs(algobw_gbs * 2.0 * (n - 1.0) / n),
        kernel_start_us: Some(start),
        at_us: start,
        job: None,
    }
}

/// The records as the job's collectives evidence, summarised as `hostping job --nccl`
/// summarises a dump directory (`analyze::collectives::bucket_width_s`).
pub fn evidence(records: &[CollectiveRecord]) -> CollectiveEvidence {
    let width_s = analyze::collectives::bucket_width_s(records);
    CollectiveEvidence {
        records: records.len() as u64,
        summaries: analyze::collectives::summarize(records, width_s),
        simulated: true,
        ..CollectiveEvidence::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::inspector::Symptom;

    fn pod() -> Cluster {
        Cluster::builtin("pod-32").unwrap().unwrap()
    }

    /// Four hosts, one per rail-0 leaf, 16 MiB a step, 100 ms of compute between steps:
    /// about 9 s of records, buckets of about a step.
    fn settings() -> StepSettings {
        StepSettings {
            steps: 90,
            step_ms: 100.0,
            bytes: 16 << 20,
            seed: 7,
        }
    }

    const NODES: [&str; 4] = ["node001", "node009", "node017", "node025"];

    fn simulate(inject: &[&str]) -> (JobRun, Vec<CollectiveRecord>) {
        let pod = pod();
        let texts: Vec<String> = inject.iter().map(|s| s.to_string()).collect();
        let faults = ClusterFaults::parse(&texts, &pod).unwrap();
        let nodes: Vec<usize> = NODES.iter().map(|n| pod.host_index(n).unwrap()).collect();
        let mut records = Vec::new();
        let run = run(
            &pod,
            &faults,
            &nodes,
            &settings(),
            &mut |_, r| records.push(r.clone()),
            &|_, _| {},
        )
        .unwrap();
        (run, records)
    }

    fn symptom(records: &[CollectiveRecord]) -> Symptom {
        analyze::collectives::symptom(&evidence(records))
    }

    fn onset_s(run: &JobRun, symptom: &Symptom) -> f64 {
        symptom.since.expect("a slowdown") - run.start_unix_s
    }

    #[test]
    fn a_healthy_job_writes_every_record_and_is_not_slow() {
        let (run, records) = simulate(&[]);
        assert_eq!(run.steps, 90);
        // 4 dgx-a100 hosts x 8 GPUs, a world and a host communicator each.
        assert_eq!(run.processes.len(), 32);
        assert_eq!(run.records, 90 * 32 * 2);
        assert_eq!(records.len() as u64, run.records);
        assert_eq!(run.replays, 1);
        assert!(run.packets > 0);
        // Every rank of one world collective has the same sequence number.
        let world: Vec<_> = records
            .iter()
            .filter(|r| r.n_nodes == 4 && r.seq == 5)
            .collect();
        assert_eq!(world.len(), 32);
        let s = symptom(&records);
        assert!(!s.slow, "{s:#?}");
        assert!(s.stragglers.is_empty(), "{s:#?}");
        // A 4-rail host's ring runs near its RNICs' line rate, 4 x 25 GB/s: the replay rings
        // over hosts (2 (4 - 1) / 4 of the buffer a rail) where NCCL's busbw scales by its
        // 32 ranks (2 (32 - 1) / 32), so a little above it.
        let busbw = s.busbw_gbs.before.unwrap();
        assert!((80.0..140.0).contains(&busbw), "busbw {busbw}");
    }

    #[test]
    fn a_straggler_starts_late_and_the_others_wait_from_its_start() {
        let (run, records) = simulate(&["node009:straggler:gpu3:40ms@4s"]);
        let at = |r: &CollectiveRecord| (r.at_us / 1e6) - run.start_unix_s;
        // node009's gpu3 is world rank 8 + 3.
        let late: Vec<_> = records
            .iter()
            .filter(|r| r.n_nodes == 4 && r.rank == 11)
            .collect();
        let other: Vec<_> = records
            .iter()
            .filter(|r| r.n_nodes == 4 && r.rank == 0)
            .collect();
        for (l, o) in late.iter().zip(&other) {
            assert_eq!(l.seq, o.seq);
            if at(o) > 4.2 {
                assert!(l.exec_us < 5_000.0, "its own time stays short: {l:?}");
                assert!(o.exec_us > 40_000.0, "the others wait: {o:?}");
                assert!(l.at_us - o.at_us > 39_000.0, "it starts late");
            } else if at(o) < 3.9 {
                assert!(o.exec_us < 5_000.0, "{o:?}");
            }
        }
        let s = symptom(&records);
        assert!(s.slow);
        let straggler = s
            .stragglers
            .iter()
            .find(|st| st.rank == 11)
            .expect("rank 11");
        assert_eq!(straggler.host, "node009");
        assert_eq!(straggler.gpu.as_deref(), Some("gpu3"));
        assert!(
            (35_000.0..45_000.0).contains(&straggler.late_us),
            "{straggler:?}"
        );
        let onset = onset_s(&run, &s);
        assert!(
            (3.0..=5.5).contains(&onset),
            "onset {onset} s, fault at 4 s"
        );
    }

    /// The symptom of a job whose fault started 4 s in: slow, no rank late, its onset near 4 s.
    fn slowed_from_4s(run: &JobRun, records: &[CollectiveRecord]) -> Symptom {
        let s = symptom(records);
        assert!(s.slow, "{s:#?}");
        assert!(s.stragglers.is_empty(), "no rank arrives late: {s:#?}");
        let onset = onset_s(run, &s);
        assert!(
            (3.0..=5.5).contains(&onset),
            "onset {onset} s, fault at 4 s"
        );
        s
    }

    #[test]
    fn a_cable_degraded_mid_run_slows_every_rank_from_its_start() {
        let (run, records) = simulate(&["fabric:degrade:node017/rnic0:0.3@4s"]);
        assert_eq!(run.replays, 2, "healthy, then degraded");
        let s = slowed_from_4s(&run, &records);
        let (before, during) = (s.busbw_gbs.before.unwrap(), s.busbw_gbs.during.unwrap());
        // One rail at 30 % of its rate holds the whole ring back to about that share.
        assert!(during < 0.6 * before, "busbw {before} -> {during}");
        // The hosts' own communicators cross no cable: never slow.
        for c in s.communicators.iter().filter(|c| c.nnodes == 1) {
            assert!(!c.slow, "{c:?}");
        }
    }

    #[test]
    fn a_hosts_degraded_gpu_link_mid_run_slows_its_jobs_collectives_from_its_start() {
        // node009's gpu0 reaches its rnic0 over its own PCIe link, at 30 % from 4 s.
        let fault = "node009:degrade:gpu0--lsw0:0.3";
        let (run, records) = simulate(&[&format!("{fault}@4s")]);
        let (_, healthy) = simulate(&[]);
        assert_eq!(run.replays, 1, "the fabric's state never changed");
        let s = slowed_from_4s(&run, &records);
        // The world communicator: its level before the fault, and during it.
        let world = |s: &Symptom| {
            s.communicators
                .iter()
                .find(|c| c.nnodes == 4)
                .expect("the world communicator")
                .clone()
        };
        let level = |c: &model::inspector::CommunicatorSymptom, from: f64, to: f64| {
            let points: Vec<f64> = c
                .series
                .iter()
                .filter(|(t, _)| (from..to).contains(&(t - run.start_unix_s)))
                .map(|(_, bw)| *bw)
                .collect();
            points.iter().sum::<f64>() / points.len() as f64
        };
        let w = world(&s);
        assert!(w.slow, "{w:#?}");
        let since = w.since.expect("an onset") - run.start_unix_s;
        assert!(
            (3.0..=5.5).contains(&since),
            "onset {since} s, fault at 4 s"
        );
        let (before, during) = (level(&w, 0.0, 4.0), level(&w, 5.0, 100.0));
        // The ring runs at that path's rate: the virtual host's Gen4 x16 link at 30 %
        // carries about 80 Gb/s of the RNIC's 200, so busbw falls to about 0.4 of its level,
        // the ratio the slowdown gives (a little above it: each rank's time also holds the
        // few tens of us of launch skew, which the slowdown does not scale).
        let ratio = during / before;
        assert!((0.33..0.45).contains(&ratio), "busbw {before} -> {during}");
        let pod = pod();
        let faults = ClusterFaults::parse(&[fault.to_string()], &pod).unwrap();
        let nodes: Vec<usize> = NODES.iter().map(|n| pod.host_index(n).unwrap()).collect();
        let across = host_paths::slowdown(&pod, &nodes, &faults.hosts).across;
        assert!((1.0..1.1).contains(&(ratio * across)), "{ratio} x {across}");
        // Before the fault, the records are the healthy job's, step by step.
        let at = |r: &CollectiveRecord| r.at_us / 1e6 - run.start_unix_s;
        let early = |rs: &[CollectiveRecord]| -> Vec<CollectiveRecord> {
            rs.iter().filter(|r| at(r) < 3.9).cloned().collect()
        };
        assert!(!early(&records).is_empty());
        assert_eq!(early(&records), early(&healthy));
        // node009's own ring waits for gpu0's link (about 1 / 0.3 as long); the other
        // hosts' are untouched.
        for c in s.communicators.iter().filter(|c| c.nnodes == 1) {
            assert_eq!(c.slow, c.hosts == ["node009"], "{c:#?}");
        }
        // The healthy job: not slow, its world communicator at the faulted one's level.
        let h = symptom(&healthy);
        assert!(!h.slow && h.stragglers.is_empty(), "{h:#?}");
        let healthy_level = level(&world(&h), 0.0, 100.0);
        assert!(
            (healthy_level - before).abs() < 0.02 * before,
            "{healthy_level} vs {before}"
        );
    }

    #[test]
    fn the_records_read_back_labelled_simulated_and_a_seed_repeats_them() {
        let (_, records) = simulate(&["fabric:background:0.5@3s"]);
        let (_, again) = simulate(&["fabric:background:0.5@3s"]);
        assert_eq!(records, again);
        let text: String = records[..64]
            .iter()
            .map(model::inspector::simulated_record_json)
            .collect();
        assert_eq!(
            text.matches("\"git_rev\": \"hostping-simulated\"").count(),
            64
        );
        let parsed = model::inspector::parse(text.as_bytes());
        assert_eq!(parsed.skipped, Default::default());
        assert_eq!(parsed.records, records[..64]);
    }

    #[test]
    fn a_job_over_the_record_cap_is_refused_before_it_runs() {
        let pod = pod();
        let nodes: Vec<usize> = (0..32).collect();
        let settings = StepSettings {
            steps: MAX_STEPS,
            ..settings()
        };
        let err = run(
            &pod,
            &ClusterFaults::default(),
            &nodes,
            &settings,
            &mut |_, _| panic!("no record"),
            &|_, _| {},
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("above the cap of 1000000"),
            "{err}"
        );
    }
}
