//! A one-node Slurm for the tests that drain through it (scripts/slurm/one-node.sh): the
//! slurm crate's own (`node_scontrol`) and hostping's (`actions`) include this file with
//! `#[path]`, so that both start, find and stop it alike.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cluster, stopped on drop.
pub struct OneNode {
    /// Its folder: slurm.conf, the daemons' state and logs.
    pub dir: PathBuf,
}

impl OneNode {
    /// Starts it in `dir` and points `SLURM_CONF` at it, so that scontrol and sinfo, in this
    /// process and in what it starts, find it. `None`, saying why, when not root (Slurm's
    /// daemons run jobs as their users: `./test.sh` runs the suite as root) or without the
    /// daemons, unless `HOSTPING_REQUIRE_SLURM` is set.
    pub fn start(dir: &Path) -> Option<OneNode> {
        if !is_root() {
            eprintln!("skipped: not root (a one-node Slurm needs it)");
            return None;
        }
        if Command::new("slurmctld").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("HOSTPING_REQUIRE_SLURM").is_none(),
                "HOSTPING_REQUIRE_SLURM is set but slurmctld is not installed"
            );
            eprintln!("skipped: no Slurm daemons (apt-get install slurm-wlm munge)");
            return None;
        }
        let ok = Command::new(script())
            .arg("start")
            .arg(dir)
            .status()
            .expect("one-node.sh runs")
            .success();
        assert!(ok, "the one-node Slurm did not start in {}", dir.display());
        std::env::set_var("SLURM_CONF", dir.join("slurm.conf"));
        Some(OneNode {
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for OneNode {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).status();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm/one-node.sh")
}

/// Whether this process runs as root (`id -u`: no libc call needed).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The node's name: this machine's short host name, as one-node.sh names it.
pub fn node_name() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `sinfo`'s state and reason of `node`, the state without the `*` sinfo adds while slurmd
/// is slow to answer (a loaded machine).
pub fn sinfo(node: &str) -> (String, String) {
    let out = Command::new("sinfo")
        .args(["-h", "-N", "-n", node, "-o", "%t|%E"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (state, reason) = text.split_once('|').unwrap_or((&text, ""));
    (state.trim_end_matches('*').to_string(), reason.to_string())
}
