//! The TOML host-model format (documented with a commented example in
//! `docs/host-model.md`).
//!
//! Parsing is two steps: serde reads the file into raw records (unknown fields are
//! rejected, and `serde_path_to_error` names the field at fault), then
//! [`HostTopology::new`] checks the structure. Every error is one line naming the source,
//! the field and the reason.

use crate::ids::{ComponentId, LinkId};
use crate::limits;
use crate::topology::{
    expected_link_kind, Component, ComponentClass, ComponentKind, HostTopology, Link, LinkKind,
    Rnic,
};
use serde::Deserialize;

/// Defaults for optional parameters, each calibrated against a figure of the papers.
pub mod defaults {
    /// Root-complex P2P forwarding: with the default hop latencies it makes a GDR read
    /// across root ports cost 2.2 us of intra-host latency (Hostping 3.2.2, Fig. 4).
    pub const CPU_P2P_FORWARD_NS: f64 = 800.0;
    /// DRAM access time for a DMA read.
    pub const MEMORY_ACCESS_NS: f64 = 100.0;
    /// GPU memory access: makes a same-switch GDR read cost 1.0 us (Hostping 3.2.2).
    pub const GPU_ACCESS_NS: f64 = 600.0;
    /// T_proc of Hostping eq. 1 for a 200 Gb/s RNIC.
    pub const RNIC_PROC_NS: f64 = 1500.0;
    /// Outstanding DMA read bytes, by Little's law from Hostping 3.2.2: 125.5 Gb/s at
    /// 2.2 us is 34.5 kB in flight; the same window gives 115 Gb/s at 2.4 us (paper: 116.4).
    pub const RNIC_READ_WINDOW_BYTES: f64 = 34_512.0;
    /// Per-QP in-flight limit of a healthy RNIC: large enough for one QP to reach line rate.
    pub const RNIC_QP_WINDOW_BYTES: f64 = 4.0 * 1024.0 * 1024.0;
    /// Memory-channel capacity per NUMA node where the source of a model does not say
    /// (sysfs, hwloc and NCCL files): 8 channels of DDR4-3200 (8 x 25.6 GB/s), as in the
    /// built-in `dgx-a100` model.
    pub const MEMORY_CHANNEL_GBPS: f64 = 1638.4;
    /// Inter-socket capacity per link where the source of a model does not say: 3 UPI links
    /// at 11.2 GT/s (3 x 22.4 GB/s), as in the built-in `dgx-a100` model.
    pub const INTER_SOCKET_GBPS: f64 = 537.6;
}

/// A host-model file that cannot be used, in one line: `source: field: reason`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}: {field}: {reason}")]
pub struct ModelError {
    /// The file (or `built-in NAME`).
    pub source_name: String,
    /// The field at fault, as a path (`component[3].kind`, `link rnic0--lsw0`).
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default, rename = "component")]
    components: Vec<toml::Table>,
    #[serde(default, rename = "link")]
    links: Vec<RawLink>,
    /// HotNets'22 3.1 parameters; every field defaults ([`crate::iommu::IommuModel`]).
    #[serde(default)]
    iommu: crate::iommu::IommuModel,
    /// The RC transport over ODP memory; every field defaults ([`crate::odp_model::OdpModel`]).
    #[serde(default)]
    odp: crate::odp_model::OdpModel,
}

/// A component record, by kind. Serde's internally tagged enums buffer their fields and
/// so hide the failing field's name; [`raw_component`] reads `kind` first and then the
/// record with the right shape, so errors name the field.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawComponent {
    Cpu {
        id: String,
        p2p_forward_ns: Option<f64>,
    },
    Memory {
        id: String,
        access_ns: Option<f64>,
    },
    PcieSwitch {
        id: String,
    },
    Gpu {
        id: String,
        access_ns: Option<f64>,
    },
    Rnic {
        id: String,
        line_rate_gbps: f64,
        proc_ns: Option<f64>,
        read_window_bytes: Option<f64>,
        qp_window_bytes: Option<f64>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    down: String,
    up: String,
    kind: Option<String>,
    capacity_gbps: Option<f64>,
    pcie: Option<String>,
    latency_ns: Option<f64>,
}

/// Parses a host model. `source_name` names the input in errors (a path, or `built-in X`).
pub fn parse(source_name: &str, text: &str) -> Result<HostTopology, ModelError> {
    let err = |field: String, reason: String| ModelError {
        source_name: source_name.to_string(),
        field,
        reason,
    };
    let de = toml::Deserializer::new(text);
    let raw: RawHost = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let reason = one_line(inner.message());
        let at = inner
            .span()
            .map(|s| format!(" (line {})", line_of(text, s.start)))
            .unwrap_or_default();
        err(
            if field == "." { "toml".into() } else { field },
            format!("{reason}{at}"),
        )
    })?;

    // Counts first: the checks below compare every link with every component.
    limits::at_most("components", raw.components.len(), limits::COMPONENTS)
        .map_err(|e| err("component".into(), e.to_string()))?;
    limits::at_most("links", raw.links.len(), limits::LINKS)
        .map_err(|e| err("link".into(), e.to_string()))?;
    let mut components = Vec::with_capacity(raw.components.len());
    for (i, table) in raw.components.into_iter().enumerate() {
        let field = |f: String| {
            if f.is_empty() {
                format!("component[{i}]")
            } else {
                format!("component[{i}].{f}")
            }
        };
        let rc = raw_component(table).map_err(|(f, r)| err(field(f), r))?;
        let (id, kind) = component_kind(rc).map_err(|(f, r)| err(field(f), r))?;
        check_id(&id).map_err(|r| err(format!("component[{i}].id"), r))?;
        components.push(Component {
            id: ComponentId::new(id.clone()),
            socket: ComponentId::new(id),
            kind,
        });
    }
    check_class_counts(&components).map_err(|e| err("component".into(), e.to_string()))?;
    let class_of = |id: &str| {
        components
            .iter()
            .find(|c| c.id.as_str() == id)
            .map(Component::class)
    };

    let mut links = Vec::with_capacity(raw.links.len());
    for (i, rl) in raw.links.into_iter().enumerate() {
        let field = |f: &str| format!("link[{i}].{f}");
        let (Some(down), Some(up)) = (class_of(&rl.down), class_of(&rl.up)) else {
            let missing = if class_of(&rl.down).is_none() {
                ("down", &rl.down)
            } else {
                ("up", &rl.up)
            };
            return Err(err(
                field(missing.0),
                format!("no component `{}`", missing.1),
            ));
        };
        let inferred = expected_link_kind(down, up).ok_or_else(|| {
            err(
                field("up"),
                format!("a {} cannot hang below a {}", down.as_str(), up.as_str()),
            )
        })?;
        let kind = match rl.kind.as_deref() {
            None => inferred,
            Some(k) => {
                let named = LinkKind::ALL
                    .into_iter()
                    .find(|x| x.as_str() == k)
                    .ok_or_else(|| {
                        let all: Vec<_> = LinkKind::ALL.iter().map(|k| k.as_str()).collect();
                        err(
                            field("kind"),
                            format!(
                                "unknown link kind `{k}` (expected one of {})",
                                all.join(", ")
                            ),
                        )
                    })?;
                if named != inferred {
                    return Err(err(
                        field("kind"),
                        format!(
                            "`{k}` does not join a {} to a {} (that is {})",
                            down.as_str(),
                            up.as_str(),
                            inferred.as_str()
                        ),
                    ));
                }
                named
            }
        };
        let capacity_gbps = match (rl.capacity_gbps, rl.pcie.as_deref()) {
            (Some(c), None) => limits::at_most("capacity_gbps", c, limits::LINK_GBPS)
                .map_err(|e| err(field("capacity_gbps"), e.to_string()))?,
            (None, Some(p)) => {
                pcie_capacity_gbps(p).map_err(|r| err(field("pcie"), r.to_string()))?
            }
            (Some(_), Some(_)) => {
                return Err(err(
                    field("capacity_gbps"),
                    "give capacity_gbps or pcie, not both".into(),
                ))
            }
            (None, None) => {
                return Err(err(
                    field("capacity_gbps"),
                    "missing (or give pcie = \"gen4x16\")".into(),
                ))
            }
        };
        let down_id = ComponentId::new(rl.down);
        let up_id = ComponentId::new(rl.up);
        links.push(Link {
            id: LinkId::between(&down_id, &up_id),
            kind,
            down: down_id,
            up: up_id,
            capacity_gbps,
            capacity_known: true,
            latency_ns: rl.latency_ns.unwrap_or_else(|| kind.default_latency_ns()),
        });
    }
    raw.iommu
        .check()
        .map_err(|(f, r)| err(format!("iommu.{f}"), r))?;
    raw.odp
        .check()
        .map_err(|(f, r)| err(format!("odp.{f}"), r))?;
    let mut host = HostTopology::new(raw.name, raw.description, components, links)
        .map_err(|e| err(e.field, e.reason))?;
    host.iommu = raw.iommu;
    host.odp = raw.odp;
    Ok(host)
}

const COMPONENT_KINDS: [&str; 5] = ["cpu", "memory", "pcie_switch", "gpu", "rnic"];

/// Reads one `[[component]]` table; an error is `(field, reason)`.
fn raw_component(mut table: toml::Table) -> Result<RawComponent, (String, String)> {
    let kinds = COMPONENT_KINDS.join(", ");
    let kind = match table.remove("kind") {
        Some(toml::Value::String(k)) => k,
        Some(other) => {
            return Err((
                "kind".into(),
                format!("expected a string, got {}", other.type_str()),
            ))
        }
        None => return Err(("kind".into(), format!("missing (one of {kinds})"))),
    };
    if !COMPONENT_KINDS.contains(&kind.as_str()) {
        return Err((
            "kind".into(),
            format!("unknown kind `{kind}` (expected one of {kinds})"),
        ));
    }
    // `{ "<kind>" = { fields } }` is serde's external tagging of the same enum.
    let mut tagged = toml::Table::new();
    tagged.insert(kind, toml::Value::Table(table));
    serde_path_to_error::deserialize(toml::Value::Table(tagged)).map_err(|e| {
        let path = e.path().to_string();
        // The path starts with the kind tag; the user wrote the field directly.
        let field = path
            .split_once('.')
            .map(|(_, f)| f.to_string())
            .unwrap_or_default();
        (field, one_line(&e.into_inner().to_string()))
    })
}

fn component_kind(rc: RawComponent) -> Result<(String, ComponentKind), (String, String)> {
    let positive = |name: &str, v: f64| {
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err((name.to_string(), format!("must be positive, got {v}")))
        }
    };
    let non_negative = |name: &str, v: Option<f64>, default: f64| match v {
        None => Ok(default),
        Some(v) if v >= 0.0 && v.is_finite() => Ok(v),
        Some(v) => Err((name.to_string(), format!("must be zero or more, got {v}"))),
    };
    Ok(match rc {
        RawComponent::Cpu { id, p2p_forward_ns } => {
            let p2p_forward_ns = non_negative(
                "p2p_forward_ns",
                p2p_forward_ns,
                defaults::CPU_P2P_FORWARD_NS,
            )?;
            (id, ComponentKind::Cpu { p2p_forward_ns })
        }
        RawComponent::Memory { id, access_ns } => (
            id,
            ComponentKind::Memory {
                access_ns: non_negative("access_ns", access_ns, defaults::MEMORY_ACCESS_NS)?,
            },
        ),
        RawComponent::PcieSwitch { id } => (id, ComponentKind::PcieSwitch),
        RawComponent::Gpu { id, access_ns } => (
            id,
            ComponentKind::Gpu {
                access_ns: non_negative("access_ns", access_ns, defaults::GPU_ACCESS_NS)?,
            },
        ),
        RawComponent::Rnic {
            id,
            line_rate_gbps,
            proc_ns,
            read_window_bytes,
            qp_window_bytes,
        } => {
            let rnic = Rnic {
                line_rate_gbps: limits::at_most(
                    "line_rate_gbps",
                    positive("line_rate_gbps", line_rate_gbps)?,
                    limits::LINK_GBPS,
                )
                .map_err(|e| ("line_rate_gbps".to_string(), e.to_string()))?,
                proc_ns: non_negative("proc_ns", proc_ns, defaults::RNIC_PROC_NS)?,
                read_window_bytes: positive(
                    "read_window_bytes",
                    read_window_bytes.unwrap_or(defaults::RNIC_READ_WINDOW_BYTES),
                )?,
                qp_window_bytes: positive(
                    "qp_window_bytes",
                    qp_window_bytes.unwrap_or(defaults::RNIC_QP_WINDOW_BYTES),
                )?,
            };
            (id, ComponentKind::Rnic(rnic))
        }
    })
}

/// Each class of component within its cap ([`limits`]): a model's paths are every RNIC
/// times every endpoint, each probed on every check.
pub(crate) fn check_class_counts(components: &[Component]) -> Result<(), limits::AboveCap> {
    let count = |class| components.iter().filter(|c| c.class() == class).count();
    for (what, class, cap) in [
        (
            "sockets (cpu components)",
            ComponentClass::Cpu,
            limits::SOCKETS,
        ),
        ("memory nodes", ComponentClass::Memory, limits::MEMORY_NODES),
        (
            "pcie switches",
            ComponentClass::PcieSwitch,
            limits::PCIE_SWITCHES,
        ),
        ("gpus", ComponentClass::Gpu, limits::GPUS),
        ("rnics", ComponentClass::Rnic, limits::RNICS),
    ] {
        limits::at_most(what, count(class), cap)?;
    }
    Ok(())
}

/// Ids are lower-case letters, digits, `_` and `-`, and never contain the link separator.
fn check_id(id: &str) -> Result<(), String> {
    let ok_chars = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !ok_chars {
        return Err(format!("`{id}` is not a valid id (use a-z, 0-9, `_`, `-`)"));
    }
    if id.contains("--") {
        return Err(format!(
            "`{id}` contains `--`, which separates the two ends of a link id"
        ));
    }
    Ok(())
}

/// A `pcie` value that is not a PCIe generation and width.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a PCIe link (expected gen1..gen6 and x1..x32, like `gen4x16`)")]
pub struct NotAPcieLink(pub String);

/// Capacity of a PCIe link per direction, Gb/s, from `gen<G>x<W>` (after line encoding;
/// TLP overhead is left out, as in Hostping footnote 4).
pub fn pcie_capacity_gbps(spec: &str) -> Result<f64, NotAPcieLink> {
    let bad = || NotAPcieLink(spec.to_string());
    let rest = spec.strip_prefix("gen").ok_or_else(bad)?;
    let (gen, width) = rest.split_once('x').ok_or_else(bad)?;
    let per_lane = match gen {
        "1" => 2.5 * 8.0 / 10.0,
        "2" => 5.0 * 8.0 / 10.0,
        "3" => 8.0 * 128.0 / 130.0,
        "4" => 16.0 * 128.0 / 130.0,
        "5" => 32.0 * 128.0 / 130.0,
        "6" => 64.0 * 242.0 / 256.0,
        _ => return Err(bad()),
    };
    let width: u32 = width.parse().map_err(|_| bad())?;
    if ![1, 2, 4, 8, 12, 16, 32].contains(&width) {
        return Err(bad());
    }
    Ok(per_lane * f64::from(width))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = r#"
name = "tiny"
[[component]]
id = "cpu0"
kind = "cpu"
[[component]]
id = "mem0"
kind = "memory"
[[component]]
id = "sw0"
kind = "pcie_switch"
[[component]]
id = "rnic0"
kind = "rnic"
line_rate_gbps = 100
[[component]]
id = "gpu0"
kind = "gpu"
[[link]]
down = "mem0"
up = "cpu0"
capacity_gbps = 800
[[link]]
down = "sw0"
up = "cpu0"
pcie = "gen4x16"
[[link]]
down = "rnic0"
up = "sw0"
pcie = "gen4x16"
[[link]]
down = "gpu0"
up = "sw0"
pcie = "gen4x16"
"#;

    #[test]
    fn parses_a_small_host_with_defaults() {
        let t = parse("tiny.toml", TINY).unwrap();
        assert_eq!(t.paths().len(), 2);
        let l = t.link(&"rnic0--sw0".into()).unwrap();
        assert_eq!(l.kind, LinkKind::RnicPcie);
        assert!((l.capacity_gbps - 252.06).abs() < 0.01);
        assert_eq!(l.latency_ns, 100.0);
        assert_eq!(
            t.link(&"sw0--cpu0".into()).unwrap().kind,
            LinkKind::RootPort
        );
    }

    #[test]
    fn the_odp_table_is_optional_and_checked() {
        let t = parse("tiny.toml", TINY).unwrap();
        assert_eq!(t.odp, crate::odp_model::OdpModel::default());
        let t = parse(
            "tiny.toml",
            &format!("{TINY}[odp]\npage_fault_us = 300.0\n"),
        )
        .unwrap();
        assert_eq!(t.odp.page_fault_us, 300.0);
        assert_eq!(
            t.odp.timeout_floor_ms, 500.0,
            "the rest keep their defaults"
        );
        let e = error_of(&format!("{TINY}[odp]\nretry_count = 9\n"));
        assert_eq!(e.field, "odp.retry_count");
        let e = error_of(&format!("{TINY}[odp]\nfault_us = 1.0\n"));
        assert!(e.field.starts_with("odp"), "{e}");
    }

    #[test]
    fn the_iommu_table_is_optional_and_checked() {
        let t = parse("tiny.toml", TINY).unwrap();
        assert_eq!(t.iommu, crate::iommu::IommuModel::default());
        let t = parse(
            "tiny.toml",
            &format!("{TINY}[iommu]\niotlb_entries = 64\nt_miss_ns = 800.0\n"),
        )
        .unwrap();
        assert_eq!(t.iommu.iotlb_entries, 64);
        assert_eq!(t.iommu.t_miss_ns, 800.0);
        assert_eq!(t.iommu.pcie_credits, 4, "the rest keep their defaults");
        let e = error_of(&format!("{TINY}[iommu]\niotlb_entries = 0\n"));
        assert_eq!(e.field, "iommu.iotlb_entries");
        let e = error_of(&format!("{TINY}[iommu]\nentries = 64\n"));
        assert!(e.field.starts_with("iommu"), "{e}");
        assert!(e.reason.contains("entries"), "{e}");
    }

    #[test]
    fn pcie_capacities_follow_the_encodings() {
        assert!((pcie_capacity_gbps("gen3x8").unwrap() - 63.0).abs() < 0.1);
        assert!((pcie_capacity_gbps("gen4x16").unwrap() - 252.06).abs() < 0.01);
        assert!((pcie_capacity_gbps("gen1x1").unwrap() - 2.0).abs() < 1e-9);
        for bad in ["gen7x16", "gen4x3", "gen4", "x16", "gen4x", "pcie4x16", ""] {
            assert!(pcie_capacity_gbps(bad).is_err(), "{bad}");
        }
    }

    fn error_of(text: &str) -> ModelError {
        parse("bad.toml", text).unwrap_err()
    }

    #[test]
    fn unknown_component_kind_names_the_field() {
        let e = error_of(&TINY.replace("kind = \"gpu\"", "kind = \"gpux\""));
        assert_eq!(e.source_name, "bad.toml");
        assert_eq!(e.field, "component[4].kind");
        assert!(e.reason.contains("gpux"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn unknown_field_is_rejected() {
        let e = error_of(&TINY.replace("line_rate_gbps = 100", "line_rate_gbps = 100\nspeed = 3"));
        assert!(e.field.starts_with("component[3]"), "{e}");
        assert!(e.reason.contains("speed"), "{e}");
    }

    #[test]
    fn wrong_component_field_type_names_the_field() {
        let e = error_of(&TINY.replace("line_rate_gbps = 100", "line_rate_gbps = \"fast\""));
        assert_eq!(e.field, "component[3].line_rate_gbps", "{e}");
        let e = error_of(&TINY.replace("kind = \"rnic\"\nline_rate_gbps = 100", ""));
        assert_eq!(e.field, "component[3].kind", "{e}");
        let e = error_of(&TINY.replace("id = \"gpu0\"\n", ""));
        assert!(
            e.field.starts_with("component[4]") && e.reason.contains("id"),
            "{e}"
        );
    }

    #[test]
    fn wrong_type_names_the_field() {
        let e = error_of(&TINY.replace("capacity_gbps = 800", "capacity_gbps = \"fast\""));
        assert_eq!(e.field, "link[0].capacity_gbps", "{e}");
    }

    #[test]
    fn syntax_error_has_a_line() {
        let e = error_of("name = \"x\"\n[[component]\n");
        assert!(e.reason.contains("line 2"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn dangling_link_end_is_named() {
        let e = error_of(&TINY.replace("down = \"gpu0\"", "down = \"gpu9\""));
        assert_eq!(e.field, "link[3].down");
        assert!(e.reason.contains("gpu9"));
    }

    #[test]
    fn mismatched_kind_is_rejected() {
        let e = error_of(&TINY.replace(
            "capacity_gbps = 800",
            "capacity_gbps = 800\nkind = \"root_port\"",
        ));
        assert_eq!(e.field, "link[0].kind");
    }

    #[test]
    fn second_upstream_link_is_rejected() {
        let text =
            format!("{TINY}\n[[link]]\ndown = \"gpu0\"\nup = \"cpu0\"\npcie = \"gen4x16\"\n");
        let e = error_of(&text);
        assert!(e.reason.contains("already has an upstream link"), "{e}");
    }

    #[test]
    fn negative_numbers_are_rejected() {
        let e = error_of(&TINY.replace("line_rate_gbps = 100", "line_rate_gbps = -1"));
        assert_eq!(e.field, "component[3].line_rate_gbps");
        let e = error_of(&TINY.replace("capacity_gbps = 800", "capacity_gbps = 0"));
        assert!(e.reason.contains("capacity"), "{e}");
    }

    #[test]
    fn bad_ids_are_rejected() {
        let e = error_of(
            &TINY
                .replace("id = \"sw0\"", "id = \"sw--0\"")
                .replace("\"sw0\"", "\"sw--0\""),
        );
        assert_eq!(e.field, "component[2].id");
    }

    #[test]
    fn host_without_rnic_is_rejected() {
        let e = error_of(&TINY.replace("kind = \"rnic\"\nline_rate_gbps = 100", "kind = \"gpu\""));
        assert!(e.reason.contains("rnic"), "{e}");
    }

    #[test]
    fn orphan_component_is_rejected() {
        let text = format!("{TINY}\n[[component]]\nid = \"gpu1\"\nkind = \"gpu\"\n");
        let e = error_of(&text);
        assert!(e.field.contains("gpu1"), "{e}");
    }

    /// TINY with `gpus` GPUs and `rnics` RNICs under its switch.
    fn wide(gpus: usize, rnics: usize) -> String {
        let mut text = TINY.to_string();
        for g in 1..gpus {
            text.push_str(&format!(
                "[[component]]\nid = \"gpu{g}\"\nkind = \"gpu\"\n\
                 [[link]]\ndown = \"gpu{g}\"\nup = \"sw0\"\npcie = \"gen4x16\"\n"
            ));
        }
        for r in 1..rnics {
            text.push_str(&format!(
                "[[component]]\nid = \"rnic{r}\"\nkind = \"rnic\"\nline_rate_gbps = 100\n\
                 [[link]]\ndown = \"rnic{r}\"\nup = \"sw0\"\npcie = \"gen4x16\"\n"
            ));
        }
        text
    }

    #[test]
    fn a_model_at_the_caps_parses_and_one_above_is_refused_naming_the_cap() {
        let t = parse("wide.toml", &wide(limits::GPUS, limits::RNICS)).unwrap();
        assert_eq!(t.paths().len(), limits::RNICS * (limits::GPUS + 1));
        let e = parse("wide.toml", &wide(limits::GPUS + 1, 1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "wide.toml: component: gpus 33 is above the cap of 32"
        );
        let e = parse("wide.toml", &wide(1, limits::RNICS + 1)).unwrap_err();
        assert_eq!(e.reason, "rnics 33 is above the cap of 32");
    }

    #[test]
    fn huge_counts_are_refused_before_any_work() {
        let many = "[[component]]\nid = \"x\"\nkind = \"gpu\"\n".repeat(100_000);
        let started = std::time::Instant::now();
        let e = parse("huge.toml", &format!("name = \"huge\"\n{many}")).unwrap_err();
        assert_eq!(e.field, "component");
        assert_eq!(e.reason, "components 100000 is above the cap of 288");
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
        let links = "[[link]]\ndown = \"gpu0\"\nup = \"sw0\"\npcie = \"gen4x16\"\n".repeat(1025);
        let e = error_of(&format!("{TINY}{links}"));
        assert_eq!(e.field, "link");
        assert_eq!(e.reason, "links 1029 is above the cap of 1024");
    }

    #[test]
    fn rates_above_the_cap_name_the_field_and_the_cap() {
        let e = error_of(&TINY.replace("line_rate_gbps = 100", "line_rate_gbps = 1e9"));
        assert_eq!(e.field, "component[3].line_rate_gbps");
        assert_eq!(
            e.reason,
            "line_rate_gbps 1000000000 is above the cap of 20000"
        );
        let e = error_of(&TINY.replace("capacity_gbps = 800", "capacity_gbps = 1e300"));
        assert_eq!(e.field, "link[0].capacity_gbps");
        assert!(e.reason.ends_with("is above the cap of 20000"), "{e}");
    }
}
