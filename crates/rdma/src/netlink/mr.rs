//! The validated representations of what the RDMA netlink dumps say: [`Device`] (one reply
//! of `RDMA_NLDEV_CMD_GET`), [`MrEntry`] (one MR of `RES_MR_GET`), [`MrStats`] (one MR of
//! `STAT_GET` with `STAT_RES = RES_MR`), each parsed from a message's attributes and emitted
//! back into them; and [`OdpRegion`], an ODP MR joined with its counters.

use super::nldev::{attr, attrs, Attr, AttrWriter, WireError, PRINT_TYPE_HEX};
use serde::Serialize;
use std::collections::BTreeMap;

/// An RDMA device as netlink names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Device {
    /// `RDMA_NLDEV_ATTR_DEV_INDEX`: the kernel's index, what requests name.
    pub index: u32,
    /// `RDMA_NLDEV_ATTR_DEV_NAME` (`mlx5_0`, `rxe0`).
    pub name: String,
}

/// Who created a resource (nldev.c `fill_res_name_pid`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Owner {
    /// `RES_PID`: the task that created it, by its ID in the reader's PID namespace
    /// (`task_pid_vnr`): the process ID, or for a multi-threaded process the creating
    /// thread's ID, which `/proc/<id>/` resolves too (seen in the Soft-RoCE guest).
    Process(u32),
    /// `RES_KERN_NAME`: a kernel module (`ib_ipoib`, `rdma_cm`).
    Kernel(String),
    /// Neither: a process of another PID namespace (the kernel omits the PID).
    Hidden,
}

/// How an ODP MR is registered (mlx5 `fill_res_mr_entry`, driver attribute `odp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OdpKind {
    /// `explicit`: an address range registered with `IBV_ACCESS_ON_DEMAND`.
    Explicit,
    /// `implicit`: the whole address space (`ibv_reg_mr(pd, NULL, SIZE_MAX, ...)`).
    Implicit,
    /// Another word a newer driver may use; kept, not refused.
    Unknown(String),
}

impl OdpKind {
    fn from_word(word: &str) -> OdpKind {
        match word {
            "explicit" => OdpKind::Explicit,
            "implicit" => OdpKind::Implicit,
            other => OdpKind::Unknown(other.to_string()),
        }
    }

    fn word(&self) -> &str {
        match self {
            OdpKind::Explicit => "explicit",
            OdpKind::Implicit => "implicit",
            OdpKind::Unknown(w) => w,
        }
    }
}

/// A driver attribute's value (`rdma_nl_put_driver_*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum DriverValue {
    /// `DRIVER_STRING`.
    Str(String),
    /// `DRIVER_U32`.
    U32(u32),
    /// `DRIVER_S32`.
    S32(i32),
    /// `DRIVER_U64`.
    U64(u64),
    /// `DRIVER_S64`.
    S64(i64),
}

/// One driver attribute: a name, then optionally a print type, then a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriverAttr {
    /// The name (`odp`).
    pub name: String,
    /// The value.
    pub value: DriverValue,
    /// `DRIVER_PRINT_TYPE` hex: the driver wants it shown in hex.
    pub hex: bool,
}

/// One memory region (`RDMA_NLDEV_ATTR_RES_MR_ENTRY`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MrEntry {
    /// The device of the reply.
    pub device: Device,
    /// `RES_MRN`: the MR's id on the device.
    pub mrn: u32,
    /// `RES_MRLEN`: bytes registered (`u64::MAX` for an implicit ODP MR).
    pub length: u64,
    /// `RES_RKEY`: only for a reader with CAP_NET_ADMIN.
    pub rkey: Option<u32>,
    /// `RES_LKEY`: only for a reader with CAP_NET_ADMIN.
    pub lkey: Option<u32>,
    /// `RES_IOVA`, when the kernel sends it.
    pub iova: Option<u64>,
    /// `RES_PDN`: the protection domain (user MRs).
    pub pdn: Option<u32>,
    /// Who registered it.
    pub owner: Owner,
    /// `DRIVER` table: every driver attribute, in order.
    pub driver: Vec<DriverAttr>,
}

impl MrEntry {
    /// ODP: the driver attribute `odp` (`explicit`, `implicit`); `None` for a pinned MR or
    /// a driver that does not say.
    pub fn odp(&self) -> Option<OdpKind> {
        self.driver
            .iter()
            .find(|a| a.name == "odp")
            .and_then(|a| match &a.value {
                DriverValue::Str(word) => Some(OdpKind::from_word(word)),
                _ => None,
            })
    }

    /// Parses the value of one `RES_MR_ENTRY` nest of `device`'s reply. `at` names the
    /// entry in errors. Attributes hostping does not read are skipped.
    pub fn parse(device: &Device, entry: &[u8], at: &str) -> Result<MrEntry, WireError> {
        let (mut mrn, mut length) = (None, None);
        let (mut rkey, mut lkey, mut iova, mut pdn) = (None, None, None, None);
        let (mut pid, mut kern_name) = (None, None);
        let mut driver = Vec::new();
        for a in attrs(entry, at)? {
            match a.kind {
                attr::RES_MRN => mrn = Some(a.u32(at)?),
                attr::RES_MRLEN => length = Some(a.u64(at)?),
                attr::RES_RKEY => rkey = Some(a.u32(at)?),
                attr::RES_LKEY => lkey = Some(a.u32(at)?),
                attr::RES_IOVA => iova = Some(a.u64(at)?),
                attr::RES_PDN => pdn = Some(a.u32(at)?),
                attr::RES_PID => pid = Some(a.u32(at)?),
                attr::RES_KERN_NAME => kern_name = Some(a.string(at)?),
                attr::DRIVER => driver = parse_driver(a.value, &format!("{at}, DRIVER"))?,
                _ => {}
            }
        }
        let owner = match (pid, kern_name) {
            (Some(pid), _) => Owner::Process(pid),
            (None, Some(name)) => Owner::Kernel(name),
            (None, None) => Owner::Hidden,
        };
        Ok(MrEntry {
            device: device.clone(),
            mrn: mrn.ok_or(missing(at, attr::RES_MRN))?,
            length: length.ok_or(missing(at, attr::RES_MRLEN))?,
            rkey,
            lkey,
            iova,
            pdn,
            owner,
            driver,
        })
    }

    /// Emits the entry's attributes in the kernel's order (`fill_res_mr_entry`).
    pub fn emit(&self, w: &mut AttrWriter) {
        if let Some(rkey) = self.rkey {
            w.u32(attr::RES_RKEY, rkey);
        }
        if let Some(lkey) = self.lkey {
            w.u32(attr::RES_LKEY, lkey);
        }
        if let Some(iova) = self.iova {
            w.u64(attr::RES_IOVA, iova);
        }
        w.u64(attr::RES_MRLEN, self.length);
        w.u32(attr::RES_MRN, self.mrn);
        if let Some(pdn) = self.pdn {
            w.u32(attr::RES_PDN, pdn);
        }
        match &self.owner {
            Owner::Process(pid) => {
                w.u32(attr::RES_PID, *pid);
            }
            Owner::Kernel(name) => {
                w.string(attr::RES_KERN_NAME, name);
            }
            Owner::Hidden => {}
        }
        if !self.driver.is_empty() {
            w.nest_flagged(attr::DRIVER, |w| emit_driver(&self.driver, w));
        }
    }
}

fn missing(at: &str, kind: u16) -> WireError {
    WireError::Missing {
        at: at.to_string(),
        attr: attr::name(kind),
    }
}

/// The `DRIVER` table: `DRIVER_STRING` name, optional `DRIVER_PRINT_TYPE`, then one value
/// attribute (nldev.c `rdma_nl_put_driver_*`), repeated.
fn parse_driver(table: &[u8], at: &str) -> Result<Vec<DriverAttr>, WireError> {
    let list = attrs(table, at)?;
    let mut out = Vec::new();
    let mut rest = list.iter();
    while let Some(name) = rest.next() {
        let at_name = format!("{at}, attribute {}", out.len() + 1);
        if name.kind != attr::DRIVER_STRING {
            return Err(WireError::Malformed {
                at: at_name,
                reason: format!(
                    "{} where a DRIVER_STRING name should be",
                    attr::name(name.kind)
                ),
            });
        }
        let name_text = name.string(&at_name)?;
        let at_value = format!("{at}, {name_text:?}");
        let mut value: Option<&Attr> = rest.next();
        let mut hex = false;
        if let Some(print) = value.filter(|v| v.kind == attr::DRIVER_PRINT_TYPE) {
            hex = print.u8(&at_value)? == PRINT_TYPE_HEX;
            value = rest.next();
        }
        let value = value.ok_or(missing(&at_value, attr::DRIVER_STRING))?;
        let value = match value.kind {
            attr::DRIVER_STRING => DriverValue::Str(value.string(&at_value)?),
            attr::DRIVER_U32 => DriverValue::U32(value.u32(&at_value)?),
            attr::DRIVER_S32 => DriverValue::S32(value.i32(&at_value)?),
            attr::DRIVER_U64 => DriverValue::U64(value.u64(&at_value)?),
            attr::DRIVER_S64 => DriverValue::S64(value.i64(&at_value)?),
            other => {
                return Err(WireError::Malformed {
                    at: at_value,
                    reason: format!("{} is not a driver value", attr::name(other)),
                })
            }
        };
        out.push(DriverAttr {
            name: name_text,
            value,
            hex,
        });
    }
    Ok(out)
}

fn emit_driver(list: &[DriverAttr], w: &mut AttrWriter) {
    for a in list {
        w.string(attr::DRIVER_STRING, &a.name);
        if a.hex {
            w.u8(attr::DRIVER_PRINT_TYPE, PRINT_TYPE_HEX);
        }
        match &a.value {
            DriverValue::Str(s) => w.string(attr::DRIVER_STRING, s),
            DriverValue::U32(v) => w.u32(attr::DRIVER_U32, *v),
            DriverValue::S32(v) => w.i32(attr::DRIVER_S32, *v),
            DriverValue::U64(v) => w.u64(attr::DRIVER_U64, *v),
            DriverValue::S64(v) => w.i64(attr::DRIVER_S64, *v),
        };
    }
}

/// One MR's counters from the statistics dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MrStats {
    /// The device of the reply.
    pub device: Device,
    /// `RES_MRN`.
    pub mrn: u32,
    /// `STAT_HWCOUNTERS`: name to value, in the kernel's order. Empty for an MR the driver
    /// keeps no counters for (every non-ODP MR).
    pub counters: Vec<(String, u64)>,
}

/// The ODP counters of one MR (absent: the driver does not report that counter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OdpCounters {
    /// `page_faults`: RNIC page faults resolved by the driver.
    pub page_faults: Option<u64>,
    /// `page_invalidations`: pages the kernel took away (MMU notifier).
    pub page_invalidations: Option<u64>,
    /// `page_prefetch` (mlx5), or `prefetched_pages` (a proposed core-level name).
    pub page_prefetch: Option<u64>,
}

impl MrStats {
    /// The value of counter `name`.
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters.iter().find(|(n, _)| n == name).map(|c| c.1)
    }

    /// The ODP counters; `None` when the MR has none of them.
    pub fn odp(&self) -> Option<OdpCounters> {
        let c = OdpCounters {
            page_faults: self.counter("page_faults"),
            page_invalidations: self.counter("page_invalidations"),
            page_prefetch: self
                .counter("page_prefetch")
                .or_else(|| self.counter("prefetched_pages")),
        };
        (c != OdpCounters::default()).then_some(c)
    }

    /// Parses the value of one `RES_MR_ENTRY` nest of a statistics reply.
    pub fn parse(device: &Device, entry: &[u8], at: &str) -> Result<MrStats, WireError> {
        let mut mrn = None;
        let mut counters = Vec::new();
        for a in attrs(entry, at)? {
            match a.kind {
                attr::RES_MRN => mrn = Some(a.u32(at)?),
                attr::STAT_HWCOUNTERS => {
                    let table_at = format!("{at}, STAT_HWCOUNTERS");
                    for (i, e) in attrs(a.value, &table_at)?.iter().enumerate() {
                        let e_at = format!("{table_at}, entry {}", i + 1);
                        if e.kind != attr::STAT_HWCOUNTER_ENTRY {
                            continue;
                        }
                        let (mut name, mut value) = (None, None);
                        for f in attrs(e.value, &e_at)? {
                            match f.kind {
                                attr::STAT_HWCOUNTER_ENTRY_NAME => name = Some(f.string(&e_at)?),
                                attr::STAT_HWCOUNTER_ENTRY_VALUE => value = Some(f.u64(&e_at)?),
                                _ => {}
                            }
                        }
                        let name = name.ok_or(missing(&e_at, attr::STAT_HWCOUNTER_ENTRY_NAME))?;
                        let value =
                            value.ok_or(missing(&e_at, attr::STAT_HWCOUNTER_ENTRY_VALUE))?;
                        counters.push((name, value));
                    }
                }
                _ => {}
            }
        }
        Ok(MrStats {
            device: device.clone(),
            mrn: mrn.ok_or(missing(at, attr::RES_MRN))?,
            counters,
        })
    }

    /// Emits the entry's attributes as `fill_stat_mr_entry` and mlx5 do.
    pub fn emit(&self, w: &mut AttrWriter) {
        w.u32(attr::RES_MRN, self.mrn);
        if !self.counters.is_empty() {
            w.nest_flagged(attr::STAT_HWCOUNTERS, |w| {
                for (name, value) in &self.counters {
                    w.nest_flagged(attr::STAT_HWCOUNTER_ENTRY, |w| {
                        w.string(attr::STAT_HWCOUNTER_ENTRY_NAME, name)
                            .u64(attr::STAT_HWCOUNTER_ENTRY_VALUE, *value);
                    });
                }
            });
        }
    }
}

/// Parses the device of a reply: its leading `DEV_INDEX` and `DEV_NAME`.
pub fn parse_device(payload: &[u8], at: &str) -> Result<Device, WireError> {
    let (mut index, mut name) = (None, None);
    for a in attrs(payload, at)? {
        match a.kind {
            attr::DEV_INDEX => index = Some(a.u32(at)?),
            attr::DEV_NAME => name = Some(a.string(at)?),
            _ => {}
        }
    }
    Ok(Device {
        index: index.ok_or(missing(at, attr::DEV_INDEX))?,
        name: name.ok_or(missing(at, attr::DEV_NAME))?,
    })
}

/// The entries of one `RES_MR_GET` reply payload (device, then the `RES_MR` table), each
/// parsed by `entry`. A reply without a table has no entries.
pub fn parse_table<T>(
    payload: &[u8],
    at: &str,
    entry: impl Fn(&Device, &[u8], &str) -> Result<T, WireError>,
) -> Result<Vec<T>, WireError> {
    let device = parse_device(payload, at)?;
    let mut out = Vec::new();
    for a in attrs(payload, at)? {
        if a.kind != attr::RES_MR {
            continue;
        }
        let entries = attrs(a.value, &format!("{at}, RES_MR"))?;
        for e in entries.iter().filter(|e| e.kind == attr::RES_MR_ENTRY) {
            let entry_at = format!("{at}, RES_MR_ENTRY {}", out.len() + 1);
            out.push(entry(&device, e.value, &entry_at)?);
        }
    }
    Ok(out)
}

/// Emits a reply payload: the device, then a `RES_MR` table with `entries`
/// (`res_get_common_dumpit`).
pub fn emit_table<T>(
    device: &Device,
    entries: &[T],
    emit: impl Fn(&T, &mut AttrWriter),
) -> Vec<u8> {
    let mut w = AttrWriter::new();
    w.u32(attr::DEV_INDEX, device.index)
        .string(attr::DEV_NAME, &device.name)
        .nest(attr::RES_MR, |w| {
            for e in entries {
                w.nest(attr::RES_MR_ENTRY, |w| emit(e, w));
            }
        });
    w.into_bytes()
}

/// An ODP memory region with its counters: the evidence `odp_stall` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OdpRegion {
    /// The MR.
    pub mr: MrEntry,
    /// Explicit or implicit.
    pub kind: OdpKind,
    /// Its counters, when the statistics dump had them.
    pub counters: Option<OdpCounters>,
}

/// Joins MRs and their statistics by (device index, MRN), keeping the ODP MRs.
pub fn odp_regions(mrs: &[MrEntry], stats: &[MrStats]) -> Vec<OdpRegion> {
    let by_id: BTreeMap<(u32, u32), &MrStats> =
        stats.iter().map(|s| ((s.device.index, s.mrn), s)).collect();
    mrs.iter()
        .filter_map(|mr| {
            let kind = mr.odp()?;
            Some(OdpRegion {
                counters: by_id.get(&(mr.device.index, mr.mrn)).and_then(|s| s.odp()),
                mr: mr.clone(),
                kind,
            })
        })
        .collect()
}

impl std::fmt::Display for OdpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}
