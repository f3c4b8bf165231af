/*!
Per-port RDMA counters from `sys/class/infiniband/<dev>/`, read on every monitor tick
(Hostping 5: abnormal metrics every second). Formats are those of
`drivers/infiniband/core/sysfs.c` as summarised in linux-counters.md 1.1 to 1.5; the
port attributes go through the parsers of [`crate::sysfs::ib`].

| file (below `sys/class/infiniband/<dev>/`) | policy |
|---|---|
| `sys/class/infiniband/` | optional: absent or empty gives no ports |
| `ports/` | required |
| `ports/<p>/state`, `ports/<p>/link_layer` | required |
| `ports/<p>/phys_state`, `ports/<p>/rate` | optional |
| `device` (link) | optional: the PCI function; software devices (rxe) have none (1.4) |
| `ports/<p>/gid_attrs/ndevs/0`, else the only entry of `device/net/`, else `parent` | optional: the netdev (1.5) |
| `ports/<p>/counters/` | optional: only drivers with `process_mad` have it, rxe does not (1.2); `N/A (no PMA)` (old kernels) or `EINVAL` (new ones) is "unsupported" and the counter is left out (1.3) |
| `ports/<p>/counters_ext/` | optional: 64-bit data counters of kernels before ~4.5 (1.3) |
| `ports/<p>/hw_counters/`, `hw_counters/` | optional: `%llu`; `lifespan` is the cache time in ms, kept apart (1.4) |

A file that is missing is left out; a file that exists but cannot be read (`EACCES`,
`EISDIR`, `EIO`) or holds something else than a counter is a [`DiscoverError`] naming it.
[`read_ports`] stops at the first such error, [`read_ports_lenient`] collects them and keeps
every value it could read: the monitor calls it every second and must not go blind because
one file of one port went bad.

# Counter widths

IB counters stick at their maximum rather than wrap ("IB semantics is to cap counters",
rdma-core `perfquery.c`; 1.3), so a value at its field's maximum says nothing about later
traffic: it is flagged `saturated` and every delta over it is `None`. The width of each
field is that of the PMA attribute the kernel read it from (the table of 1.3). The data and
packet counters are 32-bit in PortCounters (0x12) and 64-bit in PortCountersExtended
(0x1D), and the folder does not say which table the kernel picked; [`PmaTable`] decides:
*Extended* when a `unicast_*`/`multicast_*` file has a value (only `pma_attrs_ext` has them)
or a data or packet counter exceeds `u32::MAX` (then it cannot be 32-bit: the `NoIETF`
table), else *Base*. A `NoIETF` port that has moved less than 16 GiB is read as *Base*; were
a counter then to sit at exactly `u32::MAX`, it would be refused as saturated, never
misread.
*/

use crate::sysfs::ib::{parse_link_layer, parse_rate, parse_state};
use crate::sysfs::{DiscoverError, LinkLayer, ParseError, PciAddr, PortState, SysRoot};
use model::ids::natural_order;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// What an old kernel prints in a `counters/` file when the device has no PMA (1.3).
pub const NO_PMA: &str = "N/A (no PMA)";

/// Widths of the fixed PortCounters (0x12) fields (linux-counters.md 1.3, libibmad
/// `IB_PC_*`). The data and packet counters depend on the table, see [`pma_width`].
const FIXED_WIDTHS: [(&str, u8); 13] = [
    ("symbol_error", 16),
    ("link_error_recovery", 8),
    ("link_downed", 8),
    ("port_rcv_errors", 16),
    ("port_rcv_remote_physical_errors", 16),
    ("port_rcv_switch_relay_errors", 16),
    ("port_xmit_discards", 16),
    ("port_xmit_constraint_errors", 8),
    ("port_rcv_constraint_errors", 8),
    ("local_link_integrity_errors", 4),
    ("excessive_buffer_overrun_errors", 4),
    ("VL15_dropped", 16),
    ("port_xmit_wait", 32),
];

/// Data and packet counters: 32-bit in the base table, 64-bit in the extended one.
const DATA_COUNTERS: [&str; 4] = [
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
];

/// Counters that only the extended table (`pma_attrs_ext`) has, all 64-bit.
const EXTENDED_ONLY: [&str; 4] = [
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
];

/// Counters meaning that packets were lost, with where they live. Chosen from the
/// reference's semantics (1.3, 1.4):
/// - PMA `port_rcv_errors` "packets received with errors", `port_xmit_discards` "outbound
///   discards (port down/congested)", `excessive_buffer_overrun_errors` "input buffer
///   overrun";
/// - mlx5 `out_of_buffer` "drops because no receive WQE was posted", `out_of_sequence`
///   "OOS packets received" (a responder discards them: a packet before them was lost);
/// - rxe `out_of_seq_request`, the same event on Soft-RoCE (rxe has no buffer-drop counter).
///
/// Left out: the constraint errors (partition policy, not loss), `VL15_dropped` (management
/// packets only), and the requester-side echoes of a loss (`packet_seq_err`,
/// `rcvd_seq_err`, `local_ack_timeout_err`), which would count a loopback loss twice.
pub const DROP_COUNTERS: [(&str, CounterSource); 6] = [
    ("port_rcv_errors", CounterSource::Pma),
    ("port_xmit_discards", CounterSource::Pma),
    ("excessive_buffer_overrun_errors", CounterSource::Pma),
    ("out_of_buffer", CounterSource::Hw),
    ("out_of_sequence", CounterSource::Hw),
    ("out_of_seq_request", CounterSource::Hw),
];

/// The folder a counter is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterSource {
    /// `ports/<p>/counters/` (and `counters_ext/`): [`PortCounters::counters`].
    Pma,
    /// `ports/<p>/hw_counters/`: [`PortCounters::hw_counters`].
    Hw,
}

/// Which PMA attribute table the kernel exposes in `counters/` (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PmaTable {
    /// No `counters/` folder: the driver has no `process_mad` (rxe).
    Absent,
    /// A `counters/` folder where no file has a value (`N/A (no PMA)`, `EINVAL`, empty).
    Unsupported,
    /// PortCounters (0x12): data and packet counters are 32-bit.
    Base,
    /// PortCountersExtended (0x1D): data and packet counters are 64-bit.
    Extended,
}

/// One PMA counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counter {
    /// The value as the file gives it (data counters count 4-byte words).
    pub value: u64,
    /// The hardware field's width; `None` for a name this code does not know, or for a
    /// value larger than the known width allows (then the width is not what we think).
    pub bits: Option<u8>,
    /// At the maximum of its width: stuck, not counting any more.
    pub saturated: bool,
}

impl Counter {
    /// A counter of the given width; saturated when `value` is the width's maximum.
    pub fn new(value: u64, bits: Option<u8>) -> Counter {
        let bits = bits.filter(|b| value <= max_of(*b));
        Counter {
            value,
            bits,
            saturated: bits.is_some_and(|b| value == max_of(b)),
        }
    }

    /// How much the counter moved from `prev` to `cur`; `None` when either reading is
    /// saturated, or when it went backwards (a reset by `perfquery -R`, a driver reload).
    pub fn delta(prev: &Counter, cur: &Counter) -> Option<u64> {
        if prev.saturated || cur.saturated {
            return None;
        }
        cur.value.checked_sub(prev.value)
    }
}

/// The largest value of a `bits`-wide field.
fn max_of(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Everything read of one RDMA port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortCounters {
    /// Device name (`mlx5_0`, `rxe0`).
    pub device: String,
    /// Port number (from 1 on a CA).
    pub port: u8,
    /// `ports/<p>/state`.
    pub state: PortState,
    /// `ports/<p>/phys_state`, as written (`5: LinkUp`).
    pub phys_state: Option<String>,
    /// `ports/<p>/rate`, Gb/s.
    pub rate_gbps: Option<f64>,
    /// `ports/<p>/link_layer`.
    pub link_layer: LinkLayer,
    /// The PCI function of the `device` link; `None` for software devices.
    pub pci: Option<PciAddr>,
    /// The port's netdev (see the module doc for the order of sources).
    pub netdev: Option<String>,
    /// The PMA table behind `counters/`.
    pub pma: PmaTable,
    /// Every readable file of `counters/` and `counters_ext/`, by file name.
    pub counters: BTreeMap<String, Counter>,
    /// `ports/<p>/hw_counters/` without `lifespan`.
    pub hw_counters: BTreeMap<String, u64>,
    /// Device-scope `hw_counters/` (mlx5) without `lifespan`.
    pub device_hw_counters: BTreeMap<String, u64>,
    /// `hw_counters/lifespan` of the port, else of the device: readings younger than this
    /// come from the driver's cache (1.4), so sample no faster.
    pub lifespan_ms: Option<u64>,
}

impl PortCounters {
    /// Received bytes: 4 x the 64-bit `counters_ext/port_rcv_data_64` when present, else
    /// 4 x `counters/port_rcv_data` (the PMA counts 4-octet words, 1.3). `None` when
    /// absent, saturated, or beyond `u64` once multiplied.
    pub fn rcv_bytes(&self) -> Option<u64> {
        self.data_bytes("port_rcv_data")
    }

    /// Transmitted bytes, as [`PortCounters::rcv_bytes`] with `port_xmit_data`.
    pub fn xmit_bytes(&self) -> Option<u64> {
        self.data_bytes("port_xmit_data")
    }

    fn data_bytes(&self, name: &str) -> Option<u64> {
        let c = self.data_counter(name)?;
        (!c.saturated).then_some(c.value)?.checked_mul(4)
    }

    /// The 64-bit `counters_ext/<name>_64` when present, else `counters/<name>`.
    fn data_counter(&self, name: &str) -> Option<&Counter> {
        self.counters
            .get(&format!("{name}_64"))
            .or_else(|| self.counters.get(name))
    }

    /// The present counters of [`DROP_COUNTERS`], by name.
    pub fn drop_counters(&self) -> BTreeMap<&'static str, u64> {
        DROP_COUNTERS
            .iter()
            .filter_map(|(name, source)| Some((*name, self.value(name, *source)?)))
            .collect()
    }

    fn value(&self, name: &str, source: CounterSource) -> Option<u64> {
        match source {
            CounterSource::Pma => self.counters.get(name).map(|c| c.value),
            CounterSource::Hw => self.hw_counters.get(name).copied(),
        }
    }
}

/// How far PMA counter `name` moved between two readings of one port ([`Counter::delta`]);
/// `None` when either reading lacks it.
pub fn counter_delta(prev: &PortCounters, cur: &PortCounters, name: &str) -> Option<u64> {
    Counter::delta(prev.counters.get(name)?, cur.counters.get(name)?)
}

/// Receive throughput in Gb/s between two readings `interval_s` seconds apart; `None`
/// when the data counter is absent, saturated, went backwards, or the interval is not
/// positive.
pub fn rcv_gbps(prev: &PortCounters, cur: &PortCounters, interval_s: f64) -> Option<f64> {
    data_gbps(prev, cur, "port_rcv_data", interval_s)
}

/// Transmit throughput in Gb/s, as [`rcv_gbps`].
pub fn xmit_gbps(prev: &PortCounters, cur: &PortCounters, interval_s: f64) -> Option<f64> {
    data_gbps(prev, cur, "port_xmit_data", interval_s)
}

fn data_gbps(prev: &PortCounters, cur: &PortCounters, name: &str, interval_s: f64) -> Option<f64> {
    if !(interval_s > 0.0 && interval_s.is_finite()) {
        return None;
    }
    let words = Counter::delta(prev.data_counter(name)?, cur.data_counter(name)?)?;
    Some(words as f64 * 4.0 * 8.0 / interval_s / 1e9)
}

/// Packets lost between two readings: the sum of the moves of the [`DROP_COUNTERS`] that
/// both readings have. `None` when they share none, or when one of them saturated or went
/// backwards: a trigger must not act on a number it cannot trust.
pub fn drops_delta(prev: &PortCounters, cur: &PortCounters) -> Option<u64> {
    let mut total = None;
    for (name, source) in DROP_COUNTERS {
        let moved = match source {
            CounterSource::Pma => match (prev.counters.get(name), cur.counters.get(name)) {
                (Some(p), Some(c)) => Counter::delta(p, c)?,
                _ => continue,
            },
            CounterSource::Hw => match (prev.hw_counters.get(name), cur.hw_counters.get(name)) {
                (Some(p), Some(c)) => c.checked_sub(*p)?,
                _ => continue,
            },
        };
        total = Some(total.unwrap_or(0u64).checked_add(moved)?);
    }
    total
}

/// Parses a counter file: `%u` / `%llu`, plain decimal digits.
pub fn parse_counter(s: &str) -> Result<u64, ParseError> {
    let bad = || ParseError::new(s, "a counter of decimal digits");
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    s.parse().map_err(|_| bad())
}

/// Parses a `counters/` file: a counter, or `None` for [`NO_PMA`].
pub fn parse_pma_value(s: &str) -> Result<Option<u64>, ParseError> {
    if s == NO_PMA {
        return Ok(None);
    }
    parse_counter(s).map(Some)
}

/// The hardware width of PMA counter `name` under `table` (1.3); `counters_ext/` files
/// (`*_64`, `port_unicast_*`, `port_multicast_*`) are 64-bit.
pub fn pma_width(name: &str, table: PmaTable) -> Option<u8> {
    if let Some((_, bits)) = FIXED_WIDTHS.iter().find(|(n, _)| *n == name) {
        return Some(*bits);
    }
    if DATA_COUNTERS.contains(&name) {
        return Some(if table == PmaTable::Extended { 64 } else { 32 });
    }
    let legacy_ext = name.ends_with("_64")
        || name.starts_with("port_unicast_")
        || name.starts_with("port_multicast_");
    (EXTENDED_ONLY.contains(&name) || legacy_ext).then_some(64)
}

/// The table behind a set of `counters/` values (see the module doc).
pub fn pma_table(values: &BTreeMap<String, u64>) -> PmaTable {
    if values.is_empty() {
        return PmaTable::Unsupported;
    }
    let extended = EXTENDED_ONLY.iter().any(|n| values.contains_key(*n))
        || DATA_COUNTERS
            .iter()
            .any(|n| values.get(*n).is_some_and(|v| *v > u64::from(u32::MAX)));
    if extended {
        PmaTable::Extended
    } else {
        PmaTable::Base
    }
}

/// Every RDMA port below `root`, sorted by (device in natural order, port); stops at the
/// first unreadable or malformed file. No `sys/class/infiniband`, or an empty one, gives
/// no ports.
pub fn read_ports(root: &SysRoot) -> Result<Vec<PortCounters>, DiscoverError> {
    read_all(root, &mut Strict)
}

/// Every port that could be read, and the error of every file that could not: a port
/// whose `state` or `link_layer` fails is left out, a counter file that fails is left out
/// of its map. What the once-a-second monitor calls.
pub fn read_ports_lenient(root: &SysRoot) -> (Vec<PortCounters>, Vec<DiscoverError>) {
    let mut errors = Vec::new();
    let ports = match read_all(root, &mut Lenient(&mut errors)) {
        Ok(ports) => ports,
        Err(never) => match never {},
    };
    (ports, errors)
}

/// Where read errors go. Every fallible read passes through [`Policy::keep`]: a value
/// comes back as `Some`; an error ends a [`Strict`] read, and is kept by a [`Lenient`] one,
/// which goes on without that value (and so can never fail).
trait Policy {
    type Fail;
    fn keep<T>(&mut self, result: Result<T, DiscoverError>) -> Result<Option<T>, Self::Fail>;
}

struct Strict;

impl Policy for Strict {
    type Fail = DiscoverError;
    fn keep<T>(&mut self, result: Result<T, DiscoverError>) -> Result<Option<T>, DiscoverError> {
        result.map(Some)
    }
}

struct Lenient<'a>(&'a mut Vec<DiscoverError>);

impl Policy for Lenient<'_> {
    type Fail = std::convert::Infallible;
    fn keep<T>(&mut self, result: Result<T, DiscoverError>) -> Result<Option<T>, Self::Fail> {
        Ok(result.map_err(|e| self.0.push(e)).ok())
    }
}

fn read_all<P: Policy>(root: &SysRoot, errors: &mut P) -> Result<Vec<PortCounters>, P::Fail> {
    let class = root.path("sys/class/infiniband");
    let Some(devices) = errors.keep(root.list_dir(&class))?.flatten() else {
        return Ok(Vec::new());
    };
    let mut ports = Vec::new();
    for device in devices {
        read_device(root, &class.join(&device), &device, errors, &mut ports)?;
    }
    ports.sort_by(|a, b| natural_order(&a.device, &b.device).then(a.port.cmp(&b.port)));
    Ok(ports)
}

fn read_device<P: Policy>(
    root: &SysRoot,
    dir: &Path,
    name: &str,
    errors: &mut P,
    out: &mut Vec<PortCounters>,
) -> Result<(), P::Fail> {
    let ports_dir = dir.join("ports");
    let port_names = root.list_dir(&ports_dir).and_then(|names| {
        names.ok_or_else(|| DiscoverError::Malformed {
            path: ports_dir.clone(),
            reason: "required folder is missing".into(),
        })
    });
    let Some(port_names) = errors.keep(port_names)? else {
        return Ok(());
    };
    let pci = errors
        .keep(root.resolve(&dir.join("device")))?
        .flatten()
        .and_then(|real| crate::sysfs::pci::function_of(root, &real))
        .map(|(addr, _)| addr);
    let device_hw = read_values(root, &dir.join("hw_counters"), errors)?.unwrap_or_default();
    let (device_hw_counters, device_lifespan) = split_lifespan(device_hw);
    let device = DeviceFacts {
        dir,
        name,
        pci,
        device_hw_counters,
        device_lifespan,
    };
    for port_name in port_names {
        out.extend(read_port(root, &device, &port_name, errors)?);
    }
    Ok(())
}

/// What every port of a device shares.
struct DeviceFacts<'a> {
    dir: &'a Path,
    name: &'a str,
    pci: Option<PciAddr>,
    device_hw_counters: BTreeMap<String, u64>,
    device_lifespan: Option<u64>,
}

/// One port; `None` (its error kept) when a required file fails in a lenient read.
fn read_port<P: Policy>(
    root: &SysRoot,
    device: &DeviceFacts,
    port_name: &str,
    errors: &mut P,
) -> Result<Option<PortCounters>, P::Fail> {
    let port_dir = device.dir.join("ports").join(port_name);
    let port = port_name
        .parse::<u8>()
        .ok()
        .filter(|_| port_name.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| DiscoverError::Malformed {
            path: port_dir.clone(),
            reason: "a port folder must be named by its number".into(),
        });
    let Some(port) = errors.keep(port)? else {
        return Ok(None);
    };
    let Some(state) = errors.keep(root.parse_required(&port_dir.join("state"), parse_state))?
    else {
        return Ok(None);
    };
    let Some(link_layer) = errors.keep(root.read_required(&port_dir.join("link_layer")))? else {
        return Ok(None);
    };
    let phys_state = errors
        .keep(root.read_optional(&port_dir.join("phys_state")))?
        .flatten();
    let rate = errors
        .keep(root.parse_optional(&port_dir.join("rate"), parse_rate))?
        .flatten();
    let netdev = read_netdev(root, device.dir, &port_dir, device.pci.is_some(), errors)?;
    let (pma, counters) = read_pma(root, &port_dir, errors)?;
    let hw = read_values(root, &port_dir.join("hw_counters"), errors)?.unwrap_or_default();
    let (hw_counters, port_lifespan) = split_lifespan(hw);
    Ok(Some(PortCounters {
        device: device.name.to_string(),
        port,
        state,
        phys_state,
        rate_gbps: rate.map(|r| r.gbps),
        link_layer: parse_link_layer(&link_layer),
        pci: device.pci,
        netdev,
        pma,
        counters,
        hw_counters,
        device_hw_counters: device.device_hw_counters.clone(),
        lifespan_ms: port_lifespan.or(device.device_lifespan),
    }))
}

/// The port's netdev: GID 0's netdev, else the only netdev of a hardware function, else
/// an rxe device's `parent` (1.5).
fn read_netdev<P: Policy>(
    root: &SysRoot,
    dev_dir: &Path,
    port_dir: &Path,
    hardware: bool,
    errors: &mut P,
) -> Result<Option<String>, P::Fail> {
    let named = |text: Option<Option<String>>| text.flatten().filter(|n| !n.is_empty());
    let gid0 = root.read_optional(&port_dir.join("gid_attrs/ndevs/0"));
    if let Some(netdev) = named(errors.keep(gid0)?) {
        return Ok(Some(netdev));
    }
    if hardware {
        let listed = errors.keep(root.list_dir(&dev_dir.join("device/net")))?;
        if let Some([only]) = listed.flatten().as_deref() {
            return Ok(Some(only.clone()));
        }
    }
    Ok(named(
        errors.keep(root.read_optional(&dev_dir.join("parent")))?,
    ))
}

/// `counters/` and `counters_ext/` of a port, typed by width.
fn read_pma<P: Policy>(
    root: &SysRoot,
    port_dir: &Path,
    errors: &mut P,
) -> Result<(PmaTable, BTreeMap<String, Counter>), P::Fail> {
    let Some(values) = read_values(root, &port_dir.join("counters"), errors)? else {
        return Ok((PmaTable::Absent, BTreeMap::new()));
    };
    let table = pma_table(&values);
    let legacy = read_values(root, &port_dir.join("counters_ext"), errors)?.unwrap_or_default();
    let counters = values
        .into_iter()
        .chain(legacy)
        .map(|(name, value)| {
            let bits = pma_width(&name, table);
            (name, Counter::new(value, bits))
        })
        .collect();
    Ok((table, counters))
}

/// Every file of a counter folder with a value; `None` when the folder does not exist.
/// `N/A (no PMA)` and "no value" reads (`EINVAL`, see [`crate::sysfs`]) are left out.
fn read_values<P: Policy>(
    root: &SysRoot,
    dir: &Path,
    errors: &mut P,
) -> Result<Option<BTreeMap<String, u64>>, P::Fail> {
    let Some(Some(names)) = errors.keep(root.list_dir(dir))? else {
        return Ok(None);
    };
    let mut values = BTreeMap::new();
    for name in names {
        let path = dir.join(&name);
        let value = root.parse_optional(&path, parse_pma_value);
        if let Some(Some(Some(value))) = errors.keep(value)? {
            values.insert(name, value);
        }
    }
    Ok(Some(values))
}

/// Takes `lifespan` (the cache time of `hw_counters/`, 1.4) out of a counter map.
fn split_lifespan(mut values: BTreeMap<String, u64>) -> (BTreeMap<String, u64>, Option<u64>) {
    let lifespan = values.remove("lifespan");
    (values, lifespan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counters_are_plain_decimal() {
        assert_eq!(parse_counter("0"), Ok(0));
        assert_eq!(parse_counter("18446744073709551615"), Ok(u64::MAX));
        for bad in ["", "-1", "+1", "0x10", "1 2", "18446744073709551616", "N/A"] {
            assert!(parse_counter(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_pma_value(NO_PMA), Ok(None));
        assert_eq!(parse_pma_value("42"), Ok(Some(42)));
        assert!(parse_pma_value("N/A").is_err());
    }

    #[test]
    fn widths_follow_the_pma_tables() {
        use PmaTable::*;
        assert_eq!(pma_width("symbol_error", Base), Some(16));
        assert_eq!(pma_width("link_downed", Extended), Some(8));
        assert_eq!(pma_width("local_link_integrity_errors", Base), Some(4));
        assert_eq!(pma_width("port_xmit_wait", Extended), Some(32));
        assert_eq!(pma_width("port_rcv_data", Base), Some(32));
        assert_eq!(pma_width("port_rcv_data", Extended), Some(64));
        assert_eq!(pma_width("unicast_rcv_packets", Base), Some(64));
        assert_eq!(pma_width("port_rcv_data_64", Base), Some(64));
        assert_eq!(pma_width("port_unicast_xmit_packets", Base), Some(64));
        assert_eq!(pma_width("QP1_dropped", Base), None);
    }

    #[test]
    fn the_table_is_extended_with_unicast_files_or_wide_values() {
        let map = |pairs: &[(&str, u64)]| {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(pma_table(&map(&[])), PmaTable::Unsupported);
        let base = map(&[("port_rcv_data", u64::from(u32::MAX))]);
        assert_eq!(pma_table(&base), PmaTable::Base);
        let noietf = map(&[("port_rcv_data", 1 << 32)]);
        assert_eq!(pma_table(&noietf), PmaTable::Extended);
        let ext = map(&[("port_rcv_data", 5), ("unicast_rcv_packets", 1)]);
        assert_eq!(pma_table(&ext), PmaTable::Extended);
    }

    #[test]
    fn a_counter_at_its_maximum_is_saturated_and_has_no_delta() {
        let c = |v, bits| Counter::new(v, Some(bits));
        assert!(c(0xFFFF, 16).saturated);
        assert!(c(0xFF, 8).saturated);
        assert!(c(0xF, 4).saturated);
        assert!(c(u64::from(u32::MAX), 32).saturated);
        assert!(c(u64::MAX, 64).saturated);
        assert!(!c(0xFFFE, 16).saturated);
        let wider = Counter::new(0x1_0000, Some(16));
        assert_eq!((wider.bits, wider.saturated), (None, false));
        assert_eq!(Counter::delta(&c(10, 16), &c(15, 16)), Some(5));
        assert_eq!(
            Counter::delta(&c(10, 16), &c(0xFFFF, 16)),
            None,
            "saturated"
        );
        assert_eq!(Counter::delta(&c(10, 16), &c(9, 16)), None, "backwards");
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = parse_counter(&s);
            let _ = parse_pma_value(&s);
        }

        #[test]
        fn formatted_counters_round_trip(v: u64) {
            prop_assert_eq!(parse_counter(&v.to_string()), Ok(v));
            prop_assert_eq!(parse_pma_value(&v.to_string()), Ok(Some(v)));
        }

        #[test]
        fn deltas_are_never_bogus(a: u64, b: u64, bits in prop::sample::select(vec![4u8, 8, 16, 32, 64])) {
            let (p, c) = (Counter::new(a, Some(bits)), Counter::new(b, Some(bits)));
            match Counter::delta(&p, &c) {
                Some(d) => prop_assert!(!p.saturated && !c.saturated && b >= a && d == b - a),
                None => prop_assert!(p.saturated || c.saturated || b < a),
            }
        }
    }
}
