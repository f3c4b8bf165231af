//! Slurm's nodes: their state, reason and partitions from `scontrol -o show node`, and the
//! two actions hostping takes on them (DESIGN 4.9): `scontrol update NodeName=<host>
//! State=DRAIN Reason="hostping: ..."` and the matching `State=RESUME`, which only ever
//! resumes a node whose reason is still hostping's ([`resume_if_ours`]): a node an operator
//! drained, or drained again after hostping, stays drained.

use crate::job::{field, run, stderr_line, text, RunError};

/// What starts the reason of every drain hostping makes; a drained node whose reason does
/// not start with it was drained by someone else.
pub const REASON_PREFIX: &str = "hostping: ";

/// Why Slurm could not say or do what was asked of a node. Each names the node or the
/// command.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The name has characters no node name has (it goes on a command line).
    #[error("{node:?}: not a Slurm node name")]
    NotANodeName {
        /// The name as given.
        node: String,
    },
    /// A drain reason with a line break (Slurm keeps one line).
    #[error("drain reason {reason:?}: has a line break")]
    BadReason {
        /// The reason.
        reason: String,
    },
    /// The tool could not run to its end.
    #[error(transparent)]
    Run(#[from] RunError),
    /// scontrol ran and refused (an unknown node, no controller).
    #[error("`{command}` failed: {stderr}")]
    Refused {
        /// The command line.
        command: String,
        /// What scontrol said.
        stderr: String,
    },
    /// scontrol's output is not what this reader knows.
    #[error("scontrol show node: {reason}")]
    Output {
        /// What is wrong.
        reason: String,
    },
    /// The node is drained by someone else, or not drained: hostping does not resume it.
    #[error("{node} is not drained by hostping (state {state}, reason {reason:?}): left as it is")]
    NotOurs {
        /// The node.
        node: String,
        /// Its state.
        state: String,
        /// Its reason, if any.
        reason: Option<String>,
    },
}

/// A node as `scontrol -o show node` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmNode {
    /// `NodeName=`.
    pub name: String,
    /// `State=`, whole: a base state and its flags (`IDLE+DRAIN`).
    pub state: String,
    /// `Reason=` without the `[user@time]` Slurm appends; `None` when it has none.
    pub reason: Option<String>,
    /// `Partitions=`, split at commas; empty when it is in none.
    pub partitions: Vec<String>,
}

impl SlurmNode {
    /// Whether the node is drained or draining (`DRAIN` among its state's flags, or the
    /// `DRAINED`/`DRAINING` of `sinfo`'s words).
    pub fn drained(&self) -> bool {
        self.state
            .split('+')
            .any(|f| matches!(f, "DRAIN" | "DRAINED" | "DRAINING"))
    }

    /// Whether hostping drained it: drained, with a reason hostping wrote.
    pub fn drained_by_hostping(&self) -> bool {
        self.drained()
            && self
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with(REASON_PREFIX))
    }
}

/// The nodes in `scontrol -o show node` output, one a line (`#` lines, a fixture's
/// command, are skipped).
pub fn parse_nodes(out: &str) -> Result<Vec<SlurmNode>, NodeError> {
    out.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(parse_node)
        .collect()
}

fn parse_node(line: &str) -> Result<SlurmNode, NodeError> {
    let get = |key: &str| {
        field(line, key).ok_or_else(|| NodeError::Output {
            reason: format!("a line has no {key}= field: {line}"),
        })
    };
    // Reason= is the line's last field and its value has spaces: the rest of the line,
    // less the ` [user@time]` scontrol appends.
    let reason = line
        .split_once(" Reason=")
        .map(|(_, r)| r.trim())
        .map(|r| match r.rfind(" [") {
            Some(i) if r.ends_with(']') => &r[..i],
            _ => r,
        })
        .filter(|r| !r.is_empty() && *r != "(null)")
        .map(str::to_string);
    let partitions = field(line, "Partitions")
        .filter(|p| *p != "(null)")
        .map(|p| p.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    Ok(SlurmNode {
        name: get("NodeName")?.to_string(),
        state: get("State")?.to_string(),
        reason,
        partitions,
    })
}

/// Every node Slurm knows.
pub fn nodes() -> Result<Vec<SlurmNode>, NodeError> {
    parse_nodes(&scontrol(&["-o", "show", "node"])?)
}

/// The node `name`.
pub fn node(name: &str) -> Result<SlurmNode, NodeError> {
    check_name(name)?;
    let nodes = parse_nodes(&scontrol(&["-o", "show", "node", name])?)?;
    nodes
        .into_iter()
        .find(|n| n.name == name)
        .ok_or_else(|| NodeError::Output {
            reason: format!("no line for node {name}"),
        })
}

/// Drains `name` with `reason` (which should start with [`REASON_PREFIX`]).
pub fn drain(name: &str, reason: &str) -> Result<(), NodeError> {
    check_name(name)?;
    if reason.contains(['\n', '\r']) {
        return Err(NodeError::BadReason {
            reason: reason.to_string(),
        });
    }
    scontrol(&[
        "update",
        &format!("NodeName={name}"),
        "State=DRAIN",
        &format!("Reason={reason}"),
    ])
    .map(drop)
}

/// Resumes `name` if, read just before, it is drained by hostping; otherwise
/// [`NodeError::NotOurs`] and nothing is done. (Between the read and the resume an
/// operator could drain it again: the window is the few milliseconds of one scontrol.)
pub fn resume_if_ours(name: &str) -> Result<(), NodeError> {
    let node = node(name)?;
    if !node.drained_by_hostping() {
        return Err(NodeError::NotOurs {
            node: node.name,
            state: node.state,
            reason: node.reason,
        });
    }
    scontrol(&["update", &format!("NodeName={name}"), "State=RESUME"]).map(drop)
}

fn check_name(name: &str) -> Result<(), NodeError> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    match ok {
        true => Ok(()),
        false => Err(NodeError::NotANodeName {
            node: name.to_string(),
        }),
    }
}

/// Runs scontrol with `args`: its stdout, or what it said when it failed.
fn scontrol(args: &[&str]) -> Result<String, NodeError> {
    let out = run("scontrol", args)?;
    if !out.status.success() {
        return Err(NodeError::Refused {
            command: format!("scontrol {}", args.join(" ")),
            stderr: stderr_line(&out.stderr),
        });
    }
    Ok(text(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<SlurmNode> {
        let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        parse_nodes(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn an_idle_node() {
        let n = fixture("show-node-idle.txt");
        assert_eq!(
            n,
            vec![SlurmNode {
                name: "vm".into(),
                state: "IDLE".into(),
                reason: None,
                partitions: vec!["one".into()],
            }]
        );
        assert!(!n[0].drained());
    }

    #[test]
    fn a_node_hostping_drained() {
        let n = fixture("show-node-drained-by-hostping.txt");
        assert_eq!(n[0].state, "IDLE+DRAIN");
        assert_eq!(
            n[0].reason.as_deref(),
            Some("hostping: pcie_downgraded gpu4--lsw4 job 77")
        );
        assert!(n[0].drained_by_hostping());
    }

    #[test]
    fn a_node_an_operator_drained_is_not_hostpings() {
        let n = fixture("show-node-drained-by-operator.txt");
        assert_eq!(n[0].state, "IDLE+DRAIN+NOT_RESPONDING");
        assert_eq!(n[0].reason.as_deref(), Some("bad DIMM, ticket 4411"));
        assert!(n[0].drained());
        assert!(!n[0].drained_by_hostping());
    }

    #[test]
    fn a_line_without_a_name_is_an_error() {
        let e = parse_nodes("Arch=x86_64 State=IDLE").unwrap_err();
        assert!(e.to_string().contains("no NodeName= field"), "{e}");
    }

    #[test]
    fn names_and_reasons_that_would_break_the_command_line_are_refused() {
        for bad in ["", "-h", "node 1", "node;rm"] {
            assert!(matches!(
                drain(bad, "hostping: x"),
                Err(NodeError::NotANodeName { .. })
            ));
        }
        assert!(matches!(
            drain("node001", "hostping: x\nState=RESUME"),
            Err(NodeError::BadReason { .. })
        ));
    }
}
