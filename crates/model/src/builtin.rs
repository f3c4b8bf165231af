//! The built-in host models, and [`resolve`], the one loader of a host model by name or
//! file. Their TOML files live in `crates/model/hosts/` and double as examples of the
//! format; a file may also be another tool's topology ([`Format`]).

use crate::hostfile::{parse, ModelError};
use crate::topology::HostTopology;

/// Names of the built-in models, with their source text.
const BUILTINS: [(&str, &str); 3] = [
    ("dgx-a100", include_str!("../hosts/dgx-a100.toml")),
    ("amd-2s", include_str!("../hosts/amd-2s.toml")),
    ("single-socket", include_str!("../hosts/single-socket.toml")),
];

/// The names of the built-in models.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(n, _)| *n)
}

/// The TOML source of a built-in model.
pub fn source(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Loads a built-in model; `None` if there is no model of that name.
pub fn load(name: &str) -> Option<Result<HostTopology, ModelError>> {
    source(name).map(|text| parse(&format!("built-in {name}"), text))
}

/// Why `--sim NAME|FILE` (or a cluster file's `model`) gives no host model.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Neither a built-in model nor a readable file.
    #[error("cannot read host model `{name}`: {reason} (built-in models: {builtins})")]
    Unreadable {
        /// What was given.
        name: String,
        /// The I/O error.
        reason: String,
        /// The built-in names.
        builtins: String,
    },
    /// The model (built-in or file) is malformed.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// The formats a host-model file may be in, told apart by its content, not its name: hwloc
/// and NCCL files are both `.xml`, and operators name their files as they like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The project's own TOML ([`crate::hostfile`]).
    Toml,
    /// hwloc's `lstopo --of xml`: the first element is `<topology>` ([`crate::hwloc_xml`]).
    HwlocXml,
    /// NCCL's topology dump: the first element is `<system>` ([`crate::nccl_topo`]).
    NcclTopo,
}

impl Format {
    /// The format of a file's text: XML by its first element (after any byte-order mark,
    /// blank lines, declaration, comments and DTD), else TOML. XML with another first
    /// element is refused with its name.
    pub fn of(source_name: &str, text: &str) -> Result<Format, ModelError> {
        let Some(name) = first_element(text) else {
            return Ok(Format::Toml);
        };
        match name {
            "topology" => Ok(Format::HwlocXml),
            "system" => Ok(Format::NcclTopo),
            other => Err(ModelError {
                source_name: source_name.to_string(),
                field: "xml".into(),
                reason: format!(
                    "the first element is <{other}>; a host model in XML is hwloc's <topology> (lstopo --of xml) or NCCL's <system> (NCCL_TOPO_DUMP_FILE)"
                ),
            }),
        }
    }
}

/// The name of the first element of an XML text; `None` when the text is not XML (its
/// first character, after a byte-order mark and white space, is not `<`).
fn first_element(text: &str) -> Option<&str> {
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    if !rest.starts_with('<') {
        return None;
    }
    loop {
        rest = rest.trim_start();
        let skip_to = |s: &str, end: &str| s.find(end).map(|i| i + end.len());
        let skipped = if rest.starts_with("<?") {
            skip_to(rest, "?>")
        } else if rest.starts_with("<!--") {
            skip_to(rest, "-->")
        } else if rest.starts_with("<!") {
            // A DTD, whose internal subset `[...]` may hold `>`.
            match (rest.find('['), rest.find('>')) {
                (Some(open), Some(close)) if open < close => skip_to(rest, "]>"),
                _ => skip_to(rest, ">"),
            }
        } else {
            // Text between declarations (a cut or altered file) holds no element name.
            let Some(after) = rest.strip_prefix('<') else {
                return Some("");
            };
            let name = after
                .split(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .next()
                .unwrap_or("");
            return Some(name);
        };
        // An unclosed declaration or comment: the XML parser will say where.
        rest = &rest[skipped.unwrap_or(rest.len())..];
        if rest.is_empty() {
            return Some("");
        }
    }
}

/// Parses a host-model file in any [`Format`]; errors name `source_name`.
pub fn parse_file(source_name: &str, text: &str) -> Result<HostTopology, ModelError> {
    match Format::of(source_name, text)? {
        Format::Toml => parse(source_name, text),
        Format::HwlocXml => crate::hwloc_xml::parse(source_name, text),
        Format::NcclTopo => crate::nccl_topo::parse(source_name, text),
    }
}

/// A built-in model by name, else the host-model file at that path in any [`Format`], read
/// by `read` (the caller's file system: this crate does no I/O, so the one resolution serves
/// every crate that loads a host model: `check --sim` and cluster files alike).
pub fn resolve(
    name_or_path: &str,
    read: impl FnOnce(&str) -> std::io::Result<String>,
) -> Result<HostTopology, LoadError> {
    if let Some(loaded) = load(name_or_path) {
        return Ok(loaded?);
    }
    let text = read(name_or_path).map_err(|e| LoadError::Unreadable {
        name: name_or_path.to_string(),
        reason: e.to_string(),
        builtins: names().collect::<Vec<_>>().join(", "),
    })?;
    Ok(parse_file(name_or_path, &text)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ComponentId, LinkId};
    use crate::topology::{LinkKind, Turnaround};

    #[test]
    fn the_first_element_is_found_past_declarations_and_text_between_them_names_none() {
        let doctype = "<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n";
        assert_eq!(
            first_element(&format!("{doctype}<topology version=\"3.0\">")),
            Some("topology")
        );
        assert_eq!(first_element("<!-- a comment --><system>"), Some("system"));
        // A cut file's text after a declaration, starting with a character of two bytes,
        // once sliced inside that character (a proptest of tests/host_files.rs found it).
        assert_eq!(
            first_element(&format!("{doctype}\u{e9}<topology>")),
            Some("")
        );
        assert_eq!(first_element("not xml"), None);
    }

    #[test]
    fn resolve_prefers_a_builtin_and_names_the_builtins_when_a_file_is_unreadable() {
        let read_nothing =
            |_: &str| -> std::io::Result<String> { panic!("a built-in is not read") };
        assert!(resolve("amd-2s", read_nothing).is_ok());
        let missing = |_: &str| Err(std::io::Error::from(std::io::ErrorKind::NotFound));
        let message = resolve("lab.toml", missing).unwrap_err().to_string();
        assert!(
            message.starts_with("cannot read host model `lab.toml`: "),
            "{message}"
        );
        assert!(
            message.ends_with("(built-in models: dgx-a100, amd-2s, single-socket)"),
            "{message}"
        );
        let bad = resolve("bad.toml", |_| Ok("[[nodes]\n".into())).unwrap_err();
        assert!(matches!(bad, LoadError::Model(_)), "{bad}");
    }

    fn dgx() -> HostTopology {
        load("dgx-a100").unwrap().unwrap()
    }

    fn ids<'a>(it: impl Iterator<Item = &'a ComponentId>) -> Vec<&'a str> {
        it.map(|c| c.as_str()).collect()
    }

    #[test]
    fn every_builtin_parses() {
        for n in names() {
            let t = load(n).unwrap().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t.name, n);
            assert_eq!(t.paths().len(), t.rnics().count() * t.endpoints().count());
        }
    }

    #[test]
    fn dgx_has_the_ids_of_design_4_1() {
        let t = dgx();
        let mut want: Vec<String> =
            vec!["cpu0".into(), "cpu1".into(), "mem0".into(), "mem1".into()];
        want.extend((0..4).map(|i| format!("usw{i}")));
        want.extend((0..8).map(|i| format!("lsw{i}")));
        want.extend((0..8).map(|i| format!("gpu{i}")));
        want.extend((0..4).map(|i| format!("rnic{i}")));
        let got: Vec<String> = t.components().iter().map(|c| c.id.to_string()).collect();
        assert_eq!(got, want);
        for (id, kind) in [
            ("rnic0--lsw0", LinkKind::RnicPcie),
            ("gpu1--lsw1", LinkKind::GpuPcie),
            ("lsw1--usw0", LinkKind::SwitchUplink),
            ("usw0--cpu0", LinkKind::RootPort),
            ("usw1--cpu0", LinkKind::RootPort),
            ("usw2--cpu1", LinkKind::RootPort),
            ("mem0--cpu0", LinkKind::MemoryChannel),
            ("cpu0--cpu1", LinkKind::InterSocket),
            ("rnic3--lsw6", LinkKind::RnicPcie),
            ("gpu7--lsw7", LinkKind::GpuPcie),
        ] {
            assert_eq!(
                t.link(&LinkId::from(id)).map(|l| l.kind),
                Some(kind),
                "{id}"
            );
        }
        assert_eq!(t.links().len(), 27);
        let rnic = t.component(&"rnic2".into()).unwrap().rnic().unwrap();
        assert_eq!(rnic.line_rate_gbps, 200.0);
    }

    #[test]
    fn dgx_paths_follow_figure_2() {
        let t = dgx();
        let p = |r: &str, e: &str| t.path(&r.into(), &e.into()).unwrap().clone();
        let links = |r: &str, e: &str| {
            p(r, e)
                .links
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(links("rnic0", "gpu0"), ["rnic0--lsw0", "gpu0--lsw0"]);
        assert_eq!(
            links("rnic0", "gpu1"),
            ["rnic0--lsw0", "lsw0--usw0", "lsw1--usw0", "gpu1--lsw1"]
        );
        assert_eq!(
            links("rnic0", "mem0"),
            ["rnic0--lsw0", "lsw0--usw0", "usw0--cpu0", "mem0--cpu0"]
        );
        assert_eq!(
            links("rnic0", "mem1"),
            [
                "rnic0--lsw0",
                "lsw0--usw0",
                "usw0--cpu0",
                "cpu0--cpu1",
                "mem1--cpu1"
            ]
        );
        assert_eq!(
            links("rnic0", "gpu2"),
            [
                "rnic0--lsw0",
                "lsw0--usw0",
                "usw0--cpu0",
                "usw1--cpu0",
                "lsw2--usw1",
                "gpu2--lsw2"
            ]
        );
        assert_eq!(
            links("rnic3", "gpu1"),
            [
                "rnic3--lsw6",
                "lsw6--usw3",
                "usw3--cpu1",
                "cpu0--cpu1",
                "usw0--cpu0",
                "lsw1--usw0",
                "gpu1--lsw1"
            ]
        );
        assert_eq!(
            p("rnic0", "gpu0").turnaround,
            Turnaround::Switch("lsw0".into())
        );
        assert_eq!(
            p("rnic0", "gpu1").turnaround,
            Turnaround::Switch("usw0".into())
        );
        assert_eq!(
            p("rnic0", "gpu2").turnaround,
            Turnaround::RootComplex("cpu0".into())
        );
        assert!(p("rnic0", "gpu2").p2p_through_cpu && p("rnic0", "gpu5").p2p_through_cpu);
        assert!(!p("rnic0", "mem1").p2p_through_cpu);
    }

    #[test]
    fn dgx_affinity_is_memory_and_gpus_under_the_root_port() {
        let t = dgx();
        for r in 0..4 {
            let rnic = ComponentId::new(format!("rnic{r}"));
            let want = [
                "mem0".to_string(),
                "mem1".to_string(),
                format!("gpu{}", 2 * r),
                format!("gpu{}", 2 * r + 1),
            ];
            assert_eq!(ids(t.affinitive_endpoints(&rnic)), want);
        }
    }

    #[test]
    fn amd_remote_memory_is_not_affinitive() {
        let t = load("amd-2s").unwrap().unwrap();
        assert_eq!(
            ids(t.affinitive_endpoints(&"rnic0".into())),
            ["mem0", "gpu0", "gpu1"]
        );
        assert_eq!(
            ids(t.affinitive_endpoints(&"rnic1".into())),
            ["mem1", "gpu4", "gpu5"]
        );
    }

    #[test]
    fn single_socket_has_one_switch_level() {
        let t = load("single-socket").unwrap().unwrap();
        assert_eq!(t.rnics().count(), 2);
        assert_eq!(t.endpoints().count(), 5);
        assert!(t
            .links()
            .iter()
            .all(|l| l.kind != LinkKind::SwitchUplink && l.kind != LinkKind::InterSocket));
        assert_eq!(
            ids(t.affinitive_endpoints(&"rnic1".into())),
            ["mem0", "gpu2", "gpu3"]
        );
    }

    #[test]
    fn root_port_subtree() {
        let t = dgx();
        assert_eq!(
            t.root_port_above(&"rnic1".into()),
            Some("usw1--cpu0".into())
        );
        let mut under: Vec<String> = t
            .links_under_root_port(&"usw0--cpu0".into())
            .iter()
            .map(|l| l.to_string())
            .collect();
        under.sort();
        assert_eq!(
            under,
            [
                "gpu0--lsw0",
                "gpu1--lsw1",
                "lsw0--usw0",
                "lsw1--usw0",
                "rnic0--lsw0",
                "usw0--cpu0"
            ]
        );
    }
}
