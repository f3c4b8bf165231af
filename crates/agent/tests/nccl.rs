//! `agent::nccl`: the live reader of NCCL Inspector dump directories (DESIGN 4.8), on
//! directories written as the plugin writes them.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent::nccl::{JobCollectives, NcclPoll, NcclSettings, NcclWatcher};

/// Unix seconds of the records' first bucket (a multiple of 10).
const BASE_S: u64 = 1_795_000_000;

/// One pretty-printed `v4.0` record as the plugin writes it, of collective `sn` run at
/// `BASE_S + at_s`.
fn record(comm: u32, rank: u32, sn: u64, at_s: f64) -> String {
    let exec_us = 1000;
    let dump_us = ((BASE_S as f64 + at_s) * 1e6).round() as u64 + exec_us;
    format!(
        "{{\n  \"header\": {{\n    \"id\": \"0x5a{comm:04x}\",\n    \"rank\": {rank},\n    \
         \"n_ranks\": 8,\n    \"nnodes\": 1\n  }},\n  \"metadata\": {{\n    \
         \"inspector_output_format_version\": \"v4.0\",\n    \"git_rev\": \"\",\n    \
         \"rec_mechanism\": \"profiler_plugin\",\n    \"dump_timestamp_us\": {dump_us},\n    \
         \"hostname\": \"node001\",\n    \"pid\": {pid}\n  }},\n  \"coll_perf\": {{\n    \
         \"coll\": \"AllReduce\",\n    \"coll_sn\": {sn},\n    \"coll_msg_size_bytes\": 1048576,\n    \
         \"coll_exec_time_us\": {exec_us},\n    \"coll_algobw_gbs\": 1.048576,\n    \
         \"coll_busbw_gbs\": 1.835008\n  }}\n}}\n",
        pid = 4000 + rank,
    )
}

/// Records `0..n`, one every `every_s` seconds from `BASE_S`.
fn records(n: u64, every_s: f64) -> String {
    (0..n)
        .map(|sn| record(1, 0, sn, sn as f64 * every_s))
        .collect()
}

fn at(s: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs_f64(BASE_S as f64 + s)
}

/// The defaults, with 10 s buckets (the tests' records are one a second) and every poll
/// rescanning.
fn settings() -> NcclSettings {
    NcclSettings {
        bucket_s: 10.0,
        rescan_every: 1,
        ..NcclSettings::default()
    }
}

fn append(path: &Path, bytes: &[u8]) {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn job<'a>(poll: &'a NcclPoll, job: Option<&str>) -> Option<&'a JobCollectives> {
    poll.jobs.iter().find(|j| j.job.as_deref() == job)
}

fn total(polls: &[NcclPoll], f: impl Fn(&JobCollectives) -> u64) -> u64 {
    polls.iter().flat_map(|p| &p.jobs).map(f).sum()
}

#[test]
fn a_file_written_in_pieces_gives_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node001-4000.log");
    let text = records(40, 0.5);
    let mut watcher = NcclWatcher::new(dir.path(), settings());
    let mut polls = Vec::new();
    // Pieces cut mid-object, mid-string and mid-number.
    let cuts = [
        0,
        1,
        97,
        580,
        1999,
        2000,
        7001,
        text.len() / 2,
        text.len() - 3,
        text.len(),
    ];
    for (i, pair) in cuts.windows(2).enumerate() {
        append(&file, &text.as_bytes()[pair[0]..pair[1]]);
        polls.push(watcher.poll(at(i as f64)));
    }
    // Long after the last record: every bucket closes by age.
    polls.push(watcher.poll(at(1000.0)));
    assert_eq!(total(&polls, |j| j.records), 40);
    assert_eq!(
        total(&polls, |j| j.skipped.bad_records
            + j.skipped.unknown_records),
        0
    );
    assert_eq!(total(&polls, |j| j.dropped), 0);
    let summaries: Vec<_> = polls
        .iter()
        .flat_map(|p| &p.jobs)
        .flat_map(|j| &j.summaries)
        .collect();
    assert_eq!(summaries.iter().map(|s| s.count).sum::<u64>(), 40);
    assert_eq!(summaries.len(), 2, "20 s of records in two 10 s buckets");
    assert_eq!((summaries[0].first_seq, summaries[0].last_seq), (0, 19));
    assert_eq!((summaries[1].first_seq, summaries[1].last_seq), (20, 39));
    assert_eq!(watcher.open_records(), 0);
    assert_eq!(watcher.kept_bytes(), 0);
}

#[test]
fn a_dump_folder_names_the_job() {
    let dir = tempfile::tempdir().unwrap();
    for (folder, sn) in [
        ("nccl-inspector-4242", 0),
        ("nccl-inspector-unknown-jobid", 1),
        ("other", 2),
    ] {
        fs::create_dir(dir.path().join(folder)).unwrap();
        append(
            &dir.path().join(folder).join("a.log"),
            record(1, 0, sn, 0.0).as_bytes(),
        );
    }
    append(&dir.path().join("top.log"), record(1, 0, 3, 0.0).as_bytes());
    let poll = NcclWatcher::new(dir.path(), settings()).poll(at(1.0));
    assert_eq!(job(&poll, Some("4242")).unwrap().records, 1);
    // The unknown-jobid folder and the file directly in DIR (whose records name no job);
    // a folder of another name is not a dump folder.
    assert_eq!(job(&poll, None).unwrap().records, 2);
    assert_eq!(poll.jobs.len(), 2);
    assert!(poll.problems.is_empty());
}

#[test]
fn a_rewritten_shorter_file_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.log");
    append(&file, records(5, 1.0).as_bytes());
    let mut watcher = NcclWatcher::new(dir.path(), settings());
    assert_eq!(job(&watcher.poll(at(5.0)), None).unwrap().records, 5);
    fs::write(&file, record(1, 0, 9, 6.0)).unwrap();
    assert_eq!(job(&watcher.poll(at(6.0)), None).unwrap().records, 1);
    assert!(watcher.poll(at(7.0)).jobs.iter().all(|j| j.records == 0));
}

#[test]
fn a_deleted_file_is_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.log");
    append(&file, records(2, 1.0).as_bytes());
    let mut watcher = NcclWatcher::new(dir.path(), settings());
    watcher.poll(at(2.0));
    assert_eq!(watcher.files().count(), 1);
    fs::remove_file(&file).unwrap();
    let poll = watcher.poll(at(3.0));
    assert!(poll.problems.is_empty());
    assert_eq!(watcher.files().count(), 0);
}

#[test]
fn garbage_without_newlines_is_bounded_and_bad() {
    let dir = tempfile::tempdir().unwrap();
    let mut garbage = b"{\"header\": \"".to_vec();
    garbage.resize(3 << 20, b'a');
    append(&dir.path().join("garbage.log"), &garbage);
    let settings = NcclSettings {
        chunk_bytes: 1 << 20,
        tail_cap: 64 << 10,
        ..settings()
    };
    let mut watcher = NcclWatcher::new(dir.path(), settings);
    let mut bad = 0;
    for i in 0..4 {
        let poll = watcher.poll(at(i as f64));
        bad += poll.jobs.iter().map(|j| j.skipped.bad_records).sum::<u64>();
        assert!(watcher.kept_bytes() <= 64 << 10, "{}", watcher.kept_bytes());
    }
    assert!(bad >= 1);
    assert_eq!(watcher.open_records(), 0);
}

#[test]
fn an_unreadable_file_is_reported_and_the_others_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked.log");
    append(&locked, records(3, 1.0).as_bytes());
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    append(&dir.path().join("open.log"), records(4, 1.0).as_bytes());
    let mut watcher = NcclWatcher::new(dir.path(), settings());
    let poll = watcher.poll(at(4.0));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // root reads whatever the mode says: nothing is denied to check.
        return;
    }
    assert_eq!(job(&poll, None).unwrap().records, 4);
    assert_eq!(poll.problems.len(), 1);
    assert_eq!(poll.problems[0].path, locked);
    assert_eq!(poll.problems[0].failures, 1);
    assert_eq!(watcher.poll(at(5.0)).problems[0].failures, 2);
    // Readable again: read on the next poll.
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o644)).unwrap();
    let poll = watcher.poll(at(6.0));
    assert!(poll.problems.is_empty());
    assert_eq!(job(&poll, None).unwrap().records, 3);
}

#[test]
fn buckets_close_once_and_are_released() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nccl-inspector-7").join("a.log");
    fs::create_dir(file.parent().unwrap()).unwrap();
    // 25 s of records, one a second: buckets [0, 10), [10, 20), [20, 30).
    append(&file, records(25, 1.0).as_bytes());
    let mut watcher = NcclWatcher::new(dir.path(), settings());
    let first = watcher.poll(at(25.0));
    let job7 = job(&first, Some("7")).unwrap();
    assert_eq!(job7.records, 25);
    // The file's newest record (24 s) is past the first two buckets' ends by a second or
    // more, not past the third's.
    let starts: Vec<f64> = job7.summaries.iter().map(|s| s.start_s).collect();
    assert_eq!(starts, [BASE_S as f64, BASE_S as f64 + 10.0]);
    assert!(job7.summaries.iter().all(|s| s.count == 10));
    assert_eq!(watcher.open_records(), 5);
    // Nothing new: nothing emitted again.
    assert!(watcher.poll(at(26.0)).jobs.is_empty());
    // A record for the closed bucket arrives late: dropped, not a second summary.
    append(&file, record(1, 0, 100, 5.0).as_bytes());
    let late = watcher.poll(at(27.0));
    assert_eq!(job(&late, Some("7")).unwrap().dropped, 1);
    assert!(job(&late, Some("7")).unwrap().summaries.is_empty());
    // Past the max age every bucket closes, and nothing of them stays.
    let last = watcher.poll(at(25.0 + NcclSettings::default().max_age_s + 10.0));
    let counts: Vec<u64> = job(&last, Some("7"))
        .unwrap()
        .summaries
        .iter()
        .map(|s| s.count)
        .collect();
    assert_eq!(counts, [5]);
    assert_eq!(watcher.open_records(), 0);
    assert!(watcher.poll(at(1000.0)).jobs.is_empty());
}

/// Two ranks' files of one job, appended with the records of seconds `a` and `b`: one
/// record a second each, rank 0 in `a.log`, rank 1 in `b.log`.
fn two_ranks(dir: &Path, a: std::ops::Range<u64>, b: std::ops::Range<u64>) {
    let folder = dir.join("nccl-inspector-9");
    fs::create_dir_all(&folder).unwrap();
    for (file, rank, seconds) in [("a.log", 0, a), ("b.log", 1, b)] {
        let text: String = seconds.map(|sn| record(1, rank, sn, sn as f64)).collect();
        append(&folder.join(file), text.as_bytes());
    }
}

fn closed_starts(poll: &NcclPoll) -> Vec<(u32, f64)> {
    job(poll, Some("9")).map_or(Vec::new(), |j| {
        j.summaries
            .iter()
            .map(|s| (s.rank, s.start_s - BASE_S as f64))
            .collect()
    })
}

#[test]
fn a_bucket_waits_for_the_file_a_dump_behind() {
    // Each process dumps on its own clock: rank 1's file is 8 s behind rank 0's.
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path(), 0..25, 0..17);
    let mut watcher = NcclWatcher::new(dir.path(), settings());
    // Rank 1's newest (16 s) has passed [0, 10) only: [10, 20) waits for it.
    assert_eq!(closed_starts(&watcher.poll(at(25.0))), [(0, 0.0), (1, 0.0)]);
    // Its next dump brings [10, 20) whole to both ranks, nothing dropped.
    two_ranks(dir.path(), 25..25, 17..25);
    let poll = watcher.poll(at(26.0));
    assert_eq!(closed_starts(&poll), [(0, 10.0), (1, 10.0)]);
    assert_eq!(job(&poll, Some("9")).unwrap().dropped, 0);
    let counts: Vec<u64> = job(&poll, Some("9"))
        .unwrap()
        .summaries
        .iter()
        .map(|s| s.count)
        .collect();
    assert_eq!(counts, [10, 10]);
}

#[test]
fn a_file_that_stopped_writing_holds_no_bucket() {
    // Rank 1's process ended at 5 s; rank 0 writes on for a minute.
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path(), 0..60, 0..5);
    let poll = NcclWatcher::new(dir.path(), settings()).poll(at(60.0));
    // More than 30 s behind, rank 1's file is not waited for: rank 0's buckets up to the
    // one its newest record (59 s) has not passed by a second are sent.
    let rank0: Vec<f64> = closed_starts(&poll)
        .into_iter()
        .filter(|&(rank, _)| rank == 0)
        .map(|(_, start)| start)
        .collect();
    assert_eq!(rank0, [0.0, 10.0, 20.0, 30.0, 40.0]);
}

#[test]
fn open_records_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    append(&dir.path().join("a.log"), records(30, 0.1).as_bytes());
    let mut watcher = NcclWatcher::new(
        dir.path(),
        NcclSettings {
            max_open_records: 10,
            ..settings()
        },
    );
    let poll = watcher.poll(at(3.0));
    let all = job(&poll, None).unwrap();
    assert_eq!((all.records, all.dropped), (30, 20));
    assert_eq!(watcher.open_records(), 10);
}

#[test]
fn a_textfile_rewritten_whole_counts_each_collective_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.prom");
    // The plugin's README example, as this job's collective `sn`.
    let sample = |sn: u64| {
        include_str!("../../model/testdata/inspector/readme-textfile.prom")
            .replace("coll_sn=\"228924\"", &format!("coll_sn=\"{sn}\""))
            .replace("slurm_job_id=\"unknown\"", "slurm_job_id=\"55\"")
    };
    fs::write(&file, sample(1)).unwrap();
    let mut watcher = NcclWatcher::new(dir.path(), settings());
    let first = watcher.poll(at(1.0));
    let records = |p: &NcclPoll| job(p, Some("55")).map_or(0, |j| j.records);
    assert_eq!(records(&first), 1, "{first:?}");
    // Rewritten with the same sample, then with a later one.
    fs::write(&file, sample(1)).unwrap();
    assert_eq!(records(&watcher.poll(at(2.0))), 0);
    fs::write(&file, sample(2)).unwrap();
    assert_eq!(records(&watcher.poll(at(3.0))), 1);
}
