//! What the analyzer concludes: path and link status, diagnoses, and the report that
//! `hostping check --format json` prints (DESIGN 4.3: add fields, never rename or drop).

use crate::ids::{ComponentId, LinkId};
use crate::measure::{Mode, Provenance, StreamResult};
use crate::topology::LinkKind;
use crate::Thresholds;
use serde::{Deserialize, Serialize};

/// Status of a path (DESIGN 2; Hostping 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathStatus {
    /// As good as the baseline on a path that could show a degraded link.
    Normal,
    /// More than Abnormal_th below the baseline (or, in busy mode, below its siblings).
    Abnormal,
    /// Not below the baseline, but the path could not have shown a degraded link (a
    /// latency-bound GDR path, a busy RNIC), or the probe failed.
    Uncertain,
}

/// Status of a link after binary tomography (Hostping Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkStatus {
    /// No path judged it.
    Uncertain,
    /// On a normal path.
    Normal,
    /// On an abnormal path and on no normal one.
    Abnormal,
    /// On an abnormal path whose links are all on normal paths too (possibly flapping).
    Gray,
}

impl PathStatus {
    /// The name used in reports and stored rows (`normal`, ...), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            PathStatus::Normal => "normal",
            PathStatus::Abnormal => "abnormal",
            PathStatus::Uncertain => "uncertain",
        }
    }
}

impl LinkStatus {
    /// The name used in reports and stored rows (`gray`, ...), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkStatus::Uncertain => "uncertain",
            LinkStatus::Normal => "normal",
            LinkStatus::Abnormal => "abnormal",
            LinkStatus::Gray => "gray",
        }
    }
}

/// Root causes (DESIGN 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A link lost bandwidth (hardware failure).
    LinkFailure,
    /// A link alternates between healthy and degraded.
    LinkFlapping,
    /// A link is saturated by other traffic.
    LinkOverloaded,
    /// ACS redirect enabled, or ATS disabled.
    PcieMisconfiguration,
    /// RNIC slow start enabled, or a Tx window too small.
    RnicMisconfiguration,
    /// IOTLB misses throttle DMA (HotNets'22).
    IommuCongestion,
    /// Memory-bus contention throttles DMA (HotNets'22).
    MemoryBusCongestion,
    /// On-demand paging stalls (ISPASS'21).
    OdpStall,
}

impl Cause {
    /// Every cause, in the order of DESIGN 4.3 (help texts and error messages list them from
    /// here, so a new cause shows up everywhere).
    pub const ALL: [Cause; 8] = [
        Cause::LinkFailure,
        Cause::LinkFlapping,
        Cause::LinkOverloaded,
        Cause::PcieMisconfiguration,
        Cause::RnicMisconfiguration,
        Cause::IommuCongestion,
        Cause::MemoryBusCongestion,
        Cause::OdpStall,
    ];

    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::LinkFailure => "link_failure",
            Cause::LinkFlapping => "link_flapping",
            Cause::LinkOverloaded => "link_overloaded",
            Cause::PcieMisconfiguration => "pcie_misconfiguration",
            Cause::RnicMisconfiguration => "rnic_misconfiguration",
            Cause::IommuCongestion => "iommu_congestion",
            Cause::MemoryBusCongestion => "memory_bus_congestion",
            Cause::OdpStall => "odp_stall",
        }
    }

    /// Parses a report name.
    pub fn from_name(s: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Which setting a misconfiguration diagnosis names (a field added to DESIGN 4.3, so that
/// scripts need not parse `evidence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// ACS P2P request redirect on PCIe switch ports.
    Acs,
    /// Address Translation Service disabled on the RNIC.
    AtsOff,
    /// RNIC "slow start" enabled.
    SlowStart,
    /// RNIC per-QP Tx window too small.
    TxWindow,
}

/// One root cause with the links it implicates and the evidence for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The root cause.
    pub cause: Cause,
    /// The links implicated. When tomography cannot tell links apart (they lie on exactly
    /// the same paths) all of them are named.
    pub links: Vec<LinkId>,
    /// The RNIC, for RNIC misconfigurations (and ATS, which is an RNIC setting).
    pub rnic: Option<ComponentId>,
    /// The setting, for misconfigurations.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub setting: Option<Setting>,
    /// Plain words: what was measured and why it points here.
    pub evidence: String,
}

/// One path in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathReport {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The endpoint.
    pub endpoint: ComponentId,
    /// Small-message median latency, us (null if the probe failed).
    pub latency_us: Option<f64>,
    /// Bandwidth by Hostping eq. 3, Gb/s (null if the probe failed).
    pub bandwidth_gbps: Option<f64>,
    /// Baseline latency, us.
    pub baseline_latency_us: Option<f64>,
    /// Baseline bandwidth, Gb/s.
    pub baseline_bandwidth_gbps: Option<f64>,
    /// Path status.
    pub status: PathStatus,
    /// Whether the small-message latency is more than Abnormal_th above the baseline.
    pub latency_abnormal: bool,
    /// Whether the RNIC reaches this endpoint at line rate.
    pub affinitive: bool,
    /// Why the probe failed, or (`unavailable: ...`) why it could not be made.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// The engine cannot probe this path by design (a GPU without a driver): `error` says
    /// why, and the path is no finding about the host.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub unavailable: bool,
    /// The streaming test, when the run asked for one (`check --stream-qps`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stream: Option<StreamResult>,
    /// Bytes of loopback data verified after the latency test (measured runs only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub verified_bytes: Option<u64>,
    /// The status of each re-probe of this path within the run, in the order they ran
    /// (idle runs re-probe the paths that alone judge a link, and their witnesses; see the
    /// analyzer's `reprobe` module). Empty, and left out, when the path was not re-probed.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub reprobes: Vec<PathStatus>,
}

impl PathReport {
    /// Whether the probe failed on the host (a timeout, a work completion in error, a
    /// refused registration, data that did not arrive intact): a finding the analyzer cannot
    /// judge further. A path unavailable by design is not.
    pub fn failed(&self) -> bool {
        self.error.is_some() && !self.unavailable
    }
}

/// One link in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkReport {
    /// The link.
    pub id: LinkId,
    /// Its kind.
    pub kind: LinkKind,
    /// Status after Algorithm 1.
    pub status: LinkStatus,
    /// How many RNICs marked it abnormal.
    pub abnormal_cnt: u32,
    /// Utilisation from the bus monitor, if read.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub utilisation: Option<f64>,
    /// Set when only latency-bound paths cross the link (no path of the host model reaches
    /// line rate over it) and they were as expected: the link is `normal` down to the loss
    /// those paths could have shown, and no further (Hostping 3.2.2, 4.3). Absent for a
    /// link judged by a path at line rate, or not judged.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bound: Option<LinkBound>,
}

/// How far a link judged only by latency-bound paths was judged (DESIGN 4.3
/// `links[].bound`). A latency-bound path stays below line rate (Hostping 3.2.2), so a
/// link on it can lose part of its capacity before the path slows: "if the bandwidth of a
/// link degrades but is still higher than the RNIC rate, the measured bandwidth is still
/// close to the baseline" (Hostping 4.3). What the paths do show is a loss large enough to
/// bring the link below what they carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkBound {
    /// The share of the link's capacity above which a loss would have made one of its
    /// paths abnormal (0.6: the link could have lost up to 60 % unseen). The smallest over
    /// its paths.
    pub loss_above: f64,
    /// The link's capacity below which that path would have been abnormal, Gb/s.
    pub below_gbps: f64,
    /// The path that sees the smallest loss, `rnic->endpoint`.
    pub path: String,
    /// Every latency-bound path that judged the link, `rnic->endpoint`.
    pub paths: Vec<String>,
}

/// The result of one check (DESIGN 4.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Host model name.
    pub host: String,
    /// Idle or busy.
    pub mode: Mode,
    /// What made the monitors call the host busy: each RNIC above Thp_low with the traffic
    /// it carries, each GPU running work (Hostping 4.2, 5). Empty when idle, or when busy
    /// mode was asked for; written only when not empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<String>,
    /// True when nothing is wrong (and `diagnoses` is empty) and every link was judged.
    pub healthy: bool,
    /// True when some link could not be judged, so the host cannot be called healthy
    /// (DESIGN 4.3, exit status 3); `not_judged` says what and why. `healthy` is then false.
    /// Written only when true, so that a judged report reads as it did before the field; a
    /// report without it (an older agent) reads as judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inconclusive: bool,
    /// What was not judged and why, one entry per reason; empty when everything was judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<NotJudged>,
    /// Measured on a real host, or simulated.
    pub provenance: Provenance,
    /// Index of this run in a `--runs N` series, from 0.
    pub run: u32,
    /// Every probed path.
    pub paths: Vec<PathReport>,
    /// Every link of the host.
    pub links: Vec<LinkReport>,
    /// Root causes found.
    pub diagnoses: Vec<Diagnosis>,
    /// What the paths were judged against, when the caller says (the check pipeline does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineKind>,
    /// The thresholds the run was judged with (Hostping 5's unless the host's configuration
    /// overrides them). They travel with the run, so that whoever judges it again (the
    /// fleet collector against its kind's baseline) uses the host's own and cannot disagree
    /// with the agent; a report without them (an older agent) was judged with the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Thresholds>,
}

/// What one report concludes, as DESIGN 4.3's exit status says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every link judged, nothing wrong (exit 0).
    Healthy,
    /// A diagnosis, an abnormal path or a failed probe (exit 1).
    Findings,
    /// Nothing wrong found, but some link could not be judged (exit 3).
    Inconclusive,
}

impl Verdict {
    /// The name used in views and summaries (`healthy`, `findings`, `inconclusive`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Healthy => "healthy",
            Verdict::Findings => "findings",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

impl Report {
    /// What the report concludes. A finding (a diagnosis, an abnormal path, a failed probe)
    /// outranks "inconclusive": a report with both is `Findings` (exit 1), though its
    /// `inconclusive` stays true.
    pub fn verdict(&self) -> Verdict {
        let finding = !self.diagnoses.is_empty()
            || self
                .paths
                .iter()
                .any(|p| p.status == PathStatus::Abnormal || p.failed());
        if finding {
            Verdict::Findings
        } else if self.inconclusive || !self.healthy {
            // `healthy` false with no finding can only mean unjudged links; an older report
            // that says so without `inconclusive` is still not healthy.
            Verdict::Inconclusive
        } else {
            Verdict::Healthy
        }
    }

    /// The thresholds the run was judged with: its own, or Hostping 5's defaults for a report
    /// that does not carry them.
    pub fn judged_with(&self) -> Thresholds {
        self.thresholds.unwrap_or_default()
    }
}

/// Why part of a host was not judged (DESIGN 4.3's `not_judged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotJudgedReason {
    /// The baseline has no entry for these paths (a stale, truncated or hand-edited file).
    NoBaseline,
    /// These paths were not probed (the host model has none, or they were left out).
    NotProbed,
    /// The probe of these paths failed (a timeout, a work completion in error).
    ProbeFailed,
    /// The paths were probed but could not have shown a degraded link (a latency-bound GDR
    /// path, a busy RNIC, a capacity the host does not report, as in a virtual machine).
    NotMeasurable,
}

impl NotJudgedReason {
    /// The name used in reports and stored rows (`no_baseline`, ...), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            NotJudgedReason::NoBaseline => "no_baseline",
            NotJudgedReason::NotProbed => "not_probed",
            NotJudgedReason::ProbeFailed => "probe_failed",
            NotJudgedReason::NotMeasurable => "not_measurable",
        }
    }
}

/// One reason some paths and links were not judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotJudged {
    /// Why.
    pub reason: NotJudgedReason,
    /// The paths concerned, as `rnic->endpoint`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The links left unjudged because of it (no judged path covers them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkId>,
    /// The same for people: what, why, and what to do.
    pub detail: String,
}

/// Where a check's per-path references came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaselineKind {
    /// A baseline file recorded by `hostping baseline` (measured or simulated).
    Recorded,
    /// A healthy virtual host of the same model (the default of a simulated check).
    Simulated,
    /// No baseline: each path against the RNIC's line rate (affinitive paths of a hardware
    /// RNIC) or the best of its peers in the same run (the default on a real host).
    Relative,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LinkKind, Mode, Provenance};

    fn serde_name<T: Serialize>(value: T) -> String {
        match serde_json::to_value(value).unwrap() {
            serde_json::Value::String(s) => s,
            other => panic!("not a name: {other}"),
        }
    }

    /// Stored rows and metric labels use `as_str`; reports use serde: they must agree.
    #[test]
    fn every_name_is_the_serialised_one() {
        use PathStatus as P;
        for v in [P::Normal, P::Abnormal, P::Uncertain] {
            assert_eq!(v.as_str(), serde_name(v));
        }
        use LinkStatus as L;
        for v in [L::Uncertain, L::Normal, L::Abnormal, L::Gray] {
            assert_eq!(v.as_str(), serde_name(v));
        }
        use Cause as C;
        for v in [
            C::LinkFailure,
            C::LinkFlapping,
            C::LinkOverloaded,
            C::PcieMisconfiguration,
            C::RnicMisconfiguration,
            C::IommuCongestion,
            C::MemoryBusCongestion,
            C::OdpStall,
        ] {
            assert_eq!(v.as_str(), serde_name(v));
            assert_eq!(Cause::from_name(v.as_str()), Some(v));
        }
        for v in [Mode::Idle, Mode::Busy] {
            assert_eq!(v.as_str(), serde_name(v));
        }
        for v in [Provenance::Measured, Provenance::Simulated] {
            assert_eq!(v.as_str(), serde_name(v));
        }
        use NotJudgedReason as N;
        for v in [
            N::NoBaseline,
            N::NotProbed,
            N::ProbeFailed,
            N::NotMeasurable,
        ] {
            assert_eq!(v.as_str(), serde_name(v));
        }
        for v in LinkKind::ALL {
            assert_eq!(v.as_str(), serde_name(v));
        }
    }
}
