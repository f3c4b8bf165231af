//! Faults injected into a simulated cluster (DESIGN 4.6): a host's fault of DESIGN 4.2 behind
//! its host name, or a fabric fault on a cable or the whole fabric, each parsed strictly and
//! kept with the ground truth a verdict is scored against.
//!
//! Additions of issue 39 item 5, for a job whose collectives run step by step
//! (`crate::collectives`): any fault may carry a start time, `@<seconds>s` (absent before,
//! present after: piecewise constant); and a host may hold stragglers, ranks that start
//! each collective late while the host's own network stays healthy:
//! `<host>:straggler:<gpu>:<delay>` (one rank late by a fixed delay: a stalled data loader,
//! a rank's own hiccups), `<host>:slow-gpu:<gpu>:<speed>` (a GPU computing at a fraction of
//! its speed, throttled: late by its extra compute each step) and
//! `<host>:cpu-starved:<delay>` (every rank of the host late: the cores its processes share
//! are taken).

use std::collections::BTreeMap;

use fabric::limits::{above_cap, MAX_ERRORS_PER_SECOND};
use fabric::topology::PortRef;

pub use verdict::links::FabricFault;
use verdict::spec::Cluster;

use crate::ClusterError;

/// The fabric fault kinds, as `--help` lists them.
pub const FABRIC_KINDS: [&str; 5] = [
    "fabric:degrade:<port>:<fraction>",
    "fabric:flap:<port>:<fraction>",
    "fabric:errors:<port>:<per_second>",
    "fabric:down:<port>",
    "fabric:background:<load>",
];

/// The latest start time a fault takes, seconds into the job's run: a day. A simulated
/// job runs minutes at most (`crate::collectives::MAX_STEPS`); a later start is a typo.
pub const MAX_START_S: f64 = 86_400.0;

/// The longest straggler delay, us: ten seconds late at every collective is a job that
/// has stopped, not a straggler; NCCL's own watchdog fires long before.
pub const MAX_STRAGGLER_DELAY_US: f64 = 10_000_000.0;

/// The faults of one run, as given and parsed.
#[derive(Clone, Debug, Default)]
pub struct ClusterFaults {
    /// Each host's faults (host index to faults of DESIGN 4.2), checked together per host.
    pub hosts: BTreeMap<usize, Vec<vhost::Fault>>,
    /// When each of a host's `hosts` starts, in the same order, seconds into the job's run
    /// (0 without `@<seconds>s`).
    pub host_start_s: BTreeMap<usize, Vec<f64>>,
    /// The fabric's faults, at most one per cable and one background.
    pub fabric: Vec<FabricFault>,
    /// When each of `fabric` starts, seconds into the job's run (0 without `@<seconds>s`).
    pub fabric_start_s: Vec<f64>,
    /// Ranks that start each collective late, at most one per host and GPU.
    pub stragglers: Vec<StragglerFault>,
    /// What was given, in order, for reports.
    pub given: Vec<String>,
}

/// A host-side straggler (the reference's "late arrival",
/// `shared/reference/nccl-inspector.md`): `straggler` and `slow-gpu` make the rank on one
/// GPU start each collective late, `cpu-starved` every rank of the host. Not a fault of the
/// host's network: its own checks stay healthy.
#[derive(Clone, Debug, PartialEq)]
pub struct StragglerFault {
    /// The host (index in the cluster).
    pub host: usize,
    /// The GPU its rank drives (`gpu3` -> 3); `None` for every GPU of the host.
    pub gpu: Option<u32>,
    /// How late it starts each collective.
    pub lateness: Lateness,
    /// When it starts being late, seconds into the job's run.
    pub start_s: f64,
}

/// How late a straggler starts each collective.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lateness {
    /// By a fixed delay, us.
    Delay(f64),
    /// By its GPU's extra compute: a GPU at `speed` (0 to 1) of its own takes `1 / speed`
    /// of the step's compute, so it arrives `compute (1 / speed - 1)` after the others.
    SlowGpu(f64),
}

impl Lateness {
    /// How late, us, in a job that computes `compute_ms` between its collectives.
    pub fn us(self, compute_ms: f64) -> f64 {
        match self {
            Lateness::Delay(us) => us,
            Lateness::SlowGpu(speed) => compute_ms * 1e3 * (1.0 / speed - 1.0),
        }
    }
}

/// A fault text split from its start time: `fabric:down:leaf1/9@30s` -> (`fabric:down:leaf1/9`,
/// 30). Without `@` the fault is present from the start (0 s). The suffix is strict: a
/// number of seconds in [0, [`MAX_START_S`]] then `s`.
fn split_start(text: &str) -> Result<(&str, f64), String> {
    let Some((fault, start)) = text.rsplit_once('@') else {
        return Ok((text, 0.0));
    };
    let seconds = start
        .strip_suffix('s')
        .ok_or_else(|| format!("start time `@{start}` is not `@<seconds>s` (such as `@30s`)"))?;
    let value: f64 = seconds
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("start time `@{start}` is not a number of seconds >= 0"))?;
    if value > MAX_START_S {
        return Err(above_cap(
            "start time (s)",
            seconds,
            MAX_START_S,
            "(a day into the job's run)",
        ));
    }
    Ok((fault, value))
}

/// `40ms`, `350us`, `1.5s` as microseconds: more than zero, at most
/// [`MAX_STRAGGLER_DELAY_US`].
fn parse_delay_us(text: &str) -> Result<f64, String> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e6)
    } else {
        return Err(format!(
            "delay `{text}` has no unit: wants us, ms or s (such as 40ms)"
        ));
    };
    let us = number
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v * scale)
        .ok_or_else(|| format!("delay `{text}` is not a positive duration"))?;
    if us > MAX_STRAGGLER_DELAY_US {
        return Err(above_cap(
            "delay (us)",
            format!("{us}"),
            MAX_STRAGGLER_DELAY_US,
            "(ten seconds late at every collective is a stopped job, not a straggler)",
        ));
    }
    Ok(us)
}

/// A straggler on `host` (`straggler:<gpu>:<delay>`, `slow-gpu:<gpu>:<speed>` or
/// `cpu-starved:<delay>`, the text after the host's name); `None` when the text is none of
/// these kinds (a fault of DESIGN 4.2).
fn parse_straggler(
    text: &str,
    host: usize,
    start_s: f64,
    cluster: &Cluster,
) -> Option<Result<StragglerFault, String>> {
    let fields: Vec<&str> = text.split(':').collect();
    let fault = |gpu, lateness| StragglerFault {
        host,
        gpu,
        lateness,
        start_s,
    };
    Some(match (fields[0], &fields[1..]) {
        ("straggler", [gpu, delay]) => gpu_index(cluster, host, gpu)
            .and_then(|g| parse_delay_us(delay).map(|us| fault(Some(g), Lateness::Delay(us)))),
        ("slow-gpu", [gpu, speed]) => gpu_index(cluster, host, gpu)
            .and_then(|g| parse_speed(speed).map(|v| fault(Some(g), Lateness::SlowGpu(v)))),
        ("cpu-starved", [delay]) => {
            parse_delay_us(delay).map(|us| fault(None, Lateness::Delay(us)))
        }
        (kind, _) if kind.starts_with("straggler") => Err(format!(
            "`{text}` is not `straggler:<gpu>:<delay>` (such as straggler:gpu3:40ms)"
        )),
        ("slow-gpu", _) => Err(format!(
            "`{text}` is not `slow-gpu:<gpu>:<speed>` (such as slow-gpu:gpu3:0.5, gpu3 at half \
             its speed)"
        )),
        ("cpu-starved", _) => Err(format!(
            "`{text}` is not `cpu-starved:<delay>` (such as cpu-starved:30ms)"
        )),
        _ => return None,
    })
}

/// GPU `gpu` (`gpu3` -> 3) of `host`'s model.
fn gpu_index(cluster: &Cluster, host: usize, gpu: &str) -> Result<u32, String> {
    let model = cluster.hosts[host].model();
    let is_gpu = model
        .components()
        .iter()
        .any(|c| c.class() == model::topology::ComponentClass::Gpu && c.id.as_str() == gpu);
    let index = gpu.strip_prefix("gpu").and_then(|n| n.parse::<u32>().ok());
    match (is_gpu, index) {
        (true, Some(index)) => Ok(index),
        _ => Err(format!(
            "host `{}` has no GPU `{gpu}` (its model's GPUs are gpu0, gpu1, ...)",
            cluster.hosts[host].name
        )),
    }
}

/// A GPU's speed, a fraction of its own: above 0 and below 1 (1 is a healthy GPU), at least
/// 0.01 (slower is a GPU that stopped).
fn parse_speed(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|v| (0.01..1.0).contains(v))
        .ok_or_else(|| {
            format!("speed `{text}` is not a fraction of the GPU's own in [0.01, 1) (such as 0.5)")
        })
}

/// What a fault's ground truth says a verdict should name (DESIGN 4.7's culprits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// `host` or `fabric` (an RNIC's own faults count as the host's here).
    pub layer: &'static str,
    /// The host, for a host's fault.
    pub host: Option<String>,
    /// The cable (`leaf2/9`) for a fabric fault on one, the fault text's target otherwise.
    pub component: Option<String>,
    /// DESIGN 4.7's fabric causes, or `host_fault` for a host's.
    pub cause: &'static str,
}

impl ClusterFaults {
    /// Parses every `--inject` text against the cluster: `fabric:...` or `<host>:<fault of
    /// DESIGN 4.2>`. Refuses a malformed text, a name the cluster lacks, two faults on one
    /// cable or two backgrounds, and a host's faults that contradict each other.
    pub fn parse(texts: &[String], cluster: &Cluster) -> Result<ClusterFaults, ClusterError> {
        let mut faults = ClusterFaults {
            given: texts.to_vec(),
            ..Default::default()
        };
        let mut host_texts: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for given in texts {
            let bad = |reason: String| ClusterError::Fault {
                text: given.clone(),
                reason,
            };
            let (text, start_s) = split_start(given).map_err(bad)?;
            let (target, rest) = text
                .split_once(':')
                .ok_or_else(|| bad("expected `fabric:<fault>` or `<host>:<fault>`".to_string()))?;
            if target == "fabric" {
                let fault = parse_fabric(rest, cluster).map_err(bad)?;
                let clash = faults
                    .fabric
                    .iter()
                    .find(|f| match (f.cable(), fault.cable()) {
                        (Some(a), Some(b)) => a == b,
                        (None, None) => true,
                        _ => false,
                    });
                if let Some(earlier) = clash {
                    return Err(bad(format!(
                        "a second fault on the same {} (already `{}`): one setting per target",
                        fault.cable().map_or("fabric".to_string(), |c| format!(
                            "cable `{}`",
                            cluster.cable_label(c)
                        )),
                        earlier.cause()
                    )));
                }
                faults.fabric.push(fault);
                faults.fabric_start_s.push(start_s);
            } else {
                let host = cluster.host_index(target).ok_or_else(|| {
                    bad(format!(
                        "`{target}` is neither `fabric` nor a host of cluster `{}`",
                        cluster.name
                    ))
                })?;
                if let Some(straggler) = parse_straggler(rest, host, start_s, cluster) {
                    let straggler = straggler.map_err(bad)?;
                    // A whole host's lateness overlaps each of its GPUs'.
                    let overlaps = |s: &StragglerFault| {
                        s.host == host
                            && (s.gpu.is_none()
                                || straggler.gpu.is_none()
                                || s.gpu == straggler.gpu)
                    };
                    if faults.stragglers.iter().any(overlaps) {
                        let on = straggler
                            .gpu
                            .map_or(target.to_string(), |g| format!("{target}'s gpu{g}"));
                        return Err(bad(format!(
                            "a second straggler on {on}: one setting per target"
                        )));
                    }
                    faults.stragglers.push(straggler);
                    continue;
                }
                // The collectives meet it from its start (`hosts_at`); the mesh measures
                // it once started (`started_by`).
                host_texts.entry(host).or_default().push(rest.to_string());
                faults.host_start_s.entry(host).or_default().push(start_s);
            }
        }
        for (host, texts) in host_texts {
            let model = cluster.hosts[host].model();
            // The fault's own error: `ClusterError::Fault` names `--inject` already.
            let parsed = vhost::parse_faults(&texts, model).map_err(|e| ClusterError::Fault {
                text: format!("{}:{}", cluster.hosts[host].name, texts.join(", ")),
                reason: e.to_string(),
            })?;
            faults.hosts.insert(host, parsed);
        }
        Ok(faults)
    }

    /// The ground truth: what each fault should make a verdict name.
    pub fn expected(&self, cluster: &Cluster) -> Vec<Expected> {
        let mut out: Vec<Expected> = self
            .fabric
            .iter()
            .map(|f| Expected {
                layer: "fabric",
                host: None,
                component: f.cable().map(|c| cluster.cable_label(c)),
                cause: f.cause(),
            })
            .collect();
        for s in &self.stragglers {
            out.push(Expected {
                layer: "host",
                host: Some(cluster.hosts[s.host].name.clone()),
                component: s.gpu.map(|g| format!("gpu{g}")),
                cause: "straggler",
            });
        }
        for (&host, faults) in &self.hosts {
            for fault in faults {
                out.push(Expected {
                    layer: "host",
                    host: Some(cluster.hosts[host].name.clone()),
                    component: Some(fault.to_string()),
                    cause: "host_fault",
                });
            }
        }
        out
    }

    /// The faults present `at_s` seconds into the job's run, hosts' and fabric's (those
    /// started by then): what the mesh, the follow-ups and the what-if measure at a
    /// simulated job's end.
    pub fn started_by(&self, at_s: f64, cluster: &Cluster) -> Result<ClusterFaults, ClusterError> {
        let texts: Vec<String> = self
            .given
            .iter()
            .filter(|t| split_start(t).is_ok_and(|(_, start)| start <= at_s))
            .cloned()
            .collect();
        ClusterFaults::parse(&texts, cluster)
    }

    /// The fabric faults present `at_s` seconds into the job's run (those started by then).
    pub fn fabric_at(&self, at_s: f64) -> Vec<FabricFault> {
        self.fabric
            .iter()
            .zip(self.starts())
            .filter(|(_, start)| *start <= at_s)
            .map(|(f, _)| f.clone())
            .collect()
    }

    /// Each host's faults of DESIGN 4.2 present `at_s` seconds into the job's run (those
    /// started by then); hosts without one are left out.
    pub fn hosts_at(&self, at_s: f64) -> BTreeMap<usize, Vec<vhost::Fault>> {
        self.hosts
            .iter()
            .map(|(&host, faults)| {
                let starts = self.host_start_s.get(&host);
                let present: Vec<vhost::Fault> = faults
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| starts.and_then(|s| s.get(*i)).map_or(0.0, |s| *s) <= at_s)
                    .map(|(_, f)| f.clone())
                    .collect();
                (host, present)
            })
            .filter(|(_, present)| !present.is_empty())
            .collect()
    }

    /// When the hosts' faults of DESIGN 4.2 start, seconds into the run, in no order.
    pub fn host_starts(&self) -> impl Iterator<Item = f64> + '_ {
        self.host_start_s.values().flatten().copied()
    }

    /// Each fabric fault's start; 0 for faults built without one.
    fn starts(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.fabric.len()).map(|i| self.fabric_start_s.get(i).copied().unwrap_or(0.0))
    }

    /// The earliest start of any fault, seconds into the run: the onset a detection is
    /// timed from (`None` without faults).
    pub fn first_start_s(&self) -> Option<f64> {
        self.starts()
            .chain(self.stragglers.iter().map(|s| s.start_s))
            .chain(self.host_starts())
            .min_by(f64::total_cmp)
    }
}

/// One fabric fault, the text after `fabric:`.
fn parse_fabric(text: &str, cluster: &Cluster) -> Result<FabricFault, String> {
    // A real switch's description may hold ':' (`MF0;ib1:SX6036/U1/9`): the kind is the
    // first field, a setting the last, and the port whatever lies between.
    let (kind, rest) = text.split_once(':').unwrap_or((text, ""));
    let with_setting = rest.rsplit_once(':');
    let fields: Vec<&str> = match (kind, with_setting) {
        ("degrade" | "flap" | "errors", Some((port, setting))) => vec![kind, port, setting],
        ("down" | "background", _) => vec![kind, rest],
        _ => vec![kind],
    };
    let cable = |label: &str| -> Result<PortRef, String> {
        cluster.parse_port(label).map_err(|e| e.to_string())
    };
    let share = |what: &str, value: &str, upper_open: bool| -> Result<f64, String> {
        let v: f64 = value
            .parse()
            .map_err(|_| format!("{what} `{value}` is not a number"))?;
        let ok = v > 0.0 && if upper_open { v < 1.0 } else { v <= 1.0 };
        if !ok {
            let range = if upper_open { "(0, 1)" } else { "(0, 1]" };
            return Err(format!("{what} {v} is outside {range}"));
        }
        Ok(v)
    };
    let usage = || format!("`fabric:{text}` is not one of {}", FABRIC_KINDS.join(", "));
    Ok(match fields.as_slice() {
        ["degrade", port, fraction] => FabricFault::Degrade {
            cable: cluster.cable_at(cable(port)?),
            fraction: share("fraction", fraction, true)?,
        },
        ["flap", port, fraction] => FabricFault::Flap {
            cable: cluster.cable_at(cable(port)?),
            fraction: share("fraction", fraction, true)?,
        },
        ["errors", port, rate] => {
            let per_second: f64 = rate
                .parse()
                .ok()
                .filter(|r: &f64| r.is_finite() && *r > 0.0)
                .ok_or_else(|| format!("errors per second `{rate}` is not a positive number"))?;
            if per_second > MAX_ERRORS_PER_SECOND {
                return Err(above_cap(
                    "errors per second",
                    rate,
                    MAX_ERRORS_PER_SECOND,
                    "(a cable corrupts no more packets than it carries)",
                ));
            }
            FabricFault::Errors {
                cable: cluster.cable_at(cable(port)?),
                per_second,
            }
        }
        ["down", port] => FabricFault::Down {
            cable: cluster.cable_at(cable(port)?),
        },
        ["background", load] => FabricFault::Background {
            load: share("load", load, false)?,
        },
        _ => return Err(usage()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Cluster {
        Cluster::builtin("pod-32").unwrap().unwrap()
    }

    fn parse(texts: &[&str]) -> Result<ClusterFaults, String> {
        let texts: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
        ClusterFaults::parse(&texts, &pod()).map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_parses_with_its_ground_truth() {
        let pod = pod();
        let faults = parse(&[
            "node007:degrade:gpu4--lsw4:0.5",
            "fabric:degrade:leaf2/9:0.5",
            "fabric:flap:spine3/4:0.25",
            "fabric:errors:node003/rnic1:1e5",
            "fabric:down:leaf5/16",
            "fabric:background:0.6",
        ])
        .unwrap();
        assert_eq!(faults.fabric.len(), 5);
        assert_eq!(faults.hosts[&6].len(), 1);
        let expected = faults.expected(&pod);
        let causes: Vec<_> = expected
            .iter()
            .map(|e| (e.cause, e.component.clone()))
            .collect();
        assert_eq!(
            causes,
            [
                ("link_degraded", Some("leaf2/9".to_string())),
                // spine3's port 4 is leaf4's port 11: the cable is named by its lower end.
                ("link_flapping", Some("leaf4/11".to_string())),
                ("link_errors", Some("leaf5/3".to_string())),
                ("link_down", Some("leaf5/16".to_string())),
                ("background_traffic", None),
                ("host_fault", Some("degrade:gpu4--lsw4:0.5".to_string())),
            ]
        );
    }

    #[test]
    fn either_end_names_the_same_cable() {
        let err = parse(&["fabric:degrade:leaf2/9:0.5", "fabric:errors:spine1/2:10"]).unwrap_err();
        assert!(err.contains("one setting per target"), "{err}");
        let err = parse(&["fabric:background:0.5", "fabric:background:0.2"]).unwrap_err();
        assert!(err.contains("one setting per target"), "{err}");
    }

    #[test]
    fn malformed_faults_say_what_is_wrong() {
        for (text, says) in [
            ("fabric:degrade:leaf2/9:1.5", "outside (0, 1)"),
            ("fabric:degrade:leaf2/9:0", "outside (0, 1)"),
            ("fabric:degrade:leaf2/9", "is not one of"),
            ("fabric:background:1.2", "outside (0, 1]"),
            ("fabric:errors:leaf2/9:-3", "not a positive number"),
            ("fabric:melt:leaf2/9", "is not one of"),
            ("fabric:down:leaf99/1", "neither a switch nor a host"),
            (
                "node099:degrade:gpu4--lsw4:0.5",
                "neither `fabric` nor a host",
            ),
            ("node007:degrade:gpu9--lsw4:0.5", "gpu9"),
            ("degrade", "expected `fabric:<fault>`"),
        ] {
            let err = parse(&[text]).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn an_error_rate_above_the_cap_is_refused_naming_it() {
        assert_eq!(
            parse(&["fabric:errors:leaf2/9:1e300"]).unwrap_err(),
            "--inject `fabric:errors:leaf2/9:1e300`: errors per second 1e300 is above the cap \
             of 10000000000 (a cable corrupts no more packets than it carries)"
        );
        assert!(parse(&["fabric:errors:leaf2/9:1e10"]).is_ok());
    }

    #[test]
    fn a_hosts_bad_fault_names_the_flag_once() {
        let err = parse(&["node007:degrade:gpu9--lsw4:0.5"]).unwrap_err();
        assert!(
            err.starts_with(
                "--inject `node007:degrade:gpu9--lsw4:0.5`: bad fault `degrade:gpu9--lsw4:0.5`: "
            ),
            "{err}"
        );
        assert_eq!(err.matches("--inject").count(), 1, "{err}");
    }

    #[test]
    fn a_hosts_faults_are_checked_together() {
        let err = parse(&[
            "node001:degrade:gpu4--lsw4:0.5",
            "node001:degrade:gpu4--lsw4:0.2",
        ])
        .unwrap_err();
        assert!(err.contains("node001"), "{err}");
    }

    #[test]
    fn a_start_time_delays_a_fault_and_is_parsed_strictly() {
        let faults = parse(&[
            "fabric:degrade:leaf1/9:0.5@30s",
            "fabric:background:0.4",
            "node005:straggler:gpu3:40ms@2.5s",
        ])
        .unwrap();
        assert_eq!(faults.fabric_start_s, [30.0, 0.0]);
        assert_eq!(
            faults.fabric_at(0.0).len(),
            1,
            "only the background at first"
        );
        assert_eq!(faults.fabric_at(29.9).len(), 1);
        assert_eq!(faults.fabric_at(30.0).len(), 2);
        assert_eq!(faults.first_start_s(), Some(0.0));
        assert_eq!(
            faults.stragglers,
            [StragglerFault {
                host: 4,
                gpu: Some(3),
                lateness: Lateness::Delay(40_000.0),
                start_s: 2.5
            }]
        );
        for (text, says) in [
            ("fabric:degrade:leaf1/9:0.5@30", "is not `@<seconds>s`"),
            ("fabric:degrade:leaf1/9:0.5@", "is not `@<seconds>s`"),
            (
                "fabric:degrade:leaf1/9:0.5@-3s",
                "not a number of seconds >= 0",
            ),
            (
                "fabric:degrade:leaf1/9:0.5@nans",
                "not a number of seconds >= 0",
            ),
            ("fabric:degrade:leaf1/9:0.5@1e9s", "above the cap of 86400"),
            ("fabric:degrade:leaf1/9:0.5@30m", "is not `@<seconds>s`"),
        ] {
            let err = parse(&[text]).unwrap_err();
            assert!(err.starts_with(&format!("--inject `{text}`: ")), "{err}");
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn the_faults_started_by_a_time_are_the_hosts_and_the_fabrics() {
        let faults = parse(&[
            "node007:degrade:gpu4--lsw4:0.5@20s",
            "node003:degrade:gpu1--lsw1:0.5",
            "fabric:down:leaf5/16@5s",
            "node005:straggler:gpu3:40ms@30s",
        ])
        .unwrap();
        let at = |s: f64| faults.started_by(s, &pod()).unwrap();
        assert_eq!(at(0.0).hosts.keys().collect::<Vec<_>>(), [&2]);
        assert!(at(0.0).fabric.is_empty());
        assert_eq!(at(10.0).fabric.len(), 1);
        assert_eq!(at(25.0).hosts.keys().collect::<Vec<_>>(), [&2, &6]);
        assert!(at(25.0).stragglers.is_empty());
        assert_eq!(at(30.0).stragglers.len(), 1);
    }

    #[test]
    fn a_hosts_faults_are_present_from_their_own_starts() {
        let faults = parse(&[
            "node007:degrade:gpu4--lsw4:0.5@20s",
            "node007:tx-window:rnic1:4096",
            "node003:degrade:gpu1--lsw1:0.5@5s",
        ])
        .unwrap();
        assert_eq!(faults.host_start_s[&6], [20.0, 0.0]);
        let at = |s: f64| {
            faults
                .hosts_at(s)
                .iter()
                .map(|(&h, f)| (h, f.iter().map(ToString::to_string).collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(at(0.0), [(6, vec!["tx-window:rnic1:4096".to_string()])]);
        assert_eq!(at(5.0)[0], (2, vec!["degrade:gpu1--lsw1:0.5".to_string()]));
        assert_eq!(at(20.0)[1].1.len(), 2);
        assert_eq!(faults.first_start_s(), Some(0.0));
        let later = parse(&["node003:degrade:gpu1--lsw1:0.5@5s"]).unwrap();
        assert_eq!(
            later.first_start_s(),
            Some(5.0),
            "a host's fault is an onset too"
        );
    }

    #[test]
    fn a_straggler_is_the_hosts_own_with_its_ground_truth() {
        let pod = pod();
        let faults = parse(&["node005:straggler:gpu3:350us"]).unwrap();
        assert!(faults.hosts.is_empty(), "no fault of the host's network");
        assert!(faults.fabric.is_empty());
        assert_eq!(faults.stragglers[0].lateness, Lateness::Delay(350.0));
        assert_eq!(
            faults.expected(&pod),
            [Expected {
                layer: "host",
                host: Some("node005".to_string()),
                component: Some("gpu3".to_string()),
                cause: "straggler",
            }]
        );
        assert_eq!(
            parse(&["node005:straggler:gpu3:1.5s"]).unwrap().stragglers[0].lateness,
            Lateness::Delay(1.5e6)
        );
        for (text, says) in [
            ("node005:straggler:gpu9:40ms", "has no GPU `gpu9`"),
            ("node005:straggler:rnic0:40ms", "has no GPU `rnic0`"),
            ("node005:straggler:gpu3", "is not `straggler:<gpu>:<delay>`"),
            ("node005:straggler:gpu3:40", "has no unit"),
            ("node005:straggler:gpu3:0ms", "not a positive duration"),
            ("node005:straggler:gpu3:-4ms", "not a positive duration"),
            ("node005:straggler:gpu3:11s", "above the cap"),
            (
                "node005:stragglers:gpu3:1ms",
                "is not `straggler:<gpu>:<delay>`",
            ),
        ] {
            let err = parse(&[text]).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        let err = parse(&[
            "node005:straggler:gpu3:1ms",
            "node005:straggler:gpu3:2ms@5s",
        ])
        .unwrap_err();
        assert!(err.contains("one setting per target"), "{err}");
    }

    #[test]
    fn a_slow_gpu_is_late_by_its_extra_compute_and_a_starved_cpu_makes_every_rank_late() {
        let pod = pod();
        let faults = parse(&["node005:slow-gpu:gpu3:0.5", "node002:cpu-starved:30ms@10s"]).unwrap();
        assert!(faults.hosts.is_empty(), "no fault of the hosts' networks");
        let [slow, starved] = &faults.stragglers[..] else {
            panic!("{:?}", faults.stragglers);
        };
        // At half speed a 100 ms compute takes 200 ms: 100 ms after the others.
        assert_eq!((slow.gpu, slow.lateness), (Some(3), Lateness::SlowGpu(0.5)));
        assert!((slow.lateness.us(100.0) - 100_000.0).abs() < 1e-6);
        assert!((Lateness::SlowGpu(0.8).us(100.0) - 25_000.0).abs() < 1e-6);
        assert_eq!((starved.gpu, starved.start_s), (None, 10.0));
        assert_eq!(
            starved.lateness.us(100.0),
            30_000.0,
            "a delay, whatever the compute"
        );
        // The ground truth: the slow GPU's rank, and the starved host as a whole.
        let expected = faults.expected(&pod);
        assert_eq!(expected[0].component.as_deref(), Some("gpu3"));
        assert_eq!(
            (
                expected[1].host.as_deref(),
                expected[1].component.as_deref(),
                expected[1].cause
            ),
            (Some("node002"), None, "straggler")
        );
        for (text, says) in [
            ("node005:slow-gpu:gpu3:1", "in [0.01, 1)"),
            ("node005:slow-gpu:gpu3:0", "in [0.01, 1)"),
            ("node005:slow-gpu:gpu3:half", "in [0.01, 1)"),
            ("node005:slow-gpu:gpu9:0.5", "has no GPU `gpu9`"),
            ("node005:slow-gpu:0.5", "is not `slow-gpu:<gpu>:<speed>`"),
            (
                "node005:cpu-starved:gpu3:30ms",
                "is not `cpu-starved:<delay>`",
            ),
            ("node005:cpu-starved:30", "has no unit"),
        ] {
            let err = parse(&[text]).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        // A starved host's lateness covers each of its GPUs': one setting per target.
        for pair in [
            ["node005:cpu-starved:30ms", "node005:straggler:gpu3:1ms"],
            ["node005:slow-gpu:gpu3:0.5", "node005:cpu-starved:30ms"],
            ["node005:slow-gpu:gpu3:0.5", "node005:straggler:gpu3:1ms"],
        ] {
            let err = parse(&pair).unwrap_err();
            assert!(err.contains("one setting per target"), "{pair:?}: {err}");
        }
        assert!(parse(&["node005:slow-gpu:gpu3:0.5", "node005:straggler:gpu2:1ms"]).is_ok());
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn parsing_any_text_never_panics(text in "\\PC{0,40}") {
                let _ = parse(&[text.as_str()]);
            }

            #[test]
            fn parsing_fault_shaped_text_never_panics(
                target in prop::sample::select(vec!["fabric", "node003", "node099", ""]),
                kind in prop::sample::select(vec!["degrade", "straggler", "background", "down", "x"]),
                middle in "[a-z0-9/]{0,8}",
                setting in "[0-9.e-]{0,6}(us|ms|s)?",
                start in "(@[0-9.e+-]{0,6}s?)?",
            ) {
                let _ = parse(&[format!("{target}:{kind}:{middle}:{setting}{start}").as_str()]);
            }

            #[test]
            fn a_start_time_round_trips(start in 0.0f64..MAX_START_S, centi in any::<bool>()) {
                let start = if centi { (start * 100.0).round() / 100.0 } else { start };
                for fault in ["fabric:degrade:leaf3/10:0.5", "node002:straggler:gpu1:40ms"] {
                    let text = format!("{fault}@{start}s");
                    prop_assert_eq!(split_start(&text).unwrap(), (fault, start));
                    let parsed = parse(&[text.as_str()]).unwrap();
                    let plain = parse(&[fault]).unwrap();
                    prop_assert_eq!(parsed.first_start_s(), Some(start));
                    prop_assert_eq!(&parsed.fabric, &plain.fabric);
                    prop_assert_eq!(parsed.stragglers.len(), plain.stragglers.len());
                    prop_assert_eq!(parsed.given, vec![text.clone()]);
                }
            }
        }
    }
}
