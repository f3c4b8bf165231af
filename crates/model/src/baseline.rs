//! The baseline: per path, the latency and bandwidth of a healthy idle host of the same
//! hardware and configuration (Hostping 4.3), stored as JSON.

use crate::hostfile::ModelError;
use crate::ids::ComponentId;
use crate::measure::{Op, Provenance};
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
    /// How the paths were measured: a check measured another way is not comparable (a READ
    /// is not a WRITE, a 64 KiB message is not a 128 KiB one). A file written before this
    /// field existed reads as measured with the defaults of that time, which are today's
    /// ([`MeasuredWith::default`]): no option changed them.
    #[serde(default)]
    pub measured_with: MeasuredWith,
}

/// How a baseline was measured: every probe setting a user can change that moves the
/// numbers the paths are judged by (the latency test of Hostping 4.1.1). Streams are not
/// part of it: a baseline holds no stream results, and streams are reported, not judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredWith {
    /// RDMA WRITE (the paper's loopback) or READ.
    pub op: Op,
    /// Small message, bytes (latency; 1 B, Hostping 4.1.1).
    pub small_bytes: u64,
    /// Large message, bytes (bandwidth by eq. 3; 128 KiB for 200 Gb/s RNICs).
    pub large_bytes: u64,
    /// Untimed iterations before the timed ones.
    pub warmup: u32,
    /// Timed iterations per message size per path.
    pub iterations: u32,
}

impl Default for MeasuredWith {
    /// The probe's defaults (and every baseline's before `measured_with` was recorded).
    fn default() -> Self {
        MeasuredWith {
            op: Op::Write,
            small_bytes: 1,
            large_bytes: 128 * 1024,
            warmup: 16,
            iterations: 1000,
        }
    }
}

impl MeasuredWith {
    /// Each setting in which `check` differs from this baseline, in words: `baseline measured
    /// with --op write, this check uses --op read`. Empty when they agree.
    pub fn differences(&self, check: &MeasuredWith) -> Vec<String> {
        let op = |o: Op| match o {
            Op::Write => "write",
            Op::Read => "read",
        };
        let settings = [
            ("--op", op(self.op).to_string(), op(check.op).to_string()),
            (
                "small message bytes",
                self.small_bytes.to_string(),
                check.small_bytes.to_string(),
            ),
            (
                "large message bytes",
                self.large_bytes.to_string(),
                check.large_bytes.to_string(),
            ),
            (
                "warm-up iterations",
                self.warmup.to_string(),
                check.warmup.to_string(),
            ),
            (
                "--iterations",
                self.iterations.to_string(),
                check.iterations.to_string(),
            ),
        ];
        settings
            .into_iter()
            .filter(|(_, base, now)| base != now)
            .map(|(name, base, now)| {
                format!("baseline measured with {name} {base}, this check uses {name} {now}")
            })
            .collect()
    }
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
            measured_with: MeasuredWith::default(),
        };
        let text = serde_json::to_string(&b).unwrap();
        assert_eq!(Baseline::from_json("b.json", &text).unwrap(), b);
        let e = Baseline::from_json("b.json", &text.replace("199.0", "\"fast\"")).unwrap_err();
        assert_eq!(e.field, "paths[0].bandwidth_gbps");
        let e = Baseline::from_json("b.json", &text.replace("199.0", "-1.0")).unwrap_err();
        assert_eq!(e.field, "paths[0].bandwidth_gbps");
        assert!(e.to_string().starts_with("b.json: "));
    }

    #[test]
    fn a_file_without_measured_with_reads_as_todays_defaults() {
        let text = r#"{"host": "dgx-a100", "provenance": "simulated", "runs": 3, "paths": []}"#;
        let b = Baseline::from_json("old.json", text).unwrap();
        assert_eq!(b.measured_with, MeasuredWith::default());
        assert_eq!(b.measured_with.op, Op::Write);
    }

    #[test]
    fn differences_name_each_setting_both_ways() {
        let base = MeasuredWith::default();
        assert!(base.differences(&base).is_empty());
        let check = MeasuredWith {
            op: Op::Read,
            iterations: 200,
            ..base
        };
        assert_eq!(
            base.differences(&check),
            [
                "baseline measured with --op write, this check uses --op read",
                "baseline measured with --iterations 1000, this check uses --iterations 200"
            ]
        );
    }
}
