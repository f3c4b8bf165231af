//! The collector over TLS (`--tls-cert/--tls-key`, rustls) on a real PostgreSQL: a fleet's
//! private CA made in the test, an agent that trusts it (`--collector-ca`) delivering its
//! runs over https, and the refusals: plain HTTP on the TLS port, an agent that does not
//! trust the CA (nothing stored, the agent says why and keeps its runs), a certificate for
//! another name, and unusable certificate or key files (exit 2 naming the file).
//!
//! Skipped (with a message) without PostgreSQL's server binaries (see `common::postgres`).

mod common;

use common::postgres::{free_port, Collector, Postgres};
use common::tls::certificates;
use common::{agent, hostping, stderr, temp_dir, wait_until};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TOKEN: &str = "tok-tls-node-0123456789abcdef";

fn tokens_file(dir: &Path) -> PathBuf {
    let file = dir.join("tokens");
    std::fs::write(&file, format!("node-tls {TOKEN}\n")).unwrap();
    file
}

/// A client that trusts only `ca`.
fn client(ca: &Path) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .tls_config(fleet_api::tls::client_config(Some(ca)).unwrap())
        .build()
        .into()
}

fn get_json(client: &ureq::Agent, url: &str) -> Value {
    let mut resp = client.get(url).call().unwrap();
    assert_eq!(resp.status().as_u16(), 200, "{url}");
    serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
}

#[test]
fn agents_deliver_over_tls_only_to_a_collector_they_trust() {
    let dir = temp_dir("collector-tls");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let (ca, cert, key) = certificates(&dir, &["localhost", "127.0.0.1"]);
    let tokens = tokens_file(&dir);
    let tls = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let collector = Collector::start(&pg, &tokens, &tls);
    assert_eq!(collector.scheme, "https");
    let port = collector.addr.port();
    let url = format!("https://localhost:{port}");

    // Plain HTTP on the TLS port gets no API answer.
    let plain: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    assert!(plain
        .get(format!("http://127.0.0.1:{port}/api/hosts"))
        .call()
        .is_err());

    // An agent that trusts the fleet's CA delivers its runs.
    let ca_arg = ca.to_str().unwrap();
    let args = [
        "--time-scale",
        "600",
        "--collector",
        &url,
        "--token",
        TOKEN,
        "--name",
        "node-tls",
        "--collector-ca",
        ca_arg,
    ];
    let mut trusting = agent(&dir.join("trusting.db"), &args, &[]);
    trusting.wait_for_runs(2, Duration::from_secs(60));
    wait_until("runs over TLS", Duration::from_secs(60), || {
        pg.count("runs") >= 2
    });
    trusting.signal(libc::SIGTERM);
    let out = trusting.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    let hosts = get_json(&client(&ca), &format!("{url}/api/hosts"));
    assert_eq!(hosts[0]["host"], "node-tls");
    let stored = pg.count("runs");
    assert_eq!(hosts[0]["runs"], stored);

    // One that trusts only the web PKI roots refuses the certificate: nothing more is
    // stored, it says why, and the runs wait in its outbox.
    let untrusting_db = dir.join("untrusting.db");
    let mut untrusting = agent(&untrusting_db, &args[..8], &[]);
    untrusting.wait_for_runs(2, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    untrusting.signal(libc::SIGTERM);
    let out = untrusting.wait_output();
    assert!(
        out.stderr.to_lowercase().contains("certificate") || out.stderr.contains("UnknownIssuer"),
        "{}",
        out.stderr
    );
    assert_eq!(pg.count("runs"), stored);
    let outbox = store::Store::open_read_only(&untrusting_db)
        .unwrap()
        .outbox_stats()
        .unwrap();
    assert!(outbox.queued >= 2, "{outbox:?}");

    // A certificate for another name is refused even by a client trusting the CA.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (other_ca, other_cert, other_key) = certificates(&other, &["collector.example"]);
    let wrong_name = Collector::start(
        &pg,
        &tokens,
        &[
            "--tls-cert",
            other_cert.to_str().unwrap(),
            "--tls-key",
            other_key.to_str().unwrap(),
        ],
    );
    let refused = client(&other_ca)
        .get(format!(
            "https://localhost:{}/api/hosts",
            wrong_name.addr.port()
        ))
        .call();
    let why = refused
        .expect_err("a certificate for another name")
        .to_string();
    assert!(why.to_lowercase().contains("name"), "{why}");
}

#[test]
fn a_body_over_the_limit_is_answered_413_over_tls() {
    let dir = temp_dir("collector-tls-413");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let (ca, cert, key) = certificates(&dir, &["localhost"]);
    let collector = Collector::start(
        &pg,
        &tokens_file(&dir),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--max-body",
            "100000",
        ],
    );
    // 16 MiB, sent whole (ureq sends no Expect): far more than the sockets' buffers hold,
    // so the answer is only seen if the collector reads the body before it answers.
    let response = client(&ca)
        .post(format!(
            "https://localhost:{}/api/runs",
            collector.addr.port()
        ))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send(&vec![b' '; 16 << 20][..]);
    let mut response = response.expect("an HTTP answer, not a reset");
    assert_eq!(response.status().as_u16(), 413);
    let answer: Value =
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    assert!(
        answer["error"].as_str().unwrap().contains("100000 bytes"),
        "{answer}"
    );
    assert_eq!(pg.count("runs"), 0);
}

#[test]
fn unusable_tls_files_are_named_and_exit_2() {
    let dir = temp_dir("collector-tls-files");
    let (_, cert, key) = certificates(&dir, &["localhost"]);
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let database = format!("postgres://hostping@127.0.0.1:{}/postgres", free_port());
    let run = |cert: &Path, key: &Path| {
        hostping(&[
            "collector",
            "--database",
            &database,
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ])
    };
    let missing = dir.join("missing.pem");
    for (cert, key, named, says) in [
        (&missing, &key, &missing, "no such file"),
        (&empty, &key, &empty, "no CERTIFICATE"),
        (&cert, &empty, &empty, "no PRIVATE KEY"),
        // a certificate file in place of the key
        (&cert, &cert, &cert, "no PRIVATE KEY"),
    ] {
        let out = run(cert, key);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(text.contains(named.to_str().unwrap()), "{text}");
        assert!(text.to_lowercase().contains(&says.to_lowercase()), "{text}");
    }
    // A key that is not the certificate's.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (_, _, other_key) = certificates(&other, &["localhost"]);
    let out = run(&cert, &other_key);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--tls-key"), "{text}");
}
