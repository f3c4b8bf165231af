//! What a replay writes, where and when, decided before anything is written and without I/O
//! or a clock (the caller passes "now"): which files are this node's, each record moved in
//! time and onto its node, and the order of the writes.
//!
//! Only the times and the hostname change: the shift is whole microseconds, so a record
//! written again with [`model::inspector::simulated_record_json`] reads back as the
//! simulated one moved by exactly the shift, every other field the same.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use model::inspector::{CollectiveRecord, Parsed};

use crate::cli::nccl::HostMap;

/// The longest a replay runs after its start, seconds: a day. Every wait of a replay ends
/// by then.
pub const MAX_LIVE_S: f64 = 86_400.0;

/// One file of the simulated dump, read.
#[derive(Debug)]
pub struct Input {
    /// Where it was read (named by every error about it).
    pub path: PathBuf,
    /// Its file name in the folder.
    pub name: String,
    /// Its records.
    pub parsed: Parsed,
}

/// One record to append, once its time has come.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// When to write it, Unix us: its collective's end (the plugin dumps a record once the
    /// collective ended: `dump_timestamp_us`), and never before its file's previous record.
    pub due_us: f64,
    /// Its file, an index into [`Plan::files`].
    pub file: usize,
    /// The record as written: moved in time and onto its node.
    pub record: CollectiveRecord,
}

/// A replay, planned.
#[derive(Debug)]
pub struct Plan {
    /// The names of the files to write (in the dump folder), one per process replayed.
    pub files: Vec<String>,
    /// Every record to write, in the order to write them.
    pub writes: Vec<Write>,
    /// How far every time moved, us (whole).
    pub shift_us: f64,
    /// The simulated hosts whose processes are not replayed (no --host maps them).
    pub left_out: BTreeSet<String>,
}

/// Why a replay cannot be planned. Each names the input or the flag at fault.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A file the reader could not take whole.
    #[error(
        "{path}: {bad} malformed, {unknown} unknown and {cut} cut record(s): not a finished \
         simulated dump (`hostping job --sim-cluster ... --nccl-out DIR` writes one)"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Objects that are no record (broken JSON, a field of the wrong type).
        bad: u64,
        /// Records of another kind or format version.
        unknown: u64,
        /// 1 when the file ends inside an object.
        cut: u64,
    },
    /// A file with no record.
    #[error("{path}: no record")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A file with records a simulation did not write: replayed, they would pass for a
    /// measurement, or be labelled simulated when they were not.
    #[error(
        "{path}: {measured} of its {records} records are not labelled simulated (git_rev \
         \"hostping-simulated\"): only a simulated job's records are replayed, so that what \
         is written stays labelled"
    )]
    NotSimulated {
        /// The file.
        path: PathBuf,
        /// Its records without the label.
        measured: u64,
        /// All its records.
        records: u64,
    },
    /// A file of more than one host: a file is one process's.
    #[error("{path}: records of several hosts ({hosts}); a file is one process's")]
    MixedHosts {
        /// The file.
        path: PathBuf,
        /// The hosts its records name.
        hosts: String,
    },
    /// A --host whose simulated host no file names.
    #[error("--host {sim}=...: no record of host {sim} under --from (its hosts: {known})")]
    UnknownHost {
        /// The simulated host asked for.
        sim: String,
        /// Those the files name.
        known: String,
    },
    /// A simulated host given twice.
    #[error("--host {sim}=...: given twice")]
    HostTwice {
        /// The simulated host.
        sim: String,
    },
    /// Two simulated hosts on one node: each GPU would be driven by two processes.
    #[error(
        "--host {first}={node} and --host {second}={node}: two simulated hosts on one node \
         would drive each of its GPUs twice; a node plays one host"
    )]
    NodeTwice {
        /// The node.
        node: String,
        /// One simulated host.
        first: String,
        /// The other.
        second: String,
    },
    /// A replay that would run longer than [`MAX_LIVE_S`] after its start.
    #[error(
        "the records span {live_s:.0} s after the replay's start: more than a replay runs ({max_s:.0} s)"
    )]
    TooLong {
        /// Seconds from the replay's start to its last write.
        live_s: f64,
        /// [`MAX_LIVE_S`].
        max_s: f64,
    },
}

/// Plans the replay of `inputs` (every file of the simulated dump) onto the nodes of
/// `hosts`, as if the job had started at `started_us`, the replay starting at `now_us` (both
/// Unix us): what is due by `now_us` is history, written at once.
pub fn plan(
    inputs: Vec<Input>,
    hosts: &[HostMap],
    now_us: f64,
    started_us: f64,
) -> Result<Plan, PlanError> {
    let node_of = node_of(hosts)?;
    let mut known = BTreeSet::new();
    // (output name, node, records) of each replayed file
    let mut replayed: Vec<(String, &str, Vec<CollectiveRecord>)> = Vec::new();
    // The job's first record over every simulated host, replayed here or not: nodes that
    // replay the same job each play their hosts, and one collective must start at the same
    // moment on all of them.
    let first_us = inputs
        .iter()
        .flat_map(|input| &input.parsed.records)
        .map(|r| r.at_us)
        .fold(f64::INFINITY, f64::min);
    for input in inputs {
        let host = process_host(&input)?;
        known.insert(host.clone());
        let Some(&node) = node_of.get(host.as_str()) else {
            continue;
        };
        replayed.push((
            renamed(&input.name, &host, node),
            node,
            input.parsed.records,
        ));
    }
    for sim in node_of.keys() {
        if !known.contains(*sim) {
            return Err(PlanError::UnknownHost {
                sim: sim.to_string(),
                known: known.iter().cloned().collect::<Vec<_>>().join(", "),
            });
        }
    }
    let shift_us = (started_us - first_us).round();

    let mut files = Vec::with_capacity(replayed.len());
    let mut writes = Vec::new();
    for (file, (name, node, records)) in replayed.into_iter().enumerate() {
        files.push(name);
        let mut previous = f64::NEG_INFINITY;
        for record in records {
            let record = moved(&record, shift_us, node);
            let due_us = dump_us(&record).max(previous);
            previous = due_us;
            writes.push(Write {
                due_us,
                file,
                record,
            });
        }
    }
    // Stable: records due at once keep their files' order, and a file's own records are due
    // in its order already.
    writes.sort_by(|a, b| a.due_us.total_cmp(&b.due_us));
    let live_s = writes.last().map_or(0.0, |w| (w.due_us - now_us) / 1e6);
    if live_s > MAX_LIVE_S {
        return Err(PlanError::TooLong {
            live_s,
            max_s: MAX_LIVE_S,
        });
    }
    let replayed_hosts: BTreeSet<&str> = node_of.keys().copied().collect();
    Ok(Plan {
        files,
        writes,
        shift_us,
        left_out: known
            .into_iter()
            .filter(|h| !replayed_hosts.contains(h.as_str()))
            .collect(),
    })
}

/// `record` moved by `shift_us` and onto `node`: its times and hostname, nothing else.
pub fn moved(record: &CollectiveRecord, shift_us: f64, node: &str) -> CollectiveRecord {
    CollectiveRecord {
        hostname: node.to_string(),
        at_us: record.at_us + shift_us,
        kernel_start_us: record.kernel_start_us.map(|t| t + shift_us),
        ..record.clone()
    }
}

/// When the plugin dumps `record`: once its collective ended, to the microsecond (the
/// `dump_timestamp_us` the writer gives it).
fn dump_us(record: &CollectiveRecord) -> f64 {
    (record.at_us + record.exec_us).round()
}

/// Each simulated host's node, the map checked one-to-one.
fn node_of(hosts: &[HostMap]) -> Result<BTreeMap<&str, &str>, PlanError> {
    let mut node_of: BTreeMap<&str, &str> = BTreeMap::new();
    let mut host_on: BTreeMap<&str, &str> = BTreeMap::new();
    for HostMap { sim, node } in hosts {
        if node_of.insert(sim, node).is_some() {
            return Err(PlanError::HostTwice { sim: sim.clone() });
        }
        if let Some(first) = host_on.insert(node, sim) {
            return Err(PlanError::NodeTwice {
                node: node.clone(),
                first: first.to_string(),
                second: sim.clone(),
            });
        }
    }
    Ok(node_of)
}

/// The one host of `input`'s process, once the file is checked whole and simulated.
fn process_host(input: &Input) -> Result<String, PlanError> {
    let Parsed {
        records,
        skipped,
        incomplete_tail,
        simulated_records,
    } = &input.parsed;
    let path = input.path.clone();
    if skipped.bad_records > 0 || skipped.unknown_records > 0 || *incomplete_tail > 0 {
        return Err(PlanError::Malformed {
            path,
            bad: skipped.bad_records,
            unknown: skipped.unknown_records,
            cut: u64::from(*incomplete_tail > 0),
        });
    }
    if records.is_empty() {
        return Err(PlanError::Empty { path });
    }
    let total = records.len() as u64;
    if *simulated_records != total {
        return Err(PlanError::NotSimulated {
            path,
            measured: total - simulated_records,
            records: total,
        });
    }
    let hosts: BTreeSet<&str> = records.iter().map(|r| r.hostname.as_str()).collect();
    match hosts.into_iter().collect::<Vec<_>>().as_slice() {
        [host] => Ok(host.to_string()),
        several => Err(PlanError::MixedHosts {
            path,
            hosts: several.join(", "),
        }),
    }
}

/// A process's file on `node`: `<node>-<pid>.log` for the simulation's `<sim>-<pid>.log`
/// (`simcluster::collectives::Process::file_name`), else `<node>-<name>`.
fn renamed(name: &str, sim: &str, node: &str) -> String {
    let rest = name
        .strip_prefix(sim)
        .and_then(|r| r.strip_prefix('-'))
        .unwrap_or(name);
    format!("{node}-{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::inspector::{parse_json, record_json, simulated_record_json};
    use proptest::prelude::*;

    /// A record of `host`'s process `pid`, rank `rank`, collective `seq`, its kernel at
    /// `at_us`, as `simcluster::collectives` writes them.
    fn record(
        host: &str,
        pid: u64,
        rank: u32,
        seq: u64,
        at_us: f64,
        exec_us: f64,
    ) -> CollectiveRecord {
        CollectiveRecord {
            communicator: "0x5e0000000001".into(),
            rank,
            n_ranks: 16,
            n_nodes: 2,
            hostname: host.into(),
            pid: Some(pid),
            gpu: None,
            collective: "AllReduce".into(),
            seq,
            bytes: 64 << 20,
            exec_us,
            algobw_gbs: 12.5,
            busbw_gbs: 23.438,
            kernel_start_us: Some(at_us),
            at_us,
            job: None,
        }
    }

    /// The file `records` make, written and read back as the replayer reads it.
    fn input(name: &str, text: String) -> Input {
        Input {
            path: PathBuf::from("/sim").join(name),
            name: name.into(),
            parsed: parse_json(text.as_bytes()),
        }
    }

    fn simulated(name: &str, records: &[CollectiveRecord]) -> Input {
        input(name, records.iter().map(simulated_record_json).collect())
    }

    fn map(sim: &str, node: &str) -> HostMap {
        HostMap {
            sim: sim.into(),
            node: node.into(),
        }
    }

    const START: f64 = 1_795_000_000_000_000.0;
    const NOW: f64 = 1_800_000_000_000_000.0;

    /// Two hosts of two processes, ten collectives 100 ms apart, 2 ms each.
    fn job() -> Vec<Input> {
        let mut inputs = Vec::new();
        for (h, host) in ["node001", "node002"].into_iter().enumerate() {
            for p in 0..2u32 {
                let rank = h as u32 * 2 + p;
                let pid = 10_000 + u64::from(rank);
                let records: Vec<_> = (0..10)
                    .map(|s| {
                        record(
                            host,
                            pid,
                            rank,
                            s,
                            START + s as f64 * 100e3 + f64::from(p),
                            2e3,
                        )
                    })
                    .collect();
                inputs.push(simulated(&format!("{host}-{pid}.log"), &records));
            }
        }
        inputs
    }

    #[test]
    fn a_node_plays_its_hosts_processes_dated_from_now_less_the_history() {
        let plan = plan(job(), &[map("node002", "gpu-a17")], NOW, NOW - 0.35e6).unwrap();
        assert_eq!(plan.files, ["gpu-a17-10002.log", "gpu-a17-10003.log"]);
        assert_eq!(plan.left_out, BTreeSet::from(["node001".to_string()]));
        assert_eq!(plan.shift_us, NOW - 350e3 - START);
        assert_eq!(plan.writes.len(), 20);
        let first = &plan.writes[0];
        assert_eq!((first.file, first.record.seq), (0, 0));
        assert_eq!(
            first.record.at_us,
            NOW - 350e3,
            "the job began --history ago"
        );
        assert_eq!(first.record.hostname, "gpu-a17");
        assert_eq!(first.due_us, NOW - 350e3 + 2e3, "written once it ended");
        // Collectives 0-3 ended before now (the history, written at once); 4-9 are to come.
        let past = plan.writes.iter().filter(|w| w.due_us <= NOW).count();
        assert_eq!(past, 4 * 2);
        // In time order; at a tie, file 0's record first.
        let order: Vec<(u64, usize)> = plan.writes.iter().map(|w| (w.record.seq, w.file)).collect();
        assert_eq!(&order[..4], &[(0, 0), (0, 1), (1, 0), (1, 1)]);
    }

    #[test]
    fn a_malformed_or_measured_file_is_refused_naming_it() {
        let good = record("node002", 10_002, 2, 0, START, 2e3);
        let cases = [
            (
                input(
                    "node002-1.log",
                    "{\"header\": {".to_string() + "}\n{ broken\n",
                ),
                "malformed",
            ),
            (
                input("node002-2.log", record_json(&good)),
                "not labelled simulated",
            ),
            (input("node002-3.log", String::new()), "no record"),
            (
                simulated(
                    "node002-4.log",
                    &[good.clone(), record("node009", 1, 1, 0, START, 1.0)],
                ),
                "several hosts (node002, node009)",
            ),
        ];
        for (bad, why) in cases {
            let name = bad.path.display().to_string();
            let e = plan(vec![bad], &[map("node002", "n")], NOW, NOW)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&name) && e.contains(why), "{name}: {e}");
        }
    }

    #[test]
    fn a_host_map_that_is_not_one_to_one_or_names_no_host_is_refused() {
        let e = |hosts: &[HostMap]| plan(job(), hosts, NOW, NOW).unwrap_err().to_string();
        assert_eq!(
            e(&[map("node001", "n"), map("node002", "n")]),
            "--host node001=n and --host node002=n: two simulated hosts on one node would \
             drive each of its GPUs twice; a node plays one host"
        );
        assert_eq!(
            e(&[map("node001", "a"), map("node001", "b")]),
            "--host node001=...: given twice"
        );
        assert_eq!(
            e(&[map("node005", "n")]),
            "--host node005=...: no record of host node005 under --from (its hosts: node001, node002)"
        );
    }

    #[test]
    fn a_replay_longer_than_a_day_is_refused() {
        let records = [
            record("node002", 1, 0, 0, START, 1.0),
            record("node002", 1, 0, 1, START + 2.0 * MAX_LIVE_S * 1e6, 1.0),
        ];
        let e = plan(
            vec![simulated("x.log", &records)],
            &[map("node002", "n")],
            NOW,
            NOW,
        );
        assert!(matches!(e, Err(PlanError::TooLong { .. })), "{e:?}");
    }

    #[test]
    fn a_file_not_named_after_its_host_keeps_its_name_behind_the_node() {
        assert_eq!(
            renamed("node002-10011.log", "node002", "a17"),
            "a17-10011.log"
        );
        assert_eq!(renamed("rank11.log", "node002", "a17"), "a17-rank11.log");
    }

    proptest! {
        /// Written and read back, a moved record is the simulated one with its times moved
        /// and its hostname the node's: every other field unchanged.
        #[test]
        fn only_the_times_and_the_hostname_change(
            rank in 0u32..64, seq in 0u64..1_000_000, pid in 1u64..1_000_000,
            at_s in 0u64..1_000_000, exec_us in 1u64..10_000_000,
            busbw in 0u32..400_000, shift_s in -1_000_000i64..1_000_000,
        ) {
            let mut original = record("node002", pid, rank, seq, START + at_s as f64 * 1e6, exec_us as f64);
            original.busbw_gbs = f64::from(busbw) / 1e3;
            let shift = shift_s as f64 * 1e6 + 17.0;
            let read = parse_json(simulated_record_json(&moved(&original, shift, "a17")).as_bytes());
            prop_assert_eq!(read.simulated_records, 1);
            let back = &read.records[0];
            prop_assert_eq!(back.at_us, original.at_us + shift);
            prop_assert_eq!(back.kernel_start_us, original.kernel_start_us.map(|t| t + shift));
            prop_assert_eq!(&back.hostname, "a17");
            let unchanged = CollectiveRecord {
                hostname: original.hostname.clone(),
                at_us: original.at_us,
                kernel_start_us: original.kernel_start_us,
                ..back.clone()
            };
            prop_assert_eq!(unchanged, original);
        }

        /// Each file's records are written in its order, none before its collective ended,
        /// and the writes are in time order.
        #[test]
        fn each_files_order_is_kept_and_nothing_is_written_early(
            files in prop::collection::vec(prop::collection::vec((0u64..5_000_000, 1u64..200_000), 1..20), 1..5),
            history_s in 0.0f64..10.0,
        ) {
            let inputs: Vec<Input> = files.iter().enumerate().map(|(f, records)| {
                let records: Vec<_> = records.iter().enumerate()
                    .map(|(i, &(at, exec))| record("node002", f as u64, f as u32, i as u64, START + at as f64, exec as f64))
                    .collect();
                simulated(&format!("node002-{f}.log"), &records)
            }).collect();
            let plan = plan(inputs, &[map("node002", "a17")], NOW, NOW - history_s * 1e6).unwrap();
            prop_assert_eq!(plan.writes.len(), files.iter().map(Vec::len).sum::<usize>());
            prop_assert!(plan.writes.windows(2).all(|w| w[0].due_us <= w[1].due_us));
            for (f, records) in files.iter().enumerate() {
                let seqs: Vec<u64> = plan.writes.iter().filter(|w| w.file == f).map(|w| w.record.seq).collect();
                prop_assert_eq!(seqs, (0..records.len() as u64).collect::<Vec<_>>());
            }
            prop_assert!(plan.writes.iter().all(|w| w.due_us >= dump_us(&w.record)));
        }
    }
}
