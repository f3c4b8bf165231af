//! The cluster TOML file (`--sim-cluster FILE`): host models per group of hosts, and the
//! fabric they are cabled to.
//!
//! ```toml
//! name = "lab-16"
//!
//! [[hosts]]
//! names = "node[001-016]"   # Slurm hostlist syntax
//! model = "dgx-a100"        # a built-in host model, or a host-model file (relative to this file)
//!
//! [fabric]
//! radix = 16                # a rail-optimised two-level fat tree of 16-port switches
//! link_gbps = 200           # optional: the first host's RNIC line rate by default
//! ```
//!
//! or a real fabric as cabled, from its ibnetdiscover file (relative to this file); each
//! host's RNICs are the CAs whose description starts with its name:
//!
//! ```toml
//! [fabric]
//! topology = "fabric.ibnetdiscover"
//! routes = "tables.json"    # optional: `hostping fabric route --dump -o tables.json`
//! ```

use std::collections::HashSet;
use std::path::Path;

use fabric::limits::{above_cap, MAX_CLUSTER_HOSTS, MAX_LINK_GBPS};
use serde::Deserialize;

use crate::spec::{self, CabledFabric, Cluster, ClusterHost};
use crate::PlanError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterFile {
    name: Option<String>,
    hosts: Vec<HostGroup>,
    fabric: FabricSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostGroup {
    names: String,
    model: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FabricSpec {
    radix: Option<u16>,
    link_gbps: Option<f64>,
    topology: Option<String>,
    routes: Option<String>,
}

/// Reads a real fabric's ibnetdiscover file (`[fabric] topology`): the caller's
/// `fabric::topology_file::read`, given as a callback so that the caller says what reading
/// passed over (its notes) where its user reads them.
/// With `[fabric] routes`, the subnet manager's tables to route it by.
pub type FabricReader<'a> =
    &'a dyn Fn(&Path, Option<&Path>) -> Result<CabledFabric, FabricReadError>;

/// Why a [`FabricReader`] could not read a fabric: the reader's own error, whichever crate
/// it comes from, quoted with its sources in the cluster file's error.
pub type FabricReadError = Box<dyn std::error::Error + Send + Sync>;

impl Cluster {
    /// A built-in cluster by name, or a cluster file (whose `topology`, if it has one,
    /// `read_fabric` reads).
    pub fn resolve(name_or_path: &str, read_fabric: FabricReader) -> Result<Cluster, PlanError> {
        if let Some(builtin) = Cluster::builtin(name_or_path) {
            return builtin;
        }
        let path = Path::new(name_or_path);
        let text = std::fs::read_to_string(path).map_err(|e| PlanError::Unknown {
            name: name_or_path.to_string(),
            reason: e.to_string(),
            builtins: spec::BUILTIN_NAMES.join(", "),
        })?;
        Cluster::parse(path, &text, read_fabric)
    }

    /// A cluster file's text; `path` names it in errors and anchors relative model files.
    pub fn parse(path: &Path, text: &str, read_fabric: FabricReader) -> Result<Cluster, PlanError> {
        let bad = |reason: String| PlanError::File {
            path: path.display().to_string(),
            reason,
        };
        let file: ClusterFile = toml::from_str(text).map_err(|e| bad(one_line(&e.to_string())))?;
        if file.hosts.is_empty() {
            return Err(bad("no [[hosts]] group".to_string()));
        }
        // Every group's names first, counted against the cap before a host is built.
        let mut groups = Vec::with_capacity(file.hosts.len());
        let mut count: usize = 0;
        for (i, group) in file.hosts.iter().enumerate() {
            let names = model::hostlist::expand(&group.names).map_err(|e| bad(e.to_string()))?;
            count = count.saturating_add(names.len());
            if count > MAX_CLUSTER_HOSTS as usize {
                let more = if i + 1 < file.hosts.len() {
                    " or more"
                } else {
                    ""
                };
                let cap = above_cap(
                    "hosts",
                    format!("{count}{more}"),
                    MAX_CLUSTER_HOSTS,
                    "(one LID each)",
                );
                return Err(bad(format!("[[hosts]]: {cap}")));
            }
            groups.push((group, names));
        }
        let mut hosts: Vec<ClusterHost> = Vec::with_capacity(count);
        let mut seen: HashSet<String> = HashSet::with_capacity(count);
        for (group, names) in groups {
            let model_path = match path.parent() {
                Some(dir) if model::builtin::load(&group.model).is_none() => {
                    dir.join(&group.model).display().to_string()
                }
                _ => group.model.clone(),
            };
            let model = model::builtin::resolve(&model_path, |path| std::fs::read_to_string(path))
                .map_err(|e| bad(format!("hosts `{}`: {e}", group.names)))?;
            for name in names {
                if !seen.insert(name.clone()) {
                    return Err(bad(format!("host `{name}` is in two [[hosts]] groups")));
                }
                hosts.push(ClusterHost::new(name, model.clone()));
            }
        }
        let name = file.name.unwrap_or_else(|| {
            path.file_stem()
                .map_or("cluster".to_string(), |s| s.to_string_lossy().into_owned())
        });
        let built = match (file.fabric.radix, &file.fabric.topology) {
            (Some(_), None) if file.fabric.routes.is_some() => {
                return Err(bad(
                    "fabric.routes goes with `topology`: a subnet manager's tables route a real fabric"
                        .to_string(),
                ))
            }
            (Some(radix), None) => {
                let link_gbps = match file.fabric.link_gbps {
                    Some(rate) if rate > MAX_LINK_GBPS => {
                        return Err(bad(format!(
                            "fabric.link_gbps: {}",
                            above_cap("link rate", rate, MAX_LINK_GBPS, "Gb/s")
                        )))
                    }
                    Some(rate) if rate.is_finite() && rate > 0.0 => rate,
                    Some(rate) => {
                        return Err(bad(format!("fabric.link_gbps {rate} is not a positive rate")))
                    }
                    None => first_line_rate(&hosts[0]).ok_or_else(|| {
                        bad(format!("host `{}` has no RNIC to take the link rate from", hosts[0].name))
                    })?,
                };
                spec::rail_optimised(&name, hosts, radix, link_gbps)
            }
            (None, Some(topology)) => {
                if file.fabric.link_gbps.is_some() {
                    return Err(bad(
                        "fabric.link_gbps goes with `radix`: a topology file gives its links' rates"
                            .to_string(),
                    ));
                }
                // Files named in a cluster file are relative to it.
                let anchored = |file: &str| path.parent().map_or(file.into(), |d| d.join(file));
                let routes: Option<std::path::PathBuf> = file.fabric.routes.as_deref().map(anchored);
                let fabric = read_fabric(&anchored(topology), routes.as_deref())
                    .map_err(|e| bad(format!("fabric.topology: {}", model::error::chain(&*e))))?;
                spec::cabled(&name, hosts, fabric)
            }
            _ => {
                return Err(bad(
                    "[fabric] takes `radix` (a rail-optimised tree) or `topology` (an ibnetdiscover file), one of them"
                        .to_string(),
                ))
            }
        };
        built.map_err(|e| bad(e.to_string()))
    }
}

/// The line rate of a host's first RNIC, Gb/s.
fn first_line_rate(host: &ClusterHost) -> Option<f64> {
    let rnic = host.rnics.first()?;
    host.model()
        .component(rnic)?
        .rnic()
        .map(|r| r.line_rate_gbps)
}

/// TOML errors span lines (a caret under the span); one line names the place and the error.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_reader(_: &Path, _: Option<&Path>) -> Result<CabledFabric, FabricReadError> {
        Err("no reader".into())
    }

    fn parse(text: &str) -> Result<Cluster, String> {
        Cluster::parse(Path::new("lab.toml"), text, &no_reader).map_err(|e| e.to_string())
    }

    #[test]
    fn a_file_gives_hosts_models_and_a_rail_optimised_tree() {
        let cluster = parse(
            "name = \"lab\"\n[[hosts]]\nnames = \"gpu[01-08]\"\nmodel = \"dgx-a100\"\n\
             [[hosts]]\nnames = \"gpu[09-12]\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 16\n",
        )
        .unwrap();
        assert_eq!(cluster.name, "lab");
        assert_eq!(cluster.hosts.len(), 12);
        assert_eq!(cluster.fabric.link_gbps, 200.0);
        // 8 hosts a leaf, 2 leaves a rail, 4 rails; 8 spines.
        assert_eq!(cluster.fabric.switch_names.len(), 16);
        let port = cluster.parse_port("gpu12/rnic3").unwrap();
        assert_eq!(cluster.port_label(port), "leaf8/4");
        // The second leaf of each rail has 4 free ports: no host there.
        assert!(cluster
            .parse_port("leaf8/5")
            .unwrap_err()
            .to_string()
            .contains("free"));
    }

    #[test]
    fn bad_files_name_the_file_and_the_fault() {
        for (text, says) in [
            ("[[hosts]]\nnames = \"n[1-2]\"\nmodel = \"dgx-a100\"\n", "missing field `fabric`"),
            ("[[hosts]]\nnames = \"n[1-2]\"\nmodel = \"nope\"\n[fabric]\nradix = 8\n", "nope"),
            ("[[hosts]]\nnames = \"n[2-1]\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\n", "n[2-1]"),
            (
                "[[hosts]]\nnames = \"n[1-2]\"\nmodel = \"dgx-a100\"\n[[hosts]]\nnames = \"n2\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\n",
                "two [[hosts]] groups",
            ),
            ("[[hosts]]\nnames = \"n[1-40]\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\n", "at most"),
            ("[[hosts]]\nnames = \"n1\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\nspeed = 1\n", "unknown field"),
            ("[[hosts]]\nnames = \"n1\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\nlink_gbps = -1\n", "not a positive rate"),
            ("[[hosts]]\nnames = \"n1\"\nmodel = \"dgx-a100\"\n[fabric]\n", "one of them"),
            ("[[hosts]]\nnames = \"n1\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\nroutes = \"r\"\n", "routes goes with `topology`"),
            ("[[hosts]]\nnames = \"n1\"\nmodel = \"dgx-a100\"\n[fabric]\nradix = 8\ntopology = \"f\"\n", "one of them"),
            ("[[hosts]]\nnames = \"n1\"\nmodel = \"dgx-a100\"\n[fabric]\ntopology = \"f.topo\"\n", "fabric.topology: no reader"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.starts_with("lab.toml: "), "{err}");
            assert!(err.contains(says), "{says}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    /// A cluster of more hosts than a subnet has LIDs is refused from its host lists, before
    /// a host is built; a link rate above any port's is refused naming the cap.
    #[test]
    fn sizes_above_their_caps_are_refused_naming_the_cap() {
        let text = "[[hosts]]\nnames = \"n[00001-30000]\"\nmodel = \"dgx-a100\"\n\
                    [[hosts]]\nnames = \"m[00001-30000]\"\nmodel = \"dgx-a100\"\n\
                    [fabric]\nradix = 64\n";
        assert_eq!(
            parse(text).unwrap_err(),
            "lab.toml: [[hosts]]: hosts 60000 is above the cap of 49151 (one LID each)"
        );
        let text = "[[hosts]]\nnames = \"n[1-2]\"\nmodel = \"dgx-a100\"\n\
                    [fabric]\nradix = 8\nlink_gbps = 1e12\n";
        assert_eq!(
            parse(text).unwrap_err(),
            "lab.toml: fabric.link_gbps: link rate 1000000000000 is above the cap of 16000 Gb/s"
        );
        let text = "[[hosts]]\nnames = \"n[1-2]\"\nmodel = \"dgx-a100\"\n\
                    [fabric]\nradix = 8\nlink_gbps = 16000\n";
        assert!(parse(text).is_ok());
    }

    #[test]
    fn an_unknown_name_lists_the_built_in_clusters() {
        let err = Cluster::resolve("/nonexistent/pod.toml", &no_reader)
            .unwrap_err()
            .to_string();
        assert!(err.contains("pod-32"), "{err}");
    }
}
