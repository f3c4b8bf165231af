//! Running the binary in tests: a command to its end, or `hostping agent` as a child
//! process with its address, its runs and signals.
#![allow(dead_code)] // each test binary uses its own part of this module

pub mod browser;
pub mod dashboard;
pub mod nccl;
pub mod summaries;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub mod alertmanager;
pub mod ibsim;
pub mod job;
pub mod node_exporter;
pub mod postgres;
pub mod prometheus;
pub mod tls;

/// Whether Debian's `package` gave a `binary` that runs (`--version`). Without it the caller
/// skips (with a message), unless the environment variable `require` is set, as `./test.sh`
/// does after installing the package.
pub fn have_debian_binary(binary: &str, package: &str, require: &str) -> bool {
    let found = Command::new(binary)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os(require).is_none(),
            "{require} is set but `{binary}` does not run (apt-get install {package})"
        );
        eprintln!("skipped: no `{binary}` (apt-get install {package})");
    }
    found
}

/// A per-test folder, emptied first.
pub fn temp_dir(name: &str) -> TestDir {
    let dir = std::env::temp_dir().join(format!("hostping-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TestDir(dir)
}

/// A test's folder, removed when it goes out of scope, so that a run of the suite leaves
/// nothing behind (they held 3 GB a run, and a machine's disk filled up). A failed test's
/// folder is kept, and named, to look into. Bind it for as long as the test uses a path in
/// it: a temporary is dropped, and its folder removed, at the end of its statement.
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept the failed test's folder {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// What a finished command left.
pub struct Finished {
    pub status: ExitStatus,
    pub stderr: String,
}

/// Runs the binary to the end, without colour.
pub fn hostping(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hostping"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

/// Its standard output, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A real report of the virtual dgx-a100 (DESIGN 4.3) from `hostping check`, with
/// `faults` injected.
pub fn sim_report(faults: &[&str]) -> serde_json::Value {
    let mut args = vec!["check", "--sim", "dgx-a100", "--format", "json"];
    for f in faults {
        args.extend(["--inject", f]);
    }
    serde_json::from_str(&stdout(&hostping(&args))).expect("check prints one JSON report")
}

/// A tokens file (`NAME TOKEN` lines, DESIGN 4.5) in `dir` holding `tokens`.
pub fn tokens_file(dir: &Path, tokens: &[(&str, &str)]) -> PathBuf {
    let file = dir.join("tokens");
    let lines: String = tokens.iter().map(|(h, t)| format!("{h} {t}\n")).collect();
    std::fs::write(&file, lines).expect("the test folder is writable");
    file
}

/// A probe-tokens file (`NAME TOKEN`, the agents' format) in `dir` holding `ops TOKEN`.
pub fn probe_tokens_file(dir: &Path, token: &str) -> PathBuf {
    let file = dir.join("probe.tokens");
    std::fs::write(&file, format!("ops {token}\n")).expect("the test folder is writable");
    file
}

/// Its standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A running agent.
pub struct Agent {
    child: Child,
    pub addr: SocketAddr,
    db: PathBuf,
    stderr: mpsc::Receiver<String>,
    lines: Vec<String>,
}

/// Starts an agent on a virtual dgx-a100 with `args`, plus `options` pairs.
pub fn agent(db: &Path, args: &[&str], options: &[(&str, &str)]) -> Agent {
    let mut all = vec!["agent", "--sim", "dgx-a100"];
    all.extend_from_slice(args);
    for (k, v) in options {
        all.extend([*k, *v]);
    }
    spawn(db, &all)
}

/// Starts an agent on this machine (or `--sysfs-root`) with `args`.
pub fn agent_real(db: &Path, args: &[&str]) -> Agent {
    let mut all = vec!["agent"];
    all.extend_from_slice(args);
    spawn(db, &all)
}

fn spawn(db: &Path, args: &[&str]) -> Agent {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hostping"))
        .args(args)
        .arg("--db")
        .arg(db)
        .args(["--listen", "127.0.0.1:0"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stderr, lines, addr) = wait_until_serving(&mut child, Duration::from_secs(60));
    Agent {
        child,
        addr,
        db: db.to_path_buf(),
        stderr,
        lines,
    }
}

/// Polls `done` every 50 ms until it holds; fails the test naming `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads an agent's stderr on a thread of its own until it says where it serves (within
/// `timeout`): the lines to come, the lines so far, and the address.
pub fn wait_until_serving(
    child: &mut Child,
    timeout: Duration,
) -> (mpsc::Receiver<String>, Vec<String>, SocketAddr) {
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + timeout;
    let addr = loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("agent did not start: {}", lines.join("\n")));
        lines.push(line.clone());
        if let Some(rest) = line.split("serving http://").nth(1) {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    (rx, lines, addr)
}

impl Agent {
    /// The agent's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the database holds `n` runs.
    pub fn wait_for_runs(&mut self, n: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let count = store::Store::open_read_only(&self.db)
                .and_then(|s| {
                    s.runs(&store::RunQuery {
                        limit: 100_000,
                        ..store::RunQuery::default()
                    })
                })
                .map_or(0, |r| r.len());
            if count >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{count} of {n} runs after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends a signal.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory preconditions.
        let rc = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(rc, 0);
    }

    /// Waits for the end (60 s at most) and returns the status and all of stderr.
    pub fn wait_output(mut self) -> Finished {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("agent did not stop: {}", self.lines.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            self.lines.push(line);
        }
        Finished {
            status,
            stderr: self.lines.join("\n"),
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.0 GET on loopback: status code and body.
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let (code, _, body) = http_exchange(
        addr,
        &format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n"),
    );
    (code, body)
}

/// A plain HTTP/1.0 POST with an empty body on loopback, with `headers` ("Name: value"):
/// status code, head and body.
pub fn http_post(addr: SocketAddr, path: &str, headers: &[&str]) -> (u16, String, String) {
    let mut request = format!("POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n");
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    http_exchange(addr, &request)
}

/// Sends one HTTP/1.0 request and reads the answer to its end: status code (0 when there is
/// none), head and body.
fn http_exchange(addr: SocketAddr, request: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

/// Boots the QEMU guest of `scripts/guest/` with `kernel` (`default` or `odp`), runs
/// `script HOSTPING ARGS...` in it and returns the guest's out folder; panics, naming the
/// serial log, when the guest run fails.
pub fn guest_run(kernel: &str, timeout_s: u32, script: &str, args: &[&str]) -> PathBuf {
    try_guest_run(kernel, timeout_s, script, args).unwrap_or_else(|why| panic!("{why}"))
}

/// [`guest_run`], with a failed guest run as an error that names the serial log (for the
/// tests that share one boot: it fails them all without booting again).
pub fn try_guest_run(
    kernel: &str,
    timeout_s: u32,
    script: &str,
    args: &[&str],
) -> Result<PathBuf, String> {
    let _one_guest = one_guest_at_a_time();
    let label = Path::new(script)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = std::env::temp_dir().join(format!("hostping-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let status = Command::new("bash")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .arg("scripts/guest/run.sh")
        .args(["--kernel", kernel, "--out", out.to_str().unwrap()])
        .args(["--timeout", &timeout_s.to_string(), "--"])
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_hostping"))
        .args(args)
        .status()
        .expect("bash runs");
    if !status.success() {
        return Err(format!(
            "the guest run failed ({status}); see {}/serial.log",
            out.display()
        ));
    }
    Ok(out)
}

/// Held while a QEMU guest runs: the test harness runs tests two at a time, and two
/// emulated guests of 2 vCPUs each on the 2 cores of CI's machine starve each other, which
/// the guests' timing assertions (a probe against another in the same boot) must not see.
pub fn one_guest_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static GUEST: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding it poisoned it; the next guest may still run.
    GUEST.lock().unwrap_or_else(|e| e.into_inner())
}

/// A file the guest wrote, as text.
pub fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
}
