/*!
RDMA devices and ports, from `sys/class/infiniband/<dev>/`
(`Documentation/ABI/stable/sysfs-class-infiniband`; formats from
`drivers/infiniband/core/sysfs.c`; linux-counters.md 1.1, 1.2 and 1.5).

| file (below `sys/class/infiniband/<dev>/`) | policy |
|---|---|
| `sys/class/infiniband/` | optional: absent or empty means no RDMA devices (a note) |
| `device` (link) | optional: absent for software devices (rxe, siw) |
| `parent` | optional: the netdev of an rxe device (`rxe_verbs.c` `parent_show`) |
| `device/net/` | optional: the netdev of a one-port function |
| `ports/` | required for an RDMA device: a device without it (a Xeon Phi's `scif0`, which registers in this class with no ports) is skipped with a note |
| `ports/<p>/state` | required: `%d: %s` |
| `ports/<p>/link_layer` | required: `InfiniBand`, `Ethernet`, `Unknown` |
| `ports/<p>/phys_state` | optional, kept as text (`5: LinkUp`) |
| `ports/<p>/rate` | optional (`EINVAL` when the port has no active width): `%d%s Gb/sec (%dX%s)` |
| `ports/<p>/lid` | optional: `0x%x` |
| `ports/<p>/gids/<i>`, i < 16 | optional each; all-zero entries are unused and skipped |
| `ports/<p>/gid_attrs/types/<i>` | optional: `IB/RoCE v1`, `RoCE v2`; an unknown type is left out with a note |
| `ports/<p>/gid_attrs/ndevs/<i>` | optional (`EINVAL` when the entry has no netdev) |

Only the first [`GID_SCAN_LIMIT`] GID indices are read: a RoCE port has 255 and each read is
slow inside a VM (softroce-guest.md: 1024 reads took 6 s under TCG), while the kernel fills
the table from index 0, so the addresses a loopback test needs sit at the front.
*/

use super::pci::{self, parse_decimal, parse_decimal_u32, PciAddr};
use super::{DiscoverError, ParseError, SysRoot};
use model::ids::natural_order;
use serde::Serialize;
use std::fmt;
use std::path::Path;

/// How many GID indices of a port are read (indices `0..GID_SCAN_LIMIT`).
pub const GID_SCAN_LIMIT: u32 = 16;

/// One port of an RDMA device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RdmaPort {
    /// Device name (`mlx5_0`, `rxe0`): the folder under `sys/class/infiniband/`.
    pub device: String,
    /// Port number (from 1 on a CA): the folder under `ports/`.
    pub port: u8,
    /// `ports/<p>/state`.
    pub state: PortState,
    /// `ports/<p>/phys_state`, as written (`5: LinkUp`).
    pub phys_state: Option<String>,
    /// `ports/<p>/rate`.
    pub rate: Option<LinkRate>,
    /// `ports/<p>/link_layer`.
    pub link_layer: LinkLayer,
    /// `ports/<p>/lid` (`0x0` on RoCE ports).
    pub lid: Option<u16>,
    /// Non-zero entries of `ports/<p>/gids/<i>` for `i < GID_SCAN_LIMIT`, by index.
    pub gids: Vec<GidEntry>,
    /// The port's netdev: `parent` for software devices, else the netdev of its first GID
    /// that has one, else the only entry of `device/net/`.
    pub netdev: Option<String>,
    /// The device's PCI function (`device` link); for rxe, that of its parent netdev.
    pub pci: Option<PciAddr>,
    /// `numa_node` of that PCI function (`-1` gives `None`).
    pub numa_node: Option<u32>,
    /// A software device (rxe, siw): it has a `parent` file or no `device` link.
    pub software: bool,
}

impl RdmaPort {
    /// The GID a loopback test on this port should use. RoCE: a RoCE v2 GID holding an
    /// IPv4 address (routable, and what perftest picks), else any RoCE v2 GID, else index
    /// 0. InfiniBand (and anything else): index 0.
    pub fn loopback_gid(&self) -> Option<&GidEntry> {
        let index0 = || self.gids.iter().find(|g| g.index == 0);
        if self.link_layer != LinkLayer::Ethernet {
            return index0();
        }
        let v2 = |g: &&GidEntry| g.kind == Some(GidKind::RoceV2);
        self.gids
            .iter()
            .filter(v2)
            .find(|g| g.is_ipv4_mapped())
            .or_else(|| self.gids.iter().find(v2))
            .or_else(index0)
    }
}

/// Logical port state (`ports/<p>/state`, `enum ib_port_state`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PortState {
    /// 0: NOP.
    Nop,
    /// 1: DOWN.
    Down,
    /// 2: INIT.
    Init,
    /// 3: ARMED.
    Armed,
    /// 4: ACTIVE: the only state a loopback test can use.
    Active,
    /// 5: ACTIVE_DEFER.
    ActiveDefer,
    /// Any other code, as written (the kernel prints `UNKNOWN`).
    Other {
        /// The number before the colon.
        code: u32,
        /// The name after it.
        name: String,
    },
}

const STATE_NAMES: [(&str, PortState); 6] = [
    ("NOP", PortState::Nop),
    ("DOWN", PortState::Down),
    ("INIT", PortState::Init),
    ("ARMED", PortState::Armed),
    ("ACTIVE", PortState::Active),
    ("ACTIVE_DEFER", PortState::ActiveDefer),
];

impl fmt::Display for PortState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortState::Other { name, .. } => f.write_str(name),
            known => {
                let name = STATE_NAMES
                    .iter()
                    .find(|(_, s)| s == known)
                    .map_or("UNKNOWN", |(n, _)| n);
                f.write_str(name)
            }
        }
    }
}

/// Parses `ports/<p>/state`: `4: ACTIVE`. A known code must carry its own name.
pub fn parse_state(s: &str) -> Result<PortState, ParseError> {
    let bad = || ParseError::new(s, "a port state like `4: ACTIVE`");
    let (code, name) = s.split_once(": ").ok_or_else(bad)?;
    let code = parse_decimal_u32(code).ok_or_else(bad)?;
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(bad());
    }
    match STATE_NAMES.get(code as usize) {
        Some((known, state)) if *known == name => Ok(state.clone()),
        Some(_) => Err(bad()),
        None => Ok(PortState::Other {
            code,
            name: name.to_string(),
        }),
    }
}

/// An active link rate (`ports/<p>/rate`), keeping lanes and generation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkRate {
    /// Data rate, Gb/s (lanes x per-lane rate).
    pub gbps: f64,
    /// Active lane count (the `4` of `4X`).
    pub lanes: u8,
    /// Lane generation name (`HDR`, `FDR10`); kernels before 4.x printed none for SDR.
    pub generation: Option<String>,
}

impl fmt::Display for LinkRate {
    /// The kernel's own format, `200 Gb/sec (4X HDR)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Gb/sec ({}X", self.gbps, self.lanes)?;
        match &self.generation {
            Some(g) => write!(f, " {g})"),
            None => f.write_str(")"),
        }
    }
}

/// Parses `ports/<p>/rate`: `200 Gb/sec (4X HDR)`, `2.5 Gb/sec (1X SDR)`, `10 Gb/sec (4X)`.
/// RoCE ports show a rate synthesised from the netdev speed (`ib_get_eth_speed`).
pub fn parse_rate(s: &str) -> Result<LinkRate, ParseError> {
    let bad = || ParseError::new(s, "a link rate like `200 Gb/sec (4X HDR)`");
    let (number, rest) = s.split_once(" Gb/sec (").ok_or_else(bad)?;
    let inner = rest.strip_suffix(')').ok_or_else(bad)?;
    let (lanes, generation) = inner.split_once('X').ok_or_else(bad)?;
    let generation = match generation {
        "" => None,
        g => {
            let name = g.strip_prefix(' ').ok_or_else(bad)?;
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(bad());
            }
            Some(name.to_string())
        }
    };
    let lanes = parse_decimal_u32(lanes)
        .and_then(|l| u8::try_from(l).ok())
        .filter(|l| *l > 0)
        .ok_or_else(bad)?;
    Ok(LinkRate {
        gbps: parse_decimal(number).ok_or_else(bad)?,
        lanes,
        generation,
    })
}

/// Link layer of a port (`ports/<p>/link_layer`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LinkLayer {
    /// `InfiniBand`: addressed by LID.
    InfiniBand,
    /// `Ethernet`: RoCE (or iWARP), addressed by GID.
    Ethernet,
    /// Anything else, as written (the kernel prints `Unknown`).
    Unknown(String),
}

/// Parses `ports/<p>/link_layer`; an unrecognised value is kept, not refused.
pub fn parse_link_layer(s: &str) -> LinkLayer {
    match s {
        "InfiniBand" => LinkLayer::InfiniBand,
        "Ethernet" => LinkLayer::Ethernet,
        other => LinkLayer::Unknown(other.to_string()),
    }
}

/// Parses `ports/<p>/lid`: `0x%x`.
pub fn parse_lid(s: &str) -> Result<u16, ParseError> {
    s.strip_prefix("0x")
        .filter(|h| !h.is_empty() && h.len() <= 4 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|h| u16::from_str_radix(h, 16).ok())
        .ok_or_else(|| ParseError::new(s, "a LID like 0x2a"))
}

/// One used entry of a port's GID table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GidEntry {
    /// Index in the table (`gids/<index>`), what verbs calls `sgid_index`.
    pub index: u32,
    /// The GID, network byte order.
    #[serde(serialize_with = "serialize_gid")]
    pub gid: [u8; 16],
    /// `gid_attrs/types/<index>`.
    pub kind: Option<GidKind>,
    /// `gid_attrs/ndevs/<index>`.
    pub netdev: Option<String>,
}

impl GidEntry {
    /// An IPv4-mapped GID (`::ffff:a.b.c.d`), as RoCE derives from an IPv4 address.
    pub fn is_ipv4_mapped(&self) -> bool {
        self.gid[..10].iter().all(|b| *b == 0) && self.gid[10..12] == [0xff, 0xff]
    }
}

fn serialize_gid<S: serde::Serializer>(gid: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_gid(gid))
}

/// GID type (`gid_attrs/types/<i>`, `ib_cache_gid_type_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GidKind {
    /// `IB/RoCE v1`: InfiniBand GIDs and RoCE v1.
    IbRoceV1,
    /// `RoCE v2`: routable RoCE over UDP.
    RoceV2,
}

/// Parses `gid_attrs/types/<i>`; `None` for a type this code does not know.
pub fn parse_gid_kind(s: &str) -> Option<GidKind> {
    match s {
        "IB/RoCE v1" => Some(GidKind::IbRoceV1),
        "RoCE v2" => Some(GidKind::RoceV2),
        _ => None,
    }
}

/// Parses `gids/<i>`: the kernel's `%pI6`, eight groups of four hex digits.
pub fn parse_gid(s: &str) -> Result<[u8; 16], ParseError> {
    let bad = || ParseError::new(s, "a GID of eight 4-digit hex groups");
    let mut gid = [0u8; 16];
    let mut groups = s.split(':');
    for pair in gid.chunks_exact_mut(2) {
        let group = groups.next().ok_or_else(bad)?;
        if group.len() != 4 || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let v = u16::from_str_radix(group, 16).map_err(|_| bad())?;
        pair.copy_from_slice(&v.to_be_bytes());
    }
    if groups.next().is_some() {
        return Err(bad());
    }
    Ok(gid)
}

/// Formats a GID as the kernel does (`fe80:0000:0000:0000:0202:c9ff:fe00:0001`).
pub fn format_gid(gid: &[u8; 16]) -> String {
    gid.chunks_exact(2)
        .map(|p| format!("{:02x}{:02x}", p[0], p[1]))
        .collect::<Vec<_>>()
        .join(":")
}

/// Every port of every RDMA device, sorted by (device, port).
pub(crate) fn read_ports(
    root: &SysRoot,
    notes: &mut Vec<String>,
) -> Result<Vec<RdmaPort>, DiscoverError> {
    let class = root.path("sys/class/infiniband");
    let devices = match root.list_dir(&class)? {
        Some(devices) if !devices.is_empty() => devices,
        Some(_) => {
            notes.push("no RDMA devices found: sys/class/infiniband is empty".to_string());
            return Ok(Vec::new());
        }
        None => {
            notes.push("no RDMA devices found: sys/class/infiniband does not exist".to_string());
            return Ok(Vec::new());
        }
    };
    let mut ports = Vec::new();
    for device in devices {
        read_device(root, &class.join(&device), &device, notes, &mut ports)?;
    }
    ports.sort_by(|a, b| natural_order(&a.device, &b.device).then(a.port.cmp(&b.port)));
    Ok(ports)
}

fn read_device(
    root: &SysRoot,
    dir: &Path,
    name: &str,
    notes: &mut Vec<String>,
    out: &mut Vec<RdmaPort>,
) -> Result<(), DiscoverError> {
    let parent = root
        .read_optional(&dir.join("parent"))?
        .filter(|p| !p.is_empty());
    let device = root.resolve(&dir.join("device"))?;
    let software = parent.is_some() || device.is_none();
    let function_dir = match (&parent, &device) {
        (Some(netdev), _) => root
            .resolve(&root.path(&format!("sys/class/net/{netdev}/device")))?
            .and_then(|real| pci::function_of(root, &real)),
        (None, Some(real)) => pci::function_of(root, real),
        (None, None) => None,
    };
    let numa_node = match &function_dir {
        Some((_, fdir)) => pci::read_numa_node(root, fdir)?,
        None => None,
    };
    let function_netdevs = if software {
        Vec::new()
    } else {
        root.list_dir(&dir.join("device/net"))?.unwrap_or_default()
    };

    let ports_dir = dir.join("ports");
    let Some(port_names) = root.list_dir(&ports_dir)? else {
        notes.push(format!(
            "{name} in sys/class/infiniband has no ports folder (not an RDMA port device: a Xeon Phi's scif0 registers there): skipped"
        ));
        return Ok(());
    };
    for port_name in port_names {
        let port_dir = ports_dir.join(&port_name);
        let port = parse_decimal_u32(&port_name)
            .and_then(|p| u8::try_from(p).ok())
            .ok_or_else(|| DiscoverError::Malformed {
                path: port_dir.clone(),
                reason: "a port folder must be named by its number".into(),
            })?;
        let gids = read_gids(root, &port_dir, name, port, notes)?;
        let netdev = match &parent {
            Some(p) => Some(p.clone()),
            None => gids
                .iter()
                .find_map(|g| g.netdev.clone())
                .or_else(|| (function_netdevs.len() == 1).then(|| function_netdevs[0].clone())),
        };
        out.push(RdmaPort {
            device: name.to_string(),
            port,
            state: root.parse_required(&port_dir.join("state"), parse_state)?,
            phys_state: root.read_optional(&port_dir.join("phys_state"))?,
            rate: root.parse_optional(&port_dir.join("rate"), parse_rate)?,
            link_layer: parse_link_layer(&root.read_required(&port_dir.join("link_layer"))?),
            lid: root.parse_optional(&port_dir.join("lid"), parse_lid)?,
            gids,
            netdev,
            pci: function_dir.as_ref().map(|(addr, _)| *addr),
            numa_node,
            software,
        });
    }
    Ok(())
}

fn read_gids(
    root: &SysRoot,
    port_dir: &Path,
    device: &str,
    port: u8,
    notes: &mut Vec<String>,
) -> Result<Vec<GidEntry>, DiscoverError> {
    let mut gids = Vec::new();
    for index in 0..GID_SCAN_LIMIT {
        let Some(gid) = root.parse_optional(&port_dir.join(format!("gids/{index}")), parse_gid)?
        else {
            continue;
        };
        if gid == [0; 16] {
            continue;
        }
        let kind = match root.read_optional(&port_dir.join(format!("gid_attrs/types/{index}")))? {
            Some(text) => {
                let kind = parse_gid_kind(&text);
                if kind.is_none() {
                    notes.push(format!(
                        "{device} port {port} GID {index}: unknown GID type `{text}`: left untyped"
                    ));
                }
                kind
            }
            None => None,
        };
        let netdev = root
            .read_optional(&port_dir.join(format!("gid_attrs/ndevs/{index}")))?
            .filter(|n| !n.is_empty());
        gids.push(GidEntry {
            index,
            gid,
            kind,
            netdev,
        });
    }
    Ok(gids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn states_follow_ib_port_state() {
        let table = [
            ("4: ACTIVE", Ok(PortState::Active)),
            ("1: DOWN", Ok(PortState::Down)),
            ("0: NOP", Ok(PortState::Nop)),
            ("2: INIT", Ok(PortState::Init)),
            ("3: ARMED", Ok(PortState::Armed)),
            ("5: ACTIVE_DEFER", Ok(PortState::ActiveDefer)),
            (
                "7: UNKNOWN",
                Ok(PortState::Other {
                    code: 7,
                    name: "UNKNOWN".into(),
                }),
            ),
            ("4: DOWN", Err(())),
            ("4:ACTIVE", Err(())),
            ("ACTIVE", Err(())),
            ("-1: DOWN", Err(())),
            ("4: ", Err(())),
            ("", Err(())),
        ];
        for (text, want) in table {
            assert_eq!(parse_state(text).map_err(|_| ()), want, "{text}");
        }
        assert_eq!(PortState::Down.to_string(), "DOWN");
        assert_eq!(PortState::ActiveDefer.to_string(), "ACTIVE_DEFER");
    }

    fn rate(gbps: f64, lanes: u8, generation: Option<&str>) -> LinkRate {
        LinkRate {
            gbps,
            lanes,
            generation: generation.map(String::from),
        }
    }

    #[test]
    fn rates_follow_rate_show() {
        let table = [
            ("200 Gb/sec (4X HDR)", Ok(rate(200.0, 4, Some("HDR")))),
            ("100 Gb/sec (4X EDR)", Ok(rate(100.0, 4, Some("EDR")))),
            ("400 Gb/sec (4X NDR)", Ok(rate(400.0, 4, Some("NDR")))),
            ("25 Gb/sec (1X EDR)", Ok(rate(25.0, 1, Some("EDR")))),
            ("2.5 Gb/sec (1X SDR)", Ok(rate(2.5, 1, Some("SDR")))),
            ("40 Gb/sec (4X FDR10)", Ok(rate(40.0, 4, Some("FDR10")))),
            ("56 Gb/sec (4X FDR)", Ok(rate(56.0, 4, Some("FDR")))),
            ("10 Gb/sec (4X)", Ok(rate(10.0, 4, None))),
            ("300 Gb/sec (12X EDR)", Ok(rate(300.0, 12, Some("EDR")))),
            ("0 GB/sec", Err(())),
            ("200 Gb/sec", Err(())),
            ("200 Gb/sec (0X HDR)", Err(())),
            ("200 Gb/sec (4XHDR)", Err(())),
            ("200 Gb/sec (4X HDR", Err(())),
            ("200 Gb/sec (4X  HDR)", Err(())),
            ("fast Gb/sec (4X HDR)", Err(())),
            ("-200 Gb/sec (4X HDR)", Err(())),
            ("inf Gb/sec (4X HDR)", Err(())),
            ("", Err(())),
        ];
        for (text, want) in table {
            assert_eq!(parse_rate(text).map_err(|_| ()), want, "{text}");
        }
    }

    #[test]
    fn link_layers_keep_unknown_values() {
        assert_eq!(parse_link_layer("InfiniBand"), LinkLayer::InfiniBand);
        assert_eq!(parse_link_layer("Ethernet"), LinkLayer::Ethernet);
        assert_eq!(
            parse_link_layer("Unknown"),
            LinkLayer::Unknown("Unknown".into())
        );
    }

    #[test]
    fn lids_are_hex() {
        let table = [
            ("0x0", Ok(0)),
            ("0x2a", Ok(42)),
            ("0xffff", Ok(0xffff)),
            ("0x10000", Err(())),
            ("42", Err(())),
            ("0x", Err(())),
            ("0x-1", Err(())),
        ];
        for (text, want) in table {
            assert_eq!(parse_lid(text).map_err(|_| ()), want, "{text}");
        }
    }

    #[test]
    fn gids_follow_pi6() {
        let link_local = parse_gid("fe80:0000:0000:0000:0202:c9ff:fe00:0001").unwrap();
        assert_eq!(
            link_local,
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x02, 0xc9, 0xff, 0xfe, 0, 0, 1]
        );
        let v4 = parse_gid("0000:0000:0000:0000:0000:ffff:c0a8:0a01").unwrap();
        assert_eq!(&v4[12..], &[192, 168, 10, 1]);
        for bad in [
            "fe80::1",
            "fe80:0000:0000:0000:0202:c9ff:fe00",
            "fe80:0000:0000:0000:0202:c9ff:fe00:0001:0000",
            "fe80:0000:0000:0000:0202:c9ff:fe00:001",
            "fe80:0000:0000:0000:0202:c9ff:fe00:000g",
            "",
        ] {
            assert!(parse_gid(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_gid_kind("RoCE v2"), Some(GidKind::RoceV2));
        assert_eq!(parse_gid_kind("IB/RoCE v1"), Some(GidKind::IbRoceV1));
        assert_eq!(parse_gid_kind("RoCE v3"), None);
    }

    fn entry(index: u32, text: &str, kind: GidKind) -> GidEntry {
        GidEntry {
            index,
            gid: parse_gid(text).unwrap(),
            kind: Some(kind),
            netdev: None,
        }
    }

    fn port(link_layer: LinkLayer, gids: Vec<GidEntry>) -> RdmaPort {
        RdmaPort {
            device: "mlx5_0".into(),
            port: 1,
            state: PortState::Active,
            phys_state: None,
            rate: None,
            link_layer,
            lid: None,
            gids,
            netdev: None,
            pci: None,
            numa_node: None,
            software: false,
        }
    }

    const LL: &str = "fe80:0000:0000:0000:0202:c9ff:fe00:0001";
    const V4: &str = "0000:0000:0000:0000:0000:ffff:c0a8:0a01";
    const V6: &str = "2001:0db8:0000:0000:0000:0000:0000:0001";

    #[test]
    fn loopback_gid_prefers_roce_v2_ipv4() {
        use GidKind::*;
        let roce = |gids| port(LinkLayer::Ethernet, gids);
        let all = vec![
            entry(0, LL, IbRoceV1),
            entry(1, LL, RoceV2),
            entry(2, V6, RoceV2),
            entry(3, V4, IbRoceV1),
            entry(4, V4, RoceV2),
        ];
        assert_eq!(roce(all.clone()).loopback_gid().map(|g| g.index), Some(4));
        let no_v4 = all[..4].to_vec();
        assert_eq!(roce(no_v4).loopback_gid().map(|g| g.index), Some(1));
        let v1_only = vec![entry(0, LL, IbRoceV1), entry(3, V4, IbRoceV1)];
        assert_eq!(roce(v1_only).loopback_gid().map(|g| g.index), Some(0));
        assert_eq!(roce(vec![]).loopback_gid(), None);
        let ib = port(LinkLayer::InfiniBand, all);
        assert_eq!(ib.loopback_gid().map(|g| g.index), Some(0));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = parse_state(&s);
            let _ = parse_rate(&s);
            let _ = parse_link_layer(&s);
            let _ = parse_lid(&s);
            let _ = parse_gid(&s);
            let _ = parse_gid_kind(&s);
        }

        #[test]
        fn generated_rates_parse(
            whole in 0u32..100_000, half: bool, lanes in 1u8..=32,
            generation in prop::option::of("[A-Z]{3}[0-9]{0,2}"),
        ) {
            let number = format!("{whole}{}", if half { ".5" } else { "" });
            let tail = generation.as_ref().map(|g| format!(" {g}")).unwrap_or_default();
            let text = format!("{number} Gb/sec ({lanes}X{tail})");
            let got = parse_rate(&text).unwrap();
            prop_assert_eq!(got.gbps, f64::from(whole) + if half { 0.5 } else { 0.0 });
            prop_assert_eq!(got.lanes, lanes);
            prop_assert_eq!(&got.generation, &generation);
            prop_assert_eq!(got.to_string(), text);
        }

        #[test]
        fn gids_round_trip(gid: [u8; 16]) {
            prop_assert_eq!(parse_gid(&format_gid(&gid)), Ok(gid));
        }

        #[test]
        fn states_round_trip(code in 0u32..1000, name in "[A-Z_]{1,12}") {
            if let Ok(state) = parse_state(&format!("{code}: {name}")) {
                prop_assert_eq!(state.to_string(), name);
            }
        }
    }
}
