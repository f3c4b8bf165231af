//! The agent's cost of following a busy 8-GPU host's NCCL Inspector dumps (DESIGN 4.8's
//! live reader, `agent::nccl`): 8 processes' files, each with 4 communicators at 20
//! collectives a second (640 records/s in all, pretty-printed `v4.0` objects, the plugin's
//! layout), appended in 1 s chunks while the watcher polls as the agent does while a job
//! writes (`report::POLL_BUSY`, every second), for a simulated `cargo bench -p agent --bench
//! nccl_tail -- [SECONDS]` (120 by default). The records are
//! written ahead of the simulated clock, not in real time; the watcher's own CPU time (this
//! thread's, around each poll only) is set against the seconds of records it read. Prints the
//! records read and summarised beside the cost, so that a faster run is seen to do the same
//! work, and the peak resident memory (VmHWM).

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use agent::nccl::report::POLL_BUSY;
use agent::nccl::{NcclSettings, NcclWatcher};

const PROCESSES: u32 = 8;
const COMMUNICATORS: u32 = 4;
const PER_SECOND: u64 = 20;
const START_S: u64 = 1_795_000_000;

fn main() {
    // `cargo bench` passes `--bench`; positional arguments are ours.
    let seconds: u64 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map_or(120, |s| s.parse().expect("simulated seconds"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let folder = dir.path().join("nccl-inspector-9001");
    std::fs::create_dir(&folder).expect("the job's dump folder");
    let files: Vec<PathBuf> = (0..PROCESSES)
        .map(|p| folder.join(format!("node001-{}.log", 4000 + p)))
        .collect();
    let mut watcher = NcclWatcher::new(dir.path(), NcclSettings::default());
    let (mut bytes, mut cpu_s, mut polls) = (0u64, 0.0, 0u32);
    let (mut records, mut summarised, mut summaries) = (0u64, 0u64, 0usize);
    let mut poll = |at_s: u64, watcher: &mut NcclWatcher| {
        let before = thread_cpu_s();
        let out = watcher.poll(UNIX_EPOCH + Duration::from_secs(START_S + at_s));
        cpu_s += thread_cpu_s() - before;
        polls += 1;
        for job in out.jobs {
            assert_eq!(job.job.as_deref(), Some("9001"));
            assert_eq!((job.skipped.bad_records, job.dropped), (0, 0));
            records += job.records;
            summarised += job.summaries.iter().map(|s| s.count).sum::<u64>();
            summaries += job.summaries.len();
        }
        assert!(out.problems.is_empty(), "{:?}", out.problems);
    };
    for second in 0..seconds {
        for (rank, file) in (0..PROCESSES).zip(&files) {
            let chunk = one_second(rank, second);
            bytes += chunk.len() as u64;
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .and_then(|mut f| f.write_all(chunk.as_bytes()))
                .expect("appending to a dump file");
        }
        if (second + 1).is_multiple_of(POLL_BUSY.as_secs()) {
            poll(second + 1, &mut watcher);
        }
    }
    // Past the max age: the last buckets close, nothing stays open.
    poll(seconds + 1000, &mut watcher);
    let expected = u64::from(PROCESSES * COMMUNICATORS) * PER_SECOND * seconds;
    assert_eq!((records, summarised), (expected, expected));
    assert_eq!(watcher.open_records(), 0);
    println!(
        "{seconds} s of a busy 8-GPU host: {records} records ({:.0}/s), {bytes} bytes, {polls} \
         polls, {summaries} summaries; watcher CPU {:.3} s = {:.3} % of one core; peak RSS \
         (VmHWM) {}",
        records as f64 / seconds as f64,
        cpu_s,
        cpu_s / seconds as f64 * 100.0,
        vm_hwm(),
    );
}

/// One second of one process's records: each communicator's 20 collectives, dumped at the
/// second's end as the plugin's dump thread would.
fn one_second(rank: u32, second: u64) -> String {
    let mut text = String::new();
    for i in 0..PER_SECOND {
        for comm in 0..u64::from(COMMUNICATORS) {
            let sn = second * PER_SECOND + i;
            let exec_us = 20_000 + (u64::from(rank) * 37 + sn * 11 + comm) % 5_000;
            let bytes = 1u64 << (20 + comm * 3);
            let algobw = bytes as f64 / exec_us as f64 / 1e3;
            let at_us = (START_S + second) * 1_000_000 + i * 1_000_000 / PER_SECOND;
            write!(
                text,
                "{{\n  \"header\": {{\n    \"id\": \"0x5a00000000{comm:02x}\",\n    \
                 \"rank\": {rank},\n    \"n_ranks\": {PROCESSES},\n    \"nnodes\": 1\n  }},\n  \
                 \"metadata\": {{\n    \"inspector_output_format_version\": \"v4.0\",\n    \
                 \"git_rev\": \"\",\n    \"rec_mechanism\": \"profiler_plugin\",\n    \
                 \"dump_timestamp_us\": {dump},\n    \"hostname\": \"node001\",\n    \
                 \"pid\": {pid}\n  }},\n  \"coll_perf\": {{\n    \"coll\": \"AllReduce\",\n    \
                 \"coll_sn\": {sn},\n    \"coll_msg_size_bytes\": {bytes},\n    \
                 \"coll_exec_time_us\": {exec_us},\n    \"coll_timing_source\": \"kernel_gpu\",\n    \
                 \"coll_algobw_gbs\": {algobw:.6},\n    \"coll_busbw_gbs\": {busbw:.6}\n  }}\n}}\n",
                dump = at_us + exec_us,
                pid = 4000 + rank,
                busbw = algobw * 2.0 * 7.0 / 8.0,
            )
            .expect("writing to a String");
        }
    }
    text
}

/// This thread's CPU time, seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// The process's peak resident memory, as `/proc/self/status` says it.
fn vm_hwm() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown".to_string())
}
