//! Scenario files: a simulated host, faults, how many runs, and the expected diagnosis
//! (format documented in `scenarios/README.md`). The suite in `scenarios/` reproduces the
//! twelve cases of Hostping Section 6 plus a healthy idle and a healthy busy host; it is
//! embedded in the crate at build time (`build.rs`, [`Scenario::builtin`]), so the binary
//! runs it from any folder.

use crate::pipeline::{self, CheckSettings};
use crate::sim;
use analyze::ModeChoice;
use model::{Cause, Diagnosis, HostTopology, LinkId, Report, Setting};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use vhost::{Fault, VhostConfig};

/// A scenario file that cannot be used: one line naming the file, the field and the reason.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {field}: {reason}")]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// The field at fault.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    case: String,
    title: String,
    #[serde(default)]
    source: String,
    host: String,
    #[serde(default)]
    inject: Vec<String>,
    #[serde(default = "one")]
    runs: u32,
    #[serde(default = "one_u64")]
    seed: u64,
    #[serde(default)]
    mode: Option<String>,
    expect: RawExpect,
}

fn one() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    healthy: bool,
    /// Compared only when given: whether some link is left unjudged (DESIGN 4.3).
    inconclusive: Option<bool>,
    #[serde(default, rename = "diagnosis")]
    diagnoses: Vec<RawDiagnosis>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiagnosis {
    cause: String,
    links: Option<Vec<String>>,
    rnic: Option<String>,
    setting: Option<Setting>,
    evidence_contains: Option<String>,
}

/// One expected diagnosis. Fields left out of the file are not compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// The cause.
    pub cause: Cause,
    /// The links, compared as a set; `None` when the file leaves them out.
    pub links: Option<Vec<LinkId>>,
    /// The RNIC, if the scenario names one.
    pub rnic: Option<String>,
    /// The setting, if the scenario names one.
    pub setting: Option<Setting>,
    /// Text the evidence must contain, if given.
    pub evidence_contains: Option<String>,
}

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file it came from.
    pub file: PathBuf,
    /// The case label (`#6`, `healthy-idle`).
    pub case: String,
    /// What the case is, in words.
    pub title: String,
    /// Where it comes from in the papers.
    pub source: String,
    /// The host model.
    pub host: HostTopology,
    /// Faults to inject.
    pub faults: Vec<Fault>,
    /// Runs in the series; the last one is judged.
    pub runs: u32,
    /// Seed of the virtual host.
    pub seed: u64,
    /// Mode choice.
    pub mode: ModeChoice,
    /// Whether the last run must be healthy.
    pub healthy: bool,
    /// Whether the last run must be inconclusive (some link unjudged); not compared when
    /// the file leaves it out.
    pub inconclusive: Option<bool>,
    /// The diagnoses the last run must give, no more and no fewer.
    pub expected: Vec<Expected>,
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(file: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(file).map_err(|e| ScenarioError {
            file: file.display().to_string(),
            field: "file".into(),
            reason: e.to_string(),
        })?;
        Scenario::parse(file, &text)
    }

    /// Validates the scenario `text` read from `file` (a host-model file it names is
    /// relative to `file`'s folder).
    fn parse(file: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let name = file.display().to_string();
        let err = |field: &str, reason: String| ScenarioError {
            file: name.clone(),
            field: field.to_string(),
            reason,
        };
        let raw: RawScenario = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|e| {
                let field = e.path().to_string();
                let reason = e
                    .inner()
                    .message()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                err(if field == "." { "toml" } else { &field }, reason)
            })?;
        let host_ref = if model::builtin::source(&raw.host).is_some() {
            raw.host.clone()
        } else {
            file.parent()
                .unwrap_or(Path::new("."))
                .join(&raw.host)
                .display()
                .to_string()
        };
        let host = sim::load_host(&host_ref).map_err(|e| err("host", e.to_string()))?;
        let mut faults = Vec::new();
        for (i, f) in raw.inject.iter().enumerate() {
            faults.push(
                Fault::parse(f, &host).map_err(|e| err(&format!("inject[{i}]"), e.to_string()))?,
            );
        }
        if raw.runs == 0 {
            return Err(err("runs", "must be at least 1".into()));
        }
        let mode = match raw.mode.as_deref() {
            None | Some("auto") => ModeChoice::Auto,
            Some("idle") => ModeChoice::Idle,
            Some("busy") => ModeChoice::Busy,
            Some(other) => {
                return Err(err(
                    "mode",
                    format!("`{other}` is not one of auto, idle, busy"),
                ))
            }
        };
        let mut expected = Vec::new();
        for (i, d) in raw.expect.diagnoses.into_iter().enumerate() {
            let field = |f: &str| format!("expect.diagnosis[{i}].{f}");
            let cause = Cause::from_name(&d.cause)
                .ok_or_else(|| err(&field("cause"), format!("unknown cause `{}`", d.cause)))?;
            for l in d.links.iter().flatten() {
                if host.link(&LinkId::from(l.as_str())).is_none() {
                    return Err(err(
                        &field("links"),
                        format!("no link `{l}` in {}", host.name),
                    ));
                }
            }
            if let Some(r) = &d.rnic {
                if host
                    .component(&r.as_str().into())
                    .and_then(|c| c.rnic())
                    .is_none()
                {
                    return Err(err(
                        &field("rnic"),
                        format!("no rnic `{r}` in {}", host.name),
                    ));
                }
            }
            expected.push(Expected {
                cause,
                links: d
                    .links
                    .map(|ls| ls.iter().map(|l| LinkId::from(l.as_str())).collect()),
                rnic: d.rnic,
                setting: d.setting,
                evidence_contains: d.evidence_contains,
            });
        }
        let inconclusive_only = raw.expect.inconclusive == Some(true) && expected.is_empty();
        if raw.expect.healthy && (raw.expect.inconclusive == Some(true) || !expected.is_empty()) {
            return Err(err(
                "expect",
                "a healthy expectation has no diagnosis and is not inconclusive".into(),
            ));
        }
        if !raw.expect.healthy && expected.is_empty() && !inconclusive_only {
            return Err(err(
                "expect",
                "an unhealthy expectation has at least one diagnosis, or is inconclusive".into(),
            ));
        }
        Ok(Scenario {
            file: file.to_path_buf(),
            case: raw.case,
            title: raw.title,
            source: raw.source,
            host,
            faults,
            runs: raw.runs,
            seed: raw.seed,
            mode,
            healthy: raw.expect.healthy,
            inconclusive: raw.expect.inconclusive,
            expected,
        })
    }

    /// Loads every `*.toml` in a folder, sorted by file name.
    pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
        let entries = std::fs::read_dir(dir).map_err(|e| ScenarioError {
            file: dir.display().to_string(),
            field: "folder".into(),
            reason: e.to_string(),
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        files.iter().map(|f| Scenario::load(f)).collect()
    }

    /// The suite shipped in the binary: the repository's `scenarios/` folder as it was built,
    /// sorted by file name, each named `scenarios/FILE`.
    pub fn builtin() -> Result<Vec<Scenario>, ScenarioError> {
        const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));
        EMBEDDED
            .iter()
            .map(|(name, text)| Scenario::parse(&Path::new("scenarios").join(name), text))
            .collect()
    }

    /// Runs the scenario's series on a virtual host and judges the last report.
    pub fn run(&self) -> ScenarioRun {
        let settings = CheckSettings {
            runs: self.runs,
            mode: self.mode,
            ..CheckSettings::default()
        };
        let baseline = crate::record::simulated(
            &self.host,
            crate::record::DEFAULT_RUNS,
            self.seed,
            &settings.latency,
            VhostConfig::default().noise,
        );
        let reports = pipeline::check_virtual(
            &self.host,
            self.faults.clone(),
            self.seed,
            &baseline,
            &settings,
        );
        let last = reports.into_iter().last().expect("runs >= 1");
        let pass = last.healthy == self.healthy
            && self.inconclusive.is_none_or(|i| i == last.inconclusive)
            && matches_exactly(&self.expected, &last.diagnoses);
        ScenarioRun { pass, report: last }
    }

    /// The expectation in the short form used by `bench scenarios`.
    pub fn expected_summary(&self) -> String {
        if self.healthy {
            return "healthy".into();
        }
        if self.expected.is_empty() {
            return "inconclusive".into();
        }
        let parts: Vec<String> = self
            .expected
            .iter()
            .map(|e| {
                summary(
                    e.cause,
                    e.links.as_deref().unwrap_or_default(),
                    e.rnic.as_deref(),
                    e.setting,
                )
            })
            .collect();
        parts.join("; ")
    }
}

/// The result of running a scenario: whether its last report matched the expectation.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    /// Whether the last report matched the expectation.
    pub pass: bool,
    /// The last report.
    pub report: Report,
}

impl ScenarioRun {
    /// What was diagnosed, in the short form used by `bench scenarios`.
    pub fn got_summary(&self) -> String {
        if self.report.healthy {
            return "healthy".into();
        }
        if self.report.diagnoses.is_empty() {
            return if self.report.inconclusive {
                "inconclusive".into()
            } else {
                "unhealthy, no diagnosis".into()
            };
        }
        let parts: Vec<String> = self
            .report
            .diagnoses
            .iter()
            .map(|d| {
                summary(
                    d.cause,
                    &d.links,
                    d.rnic.as_ref().map(|r| r.as_str()),
                    d.setting,
                )
            })
            .collect();
        parts.join("; ")
    }
}

/// `cause(setting)@rnic[link, link]`, the parts that are present.
pub fn summary(
    cause: Cause,
    links: &[LinkId],
    rnic: Option<&str>,
    setting: Option<Setting>,
) -> String {
    let mut s = cause.as_str().to_string();
    if let Some(setting) = setting {
        let name = serde_json::to_value(setting)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        s.push_str(&format!("({name})"));
    }
    if let Some(r) = rnic {
        s.push_str(&format!("@{r}"));
    }
    if !links.is_empty() {
        let mut names: Vec<&str> = links.iter().map(LinkId::as_str).collect();
        names.sort_unstable();
        s.push_str(&format!("[{}]", names.join(",")));
    }
    s
}

fn matches_one(e: &Expected, d: &Diagnosis) -> bool {
    let same_links = e.links.as_ref().is_none_or(|want| {
        let mut want: Vec<&LinkId> = want.iter().collect();
        let mut got: Vec<&LinkId> = d.links.iter().collect();
        want.sort();
        got.sort();
        want == got
    });
    e.cause == d.cause
        && same_links
        && e.rnic
            .as_deref()
            .is_none_or(|r| d.rnic.as_ref().map(|x| x.as_str()) == Some(r))
        && e.setting.is_none_or(|s| d.setting == Some(s))
        && e.evidence_contains
            .as_deref()
            .is_none_or(|t| d.evidence.contains(t))
}

/// Every expected diagnosis matches a distinct diagnosis, and there are no others.
pub fn matches_exactly(expected: &[Expected], got: &[Diagnosis]) -> bool {
    if expected.len() != got.len() {
        return false;
    }
    let mut used = vec![false; got.len()];
    expected.iter().all(|e| {
        let found = got
            .iter()
            .enumerate()
            .position(|(i, d)| !used[i] && matches_one(e, d));
        if let Some(i) = found {
            used[i] = true;
        }
        found.is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(cause: Cause, links: &[&str]) -> Diagnosis {
        Diagnosis {
            cause,
            links: links.iter().map(|l| (*l).into()).collect(),
            rnic: None,
            setting: None,
            evidence: "x".into(),
        }
    }

    fn exp(cause: Cause, links: &[&str]) -> Expected {
        Expected {
            cause,
            links: Some(links.iter().map(|l| (*l).into()).collect()),
            rnic: None,
            setting: None,
            evidence_contains: None,
        }
    }

    #[test]
    fn matching_is_exact_on_cause_and_link_set() {
        let got = [diag(Cause::LinkFailure, &["b", "a"])];
        assert!(matches_exactly(
            &[exp(Cause::LinkFailure, &["a", "b"])],
            &got
        ));
        assert!(!matches_exactly(&[exp(Cause::LinkFailure, &["a"])], &got));
        assert!(!matches_exactly(
            &[exp(Cause::LinkOverloaded, &["a", "b"])],
            &got
        ));
        assert!(!matches_exactly(&[], &got));
        let two = [
            diag(Cause::LinkFailure, &["a"]),
            diag(Cause::LinkFailure, &["a"]),
        ];
        assert!(!matches_exactly(&[exp(Cause::LinkFailure, &["a"])], &two));
    }

    #[test]
    fn optional_fields_are_compared_when_given() {
        let mut d = diag(Cause::RnicMisconfiguration, &[]);
        d.rnic = Some("rnic0".into());
        d.setting = Some(Setting::SlowStart);
        let mut e = exp(Cause::RnicMisconfiguration, &[]);
        assert!(matches_exactly(&[e.clone()], &[d.clone()]));
        d.links = vec!["x".into()];
        assert!(
            !matches_exactly(&[e.clone()], &[d.clone()]),
            "an empty link list is compared"
        );
        e.links = None;
        assert!(
            matches_exactly(&[e.clone()], &[d.clone()]),
            "an absent link list is not"
        );
        e.setting = Some(Setting::TxWindow);
        assert!(!matches_exactly(&[e.clone()], &[d.clone()]));
        e.setting = Some(Setting::SlowStart);
        e.rnic = Some("rnic1".into());
        assert!(!matches_exactly(&[e], &[d]));
    }

    #[test]
    fn summaries_are_stable() {
        let s = summary(
            Cause::PcieMisconfiguration,
            &["b".into(), "a".into()],
            Some("rnic0"),
            Some(Setting::AtsOff),
        );
        assert_eq!(s, "pcie_misconfiguration(ats_off)@rnic0[a,b]");
    }

    #[test]
    fn the_embedded_suite_is_the_scenarios_folder() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let on_disk = Scenario::load_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        let embedded = Scenario::builtin().unwrap_or_else(|e| panic!("{e}"));
        let key = |s: &Scenario| {
            (
                s.file.file_name().map(|n| n.to_owned()),
                s.case.clone(),
                s.faults.clone(),
                s.runs,
                s.seed,
            )
        };
        assert!(embedded.len() >= 32, "{} scenarios", embedded.len());
        assert_eq!(
            embedded.iter().map(key).collect::<Vec<_>>(),
            on_disk.iter().map(key).collect::<Vec<_>>()
        );
        assert!(embedded.iter().all(|s| s.file.starts_with("scenarios")));
    }
}
