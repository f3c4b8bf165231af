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

/// A `--verbs-fault` value that does not parse; each message quotes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultParseError {
    /// No `:` between kind and endpoint.
    #[error("`{text}`: expected KIND:ENDPOINT (reg-mr, hang, bad-rkey)")]
    NotKindEndpoint {
        /// The value given.
        text: String,
    },
    /// A kind other than `reg-mr`, `hang`, `bad-rkey`.
    #[error("`{text}`: unknown fault `{kind}` (reg-mr, hang, bad-rkey)")]
    UnknownKind {
        /// The value given.
        text: String,
        /// The kind in it.
        kind: String,
    },
    /// Nothing after the `:`.
    #[error("`{text}`: no endpoint")]
    NoEndpoint {
        /// The value given.
        text: String,
    },
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
    pub fn parse(text: &str) -> Result<TestFault, FaultParseError> {
        let (kind, endpoint) = text
            .split_once(':')
            .ok_or_else(|| FaultParseError::NotKindEndpoint { text: text.into() })?;
        let kind = match kind {
            "reg-mr" => FaultKind::RegMr,
            "hang" => FaultKind::Hang,
            "bad-rkey" => FaultKind::BadRkey,
            other => {
                return Err(FaultParseError::UnknownKind {
                    text: text.into(),
                    kind: other.into(),
                })
            }
        };
        if endpoint.is_empty() {
            return Err(FaultParseError::NoEndpoint { text: text.into() });
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
        assert_eq!(
            TestFault::parse("hang").unwrap_err().to_string(),
            "`hang`: expected KIND:ENDPOINT (reg-mr, hang, bad-rkey)"
        );
        assert_eq!(
            TestFault::parse("melt:mem0").unwrap_err(),
            FaultParseError::UnknownKind {
                text: "melt:mem0".into(),
                kind: "melt".into()
            }
        );
        assert_eq!(
            TestFault::parse("hang:").unwrap_err().to_string(),
            "`hang:`: no endpoint"
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,40}") {
            let _ = TestFault::parse(&s);
        }
    }
}
