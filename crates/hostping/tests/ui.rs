//! The web UI (issue 14 part 3): the read endpoints its pages need, on the collector (a real
//! PostgreSQL) and on the agent (its SQLite), and the pages themselves in a real headless
//! Chromium: a fleet of simulated agents with injected faults (a failed link, a flapping
//! memory channel) and a healthy host of another kind, seen as a user sees them: the
//! overview's health and causes, its filters (by the controls and by the URL), the failed
//! link's red cells, the diagnosis naming it, the flapping path's alternating timeline, and
//! an agent's own page. A screenshot of each page is written to `target/test-artifacts/ui/`.
//!
//! Needs PostgreSQL's server binaries and chromium/chromedriver; skipped without them unless
//! `HOSTPING_REQUIRE_POSTGRES` / `HOSTPING_REQUIRE_CHROMIUM` are set (as `./test.sh` does).

mod common;

use common::browser::{is_gray, is_green, is_red, js, rgb, screenshot, wait_until, ChromeDriver};
use common::postgres::{Collector, Postgres};
use common::{
    agent, agent_real, hostping, http_get, sim_report, stdout, temp_dir, tokens_file, Agent,
};
use fantoccini::{Client, Locator};
use fleet_api::read::{ErrorBody, HostRun, HostSummary, Timeline};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const FAILED_LINK: &str = "gpu4--lsw4";
const FAILURE: &str = "degrade:gpu4--lsw4:0.3";
const FLAPPING_LINK: &str = "mem1--cpu1";
const FLAP: &str = "flap:mem1--cpu1:0.15";
/// A host name that is markup: the pages must show it as text.
const MARKUP_HOST: &str = "ok-<b>amd</b>&amp;";

fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// A GET with an `Accept` header: status, content type, CSP, body.
fn fetch(addr: SocketAddr, path: &str, accept: &str) -> (u16, String, String, String) {
    let mut resp = client()
        .get(format!("http://{addr}{path}"))
        .header("Accept", accept)
        .call()
        .unwrap();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let (content_type, csp) = (header("content-type"), header("content-security-policy"));
    let status = resp.status().as_u16();
    let body = resp.body_mut().read_to_string().unwrap();
    (status, content_type, csp, body)
}

fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let (status, _, _, body) = fetch(addr, path, "application/json");
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}")),
    )
}

/// `answer` read into the read API's type for it (`fleet_api::read`, shared by the agent, the
/// collector and `hostping fleet`) and written back: the same JSON, nothing left behind.
fn typed<T: Serialize + DeserializeOwned>(answer: &Value) -> T {
    let t: T = serde_json::from_value(answer.clone()).unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(&serde_json::to_value(&t).unwrap(), answer);
    t
}

/// A refusal's status and message.
fn refused(addr: SocketAddr, path: &str) -> (u16, String) {
    let (status, body) = get(addr, path);
    (status, typed::<ErrorBody>(&body).error)
}

fn post_run(addr: SocketAddr, token: &str, run: &Value) -> u16 {
    client()
        .post(format!("http://{addr}/api/runs"))
        .header("Authorization", format!("Bearer {token}"))
        .send(&serde_json::to_vec(run).unwrap()[..])
        .unwrap()
        .status()
        .as_u16()
}

/// The `rnic` -> `endpoint` path of a report.
fn path_of<'a>(report: &'a Value, rnic: &str, endpoint: &str) -> &'a Value {
    report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rnic"] == rnic && p["endpoint"] == endpoint)
        .unwrap_or_else(|| panic!("no path {rnic}->{endpoint}"))
}

/// A timeline point as the API answers it, from a run's report.
fn point(run_id: i64, started: i64, report: &Value, rnic: &str, endpoint: &str) -> Value {
    let p = path_of(report, rnic, endpoint);
    json!({"run_id": run_id, "started_unix_ms": started, "latency_us": p["latency_us"],
           "bandwidth_gbps": p["bandwidth_gbps"], "status": p["status"]})
}

#[test]
fn the_collector_serves_the_pages_and_one_path_over_runs() {
    let dir = temp_dir("ui-timeline");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let token = "tok-node-1-0123456789abcdef";
    let collector = Collector::start(&pg, &tokens_file(&dir, &[("node-1", token)]), &[]);
    let addr = collector.addr;
    let healthy = sim_report(&[]);
    let failed = sim_report(&[FAILURE]);
    // Sent out of order: the timeline is ordered by start time, not by arrival.
    let runs = [
        (3, 3_000, &healthy),
        (1, 1_000, &healthy),
        (2, 2_000, &failed),
    ];
    for (id, started, report) in runs {
        let run = json!({"host": "node-1", "id": id, "trigger": "idle",
                         "started_unix_ms": started, "report": report});
        assert_eq!(post_run(addr, token, &run), 201);
    }
    let expected: Vec<Value> = [
        (1, 1_000, &healthy),
        (2, 2_000, &failed),
        (3, 3_000, &healthy),
    ]
    .iter()
    .map(|(id, started, r)| point(*id, *started, r, "rnic2", "gpu4"))
    .collect();
    assert_eq!(expected[1]["status"], "abnormal", "{}", expected[1]);
    let base = "/api/hosts/node-1/timeline?rnic=rnic2&endpoint=gpu4";
    let (status, answer) = get(addr, base);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"host": "node-1", "rnic": "rnic2", "endpoint": "gpu4", "points": expected})
    );
    let (_, since) = get(addr, &format!("{base}&since_unix_ms=2000"));
    assert_eq!(since["points"], json!(expected[1..]));
    let (_, newest) = get(addr, &format!("{base}&limit=2"));
    assert_eq!(newest["points"], json!(expected[1..]));
    let (_, none) = get(addr, "/api/hosts/node-1/timeline?rnic=rnic9&endpoint=gpu4");
    assert_eq!(none["points"], json!([]));
    assert_eq!(
        get(addr, "/api/hosts/node-9/timeline?rnic=rnic2&endpoint=gpu4").0,
        404
    );
    assert_eq!(get(addr, "/api/hosts/node-1/timeline?rnic=rnic2").0, 400);
    assert_eq!(get(addr, &format!("{base}&limit=0")).0, 400);
    assert_eq!(get(addr, &format!("{base}&since_unix_ms=soon")).0, 400);
    let timeline: Timeline = typed(&answer);
    assert_eq!(
        timeline.points.iter().map(|p| p.run_id).collect::<Vec<_>>(),
        [1, 2, 3]
    );

    // The pages and their assets, from the binary, under a policy that allows nothing
    // from elsewhere.
    for (path, kind, marker) in [
        ("/", "text/html", r#"data-page="overview""#),
        ("/hosts/node-1", "text/html", r#"data-page="host""#),
        ("/ui/app.js", "text/javascript", "function heatmap"),
        ("/ui/app.css", "text/css", "--abnormal"),
    ] {
        let (status, content_type, csp, body) = fetch(addr, path, "text/html");
        assert_eq!(status, 200, "{path}");
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        assert!(csp.contains("default-src 'none'"), "{path}: {csp}");
        assert!(body.contains(marker), "{path}");
    }
}

/// The agent's API under `/api/hosts`: the collector's JSON, from the agent's own runs.
#[test]
fn the_agent_answers_for_its_host_in_the_collectors_shape() {
    let dir = temp_dir("ui-agent-api");
    let db = dir.join("runs.db");
    let mut a = agent(&db, &["--time-scale", "600", "--inject", FAILURE], &[]);
    a.wait_for_runs(2, Duration::from_secs(60));
    let addr = a.addr;
    let (status, hosts) = get(addr, "/api/hosts");
    assert_eq!(status, 200);
    let hosts = hosts.as_array().unwrap();
    assert_eq!(hosts.len(), 1);
    assert_eq!(hosts[0]["host"], "dgx-a100");
    assert_eq!(hosts[0]["kind"], "dgx-a100");
    assert_eq!(hosts[0]["healthy"], false);
    assert_eq!(hosts[0]["causes"], json!(["link_failure"]));
    assert!(hosts[0]["runs"].as_u64().unwrap() >= 2);
    assert!(hosts[0]["last_run_unix_ms"].as_i64().unwrap() > 0);

    let (status, runs) = get(addr, "/api/hosts/dgx-a100/runs?limit=2");
    assert_eq!(status, 200);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(
        runs[0]["id"].as_i64() > runs[1]["id"].as_i64(),
        "newest first"
    );
    for run in runs {
        let (_, stored) = get(addr, &format!("/api/runs/{}", run["id"]));
        let mut expected = stored["report"].clone();
        expected["id"] = stored["id"].clone();
        expected["trigger"] = stored["trigger"].clone();
        expected["started_unix_ms"] = stored["started_unix_ms"].clone();
        assert_eq!(run, &expected);
    }

    let (status, timeline) = get(
        addr,
        "/api/hosts/dgx-a100/timeline?rnic=rnic2&endpoint=gpu4",
    );
    assert_eq!(status, 200);
    assert_eq!(timeline["host"], "dgx-a100");
    let points = timeline["points"].as_array().unwrap();
    assert!(points.len() >= 2);
    for pair in points.windows(2) {
        assert!(
            pair[0]["run_id"].as_i64() < pair[1]["run_id"].as_i64(),
            "oldest first"
        );
    }
    for p in points {
        let (_, stored) = get(addr, &format!("/api/runs/{}", p["run_id"]));
        let expected = point(
            stored["id"].as_i64().unwrap(),
            stored["started_unix_ms"].as_i64().unwrap(),
            &stored["report"],
            "rnic2",
            "gpu4",
        );
        assert_eq!(p, &expected);
        assert_eq!(p["status"], "abnormal");
    }
    assert_eq!(get(addr, "/api/hosts/node-9/runs").0, 404);
    assert_eq!(
        get(addr, "/api/hosts/node-9/timeline?rnic=rnic2&endpoint=gpu4").0,
        404
    );
    assert_eq!(get(addr, "/api/hosts/dgx-a100/timeline?rnic=rnic2").0, 400);
    // The collector's types, the fields only a collector knows left out; the collector's
    // query checks and words, from the one implementation both serve.
    let (_, hosts) = get(addr, "/api/hosts");
    let hosts: Vec<HostSummary> = typed(&hosts);
    assert_eq!((hosts[0].kind_known, &hosts[0].rack), (None, &None));
    let (_, runs) = get(addr, "/api/hosts/dgx-a100/runs?limit=2");
    let runs: Vec<HostRun> = typed(&runs);
    assert!(runs
        .iter()
        .all(|r| r.envelope.kind_known.is_none() && !r.report.healthy));
    let (_, timeline) = get(
        addr,
        "/api/hosts/dgx-a100/timeline?rnic=rnic2&endpoint=gpu4",
    );
    let timeline: Timeline = typed(&timeline);
    assert!(timeline.points.len() >= 2);
    for (path, status, message) in [
        (
            "/api/hosts/dgx-a100/runs?limit=0",
            400,
            "limit: \"0\" is not a number from 1 to 1000",
        ),
        (
            "/api/hosts/dgx-a100/timeline?rnic=rnic2&endpoint=gpu4&limit=10001",
            400,
            "limit: \"10001\" is not a number from 1 to 10000",
        ),
        (
            "/api/hosts/dgx-a100/timeline?rnic=rnic2&endpoint=gpu4&since_unix_ms=soon",
            400,
            "since_unix_ms: \"soon\" is not a number from 0 to 9223372036854775807",
        ),
        (
            "/api/hosts/node-9/runs",
            404,
            "no host node-9: this agent watches dgx-a100",
        ),
    ] {
        assert_eq!(refused(addr, path), (status, message.to_owned()), "{path}");
    }
    // `hostping fleet` reads an agent as it reads a collector.
    let out = hostping(&[
        "fleet",
        "hosts",
        "--collector",
        &format!("http://{addr}"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "the host is unhealthy");
    // (The agent keeps running: its run count may have moved on since.)
    let cli: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let (_, api_hosts) = get(addr, "/api/hosts");
    let keys = |v: &Value| {
        v[0].as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&cli), keys(&api_hosts));
    for field in ["host", "kind", "healthy", "causes"] {
        assert_eq!(cli[0][field], api_hosts[0][field], "{field}");
    }

    // `/`: the page to a browser, the index to curl; the index stays at /api.
    let (status, content_type, _, page) = fetch(addr, "/", "text/html,application/xhtml+xml");
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(page.contains(r#"data-page="host""#));
    let (status, text) = http_get(addr, "/");
    assert_eq!(status, 200);
    assert!(
        text.contains("/api/status") && text.contains("/api/hosts"),
        "{text}"
    );
    assert_eq!(http_get(addr, "/api"), (200, text));
    a.signal(libc::SIGTERM);
    assert!(a.wait_output().status.success());
}

/// An agent of the fleet: `args` (the host), pushing to `collector` as `name`.
fn fleet_agent(dir: &Path, name: &str, token: &str, collector: &str, args: &[&str]) -> Agent {
    // Named by the token: a host name may hold any character.
    let db = dir.join(format!("agent-{token}.db"));
    let mut all = args.to_vec();
    all.extend([
        "--time-scale",
        "600",
        "--collector",
        collector,
        "--token",
        token,
        "--name",
        name,
    ]);
    agent_real(&db, &all)
}

/// Waits until the collector holds at least `runs` runs of each host.
fn wait_for_runs(addr: SocketAddr, runs: &[(&str, u64)]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, hosts) = get(addr, "/api/hosts");
        let count = |name: &str| {
            hosts
                .as_array()
                .unwrap()
                .iter()
                .find(|h| h["host"] == name)
                .and_then(|h| h["runs"].as_u64())
                .unwrap_or(0)
        };
        if runs.iter().all(|(name, n)| count(name) >= *n) {
            return hosts;
        }
        assert!(Instant::now() < deadline, "runs so far: {hosts}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The overview's rows: host, health and causes as drawn.
async fn rows(c: &Client) -> Vec<(String, String, Vec<String>)> {
    let v = js(
        c,
        "return [...document.querySelectorAll('#hosts tbody tr')].map(r => [
            r.querySelector('td a').textContent, r.dataset.health,
            [...r.querySelectorAll('[data-cause]')].map(b => b.dataset.cause)]);",
    )
    .await;
    serde_json::from_value(v).unwrap()
}

fn row_hosts(rows: &[(String, String, Vec<String>)]) -> BTreeSet<&str> {
    rows.iter().map(|r| r.0.as_str()).collect()
}

/// The heatmap's cells: (rnic, endpoint, status) and the computed background colour.
async fn cells(c: &Client) -> Vec<(String, String, String, (u8, u8, u8))> {
    let mut out = Vec::new();
    for cell in c
        .find_all(Locator::Css("#heatmap td[data-rnic]"))
        .await
        .unwrap()
    {
        let attr = |v: Option<String>| v.unwrap_or_default();
        out.push((
            attr(cell.attr("data-rnic").await.unwrap()),
            attr(cell.attr("data-endpoint").await.unwrap()),
            attr(cell.attr("data-status").await.unwrap()),
            rgb(&cell.css_value("background-color").await.unwrap()),
        ));
    }
    out
}

/// Every probed cell is coloured by its status (Hostping Fig. 8); returns the cells.
async fn check_heatmap_colours(c: &Client) -> Vec<(String, String, String, (u8, u8, u8))> {
    let cells = cells(c).await;
    assert!(!cells.is_empty());
    for (rnic, endpoint, status, colour) in &cells {
        let ok = match status.as_str() {
            "abnormal" => is_red(*colour),
            "normal" => is_green(*colour),
            "uncertain" => is_gray(*colour),
            _ => true,
        };
        assert!(ok, "{rnic}->{endpoint} {status} drawn in {colour:?}");
    }
    cells
}

#[test]
fn a_fleet_in_a_real_browser() {
    let Some(driver) = ChromeDriver::start() else {
        return;
    };
    let dir = temp_dir("ui-browser");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let hosts = [
        ("node-fail", "tok-fail-0123456789abcdef"),
        ("node-flap", "tok-flap-0123456789abcdef"),
        (MARKUP_HOST, "tok-ok-0123456789abcdef"),
    ];
    let collector = Collector::start(&pg, &tokens_file(&dir, &hosts), &[]);
    let addr = collector.addr;
    let url = format!("http://{addr}");
    // Racks where the agent can name its own (`--rack`, added beside this UI): the two
    // dgx-a100 hosts in r1, the other in r2.
    let racks = stdout(&hostping(&["agent", "--help"])).contains("--rack");
    let rack = |r: &'static str| if racks { vec!["--rack", r] } else { vec![] };
    let failing = fleet_agent(
        &dir,
        hosts[0].0,
        hosts[0].1,
        &url,
        &[&["--sim", "dgx-a100", "--inject", FAILURE][..], &rack("r1")].concat(),
    );
    let mut flapping = fleet_agent(
        &dir,
        hosts[1].0,
        hosts[1].1,
        &url,
        &[&["--sim", "dgx-a100", "--inject", FLAP][..], &rack("r1")].concat(),
    );
    let mut healthy = fleet_agent(
        &dir,
        hosts[2].0,
        hosts[2].1,
        &url,
        &[&["--sim", "amd-2s"][..], &rack("r2")].concat(),
    );
    // Ten runs of the flapping host (50 virtual minutes), a few of the others; then the
    // flapping and the healthy hosts stop, so what the pages show can be compared with the
    // API. The failing host goes on: its own page is read from its agent below.
    wait_for_runs(
        addr,
        &[("node-fail", 2), ("node-flap", 10), (MARKUP_HOST, 2)],
    );
    for a in [&mut flapping, &mut healthy] {
        a.signal(libc::SIGTERM);
    }
    for a in [flapping, healthy] {
        assert!(a.wait_output().status.success());
    }
    let (_, api_hosts) = get(addr, "/api/hosts");

    let runtime = common::postgres::runtime();
    runtime.block_on(async {
        // Tall enough for a host page's heatmap, timeline and topology in one screenshot.
        let c = driver.session(1280, 2000).await;

        // The overview: every host with its health and causes, as the API has them.
        c.goto(&format!("{url}/")).await.unwrap();
        wait_until(&c, "the hosts", "document.querySelectorAll('#hosts tbody tr').length === 3").await;
        let drawn = rows(&c).await;
        for h in api_hosts.as_array().unwrap() {
            let name = h["host"].as_str().unwrap();
            let row = drawn.iter().find(|r| r.0 == name).unwrap_or_else(|| panic!("no row {name}: {drawn:?}"));
            let health = h["health"].as_str().unwrap();
            assert_eq!(row.1, health, "{name}");
            let causes: Vec<String> = serde_json::from_value(h["causes"].clone()).unwrap();
            assert_eq!(row.2, causes, "{name}");
        }
        let by_name = |n: &str| drawn.iter().find(|r| r.0 == n).unwrap().clone();
        assert_eq!(by_name("node-fail").1, "unhealthy");
        assert!(by_name("node-fail").2.contains(&"link_failure".to_string()));
        assert!(by_name("node-flap").2.contains(&"link_flapping".to_string()), "{drawn:?}");
        // A fault-free amd-2s is healthy: the GPU links behind its root complex are crossed
        // only by latency-bound paths (Hostping 3.2.2), which judge them down to the loss
        // they could have shown (issue 38, 2; it was "inconclusive" before).
        assert_eq!(by_name(MARKUP_HOST).1, "healthy");
        assert!(by_name(MARKUP_HOST).2.is_empty());
        // The markup in a host name is text, not elements.
        assert_eq!(js(&c, "return document.querySelectorAll('#hosts b').length;").await, 0);
        // Racks: a column and a filter when the collector reports them, nothing otherwise.
        let rack_shown = js(&c, "return !document.getElementById('filter-rack-label').hidden;").await;
        assert_eq!(rack_shown, api_hosts[0].get("rack").is_some());
        screenshot(&c, "overview").await;
        if racks {
            c.goto(&format!("{url}/?rack=r2")).await.unwrap();
            wait_until(&c, "the rack filter", "document.querySelectorAll('#hosts tbody tr').length === 1").await;
            assert_eq!(row_hosts(&rows(&c).await), BTreeSet::from([MARKUP_HOST]));
            let filter = c.find(Locator::Id("filter-rack")).await.unwrap();
            filter.select_by_value("r1").await.unwrap();
            wait_until(&c, "the rack filter", "document.querySelectorAll('#hosts tbody tr').length === 2").await;
            assert_eq!(row_hosts(&rows(&c).await), BTreeSet::from(["node-fail", "node-flap"]));
        }

        // The cause filter, by its control: the URL follows.
        let cause = c.find(Locator::Id("filter-cause")).await.unwrap();
        cause.select_by_value("link_failure").await.unwrap();
        wait_until(&c, "the cause filter", "document.querySelectorAll('#hosts tbody tr').length === 1").await;
        assert_eq!(row_hosts(&rows(&c).await), BTreeSet::from(["node-fail"]));
        let address = c.current_url().await.unwrap();
        assert!(
            address.query_pairs().any(|(k, v)| k == "cause" && v == "link_failure"),
            "{address}"
        );
        // By the URL.
        c.goto(&format!("{url}/?cause=link_flapping")).await.unwrap();
        wait_until(&c, "the hosts", "document.querySelectorAll('#hosts tbody tr').length === 1").await;
        assert_eq!(row_hosts(&rows(&c).await), BTreeSet::from(["node-flap"]));
        assert_eq!(js(&c, "return document.getElementById('filter-cause').value;").await, "link_flapping");
        // The kind filter, by the URL and by its control.
        c.goto(&format!("{url}/?kind=amd-2s")).await.unwrap();
        wait_until(&c, "the hosts", "document.querySelectorAll('#hosts tbody tr').length === 1").await;
        assert_eq!(row_hosts(&rows(&c).await), BTreeSet::from([MARKUP_HOST]));
        let kind = c.find(Locator::Id("filter-kind")).await.unwrap();
        kind.select_by_value("dgx-a100").await.unwrap();
        wait_until(&c, "the kind filter", "document.querySelectorAll('#hosts tbody tr').length === 2").await;
        assert_eq!(row_hosts(&rows(&c).await), BTreeSet::from(["node-fail", "node-flap"]));

        // The host whose name is markup: its page (reached by its link) shows the name as
        // text.
        c.goto(&format!("{url}/")).await.unwrap();
        wait_until(&c, "the hosts", "document.querySelectorAll('#hosts tbody tr').length === 3").await;
        c.find(Locator::LinkText(MARKUP_HOST)).await.unwrap().click().await.unwrap();
        wait_until(&c, "the markup host's page", "document.querySelectorAll('#heatmap td[data-status]').length > 0").await;
        let name = c.find(Locator::Id("host-name")).await.unwrap().text().await.unwrap();
        assert!(name.starts_with(MARKUP_HOST), "{name}");
        assert_eq!(js(&c, "return document.querySelectorAll('#host-name b').length;").await, 0);
        assert_eq!(c.title().await.unwrap(), format!("{MARKUP_HOST} · hostping"));

        // The failing host, reached from the overview: its failed paths red, the others
        // green, the link red on the topology, and the diagnosis naming it.
        c.goto(&format!("{url}/")).await.unwrap();
        wait_until(&c, "the hosts", "document.querySelectorAll('#hosts tbody tr').length === 3").await;
        c.find(Locator::LinkText("node-fail")).await.unwrap().click().await.unwrap();
        wait_until(&c, "the heatmap", "document.querySelectorAll('#heatmap td[data-status]').length >= 40").await;
        let cells = check_heatmap_colours(&c).await;
        let colour_of = |r: &str, e: &str| cells.iter().find(|x| x.0 == r && x.1 == e).unwrap().3;
        for rnic in ["rnic0", "rnic1", "rnic2", "rnic3"] {
            assert!(is_red(colour_of(rnic, "gpu4")), "{rnic}->gpu4: {:?}", colour_of(rnic, "gpu4"));
        }
        assert!(is_green(colour_of("rnic0", "gpu0")));
        assert!(is_green(colour_of("rnic3", "mem1")));
        let diagnoses = c.find(Locator::Id("diagnoses")).await.unwrap().text().await.unwrap();
        assert!(diagnoses.contains("Link failure"), "{diagnoses}");
        assert!(diagnoses.contains(FAILED_LINK), "{diagnoses}");
        let link = c.find(Locator::Css(&format!("#topology line[data-link='{FAILED_LINK}']"))).await.unwrap();
        assert!(is_red(rgb(&link.css_value("stroke").await.unwrap())));
        let healthy_link = c.find(Locator::Css("#topology line[data-link='rnic0--lsw0']")).await.unwrap();
        assert!(is_green(rgb(&healthy_link.css_value("stroke").await.unwrap())));
        // The values on hover (and for screen readers).
        let cell = c.find(Locator::Css("#heatmap td[data-rnic='rnic2'][data-endpoint='gpu4'] button")).await.unwrap();
        let title = cell.attr("title").await.unwrap().unwrap_or_default();
        assert!(title.starts_with("rnic2 to gpu4: abnormal; bandwidth "), "{title}");
        assert!(title.contains("(baseline "), "{title}");
        // The baselines are the collector's judgement (GET .../baseline): every path against
        // the host's own baseline (a simulated agent reports one), and the failed path's
        // verdict with it.
        let note = c.find(Locator::Id("baseline-note")).await.unwrap().text().await.unwrap();
        assert_eq!(note, "Baselines from the collector: 40 own.");
        assert!(title.contains("baseline: own"), "{title}");
        assert!(title.contains("verdict abnormal"), "{title}");
        assert_eq!(cell.attr("aria-label").await.unwrap().as_deref(), Some(title.as_str()));
        wait_until(&c, "the timeline", "document.querySelectorAll('#timeline circle').length > 0").await;
        screenshot(&c, "host-link-failure").await;

        // The flapping host: choose the path over the channel in the matrix; its drawn
        // bandwidth alternates between healthy and degraded run after run (Hostping Fig. 9).
        c.goto(&format!("{url}/hosts/node-flap")).await.unwrap();
        wait_until(&c, "the heatmap", "document.querySelectorAll('#heatmap td[data-status]').length >= 40").await;
        check_heatmap_colours(&c).await;
        c.find(Locator::Css("#heatmap td[data-rnic='rnic2'][data-endpoint='mem1'] button"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_until(&c, "the chosen path's timeline",
            "document.querySelector('#timeline svg[data-rnic=\"rnic2\"][data-endpoint=\"mem1\"]') !== null").await;
        let drawn: Vec<(f64, f64)> = serde_json::from_value(js(&c,
            "return [...document.querySelectorAll('#timeline g[data-metric=bandwidth] circle')]
                .map(c => [Number(c.dataset.value), Number(c.getAttribute('cy'))]);").await).unwrap();
        assert!(drawn.len() >= 10, "{drawn:?}");
        // Drawn where their values say: more bandwidth, higher on the chart (never lower;
        // positions are rounded to 0.1 px).
        for a in &drawn {
            for b in &drawn {
                if a.0 > b.0 {
                    assert!(a.1 <= b.1, "{a:?} drawn below {b:?}");
                }
                if a.0 > 1.2 * b.0 {
                    assert!(a.1 < b.1, "{a:?} not drawn above {b:?}");
                }
            }
        }
        let top = drawn.iter().map(|p| p.0).fold(0.0, f64::max);
        let low: Vec<bool> = drawn.iter().map(|p| p.0 < 0.8 * top).collect();
        let switches = low.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(low.iter().any(|l| *l) && low.iter().any(|l| !*l), "{drawn:?}");
        assert!(switches >= 3, "{switches} switches in {drawn:?}");
        let diagnoses = c.find(Locator::Id("diagnoses")).await.unwrap().text().await.unwrap();
        assert!(diagnoses.contains("Link flapping"), "{diagnoses}");
        assert!(diagnoses.contains(FLAPPING_LINK), "{diagnoses}");
        assert!(c.current_url().await.unwrap().as_str().ends_with("?rnic=rnic2&endpoint=mem1"));
        screenshot(&c, "host-flapping").await;

        // The failing host's agent serves its own page from its own database.
        c.goto(&format!("http://{}/", failing.addr)).await.unwrap();
        wait_until(&c, "the agent's heatmap", "document.querySelectorAll('#heatmap td[data-status]').length >= 40").await;
        let name = c.find(Locator::Id("host-name")).await.unwrap().text().await.unwrap();
        // The agent names its host as the fleet does (--name), not by its model.
        assert!(name.starts_with("node-fail"), "{name}");
        assert_eq!(js(&c, "return document.getElementById('back').hidden;").await, true);
        let cells = check_heatmap_colours(&c).await;
        let red = cells.iter().find(|x| x.0 == "rnic2" && x.1 == "gpu4").unwrap().3;
        assert!(is_red(red), "{red:?}");
        let diagnoses = c.find(Locator::Id("diagnoses")).await.unwrap().text().await.unwrap();
        assert!(diagnoses.contains(FAILED_LINK), "{diagnoses}");
        wait_until(&c, "the timeline", "document.querySelectorAll('#timeline circle').length > 0").await;
        screenshot(&c, "agent").await;
        c.close().await.unwrap();
    });
    drop(failing);
}

/// A report that could not judge every link (DESIGN 4.3's `inconclusive`): a real healthy
/// report of the virtual host whose paths through `link` had no baseline, as a check with
/// a baseline missing them reports it: those paths uncertain, `healthy` false, and
/// `not_judged` saying what and why.
fn inconclusive_report(link: &str) -> Value {
    let mut report = sim_report(&[]);
    let endpoint = link.split("--").next().unwrap().to_owned();
    let mut unjudged = Vec::new();
    for p in report["paths"].as_array_mut().unwrap() {
        if p["endpoint"] == endpoint.as_str() {
            p["status"] = "uncertain".into();
            p["baseline_latency_us"] = Value::Null;
            p["baseline_bandwidth_gbps"] = Value::Null;
            unjudged.push(format!("{}->{}", p["rnic"].as_str().unwrap(), endpoint));
        }
    }
    for l in report["links"].as_array_mut().unwrap() {
        if l["id"] == link {
            l["status"] = "uncertain".into();
        }
    }
    report["healthy"] = false.into();
    report["inconclusive"] = true.into();
    report["not_judged"] = json!([{"reason": "no_baseline", "paths": unjudged, "links": [link],
        "detail": "the baseline has no entry for these paths: record it again"}]);
    report
}

/// The script that finds the health badge of `host`'s row on the overview.
fn badge(host: &str) -> String {
    format!(
        "[...document.querySelectorAll('#hosts tbody tr')].find(r => r.dataset.host === '{host}').querySelector('.badge')"
    )
}

/// The background colour of `host`'s health badge on the overview.
async fn badge_colour(c: &Client, host: &str) -> (u8, u8, u8) {
    let css = js(
        c,
        &format!("return getComputedStyle({}).backgroundColor;", badge(host)),
    )
    .await;
    rgb(css.as_str().unwrap())
}

/// The bluish colour of an inconclusive host: neither a verdict's green or red, nor the gray
/// of a stale host.
fn is_blue((r, g, b): (u8, u8, u8)) -> bool {
    b > 150 && r < 90 && g < 130
}

#[test]
fn an_inconclusive_host_is_neither_healthy_nor_unhealthy_in_the_browser() {
    let Some(driver) = ChromeDriver::start() else {
        return;
    };
    let dir = temp_dir("ui-inconclusive");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let hosts = [
        ("node-ok", "tok-ok-0123456789abcdef"),
        ("node-unjudged", "tok-unjudged-0123456789ab"),
        ("node-fail", "tok-fail-0123456789abcdef"),
    ];
    let collector = Collector::start(&pg, &tokens_file(&dir, &hosts), &[]);
    let addr = collector.addr;
    let now = model::time::unix_ms(std::time::SystemTime::now());
    let reports = [
        sim_report(&[]),
        inconclusive_report(FAILED_LINK),
        sim_report(&[FAILURE]),
    ];
    for ((host, token), report) in hosts.iter().zip(&reports) {
        let run = json!({"host": host, "id": 1, "trigger": "idle", "started_unix_ms": now,
                         "report": report});
        assert_eq!(post_run(addr, token, &run), 201, "{host}");
    }
    let (_, api_hosts) = get(addr, "/api/hosts");
    let health: Vec<(&str, &str)> = api_hosts
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["host"].as_str().unwrap(), h["health"].as_str().unwrap()))
        .collect();
    assert_eq!(
        health,
        [
            ("node-fail", "unhealthy"),
            ("node-ok", "healthy"),
            ("node-unjudged", "inconclusive")
        ]
    );
    let url = format!("http://{addr}");

    let runtime = common::postgres::runtime();
    runtime.block_on(async {
        let c = driver.session(1280, 1600).await;
        c.goto(&format!("{url}/")).await.unwrap();
        wait_until(
            &c,
            "the hosts",
            "document.querySelectorAll('#hosts tbody tr').length === 3",
        )
        .await;
        let drawn = rows(&c).await;
        let health_of = |n: &str| drawn.iter().find(|r| r.0 == n).unwrap().1.clone();
        assert_eq!(health_of("node-unjudged"), "inconclusive", "{drawn:?}");
        assert_eq!(health_of("node-ok"), "healthy");
        assert_eq!(health_of("node-fail"), "unhealthy");
        // Its badge: the word, in a colour of its own.
        let word = js(
            &c,
            &format!("return {}.textContent;", badge("node-unjudged")),
        )
        .await;
        assert_eq!(word, "inconclusive");
        let unjudged = badge_colour(&c, "node-unjudged").await;
        assert!(is_blue(unjudged), "{unjudged:?}");
        assert!(is_green(badge_colour(&c, "node-ok").await));
        assert!(is_red(badge_colour(&c, "node-fail").await));
        let summary = c
            .find(Locator::Id("summary"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            summary.starts_with("3 hosts: 1 healthy, 1 unhealthy, 1 inconclusive, 0 stale"),
            "{summary}"
        );
        screenshot(&c, "overview-inconclusive").await;
        // The health filter, by the URL and by its control.
        c.goto(&format!("{url}/?health=inconclusive"))
            .await
            .unwrap();
        wait_until(
            &c,
            "the health filter",
            "document.querySelectorAll('#hosts tbody tr').length === 1",
        )
        .await;
        assert_eq!(
            row_hosts(&rows(&c).await),
            BTreeSet::from(["node-unjudged"])
        );
        let filter = c.find(Locator::Id("filter-health")).await.unwrap();
        filter.select_by_value("healthy").await.unwrap();
        wait_until(
            &c,
            "the health filter",
            "document.querySelectorAll('#hosts tbody tr').length === 1",
        )
        .await;
        assert_eq!(row_hosts(&rows(&c).await), BTreeSet::from(["node-ok"]));

        // Its page: the word in the heading, and what was not judged, with why.
        c.goto(&format!("{url}/hosts/node-unjudged")).await.unwrap();
        wait_until(
            &c,
            "the not-judged list",
            "document.querySelectorAll('#not-judged li').length === 1",
        )
        .await;
        let heading = js(
            &c,
            "return document.querySelector('#host-name .badge').textContent;",
        )
        .await;
        assert_eq!(heading, "inconclusive");
        let item = c.find(Locator::Css("#not-judged li")).await.unwrap();
        assert_eq!(
            item.attr("data-reason").await.unwrap().as_deref(),
            Some("no_baseline")
        );
        let text = item.text().await.unwrap();
        assert!(
            text.starts_with("No baseline: link gpu4--lsw4; paths rnic0->gpu4")
                && text.contains("record it again"),
            "{text}"
        );
        let diagnoses = c
            .find(Locator::Id("diagnoses"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            diagnoses.contains("some links could not be judged"),
            "{diagnoses}"
        );
        screenshot(&c, "host-inconclusive").await;
        // A judged host's page has no such section.
        c.goto(&format!("{url}/hosts/node-ok")).await.unwrap();
        wait_until(
            &c,
            "the heatmap",
            "document.querySelectorAll('#heatmap td[data-status]').length > 0",
        )
        .await;
        assert_eq!(
            js(
                &c,
                "return document.getElementById('not-judged-section').hidden;"
            )
            .await,
            true
        );
        c.close().await.unwrap();
    });
}
