//! The agent and its database, through the binary: one agent per database (a second is
//! refused naming the first's pid), retention of runs, an unchanged symptom logged once,
//! and the settings refused when read (thresholds, --collector, --token-file).

mod common;

use common::{agent, hostping, stderr, temp_dir};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;
use store::{RunQuery, Store};

fn run_ids(db: &Path) -> Vec<i64> {
    let store = Store::open_read_only(db).unwrap();
    let mut ids: Vec<i64> = store
        .runs(&RunQuery {
            limit: 100_000,
            ..RunQuery::default()
        })
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    ids.reverse();
    ids
}

#[test]
fn a_second_agent_on_the_same_database_exits_2_naming_the_first() {
    let dir = temp_dir("agent-lock");
    let db = dir.join("runs.db");
    let mut first = agent(&db, &["--time-scale", "600"], &[]);
    first.wait_for_runs(1, Duration::from_secs(60));
    let db_arg = db.to_str().unwrap();
    let second = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--db",
        db_arg,
        "--listen",
        "127.0.0.1:0",
        "--run-for",
        "1m",
    ]);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.pid())) && err.contains(db_arg),
        "{err}"
    );
    // The first one kept writing, alone.
    let before = run_ids(&db).len();
    first.wait_for_runs(before + 1, Duration::from_secs(60));
    first.signal(libc::SIGTERM);
    assert!(first.wait_output().status.success());
    // Once it is gone, the database is free again (the kernel dropped the lock).
    let again = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--db",
        db_arg,
        "--listen",
        "127.0.0.1:0",
        "--time-scale",
        "600",
        "--run-for",
        "1m",
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
}

#[test]
fn the_database_keeps_at_most_keep_runs_runs() {
    let dir = temp_dir("agent-retention");
    let db = dir.join("runs.db");
    let config = dir.join("agent.toml");
    std::fs::write(&config, "[agent]\nkeep_runs = 10\n").unwrap();
    // An idle run every 5 min for 3 h of virtual time: 36 runs, of which the newest 10 stay.
    let out = agent(
        &db,
        &[
            "--config",
            config.to_str().unwrap(),
            "--time-scale",
            "6000",
            "--run-for",
            "3h",
        ],
        &[],
    )
    .wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stderr.contains("36 runs stored"), "{}", out.stderr);
    assert_eq!(run_ids(&db), (27..=36).collect::<Vec<i64>>());
}

#[test]
fn an_unchanged_pause_symptom_is_logged_once_not_on_every_run() {
    let dir = temp_dir("agent-symptom-log");
    let db = dir.join("runs.db");
    // Idle runs at 0, 5 and 10 min, all healthy; then rnic0 pauses from 12 min on, for the
    // remaining 28 min: a run every few seconds within the duty cycle, all with the same
    // symptom and verdict.
    let out = agent(
        &db,
        &[
            "--time-scale",
            "600",
            "--run-for",
            "40m",
            "--schedule",
            "12m=service:rnic0:250",
        ],
        &[],
    )
    .wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    let store = Store::open_read_only(&db).unwrap();
    let pfc_runs = store
        .runs(&RunQuery {
            limit: 100_000,
            trigger: Some("pfc".into()),
            ..RunQuery::default()
        })
        .unwrap()
        .len();
    assert!(pfc_runs >= 5, "{pfc_runs} pfc runs: {}", out.stderr);
    let said = |what: &str| out.stderr.lines().filter(|l| l.contains(what)).count();
    assert_eq!(said("symptom: rnic0 tx pause ratio"), 1, "{}", out.stderr);
    assert_eq!(said(" pfc (rnic0 tx pause ratio"), 1, "{}", out.stderr);
    // The three idle runs before the storm: said once.
    assert_eq!(said(" idle (host idle"), 1, "{}", out.stderr);
}

#[test]
fn a_threshold_that_is_not_a_fraction_is_refused_naming_value_and_range() {
    let dir = temp_dir("agent-bad-threshold");
    let config = dir.join("agent.toml");
    std::fs::write(&config, "[thresholds]\nabnormal_th = 5\n").unwrap();
    let out = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--config",
        config.to_str().unwrap(),
        "--db",
        dir.join("runs.db").to_str().unwrap(),
        "--run-for",
        "1m",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("thresholds.abnormal_th = 5 is outside (0, 1)")
            && err.contains(config.to_str().unwrap()),
        "{err}"
    );
    assert!(
        !dir.join("runs.db").exists(),
        "refused before anything was written"
    );
}

#[test]
fn collector_and_token_mistakes_exit_2_naming_them() {
    let dir = temp_dir("agent-collector-flags");
    let db = dir.join("runs.db");
    let token = dir.join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let base = [
        "agent",
        "--sim",
        "dgx-a100",
        "--db",
        db.to_str().unwrap(),
        "--run-for",
        "1m",
    ];
    for (extra, said) in [
        (vec!["--collector", "notaurl", "--token", "t"], "notaurl"),
        (
            vec!["--collector", "ftp://c:21", "--token", "t"],
            "scheme `ftp`",
        ),
        (vec!["--collector", "http://127.0.0.1:9"], "--token-file"),
        (
            vec![
                "--collector",
                "http://127.0.0.1:9",
                "--token",
                "t",
                "--token-file",
                token.to_str().unwrap(),
            ],
            "--token-file",
        ),
        (vec!["--token-file", token.to_str().unwrap()], "--collector"),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let out = hostping(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(said), "{extra:?}: {err}");
        assert!(!err.contains("s3cret"), "{extra:?}: {err}");
    }
}

#[test]
fn the_token_of_a_token_file_is_sent_and_is_not_on_the_command_line() {
    let dir = temp_dir("agent-token-file");
    let db = dir.join("runs.db");
    let token = dir.join("token");
    std::fs::write(&token, "s3cret-of-host-1\n").unwrap();
    // A collector that records the first request's headers and asks to retry later.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let collector = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            headers.push(line.trim().to_owned());
        }
        let mut stream = stream;
        stream
            .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .unwrap();
        headers
    });
    let a = agent(
        &db,
        &[
            "--time-scale",
            "600",
            "--collector",
            &url,
            "--token-file",
            token.to_str().unwrap(),
        ],
        &[],
    );
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", a.pid())).unwrap();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains("s3cret"),
        "the secret is not in ps"
    );
    let headers = collector.join().unwrap();
    assert!(
        headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case("authorization: Bearer s3cret-of-host-1")),
        "{headers:?}"
    );
    a.signal(libc::SIGTERM);
    let out = a.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
}
