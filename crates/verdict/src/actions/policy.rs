//! The policy file (`hostping collector --actions FILE`, `hostping job --actions FILE`):
//! TOML, every field optional but the file itself. Unknown fields and values out of range
//! are refused, naming the file and the field, so that a typo never leaves a policy that
//! acts more than its author meant.
//!
//! ```toml
//! mode = "act"                  # or "dry-run" (the default): propose and record only
//! kinds = ["drain", "alert"]    # what acts
//! layers = ["host", "rnic", "fabric"]
//! causes = ["pcie_downgraded"]  # absent: every cause
//! min_score = 0.8               # the culprit's smallest score
//! confirm = 2                   # windows a confirmed culprit must repeat in
//! resume_after = 3              # healthy checks of a drained host before it is resumed
//! alertmanager = "http://127.0.0.1:9093"
//!
//! [limits]
//! per_hour = 4                  # actions taken in any hour, drains and alerts together
//! drained_share = 0.1           # of a Slurm partition's nodes drained at once, at most
//! ```

use std::path::{Path, PathBuf};

use model::action::ActionKind;
use model::job::Layer;
use serde::Deserialize;

/// Whether the policy acts or only says what it would do.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Deserialize)]
pub enum Mode {
    /// Propose and record, do nothing (the default).
    #[default]
    #[serde(rename = "dry-run")]
    DryRun,
    /// Drain and alert.
    #[serde(rename = "act")]
    Act,
}

/// The limits on what is taken.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Actions taken (or proposed, in dry-run) in any hour, drains and alerts together.
    #[serde(default = "default_per_hour")]
    pub per_hour: u32,
    /// The largest share of a Slurm partition's nodes drained at once, by anyone: a drain
    /// that would pass it is refused.
    #[serde(default = "default_drained_share")]
    pub drained_share: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_hour: default_per_hour(),
            drained_share: default_drained_share(),
        }
    }
}

fn default_per_hour() -> u32 {
    4
}
fn default_drained_share() -> f64 {
    0.1
}
fn default_kinds() -> Vec<ActionKind> {
    vec![ActionKind::Drain, ActionKind::Alert]
}
fn default_layers() -> Vec<Layer> {
    vec![Layer::Host, Layer::Rnic, Layer::Fabric]
}
fn default_min_score() -> f64 {
    0.8
}
fn default_confirm() -> u32 {
    2
}
fn default_resume_after() -> u32 {
    3
}

/// The policy as read from its file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Act or only propose.
    #[serde(default)]
    pub mode: Mode,
    /// The kinds of action that act.
    #[serde(default = "default_kinds")]
    pub kinds: Vec<ActionKind>,
    /// The culprits' layers that act (`job` never does: a job's own pattern is no host's
    /// fault).
    #[serde(default = "default_layers")]
    pub layers: Vec<Layer>,
    /// The causes that act; `None`: every cause.
    #[serde(default)]
    pub causes: Option<Vec<String>>,
    /// The culprit's smallest score, 0 to 1.
    #[serde(default = "default_min_score")]
    pub min_score: f64,
    /// The windows (verdicts) a culprit confirmed by follow-ups must have been confirmed
    /// in, this one included.
    #[serde(default = "default_confirm")]
    pub confirm: u32,
    /// The consecutive healthy checks of a host hostping drained before it resumes it.
    #[serde(default = "default_resume_after")]
    pub resume_after: u32,
    /// Alertmanager's URL (`http://host:9093`), for `alert`.
    #[serde(default)]
    pub alertmanager: Option<String>,
    /// The limits.
    #[serde(default)]
    pub limits: Limits,
}

/// Why a policy file was refused: each names the file, and the field where there is one.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("--actions {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML, or has a field the policy does not know or a value of the
    /// wrong type (TOML's message names the field and the line).
    #[error("--actions {}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// TOML's message, in one line.
        message: String,
    },
    /// A field's value is out of its range.
    #[error("--actions {}: field `{field}`: {why}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field (`limits.drained_share`).
        field: &'static str,
        /// What is wrong.
        why: String,
    },
}

impl Policy {
    /// Reads and checks the policy in `path`.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Policy::parse(path, &text)
    }

    /// Checks the policy `text`, read from `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Policy, PolicyError> {
        let policy: Policy = toml::from_str(text).map_err(|e| PolicyError::Syntax {
            path: path.to_path_buf(),
            message: one_line(&e),
        })?;
        let field = |field: &'static str, why: &str| PolicyError::Field {
            path: path.to_path_buf(),
            field,
            why: why.to_string(),
        };
        if !(0.0..=1.0).contains(&policy.min_score) {
            return Err(field("min_score", "must be within 0 and 1"));
        }
        if !(policy.limits.drained_share > 0.0 && policy.limits.drained_share <= 1.0) {
            return Err(field(
                "limits.drained_share",
                "must be within 0 and 1 (above 0: a share of 0 would refuse every drain; \
                 leave `drain` out of `kinds` for that)",
            ));
        }
        if policy.confirm == 0 {
            return Err(field("confirm", "must be at least 1 (this window)"));
        }
        if policy.resume_after == 0 {
            return Err(field("resume_after", "must be at least 1 healthy check"));
        }
        if policy.layers.contains(&Layer::Job) {
            return Err(field(
                "layers",
                "`job` cannot act: a job's own pattern or mapping is no host's or cable's fault",
            ));
        }
        if policy.causes.as_ref().is_some_and(|c| c.is_empty()) {
            return Err(field(
                "causes",
                "is empty: no culprit would act (leave it out for every cause)",
            ));
        }
        if policy.kinds.contains(&ActionKind::Alert) {
            match &policy.alertmanager {
                None => {
                    return Err(field(
                        "alertmanager",
                        "is needed for `alert` in `kinds` (Alertmanager's URL, \
                         http://host:9093)",
                    ))
                }
                Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                    return Err(field("alertmanager", "must be an http:// or https:// URL"))
                }
                Some(_) => {}
            }
        }
        Ok(policy)
    }

    /// Whether `kind` acts.
    pub fn acts(&self, kind: ActionKind) -> bool {
        self.kinds.contains(&kind)
    }
}

/// TOML's message without its snippet: the first line, and the line that names the key.
fn one_line(e: &toml::de::Error) -> String {
    let message = e.message().trim().to_string();
    match e.span() {
        Some(_) => {
            let at = e.to_string();
            let first = at.lines().next().unwrap_or_default().trim().to_string();
            // `TOML parse error at line 3, column 1`
            let place = first.strip_prefix("TOML parse error at ").unwrap_or(&first);
            format!("{place}: {message}")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Policy, String> {
        Policy::parse(Path::new("/etc/hostping/actions.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn an_empty_file_is_a_dry_run_with_the_defaults() {
        let p = parse("kinds = [\"drain\"]").unwrap();
        assert_eq!(p.mode, Mode::DryRun);
        assert_eq!(p.kinds, vec![ActionKind::Drain]);
        assert_eq!(p.layers, vec![Layer::Host, Layer::Rnic, Layer::Fabric]);
        assert_eq!(p.causes, None);
        assert_eq!(p.min_score, 0.8);
        assert_eq!(p.confirm, 2);
        assert_eq!(p.resume_after, 3);
        assert_eq!(p.limits, Limits::default());
    }

    #[test]
    fn every_field_is_read() {
        let p = parse(
            r#"
mode = "act"
kinds = ["drain", "alert"]
layers = ["host", "fabric"]
causes = ["pcie_downgraded", "link_degraded"]
min_score = 0.5
confirm = 3
resume_after = 2
alertmanager = "http://127.0.0.1:9093"
[limits]
per_hour = 7
drained_share = 0.25
"#,
        )
        .unwrap();
        assert_eq!(p.mode, Mode::Act);
        assert_eq!(p.layers, vec![Layer::Host, Layer::Fabric]);
        assert_eq!(
            p.causes,
            Some(vec!["pcie_downgraded".into(), "link_degraded".into()])
        );
        assert_eq!(p.min_score, 0.5);
        assert_eq!(p.confirm, 3);
        assert_eq!(p.resume_after, 2);
        assert_eq!(p.alertmanager.as_deref(), Some("http://127.0.0.1:9093"));
        assert_eq!(p.limits.per_hour, 7);
        assert_eq!(p.limits.drained_share, 0.25);
    }

    #[test]
    fn bad_files_are_refused_naming_the_file_and_the_field() {
        let cases = [
            (
                "kinds = [\"drain\"]\n[limits]\ndrained_share = 1.5",
                "--actions /etc/hostping/actions.toml: field `limits.drained_share`: must be within 0 and 1",
            ),
            ("kinds = [\"drain\"]\nmin_score = -1", "field `min_score`: must be within 0 and 1"),
            ("kinds = [\"drain\"]\nconfirm = 0", "field `confirm`: must be at least 1"),
            ("kinds = [\"drain\"]\nresume_after = 0", "field `resume_after`"),
            ("kinds = [\"drain\"]\nlayers = [\"job\"]", "field `layers`: `job` cannot act"),
            ("kinds = [\"drain\"]\ncauses = []", "field `causes`: is empty"),
            ("", "field `alertmanager`: is needed for `alert`"),
            ("alertmanager = \"127.0.0.1:9093\"", "field `alertmanager`: must be an http://"),
            ("mode = \"yes\"", "unknown variant `yes`, expected `dry-run` or `act`"),
            ("moed = \"act\"", "line 1, column 1: unknown field `moed`"),
            ("kinds = [\"drain\"]\n[limits]\nper_hour = 1\nshare = 0.1", "unknown field `share`"),
            ("kinds = [\"reboot\"]", "unknown variant `reboot`"),
            ("min_score = ", "/etc/hostping/actions.toml: line 1"),
        ];
        for (text, want) in cases {
            let got = parse(text).expect_err(text);
            assert!(got.contains(want), "{text:?}: {got}");
            assert!(
                got.starts_with("--actions /etc/hostping/actions.toml: "),
                "{got}"
            );
            assert!(!got.contains('\n'), "{got}");
        }
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = Policy::load(Path::new("/nonexistent/actions.toml")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--actions /nonexistent/actions.toml: "),
            "{e}"
        );
    }
}
