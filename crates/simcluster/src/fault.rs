//! Faults injected into a simulated cluster (DESIGN 4.6): a host's fault of DESIGN 4.2 behind
//! its host name, or a fabric fault on a cable or the whole fabric, each parsed strictly and
//! kept with the ground truth a verdict is scored against.

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

/// The faults of one run, as given and parsed.
#[derive(Clone, Debug, Default)]
pub struct ClusterFaults {
    /// Each host's faults (host index to faults of DESIGN 4.2), checked together per host.
    pub hosts: BTreeMap<usize, Vec<vhost::Fault>>,
    /// The fabric's faults, at most one per cable and one background.
    pub fabric: Vec<FabricFault>,
    /// What was given, in order, for reports.
    pub given: Vec<String>,
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
        for text in texts {
            let bad = |reason: String| ClusterError::Fault {
                text: text.clone(),
                reason,
            };
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
            } else {
                let host = cluster.host_index(target).ok_or_else(|| {
                    bad(format!(
                        "`{target}` is neither `fabric` nor a host of cluster `{}`",
                        cluster.name
                    ))
                })?;
                host_texts.entry(host).or_default().push(rest.to_string());
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
}
