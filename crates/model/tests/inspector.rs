//! NCCL Inspector records (`model::inspector`) read from the fixtures in
//! `testdata/inspector/` (see SOURCES.md there) and from generated streams.

use model::inspector::{
    parse, parse_json, parse_textfile, record_json, simulated_record_json, CollectiveRecord,
    Parsed, Skipped,
};
use proptest::prelude::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/inspector/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn clean(parsed: &Parsed) -> bool {
    parsed.skipped == Skipped::default() && parsed.incomplete_tail == 0
}

#[test]
fn readme_example() {
    let parsed = parse(&fixture("readme-example.json"));
    assert!(clean(&parsed), "{parsed:?}");
    assert_eq!(
        parsed.records,
        [CollectiveRecord {
            communicator: "0x7f8c496ae9f661".into(),
            rank: 2,
            n_ranks: 8,
            n_nodes: 1,
            hostname: "example-hostname".into(),
            pid: Some(1639453),
            gpu: None,
            collective: "AllReduce".into(),
            seq: 1407,
            bytes: 17179869184,
            exec_us: 61974.0,
            algobw_gbs: 277.210914,
            busbw_gbs: 485.119099,
            kernel_start_us: None,
            at_us: 1748030377748202.0 - 61974.0,
            job: None,
        }]
    );
}

#[test]
fn readme_verbose() {
    let parsed = parse(&fixture("readme-verbose.json"));
    assert!(clean(&parsed), "{parsed:?}");
    let [record] = &parsed.records[..] else {
        panic!("{parsed:?}")
    };
    assert_eq!(record.communicator, "0xe62dedaa97644a");
    assert_eq!((record.rank, record.n_ranks, record.n_nodes), (4, 8, 1));
    assert_eq!(record.pid, Some(438776));
    assert_eq!(record.collective, "ReduceScatter");
    assert_eq!((record.seq, record.bytes), (1231, 2147483648));
    assert_eq!(record.exec_us, 41057.0);
    assert_eq!(
        (record.algobw_gbs, record.busbw_gbs),
        (418.439467, 366.134533)
    );
    // The kernel's start, not the collective's (1752867229235059) nor the dump time.
    assert_eq!(record.kernel_start_us, Some(1752867229235181.0));
    assert_eq!(record.at_us, 1752867229235181.0);
}

#[test]
fn a_later_plugins_textfile_is_a_version_not_read() {
    // `version="v5.1"`: no comm_id, rank or coll_sn to compare ranks by; a point-to-point
    // operation beside the collective. Each is one unknown record, none malformed.
    let parsed = parse(&fixture("later-textfile.prom"));
    assert!(parsed.records.is_empty(), "{parsed:?}");
    assert_eq!(parsed.skipped.unknown_records, 2, "{parsed:?}");
    assert_eq!(parsed.skipped.bad_records, 0, "{parsed:?}");
    // A v4 collective beside them is still read.
    let mut both = fixture("later-textfile.prom");
    both.extend(fixture("readme-textfile.prom"));
    let parsed = parse(&both);
    assert_eq!(parsed.records.len(), 1, "{parsed:?}");
    assert_eq!(parsed.skipped.unknown_records, 2);
}

#[test]
fn readme_textfile() {
    let parsed = parse(&fixture("readme-textfile.prom"));
    assert!(clean(&parsed), "{parsed:?}");
    assert_eq!(
        parsed.records,
        [CollectiveRecord {
            communicator: "0xd152c00f111816".into(),
            rank: 4,
            n_ranks: 8,
            n_nodes: 1,
            hostname: "pool0-0002".into(),
            pid: None,
            gpu: Some(4),
            collective: "AllReduce".into(),
            seq: 228924,
            // 2.00GB in the plugin's binary units.
            bytes: 2 << 30,
            exec_us: 16213.0,
            algobw_gbs: 132.456,
            busbw_gbs: 231.798,
            kernel_start_us: None,
            // 2025-10-17T03:31:47Z
            at_us: 1760671907.0e6,
            job: None,
        }]
    );
}

/// The labels of the README's textfile, as Prometheus returns them (with the `instance`
/// and `job` of its scrape added), make the record the textfile reader makes of its lines.
#[test]
fn labels_make_the_textfile_readers_record() {
    let from_file = parse(&fixture("readme-textfile.prom")).records;
    let labels = [
        ("__name__", "nccl_bus_bandwidth_gbs"),
        ("comm_id", "0xd152c00f111816"),
        ("collective", "AllReduce"),
        ("hostname", "pool0-0002"),
        ("rank", "4"),
        ("slurm_job", "unknown"),
        ("slurm_job_id", "unknown"),
        ("n_ranks", "8"),
        ("n_nodes", "1"),
        ("coll_sn", "228924"),
        ("timestamp", "2025-10-17T03:31:47Z"),
        ("gpu_device_id", "GPU4"),
        ("message_size", "2.00GB"),
        ("instance", "127.0.0.1:9100"),
        ("job", "node"),
    ];
    let values = [132.456, 231.798, 16213.0];
    assert_eq!(
        model::inspector::record_from_labels(labels, values, None),
        from_file.first().cloned()
    );
    assert_eq!(
        model::inspector::TEXTFILE_METRICS[1],
        "nccl_bus_bandwidth_gbs"
    );
    // Without its timestamp label the sample's own time stands in; without a size, none.
    let untimed = labels.iter().copied().filter(|(k, _)| *k != "timestamp");
    let record = model::inspector::record_from_labels(untimed, values, Some(1_760_671_910_500));
    assert_eq!(record.map(|r| r.at_us), Some(1_760_671_910_500_000.0));
    let sizeless = labels.iter().copied().filter(|(k, _)| *k != "message_size");
    assert_eq!(
        model::inspector::record_from_labels(sizeless, values, None),
        None
    );
}

#[test]
fn mixed_stream() {
    let bytes = fixture("mixed.json");
    let parsed = parse(&bytes);
    assert_eq!(
        parsed.skipped,
        Skipped {
            unknown_records: 3,
            bad_records: 1
        }
    );
    assert_eq!(parsed.incomplete_tail, 211);
    let summary: Vec<_> = parsed
        .records
        .iter()
        .map(|r| {
            (
                r.communicator.as_str(),
                r.rank,
                r.collective.as_str(),
                r.seq,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("0x5a0000000001", 0, "AllReduce", 7),
            ("0x5a0000000001", 1, "AllReduce", 7),
            ("0x5a0000000002", 1, "AllGather", 3),
        ]
    );
    let compact = &parsed.records[1];
    assert_eq!(compact.hostname, "node0002");
    assert_eq!(compact.exec_us, 180.5);
    assert_eq!(compact.at_us, 1795000000500000.0 - 180.5);
    let traced = &parsed.records[2];
    // The earlier of the two channels' kernel starts.
    assert_eq!(traced.kernel_start_us, Some(1795000000700100.0));
    assert_eq!(traced.at_us, 1795000000700100.0);
    assert_eq!(parsed.records[0].at_us, 1795000000500000.0 - 180.0);

    // The tail, completed as the writer would, reads as one more record.
    let tail_start = bytes.len() - parsed.incomplete_tail;
    let mut rest = bytes[tail_start..].to_vec();
    rest.extend_from_slice(
        b"_interface\",\n    \"dump_timestamp_us\": 1795000000900000,\n    \"hostname\": \"node002\",\n    \"pid\": 4102\n  },\n  \"coll_perf\": {\n    \"coll\": \"AllGather\",\n    \"coll_sn\": 4,\n    \"coll_msg_size_bytes\": 8388608,\n    \"coll_exec_time_us\": 1000,\n    \"coll_algobw_gbs\": 8.4,\n    \"coll_busbw_gbs\": 4.2\n  }\n}\n",
    );
    let more = parse(&rest);
    assert!(clean(&more), "{more:?}");
    let [record] = &more.records[..] else {
        panic!("{more:?}")
    };
    assert_eq!((record.seq, record.hostname.as_str()), (4, "node002"));
    assert_eq!(record.at_us, 1795000000900000.0 - 1000.0);
}

#[test]
fn textfile_variants() {
    let labels = |sn: u32| {
        format!(
            "comm_id=\"0xab\",collective=\"AllGather\",hostname=\"h\\\"1\",rank=\"3\",\
             slurm_job=\"train\",slurm_job_id=\"4242\",nranks=\"16\",n_nodes=\"2\",\
             gpu_device_id=\"GPU7\",coll_sn=\"{sn}\",message_size=\"512.00MB\",pid=\"77\""
        )
    };
    let text = format!(
        "# TYPE nccl_bus_bandwidth_gbs gauge\n\
         nccl_algorithm_bandwidth_gbs{{{a}}} 1.5e+01 1760671907250\n\
         node_cpu_seconds_total{{cpu=\"0\"}} 12\n\
         nccl_bus_bandwidth_gbs{{{a}}} 28.125 1760671907250\n\
         nccl_collective_exec_time_microseconds{{{a}}} 1.23457e+06 1760671907250\n\
         nccl_bus_bandwidth_gbs{{{b}}} 3 1760671908000\n\
         nccl_algorithm_bandwidth_gbs{{{b}}} 3 1760671908000\n\
         nccl_bus_bandwidth_gbs{{comm_id=\"0xab\"}} 3\n\
         nccl_bus_bandwidth_gbs{{{a}}} 28.1 1760671907250",
        a = labels(1),
        b = labels(2),
    );
    let parsed = parse_textfile(&text);
    // The second collective lacks its execution time; one line lacks the labels a record
    // needs; the other metric is not counted at all.
    assert_eq!(
        parsed.skipped,
        Skipped {
            unknown_records: 0,
            bad_records: 2
        }
    );
    // The last line, with no newline after it, is read: a textfile is rewritten whole,
    // never tailed; its sample is the later of two for the same collective, and wins.
    assert_eq!(parsed.incomplete_tail, 0);
    let [record] = &parsed.records[..] else {
        panic!("{parsed:?}")
    };
    assert_eq!(record.hostname, "h\"1");
    assert_eq!((record.rank, record.n_ranks, record.n_nodes), (3, 16, 2));
    assert_eq!((record.gpu, record.pid), (Some(7), Some(77)));
    assert_eq!(record.job.as_deref(), Some("4242"));
    assert_eq!(record.bytes, 512 << 20);
    assert_eq!(
        (record.algobw_gbs, record.busbw_gbs, record.exec_us),
        (15.0, 28.1, 1234570.0)
    );
    // No timestamp label: the sample's own (ms).
    assert_eq!(record.at_us, 1760671907250.0e3);
}

#[test]
fn not_utf8_textfile_is_all_bad() {
    let parsed = parse(b"nccl_bus_bandwidth_gbs{comm_id=\"\xff\"} 1\n\n# x\n");
    assert_eq!(parsed.skipped.bad_records, 2);
    assert!(parsed.records.is_empty());
}

#[test]
fn json_objects_on_one_line_after_a_mistyped_one() {
    let good = String::from_utf8(fixture("readme-example.json")).unwrap();
    let good = good.replace('\n', "");
    let mistyped = good.replace("\"rank\": 2", "\"rank\": \"2\"");
    let text = format!("{good}{mistyped} {good}[1]{good}");
    let parsed = parse_json(text.as_bytes());
    assert_eq!(parsed.records.len(), 3);
    assert_eq!(parsed.skipped.bad_records, 2);
    assert_eq!(parsed.incomplete_tail, 0);
}

/// A generated record and its pretty-printed v4.0 object.
fn arb_record() -> impl Strategy<Value = (CollectiveRecord, String)> {
    (
        (
            any::<u64>(),
            1u32..1024,
            any::<u32>(),
            1u32..64,
            "[a-z][a-z0-9-]{0,12}",
        ),
        (
            proptest::option::of(1u64..4_000_000),
            prop::sample::select(vec!["AllReduce", "AllGather", "ReduceScatter", "Broadcast"]),
            0u64..1_000_000_000_000,
            0u64..(1 << 40),
        ),
        (1u64..40_000_000, 0u64..1 << 20, 0u64..1 << 20),
        (
            1_700_000_000_000_000u64..1_900_000_000_000_000,
            proptest::option::of(proptest::collection::vec(0u64..1_000_000, 0..4)),
        ),
    )
        .prop_map(
            |(
                (id, n_ranks, rank, n_nodes, hostname),
                (pid, collective, seq, bytes),
                (exec_quarters, algo_k, bus_k),
                (dump, trace),
            )| {
                let rank = rank % n_ranks;
                // Quarters and 1024ths print and read back exactly.
                let exec_us = exec_quarters as f64 / 4.0;
                let algobw_gbs = algo_k as f64 / 1024.0;
                let busbw_gbs = bus_k as f64 / 1024.0;
                let coll_start = dump - 5_000_000;
                let kernel_start_us = trace
                    .as_ref()
                    .and_then(|starts| starts.iter().min())
                    .map(|&k| (coll_start + k) as f64);
                let at_us = match &trace {
                    Some(_) => kernel_start_us.unwrap_or(coll_start as f64),
                    None => dump as f64 - exec_us,
                };
                let mut perf = serde_json::json!({
                    "coll": collective,
                    "coll_sn": seq,
                    "coll_msg_size_bytes": bytes,
                    "coll_exec_time_us": exec_us,
                    "coll_timing_source": "kernel_gpu",
                    "coll_algobw_gbs": algobw_gbs,
                    "coll_busbw_gbs": busbw_gbs,
                });
                if let Some(starts) = &trace {
                    let events: Vec<_> = starts
                        .iter()
                        .enumerate()
                        .map(|(c, k)| {
                            serde_json::json!({"channel_id": c, "kernel_start_ts": coll_start + k,
                                               "kernel_stop_ts": coll_start + k + 9,
                                               "kernel_record_ts": coll_start + k + 9})
                        })
                        .collect();
                    perf["event_trace_ts"] = serde_json::json!({
                        "coll_start_ts": coll_start, "coll_stop_ts": coll_start + 4,
                        "kernel_events": events});
                }
                let mut metadata = serde_json::json!({
                    "inspector_output_format_version": "v4.0",
                    "git_rev": "",
                    "rec_mechanism": "profiler_plugin",
                    "dump_timestamp_us": dump,
                    "hostname": hostname,
                });
                if let Some(pid) = pid {
                    metadata["pid"] = pid.into();
                }
                let communicator = format!("{id:#x}");
                let object = serde_json::json!({
                    "header": {"id": communicator, "rank": rank, "n_ranks": n_ranks,
                               "nnodes": n_nodes},
                    "metadata": metadata,
                    "coll_perf": perf,
                });
                let record = CollectiveRecord {
                    communicator,
                    rank,
                    n_ranks,
                    n_nodes,
                    hostname,
                    pid,
                    gpu: None,
                    collective: collective.into(),
                    seq,
                    bytes,
                    exec_us,
                    algobw_gbs,
                    busbw_gbs,
                    kernel_start_us,
                    at_us,
                    job: None,
                };
                (record, serde_json::to_string_pretty(&object).unwrap())
            },
        )
}

/// Generated records and their stream, objects separated by random whitespace.
fn arb_stream() -> impl Strategy<Value = (Vec<CollectiveRecord>, Vec<u8>)> {
    proptest::collection::vec((arb_record(), "[ \t\r\n]{0,4}"), 0..6).prop_map(|items| {
        let mut records = Vec::new();
        let mut text = String::new();
        for ((record, object), gap) in items {
            records.push(record);
            text.push_str(&object);
            text.push_str(&gap);
        }
        (records, text.into_bytes())
    })
}

proptest! {
    /// What the writer writes, the reader reads back: every field, the times to the
    /// microsecond (the plugin writes whole microseconds).
    #[test]
    fn written_records_read_back(records in proptest::collection::vec(arb_record(), 0..6)) {
        let records: Vec<CollectiveRecord> = records.into_iter().map(|(r, _)| r).collect();
        let text: String = records.iter().map(record_json).collect();
        let parsed = parse_json(text.as_bytes());
        prop_assert_eq!(&parsed.skipped, &Skipped::default());
        prop_assert_eq!(parsed.records.len(), records.len());
        for (read, written) in parsed.records.iter().zip(&records) {
            let close = |a: f64, b: f64| (a - b).abs() <= 0.5;
            prop_assert!(close(read.at_us, written.at_us), "{} {}", read.at_us, written.at_us);
            match (read.kernel_start_us, written.kernel_start_us) {
                (Some(r), Some(w)) => prop_assert!(close(r, w), "{} {}", r, w),
                (r, w) => prop_assert_eq!(r, w),
            }
            let same = CollectiveRecord {
                at_us: written.at_us,
                kernel_start_us: written.kernel_start_us,
                ..read.clone()
            };
            prop_assert_eq!(&same, written);
        }
        // A simulated job's records differ only in their metadata's label, and read the same.
        let simulated: String = records.iter().map(simulated_record_json).collect();
        prop_assert_eq!(
            simulated.matches("\"git_rev\": \"hostping-simulated\"").count(),
            records.len()
        );
        let read = parse_json(simulated.as_bytes());
        prop_assert_eq!(read.simulated_records, records.len() as u64);
        prop_assert_eq!(parsed.simulated_records, 0, "the plugin's own are measured");
        prop_assert_eq!(&read.records, &parsed.records);
        prop_assert_eq!(&read.skipped, &parsed.skipped);
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let parsed = parse(&bytes);
        prop_assert!(parsed.incomplete_tail <= bytes.len());
        parse_json(&bytes);
        parse_textfile(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_json_like_text_never_panics(text in "[{}\\[\\]\":,0-9a-z \n]{0,300}") {
        let parsed = parse_json(text.as_bytes());
        prop_assert!(parsed.incomplete_tail <= text.len());
    }

    #[test]
    fn generated_records_read_back((records, bytes) in arb_stream()) {
        let parsed = parse_json(&bytes);
        prop_assert_eq!(&parsed.skipped, &Skipped::default());
        prop_assert_eq!(parsed.incomplete_tail, 0);
        prop_assert_eq!(parsed.records, records);
    }

    #[test]
    fn a_stream_cut_anywhere_reads_on((records, bytes) in arb_stream(), cut in any::<prop::sample::Index>()) {
        let cut = cut.index(bytes.len() + 1);
        let before = parse_json(&bytes[..cut]);
        prop_assert_eq!(&before.skipped, &Skipped::default());
        let after = parse_json(&bytes[cut - before.incomplete_tail..]);
        prop_assert!(clean(&after), "{:?}", after);
        let mut joined = before.records;
        joined.extend(after.records);
        prop_assert_eq!(joined, records);
    }
}

#[test]
fn fixtures_cut_anywhere_read_on() {
    let mut bytes = fixture("readme-example.json");
    bytes.extend(fixture("readme-verbose.json"));
    let whole = parse_json(&bytes);
    assert_eq!(whole.records.len(), 2);
    for cut in 0..=bytes.len() {
        let before = parse_json(&bytes[..cut]);
        let after = parse_json(&bytes[cut - before.incomplete_tail..]);
        assert_eq!(
            before.skipped,
            Skipped::default(),
            "cut at {cut}: {:?}",
            String::from_utf8_lossy(&bytes[cut.saturating_sub(30)..cut])
        );
        assert!(clean(&after), "cut at {cut}: {after:?}");
        let mut joined = before.records;
        joined.extend(after.records);
        assert_eq!(joined, whole.records, "cut at {cut}");
    }
}
