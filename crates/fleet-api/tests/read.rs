//! The read API's types against the answers hostping served before they existed
//! (`tests/data/read/`, captured byte for byte: see its README), and the one implementation
//! of the shared endpoints over a store made up here.

mod common;

use fleet_api::read::{
    routes, CauseHosts, ErrorBody, FleetStatus, HostBaseline, HostRun, HostSummary, KindBaseline,
    ReadError, ReadStore, SlowHost, Timeline, TimelinePoint, TimelineRequest,
};
use model::Report;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

fn same_bytes<T: Serialize + DeserializeOwned>(name: &str) -> T {
    common::same_bytes(&format!("read/{name}"))
}

fn fixture(name: &str) -> String {
    common::fixture(&format!("read/{name}"))
}

#[test]
fn the_collectors_answers_read_back_and_write_the_same_bytes() {
    let hosts: Vec<HostSummary> = same_bytes("collector-hosts.json");
    assert_eq!(hosts.len(), 10);
    let odd = hosts.iter().find(|h| h.host == "node-odd").unwrap();
    assert_eq!(
        (odd.kind.as_str(), odd.kind_known, &odd.rack),
        ("custom-box", Some(false), &Some(None))
    );
    let slow = hosts.iter().find(|h| h.host == "node-slow").unwrap();
    assert_eq!(slow.rack, Some(Some("r1".to_owned())));

    // The collector holds a report as the agent sent it; a reader takes a model::Report.
    let runs: Vec<HostRun<Value>> = same_bytes("collector-runs.json");
    assert_eq!(runs[0].envelope.kind_known, Some(true));
    assert!(
        runs[0].report.get("id").is_none(),
        "the envelope is not the report's"
    );
    let runs: Vec<HostRun<Report>> = same_bytes("collector-runs.json");
    let run = &runs[0];
    assert_eq!(
        (
            run.envelope.id,
            run.envelope.started_unix_ms,
            run.envelope.trigger.as_str()
        ),
        (2, 1_764_000_002_000, "idle")
    );
    assert!(!run.report.healthy);
    assert_eq!(run.report.diagnoses[0].cause, model::Cause::LinkFailure);

    let timeline: Timeline = same_bytes("collector-timeline.json");
    assert_eq!(
        (
            timeline.host.as_str(),
            timeline.rnic.as_str(),
            timeline.endpoint.as_str()
        ),
        ("node-1", "rnic2", "gpu4")
    );
    assert_eq!(timeline.points.len(), 2);
    assert!(timeline.points[0].started_unix_ms < timeline.points[1].started_unix_ms);

    for (name, source) in [
        ("collector-host-baseline-own.json", "own"),
        ("collector-host-baseline-fleet.json", "fleet"),
        ("collector-host-baseline-none.json", "none"),
    ] {
        let baseline: HostBaseline = same_bytes(name);
        assert_eq!(baseline.paths.len(), 40, "{name}");
        assert!(
            baseline
                .paths
                .iter()
                .all(|p| serde_json::to_value(p.source).unwrap() == source),
            "{name}"
        );
        assert!(baseline.run.is_some(), "{name}");
    }
    let none: HostBaseline = same_bytes("collector-host-baseline-none.json");
    assert_eq!(none.rack, None);
    assert_eq!(
        none.run.unwrap().baseline,
        Some(model::BaselineKind::Relative)
    );

    let kind: KindBaseline = same_bytes("collector-kind-baseline.json");
    assert_eq!(
        (kind.paths.len(), kind.hosts.len(), kind.hosts_of_kind),
        (40, 9, 9)
    );
    let empty: KindBaseline = same_bytes("collector-kind-baseline-empty.json");
    assert_eq!((empty.paths.len(), empty.refreshed_unix_ms), (0, None));

    let slow: Vec<SlowHost> = same_bytes("collector-slow-hosts.json");
    assert_eq!(slow.len(), 1);
    assert_eq!(slow[0].host, "node-slow");

    let status: FleetStatus = same_bytes("collector-status.json");
    assert_eq!(
        (
            status.hosts,
            status.healthy,
            status.unhealthy,
            status.stale_after_ms
        ),
        (10, 9, 1, analyze::fleet::STALE_AFTER_MS)
    );
    assert_eq!(status.kinds.len(), 2);

    let causes: Vec<CauseHosts> = same_bytes("collector-causes.json");
    assert_eq!(causes[0].cause, "link_failure");
    assert_eq!(causes[0].count, causes[0].hosts.len());
}

/// The agent's answers are the collector's types: the fields only the collector knows are
/// left out, not null.
#[test]
fn the_agents_answers_are_the_same_types() {
    let hosts: Vec<HostSummary> = same_bytes("agent-hosts.json");
    assert_eq!(
        hosts,
        [HostSummary {
            agent_url: None,
            causes: vec!["link_failure".into()],
            health: None,
            healthy: Some(false),
            host: "node-a".into(),
            inconclusive: None,
            kind: "dgx-a100".into(),
            kind_known: None,
            last_run_unix_ms: Some(1_795_707_207_693),
            rack: None,
            runs: 4,
        }]
    );
    let runs: Vec<HostRun<Report>> = same_bytes("agent-runs.json");
    assert_eq!(runs[0].envelope.kind_known, None);
    assert_eq!(runs[0].envelope.id, 4);
    let timeline: Timeline = same_bytes("agent-timeline.json");
    assert_eq!(timeline.host, "node-a");
    // The collector's envelope and the agent's differ by kind_known only.
    let collector: Vec<HostRun<Report>> = same_bytes("collector-runs.json");
    let fields = |run: &HostRun<Report>| -> Vec<String> {
        let v = serde_json::to_value(run).unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    };
    let mut agent_fields = fields(&runs[0]);
    agent_fields.push("kind_known".into());
    agent_fields.sort();
    assert_eq!(agent_fields, fields(&collector[0]));
}

/// A field an answer must have is required: a renamed one fails to read, it does not
/// become a default.
#[test]
fn a_missing_or_renamed_field_is_refused() {
    let mut hosts: Value = serde_json::from_str(&fixture("collector-hosts.json")).unwrap();
    hosts[0]["hosts"] = hosts[0]["host"].take();
    hosts[0].as_object_mut().unwrap().remove("host");
    let e = serde_json::from_value::<Vec<HostSummary>>(hosts).unwrap_err();
    assert!(e.to_string().contains("missing field `host`"), "{e}");
    let mut status: Value = serde_json::from_str(&fixture("collector-status.json")).unwrap();
    status.as_object_mut().unwrap().remove("stale_after_ms");
    assert!(serde_json::from_value::<FleetStatus>(status).is_err());
    let mut runs: Value = serde_json::from_str(&fixture("collector-runs.json")).unwrap();
    runs[0].as_object_mut().unwrap().remove("trigger");
    let e = serde_json::from_value::<Vec<HostRun<Report>>>(runs).unwrap_err();
    assert!(e.to_string().contains("missing field `trigger`"), "{e}");
}

/// A newer agent's report field survives the collector, which serves the report as sent.
#[test]
fn a_report_field_of_a_newer_agent_survives_the_collector() {
    let text = fixture("collector-runs.json");
    let mut runs: Vec<Value> = serde_json::from_str(&text).unwrap();
    runs[0]["zz_new_field"] = json!({"b": 1, "a": [2.5]});
    let newer = serde_json::to_string(&runs).unwrap();
    let typed: Vec<HostRun<Value>> = serde_json::from_str(&newer).unwrap();
    assert_eq!(serde_json::to_string(&typed).unwrap(), newer);
}

/// A store made up for the routes: one host `node-1` with fixed answers, or failing.
#[derive(Clone, Default)]
struct Fake {
    /// Answer as an agent would: one host only.
    single: Option<String>,
    /// Fail every read: 503 when true, 500 when false.
    fail: Option<bool>,
    /// What the routes asked for.
    asked: Arc<Mutex<Vec<String>>>,
}

#[derive(Debug, thiserror::Error)]
#[error("the fake store is down")]
struct Down;

impl Fake {
    fn check(&self, what: String) -> Result<(), ReadError> {
        self.asked.lock().unwrap().push(what);
        match self.fail {
            Some(true) => Err(ReadError::unavailable(Down)),
            Some(false) => Err(ReadError::internal(Down)),
            None => Ok(()),
        }
    }

    fn asked(&self) -> Vec<String> {
        std::mem::take(&mut self.asked.lock().unwrap())
    }
}

fn point(run_id: i64) -> TimelinePoint {
    TimelinePoint {
        bandwidth_gbps: Some(197.5),
        latency_us: None,
        run_id,
        started_unix_ms: 1_764_000_000_000 + run_id,
        status: "normal".into(),
    }
}

impl ReadStore for Fake {
    type Report = Value;

    fn single_host(&self) -> Option<&str> {
        self.single.as_deref()
    }

    async fn hosts(&self) -> Result<Vec<HostSummary>, ReadError> {
        self.check("hosts".into())?;
        Ok(vec![HostSummary {
            agent_url: None,
            causes: vec![],
            health: None,
            healthy: None,
            host: "node-1".into(),
            inconclusive: None,
            kind: "dgx-a100".into(),
            kind_known: Some(true),
            last_run_unix_ms: None,
            rack: Some(None),
            runs: 0,
        }])
    }

    async fn host_runs(
        &self,
        host: &str,
        limit: u32,
    ) -> Result<Option<Vec<HostRun<Value>>>, ReadError> {
        self.check(format!("runs {host} {limit}"))?;
        Ok((host == "node-1").then(|| {
            vec![HostRun {
                envelope: fleet_api::read::RunEnvelope {
                    id: 3,
                    kind_known: None,
                    started_unix_ms: 5,
                    trigger: "manual".into(),
                },
                report: json!({"host": "dgx-a100", "healthy": true}),
            }]
        }))
    }

    async fn timeline(
        &self,
        host: &str,
        request: &TimelineRequest,
    ) -> Result<Option<Vec<TimelinePoint>>, ReadError> {
        self.check(format!(
            "timeline {host} {} {} {} {}",
            request.rnic, request.endpoint, request.since_unix_ms, request.limit
        ))?;
        Ok((host == "node-1").then(|| vec![point(1), point(2)]))
    }
}

/// Serves `store` on a thread of its own.
fn serve(store: Fake) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, routes().with_state(store))
                .await
                .unwrap();
        })
    });
    addr
}

/// Status and body of `GET path`.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent.get(&format!("http://{addr}{path}")).call().unwrap();
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().unwrap())
}

fn refusal(message: &str) -> String {
    serde_json::to_string(&ErrorBody {
        error: message.into(),
    })
    .unwrap()
}

#[test]
fn the_shared_endpoints_check_queries_and_hosts_once_for_every_store() {
    let store = Fake::default();
    let addr = serve(store.clone());
    assert_eq!(
        get(addr, "/api/hosts"),
        (
            200,
            r#"[{"causes":[],"healthy":null,"host":"node-1","kind":"dgx-a100","kind_known":true,"last_run_unix_ms":null,"rack":null,"runs":0}]"#.into()
        )
    );
    assert_eq!(
        get(addr, "/api/hosts/node-1/runs"),
        (
            200,
            r#"[{"healthy":true,"host":"dgx-a100","id":3,"started_unix_ms":5,"trigger":"manual"}]"#
                .into()
        )
    );
    assert_eq!(get(addr, "/api/hosts/node-1/runs?limit=1000").0, 200);
    assert_eq!(
        store.asked(),
        ["hosts", "runs node-1 20", "runs node-1 1000"]
    );
    for (query, message) in [
        ("limit=0", "limit: \"0\" is not a number from 1 to 1000"),
        (
            "limit=1001",
            "limit: \"1001\" is not a number from 1 to 1000",
        ),
        ("limit=x", "limit: \"x\" is not a number from 1 to 1000"),
    ] {
        assert_eq!(
            get(addr, &format!("/api/hosts/node-1/runs?{query}")),
            (400, refusal(message))
        );
    }
    assert_eq!(
        store.asked(),
        Vec::<String>::new(),
        "refused before the store"
    );
    assert_eq!(
        get(addr, "/api/hosts/node-9/runs"),
        (404, refusal("no host node-9"))
    );

    let (status, body) = get(
        addr,
        "/api/hosts/node-1/timeline?rnic=rnic2&endpoint=gpu4&since_unix_ms=7&limit=2",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        r#"{"endpoint":"gpu4","host":"node-1","points":[{"bandwidth_gbps":197.5,"latency_us":null,"run_id":1,"started_unix_ms":1764000000001,"status":"normal"},{"bandwidth_gbps":197.5,"latency_us":null,"run_id":2,"started_unix_ms":1764000000002,"status":"normal"}],"rnic":"rnic2"}"#
    );
    get(addr, "/api/hosts/node-1/timeline?rnic=rnic2&endpoint=gpu4");
    assert_eq!(
        store.asked(),
        [
            "runs node-9 20",
            "timeline node-1 rnic2 gpu4 7 2",
            "timeline node-1 rnic2 gpu4 0 1000"
        ]
    );
    for (query, message) in [
        (
            "rnic=rnic2",
            "rnic and endpoint are required: ?rnic=R&endpoint=E",
        ),
        (
            "rnic=rnic2&endpoint=gpu4&since_unix_ms=soon",
            "since_unix_ms: \"soon\" is not a number from 0 to 9223372036854775807",
        ),
        (
            "rnic=rnic2&endpoint=gpu4&limit=10001",
            "limit: \"10001\" is not a number from 1 to 10000",
        ),
    ] {
        assert_eq!(
            get(addr, &format!("/api/hosts/node-1/timeline?{query}")),
            (400, refusal(message))
        );
    }
    assert_eq!(
        get(addr, "/api/hosts/node-9/timeline?rnic=rnic2&endpoint=gpu4"),
        (404, refusal("no host node-9"))
    );
}

#[test]
fn a_store_of_one_host_refuses_the_others_before_anything_else() {
    let store = Fake {
        single: Some("node-1".into()),
        ..Fake::default()
    };
    let addr = serve(store.clone());
    let other = refusal("no host node-9: this agent watches node-1");
    assert_eq!(
        get(addr, "/api/hosts/node-9/runs?limit=0"),
        (404, other.clone())
    );
    assert_eq!(get(addr, "/api/hosts/node-9/timeline?rnic=r"), (404, other));
    assert_eq!(store.asked(), Vec::<String>::new());
    assert_eq!(get(addr, "/api/hosts/node-1/runs?limit=2").0, 200);
    assert_eq!(store.asked(), ["runs node-1 2"]);
}

#[test]
fn a_failing_store_is_503_when_unreachable_and_500_when_broken() {
    for (fail, status) in [(true, 503), (false, 500)] {
        let addr = serve(Fake {
            fail: Some(fail),
            ..Fake::default()
        });
        for path in [
            "/api/hosts",
            "/api/hosts/node-1/runs",
            "/api/hosts/node-1/timeline?rnic=a&endpoint=b",
        ] {
            assert_eq!(
                get(addr, path),
                (status, refusal("the fake store is down")),
                "{path}"
            );
        }
    }
}
