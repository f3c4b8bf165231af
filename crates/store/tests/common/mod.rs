//! Reports built by hand and by proptest strategies, shared by the integration tests.
#![allow(dead_code)]

use model::{
    BaselineKind, Cause, ComponentId, Diagnosis, LinkId, LinkKind, LinkReport, LinkStatus, Mode,
    PathReport, PathStatus, Provenance, Report, Setting, StreamResult,
};
use proptest::prelude::*;
use std::collections::HashSet;
use store::{NewRun, Store};

/// Stores `report` as an idle-triggered run started at `started_unix_ms`; its row id.
pub fn insert_idle_run(store: &mut Store, started_unix_ms: i64, report: &Report) -> i64 {
    let snapshot = serde_json::json!({"at_ns": 7});
    store
        .insert_run(&NewRun {
            started_unix_ms,
            clock_ns: 0,
            duration_ns: 1,
            trigger: "idle",
            trigger_detail: "",
            snapshot: &snapshot,
            counters: None,
            report,
        })
        .unwrap()
}

/// A path measured at `bw` Gb/s with status `status`.
pub fn path(rnic: &str, endpoint: &str, bw: f64, status: PathStatus) -> PathReport {
    PathReport {
        rnic: rnic.into(),
        endpoint: endpoint.into(),
        latency_us: Some(1.9),
        bandwidth_gbps: Some(bw),
        baseline_latency_us: Some(1.9),
        baseline_bandwidth_gbps: Some(198.0),
        status,
        latency_abnormal: false,
        affinitive: true,
        error: None,
        unavailable: false,
        stream: None,
        verified_bytes: Some(4096),
        reprobes: vec![],
    }
}

/// A path whose probe failed.
pub fn failed_path(rnic: &str, endpoint: &str, error: &str) -> PathReport {
    PathReport {
        latency_us: None,
        bandwidth_gbps: None,
        status: PathStatus::Uncertain,
        affinitive: false,
        error: Some(error.to_string()),
        unavailable: false,
        verified_bytes: None,
        ..path(rnic, endpoint, 0.0, PathStatus::Uncertain)
    }
}

/// A link.
pub fn link(id: &str, kind: LinkKind, status: LinkStatus, abnormal_cnt: u32) -> LinkReport {
    LinkReport {
        id: id.into(),
        kind,
        status,
        abnormal_cnt,
        utilisation: None,
        bound: None,
    }
}

/// A diagnosis.
pub fn diagnosis(cause: Cause, links: &[&str], rnic: Option<&str>) -> Diagnosis {
    Diagnosis {
        cause,
        links: links.iter().map(|l| LinkId::from(*l)).collect(),
        rnic: rnic.map(ComponentId::from),
        setting: None,
        evidence: format!("{} on {}", cause.as_str(), links.join(",")),
    }
}

/// A healthy idle report of `host` with `paths` paths (rnic0 -> gpu0, gpu1, ...).
pub fn healthy(host: &str, paths: usize) -> Report {
    Report {
        host: host.to_string(),
        mode: Mode::Idle,
        busy: Vec::new(),
        healthy: true,
        inconclusive: false,
        not_judged: Vec::new(),
        provenance: Provenance::Simulated,
        run: 0,
        paths: (0..paths)
            .map(|i| path("rnic0", &format!("gpu{i}"), 197.5, PathStatus::Normal))
            .collect(),
        links: vec![
            link("rnic0--lsw0", LinkKind::RnicPcie, LinkStatus::Normal, 0),
            link("lsw0--usw0", LinkKind::SwitchUplink, LinkStatus::Normal, 0),
        ],
        diagnoses: vec![],
        baseline: Some(BaselineKind::Simulated),
        thresholds: Some(model::Thresholds::default()),
    }
}

/// An unhealthy report: one failed path, one abnormal path, a link failure on two links
/// and an RNIC misconfiguration.
pub fn unhealthy(host: &str) -> Report {
    let mut r = healthy(host, 2);
    r.healthy = false;
    r.paths[1].status = PathStatus::Abnormal;
    r.paths[1].bandwidth_gbps = Some(120.25);
    r.paths[1].stream = Some(StreamResult {
        qps: 4,
        depth: 16,
        message_bytes: 65536,
        bytes: 1 << 30,
        duration_us: 41_000.5,
        bandwidth_gbps: 120.1,
    });
    r.paths
        .push(failed_path("rnic1", "mem0", "ibv_post_send: QP in error"));
    r.links[1].status = LinkStatus::Abnormal;
    r.links[1].abnormal_cnt = 1;
    r.links[1].utilisation = Some(0.42);
    r.diagnoses = vec![
        diagnosis(Cause::LinkFailure, &["lsw0--usw0", "usw0--cpu0"], None),
        Diagnosis {
            setting: Some(Setting::SlowStart),
            ..diagnosis(Cause::RnicMisconfiguration, &[], Some("rnic0"))
        },
        diagnosis(Cause::LinkFailure, &["gpu1--lsw1"], None),
    ];
    r.baseline = Some(BaselineKind::Recorded);
    r
}

/// Every finite f64 class, both signs (JSON has no NaN or infinity).
pub fn finite() -> impl Strategy<Value = f64> {
    prop::num::f64::NORMAL | prop::num::f64::SUBNORMAL | prop::num::f64::ZERO
}

/// Text with quotes, backslashes, newlines and non-ASCII.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_-]{0,12}",
        "\\PC{0,16}",
        Just("a \"quoted\" \\ back\nslash".to_string()),
    ]
}

fn path_status() -> impl Strategy<Value = PathStatus> {
    prop_oneof![
        Just(PathStatus::Normal),
        Just(PathStatus::Abnormal),
        Just(PathStatus::Uncertain)
    ]
}

fn link_status() -> impl Strategy<Value = LinkStatus> {
    prop_oneof![
        Just(LinkStatus::Normal),
        Just(LinkStatus::Abnormal),
        Just(LinkStatus::Gray),
        Just(LinkStatus::Uncertain)
    ]
}

fn cause() -> impl Strategy<Value = Cause> {
    prop::sample::select(Cause::ALL.to_vec())
}

fn stream() -> impl Strategy<Value = StreamResult> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        finite(),
        finite(),
    )
        .prop_map(
            |(qps, depth, message_bytes, bytes, duration_us, bandwidth_gbps)| StreamResult {
                qps,
                depth,
                message_bytes,
                bytes,
                duration_us,
                bandwidth_gbps,
            },
        )
}

fn path_report() -> impl Strategy<Value = PathReport> {
    (
        ("rnic[0-3]", "(gpu|mem)[0-7]|odd \"x\"\\\n"),
        proptest::option::of(finite()),
        proptest::option::of(finite()),
        proptest::option::of(finite()),
        proptest::option::of(finite()),
        (path_status(), any::<bool>(), any::<bool>()),
        proptest::option::of(text()),
        proptest::option::of(stream()),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(
            |(
                (rnic, endpoint),
                latency_us,
                bandwidth_gbps,
                baseline_latency_us,
                baseline_bandwidth_gbps,
                (status, latency_abnormal, affinitive),
                error,
                stream,
                verified_bytes,
            )| PathReport {
                rnic: rnic.as_str().into(),
                endpoint: endpoint.as_str().into(),
                latency_us,
                bandwidth_gbps,
                baseline_latency_us,
                baseline_bandwidth_gbps,
                status,
                latency_abnormal,
                affinitive,
                unavailable: error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("unavailable: ")),
                error,
                stream,
                verified_bytes,
                reprobes: vec![],
            },
        )
}

fn link_report() -> impl Strategy<Value = LinkReport> {
    (
        "[a-z]{2,4}[0-7]--[a-z]{2,4}[0-3]",
        prop::sample::select(LinkKind::ALL.to_vec()),
        link_status(),
        any::<u32>(),
        proptest::option::of(finite()),
    )
        .prop_map(|(id, kind, status, abnormal_cnt, utilisation)| LinkReport {
            id: id.as_str().into(),
            kind,
            status,
            abnormal_cnt,
            utilisation,
            bound: None,
        })
}

fn diagnosis_strategy() -> impl Strategy<Value = Diagnosis> {
    (
        cause(),
        prop::collection::vec("[a-z]{3}[0-7]--[a-z]{3}[0-3]", 0..4),
        proptest::option::of("rnic[0-3]"),
        proptest::option::of(prop::sample::select(vec![
            Setting::Acs,
            Setting::AtsOff,
            Setting::SlowStart,
            Setting::TxWindow,
        ])),
        text(),
    )
        .prop_map(|(cause, links, rnic, setting, evidence)| Diagnosis {
            cause,
            links: links.iter().map(|l| LinkId::from(l.as_str())).collect(),
            rnic: rnic.as_deref().map(ComponentId::from),
            setting,
            evidence,
        })
}

/// Any report the analyzer could write (finite numbers; paths unique per (rnic, endpoint)
/// and links unique per id, as on a real host).
pub fn report() -> impl Strategy<Value = Report> {
    (
        prop_oneof!["dgx-a100", text()],
        prop_oneof![Just(Mode::Idle), Just(Mode::Busy)],
        any::<bool>(),
        prop_oneof![Just(Provenance::Measured), Just(Provenance::Simulated)],
        any::<u32>(),
        prop::collection::vec(path_report(), 0..12),
        prop::collection::vec(link_report(), 0..10),
        prop::collection::vec(diagnosis_strategy(), 0..4),
        proptest::option::of(prop_oneof![
            Just(BaselineKind::Recorded),
            Just(BaselineKind::Simulated),
            Just(BaselineKind::Relative)
        ]),
        proptest::option::of(
            (0.01f64..0.9, 1u32..8).prop_map(|(abnormal_th, flapping_runs)| model::Thresholds {
                abnormal_th,
                flapping_runs,
                ..model::Thresholds::default()
            }),
        ),
    )
        .prop_map(
            |(
                host,
                mode,
                healthy,
                provenance,
                run,
                mut paths,
                mut links,
                diagnoses,
                baseline,
                thresholds,
            )| {
                let mut seen = HashSet::new();
                paths.retain(|p| seen.insert((p.rnic.clone(), p.endpoint.clone())));
                let mut seen = HashSet::new();
                links.retain(|l| seen.insert(l.id.clone()));
                Report {
                    host,
                    mode,
                    busy: Vec::new(),
                    healthy,
                    inconclusive: false,
                    not_judged: Vec::new(),
                    provenance,
                    run,
                    paths,
                    links,
                    diagnoses,
                    baseline,
                    thresholds,
                }
            },
        )
}
