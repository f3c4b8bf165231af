/*!
PCI functions and the PCIe tree, from `sys/bus/pci/devices/<addr>` and the
`sys/devices/pci<domain>:<bus>/...` folders the links point into
(`Documentation/ABI/testing/sysfs-bus-pci`, `drivers/pci/pci-sysfs.c`; linux-counters.md 4.1
and 4.2).

| file (below the function's folder) | policy |
|---|---|
| `sys/bus/pci/devices/<addr>` (link) | required for a device in the host model |
| `class` | required: `0x%06x` |
| `vendor`, `device` | required where read (GPU candidates): `0x%04x` |
| `numa_node` | optional: absent (kernel without NUMA) or `-1` gives `None`; malformed is an error |
| `current_link_speed`, `current_link_width` | optional: absent (conventional PCI, virtio), `Unknown` or width `0` (link down) give no negotiated link, and the model assumes a capacity with a note; malformed is an error |

The realpath of a function lists its ancestors nearest the root first:
`pci0000:17/0000:17:00.0/0000:18:00.0/.../0000:1c:00.0`. The `pciDDDD:BB` folder is the host
bridge; the functions after the last one form the chain the host model is built from.
*/

use super::{DiscoverError, ParseError, SysRoot};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A PCI function address, `DDDD:BB:DD.F` as sysfs names it (domains above `ffff` exist
/// behind Intel VMD and print with more digits). Ordered by domain, bus, device, function.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddr {
    /// PCI domain (segment).
    pub domain: u32,
    /// Bus number.
    pub bus: u8,
    /// Device number, 0 to 31.
    pub dev: u8,
    /// Function number, 0 to 7.
    pub func: u8,
}

impl FromStr for PciAddr {
    type Err = ParseError;

    /// Parses `0000:3b:00.0`: a domain of 4 to 8 hex digits, then exactly 2, 2 and 1.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let bad = || ParseError::new(s, "a PCI address like 0000:3b:00.0");
        let hex = |t: &str, min: usize, max: usize| {
            if (min..=max).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_hexdigit()) {
                u32::from_str_radix(t, 16).ok()
            } else {
                None
            }
        };
        let (domain, rest) = s.split_once(':').ok_or_else(bad)?;
        let (bus, rest) = rest.split_once(':').ok_or_else(bad)?;
        let (dev, func) = rest.split_once('.').ok_or_else(bad)?;
        let domain = hex(domain, 4, 8).ok_or_else(bad)?;
        let bus = hex(bus, 2, 2).ok_or_else(bad)?;
        let dev = hex(dev, 2, 2).filter(|d| *d < 32).ok_or_else(bad)?;
        let func = hex(func, 1, 1).filter(|f| *f < 8).ok_or_else(bad)?;
        Ok(PciAddr {
            domain,
            bus: bus as u8,
            dev: dev as u8,
            func: func as u8,
        })
    }
}

impl fmt::Display for PciAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.dev, self.func
        )
    }
}

impl fmt::Debug for PciAddr {
    /// `PciAddr(0000:3b:00.0)`: test failures read like sysfs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PciAddr({self})")
    }
}

impl Serialize for PciAddr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A host bridge folder name, `pci0000:17` (`pci_create_root_bus` names it
/// `pci%04x:%02x`).
fn is_host_bridge(name: &str) -> bool {
    name.strip_prefix("pci").is_some_and(|rest| {
        rest.split_once(':').is_some_and(|(dom, bus)| {
            dom.len() >= 4
                && bus.len() == 2
                && dom
                    .bytes()
                    .chain(bus.bytes())
                    .all(|b| b.is_ascii_hexdigit())
        })
    })
}

/// A negotiated PCIe link: the signalling rate and the lane count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PcieLink {
    /// Transfer rate per lane, GT/s (`current_link_speed`).
    pub gts: f64,
    /// Lanes (`current_link_width`).
    pub width: u32,
}

impl PcieLink {
    /// Capacity of one direction in Gb/s after line encoding: 8b/10b below 8 GT/s,
    /// 128b/130b from 8 GT/s (`PCIE_SPEED2MBS_ENC` in `drivers/pci/pci.h`), FLIT 242/256
    /// at 64 GT/s as `model::hostfile::pcie_capacity_gbps` counts it. TLP overhead is left
    /// out, as in Hostping footnote 4.
    pub fn gbps(&self) -> f64 {
        let encoding = if self.gts < 8.0 {
            8.0 / 10.0
        } else if self.gts < 64.0 {
            128.0 / 130.0
        } else {
            242.0 / 256.0
        };
        f64::from(self.width) * self.gts * encoding
    }
}

/// Parses `current_link_speed`: `16.0 GT/s PCIe` (`pci_speed_string()`), older kernels'
/// `8 GT/s` or `8.0 GT/s`, and `Unknown` (link down: `None`).
pub fn parse_link_speed(s: &str) -> Result<Option<f64>, ParseError> {
    if s == "Unknown" {
        return Ok(None);
    }
    let bad = || ParseError::new(s, "a PCIe link speed like `16.0 GT/s PCIe` or `Unknown`");
    let number = s
        .strip_suffix(" GT/s PCIe")
        .or_else(|| s.strip_suffix(" GT/s"))
        .ok_or_else(bad)?;
    let gts = parse_decimal(number).ok_or_else(bad)?;
    if gts > 0.0 {
        Ok(Some(gts))
    } else {
        Err(bad())
    }
}

/// Parses `current_link_width`: a bare lane count (`%u`); `0` (link down) is `None`.
pub fn parse_link_width(s: &str) -> Result<Option<u32>, ParseError> {
    let width = parse_decimal_u32(s).ok_or_else(|| ParseError::new(s, "a PCIe lane count"))?;
    Ok((width > 0).then_some(width))
}

/// Parses `class` (`0x%06x`): base class, subclass, programming interface.
pub fn parse_class(s: &str) -> Result<u32, ParseError> {
    parse_hex(s, 6)
        .map(|v| v as u32)
        .ok_or_else(|| ParseError::new(s, "a PCI class like 0x030200"))
}

/// Parses `vendor` or `device` (`0x%04x`).
pub fn parse_id(s: &str) -> Result<u16, ParseError> {
    parse_hex(s, 4)
        .map(|v| v as u16)
        .ok_or_else(|| ParseError::new(s, "a 16-bit PCI id like 0x10de"))
}

/// Parses `numa_node` (`%d`): `-1` (no affinity: VMs, one-socket hosts) is `None`.
pub fn parse_numa_node(s: &str) -> Result<Option<u32>, ParseError> {
    if s == "-1" {
        return Ok(None);
    }
    parse_decimal_u32(s)
        .map(Some)
        .ok_or_else(|| ParseError::new(s, "a NUMA node number or -1"))
}

/// `0x` and 1 to `digits` hex digits.
fn parse_hex(s: &str, digits: usize) -> Option<u64> {
    let h = s.strip_prefix("0x")?;
    if h.is_empty() || h.len() > digits || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// Plain decimal digits only (no sign, no `+`), as `%u` prints them.
pub(crate) fn parse_decimal_u32(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `12`, `2.5`: digits with at most one point, no sign or exponent (so no `inf`, `NaN`).
pub(crate) fn parse_decimal(s: &str) -> Option<f64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) {
        return None;
    }
    s.parse().ok().filter(|v: &f64| v.is_finite())
}

/// One PCI function on the way from the host bridge down to a device.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hop {
    pub addr: PciAddr,
    /// `numa_node`, `None` when absent or `-1`.
    pub numa_node: Option<u32>,
    /// The link to the function above, as this function (its downstream end) reports it;
    /// `None` when not negotiated or not reported.
    pub link: Option<PcieLink>,
}

/// Class 0x0604xx: a PCI-to-PCI bridge (root port, switch port).
pub fn is_bridge(class: u32) -> bool {
    class >> 8 == 0x0604
}

/// The functions from the host bridge down to `addr`, root port first and `addr` last,
/// each with its NUMA node and negotiated link. Every function above `addr` must be a
/// bridge: nothing else has functions below it.
pub(crate) fn chain(root: &SysRoot, addr: PciAddr) -> Result<Vec<Hop>, DiscoverError> {
    let link = root.path(&format!("sys/bus/pci/devices/{addr}"));
    let real = root
        .resolve(&link)?
        .ok_or_else(|| DiscoverError::Malformed {
            path: link.clone(),
            reason: "required link is missing".into(),
        })?;
    let names = root.components_below_root(&real);
    let start = names
        .iter()
        .rposition(|n| is_host_bridge(n))
        .map_or(0, |i| i + 1);
    let mut dir = root.root().to_path_buf();
    dir.extend(&names[..start]);
    // Ancestors that are not PCI functions (none in practice) are skipped.
    let mut functions = Vec::new();
    for name in &names[start..] {
        dir.push(name);
        if let Ok(addr) = name.parse::<PciAddr>() {
            functions.push((addr, dir.clone()));
        }
    }
    if functions.last().map(|(a, _)| *a) != Some(addr) {
        return Err(DiscoverError::Malformed {
            path: link,
            reason: format!("points to {}, not to the function {addr}", real.display()),
        });
    }
    let mut hops = Vec::new();
    for (i, (addr, dir)) in functions.iter().enumerate() {
        let class_file = dir.join("class");
        let class = root.parse_required(&class_file, parse_class)?;
        if i + 1 < functions.len() && !is_bridge(class) {
            return Err(DiscoverError::Malformed {
                path: class_file,
                reason: format!(
                    "class {class:#08x} has PCI functions below it but is not a bridge (0x0604xx)"
                ),
            });
        }
        hops.push(read_hop(root, *addr, dir)?);
    }
    Ok(hops)
}

fn read_hop(root: &SysRoot, addr: PciAddr, dir: &Path) -> Result<Hop, DiscoverError> {
    let speed = root
        .parse_optional(&dir.join("current_link_speed"), parse_link_speed)?
        .flatten();
    let width = root
        .parse_optional(&dir.join("current_link_width"), parse_link_width)?
        .flatten();
    Ok(Hop {
        addr,
        numa_node: read_numa_node(root, dir)?,
        link: speed.zip(width).map(|(gts, width)| PcieLink { gts, width }),
    })
}

/// `numa_node` of the function in `dir`.
pub(crate) fn read_numa_node(root: &SysRoot, dir: &Path) -> Result<Option<u32>, DiscoverError> {
    Ok(root
        .parse_optional(&dir.join("numa_node"), parse_numa_node)?
        .flatten())
}

/// The PCI function a device folder belongs to: the nearest ancestor of the resolved path
/// (itself included) named like a PCI address, with its folder. This finds the function
/// of an RDMA device's `device` link, and through `virtioN/` or an auxiliary device the
/// function of a netdev.
pub(crate) fn function_of(root: &SysRoot, real: &Path) -> Option<(PciAddr, PathBuf)> {
    let names = root.components_below_root(real);
    let i = names.iter().rposition(|n| n.parse::<PciAddr>().is_ok())?;
    let addr = names[i].parse().ok()?;
    let mut dir = root.root().to_path_buf();
    dir.extend(&names[..=i]);
    Some((addr, dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn addr(domain: u32, bus: u8, dev: u8, func: u8) -> PciAddr {
        PciAddr {
            domain,
            bus,
            dev,
            func,
        }
    }

    #[test]
    fn pci_addresses_parse_as_sysfs_writes_them() {
        let table = [
            ("0000:3b:00.0", Some(addr(0, 0x3b, 0, 0))),
            ("0000:00:1f.7", Some(addr(0, 0, 0x1f, 7))),
            ("10000:01:00.1", Some(addr(0x10000, 1, 0, 1))),
            ("0001:FF:02.3", Some(addr(1, 0xff, 2, 3))),
            ("0000:3b:20.0", None),
            ("0000:3b:00.8", None),
            ("000:3b:00.0", None),
            ("0000:3b:0.0", None),
            ("0000:3b:00", None),
            ("0000:3b:00.0 ", None),
            ("0000:3b:00.00", None),
            ("pci0000:3b", None),
            ("", None),
        ];
        for (text, want) in table {
            assert_eq!(text.parse::<PciAddr>().ok(), want, "{text}");
        }
        assert_eq!(addr(0x10000, 1, 2, 3).to_string(), "10000:01:02.3");
    }

    #[test]
    fn pci_addresses_order_by_domain_bus_dev_func() {
        let mut v = [
            addr(0, 0x3b, 0, 1),
            addr(1, 0, 0, 0),
            addr(0, 0x3b, 0, 0),
            addr(0, 0x17, 2, 0),
        ];
        v.sort();
        let s: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(
            s,
            [
                "0000:17:02.0",
                "0000:3b:00.0",
                "0000:3b:00.1",
                "0001:00:00.0"
            ]
        );
    }

    #[test]
    fn host_bridges_are_recognised() {
        for (name, want) in [
            ("pci0000:17", true),
            ("pci10000:00", true),
            ("pci0000:1", false),
            ("0000:17:00.0", false),
            ("pci0000:1g", false),
            ("pci:17", false),
            ("pci", false),
        ] {
            assert_eq!(is_host_bridge(name), want, "{name}");
        }
    }

    #[test]
    fn link_speeds_follow_pci_speed_string() {
        let table = [
            ("2.5 GT/s PCIe", Ok(Some(2.5))),
            ("5.0 GT/s PCIe", Ok(Some(5.0))),
            ("8.0 GT/s PCIe", Ok(Some(8.0))),
            ("16.0 GT/s PCIe", Ok(Some(16.0))),
            ("32.0 GT/s PCIe", Ok(Some(32.0))),
            ("64.0 GT/s PCIe", Ok(Some(64.0))),
            ("8 GT/s", Ok(Some(8.0))),
            ("5.0 GT/s", Ok(Some(5.0))),
            ("Unknown", Ok(None)),
            ("0 GT/s", Err(())),
            ("16.0GT/s", Err(())),
            ("fast", Err(())),
            ("inf GT/s", Err(())),
            ("", Err(())),
        ];
        for (text, want) in table {
            assert_eq!(parse_link_speed(text).map_err(|_| ()), want, "{text}");
        }
    }

    #[test]
    fn link_widths_are_bare_numbers() {
        let table = [
            ("16", Ok(Some(16))),
            ("1", Ok(Some(1))),
            ("0", Ok(None)),
            ("x16", Err(())),
            ("-1", Err(())),
            ("", Err(())),
        ];
        for (text, want) in table {
            assert_eq!(parse_link_width(text).map_err(|_| ()), want, "{text}");
        }
    }

    #[test]
    fn ids_classes_and_numa_nodes() {
        assert_eq!(parse_class("0x030200"), Ok(0x030200));
        assert_eq!(parse_class("0x060400"), Ok(0x060400));
        assert!(parse_class("030200").is_err());
        assert!(parse_class("0x1030200").is_err());
        assert_eq!(parse_id("0x10de"), Ok(0x10de));
        assert!(parse_id("0x10dee").is_err());
        assert!(parse_id("0x").is_err());
        assert!(is_bridge(0x060400) && is_bridge(0x060401));
        assert!(!is_bridge(0x060000) && !is_bridge(0x068000) && !is_bridge(0x030200));
        assert_eq!(parse_numa_node("-1"), Ok(None));
        assert_eq!(parse_numa_node("1"), Ok(Some(1)));
        assert!(parse_numa_node("-2").is_err());
        assert!(parse_numa_node("one").is_err());
        let e = parse_numa_node("x").unwrap_err();
        assert_eq!(e.to_string(), "`x` is not a NUMA node number or -1");
    }

    #[test]
    fn link_capacity_matches_the_host_model_table() {
        for (gen, gts) in [
            (1, 2.5),
            (2, 5.0),
            (3, 8.0),
            (4, 16.0),
            (5, 32.0),
            (6, 64.0),
        ] {
            for width in [1, 2, 4, 8, 12, 16, 32] {
                let ours = PcieLink { gts, width }.gbps();
                let model = model::hostfile::pcie_capacity_gbps(&format!("gen{gen}x{width}"))
                    .expect("valid spec");
                assert!((ours - model).abs() < 1e-9, "gen{gen}x{width}");
            }
        }
        // linux-counters.md 4.4: Gen4 x16 is 31.5 GB/s, Gen1 x1 is 0.25 GB/s.
        assert!(
            (PcieLink {
                gts: 16.0,
                width: 16
            }
            .gbps()
                / 8.0
                - 31.5)
                .abs()
                < 0.01
        );
        assert!((PcieLink { gts: 2.5, width: 1 }.gbps() / 8.0 - 0.25).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn pci_address_display_round_trips(
            domain in 0u32..=0xffff_ffff, bus: u8, dev in 0u8..32, func in 0u8..8
        ) {
            let a = addr(domain, bus, dev, func);
            prop_assert_eq!(a.to_string().parse::<PciAddr>(), Ok(a));
        }

        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = s.parse::<PciAddr>();
            let _ = parse_link_speed(&s);
            let _ = parse_link_width(&s);
            let _ = parse_class(&s);
            let _ = parse_id(&s);
            let _ = parse_numa_node(&s);
            let _ = is_host_bridge(&s);
        }

        #[test]
        fn pci_address_like_strings_never_panic(s in "[0-9a-fA-F:.]{0,16}") {
            if let Ok(a) = s.parse::<PciAddr>() {
                prop_assert_eq!(a.to_string().parse::<PciAddr>(), Ok(a));
                if s.find(':') == Some(4) {
                    prop_assert_eq!(a.to_string(), s.to_lowercase());
                }
            }
        }

        #[test]
        fn generated_link_speeds_parse(tenths in 1u32..1000, suffix in prop::bool::ANY) {
            let text = format!("{}.{} GT/s{}", tenths / 10, tenths % 10,
                               if suffix { " PCIe" } else { "" });
            let got = parse_link_speed(&text).unwrap().unwrap();
            prop_assert!((got - f64::from(tenths) / 10.0).abs() < 1e-9);
        }

        #[test]
        fn numa_nodes_round_trip(n: u32) {
            prop_assert_eq!(parse_numa_node(&n.to_string()), Ok(Some(n)));
        }
    }
}
