//! The cost of reading NCCL Inspector JSON: one minute of a 128-rank job, 4 communicators per
//! rank, every collective recorded (about 70 MB of pretty-printed `v4.0` objects, the
//! plugin's layout), parsed as one text. `cargo bench -p model --bench inspector -- [PER_COMM]`
//! (collectives per communicator, 240 by default: 4 a second). Prints the records read
//! beside the cost, so that a faster run is seen to do the same work.

use std::fmt::Write as _;
use std::time::Instant;

use model::inspector::parse;

const RANKS: u32 = 128;
const COMMUNICATORS: u64 = 4;

fn main() {
    // `cargo bench` passes `--bench`; positional arguments are ours.
    let per_comm: u64 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map_or(240, |s| s.parse().expect("collectives per communicator"));
    let text = synthesise(per_comm);
    let started = Instant::now();
    let parsed = parse(text.as_bytes());
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(
        parsed.records.len() as u64,
        u64::from(RANKS) * COMMUNICATORS * per_comm
    );
    println!(
        "{} bytes, {} records ({:?}, tail {}): {wall:.3} s, {:.0} MB/s",
        text.len(),
        parsed.records.len(),
        parsed.skipped,
        parsed.incomplete_tail,
        text.len() as f64 / wall / 1e6,
    );
}

/// The job's records in time order, as if every rank's file were read one after another.
fn synthesise(per_comm: u64) -> String {
    let start_us = 1_795_000_000_000_000u64;
    let mut text = String::new();
    for rank in 0..RANKS {
        let host = rank / 8;
        for sn in 0..per_comm {
            for comm in 0..COMMUNICATORS {
                let exec_us = 20_000 + (rank as u64 * 37 + sn * 11 + comm) % 5_000;
                let bytes = 1u64 << (20 + comm * 3);
                let algobw = bytes as f64 / exec_us as f64 / 1e3;
                write!(
                    text,
                    "{{\n  \"header\": {{\n    \"id\": \"0x5a00000000{comm:02x}\",\n    \
                     \"rank\": {rank},\n    \"n_ranks\": {RANKS},\n    \"nnodes\": 16\n  }},\n  \
                     \"metadata\": {{\n    \"inspector_output_format_version\": \"v4.0\",\n    \
                     \"git_rev\": \"\",\n    \"rec_mechanism\": \"profiler_plugin\",\n    \
                     \"dump_timestamp_us\": {dump},\n    \"hostname\": \"node{host:03}\",\n    \
                     \"pid\": {pid}\n  }},\n  \"coll_perf\": {{\n    \"coll\": \"AllReduce\",\n    \
                     \"coll_sn\": {sn},\n    \"coll_msg_size_bytes\": {bytes},\n    \
                     \"coll_exec_time_us\": {exec_us},\n    \"coll_timing_source\": \"kernel_gpu\",\n    \
                     \"coll_algobw_gbs\": {algobw:.6},\n    \"coll_busbw_gbs\": {busbw:.6}\n  }}\n}}\n",
                    dump = start_us + sn * 250_000 + exec_us,
                    pid = 4000 + rank,
                    busbw = algobw * 2.0 * 127.0 / 128.0,
                )
                .expect("writing to a String");
            }
        }
    }
    text
}
