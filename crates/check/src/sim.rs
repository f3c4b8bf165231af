//! Resolving `--sim <name|file>` into a host model, and `--inject` strings into faults.

use model::{builtin, HostTopology};
use vhost::Fault;

/// Why a simulated host could not be set up. Each message is one line naming the input.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Neither a built-in model nor a readable, well-formed file.
    #[error(transparent)]
    Host(#[from] model::builtin::LoadError),
    /// A fault string is malformed or names something the host lacks. (Not a `source`:
    /// the message already holds it, and printing the chain would say it twice.)
    #[error("--inject: {0}")]
    Fault(vhost::FaultError),
}

impl From<vhost::FaultError> for SimError {
    fn from(e: vhost::FaultError) -> Self {
        SimError::Fault(e)
    }
}

/// Loads a built-in model by name, or a host-model file: TOML, hwloc XML or an NCCL
/// topology ([`model::builtin::Format`]).
pub fn load_host(name_or_path: &str) -> Result<HostTopology, SimError> {
    Ok(builtin::resolve(name_or_path, |path| {
        std::fs::read_to_string(path)
    })?)
}

/// Parses every `--inject` string against the host, and the faults together (one setting
/// per target: two `degrade` on one link are refused).
pub fn parse_faults(texts: &[String], host: &HostTopology) -> Result<Vec<Fault>, SimError> {
    Ok(vhost::parse_faults(texts, host)?)
}
