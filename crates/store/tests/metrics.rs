//! The Prometheus exposition, read back through a parser of the OpenMetrics text format.

mod common;

use model::{
    Cause, GpuActivity, HostSnapshot, LinkStatus, LinkUtilisation, PathStatus, RnicActivity,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use store::{
    FabricSweep, Metrics, SwitchInfo, SwitchPortCounters, SwitchPortSample, TriggerOutcome,
    UplinkInfo, CONTENT_TYPE,
};

type Labels = BTreeMap<String, String>;

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: Labels,
    value: f64,
}

/// Parses an OpenMetrics text exposition: `# TYPE`/`# HELP` lines, samples, `# EOF` last.
/// Panics on anything malformed (an unescaped quote or newline in a label breaks a line).
fn parse(text: &str) -> (Vec<Sample>, BTreeMap<String, String>) {
    assert!(text.ends_with("# EOF\n"), "no EOF marker:\n{text}");
    let mut samples = Vec::new();
    let mut types = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        assert!(!line.starts_with('#'), "unknown comment {line:?}");
        samples.push(parse_sample(line));
    }
    (samples, types)
}

fn parse_sample(line: &str) -> Sample {
    let name_end = line
        .find(['{', ' '])
        .unwrap_or_else(|| panic!("no value in {line:?}"));
    let name = &line[..name_end];
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
        "bad metric name {name:?}"
    );
    let mut rest = &line[name_end..];
    let mut labels = Labels::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        loop {
            let (start, c) = chars.next().expect("unterminated label set");
            if c == '}' {
                rest = &body[start + 1..];
                break;
            }
            if c == ',' {
                continue;
            }
            let eq = body[start..].find('=').expect("label without =") + start;
            let key = body[start..eq].to_string();
            while chars.peek().is_some_and(|&(i, _)| i <= eq) {
                chars.next();
            }
            assert_eq!(
                chars.next().map(|x| x.1),
                Some('"'),
                "unquoted value in {line:?}"
            );
            let mut value = String::new();
            loop {
                match chars.next().expect("unterminated label value").1 {
                    '"' => break,
                    '\\' => match chars.next().expect("dangling escape").1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        other => panic!("unknown escape \\{other} in {line:?}"),
                    },
                    c => value.push(c),
                }
            }
            assert!(
                labels.insert(key, value).is_none(),
                "repeated label in {line:?}"
            );
        }
    }
    let value = rest
        .strip_prefix(' ')
        .unwrap_or_else(|| panic!("no value in {line:?}"));
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}")),
    };
    Sample {
        name: name.to_string(),
        labels,
        value,
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The exposition, parsed, with lookups.
struct Exposition {
    samples: Vec<Sample>,
    types: BTreeMap<String, String>,
}

impl Exposition {
    fn of(metrics: &Metrics) -> Exposition {
        let (samples, types) = parse(&metrics.encode());
        Exposition { samples, types }
    }

    /// The value of the series with exactly these labels, if present (and present once).
    fn get(&self, name: &str, pairs: &[(&str, &str)]) -> Option<f64> {
        let want = labels(pairs);
        let found: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.name == name && s.labels == want)
            .map(|s| s.value)
            .collect();
        assert!(
            found.len() <= 1,
            "{name}{want:?} appears {} times",
            found.len()
        );
        found.first().copied()
    }

    fn value(&self, name: &str, pairs: &[(&str, &str)]) -> f64 {
        self.get(name, pairs)
            .unwrap_or_else(|| panic!("no series {name}{pairs:?}"))
    }

    /// Every label set of a series name.
    fn series(&self, name: &str) -> Vec<Labels> {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.labels.clone())
            .collect()
    }
}

#[test]
fn observe_run_exposes_paths_links_and_diagnoses() {
    let mut m = Metrics::new("dgx-a100", "simulated");
    let report = common::unhealthy("dgx-a100");
    m.observe_run_at("pfc", &report, 1_500_000_000, 1_700_000_000_250);
    let e = Exposition::of(&m);

    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        e.value(
            "hostping_agent_info",
            &[
                ("host", "dgx-a100"),
                ("provenance", "simulated"),
                ("version", version)
            ]
        ),
        1.0
    );

    // Paths: values copied, status and failure as 0/1; no bandwidth for the failed probe.
    let gpu0 = [("rnic", "rnic0"), ("endpoint", "gpu0")];
    let gpu1 = [("rnic", "rnic0"), ("endpoint", "gpu1")];
    let mem0 = [("rnic", "rnic1"), ("endpoint", "mem0")];
    assert_eq!(e.value("hostping_path_bandwidth_gbps", &gpu0), 197.5);
    assert_eq!(e.value("hostping_path_bandwidth_gbps", &gpu1), 120.25);
    assert_eq!(e.get("hostping_path_bandwidth_gbps", &mem0), None);
    assert_eq!(e.value("hostping_path_latency_us", &gpu0), 1.9);
    assert_eq!(e.get("hostping_path_latency_us", &mem0), None);
    assert_eq!(e.value("hostping_path_abnormal", &gpu0), 0.0);
    assert_eq!(e.value("hostping_path_abnormal", &gpu1), 1.0);
    assert_eq!(e.value("hostping_path_abnormal", &mem0), 0.0);
    assert_eq!(e.value("hostping_path_failed", &gpu1), 0.0);
    assert_eq!(e.value("hostping_path_failed", &mem0), 1.0);
    assert_eq!(e.series("hostping_path_failed").len(), 3);

    // Links: a state set, exactly one status at 1 per link.
    for l in &report.links {
        let kind = l.kind.as_str();
        for (status, name) in [
            (LinkStatus::Normal, "normal"),
            (LinkStatus::Abnormal, "abnormal"),
            (LinkStatus::Gray, "gray"),
            (LinkStatus::Uncertain, "uncertain"),
        ] {
            let v = e.value(
                "hostping_link_status",
                &[("link", l.id.as_str()), ("kind", kind), ("status", name)],
            );
            assert_eq!(
                v,
                if status == l.status { 1.0 } else { 0.0 },
                "{} {name}",
                l.id
            );
        }
    }
    assert_eq!(
        e.series("hostping_link_status").len(),
        4 * report.links.len()
    );
    assert_eq!(
        e.value("hostping_link_abnormal_count", &[("link", "lsw0--usw0")]),
        1.0
    );
    assert_eq!(
        e.value("hostping_link_abnormal_count", &[("link", "rnic0--lsw0")]),
        0.0
    );

    // Diagnoses: one active series each, the counter by cause.
    let mut active = e.series("hostping_diagnosis_active");
    active.sort();
    let mut expected = vec![
        labels(&[
            ("cause", "link_failure"),
            ("links", "lsw0--usw0,usw0--cpu0"),
            ("rnic", ""),
        ]),
        labels(&[
            ("cause", "rnic_misconfiguration"),
            ("links", ""),
            ("rnic", "rnic0"),
        ]),
        labels(&[
            ("cause", "link_failure"),
            ("links", "gpu1--lsw1"),
            ("rnic", ""),
        ]),
    ];
    expected.sort();
    assert_eq!(active, expected);
    assert!(e
        .samples
        .iter()
        .filter(|s| s.name == "hostping_diagnosis_active")
        .all(|s| s.value == 1.0));
    assert_eq!(
        e.value("hostping_diagnoses_total", &[("cause", "link_failure")]),
        2.0
    );
    assert_eq!(
        e.value(
            "hostping_diagnoses_total",
            &[("cause", "rnic_misconfiguration")]
        ),
        1.0
    );

    // The run itself.
    assert_eq!(e.value("hostping_runs_total", &[("trigger", "pfc")]), 1.0);
    assert_eq!(e.value("hostping_run_duration_seconds_count", &[]), 1.0);
    assert_eq!(e.value("hostping_run_duration_seconds_sum", &[]), 1.5);
    assert_eq!(
        e.value("hostping_run_duration_seconds_bucket", &[("le", "1.28")]),
        0.0
    );
    assert_eq!(
        e.value("hostping_run_duration_seconds_bucket", &[("le", "2.56")]),
        1.0
    );
    assert_eq!(
        e.value("hostping_run_duration_seconds_bucket", &[("le", "+Inf")]),
        1.0
    );
    assert_eq!(e.value("hostping_last_run_healthy", &[]), 0.0);
    assert_eq!(
        e.value("hostping_last_run_timestamp_seconds", &[]),
        1_700_000_000.25
    );

    // Types as Prometheus will read them.
    for (name, kind) in [
        ("hostping_agent", "info"),
        ("hostping_path_bandwidth_gbps", "gauge"),
        ("hostping_link_status", "gauge"),
        ("hostping_diagnoses", "counter"),
        ("hostping_runs", "counter"),
        ("hostping_run_duration_seconds", "histogram"),
        ("hostping_agent_cpu_seconds", "counter"),
        ("hostping_store_errors", "counter"),
    ] {
        assert_eq!(e.types.get(name).map(String::as_str), Some(kind), "{name}");
    }
    assert!(CONTENT_TYPE.starts_with("application/openmetrics-text"));
}

#[test]
fn an_inconclusive_run_sets_the_host_inconclusive_gauge_until_a_judged_one() {
    let mut m = Metrics::new("dgx-a100", "simulated");
    let mut unjudged = common::healthy("dgx-a100", 40);
    unjudged.healthy = false;
    unjudged.inconclusive = true;
    m.observe_run_at("idle", &unjudged, 1, 1_000);
    let e = Exposition::of(&m);
    assert_eq!(e.value("hostping_host_inconclusive", &[]), 1.0);
    assert_eq!(e.value("hostping_last_run_healthy", &[]), 0.0);
    assert_eq!(e.types["hostping_host_inconclusive"], "gauge");
    // The next run judged every link: no longer inconclusive.
    m.observe_run_at("idle", &common::healthy("dgx-a100", 40), 1, 2_000);
    let e = Exposition::of(&m);
    assert_eq!(e.value("hostping_host_inconclusive", &[]), 0.0);
    assert_eq!(e.value("hostping_last_run_healthy", &[]), 1.0);
}

#[test]
fn a_later_run_drops_the_paths_and_diagnoses_it_did_not_report() {
    let mut m = Metrics::new("dgx-a100", "simulated");
    m.observe_run_at("pfc", &common::unhealthy("dgx-a100"), 1, 1_000);

    // A busy run probes one affinitive path and finds nothing.
    let mut busy = common::healthy("dgx-a100", 1);
    busy.mode = model::Mode::Busy;
    busy.paths[0].bandwidth_gbps = Some(150.0);
    m.observe_run_at("idle", &busy, 2, 2_000);
    let e = Exposition::of(&m);

    let only_gpu0 = vec![labels(&[("rnic", "rnic0"), ("endpoint", "gpu0")])];
    for name in [
        "hostping_path_bandwidth_gbps",
        "hostping_path_latency_us",
        "hostping_path_abnormal",
        "hostping_path_failed",
    ] {
        assert_eq!(e.series(name), only_gpu0, "{name}");
    }
    assert_eq!(
        e.value(
            "hostping_path_bandwidth_gbps",
            &[("rnic", "rnic0"), ("endpoint", "gpu0")]
        ),
        150.0
    );
    assert!(e.series("hostping_diagnosis_active").is_empty());
    // Counters keep their history.
    assert_eq!(
        e.value("hostping_diagnoses_total", &[("cause", "link_failure")]),
        2.0
    );
    assert_eq!(e.value("hostping_runs_total", &[("trigger", "pfc")]), 1.0);
    assert_eq!(e.value("hostping_runs_total", &[("trigger", "idle")]), 1.0);
    assert_eq!(e.value("hostping_run_duration_seconds_count", &[]), 2.0);
    assert_eq!(e.value("hostping_last_run_healthy", &[]), 1.0);
    assert_eq!(e.value("hostping_last_run_timestamp_seconds", &[]), 2.0);
    // The link that was abnormal is normal now.
    assert_eq!(
        e.value(
            "hostping_link_status",
            &[
                ("link", "lsw0--usw0"),
                ("kind", "switch_uplink"),
                ("status", "abnormal")
            ]
        ),
        0.0
    );
}

#[test]
fn a_diagnosis_that_persists_keeps_its_series() {
    let mut m = Metrics::new("h", "measured");
    let mut r = common::healthy("h", 1);
    r.healthy = false;
    r.diagnoses = vec![common::diagnosis(
        Cause::LinkFlapping,
        &["mem0--cpu0"],
        None,
    )];
    m.observe_run_at("idle", &r, 1, 1);
    m.observe_run_at("idle", &r, 1, 2);
    let e = Exposition::of(&m);
    assert_eq!(
        e.series("hostping_diagnosis_active"),
        [labels(&[
            ("cause", "link_flapping"),
            ("links", "mem0--cpu0"),
            ("rnic", "")
        ])]
    );
    assert_eq!(
        e.value("hostping_diagnoses_total", &[("cause", "link_flapping")]),
        2.0
    );
}

#[test]
fn snapshots_replace_rnic_and_utilisation_series() {
    let mut m = Metrics::new("h", "measured");
    let rnic = |id: &str, thp: Option<f64>, pause: Option<f64>| RnicActivity {
        id: id.into(),
        throughput_gbps: thp,
        tx_pause_ratio: pause,
        drops: Some(0),
    };
    let util = |id: &str, u: Option<f64>| LinkUtilisation {
        id: id.into(),
        utilisation: u,
    };
    m.observe_snapshot(&HostSnapshot {
        at_ns: 1,
        rnics: vec![
            rnic("rnic0", Some(180.5), Some(0.18)),
            rnic("rnic1", None, Some(0.0)),
        ],
        gpus: vec![GpuActivity {
            id: "gpu0".into(),
            busy: Some(true),
        }],
        links: vec![util("rnic0--lsw0", Some(0.93)), util("lsw0--usw0", None)],
        ..HostSnapshot::default()
    });
    let e = Exposition::of(&m);
    assert_eq!(
        e.value("hostping_rnic_throughput_gbps", &[("rnic", "rnic0")]),
        180.5
    );
    assert_eq!(
        e.get("hostping_rnic_throughput_gbps", &[("rnic", "rnic1")]),
        None
    );
    assert_eq!(
        e.value("hostping_rnic_tx_pause_ratio", &[("rnic", "rnic0")]),
        0.18
    );
    assert_eq!(
        e.value("hostping_rnic_tx_pause_ratio", &[("rnic", "rnic1")]),
        0.0
    );
    assert_eq!(
        e.series("hostping_link_utilisation"),
        [labels(&[("link", "rnic0--lsw0")])]
    );
    assert_eq!(
        e.value("hostping_link_utilisation", &[("link", "rnic0--lsw0")]),
        0.93
    );

    // The next snapshot no longer reads rnic0: its values must not linger.
    m.observe_snapshot(&HostSnapshot {
        at_ns: 2,
        rnics: vec![rnic("rnic0", None, None), rnic("rnic1", Some(3.0), None)],
        gpus: vec![],
        links: vec![],
        ..HostSnapshot::default()
    });
    let e = Exposition::of(&m);
    assert_eq!(
        e.series("hostping_rnic_throughput_gbps"),
        [labels(&[("rnic", "rnic1")])]
    );
    assert!(e.series("hostping_rnic_tx_pause_ratio").is_empty());
    assert!(e.series("hostping_link_utilisation").is_empty());
}

#[test]
fn triggers_and_the_agents_own_cost() {
    let mut m = Metrics::new("h", "measured");
    m.observe_trigger("pfc", TriggerOutcome::Probed);
    m.observe_trigger("pfc", TriggerOutcome::RateLimited);
    m.observe_trigger("pfc", TriggerOutcome::RateLimited);
    m.observe_trigger("idle", TriggerOutcome::SkippedBusy);
    m.observe_self(1.5, 1_000, 0.02, 0);
    m.observe_self(2.5, 52_000_000, 0.03, 3);
    m.observe_self(2.0, 51_000_000, 0.01, 2); // totals never go back
    let e = Exposition::of(&m);
    let t = |trigger, outcome| {
        e.get(
            "hostping_triggers_total",
            &[("trigger", trigger), ("outcome", outcome)],
        )
    };
    assert_eq!(t("pfc", "probed"), Some(1.0));
    assert_eq!(t("pfc", "rate_limited"), Some(2.0));
    assert_eq!(t("idle", "skipped_busy"), Some(1.0));
    assert_eq!(t("idle", "probed"), None);
    assert_eq!(e.types["hostping_triggers"], "counter");
    assert_eq!(e.value("hostping_agent_cpu_seconds_total", &[]), 2.5);
    assert_eq!(e.value("hostping_store_errors_total", &[]), 3.0);
    assert_eq!(
        e.value("hostping_agent_resident_memory_bytes", &[]),
        51_000_000.0
    );
    assert_eq!(e.value("hostping_agent_probe_duty_cycle", &[]), 0.01);
}

#[test]
fn odd_label_values_are_escaped_and_read_back() {
    let host = "host \"a\"\\b\nc";
    let rnic = "rnic\"0\\";
    let endpoint = "gpu\n1 ,}=";
    let link = "a\"--\\b";
    let mut m = Metrics::new(host, "simulated");
    let mut r = common::healthy(host, 0);
    r.paths = vec![common::path(rnic, endpoint, 42.0, PathStatus::Normal)];
    r.links = vec![common::link(
        link,
        model::LinkKind::RootPort,
        LinkStatus::Gray,
        2,
    )];
    r.diagnoses = vec![common::diagnosis(
        Cause::LinkFlapping,
        &[link, "x"],
        Some(rnic),
    )];
    m.observe_run_at("manual \"x\"", &r, 0, 0);

    let text = m.encode();
    assert!(text.contains(r#"rnic="rnic\"0\\""#), "{text}");
    assert!(text.contains(r#"endpoint="gpu\n1 ,}=""#), "{text}");
    let e = Exposition::of(&m);
    assert_eq!(
        e.value(
            "hostping_agent_info",
            &[
                ("host", host),
                ("provenance", "simulated"),
                ("version", env!("CARGO_PKG_VERSION"))
            ]
        ),
        1.0
    );
    assert_eq!(
        e.value(
            "hostping_path_bandwidth_gbps",
            &[("rnic", rnic), ("endpoint", endpoint)]
        ),
        42.0
    );
    assert_eq!(
        e.value(
            "hostping_link_status",
            &[("link", link), ("kind", "root_port"), ("status", "gray")]
        ),
        1.0
    );
    let links = format!("{link},x");
    assert_eq!(
        e.value(
            "hostping_diagnosis_active",
            &[
                ("cause", "link_flapping"),
                ("links", &links),
                ("rnic", rnic)
            ]
        ),
        1.0
    );
    assert_eq!(
        e.value("hostping_runs_total", &[("trigger", "manual \"x\"")]),
        1.0
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// After any run, the path series are exactly that run's paths, with its values.
    #[test]
    fn path_series_mirror_any_report(first in common::report(), report in common::report()) {
        let mut m = Metrics::new("h", "simulated");
        m.observe_run_at("idle", &first, 0, 0);
        m.observe_run_at("idle", &report, 0, 0);
        let e = Exposition::of(&m);
        prop_assert_eq!(e.series("hostping_path_failed").len(), report.paths.len());
        prop_assert_eq!(
            e.series("hostping_path_bandwidth_gbps").len(),
            report.paths.iter().filter(|p| p.bandwidth_gbps.is_some()).count()
        );
        for p in &report.paths {
            let key = [("rnic", p.rnic.as_str()), ("endpoint", p.endpoint.as_str())];
            prop_assert_eq!(e.get("hostping_path_bandwidth_gbps", &key), p.bandwidth_gbps);
            prop_assert_eq!(e.get("hostping_path_latency_us", &key), p.latency_us);
            prop_assert_eq!(
                e.value("hostping_path_abnormal", &key),
                f64::from(u8::from(p.status == PathStatus::Abnormal))
            );
            prop_assert_eq!(
                e.value("hostping_path_failed", &key),
                f64::from(u8::from(p.error.is_some()))
            );
        }
        let diagnosed: Vec<Labels> = report
            .diagnoses
            .iter()
            .map(|d| {
                let links: Vec<&str> = d.links.iter().map(|l| l.as_str()).collect();
                labels(&[
                    ("cause", d.cause.as_str()),
                    ("links", &links.join(",")),
                    ("rnic", d.rnic.as_ref().map_or("", |r| r.as_str())),
                ])
            })
            .collect();
        let active = e.series("hostping_diagnosis_active");
        prop_assert!(active.iter().all(|l| diagnosed.contains(l)));
        prop_assert!(diagnosed.iter().all(|l| active.contains(l)));
    }
}

/// The exporter's counter names (collectors/switch.go of treydock/infiniband_exporter),
/// each with the field of [`SwitchPortCounters`] it carries.
const EXPORTER_COUNTERS: [(&str, &str); 9] = [
    (
        "infiniband_switch_port_transmit_data_bytes_total",
        "xmit_data_bytes",
    ),
    (
        "infiniband_switch_port_receive_data_bytes_total",
        "rcv_data_bytes",
    ),
    ("infiniband_switch_port_transmit_packets_total", "xmit_pkts"),
    ("infiniband_switch_port_receive_packets_total", "rcv_pkts"),
    ("infiniband_switch_port_transmit_wait_total", "xmit_wait"),
    ("infiniband_switch_port_symbol_error_total", "symbol_errors"),
    ("infiniband_switch_port_link_downed_total", "link_downed"),
    ("infiniband_switch_port_receive_errors_total", "rcv_errors"),
    (
        "infiniband_switch_port_transmit_discards_total",
        "xmit_discards",
    ),
];

fn port(guid: u64, port: u8, counters: Option<SwitchPortCounters>) -> SwitchPortSample {
    SwitchPortSample {
        guid,
        lid: 1,
        port,
        at_unix_ns: 1,
        error: counters
            .is_none()
            .then(|| "no response in 100 ms, 3 tries".into()),
        counters,
    }
}

fn switch_counters(v: [u64; 9]) -> SwitchPortCounters {
    SwitchPortCounters {
        xmit_data_bytes: v[0],
        rcv_data_bytes: v[1],
        xmit_pkts: v[2],
        rcv_pkts: v[3],
        xmit_wait: v[4],
        symbol_errors: v[5],
        link_downed: v[6],
        rcv_errors: v[7],
        xmit_discards: v[8],
    }
}

const LEAF_A: u64 = 0x0000_0000_0020_0000;
const LEAF_B: u64 = 0xe41d_2d03_0012_3456;

fn fabric_sweep(n: u64, ports: Vec<SwitchPortSample>) -> FabricSweep {
    FabricSweep {
        sweep: n,
        start_unix_ns: 1_700_000_000_250_000_000,
        spread_us: 812.5,
        sampler: "host-1".into(),
        ports,
    }
}

#[test]
fn without_a_sweep_there_is_no_switch_series() {
    let mut m = Metrics::new("dgx-a100", "simulated");
    m.observe_run_at("idle", &common::healthy("dgx-a100", 2), 1, 1);
    let text = m.encode();
    assert!(!text.contains("infiniband_"), "{text}");
    assert!(!text.contains("hostping_fabric_"), "{text}");
}

#[test]
fn a_sweep_is_exposed_under_the_exporters_names_and_labels() {
    let mut m = Metrics::new("dgx-a100", "measured");
    // leaf-a's name is known from the topology, leaf-b's is not.
    m.observe_switches(
        &[SwitchInfo {
            guid: LEAF_A,
            lid: 1,
            name: "leaf-a".into(),
        }],
        &[],
    );
    // Values past 2^53 must come out exact: a switch's byte counters get there.
    let big = [(1 << 60) + 3, (1 << 53) + 1, 3, 4, 1234, 7, 2, 11, 5];
    let small = [10, 20, 30, 40, 0, 0, 0, 0, 0];
    m.observe_sweep(&fabric_sweep(
        1,
        vec![
            port(LEAF_A, 7, Some(switch_counters(big))),
            port(LEAF_A, 8, Some(switch_counters(small))),
            port(LEAF_B, 2, None),
        ],
    ));
    let text = m.encode();
    let e = Exposition::of(&m);
    let a7 = [
        ("guid", "0x0000000000200000"),
        ("port", "7"),
        ("switch", "leaf-a"),
    ];
    let a8 = [
        ("guid", "0x0000000000200000"),
        ("port", "8"),
        ("switch", "leaf-a"),
    ];
    let b2 = [("guid", "0xe41d2d0300123456"), ("port", "2")];
    for (i, (name, _)) in EXPORTER_COUNTERS.iter().enumerate() {
        let family = name.strip_suffix("_total").unwrap();
        assert_eq!(
            e.types.get(family).map(String::as_str),
            Some("counter"),
            "{name}"
        );
        // The exporter's label set, {guid, port}, and the switch's name (DESIGN 4.4), on
        // exactly the answered ports.
        let mut series = e.series(name);
        series.sort();
        assert_eq!(series, [labels(&a7), labels(&a8)], "{name}");
        assert_eq!(e.value(name, &a8), small[i] as f64, "{name}");
        assert_eq!(e.get(name, &b2), None, "{name}: a silent port has no value");
        let line = format!(
            "{name}{{guid=\"0x0000000000200000\",port=\"7\",switch=\"leaf-a\"}} {}\n",
            big[i]
        );
        assert!(text.contains(&line), "{line:?} not in\n{text}");
    }
    assert_eq!(e.value("hostping_fabric_port_error", &b2), 1.0);
    assert_eq!(e.series("hostping_fabric_port_error"), [labels(&b2)]);
    assert_eq!(e.value("hostping_fabric_ports_in_error", &[]), 1.0);
    assert_eq!(e.value("hostping_fabric_ports_sampled", &[]), 3.0);
    assert_eq!(e.value("hostping_fabric_sweeps_total", &[]), 1.0);
    assert_eq!(
        e.value("hostping_fabric_sweep_spread_seconds", &[]),
        812.5e-6
    );
    // What Prometheus gets is the f64 nearest the nanoseconds, in seconds.
    let at = e.value("hostping_fabric_last_sweep_timestamp_seconds", &[]);
    assert_eq!(at, 1_700_000_000_250_000_000u64 as f64 / 1e9);
    assert!((at - 1_700_000_000.25).abs() < 1e-6, "{at}");
    assert_eq!(
        e.get("hostping_fabric_sweep_failures_total", &[]),
        Some(0.0)
    );
}

#[test]
fn the_next_sweep_replaces_the_port_series_and_sets_totals_not_sums() {
    let mut m = Metrics::new("dgx-a100", "measured");
    let v = [100, 200, 3, 4, 5, 6, 7, 8, 9];
    m.observe_sweep(&fabric_sweep(
        1,
        vec![
            port(LEAF_A, 7, Some(switch_counters(v))),
            port(LEAF_B, 2, None),
        ],
    ));
    // The same totals again (nothing moved), and leaf-b answers while leaf-a is silent.
    m.observe_sweep(&fabric_sweep(
        2,
        vec![
            port(LEAF_A, 7, Some(switch_counters(v))),
            port(LEAF_B, 2, Some(switch_counters(v))),
        ],
    ));
    let e = Exposition::of(&m);
    // No topology seen: the counters' switch label is empty.
    let a7 = [
        ("guid", "0x0000000000200000"),
        ("port", "7"),
        ("switch", ""),
    ];
    let b2 = [
        ("guid", "0xe41d2d0300123456"),
        ("port", "2"),
        ("switch", ""),
    ];
    for (i, (name, _)) in EXPORTER_COUNTERS.iter().enumerate() {
        assert_eq!(
            e.value(name, &a7),
            v[i] as f64,
            "{name}: the switch's total, not a sum"
        );
        assert_eq!(e.value(name, &b2), v[i] as f64, "{name}");
    }
    assert!(e.series("hostping_fabric_port_error").is_empty());
    assert_eq!(e.value("hostping_fabric_ports_in_error", &[]), 0.0);
    assert_eq!(e.value("hostping_fabric_sweeps_total", &[]), 2.0);

    m.observe_sweep(&fabric_sweep(
        3,
        vec![
            port(LEAF_A, 7, None),
            port(LEAF_B, 2, Some(switch_counters(v))),
        ],
    ));
    m.observe_failed_sweep();
    m.observe_sweep_store_error();
    let e = Exposition::of(&m);
    for (name, _) in EXPORTER_COUNTERS {
        assert_eq!(
            e.series(name),
            [labels(&b2)],
            "{name}: leaf-a's series are gone"
        );
    }
    assert_eq!(e.series("hostping_fabric_port_error"), [labels(&a7[..2])]);
    assert_eq!(e.value("hostping_fabric_sweep_failures_total", &[]), 1.0);
    assert_eq!(e.value("hostping_fabric_store_errors_total", &[]), 1.0);
    assert_eq!(e.value("hostping_fabric_sweeps_total", &[]), 3.0);
}

#[test]
fn switches_and_uplinks_are_the_exporters_info_series() {
    let mut m = Metrics::new("dgx-a100", "measured");
    m.observe_switches(
        &[
            SwitchInfo {
                guid: LEAF_A,
                lid: 1,
                name: "leaf-a".into(),
            },
            SwitchInfo {
                guid: LEAF_B,
                lid: 3,
                name: "leaf \"b\"".into(),
            },
        ],
        &[
            UplinkInfo {
                guid: LEAF_A,
                port: 1,
                switch: "leaf-a".into(),
                uplink: "host-1 HCA-1".into(),
                uplink_guid: 0x0000_0000_0010_0000,
                uplink_type: "CA",
                uplink_port: 1,
                uplink_lid: Some(5),
            },
            UplinkInfo {
                guid: LEAF_A,
                port: 7,
                switch: "leaf-a".into(),
                uplink: "leaf \"b\"".into(),
                uplink_guid: LEAF_B,
                uplink_type: "SW",
                uplink_port: 7,
                uplink_lid: Some(3),
            },
        ],
    );
    let e = Exposition::of(&m);
    assert_eq!(
        e.types.get("infiniband_switch_info").map(String::as_str),
        Some("gauge")
    );
    assert_eq!(
        e.types
            .get("infiniband_switch_uplink_info")
            .map(String::as_str),
        Some("gauge")
    );
    assert_eq!(
        e.value(
            "infiniband_switch_info",
            &[
                ("guid", "0xe41d2d0300123456"),
                ("lid", "3"),
                ("switch", "leaf \"b\"")
            ]
        ),
        1.0
    );
    assert_eq!(e.series("infiniband_switch_info").len(), 2);
    assert_eq!(
        e.value(
            "infiniband_switch_uplink_info",
            &[
                ("guid", "0x0000000000200000"),
                ("port", "1"),
                ("switch", "leaf-a"),
                ("uplink", "host-1 HCA-1"),
                ("uplink_guid", "0x0000000000100000"),
                ("uplink_lid", "5"),
                ("uplink_port", "1"),
                ("uplink_type", "CA"),
            ]
        ),
        1.0
    );
    assert_eq!(
        e.value(
            "infiniband_switch_uplink_info",
            &[
                ("guid", "0x0000000000200000"),
                ("port", "7"),
                ("switch", "leaf-a"),
                ("uplink", "leaf \"b\""),
                ("uplink_guid", "0xe41d2d0300123456"),
                ("uplink_lid", "3"),
                ("uplink_port", "7"),
                ("uplink_type", "SW"),
            ]
        ),
        1.0
    );
    // Replaced, not added to.
    m.observe_switches(
        &[SwitchInfo {
            guid: LEAF_A,
            lid: 1,
            name: "leaf-a".into(),
        }],
        &[],
    );
    let e = Exposition::of(&m);
    assert_eq!(e.series("infiniband_switch_info").len(), 1);
    assert!(e.series("infiniband_switch_uplink_info").is_empty());
}
