//! Faults the real engine can be told to provoke on one path, so that its error handling
//! is tested against what a real kernel and RNIC answer (the Soft-RoCE guest test uses
//! them through `hostping check --verbs-fault`). Each one makes the hardware fail for
//! real; only the trigger is deliberate:
//!
//! | fault | what the engine does | what the kernel / RNIC answers |
//! |---|---|---|
//! | `reg-mr:EP` | registers an inaccessible (PROT_NONE) page range in place of the read region | `ibv_reg_mr` fails (EFAULT) |
//! | `hang:EP` | connects the QP to a QP number that no longer exists | no ACK ever comes: the wait times out |
//! | `bad-rkey:EP` | uses a wrong remote key | a work completion with "remote access error" |

use model::ComponentId;

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Memory registration fails.
    RegMr,
    /// The probe hangs until the engine's wait times out.
    Hang,
    /// The work completion carries an error status.
    BadRkey,
}

/// A fault on the paths to one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFault {
    /// What goes wrong.
    pub kind: FaultKind,
    /// On which endpoint's paths.
    pub endpoint: ComponentId,
}

impl TestFault {
    /// Parses `reg-mr:mem1`, `hang:gpu0`, `bad-rkey:mem0`.
    pub fn parse(text: &str) -> Result<TestFault, String> {
        let (kind, endpoint) = text
            .split_once(':')
            .ok_or_else(|| format!("`{text}`: expected KIND:ENDPOINT (reg-mr, hang, bad-rkey)"))?;
        let kind = match kind {
            "reg-mr" => FaultKind::RegMr,
            "hang" => FaultKind::Hang,
            "bad-rkey" => FaultKind::BadRkey,
            other => {
                return Err(format!(
                    "`{text}`: unknown fault `{other}` (reg-mr, hang, bad-rkey)"
                ))
            }
        };
        if endpoint.is_empty() {
            return Err(format!("`{text}`: no endpoint"));
        }
        Ok(TestFault {
            kind,
            endpoint: endpoint.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_each_kind_and_rejects_the_rest() {
        assert_eq!(
            TestFault::parse("hang:mem1").unwrap(),
            TestFault {
                kind: FaultKind::Hang,
                endpoint: "mem1".into()
            }
        );
        assert_eq!(
            TestFault::parse("reg-mr:gpu3").unwrap().kind,
            FaultKind::RegMr
        );
        assert_eq!(
            TestFault::parse("bad-rkey:mem0").unwrap().kind,
            FaultKind::BadRkey
        );
        assert!(TestFault::parse("hang")
            .unwrap_err()
            .contains("KIND:ENDPOINT"));
        assert!(TestFault::parse("melt:mem0")
            .unwrap_err()
            .contains("unknown fault `melt`"));
        assert!(TestFault::parse("hang:")
            .unwrap_err()
            .contains("no endpoint"));
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,40}") {
            let _ = TestFault::parse(&s);
        }
    }
}
