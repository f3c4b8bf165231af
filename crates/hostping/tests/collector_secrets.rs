//! The collector's database credentials (issue 26 part 4): a password given in any of
//! libpq's forms never appears in what the collector prints, the real cause of a failed
//! connection does, and the connection string may come from a file or the environment
//! (exactly one source) so that it need not appear in `ps`.
//!
//! The refusals need no database; the file and the server's own words run on a throw-away
//! PostgreSQL cluster (skipped without its binaries unless `HOSTPING_REQUIRE_POSTGRES`).

mod common;

use common::postgres::{free_port, get, Collector, Postgres};
use common::{stderr, temp_dir};
use std::process::{Command, Output};

const PASSWORD: &str = "Sup3rS3cretPw";

/// `hostping collector ARGS` with `env` set (and `HOSTPING_DATABASE_URL` unset unless
/// given), run to its end: it must fail before it serves.
fn collector(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hostping"));
    c.arg("collector")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("HOSTPING_DATABASE_URL");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

#[test]
fn a_password_is_never_printed_and_the_cause_is() {
    // Nothing listens on this port: the connection is refused.
    let port = free_port();
    let shown = format!("postgres://u:***@127.0.0.1:{port}/db");
    for (given, expected) in [
        (
            format!("postgres://u:{PASSWORD}@127.0.0.1:{port}/db"),
            shown.clone(),
        ),
        (
            format!("postgresql://u@127.0.0.1:{port}/db?password={PASSWORD}&connect_timeout=5"),
            format!("postgresql://u@127.0.0.1:{port}/db?password=***&connect_timeout=5"),
        ),
        (
            format!("host=127.0.0.1 port={port} user=u password={PASSWORD} dbname=db"),
            format!("host=127.0.0.1 port={port} user=u password=*** dbname=db"),
        ),
    ] {
        for out in [
            collector(&["--database", &given], &[]),
            collector(&[], &[("HOSTPING_DATABASE_URL", &given)]),
        ] {
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(!err.contains(PASSWORD), "{err}");
            assert!(err.contains(&format!("database {expected}: ")), "{err}");
            assert!(err.to_lowercase().contains("connection refused"), "{err}");
        }
    }
    // A string the driver refuses: still redacted.
    let out = collector(
        &[
            "--database",
            &format!("postgres://u:{PASSWORD}@127.0.0.1:notaport/db"),
        ],
        &[],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains(PASSWORD), "{err}");
    assert!(
        err.contains("--database postgres://u:***@127.0.0.1:notaport/db: "),
        "{err}"
    );
}

#[test]
fn the_database_comes_from_exactly_one_source() {
    let dir = temp_dir("collector-db-sources");
    let file = dir.join("database-url");
    std::fs::write(&file, "postgres://u@127.0.0.1:1/db\n").unwrap();
    let file = file.to_str().unwrap();
    let url = "postgres://u@127.0.0.1:1/db";
    for (args, env, words) in [
        (
            vec!["--database", url, "--database-file", file],
            vec![],
            "the database is given --database and --database-file: give exactly one",
        ),
        (
            vec!["--database-file", file],
            vec![("HOSTPING_DATABASE_URL", url)],
            "the database is given --database-file and HOSTPING_DATABASE_URL: give exactly one",
        ),
        (
            vec![],
            vec![],
            "no database given: use --database-file FILE, the environment variable \
             HOSTPING_DATABASE_URL, or --database URL",
        ),
        (
            vec![],
            vec![("HOSTPING_DATABASE_URL", " ")],
            "HOSTPING_DATABASE_URL is empty",
        ),
    ] {
        let out = collector(&args, &env);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
    }
    let missing = dir.join("missing");
    let out = collector(&["--database-file", missing.to_str().unwrap()], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("--database-file {}: ", missing.display())),
        "{err}"
    );
}

#[test]
fn a_database_file_is_served_from_and_the_servers_words_are_shown() {
    let dir = temp_dir("collector-db-file");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    // The cluster trusts local connections: the password is taken and ignored.
    let with_password = pg
        .url()
        .replacen("hostping@", &format!("hostping:{PASSWORD}@"), 1);
    let file = dir.join("database-url");
    std::fs::write(&file, format!("{with_password}\n")).unwrap();
    let collector_from_file = Collector::spawn(&[
        "collector",
        "--database-file",
        file.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let (status, health) = get(collector_from_file.addr, "/api/health");
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["database"], "ok", "{health}");
    // A database that is not there: the server says so, and the password stays hidden.
    let missing = with_password.replace("/postgres", "/no_such_db");
    let out = collector(&["--database", &missing], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains(PASSWORD), "{err}");
    assert!(
        err.contains("database \"no_such_db\" does not exist"),
        "{err}"
    );
}
