//! What the collector answers to input it cannot take, and what an agent does with the
//! answer (DESIGN 4.5), on a real PostgreSQL:
//!
//! - a run PostgreSQL refuses for what it holds (a NUL character: JSON allows `\u0000`,
//!   PostgreSQL's text does not) is 422, naming the run and the server's reason; nothing of
//!   it is stored, the runs sent beside it are, and the agent's sender drops it with a log
//!   line instead of resending it for ever;
//! - a database out of reach is 503, and the sender keeps the run;
//! - a body over `--max-body` is 413 in a way a client reading the answer sees: sent whole
//!   without `Expect` (read to its end, within a bound, then answered), announced with
//!   `Expect: 100-continue` (answered at once, no `100 Continue`), or chunked; the sender
//!   drops such a run;
//! - stored sample sets whose parallel arrays differ in length are an error the collector
//!   answers and logs, never a panic.
//!
//! Skipped (with a message) without PostgreSQL's server binaries (see `common::postgres`).

mod common;

use agent::sender::{self, CollectorTarget};
use common::postgres::{post, Collector, Postgres};
use common::{sim_report, temp_dir, wait_until};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOKEN_1: &str = "tok-node-1-0123456789abcdef";
const TOKEN_2: &str = "tok-node-2-0123456789abcdef";
const TOKEN_3: &str = "tok-node-3-0123456789abcdef";

fn tokens_file(dir: &Path) -> PathBuf {
    common::tokens_file(
        dir,
        &[
            ("node-1", TOKEN_1),
            ("node-2", TOKEN_2),
            ("node-3", TOKEN_3),
        ],
    )
}

/// A faulty report (it has diagnoses) whose first diagnosis' evidence holds a NUL.
fn nul_evidence() -> Value {
    let mut r = sim_report(&["degrade:gpu4--lsw4:0.3"]);
    let evidence = r["diagnoses"][0]["evidence"].as_str().unwrap().to_owned();
    r["diagnoses"][0]["evidence"] = format!("{evidence}\u{0}").into();
    r
}

/// A healthy report whose first path's endpoint id holds a NUL.
fn nul_path_id() -> Value {
    let mut r = sim_report(&[]);
    r["paths"][0]["endpoint"] = "gpu\u{0}0".into();
    r
}

fn run(host: &str, id: i64, started: i64, report: &Value) -> Value {
    json!({"host": host, "id": id, "trigger": "idle", "started_unix_ms": started,
           "report": report})
}

fn body(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

/// `(host, agent run id)` of every stored run, sorted.
fn stored_runs(pg: &Postgres) -> String {
    pg.scalar(
        "SELECT coalesce(string_agg(h.name || ':' || r.agent_run_id, ','
                                    ORDER BY h.name, r.agent_run_id), '')
         FROM runs r JOIN hosts h ON h.id = r.host_id",
    )
}

#[test]
fn a_run_the_database_refuses_is_422_and_the_runs_sent_with_it_are_stored() {
    let dir = temp_dir("faults-422");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let addr = collector.addr;
    let healthy = sim_report(&[]);
    let faulty = sim_report(&["degrade:gpu4--lsw4:0.3"]);
    let posts = [
        (TOKEN_1, run("node-1", 1, 1_000, &faulty)),
        (TOKEN_1, run("node-1", 2, 2_000, &nul_evidence())),
        (TOKEN_2, run("node-2", 1, 1_000, &healthy)),
        (TOKEN_2, run("node-2", 2, 2_000, &nul_path_id())),
        (TOKEN_3, run("node-3", 1, 1_000, &faulty)),
    ];
    // Posted at once, so that the collector's writers take several of them in one batch.
    let answers: Vec<(u16, Value)> = std::thread::scope(|s| {
        let sent: Vec<_> = posts
            .iter()
            .map(|(token, r)| s.spawn(move || post(addr, Some(token), &body(r))))
            .collect();
        sent.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, (status, answer)) in answers.iter().enumerate() {
        let refused = i == 1 || i == 3;
        assert_eq!(*status, if refused { 422 } else { 201 }, "{i}: {answer}");
    }
    for (i, host) in [(1, "node-1"), (3, "node-2")] {
        let error = answers[i].1["error"].as_str().unwrap();
        assert!(
            error.contains(&format!("run 2 of host {host}")) && error.contains("0x00"),
            "{error}"
        );
    }
    assert!(
        answers[1].1["error"]
            .as_str()
            .unwrap()
            .contains("diagnoses"),
        "{}",
        answers[1].1
    );
    // Nothing of the refused runs; all of the others.
    assert_eq!(stored_runs(&pg), "node-1:1,node-2:1,node-3:1");
    let len = |r: &Value, k: &str| r[k].as_array().unwrap().len() as i64;
    assert_eq!(
        pg.paths(),
        2 * len(&faulty, "paths") + len(&healthy, "paths")
    );
    assert_eq!(pg.count("diagnoses"), 2 * len(&faulty, "diagnoses"));
    assert_eq!(
        pg.scalar("SELECT string_agg(name || ':' || runs, ' ' ORDER BY name) FROM hosts"),
        "node-1:1 node-2:1 node-3:1"
    );

    // More refused batches than the collector has writers, at once: every writer lives on,
    // and the next good runs are stored.
    let refused: Vec<u16> = std::thread::scope(|s| {
        let sent: Vec<_> = (10..22)
            .map(|id| {
                let r = run("node-1", id, id * 1_000, &nul_evidence());
                s.spawn(move || post(addr, Some(TOKEN_1), &body(&r)).0)
            })
            .collect();
        sent.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(refused, vec![422; 12]);
    for id in 30..38 {
        let r = run("node-3", id, id * 1_000, &healthy);
        assert_eq!(post(addr, Some(TOKEN_3), &body(&r)).0, 201, "run {id}");
    }
    assert_eq!(pg.count("runs"), 11);
}

/// Log lines of one test's sender (the sender takes a plain `fn`).
macro_rules! log_sink {
    ($sink:ident, $log:ident) => {
        static $sink: Mutex<Vec<String>> = Mutex::new(Vec::new());
        fn $log(line: &str) {
            $sink.lock().unwrap().push(line.to_owned());
        }
    };
}

/// An agent database with the outbox on, holding one run per report, ids from 1.
fn agent_database(db: &Path, reports: &[Value]) -> Vec<i64> {
    let mut store = store::Store::open(db).unwrap();
    store.queue_for_collector(100);
    let snapshot = json!({});
    reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let report: model::Report = serde_json::from_value(r.clone()).unwrap();
            store
                .insert_run(&store::NewRun {
                    started_unix_ms: 1_000 * (i as i64 + 1),
                    clock_ns: 0,
                    duration_ns: 0,
                    trigger: "idle",
                    trigger_detail: "host idle",
                    snapshot: &snapshot,
                    counters: None,
                    report: &report,
                })
                .unwrap()
        })
        .collect()
}

/// The agent's sender, delivering `db`'s outbox to `collector` as `host`.
fn start_sender(
    collector: &Collector,
    host: &str,
    token: &str,
    db: &Path,
    log: fn(&str),
) -> sender::Sender {
    let target = CollectorTarget {
        url: format!("http://{}", collector.addr),
        token: token.into(),
        host: host.into(),
        tls: ureq::tls::TlsConfig::default(),
        rack: None,
    };
    let metrics = Arc::new(Mutex::new(store::Metrics::new("dgx-a100", "simulated")));
    sender::start(target, db.to_path_buf(), metrics, log).unwrap()
}

/// Delivers `db`'s outbox to `collector` as node-1 until it is empty, within `timeout`;
/// the one line the sender logged (into `lines`, through `log`) of a dropped run.
fn deliver_dropping_one(
    collector: &Collector,
    db: &Path,
    log: fn(&str),
    lines: &Mutex<Vec<String>>,
    timeout: Duration,
) -> String {
    let sender = start_sender(collector, "node-1", TOKEN_1, db, log);
    wait_until("an empty outbox", timeout, || queued(db) == 0);
    sender.finish();
    let lines = lines.lock().unwrap();
    let dropped: Vec<&String> = lines.iter().filter(|l| l.contains("dropped")).collect();
    assert_eq!(dropped.len(), 1, "{lines:?}");
    dropped[0].clone()
}

fn queued(db: &Path) -> u64 {
    store::Store::open_read_only(db)
        .unwrap()
        .outbox_stats()
        .unwrap()
        .queued
}

#[test]
fn the_agent_drops_a_run_the_database_refuses_and_delivers_the_next() {
    log_sink!(LINES, log);
    let dir = temp_dir("faults-agent-422");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let db = dir.join("runs.db");
    let ids = agent_database(&db, &[nul_evidence(), sim_report(&[])]);
    let line = deliver_dropping_one(&collector, &db, log, &LINES, Duration::from_secs(30));
    assert_eq!(stored_runs(&pg), format!("node-1:{}", ids[1]));
    assert!(
        line.contains(&format!("run {}", ids[0])) && line.contains("422"),
        "{line}"
    );
    // The collector's own message, naming what the database refused.
    assert!(
        line.contains(&format!("run {} of host node-1", ids[0])) && line.contains("0x00"),
        "{line}"
    );
}

#[test]
fn an_agent_whose_every_run_the_database_refuses_drops_them_and_says_so() {
    let dir = temp_dir("faults-agent-binary-422");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    // TOML, like JSON, allows a NUL in a string; the rack goes with every run.
    let config = dir.join("agent.toml");
    std::fs::write(&config, "[agent]\nrack = \"r\\u0000\"\n").unwrap();
    let db = dir.join("runs.db");
    let url = format!("http://{}", collector.addr);
    let args = [
        "--time-scale",
        "600",
        "--collector",
        &url,
        "--token",
        TOKEN_1,
        "--name",
        "node-1",
        "--config",
        config.to_str().unwrap(),
    ];
    let mut agent = common::agent(&db, &args, &[]);
    agent.wait_for_runs(2, Duration::from_secs(60));
    wait_until("an empty outbox", Duration::from_secs(30), || {
        queued(&db) == 0
    });
    agent.signal(libc::SIGTERM);
    let out = agent.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("outbox: run 1 dropped: the collector refused it (422"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("collector unreachable"),
        "{}",
        out.stderr
    );
    assert_eq!(pg.count("runs"), 0);
}

#[test]
fn an_unreachable_database_is_503_and_the_agent_keeps_the_run() {
    log_sink!(LINES, log);
    let dir = temp_dir("faults-503");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    let healthy = sim_report(&[]);
    pg.stop();
    let (status, answer) = post(
        collector.addr,
        Some(TOKEN_1),
        &body(&run("node-1", 1, 1_000, &healthy)),
    );
    assert_eq!(status, 503, "{answer}");
    let db = dir.join("runs.db");
    agent_database(&db, &[healthy]);
    let sender = start_sender(&collector, "node-1", TOKEN_1, &db, log);
    let attempts = || {
        store::Store::open_read_only(&db)
            .unwrap()
            .outbox_pending(10)
            .unwrap()
            .iter()
            .map(|r| r.attempts)
            .sum::<u32>()
    };
    wait_until("two failed attempts", Duration::from_secs(60), || {
        attempts() >= 2
    });
    sender.finish();
    assert_eq!(queued(&db), 1);
    let lines = LINES.lock().unwrap();
    assert!(
        lines.iter().any(|l| l.contains("collector unreachable")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("dropped")), "{lines:?}");
}

/// Sends a request head and then `body` on a bare socket; every byte of the body must be
/// taken (a reset fails the test), and the whole answer is read to the collector's close.
fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream
        .write_all(body)
        .expect("the collector takes the whole body before it answers");
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .expect("an answer, then the collector's close");
    String::from_utf8_lossy(&answer).into_owned()
}

fn head(addr: SocketAddr, token: &str, framing: &str) -> String {
    format!(
        "POST /api/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\n{framing}\r\n"
    )
}

/// `data` as HTTP/1.1 chunks of at most 64 kB, and the last chunk.
fn chunked(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 1000 + 16);
    for chunk in data.chunks(64 << 10) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn status_line(answer: &str) -> &str {
    answer.lines().next().unwrap_or("")
}

/// The collector's limit in these tests, bytes.
const MAX_BODY: usize = 200_000;

#[test]
fn a_body_over_the_limit_is_answered_413_to_a_client_that_reads_the_answer() {
    let dir = temp_dir("faults-413");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let max = MAX_BODY.to_string();
    let collector = Collector::start(&pg, &tokens_file(&dir), &["--max-body", &max]);
    let addr = collector.addr;
    // 16 MiB: far more than the sockets' buffers hold, so a collector that stops reading
    // before the end leaves the client writing into a reset.
    let big = vec![b' '; 16 << 20];

    // Sent whole, without Expect (ureq, most HTTP libraries).
    let length = format!("Content-Length: {}\r\n", big.len());
    let answer = exchange(addr, &head(addr, TOKEN_1, &length), &big);
    assert!(status_line(&answer).starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(answer.contains(&format!("{MAX_BODY} bytes")), "{answer}");

    // Announced with Expect: 100-continue (curl, for bodies over 1 MiB): answered at once,
    // and the body is never asked for.
    let expect = format!("Content-Length: {}\r\nExpect: 100-continue\r\n", big.len());
    let answer = exchange(addr, &head(addr, TOKEN_1, &expect), b"");
    assert!(status_line(&answer).starts_with("HTTP/1.1 413"), "{answer}");
    assert!(!answer.contains("100 Continue"), "{answer}");

    // Chunked, no length given: bounded all the same.
    let answer = exchange(
        addr,
        &head(addr, TOKEN_1, "Transfer-Encoding: chunked\r\n"),
        &chunked(&big),
    );
    assert!(status_line(&answer).starts_with("HTTP/1.1 413"), "{answer}");

    // --max-body keeps its meaning: a body of exactly that many bytes is taken, however
    // it is framed, and one byte more is not.
    let good = body(&run("node-1", 1, 1_000, &sim_report(&[])));
    let padded = |n: usize| {
        let mut b = good.clone();
        b.resize(n, b' '); // JSON allows whitespace after the value
        b
    };
    let exactly = padded(MAX_BODY);
    assert_eq!(post(addr, Some(TOKEN_1), &exactly).0, 201);
    assert_eq!(post(addr, Some(TOKEN_1), &padded(MAX_BODY + 1)).0, 413);
    let again = exchange(
        addr,
        &head(
            addr,
            TOKEN_1,
            "Transfer-Encoding: chunked\r\nConnection: close\r\n",
        ),
        &chunked(&exactly),
    );
    assert!(status_line(&again).starts_with("HTTP/1.1 200"), "{again}");
    assert_eq!(
        exchange(
            addr,
            &head(addr, TOKEN_1, "Transfer-Encoding: chunked\r\n"),
            &chunked(&padded(MAX_BODY + 1)),
        )
        .lines()
        .next()
        .unwrap(),
        "HTTP/1.1 413 Payload Too Large"
    );
    assert_eq!(pg.count("runs"), 1);
}

#[test]
fn the_agent_drops_a_run_over_the_limit_and_delivers_the_next() {
    log_sink!(LINES, log);
    let dir = temp_dir("faults-agent-413");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let max = MAX_BODY.to_string();
    let collector = Collector::start(&pg, &tokens_file(&dir), &["--max-body", &max]);
    let db = dir.join("runs.db");
    let mut heavy = sim_report(&["degrade:gpu4--lsw4:0.3"]);
    heavy["diagnoses"][0]["evidence"] = "x".repeat(8 << 20).into();
    let ids = agent_database(&db, &[heavy, sim_report(&[])]);
    let line = deliver_dropping_one(&collector, &db, log, &LINES, Duration::from_secs(60));
    assert_eq!(stored_runs(&pg), format!("node-1:{}", ids[1]));
    assert!(
        line.contains(&format!("run {}", ids[0])) && line.contains("413"),
        "{line}"
    );
}

/// Three hosts of a kind with stored sample sets, one set of `node-3` with one latency
/// too few; every host's values unseen by the baseline refresh.
const UNEVEN_SETS: &str = "
    INSERT INTO hosts (name, kind, kind_known, latest_started_unix_ms, paths_version)
        VALUES ('node-1', 'dgx-a100', true, 1000, 1), ('node-2', 'dgx-a100', true, 1000, 1),
               ('node-3', 'dgx-a100', true, 1000, 1);
    INSERT INTO host_samples (host_id, seq, rnic, endpoint, latency_us, bandwidth_gbps)
        SELECT id, 1, '{rnic0,rnic0}', '{mem0,gpu0}', '{2.0,2.1}', '{199.0,190.0}'
        FROM hosts WHERE name <> 'node-3';
    INSERT INTO host_samples (host_id, seq, rnic, endpoint, latency_us, bandwidth_gbps)
        SELECT id, 1, '{rnic0,rnic0}', '{mem0,gpu0}', '{2.0}', '{199.0,190.0}'
        FROM hosts WHERE name = 'node-3';";

/// What the refresh says of node-3's set.
fn names_the_uneven_set(message: &str) -> bool {
    message.contains("node-3")
        && message.contains("2 RNICs, 2 endpoints, 1 latencies and 2 bandwidths")
}

log_sink!(REFRESH_LINES, refresh_log);

#[test]
fn stored_sample_sets_of_uneven_lengths_are_an_error_never_a_panic() {
    let dir = temp_dir("faults-uneven");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let collector = Collector::start(&pg, &tokens_file(&dir), &[]);
    pg.scalar(UNEVEN_SETS);

    // A read that needs the kind's baseline answers why it has none.
    let (status, answer) = common::postgres::get(collector.addr, "/api/kinds/dgx-a100/baseline");
    assert_eq!(status, 500, "{answer}");
    assert!(
        names_the_uneven_set(answer["error"].as_str().unwrap()),
        "{answer}"
    );

    // The refresh reports it as a typed error, and the background refresh logs it.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pool = pg.pool(2);
        let mut client = pool.get().await.unwrap();
        let error = collector::refresh::refresh(&mut client, "dgx-a100")
            .await
            .expect_err("uneven arrays");
        assert!(names_the_uneven_set(&error.to_string()), "{error}");
        drop(client);
        tokio::spawn(collector::refresh::refresh_loop(pool, refresh_log));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !REFRESH_LINES
            .lock()
            .unwrap()
            .iter()
            .any(|l| names_the_uneven_set(l))
        {
            assert!(tokio::time::Instant::now() < deadline, "no log line");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    drop(runtime);

    // With the kind's values seen and a baseline stored, the slow-host ranking reads the
    // sets without a refresh: still no panic.
    pg.scalar(
        "UPDATE hosts SET baseline_version = paths_version;
         INSERT INTO fleet_baselines VALUES ('dgx-a100', 'rnic0', 'mem0', 2.0, 0.1, 0.1, 199.0,
                                             1.0, 1.0, 3, 3, 0)",
    );
    let (status, answer) =
        common::postgres::get(collector.addr, "/api/fleet/slow-hosts?kind=dgx-a100");
    assert_eq!(status, 200, "{answer}");
}
