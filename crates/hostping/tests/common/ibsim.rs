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
