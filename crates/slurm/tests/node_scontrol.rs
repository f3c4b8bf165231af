//! Draining and resuming a node of a real one-node Slurm (scripts/slurm/one-node.sh): the
//! drain shows in `sinfo` with hostping's reason, `resume_if_ours` resumes it, and a node an
//! operator drained is never resumed. Needs root (skipped with a message otherwise) and
//! Debian's slurm-wlm and munge; without them the test says so and passes, unless
//! HOSTPING_REQUIRE_SLURM is set.

use std::path::{Path, PathBuf};
use std::process::Command;

use slurm::node::{self, NodeError};

/// A one-node cluster, stopped on drop.
struct Cluster {
    dir: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).status();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm/one-node.sh")
}

fn start() -> Option<Cluster> {
    // Slurm's daemons run jobs as their users: root only (./test.sh runs the suite as
    // root, as its Slurm scripts).
    if !is_root() {
        eprintln!("not root: the drain test is skipped (a one-node Slurm needs root)");
        return None;
    }
    let have = Command::new("slurmctld").arg("-V").output().is_ok();
    if !have {
        assert!(
            std::env::var_os("HOSTPING_REQUIRE_SLURM").is_none(),
            "HOSTPING_REQUIRE_SLURM is set but slurmctld is not installed"
        );
        eprintln!("no Slurm daemons: the drain test is skipped");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("hostping-slurm-node-{}", std::process::id()));
    let ok = Command::new(script())
        .arg("start")
        .arg(&dir)
        .status()
        .expect("one-node.sh runs")
        .success();
    assert!(ok, "the one-node Slurm did not start ({})", dir.display());
    // scontrol, run by the adapter, finds the cluster through SLURM_CONF.
    std::env::set_var("SLURM_CONF", dir.join("slurm.conf"));
    Some(Cluster { dir })
}

/// Whether this process runs as root (`id -u`: no libc call needed).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `sinfo`'s state and reason of `node` (`drain|hostping: ...`), the state without the `*`
/// sinfo adds while slurmd is slow to answer (a loaded machine).
fn sinfo(conf: &Path, node: &str) -> String {
    let out = Command::new("sinfo")
        .args(["-h", "-N", "-n", node, "-o", "%t|%E"])
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match text.split_once('|') {
        Some((state, reason)) => format!("{}|{reason}", state.trim_end_matches('*')),
        None => text,
    }
}

fn hostname() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_drain_shows_in_sinfo_resumes_and_an_operators_drain_stays() {
    let Some(cluster) = start() else { return };
    let conf = cluster.dir.join("slurm.conf");
    let host = hostname();
    let reason = "hostping: pcie_downgraded gpu4--lsw4 job 77";

    node::drain(&host, reason).unwrap();
    assert_eq!(sinfo(&conf, &host), format!("drain|{reason}"));
    let n = node::node(&host).unwrap();
    assert!(n.drained_by_hostping(), "{n:?}");
    assert_eq!(n.partitions, vec!["one"]);
    assert!(node::nodes().unwrap().iter().any(|m| m.name == host));

    node::resume_if_ours(&host).unwrap();
    let n = node::node(&host).unwrap();
    assert!(!n.drained(), "{n:?}");
    assert!(
        !sinfo(&conf, &host).starts_with("drain"),
        "{}",
        sinfo(&conf, &host)
    );

    // An operator's drain: never resumed by hostping.
    let status = Command::new("scontrol")
        .args([
            "update",
            &format!("NodeName={host}"),
            "State=DRAIN",
            "Reason=bad DIMM, ticket 4411",
        ])
        .env("SLURM_CONF", &conf)
        .status()
        .unwrap();
    assert!(status.success());
    let e = node::resume_if_ours(&host).unwrap_err();
    assert!(matches!(e, NodeError::NotOurs { .. }), "{e}");
    assert!(e.to_string().contains("bad DIMM, ticket 4411"), "{e}");
    assert_eq!(sinfo(&conf, &host), "drain|bad DIMM, ticket 4411");

    // An unknown node: scontrol's refusal, in words.
    let e = node::drain("nosuchnode", reason).unwrap_err();
    assert!(e.to_string().contains("nosuchnode"), "{e}");
}
