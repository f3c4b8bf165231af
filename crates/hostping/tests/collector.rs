//! `hostping collector` on a real PostgreSQL (Debian's `postgresql` package): a throw-away
//! cluster per test in a temporary folder (as `nobody` when the tests run as root), the
//! collector binary in front of it, and agents' runs pushed over HTTP: read back exactly,
//! every refusal with nothing stored, resends stored once, and a `kill -9` of the collector
//! mid-ingest losing no run it acknowledged.
//!
//! Skipped (with a message) when PostgreSQL's server binaries are missing, unless
//! `HOSTPING_REQUIRE_POSTGRES` is set, as `./test.sh` does after installing them.

mod common;

use common::postgres::{causes, client, free_port, get, post, Collector, Postgres};
use common::{agent, sim_report, temp_dir, wait_until};
use fleet_api::read::{ErrorBody, HostRun, HostSummary};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const TOKEN_1: &str = "tok-node-1-0123456789abcdef";
const TOKEN_2: &str = "tok-node-2-0123456789abcdef";

/// The tokens file, with a comment line as operators write them.
fn tokens_file(dir: &Path) -> PathBuf {
    let file = dir.join("tokens");
    std::fs::write(
        &file,
        format!("# host token\nnode-1 {TOKEN_1}\nnode-2 {TOKEN_2}\n"),
    )
    .unwrap();
    file
}

fn run(host: &str, id: i64, started: i64, report: &Value) -> Value {
    json!({"host": host, "id": id, "trigger": "idle", "started_unix_ms": started,
           "report": report})
}

fn body(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

/// `answer` read into the read API's type for it (`fleet_api::read`, what `hostping fleet`
/// reads) and written back: the same JSON, so the type holds every field the collector sent.
fn typed<T: Serialize + DeserializeOwned>(answer: &Value) -> T {
    let t: T = serde_json::from_value(answer.clone()).unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(&serde_json::to_value(&t).unwrap(), answer);
    t
}

/// The read API's view of a stored run: the report plus the envelope's fields.
fn as_read_back(run: &Value, kind_known: bool) -> Value {
    let mut r = run["report"].clone();
    let map = r.as_object_mut().unwrap();
    map.insert("id".into(), run["id"].clone());
    map.insert("trigger".into(), run["trigger"].clone());
    map.insert("started_unix_ms".into(), run["started_unix_ms"].clone());
    map.insert("kind_known".into(), kind_known.into());
    r
}

#[test]
fn runs_are_stored_and_read_back_exactly() {
    let dir = temp_dir("collector-ingest");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let healthy = sim_report(&[]);
    let faulty = sim_report(&["degrade:gpu4--lsw4:0.3"]);
    assert!(!causes(&faulty).is_empty(), "{faulty}");
    let mut unknown = healthy.clone();
    unknown["host"] = "custom-box".into();
    let first = run("node-1", 1, 1_000, &healthy);
    let second = run("node-1", 2, 2_000, &faulty);
    let other = run("node-2", 7, 1_500, &unknown);
    for (r, token) in [(&first, TOKEN_1), (&second, TOKEN_1), (&other, TOKEN_2)] {
        let (status, answer) = post(collector.addr, Some(token), &body(r));
        assert_eq!(status, 201, "{answer}");
        assert_eq!(answer["duplicate"], false);
        assert_eq!(answer["id"], r["id"]);
    }

    let (status, hosts) = get(collector.addr, "/api/hosts");
    assert_eq!(status, 200);
    assert_eq!(
        hosts,
        json!([
            {"host": "node-1", "kind": "dgx-a100", "kind_known": true, "healthy": false,
             "last_run_unix_ms": 2_000, "runs": 2, "causes": causes(&faulty), "rack": null,
             "health": "unhealthy", "inconclusive": false},
            // A healthy run of 1970 is too old to speak for its host.
            {"host": "node-2", "kind": "custom-box", "kind_known": false, "healthy": true,
             "last_run_unix_ms": 1_500, "runs": 1, "causes": [], "rack": null,
             "health": "stale", "inconclusive": false},
        ])
    );
    let (status, runs) = get(collector.addr, "/api/hosts/node-1/runs");
    assert_eq!(status, 200);
    assert_eq!(
        runs,
        json!([as_read_back(&second, true), as_read_back(&first, true)])
    );
    let (_, runs) = get(collector.addr, "/api/hosts/node-1/runs?limit=1");
    assert_eq!(runs, json!([as_read_back(&second, true)]));
    let (_, runs) = get(collector.addr, "/api/hosts/node-2/runs?limit=5");
    assert_eq!(runs, json!([as_read_back(&other, false)]));
    assert_eq!(get(collector.addr, "/api/hosts/node-9/runs").0, 404);
    assert_eq!(get(collector.addr, "/api/hosts/node-1/runs?limit=0").0, 400);
    assert_eq!(get(collector.addr, "/api/hosts/node-1/runs?limit=x").0, 400);
    // The answers are the read API's types, whole; refusals say why in its error body.
    let hosts: Vec<HostSummary> = typed(&hosts);
    assert_eq!(
        hosts
            .iter()
            .map(|h| (h.host.as_str(), h.kind_known, h.rack.clone()))
            .collect::<Vec<_>>(),
        [
            ("node-1", Some(true), Some(None)),
            ("node-2", Some(false), Some(None))
        ]
    );
    let (_, runs) = get(collector.addr, "/api/hosts/node-1/runs");
    let runs: Vec<HostRun> = typed(&runs);
    assert_eq!(
        runs.iter()
            .map(|r| (r.envelope.id, r.envelope.kind_known, r.report.healthy))
            .collect::<Vec<_>>(),
        [(2, Some(true), false), (1, Some(true), true)]
    );
    for (path, status, message) in [
        ("/api/hosts/node-9/runs", 404, "no host node-9"),
        (
            "/api/hosts/node-1/runs?limit=0",
            400,
            "limit: \"0\" is not a number from 1 to 1000",
        ),
    ] {
        let (code, body) = get(collector.addr, path);
        assert_eq!(
            (code, typed::<ErrorBody>(&body).error),
            (status, message.to_owned())
        );
    }

    // The tables the queries use hold every path, link and diagnosis of the reports.
    let len = |r: &Value, k: &str| r[k].as_array().unwrap().len() as i64;
    let all = [&healthy, &faulty, &unknown];
    assert_eq!(pg.paths(), all.iter().map(|r| len(r, "paths")).sum::<i64>());
    assert_eq!(pg.links(), all.iter().map(|r| len(r, "links")).sum::<i64>());
    assert_eq!(pg.count("diagnoses"), len(&faulty, "diagnoses"));
    assert_eq!(
        pg.scalar(
            "SELECT string_agg(DISTINCT s, ',') FROM run_links l JOIN runs r ON r.id = l.run_id,
                    unnest(l.status) s
             WHERE r.agent_run_id = 2 AND s <> 'normal'"
        ),
        "abnormal"
    );
    let versions = pg.scalar("SELECT string_agg(version::text, ',') FROM schema_migrations");
    assert_eq!(versions, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
}

/// Posts a body over the collector's limit on a bare socket; the answer's status. The
/// collector answers 413 once it has read `--max-body` bytes and closes the connection with
/// the rest unread, so the kernel may reset it while the client still writes: an HTTP client
/// that stops at the failed write never reads the answer, which already waits in its socket.
fn post_oversized(addr: std::net::SocketAddr, token: &str, body: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let head = format!(
        "POST /api/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body); // may fail once the collector has answered
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer); // a reset after the answer ends the read
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok());
    status.unwrap_or_else(|| panic!("no HTTP answer to an oversized body: {answer:?}"))
}

#[test]
fn refused_runs_leave_nothing_behind() {
    let dir = temp_dir("collector-refusals");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &["--max-body", "200000"]);
    let good = run("node-1", 1, 1_000, &sim_report(&["degrade:gpu4--lsw4:0.3"]));
    let addr = collector.addr;
    assert_eq!(post(addr, None, &body(&good)).0, 401);
    assert_eq!(
        post(addr, Some("not-a-token-of-anyone"), &body(&good)).0,
        401
    );
    let (status, answer) = post(addr, Some(TOKEN_2), &body(&good));
    assert_eq!(status, 403, "{answer}");
    assert_eq!(
        answer["error"],
        "the token belongs to host node-2, not node-1"
    );
    let mut heavy = good.clone();
    heavy["report"]["padding"] = "x".repeat(300_000).into();
    assert_eq!(post_oversized(addr, TOKEN_1, &body(&heavy)), 413);
    assert_eq!(post(addr, Some(TOKEN_1), b"{\"host\": \"node-1\", ").0, 400);
    let mut bad_cause = good.clone();
    bad_cause["report"]["diagnoses"][0]["cause"] = "gremlins".into();
    let (status, answer) = post(addr, Some(TOKEN_1), &body(&bad_cause));
    assert_eq!(status, 400);
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .starts_with("report.diagnoses[0].cause"),
        "{answer}"
    );
    let mut no_paths = good.clone();
    no_paths["report"].as_object_mut().unwrap().remove("paths");
    assert_eq!(post(addr, Some(TOKEN_1), &body(&no_paths)).0, 400);
    let mut no_id = good.clone();
    no_id.as_object_mut().unwrap().remove("id");
    assert_eq!(post(addr, Some(TOKEN_1), &body(&no_id)).0, 400);
    let mut negative = good.clone();
    negative["started_unix_ms"] = (-5).into();
    assert_eq!(post(addr, Some(TOKEN_1), &body(&negative)).0, 400);

    assert_eq!(get(addr, "/api/hosts"), (200, json!([])));
    for table in ["hosts", "runs", "run_paths", "run_links", "diagnoses"] {
        assert_eq!(pg.count(table), 0, "{table}");
    }
    // The same run, correctly sent, is taken.
    assert_eq!(post(addr, Some(TOKEN_1), &body(&good)).0, 201);

    // The database gone: 503, so an agent keeps the run and retries.
    pg.stop();
    let (status, answer) = post(
        addr,
        Some(TOKEN_1),
        &body(&run("node-1", 2, 2_000, &good["report"])),
    );
    assert_eq!(status, 503, "{answer}");
}

#[test]
fn a_resent_run_is_stored_once() {
    let dir = temp_dir("collector-resend");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let r = run(
        "node-1",
        42,
        5_000,
        &sim_report(&["degrade:gpu4--lsw4:0.3"]),
    );
    let (status, first) = post(collector.addr, Some(TOKEN_1), &body(&r));
    assert_eq!(status, 201);
    let (status, again) = post(collector.addr, Some(TOKEN_1), &body(&r));
    assert_eq!(status, 200);
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["stored"], first["stored"]);
    // Resent by several connections at once (an agent retrying after a timeout while the
    // first attempt is still in flight): still one copy.
    let r = run("node-1", 43, 6_000, &r["report"]);
    let addr = collector.addr;
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| post(addr, Some(TOKEN_1), &body(&r)).0))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|&&s| s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|&&s| s == 200).count(),
        7,
        "{statuses:?}"
    );
    assert_eq!(pg.count("runs"), 2);
    let paths = r["report"]["paths"].as_array().unwrap().len() as i64;
    assert_eq!(pg.paths(), 2 * paths);
    assert_eq!(get(addr, "/api/hosts").1[0]["runs"], 2);
}

#[test]
fn kill_9_mid_ingest_loses_no_acknowledged_run() {
    let dir = temp_dir("collector-kill");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens = tokens_file(&dir);
    let mut collector = Collector::start(&pg, &tokens, &[]);
    let report = sim_report(&["degrade:gpu4--lsw4:0.3"]);
    let addr = collector.addr;
    // Four senders post runs as fast as they are answered until the collector dies under
    // them; each records the ids it was told were stored.
    let (acknowledged, attempted) = std::thread::scope(|s| {
        let senders: Vec<_> = (0..4i64)
            .map(|t| {
                let report = &report;
                s.spawn(move || {
                    let mut acked = Vec::new();
                    let mut tried = 0;
                    for i in 0.. {
                        let id = t * 1_000_000 + i;
                        let r = run("node-1", id, 1_000 + id, report);
                        let req = client()
                            .post(format!("http://{addr}/api/runs"))
                            .header("Authorization", format!("Bearer {TOKEN_1}"))
                            .send(&body(&r)[..]);
                        tried += 1;
                        match req {
                            Ok(resp) if resp.status().is_success() => acked.push(id),
                            _ => break,
                        }
                    }
                    (acked, tried)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        collector.kill(); // SIGKILL
        senders.into_iter().map(|h| h.join().unwrap()).fold(
            (Vec::new(), 0),
            |(mut a, t), (acked, tried)| {
                a.extend(acked);
                (a, t + tried)
            },
        )
    });
    assert!(
        acknowledged.len() >= 4,
        "too few runs before the kill: {}",
        acknowledged.len()
    );
    // The killed collector's last commits may still be finishing in the server.
    pg.wait_for_other_clients_to_leave();
    let stored = pg.count("runs");
    // Every acknowledged run is there; at most one per sender may have been committed
    // without its answer arriving.
    assert!(
        stored >= acknowledged.len() as i64,
        "{stored} < {}",
        acknowledged.len()
    );
    assert!(stored <= attempted as i64);
    for id in &acknowledged {
        assert_eq!(
            pg.scalar(&format!(
                "SELECT count(*) FROM runs WHERE agent_run_id = {id}"
            )),
            "1"
        );
    }
    // Nothing partial: every stored run has all its paths.
    let paths = report["paths"].as_array().unwrap().len() as i64;
    assert_eq!(pg.paths(), stored * paths);
    // A restarted collector takes the resends of the unacknowledged runs once.
    let collector = Collector::start(&pg, &tokens, &[]);
    let (status, _) = post(
        collector.addr,
        Some(TOKEN_1),
        &body(&run(
            "node-1",
            acknowledged[0],
            1_000 + acknowledged[0],
            &report,
        )),
    );
    assert_eq!(status, 200);
    assert_eq!(pg.count("runs"), stored);
}

/// The runs in the agent's database, oldest first.
fn agent_run_ids(db: &Path) -> Vec<i64> {
    let store = store::Store::open_read_only(db).unwrap();
    let mut ids: Vec<i64> = store
        .runs(&store::RunQuery {
            limit: 100_000,
            ..store::RunQuery::default()
        })
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    ids.sort();
    ids
}

#[test]
fn an_agent_delivers_every_run_once_across_outages_and_restarts() {
    let dir = temp_dir("collector-agent");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens = tokens_file(&dir);
    let listen = format!("127.0.0.1:{}", free_port());
    let url = format!("http://{listen}");
    let db = dir.join("runs.db");
    let args = [
        "--time-scale",
        "600",
        "--collector",
        &url,
        "--token",
        TOKEN_1,
        "--name",
        "node-1",
    ];
    // The collector is down: runs queue up; the agent is killed -9 and started again.
    let mut first = agent(&db, &args, &[]);
    first.wait_for_runs(2, Duration::from_secs(60));
    first.signal(libc::SIGKILL);
    let _ = first.wait_output();
    let mut second = agent(&db, &args, &[]);
    let before = agent_run_ids(&db).len();
    second.wait_for_runs(before + 2, Duration::from_secs(60));
    assert_eq!(
        pg.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'runs'"),
        "0"
    );

    // The collector comes up: the backlog arrives; it is killed -9 mid-stream and restarted.
    let mut collector = Collector::start_on(&pg, &tokens, &listen, &[]);
    wait_until("the backlog", Duration::from_secs(60), || {
        pg.count("runs") as usize >= before + 2
    });
    collector.kill();
    let queued = agent_run_ids(&db).len();
    second.wait_for_runs(queued + 2, Duration::from_secs(60));
    let collector = Collector::start_on(&pg, &tokens, &listen, &[]);
    wait_until("runs after the restart", Duration::from_secs(60), || {
        pg.count("runs") as usize >= queued + 2
    });
    second.signal(libc::SIGTERM);
    let out = second.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stderr.contains("sending runs to"), "{}", out.stderr);

    // Every run the agent stored is in the collector once, and nothing waits any more.
    let ids = agent_run_ids(&db);
    let stored = pg.scalar(
        "SELECT string_agg(agent_run_id::text, ',' ORDER BY agent_run_id) FROM runs r
         JOIN hosts h ON h.id = r.host_id WHERE h.name = 'node-1'",
    );
    let expected: Vec<String> = ids.iter().map(ToString::to_string).collect();
    assert_eq!(stored, expected.join(","));
    let outbox = store::Store::open_read_only(&db)
        .unwrap()
        .outbox_stats()
        .unwrap();
    assert_eq!(outbox.queued, 0);
    let (_, hosts) = get(collector.addr, "/api/hosts");
    assert_eq!(hosts[0]["host"], "node-1");
    assert_eq!(hosts[0]["kind"], "dgx-a100");
    assert_eq!(hosts[0]["runs"], ids.len());
}

/// A run of `host` from the agent database `instance`, in `rack`.
fn run_from(
    host: &str,
    instance: &str,
    rack: &str,
    id: i64,
    started: i64,
    report: &Value,
) -> Value {
    let mut r = run(host, id, started, report);
    r["instance"] = instance.into();
    r["rack"] = rack.into();
    r
}

#[test]
fn runs_are_keyed_by_instance_and_hosts_keep_a_summary() {
    let dir = temp_dir("collector-instance");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let addr = collector.addr;
    let healthy = sim_report(&[]);
    let faulty = sim_report(&["degrade:gpu4--lsw4:0.3"]);
    let a = "0123456789abcdef0123456789abcdef";
    let b = "fedcba9876543210fedcba9876543210";
    let first = run_from("node-1", a, "r1", 1, 1_000, &healthy);
    assert_eq!(post(addr, Some(TOKEN_1), &body(&first)).0, 201);
    // A true resend: same host, instance and id.
    let (status, again) = post(addr, Some(TOKEN_1), &body(&first));
    assert_eq!((status, &again["duplicate"]), (200, &json!(true)));
    // The agent's database was wiped: its run ids start from 1 again, under a new instance.
    let wiped = run_from("node-1", b, "r2", 1, 3_000, &faulty);
    let (status, answer) = post(addr, Some(TOKEN_1), &body(&wiped));
    assert_eq!((status, &answer["duplicate"]), (201, &json!(false)));
    // A backlog run of the first instance that started earlier arrives late: counted, but
    // the latest run (and its rack) stays the one that started last.
    let late = run_from("node-1", a, "r1", 2, 2_000, &healthy);
    assert_eq!(post(addr, Some(TOKEN_1), &body(&late)).0, 201);
    // An agent that sends no instance (older agents) is keyed by host and id alone.
    let old = run("node-2", 1, 500, &healthy);
    assert_eq!(post(addr, Some(TOKEN_2), &body(&old)).0, 201);
    assert_eq!(post(addr, Some(TOKEN_2), &body(&old)).0, 200);
    let mut bad = first.clone();
    bad["rack"] = "".into();
    assert_eq!(post(addr, Some(TOKEN_1), &body(&bad)).0, 400);
    bad["instance"] = "x".repeat(65).into();
    assert_eq!(post(addr, Some(TOKEN_1), &body(&bad)).0, 400);

    assert_eq!(
        get(addr, "/api/hosts").1,
        json!([
            {"host": "node-1", "kind": "dgx-a100", "kind_known": true, "healthy": false,
             "last_run_unix_ms": 3_000, "runs": 3, "causes": causes(&faulty), "rack": "r2",
             "health": "unhealthy", "inconclusive": false},
            {"host": "node-2", "kind": "dgx-a100", "kind_known": true, "healthy": true,
             "last_run_unix_ms": 500, "runs": 1, "causes": [], "rack": null,
             "health": "stale", "inconclusive": false},
        ])
    );
    assert_eq!(
        pg.scalar(
            "SELECT string_agg(instance || ':' || agent_run_id, ',' ORDER BY started_unix_ms)
             FROM runs"
        ),
        format!(":1,{a}:1,{a}:2,{b}:1")
    );
    // The summary columns agree with a count over the runs.
    assert_eq!(
        pg.scalar(
            "SELECT count(*) FROM hosts h
             WHERE h.runs <> (SELECT count(*) FROM runs r WHERE r.host_id = h.id)"
        ),
        "0"
    );
}

#[test]
fn a_wiped_agent_database_sends_new_runs_under_a_new_instance() {
    let dir = temp_dir("collector-wiped");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let url = format!("http://{}", collector.addr);
    let db = dir.join("runs.db");
    let args = |rack: &'static str| {
        [
            "--time-scale",
            "600",
            "--collector",
            &url,
            "--token",
            TOKEN_1,
            "--name",
            "node-1",
            "--rack",
            rack,
        ]
        .map(String::from)
    };
    let stored = |instance: &str| {
        pg.scalar(&format!(
            "SELECT count(*) FROM runs WHERE instance = '{instance}'"
        ))
        .parse::<usize>()
        .unwrap()
    };
    let first_args = args("r7");
    let mut first = agent(&db, &first_args.each_ref().map(String::as_str), &[]);
    first.wait_for_runs(3, Duration::from_secs(60));
    first.signal(libc::SIGTERM);
    assert!(first.wait_output().status.success());
    let old_instance = store::Store::open_read_only(&db)
        .unwrap()
        .instance_id()
        .unwrap();
    let old_ids = agent_run_ids(&db);
    wait_until("the first database's runs", Duration::from_secs(60), || {
        stored(&old_instance) == old_ids.len()
    });
    assert_eq!(get(collector.addr, "/api/hosts").1[0]["rack"], "r7");

    // Wiped: a new database numbers its runs from 1 again.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let second_args = args("r8");
    let mut second = agent(&db, &second_args.each_ref().map(String::as_str), &[]);
    second.wait_for_runs(2, Duration::from_secs(60));
    let new_instance = store::Store::open_read_only(&db)
        .unwrap()
        .instance_id()
        .unwrap();
    assert_ne!(new_instance, old_instance);
    assert_eq!(agent_run_ids(&db)[0], old_ids[0]);
    wait_until("the new database's runs", Duration::from_secs(60), || {
        stored(&new_instance) >= 2
    });
    second.signal(libc::SIGTERM);
    assert!(second.wait_output().status.success());
    let new_ids = agent_run_ids(&db);
    wait_until(
        "every run of the new database",
        Duration::from_secs(60),
        || stored(&new_instance) == new_ids.len(),
    );
    // Both series are there in full, each once; run 1 of each included.
    assert_eq!(stored(&old_instance), old_ids.len());
    assert_eq!(
        pg.scalar("SELECT count(*) FROM runs WHERE agent_run_id = 1"),
        "2"
    );
    let hosts = get(collector.addr, "/api/hosts").1;
    assert_eq!(hosts[0]["runs"], old_ids.len() + new_ids.len());
    assert_eq!(hosts[0]["rack"], "r8");
}

#[test]
fn a_database_of_the_first_schema_is_upgraded_with_its_runs() {
    let dir = temp_dir("collector-upgrade");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let healthy = sim_report(&[]);
    let faulty = sim_report(&["degrade:gpu4--lsw4:0.3"]);
    // The database as the first collector left it: schema 1, two runs of node-1.
    let runtime = common::postgres::runtime();
    runtime.block_on(async {
        let (mut client, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let applied = collector::schema::migrate_to(&mut client, 1).await.unwrap();
        assert_eq!(applied, [1]);
        client
            .execute(
                "INSERT INTO hosts (name, kind, kind_known) VALUES ('node-1', 'dgx-a100', true)",
                &[],
            )
            .await
            .unwrap();
        for (id, started, report) in [(1i64, 1_000i64, &healthy), (2, 2_000, &faulty)] {
            client
                .execute(
                    "INSERT INTO runs (host_id, agent_run_id, trigger, started_unix_ms, kind,
                                       kind_known, healthy, mode, report)
                     VALUES (1, $1, 'idle', $2, 'dgx-a100', true, $3, 'idle', $4)",
                    &[&id, &started, &report["healthy"].as_bool().unwrap(), report],
                )
                .await
                .unwrap();
        }
        client
            .execute(
                "INSERT INTO diagnoses (run_id, host_id, cause, links, rnic, evidence)
                 VALUES (2, 1, 'link_failure', '{gpu4--lsw4}', NULL, 'gpu4 below baseline')",
                &[],
            )
            .await
            .unwrap();
        // Schema 1 kept a row per path and per link (migration 4 folds them into arrays).
        client
            .batch_execute(
                "INSERT INTO paths VALUES
                     (1, 1, 1000, 'rnic0', 'gpu4', 2.5, 125.0, 'normal'),
                     (1, 1, 1000, 'rnic0', 'mem0', 2.1, 199.0, 'normal'),
                     (2, 1, 2000, 'rnic0', 'gpu4', 2.5, 76.0, 'abnormal'),
                     (2, 1, 2000, 'rnic0', 'mem0', NULL, NULL, 'uncertain');
                 INSERT INTO links VALUES (2, 'gpu4--lsw4', 'gpu_pcie', 'abnormal', 4),
                                          (2, 'rnic0--lsw0', 'rnic_pcie', 'normal', 0);",
            )
            .await
            .unwrap();
    });
    // A collector of this version migrates it: the summary columns are filled from the runs.
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let addr = collector.addr;
    assert_eq!(
        pg.scalar("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations"),
        "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"
    );
    // Migration 5 keeps the thresholds the latest stored run was judged with.
    assert_eq!(
        pg.scalar("SELECT latest_thresholds ->> 'abnormal_th' FROM hosts WHERE name = 'node-1'"),
        faulty["thresholds"]["abnormal_th"].to_string()
    );
    assert_eq!(
        get(addr, "/api/hosts").1,
        json!([{"host": "node-1", "kind": "dgx-a100", "kind_known": true, "healthy": false,
                "last_run_unix_ms": 2_000, "runs": 2, "causes": ["link_failure"],
                "rack": null, "health": "unhealthy", "inconclusive": false}])
    );
    assert_eq!((pg.paths(), pg.links()), (4, 2));
    let points = |endpoint: &str| {
        get(
            addr,
            &format!("/api/hosts/node-1/timeline?rnic=rnic0&endpoint={endpoint}"),
        )
        .1["points"]
            .clone()
    };
    assert_eq!(
        points("gpu4"),
        json!([
            {"run_id": 1, "started_unix_ms": 1000, "latency_us": 2.5, "bandwidth_gbps": 125.0,
             "status": "normal"},
            {"run_id": 2, "started_unix_ms": 2000, "latency_us": 2.5, "bandwidth_gbps": 76.0,
             "status": "abnormal"}
        ])
    );
    assert_eq!(points("mem0")[1]["status"], "uncertain");
    assert_eq!(points("mem0")[1]["bandwidth_gbps"], Value::Null);
    // An old agent's resend (no instance) is still a resend; a new database's run 2 is new.
    let resend = run("node-1", 2, 2_000, &faulty);
    assert_eq!(post(addr, Some(TOKEN_1), &body(&resend)).0, 200);
    let wiped = run_from(
        "node-1",
        "0123456789abcdef0123456789abcdef",
        "r1",
        2,
        3_000,
        &healthy,
    );
    assert_eq!(post(addr, Some(TOKEN_1), &body(&wiped)).0, 201);
    let hosts = get(addr, "/api/hosts").1;
    assert_eq!(
        (&hosts[0]["runs"], &hosts[0]["healthy"], &hosts[0]["rack"]),
        (&json!(3), &json!(true), &json!("r1"))
    );
    let (_, runs) = get(addr, "/api/hosts/node-1/runs");
    assert_eq!(runs.as_array().unwrap().len(), 3);
}

/// A row of `host_samples`: seq, endpoints, latencies, bandwidths.
type SampleSet = (i64, Vec<String>, Vec<f64>, Vec<f64>);

#[test]
fn migration_4_turns_rings_into_sample_sets_and_keeps_reports_as_json_with_lz4() {
    let dir = temp_dir("collector-upgrade-4");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let runtime = common::postgres::runtime();
    let sets: Vec<SampleSet> = runtime.block_on(async {
        let (mut client, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let schema = collector::schema::migrate_to;
        assert_eq!(schema(&mut client, 3).await.unwrap(), [1, 2, 3]);
        // Schema 3's rings: one row per host and path, the newest value last.
        client
            .batch_execute(
                "INSERT INTO hosts (name, kind, kind_known) VALUES ('node-1', 'dgx-a100', true);
                 INSERT INTO host_paths VALUES
                     (1, 'rnic0', 'mem0', '{1,2,3}', '{10,20,30}'),
                     (1, 'rnic0', 'gpu0', '{5}', '{50}');
                 INSERT INTO runs (host_id, agent_run_id, trigger, started_unix_ms, kind,
                                   kind_known, healthy, mode, report)
                 VALUES (1, 7, 'idle', 0, 'dgx-a100', true, true, 'full',
                         '{\"host\": \"dgx-a100\", \"paths\": [1.5, 2]}');",
            )
            .await
            .unwrap();
        assert_eq!(schema(&mut client, 4).await.unwrap(), [4]);
        client
            .query(
                "SELECT seq, endpoint, latency_us, bandwidth_gbps FROM host_samples
                 WHERE host_id = 1 ORDER BY seq",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    });
    // The i-th newest values of every path make the set numbered -i, oldest first.
    assert_eq!(
        sets,
        vec![
            (-2, vec!["mem0".to_owned()], vec![1.0], vec![10.0]),
            (-1, vec!["mem0".to_owned()], vec![2.0], vec![20.0]),
            (
                0,
                vec!["gpu0".to_owned(), "mem0".to_owned()],
                vec![5.0, 3.0],
                vec![50.0, 30.0]
            ),
        ]
    );
    // A report stored as JSONB comes through as the same JSON, now in a json column.
    assert_eq!(
        pg.scalar("SELECT pg_typeof(report)::text || ' ' || report::text FROM runs"),
        r#"json {"host": "dgx-a100", "paths": [1.5, 2]}"#
    );
    // Debian's PostgreSQL is built with LZ4: the reports use it.
    assert_eq!(
        pg.scalar(
            "SELECT attcompression::text FROM pg_attribute
             WHERE attrelid = 'runs'::regclass AND attname = 'report'"
        ),
        "l"
    );
}

/// A report that found nothing wrong but could not judge every link (DESIGN 4.3): a real
/// healthy report of the virtual host whose paths to `endpoint` had no baseline.
fn inconclusive_report(endpoint: &str) -> Value {
    let mut report = sim_report(&[]);
    let mut unjudged = Vec::new();
    for p in report["paths"].as_array_mut().unwrap() {
        if p["endpoint"] == endpoint {
            p["status"] = "uncertain".into();
            unjudged.push(format!("{}->{endpoint}", p["rnic"].as_str().unwrap()));
        }
    }
    report["healthy"] = false.into();
    report["inconclusive"] = true.into();
    report["not_judged"] = json!([{"reason": "no_baseline", "paths": unjudged,
        "detail": "the baseline has no entry for these paths"}]);
    report
}

/// `hostping fleet ARGS --collector URL`: exit status, stdout, stderr.
fn fleet(addr: std::net::SocketAddr, args: &[&str]) -> (i32, String, String) {
    let url = format!("http://{addr}");
    let out = common::hostping(&[&["fleet", "--collector", &url][..], args].concat());
    (
        out.status.code().unwrap(),
        common::stdout(&out),
        common::stderr(&out),
    )
}

#[test]
fn an_inconclusive_host_is_counted_apart_and_fleet_exits_3() {
    let dir = temp_dir("collector-inconclusive");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let addr = collector.addr;
    let now = model::time::unix_ms(std::time::SystemTime::now());
    let unjudged = inconclusive_report("gpu4");
    // A report that says healthy and inconclusive at once is outside the contract.
    let mut contradictory = unjudged.clone();
    contradictory["healthy"] = true.into();
    let (status, answer) = post(
        addr,
        Some(TOKEN_2),
        &body(&run("node-2", 1, now, &contradictory)),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .starts_with("report.healthy: must be false when report.inconclusive is true"),
        "{answer}"
    );
    assert_eq!(pg.count("runs"), 0);
    for (host, token, report) in [
        ("node-1", TOKEN_1, &unjudged),
        ("node-2", TOKEN_2, &sim_report(&[])),
    ] {
        let (status, answer) = post(addr, Some(token), &body(&run(host, 1, now, report)));
        assert_eq!(status, 201, "{answer}");
    }
    assert_eq!(
        pg.scalar("SELECT string_agg(inconclusive::text, ',' ORDER BY id) FROM runs"),
        "true,false"
    );
    let (_, hosts) = get(addr, "/api/hosts");
    let health: Vec<(&Value, &Value, &Value)> = hosts
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (&h["healthy"], &h["inconclusive"], &h["health"]))
        .collect();
    assert_eq!(
        health,
        [
            (&json!(false), &json!(true), &json!("inconclusive")),
            (&json!(true), &json!(false), &json!("healthy"))
        ]
    );
    let typed_hosts: Vec<HostSummary> = typed(&hosts);
    assert_eq!(typed_hosts[0].inconclusive, Some(true));
    // Counted apart: neither healthy nor unhealthy.
    let (_, status) = get(addr, "/api/fleet/status");
    assert_eq!(
        (
            &status["hosts"],
            &status["healthy"],
            &status["unhealthy"],
            &status["inconclusive"]
        ),
        (&json!(2), &json!(1), &json!(0), &json!(1)),
        "{status}"
    );
    assert_eq!(status["kinds"][0]["inconclusive"], 1);
    assert_eq!(status["kinds"][0]["unhealthy"], 0);
    // Filtered by the read API, which refuses a value it does not know, listing them.
    let (_, only) = get(addr, "/api/hosts?health=inconclusive");
    assert_eq!(only.as_array().unwrap().len(), 1);
    assert_eq!(only[0]["host"], "node-1");
    assert_eq!(
        get(addr, "/api/hosts?health=healthy").1[0]["host"],
        "node-2"
    );
    for (path, message) in [
        (
            "/api/hosts?health=bogus",
            "health: \"bogus\" is not one of healthy, unhealthy, inconclusive, stale",
        ),
        (
            "/api/hosts?cause=bogus_cause",
            "cause: \"bogus_cause\" is not one of link_failure, link_flapping, link_overloaded, \
             pcie_misconfiguration, rnic_misconfiguration, iommu_congestion, \
             memory_bus_congestion, odp_stall",
        ),
    ] {
        let (code, body) = get(addr, path);
        assert_eq!(
            (code, typed::<ErrorBody>(&body).error),
            (400, message.to_owned())
        );
    }

    // `hostping fleet`: 3 when a host is inconclusive and none unhealthy.
    let (code, table, _) = fleet(addr, &["status"]);
    assert_eq!(code, 3, "{table}");
    assert!(
        table.contains(": 2 hosts, 1 healthy, 0 unhealthy, 1 inconclusive, 0 stale"),
        "{table}"
    );
    let (code, table, _) = fleet(addr, &["hosts"]);
    assert_eq!(code, 3, "{table}");
    let line = table.lines().find(|l| l.starts_with("node-1")).unwrap();
    assert!(line.contains("INCONCLUSIVE"), "{table}");
    let (code, table, _) = fleet(addr, &["hosts", "--health", "healthy"]);
    assert_eq!(code, 0, "{table}");
    assert_eq!(table.lines().count(), 2, "{table}");
    let (code, json, _) = fleet(
        addr,
        &["hosts", "--health", "inconclusive", "--format", "json"],
    );
    assert_eq!(code, 3);
    let listed: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(listed, only);
    let (code, table, _) = fleet(addr, &["host", "node-1"]);
    assert_eq!(code, 3, "{table}");
    assert!(table.contains("INCONCLUSIVE"), "{table}");
    assert!(
        table.contains("not judged (no_baseline): the baseline has no entry for these paths"),
        "{table}"
    );
    let (code, json, _) = fleet(addr, &["host", "node-1", "--format", "json"]);
    assert_eq!(code, 3);
    let view: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(view["inconclusive"], true);
    assert_eq!(view["not_judged"], unjudged["not_judged"]);
    // A finding outranks it: an unhealthy host makes the answer 1.
    let (status, _) = post(
        addr,
        Some(TOKEN_2),
        &body(&run(
            "node-2",
            2,
            now + 1,
            &sim_report(&["degrade:gpu4--lsw4:0.3"]),
        )),
    );
    assert_eq!(status, 201);
    assert_eq!(fleet(addr, &["status"]).0, 1);
    assert_eq!(fleet(addr, &["hosts"]).0, 1);
    assert_eq!(fleet(addr, &["hosts", "--health", "inconclusive"]).0, 3);
    // A value the flags do not know: exit 2, listing the valid ones.
    let (code, _, err) = fleet(addr, &["hosts", "--cause", "bogus_cause"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("invalid value 'bogus_cause'") && err.contains("memory_bus_congestion"),
        "{err}"
    );
    let (code, _, err) = fleet(addr, &["hosts", "--health", "fine"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("inconclusive"), "{err}");
}

#[test]
fn migration_6_reads_an_inconclusive_latest_run_stored_before_it() {
    let dir = temp_dir("collector-upgrade-6");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let unjudged = inconclusive_report("gpu4");
    let runtime = common::postgres::runtime();
    runtime.block_on(async {
        let (mut client, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let schema = collector::schema::migrate_to;
        assert_eq!(schema(&mut client, 5).await.unwrap(), [1, 2, 3, 4, 5]);
        // A collector of schema 5 stored a newer agent's reports as they came: node-1's
        // latest run inconclusive (an older one not), node-2's inconclusive with a finding.
        let mut with_finding = unjudged.clone();
        with_finding["diagnoses"] = sim_report(&["degrade:gpu4--lsw4:0.3"])["diagnoses"].clone();
        client
            .batch_execute(
                "INSERT INTO hosts (name, kind, kind_known) VALUES
                     ('node-1', 'dgx-a100', true), ('node-2', 'dgx-a100', true)",
            )
            .await
            .unwrap();
        for (host, id, report, causes) in [
            (1i64, 1i64, sim_report(&[]), "{}"),
            (1, 2, unjudged.clone(), "{}"),
            (2, 3, with_finding, "{link_failure}"),
        ] {
            client
                .execute(
                    "INSERT INTO runs (host_id, agent_run_id, trigger, started_unix_ms, kind,
                                       kind_known, healthy, mode, report)
                     VALUES ($1, $2, 'idle', $2, 'dgx-a100', true, $3, 'idle', $4)",
                    &[&host, &id, &report["healthy"].as_bool().unwrap(), &report],
                )
                .await
                .unwrap();
            client
                .execute(
                    "UPDATE hosts SET latest_run_id = (SELECT max(id) FROM runs WHERE host_id = $1),
                                      latest_healthy = $2, latest_causes = $3::text::text[]
                     WHERE id = $1",
                    &[&host, &report["healthy"].as_bool().unwrap(), &causes],
                )
                .await
                .unwrap();
        }
        assert_eq!(schema(&mut client, 6).await.unwrap(), [6]);
    });
    assert_eq!(
        pg.scalar("SELECT string_agg(inconclusive::text, ',' ORDER BY id) FROM runs"),
        "false,true,false"
    );
    assert_eq!(
        pg.scalar("SELECT string_agg(latest_inconclusive::text, ',' ORDER BY id) FROM hosts"),
        "true,false"
    );
}

#[test]
fn collector_help_describes_the_web_ui_the_read_api_and_where_secrets_go() {
    let help = common::stdout(&common::hostping(&["collector", "--help"]));
    for words in [
        "/hosts/{host}",
        "GET /api/hosts[?health=H][&cause=C]",
        "GET /api/hosts/{host}/runs?limit=N",
        "GET /api/hosts/{host}/timeline",
        "GET /api/hosts/{host}/baseline",
        "GET /api/kinds/{kind}/baseline",
        "GET /api/fleet/status",
        "GET /api/fleet/causes",
        "GET /api/fleet/slow-hosts",
        "GET /api/health",
        "POST /api/runs",
        "--database-file",
        "HOSTPING_DATABASE_URL",
    ] {
        assert!(help.contains(words), "{words} missing from:\n{help}");
    }
}
