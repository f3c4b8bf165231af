//! Identifiers of components and links (DESIGN 4.1).
//!
//! Ids are newtypes so that a component id can never be passed where a link id is expected.
//! A link id is always `<downstream>--<upstream>`, built by [`LinkId::between`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// A component of a host: `cpu0`, `mem1`, `usw2`, `lsw5`, `gpu3`, `rnic0`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ComponentId(String);

/// A link between two components, named `<downstream>--<upstream>` (`rnic0--lsw0`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LinkId(String);

impl ComponentId {
    /// Wraps a component name; the host-model parser checks its syntax.
    pub fn new(name: impl Into<String>) -> Self {
        ComponentId(name.into())
    }

    /// The name as written in model files and reports.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl LinkId {
    /// The id of the link from `down` (farther from the CPU) to `up`.
    pub fn between(down: &ComponentId, up: &ComponentId) -> Self {
        LinkId(format!("{}--{}", down.0, up.0))
    }

    /// Wraps a link id as written by a user (`--inject degrade:rnic0--lsw0:0.5`).
    /// Whether such a link exists is checked against a topology, not here.
    pub fn new(name: impl Into<String>) -> Self {
        LinkId(name.into())
    }

    /// The id as written in reports.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ComponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ComponentId {
    fn from(s: &str) -> Self {
        ComponentId::new(s)
    }
}

impl From<&str> for LinkId {
    fn from(s: &str) -> Self {
        LinkId::new(s)
    }
}

/// Orders device names naturally: `mlx5_2` before `mlx5_10` (as discovery names RNICs in
/// order, and as readers of other tools' host files do).
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn split(s: &str) -> (&str, Option<u64>) {
        let head = s.trim_end_matches(|c: char| c.is_ascii_digit());
        (head, s[head.len()..].parse().ok())
    }
    split(a).cmp(&split(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_id_is_downstream_then_upstream() {
        let id = LinkId::between(&"rnic0".into(), &"lsw0".into());
        assert_eq!(id.as_str(), "rnic0--lsw0");
    }

    #[test]
    fn ids_serialize_as_plain_strings() {
        let json = serde_json::to_string(&LinkId::from("usw0--cpu0")).unwrap();
        assert_eq!(json, "\"usw0--cpu0\"");
    }

    #[test]
    fn devices_sort_naturally() {
        let mut names = vec!["mlx5_10", "rxe0", "mlx5_2", "mlx5_1", "mlx4_0", "siw_eth0"];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            names,
            ["mlx4_0", "mlx5_1", "mlx5_2", "mlx5_10", "rxe0", "siw_eth0"]
        );
    }
}
