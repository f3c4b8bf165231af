//! Draining and resuming a node of a real one-node Slurm (scripts/slurm/one-node.sh): the
//! drain shows in `sinfo` with hostping's reason, `resume_if_ours` resumes it, and a node an
//! operator drained is never resumed. Needs root (skipped with a message otherwise) and
//! Debian's slurm-wlm and munge; without them the test says so and passes, unless
//! HOSTPING_REQUIRE_SLURM is set.

#[path = "support/one_node.rs"]
mod one_node;

use std::process::Command;

use one_node::{node_name, sinfo, OneNode};
use slurm::node::{self, NodeError};

#[test]
fn a_drain_shows_in_sinfo_resumes_and_an_operators_drain_stays() {
    let dir = std::env::temp_dir().join(format!("hostping-slurm-node-{}", std::process::id()));
    let Some(_cluster) = OneNode::start(&dir) else {
        return;
    };
    let host = node_name();
    let reason = "hostping: pcie_downgraded gpu4--lsw4 job 77";

    node::drain(&host, reason).unwrap();
    assert_eq!(sinfo(&host), ("drain".to_string(), reason.to_string()));
    let n = node::node(&host).unwrap();
    assert!(n.drained_by_hostping(), "{n:?}");
    assert_eq!(n.partitions, vec!["one"]);
    assert!(node::nodes().unwrap().iter().any(|m| m.name == host));

    node::resume_if_ours(&host).unwrap();
    let n = node::node(&host).unwrap();
    assert!(!n.drained(), "{n:?}");
    assert_ne!(sinfo(&host).0, "drain", "{:?}", sinfo(&host));

    // An operator's drain: never resumed by hostping.
    let status = Command::new("scontrol")
        .args([
            "update",
            &format!("NodeName={host}"),
            "State=DRAIN",
            "Reason=bad DIMM, ticket 4411",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let e = node::resume_if_ours(&host).unwrap_err();
    assert!(matches!(e, NodeError::NotOurs { .. }), "{e}");
    assert!(e.to_string().contains("bad DIMM, ticket 4411"), "{e}");
    assert_eq!(
        sinfo(&host),
        ("drain".to_string(), "bad DIMM, ticket 4411".to_string())
    );

    // An unknown node: scontrol's refusal, in words.
    let e = node::drain("nosuchnode", reason).unwrap_err();
    assert!(e.to_string().contains("nosuchnode"), "{e}");
}
