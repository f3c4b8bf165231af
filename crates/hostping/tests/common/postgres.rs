//! A throw-away PostgreSQL cluster (Debian's `postgresql` package) in a temporary folder, as
//! `nobody` when the tests run as root, and `hostping collector` in front of it.
//!
//! Skipped (with a message) when PostgreSQL's server binaries are missing, unless
//! `HOSTPING_REQUIRE_POSTGRES` is set, as `./test.sh` does after installing them.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A single-threaded tokio runtime for a test that talks to PostgreSQL (or the collector's
/// library) directly.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Where `initdb`, `pg_ctl` and `psql` are: the newest `/usr/lib/postgresql/*/bin`.
pub fn postgres_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists() && b.join("pg_ctl").exists())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
    });
    if let Some(bin) = found.pop() {
        return Some(bin);
    }
    assert!(
        std::env::var_os("HOSTPING_REQUIRE_POSTGRES").is_none(),
        "HOSTPING_REQUIRE_POSTGRES is set but no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)"
    );
    eprintln!("skipped: no PostgreSQL server binaries (apt-get install postgresql)");
    None
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A throw-away PostgreSQL cluster, stopped on drop.
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    /// `runuser -u nobody --` when running as root (PostgreSQL refuses to run as root).
    prefix: Vec<String>,
}

impl Postgres {
    pub fn start(dir: &Path) -> Option<Postgres> {
        let bin = postgres_bin()?;
        // SAFETY: geteuid has no preconditions.
        let prefix: Vec<String> = if unsafe { libc::geteuid() } == 0 {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
            ["runuser", "-u", "nobody", "--"].map(String::from).to_vec()
        } else {
            Vec::new()
        };
        let pg = Postgres {
            bin,
            data: dir.join("pgdata"),
            port: free_port(),
            prefix,
        };
        pg.tool("initdb")
            .args([
                "--auth=trust",
                "--username=hostping",
                "--encoding=UTF8",
                "--no-sync",
            ])
            .arg("-D")
            .arg(&pg.data)
            .run();
        let options = format!(
            "-c port={} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off",
            pg.port,
            dir.display()
        );
        pg.tool("pg_ctl")
            .arg("-D")
            .arg(&pg.data)
            .args(["-o", &options, "-l"])
            .arg(dir.join("postgres.log"))
            .args(["-w", "start"])
            .run();
        Some(pg)
    }

    pub fn tool(&self, name: &str) -> Tool {
        let mut c = match self.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(self.bin.join(name));
                c
            }
            None => Command::new(self.bin.join(name)),
        };
        c.current_dir("/");
        Tool(c)
    }

    pub fn url(&self) -> String {
        format!("postgres://hostping@127.0.0.1:{}/postgres", self.port)
    }

    /// A connection pool on the cluster, as the collector makes one (at most `max_size`
    /// connections), for tests that drive the collector's library directly.
    pub fn pool(&self, max_size: usize) -> deadpool_postgres::Pool {
        let config: tokio_postgres::Config = self.url().parse().expect("the cluster's URL");
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        deadpool_postgres::Pool::builder(manager)
            .max_size(max_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .expect("a pool of a valid configuration")
    }

    /// One value from `psql`.
    pub fn scalar(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-At", "-d", &self.url(), "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Waits until no other client is connected: after a client is killed its server
    /// processes may still be committing what it sent, and a count taken meanwhile would
    /// see a table before that commit and the next table after it.
    pub fn wait_for_other_clients_to_leave(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let others = self.scalar(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
            );
            if others == "0" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{others} clients still connected to the test cluster after 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn count(&self, table: &str) -> i64 {
        self.scalar(&format!("SELECT count(*) FROM {table}"))
            .parse()
            .unwrap()
    }

    /// Path measurements stored (each run's row holds an array of them).
    pub fn paths(&self) -> i64 {
        self.scalar("SELECT COALESCE(sum(cardinality(rnic)), 0) FROM run_paths")
            .parse()
            .unwrap()
    }

    /// Link statuses stored (each run's row holds an array of them).
    pub fn links(&self) -> i64 {
        self.scalar("SELECT COALESCE(sum(cardinality(link)), 0) FROM run_links")
            .parse()
            .unwrap()
    }

    pub fn stop(&self) {
        self.tool("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .run();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .tool("pg_ctl")
            .0
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

pub struct Tool(pub Command);

impl Tool {
    pub fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Self {
        self.0.arg(a);
        self
    }
    pub fn args<const N: usize>(mut self, a: [&str; N]) -> Self {
        self.0.args(a);
        self
    }
    pub fn run(mut self) {
        let out = self.0.output().unwrap();
        assert!(
            out.status.success(),
            "{:?}: {}{}",
            self.0,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A running `hostping collector`, killed on drop.
pub struct Collector {
    pub child: Child,
    pub addr: SocketAddr,
    /// `http` or `https`.
    pub scheme: &'static str,
}

impl Collector {
    pub fn start(pg: &Postgres, tokens: &Path, extra: &[&str]) -> Collector {
        Collector::start_on(pg, tokens, "127.0.0.1:0", extra)
    }

    pub fn start_on(pg: &Postgres, tokens: &Path, listen: &str, extra: &[&str]) -> Collector {
        let url = pg.url();
        let tokens = tokens.to_str().unwrap();
        let mut args = vec![
            "collector",
            "--database",
            &url,
            "--listen",
            listen,
            "--tokens",
            tokens,
        ];
        args.extend_from_slice(extra);
        // Every run kept unless a test says otherwise: the tests post runs started at
        // made-up times (1970), which the default retention would delete at its next tick.
        if !extra.contains(&"--keep-runs") {
            args.extend(["--keep-runs", "forever"]);
        }
        Collector::spawn(&args)
    }

    /// `hostping ARGS`, once it says where it serves.
    pub fn spawn(args: &[&str]) -> Collector {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hostping"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            // Every line is shown, those after the start too (the receiver is gone by then).
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{line}");
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the collector did not start: hostping {}", args.join(" "));
            };
            for scheme in ["http", "https"] {
                if let Some(rest) = line.split(&format!("serving {scheme}://")).nth(1) {
                    let addr = rest.split('/').next().unwrap().parse().unwrap();
                    return Collector {
                        child,
                        addr,
                        scheme,
                    };
                }
            }
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// Posts a run's body; the status and the JSON answer.
pub fn post(addr: SocketAddr, token: Option<&str>, body: &[u8]) -> (u16, Value) {
    post_to(addr, "/api/runs", token, body)
}

/// Posts a body to `path`; the status and the JSON answer.
pub fn post_to(addr: SocketAddr, path: &str, token: Option<&str>, body: &[u8]) -> (u16, Value) {
    let mut req = client()
        .post(format!("http://{addr}{path}"))
        .header("Content-Type", "application/json");
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let mut resp = req.send(body).unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

pub fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    get_with(addr, path, None)
}

/// GET `path`, with `Authorization: Bearer TOKEN` when given: the status and the JSON answer.
pub fn get_with(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut req = client().get(format!("http://{addr}{path}"));
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let mut resp = req.call().unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

/// The distinct causes of a report's diagnoses, sorted.
pub fn causes(report: &Value) -> Vec<String> {
    let mut c: Vec<String> = report["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["cause"].as_str().unwrap().to_owned())
        .collect();
    c.sort();
    c.dedup();
    c
}
