//! ibsim's simulated InfiniBand fabric for tests: whether its packages are here, and
//! `scripts/ibsim/run.sh` (ibsim, one opensm pass, libibumad redirected by libumad2sim) as a
//! command to add a program to.

use std::path::Path;
use std::process::Command;

pub const RUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/ibsim/run.sh");
pub const NETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/ibsim/nets");
pub const PRELOAD: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// Whether ibsim, opensm, ibnetdiscover and libumad2sim are installed. Without them the
/// caller skips (with a message), unless `HOSTPING_REQUIRE_IBSIM` is set, as `./test.sh`
/// does after installing them: then their absence fails the test.
pub fn have_ibsim() -> bool {
    let found = ["ibsim", "opensm", "ibnetdiscover"].iter().all(|p| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    }) && Path::new(PRELOAD).exists();
    if found {
        return true;
    }
    assert!(
        std::env::var_os("HOSTPING_REQUIRE_IBSIM").is_none(),
        "HOSTPING_REQUIRE_IBSIM is set but ibsim, opensm, ibnetdiscover or {PRELOAD} is missing \
         (apt-get install ibsim-utils libumad2sim0 opensm infiniband-diags)"
    );
    eprintln!(
        "skipped: no ibsim (apt-get install ibsim-utils libumad2sim0 opensm infiniband-diags)"
    );
    false
}

/// `run.sh --net NETS/net --console ... --`, with `$HOSTPING` the binary and no colour: add
/// the program and its arguments.
pub fn run_on(net: &str, console: &[&str]) -> Command {
    let mut c = Command::new(RUN);
    c.args(["--net", &format!("{NETS}/{net}")]);
    for line in console {
        c.args(["--console", line]);
    }
    c.arg("--")
        .env("HOSTPING", env!("CARGO_BIN_EXE_hostping"))
        .env("NO_COLOR", "1");
    c
}

/// A fabric running under scripts/ibsim/run.sh for a whole test, driven line by line: each
/// command is bash run in `dir` against it (`$HOSTPING` the binary, ibsim's console on fd
/// 7), so that collectors can start between discovering the fabric and sampling it, as
/// they would on a real cluster.
pub struct Driven {
    child: std::process::Child,
    commands: Option<std::process::ChildStdin>,
    done: std::sync::mpsc::Receiver<String>,
    dir: std::path::PathBuf,
}

impl Driven {
    /// `net` (a file of scripts/ibsim/nets) brought up, waiting for commands run in `dir`.
    pub fn start(net: &str, dir: &Path) -> Driven {
        use std::io::BufRead;
        use std::process::Stdio;
        let driver = "while IFS= read -r line; do (eval \"$line\") >command.log 2>&1; \
                      echo \"exit $?\"; done";
        let mut child = run_on(net, &[])
            .args(["bash", "-c", driver])
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("run.log")).unwrap())
            .spawn()
            .expect("scripts/ibsim/run.sh runs");
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Driven {
            commands: child.stdin.take(),
            child,
            done,
            dir: dir.to_path_buf(),
        }
    }

    /// Runs `command` on the fabric; panics with its output when it fails or takes over a
    /// minute (each MAD has its own deadline, so only a broken fabric takes that long).
    pub fn run(&mut self, command: &str) {
        use std::io::Write;
        let commands = self.commands.as_mut().unwrap();
        writeln!(commands, "{command}").unwrap();
        commands.flush().unwrap();
        let log = |dir: &Path| {
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            format!("{}{}", read("command.log"), read("run.log"))
        };
        match self.done.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(line) if line == "exit 0" => {}
            Ok(line) => panic!("`{command}`: {line}\n{}", log(&self.dir)),
            Err(e) => panic!("`{command}`: no answer ({e})\n{}", log(&self.dir)),
        }
    }

    /// A JSON file a command wrote in the folder.
    pub fn read_json(&self, file: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
    }
}

impl Drop for Driven {
    /// End of input ends the driver; run.sh then stops ibsim.
    fn drop(&mut self) {
        self.commands.take();
        let _ = self.child.wait();
    }
}
