//! The baseline: per path, the latency and bandwidth of a healthy idle host of the same
//! hardware and configuration (Hostping 4.3), stored as JSON.

use crate::hostfile::ModelError;
use crate::ids::ComponentId;
use crate::measure::Provenance;
use crate::topology::HostTopology;
use serde::{Deserialize, Serialize};

/// The baseline of one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselinePath {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The endpoint.
    pub endpoint: ComponentId,
    /// Small-message median latency, us.
    pub latency_us: f64,
    /// Bandwidth by Hostping eq. 3, Gb/s.
    pub bandwidth_gbps: f64,
}

/// A baseline for every path of one host model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Host model name it was recorded on.
    pub host: String,
    /// Measured or simulated.
    pub provenance: Provenance,
    /// How many healthy runs it is the median of.
    pub runs: u32,
    /// Per path.
    pub paths: Vec<BaselinePath>,
}

impl Baseline {
    /// The baseline of one path.
    pub fn path(&self, rnic: &ComponentId, endpoint: &ComponentId) -> Option<&BaselinePath> {
        self.paths
            .iter()
            .find(|p| &p.rnic == rnic && &p.endpoint == endpoint)
    }

    /// Checks that the baseline fits `host`: same model name, and no path the host lacks.
    /// A host path missing from the baseline (one that could not be probed when it was
    /// recorded) is allowed: it is judged "no baseline". Errors name `source_name`.
    pub fn check_fits(&self, host: &HostTopology, source_name: &str) -> Result<(), ModelError> {
        let error = |field: &str, reason: String| ModelError {
            source_name: source_name.to_string(),
            field: field.to_string(),
            reason,
        };
        if self.host != host.name {
            return Err(error(
                "host",
                format!(
                    "baseline was recorded on `{}`, not `{}`",
                    self.host, host.name
                ),
            ));
        }
        let unknown: Vec<String> = self
            .paths
            .iter()
            .filter(|p| host.path(&p.rnic, &p.endpoint).is_none())
            .map(|p| format!("{}->{}", p.rnic, p.endpoint))
            .collect();
        if !unknown.is_empty() {
            let reason = format!("{} has no path {}", host.name, unknown.join(", "));
            return Err(error("paths", reason));
        }
        Ok(())
    }

    /// Parses a baseline file; errors name the file and the field.
    pub fn from_json(source_name: &str, text: &str) -> Result<Baseline, ModelError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let b: Baseline = serde_path_to_error::deserialize(&mut de).map_err(|e| ModelError {
            source_name: source_name.to_string(),
            field: e.path().to_string(),
            reason: e.into_inner().to_string(),
        })?;
        for (i, p) in b.paths.iter().enumerate() {
            for (name, v) in [
                ("latency_us", p.latency_us),
                ("bandwidth_gbps", p.bandwidth_gbps),
            ] {
                if !(v > 0.0 && v.is_finite()) {
                    return Err(ModelError {
                        source_name: source_name.to_string(),
                        field: format!("paths[{i}].{name}"),
                        reason: format!("must be positive, got {v}"),
                    });
                }
            }
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_bad_fields() {
        let b = Baseline {
            host: "dgx-a100".into(),
            provenance: Provenance::Simulated,
            runs: 3,
            paths: vec![BaselinePath {
                rnic: "rnic0".into(),
                endpoint: "mem0".into(),
                latency_us: 2.1,
                bandwidth_gbps: 199.0,
            }],
        };
        let text = serde_json::to_string(&b).unwrap();
        assert_eq!(Baseline::from_json("b.json", &text).unwrap(), b);
        let e = Baseline::from_json("b.json", &text.replace("199.0", "\"fast\"")).unwrap_err();
        assert_eq!(e.field, "paths[0].bandwidth_gbps");
        let e = Baseline::from_json("b.json", &text.replace("199.0", "-1.0")).unwrap_err();
        assert_eq!(e.field, "paths[0].bandwidth_gbps");
        assert!(e.to_string().starts_with("b.json: "));
    }
}
