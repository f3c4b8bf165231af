//! Resolving `--sim <name|file>` into a host model, and `--inject` strings into faults.

use model::{builtin, HostTopology};
use std::path::Path;
use vhost::Fault;

/// Why a simulated host could not be set up. Each message is one line naming the input.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Neither a built-in model nor a readable file.
    #[error("cannot read host model `{name}`: {reason} (built-in models: {builtins})")]
    Unreadable {
        /// What was given to `--sim`.
        name: String,
        /// The I/O error.
        reason: String,
        /// The built-in names.
        builtins: String,
    },
    /// The model file is malformed.
    #[error(transparent)]
    Model(#[from] model::ModelError),
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

/// Loads a built-in model by name, or a TOML host-model file.
pub fn load_host(name_or_path: &str) -> Result<HostTopology, SimError> {
    if let Some(loaded) = builtin::load(name_or_path) {
        return Ok(loaded?);
    }
    let text =
        std::fs::read_to_string(Path::new(name_or_path)).map_err(|e| SimError::Unreadable {
            name: name_or_path.to_string(),
            reason: e.to_string(),
            builtins: builtin::names().collect::<Vec<_>>().join(", "),
        })?;
    Ok(model::hostfile::parse(name_or_path, &text)?)
}

/// Parses every `--inject` string against the host, and the faults together (one setting
/// per target: two `degrade` on one link are refused).
pub fn parse_faults(texts: &[String], host: &HostTopology) -> Result<Vec<Fault>, SimError> {
    Ok(vhost::parse_faults(texts, host)?)
}
