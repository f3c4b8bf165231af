//! Records as the plugin writes them (`v4.0`, pretty-printed with two spaces, one object
//! after another: `shared/reference/nccl-inspector.md`), for what writes a job's collectives
//! without NCCL: a simulated job, or a replayer feeding an agent's dump folder (issue 39
//! items 5 and 6). The reader ([`super::parse_json`]) reads back what this writes: the
//! record's fields, its times to the microsecond.

use serde::Serialize;

use super::CollectiveRecord;

/// The format version written.
pub const VERSION: &str = "v4.0";

#[derive(Serialize)]
struct Object<'a> {
    header: Header<'a>,
    metadata: Metadata<'a>,
    coll_perf: CollPerf<'a>,
}

#[derive(Serialize)]
struct Header<'a> {
    id: &'a str,
    rank: u32,
    n_ranks: u32,
    nnodes: u32,
}

#[derive(Serialize)]
struct Metadata<'a> {
    inspector_output_format_version: &'static str,
    git_rev: &'static str,
    rec_mechanism: &'static str,
    dump_timestamp_us: u64,
    hostname: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<u64>,
}

#[derive(Serialize)]
struct CollPerf<'a> {
    coll: &'a str,
    coll_sn: u64,
    coll_msg_size_bytes: u64,
    coll_exec_time_us: f64,
    coll_algobw_gbs: f64,
    coll_busbw_gbs: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_trace_ts: Option<EventTrace>,
}

/// The verbose mode's trace, reduced to what the reader uses: the kernel's start.
#[derive(Serialize)]
struct EventTrace {
    coll_start_ts: u64,
    kernel_events: [KernelEvent; 1],
}

#[derive(Serialize)]
struct KernelEvent {
    kernel_start_ts: u64,
}

/// A timestamp as the plugin writes them: whole microseconds since the epoch (an integer
/// also reads back exactly, where a float of 16 digits may not).
fn whole_us(us: f64) -> u64 {
    us.max(0.0).round() as u64
}

/// `record` as one pretty-printed `v4.0` object and its newline. The plugin dumps a record
/// once the collective ended: `dump_timestamp_us` is `at_us + exec_us`, to the microsecond.
/// A record with `kernel_start_us` is written in the verbose mode (its trace holds that
/// start). `gpu` and `job` are not fields of the JSON mode and are not written.
pub fn record_json(record: &CollectiveRecord) -> String {
    write_as(record, "", "profiler_plugin")
}

/// What a simulated job's records carry in `metadata.git_rev`: the format has no field that
/// says "not measured", and these numbers must never pass for NCCL's (issue 39 item 5).
pub const SIMULATED_GIT_REV: &str = "hostping-simulated";
/// ... and in `metadata.rec_mechanism` (the plugin writes `profiler_plugin` or
/// `nccl_profiler_interface`; readers, hostping's included, do not depend on it).
pub const SIMULATED_MECHANISM: &str = "hostping_simulator";

/// [`record_json`] for a record that a simulation computed, labelled so in its metadata
/// ([`SIMULATED_GIT_REV`], [`SIMULATED_MECHANISM`]); read back the same.
pub fn simulated_record_json(record: &CollectiveRecord) -> String {
    write_as(record, SIMULATED_GIT_REV, SIMULATED_MECHANISM)
}

fn write_as(record: &CollectiveRecord, git_rev: &'static str, mechanism: &'static str) -> String {
    let object = Object {
        header: Header {
            id: &record.communicator,
            rank: record.rank,
            n_ranks: record.n_ranks,
            nnodes: record.n_nodes,
        },
        metadata: Metadata {
            inspector_output_format_version: VERSION,
            git_rev,
            rec_mechanism: mechanism,
            dump_timestamp_us: whole_us(record.at_us + record.exec_us),
            hostname: &record.hostname,
            pid: record.pid,
        },
        coll_perf: CollPerf {
            coll: &record.collective,
            coll_sn: record.seq,
            coll_msg_size_bytes: record.bytes,
            coll_exec_time_us: record.exec_us,
            coll_algobw_gbs: record.algobw_gbs,
            coll_busbw_gbs: record.busbw_gbs,
            event_trace_ts: record.kernel_start_us.map(|start| EventTrace {
                coll_start_ts: whole_us(start),
                kernel_events: [KernelEvent {
                    kernel_start_ts: whole_us(start),
                }],
            }),
        },
    };
    // Plain strings and finite numbers always serialise (a NaN would be written `null`,
    // which the reader counts as a bad record rather than misread).
    let mut text = serde_json::to_string_pretty(&object).unwrap_or_default();
    text.push('\n');
    text
}
