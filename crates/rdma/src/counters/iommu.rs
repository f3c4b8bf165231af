/*!
The IOMMU, hugepages and transparent hugepages: whether DMA from an RNIC is translated, and
on which page size its buffers may lie (linux-counters.md 7).

Why it matters: each DMA the root complex translates may miss the IOTLB and walk the page
table in memory; with a bounded number of PCIe writes in flight the NIC-to-memory
throughput is bounded by C * pkt_size / (T_base + M * T_miss), and 4 KiB pages multiply the
misses (HotNets'22, `shared/papers/002_f1357b3c485fb040.txt`, section 3.1, "IOMMU induced
host congestion" and "Disabling hugepages causes larger IOMMU contention", Figure 4: more
than 30% lower throughput without hugepages).

| path (below the root) | policy |
|---|---|
| `sys/class/iommu/<unit>` | optional: missing or empty means no IOMMU is enabled |
| `sys/class/iommu/<unit>/intel-iommu/version`, `cap`, `ecap` | optional (Intel VT-d units): `%d:%d`, `%llx`, `%llx`; with `version` present the other two are required |
| `sys/kernel/iommu_groups/<n>/` | optional; `<n>` is a decimal number |
| `sys/kernel/iommu_groups/<n>/type` | optional (older kernels lack it): `DMA`, `DMA-FQ`, `identity`, `blocked` or `unmanaged`; anything else is an error |
| `sys/kernel/iommu_groups/<n>/devices/` | optional: the member devices, by name |
| `sys/bus/pci/devices/<addr>/iommu_group` | optional link to the device's group |
| `proc/cmdline` | optional: the IOMMU tokens before `--` are kept |
| `proc/meminfo` | optional; every line `<name>: <value>` with an optional ` kB`; with `HugePages_Total` present, `HugePages_Free`, `HugePages_Rsvd`, `HugePages_Surp` and `Hugepagesize` are required |
| `sys/kernel/mm/hugepages/hugepages-<size>kB/` | optional; in each, `nr_hugepages`, `free_hugepages`, `resv_hugepages`, `surplus_hugepages` are required |
| `sys/kernel/mm/transparent_hugepage/enabled`, `defrag` | optional; exactly one choice in brackets |
*/

use super::pcie::parse_count;
use crate::sysfs::pci::{parse_decimal_u32, PciAddr};
use crate::sysfs::{DiscoverError, ParseError, SysRoot};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The memory-translation facts of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryConfig {
    /// IOMMU units, mode and groups.
    pub iommu: IommuState,
    /// Hugepage pools, one per page size, smallest first.
    pub hugepages: Vec<HugepagePool>,
    /// The hugepage lines of `proc/meminfo`, when it has them.
    pub meminfo: Option<MeminfoHugepages>,
    /// `transparent_hugepage/enabled`: `always`, `madvise` or `never`.
    pub thp_enabled: Option<String>,
    /// `transparent_hugepage/defrag`: `always`, `defer`, `defer+madvise`, `madvise`, `never`.
    pub thp_defrag: Option<String>,
    /// The IOMMU tokens of `proc/cmdline` (`intel_iommu=on`, `iommu=pt`, ...), in order.
    pub cmdline: Vec<String>,
}

impl MemoryConfig {
    /// Huge pages reserved, all sizes: from the sysfs pools, else from `meminfo`; `None`
    /// when neither is there.
    pub fn hugepages_total(&self) -> Option<u64> {
        if !self.hugepages.is_empty() {
            return Some(self.hugepages.iter().map(|p| p.total).sum());
        }
        self.meminfo.as_ref().map(|m| m.total)
    }

    /// Whether any hugepages are reserved ([`MemoryConfig::hugepages_total`] above 0).
    pub fn hugepages_reserved(&self) -> Option<bool> {
        self.hugepages_total().map(|total| total > 0)
    }

    /// Whether an IOMMU translates the DMA of the function at `addr`: a unit exists and
    /// the function's group is `DMA` or `DMA-FQ`. `Some(false)` without a unit; `None`
    /// with units but no group for the function or a group whose `type` was not read:
    /// unknown, not untranslated.
    pub fn translates(&self, addr: PciAddr) -> Option<bool> {
        if self.iommu.units.is_empty() {
            return Some(false);
        }
        let kind = self.iommu.group_of(addr)?.kind?;
        Some(kind.translates())
    }

    /// The IOTLB-miss risk of HotNets'22 section 3.1 (linux-counters.md 7, an inference):
    /// an IOMMU translates DMA for the RNIC's group (`DMA` or `DMA-FQ`) while no hugepages
    /// are reserved and THP is `never`, so its buffers can only be on 4 KiB pages. False
    /// whenever a fact is missing. Confirm with IOTLB-miss events and the RNIC's ATS state.
    pub fn translated_without_hugepages(&self, rnic: PciAddr) -> bool {
        self.translates(rnic) == Some(true)
            && self.hugepages_reserved() == Some(false)
            && self.thp_enabled.as_deref() == Some("never")
    }

    /// The page sizes, KiB, that user buffers (an RNIC's registered memory) can lie on:
    /// 4 KiB always; each hugepage pool with pages reserved; 2 MiB transparent hugepages
    /// unless THP is `never` (with `madvise`, only for an application that asks).
    pub fn buffer_page_sizes_kib(&self) -> Vec<u64> {
        let mut sizes = vec![4];
        sizes.extend(
            self.hugepages
                .iter()
                .filter(|p| p.total > 0)
                .map(|p| p.size_kib),
        );
        if self.hugepages.is_empty() {
            if let Some(m) = self.meminfo.filter(|m| m.total > 0) {
                sizes.push(m.size_kib);
            }
        }
        if matches!(self.thp_enabled.as_deref(), Some("always" | "madvise")) {
            sizes.push(2048);
        }
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }
}

/// The per-RNIC answer to "is its DMA translated, by which unit, and on which page sizes
/// can its buffers lie?" (HotNets'22 section 3.1: the IOTLB reach is entries x page size).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RnicTranslation {
    /// The RNIC's PCI function.
    pub rnic: PciAddr,
    /// `sys/bus/pci/devices/<addr>/iommu`: the unit that translates for it (`dmar3`,
    /// `ivhd1`); `None` without an IOMMU.
    pub unit: Option<String>,
    /// Its IOMMU group.
    pub group: Option<u32>,
    /// The group's `type`.
    pub group_type: Option<GroupType>,
    /// [`MemoryConfig::translates`]: `None` is unknown, not untranslated.
    pub translated: Option<bool>,
    /// [`MemoryConfig::buffer_page_sizes_kib`].
    pub buffer_pages_kib: Vec<u64>,
    /// The page sizes the unit's page tables (and so its IOTLB entries) can use, KiB: 4
    /// plus the second-level large pages of an Intel unit's `cap` (SLLPS, bits 34 and 35:
    /// 2 MiB, 1 GiB); `None` when the unit's registers are not readable (AMD, or no unit).
    pub iommu_pages_kib: Option<Vec<u64>>,
}

impl RnicTranslation {
    /// Translated, and every buffer on 4 KiB pages: the IOTLB-miss risk of HotNets'22
    /// section 3.1 (Figure 4: 4 KiB pages lose more than 30% of the throughput).
    pub fn translated_on_4k_only(&self) -> bool {
        self.translated == Some(true) && self.buffer_pages_kib == [4]
    }
}

impl IntelIommu {
    /// The page sizes, KiB, of the unit's second-level page tables: 4, plus 2 MiB and
    /// 1 GiB when `cap` bits 34 and 35 (SLLPS, VT-d spec 11.4.2; the kernel's
    /// `cap_super_page_val`) say so.
    pub fn page_sizes_kib(&self) -> Vec<u64> {
        let sllps = (self.cap >> 34) & 0xf;
        let mut sizes = vec![4];
        if sllps & 1 != 0 {
            sizes.push(2048);
        }
        if sllps & 2 != 0 {
            sizes.push(1 << 20);
        }
        sizes
    }
}

/// The [`RnicTranslation`] of the PCI function `rnic`: its `iommu` link below `root`, its
/// group in `config`.
pub fn rnic_translation(
    root: &SysRoot,
    config: &MemoryConfig,
    rnic: PciAddr,
) -> Result<RnicTranslation, DiscoverError> {
    let link = root.path(&format!("sys/bus/pci/devices/{rnic}/iommu"));
    let unit = root
        .resolve(&link)?
        .and_then(|real| real.file_name().map(|n| n.to_string_lossy().into_owned()));
    let group = config.iommu.group_of(rnic);
    let iommu_pages_kib = unit.as_ref().and_then(|name| {
        config
            .iommu
            .units
            .iter()
            .find(|u| &u.name == name)
            .and_then(|u| u.intel)
            .map(|intel| intel.page_sizes_kib())
    });
    Ok(RnicTranslation {
        rnic,
        unit,
        group: group.map(|g| g.id),
        group_type: group.and_then(|g| g.kind),
        translated: config.translates(rnic),
        buffer_pages_kib: config.buffer_page_sizes_kib(),
        iommu_pages_kib,
    })
}

/// The IOMMU as sysfs and the command line show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IommuState {
    /// `sys/class/iommu/*`, by name.
    pub units: Vec<IommuUnit>,
    /// The default domain type, see [`IommuMode`].
    pub mode: IommuMode,
    /// `sys/kernel/iommu_groups/*`, by number.
    pub groups: Vec<IommuGroup>,
}

impl IommuState {
    /// The group holding the PCI function `addr`.
    pub fn group_of(&self, addr: PciAddr) -> Option<&IommuGroup> {
        let name = addr.to_string();
        self.groups.iter().find(|g| g.devices.contains(&name))
    }
}

/// How the IOMMU treats DMA by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IommuMode {
    /// No IOMMU unit: DMA addresses are physical.
    Off,
    /// Identity domains: no translation, no IOTLB misses.
    Passthrough,
    /// DMA domains: every DMA is translated. `lazy` is `DMA-FQ` (batched IOTLB
    /// invalidation, `iommu.strict=0`), else strict `DMA`.
    Translated {
        /// Flush-queue (lazy) invalidation.
        lazy: bool,
    },
    /// Units exist but neither the groups nor the command line tell the default.
    Unknown,
}

/// One IOMMU unit (`dmar0` Intel, `ivhd0` AMD).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IommuUnit {
    /// The folder name.
    pub name: String,
    /// The VT-d registers of an Intel unit.
    pub intel: Option<IntelIommu>,
}

/// `intel-iommu/` of a VT-d unit (`Documentation/ABI/testing/sysfs-class-iommu-intel-iommu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IntelIommu {
    /// `version`: major, minor.
    pub version: (u32, u32),
    /// `cap`: the Capability register.
    pub cap: u64,
    /// `ecap`: the Extended Capability register.
    pub ecap: u64,
}

impl IntelIommu {
    /// ECAP bit 2, Device-TLB: the unit serves ATS translation requests (linux-counters.md 7).
    pub fn device_tlb(&self) -> bool {
        self.ecap & (1 << 2) != 0
    }

    /// ECAP bit 6, Pass Through support (linux-counters.md 7).
    pub fn pass_through(&self) -> bool {
        self.ecap & (1 << 6) != 0
    }
}

/// One IOMMU group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IommuGroup {
    /// The folder number.
    pub id: u32,
    /// `type`, when the kernel has the file.
    pub kind: Option<GroupType>,
    /// `devices/`: member device names (`0000:15:00.0`), sorted.
    pub devices: Vec<String>,
}

/// An IOMMU group's domain type, as `sys/kernel/iommu_groups/<n>/type` reads
/// (`Documentation/ABI/testing/sysfs-kernel-iommu_groups`; `auto` is write-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GroupType {
    /// `DMA`: translated, strict invalidation.
    #[serde(rename = "DMA")]
    Dma,
    /// `DMA-FQ`: translated, lazy (flush-queue) invalidation.
    #[serde(rename = "DMA-FQ")]
    DmaFq,
    /// `identity`: passthrough, no translation.
    #[serde(rename = "identity")]
    Identity,
    /// `blocked`: all DMA blocked.
    #[serde(rename = "blocked")]
    Blocked,
    /// `unmanaged`: owned by a user-space driver (VFIO) or a VM.
    #[serde(rename = "unmanaged")]
    Unmanaged,
}

impl GroupType {
    /// The kernel-managed translating types, `DMA` and `DMA-FQ` (linux-counters.md 7).
    pub fn translates(self) -> bool {
        matches!(self, GroupType::Dma | GroupType::DmaFq)
    }

    fn as_str(self) -> &'static str {
        match self {
            GroupType::Dma => "DMA",
            GroupType::DmaFq => "DMA-FQ",
            GroupType::Identity => "identity",
            GroupType::Blocked => "blocked",
            GroupType::Unmanaged => "unmanaged",
        }
    }
}

impl fmt::Display for GroupType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One hugepage size, `sys/kernel/mm/hugepages/hugepages-<size>kB/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HugepagePool {
    /// The page size in KiB (2048, 1048576).
    pub size_kib: u64,
    /// `nr_hugepages`.
    pub total: u64,
    /// `free_hugepages`.
    pub free: u64,
    /// `resv_hugepages`.
    pub reserved: u64,
    /// `surplus_hugepages`.
    pub surplus: u64,
}

/// The hugepage lines of `proc/meminfo` (default page size only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MeminfoHugepages {
    /// `HugePages_Total`.
    pub total: u64,
    /// `HugePages_Free`.
    pub free: u64,
    /// `HugePages_Rsvd`.
    pub reserved: u64,
    /// `HugePages_Surp`.
    pub surplus: u64,
    /// `Hugepagesize`, KiB.
    pub size_kib: u64,
    /// `AnonHugePages`, KiB: anonymous memory on transparent hugepages.
    pub anon_huge_kib: Option<u64>,
}

/// Reads the IOMMU, hugepage and THP state below `root` (see the module doc for each file).
pub fn read_memory_config(root: &SysRoot) -> Result<MemoryConfig, DiscoverError> {
    let cmdline = root
        .read_optional(&root.path("proc/cmdline"))?
        .map(|line| iommu_tokens(&line))
        .unwrap_or_default();
    let units = read_units(root)?;
    let groups = read_groups(root)?;
    let thp = root.path("sys/kernel/mm/transparent_hugepage");
    Ok(MemoryConfig {
        iommu: IommuState {
            mode: default_mode(&units, &groups, &cmdline),
            units,
            groups,
        },
        hugepages: read_pools(root)?,
        meminfo: root
            .parse_optional(&root.path("proc/meminfo"), parse_meminfo_hugepages)?
            .flatten(),
        thp_enabled: root.parse_optional(&thp.join("enabled"), parse_thp_choice)?,
        thp_defrag: root.parse_optional(&thp.join("defrag"), parse_thp_choice)?,
        cmdline,
    })
}

/// The domain type of the PCI function's IOMMU group (`iommu_group/type`); `None` when it
/// has no group (no IOMMU) or the kernel has no `type` file.
pub fn device_translation(
    root: &SysRoot,
    addr: PciAddr,
) -> Result<Option<GroupType>, DiscoverError> {
    let dir = root.path(&format!("sys/bus/pci/devices/{addr}"));
    if root.resolve(&dir)?.is_none() {
        return Err(DiscoverError::Malformed {
            path: dir,
            reason: "no such PCI function".into(),
        });
    }
    root.parse_optional(&dir.join("iommu_group/type"), parse_group_type)
}

fn read_units(root: &SysRoot) -> Result<Vec<IommuUnit>, DiscoverError> {
    let dir = root.path("sys/class/iommu");
    let mut units = Vec::new();
    for name in root.list_dir(&dir)?.unwrap_or_default() {
        let intel = read_intel(root, &dir.join(&name).join("intel-iommu"))?;
        units.push(IommuUnit { name, intel });
    }
    Ok(units)
}

fn read_intel(root: &SysRoot, dir: &Path) -> Result<Option<IntelIommu>, DiscoverError> {
    let Some(version) = root.parse_optional(&dir.join("version"), parse_intel_version)? else {
        return Ok(None);
    };
    Ok(Some(IntelIommu {
        version,
        cap: root.parse_required(&dir.join("cap"), parse_register)?,
        ecap: root.parse_required(&dir.join("ecap"), parse_register)?,
    }))
}

fn read_groups(root: &SysRoot) -> Result<Vec<IommuGroup>, DiscoverError> {
    let dir = root.path("sys/kernel/iommu_groups");
    let mut groups = Vec::new();
    for name in root.list_dir(&dir)?.unwrap_or_default() {
        let group = dir.join(&name);
        let id = parse_decimal_u32(&name).ok_or_else(|| {
            DiscoverError::malformed(&group, ParseError::new(&name, "an IOMMU group number"))
        })?;
        groups.push(IommuGroup {
            id,
            kind: root.parse_optional(&group.join("type"), parse_group_type)?,
            devices: root.list_dir(&group.join("devices"))?.unwrap_or_default(),
        });
    }
    groups.sort_by_key(|g| g.id);
    Ok(groups)
}

fn read_pools(root: &SysRoot) -> Result<Vec<HugepagePool>, DiscoverError> {
    let dir = root.path("sys/kernel/mm/hugepages");
    let mut pools = Vec::new();
    for name in root.list_dir(&dir)?.unwrap_or_default() {
        let pool = dir.join(&name);
        let size_kib = parse_pool_name(&name).map_err(|e| DiscoverError::malformed(&pool, e))?;
        let count = |file: &str| root.parse_required(&pool.join(file), parse_count);
        pools.push(HugepagePool {
            size_kib,
            total: count("nr_hugepages")?,
            free: count("free_hugepages")?,
            reserved: count("resv_hugepages")?,
            surplus: count("surplus_hugepages")?,
        });
    }
    pools.sort_by_key(|p| p.size_kib);
    Ok(pools)
}

/// The default domain type. No unit: `Off`. Otherwise the type most kernel-managed groups
/// have (each group gets the default at boot; an administrator may change single groups
/// later), or, when no group has a `type`, what the command line asks for.
fn default_mode(units: &[IommuUnit], groups: &[IommuGroup], cmdline: &[String]) -> IommuMode {
    if units.is_empty() {
        return IommuMode::Off;
    }
    let mut votes: BTreeMap<&'static str, (usize, IommuMode)> = BTreeMap::new();
    for kind in groups.iter().filter_map(|g| g.kind) {
        let mode = match kind {
            GroupType::Dma => IommuMode::Translated { lazy: false },
            GroupType::DmaFq => IommuMode::Translated { lazy: true },
            GroupType::Identity => IommuMode::Passthrough,
            GroupType::Blocked | GroupType::Unmanaged => continue,
        };
        votes.entry(kind.as_str()).or_insert((0, mode)).0 += 1;
    }
    let mut ranked: Vec<(usize, IommuMode)> = votes.into_values().collect();
    ranked.sort_by_key(|(votes, _)| std::cmp::Reverse(*votes));
    match ranked.as_slice() {
        [] => cmdline_mode(cmdline).unwrap_or(IommuMode::Unknown),
        [(first, _), (second, _), ..] if first == second => IommuMode::Unknown,
        [(_, mode), ..] => *mode,
    }
}

/// The default the command line asks for: `iommu=pt` or `iommu.passthrough=1` for
/// identity, `iommu.strict=0|1` for lazy or strict translation (linux-counters.md 7). The
/// last occurrence wins, as the kernel parses them in order.
fn cmdline_mode(tokens: &[String]) -> Option<IommuMode> {
    let mut passthrough = None;
    let mut strict = None;
    for token in tokens {
        match token.split_once('=') {
            Some(("iommu", options)) => {
                for option in options.split(',') {
                    match option {
                        "pt" => passthrough = Some(true),
                        "nopt" => passthrough = Some(false),
                        _ => {}
                    }
                }
            }
            Some(("iommu.passthrough", v)) => passthrough = kstrtobool(v).or(passthrough),
            Some(("iommu.strict", v)) => strict = kstrtobool(v).or(strict),
            _ => {}
        }
    }
    match (passthrough, strict) {
        (Some(true), _) => Some(IommuMode::Passthrough),
        (_, Some(strict)) => Some(IommuMode::Translated { lazy: !strict }),
        _ => None,
    }
}

/// The kernel's `kstrtobool`: `1`, `y`, `on` are true; `0`, `n`, `off` false.
fn kstrtobool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "on" => Some(true),
        "0" | "n" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The IOMMU tokens of a kernel command line (`intel_iommu=`, `amd_iommu=`, `iommu=`,
/// `iommu.*=`), in order; what follows `--` goes to init, not to the kernel.
pub fn iommu_tokens(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        .take_while(|t| *t != "--")
        .filter(|t| {
            ["intel_iommu=", "amd_iommu=", "iommu=", "iommu."]
                .iter()
                .any(|p| t.starts_with(p))
        })
        .map(str::to_string)
        .collect()
}

/// Parses an IOMMU group's `type`.
pub fn parse_group_type(s: &str) -> Result<GroupType, ParseError> {
    Ok(match s {
        "DMA" => GroupType::Dma,
        "DMA-FQ" => GroupType::DmaFq,
        "identity" => GroupType::Identity,
        "blocked" => GroupType::Blocked,
        "unmanaged" => GroupType::Unmanaged,
        _ => {
            return Err(ParseError::new(
                s,
                "an IOMMU group type: DMA, DMA-FQ, identity, blocked or unmanaged",
            ))
        }
    })
}

/// Parses a THP setting, `always [madvise] never`: the one choice in brackets.
pub fn parse_thp_choice(s: &str) -> Result<String, ParseError> {
    let mut chosen = s
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('[')?.strip_suffix(']'));
    match (chosen.next(), chosen.next()) {
        (Some(choice), None) if !choice.is_empty() => Ok(choice.to_string()),
        _ => Err(ParseError::new(
            s,
            "choices with exactly one in brackets, like `always [madvise] never`",
        )),
    }
}

/// Parses `proc/meminfo` (`<name>: <value>` lines, some with ` kB`) and keeps the hugepage
/// lines; `None` when it has no `HugePages_Total` (a kernel without hugetlbfs).
pub fn parse_meminfo_hugepages(s: &str) -> Result<Option<MeminfoHugepages>, ParseError> {
    let mut values = BTreeMap::new();
    for line in s.lines() {
        let bad = || {
            ParseError::new(
                line,
                "a meminfo line `<name>: <value>` or `<name>: <value> kB`",
            )
        };
        let (name, value) = line.split_once(':').ok_or_else(bad)?;
        let value = value.trim();
        let number = value.strip_suffix(" kB").unwrap_or(value).trim_end();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(bad());
        }
        values.insert(name, parse_count(number).map_err(|_| bad())?);
    }
    let Some(&total) = values.get("HugePages_Total") else {
        return Ok(None);
    };
    let get = |name: &str| {
        values.get(name).copied().ok_or_else(|| {
            ParseError::new(
                s,
                "meminfo with HugePages_Free, HugePages_Rsvd, HugePages_Surp and Hugepagesize beside HugePages_Total",
            )
        })
    };
    Ok(Some(MeminfoHugepages {
        total,
        free: get("HugePages_Free")?,
        reserved: get("HugePages_Rsvd")?,
        surplus: get("HugePages_Surp")?,
        size_kib: get("Hugepagesize")?,
        anon_huge_kib: values.get("AnonHugePages").copied(),
    }))
}

/// Parses a pool folder name, `hugepages-2048kB`, into its page size in KiB.
pub fn parse_pool_name(s: &str) -> Result<u64, ParseError> {
    s.strip_prefix("hugepages-")
        .and_then(|rest| rest.strip_suffix("kB"))
        .and_then(|size| parse_count(size).ok())
        .filter(|size| *size > 0)
        .ok_or_else(|| ParseError::new(s, "a hugepage pool like hugepages-2048kB"))
}

/// Parses an Intel IOMMU `version`, `%d:%d`.
pub fn parse_intel_version(s: &str) -> Result<(u32, u32), ParseError> {
    s.split_once(':')
        .and_then(|(major, minor)| Some((parse_decimal_u32(major)?, parse_decimal_u32(minor)?)))
        .ok_or_else(|| ParseError::new(s, "a VT-d version like 1:0"))
}

/// Parses an Intel IOMMU `cap` or `ecap`, `%llx`: 1 to 16 hex digits, no `0x`.
pub fn parse_register(s: &str) -> Result<u64, ParseError> {
    if (1..=16).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        u64::from_str_radix(s, 16).map_err(|_| ParseError::new(s, "a 64-bit register in hex"))
    } else {
        Err(ParseError::new(s, "a 64-bit register in hex"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tokens(line: &str) -> Vec<String> {
        iommu_tokens(line)
    }

    fn unit(name: &str) -> IommuUnit {
        IommuUnit {
            name: name.into(),
            intel: None,
        }
    }

    fn group(id: u32, kind: Option<GroupType>, devices: &[&str]) -> IommuGroup {
        IommuGroup {
            id,
            kind,
            devices: devices.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn group_types_are_the_readable_kernel_names() {
        for (text, want) in [
            ("DMA", GroupType::Dma),
            ("DMA-FQ", GroupType::DmaFq),
            ("identity", GroupType::Identity),
            ("blocked", GroupType::Blocked),
            ("unmanaged", GroupType::Unmanaged),
        ] {
            assert_eq!(parse_group_type(text), Ok(want));
            assert_eq!(want.to_string(), text);
            assert_eq!(serde_json::to_value(want).unwrap(), text);
        }
        for bad in ["auto", "dma", "DMA FQ", ""] {
            assert!(parse_group_type(bad).is_err(), "{bad}");
        }
        assert!(GroupType::Dma.translates() && GroupType::DmaFq.translates());
        assert!(!GroupType::Identity.translates() && !GroupType::Unmanaged.translates());
    }

    #[test]
    fn thp_settings_give_the_bracketed_choice() {
        for (text, want) in [
            ("always [madvise] never", Some("madvise")),
            ("[always] madvise never", Some("always")),
            ("always madvise [never]", Some("never")),
            (
                "always defer defer+madvise [madvise] never",
                Some("madvise"),
            ),
            ("always madvise never", None),
            ("[always] [madvise] never", None),
            ("[] madvise", None),
            ("", None),
        ] {
            assert_eq!(parse_thp_choice(text).ok().as_deref(), want, "{text}");
        }
    }

    const MEMINFO: &str = "MemTotal:       65536000 kB\nMemFree:        59137719 kB\n\
        AnonHugePages:   1431552 kB\nHugePages_Total:    1024\nHugePages_Free:     1000\n\
        HugePages_Rsvd:        8\nHugePages_Surp:        0\nHugepagesize:       2048 kB\n\
        Hugetlb:         2097152 kB";

    #[test]
    fn meminfo_gives_the_hugepage_lines() {
        assert_eq!(
            parse_meminfo_hugepages(MEMINFO),
            Ok(Some(MeminfoHugepages {
                total: 1024,
                free: 1000,
                reserved: 8,
                surplus: 0,
                size_kib: 2048,
                anon_huge_kib: Some(1431552),
            }))
        );
        assert_eq!(
            parse_meminfo_hugepages("MemTotal:       65536000 kB"),
            Ok(None)
        );
        let without_free = MEMINFO.replace("HugePages_Free:     1000\n", "");
        assert!(parse_meminfo_hugepages(&without_free).is_err());
        for bad in [
            "MemTotal 1 kB",
            "MemTotal: one kB",
            "Mem Total: 1 kB",
            ": 1",
            "HugePages_Total: -1",
        ] {
            let e = parse_meminfo_hugepages(bad).unwrap_err();
            assert_eq!(e.value, bad);
        }
    }

    #[test]
    fn command_line_tokens_and_the_mode_they_ask_for() {
        let line = "BOOT_IMAGE=/vmlinuz ro intel_iommu=on,sm_on iommu=pt quiet iommu.strict=1 \
                    amd_iommu=off noiommu=1 -- iommu=nopt";
        assert_eq!(
            tokens(line),
            [
                "intel_iommu=on,sm_on",
                "iommu=pt",
                "iommu.strict=1",
                "amd_iommu=off"
            ]
        );
        let table = [
            ("intel_iommu=on", None),
            ("intel_iommu=on iommu=pt", Some(IommuMode::Passthrough)),
            ("iommu=soft,pt", Some(IommuMode::Passthrough)),
            ("iommu=pt iommu=nopt", None),
            ("iommu.passthrough=1", Some(IommuMode::Passthrough)),
            ("iommu.passthrough=on iommu.passthrough=0", None),
            ("iommu.strict=0", Some(IommuMode::Translated { lazy: true })),
            (
                "iommu.strict=y",
                Some(IommuMode::Translated { lazy: false }),
            ),
            ("iommu.strict=maybe", None),
            ("iommu=pt iommu.strict=1", Some(IommuMode::Passthrough)),
        ];
        for (line, want) in table {
            assert_eq!(cmdline_mode(&tokens(line)), want, "{line}");
        }
    }

    #[test]
    fn the_mode_is_the_type_most_groups_have() {
        let units = [unit("dmar0")];
        let fq = |id| group(id, Some(GroupType::DmaFq), &[]);
        let id = |id| group(id, Some(GroupType::Identity), &[]);
        let strict = tokens("iommu.strict=1");
        let table = [
            (&[][..], vec![fq(0)], IommuMode::Off),
            (
                &units[..],
                vec![fq(0), fq(1), id(2)],
                IommuMode::Translated { lazy: true },
            ),
            (&units[..], vec![fq(0), id(1)], IommuMode::Unknown),
            (
                &units[..],
                vec![id(0), group(1, Some(GroupType::Unmanaged), &[])],
                IommuMode::Passthrough,
            ),
            (
                &units[..],
                vec![group(0, None, &[])],
                IommuMode::Translated { lazy: false },
            ),
            (&units[..], vec![], IommuMode::Translated { lazy: false }),
        ];
        for (units, groups, want) in table {
            assert_eq!(default_mode(units, &groups, &strict), want, "{groups:?}");
        }
        assert_eq!(default_mode(&units, &[], &[]), IommuMode::Unknown);
    }

    fn config(kind: Option<GroupType>, pools: &[u64], thp: Option<&str>) -> MemoryConfig {
        MemoryConfig {
            iommu: IommuState {
                units: vec![unit("dmar0")],
                mode: IommuMode::Translated { lazy: true },
                groups: vec![group(7, kind, &["0000:15:00.0"])],
            },
            hugepages: pools
                .iter()
                .map(|&total| HugepagePool {
                    size_kib: 2048,
                    total,
                    free: total,
                    reserved: 0,
                    surplus: 0,
                })
                .collect(),
            meminfo: None,
            thp_enabled: thp.map(str::to_string),
            thp_defrag: None,
            cmdline: vec![],
        }
    }

    #[test]
    fn translated_without_hugepages_needs_every_fact() {
        let rnic: PciAddr = "0000:15:00.0".parse().unwrap();
        let other: PciAddr = "0000:16:00.0".parse().unwrap();
        let fq = Some(GroupType::DmaFq);
        assert!(config(fq, &[0, 0], Some("never")).translated_without_hugepages(rnic));
        assert!(
            config(Some(GroupType::Dma), &[0], Some("never")).translated_without_hugepages(rnic)
        );
        assert!(!config(fq, &[0, 0], Some("never")).translated_without_hugepages(other));
        assert!(!config(Some(GroupType::Identity), &[0], Some("never"))
            .translated_without_hugepages(rnic));
        assert!(!config(None, &[0], Some("never")).translated_without_hugepages(rnic));
        assert!(!config(fq, &[0, 512], Some("never")).translated_without_hugepages(rnic));
        assert!(!config(fq, &[], Some("never")).translated_without_hugepages(rnic));
        assert!(!config(fq, &[0], Some("madvise")).translated_without_hugepages(rnic));
        assert!(!config(fq, &[0], None).translated_without_hugepages(rnic));
        let mut no_units = config(fq, &[0], Some("never"));
        no_units.iommu.units.clear();
        assert!(!no_units.translated_without_hugepages(rnic));
        // Without sysfs pools, meminfo tells.
        let mut from_meminfo = config(fq, &[], Some("never"));
        from_meminfo.meminfo = parse_meminfo_hugepages(&MEMINFO.replace("1024", "0")).unwrap();
        assert_eq!(from_meminfo.hugepages_reserved(), Some(false));
        assert!(from_meminfo.translated_without_hugepages(rnic));
    }

    #[test]
    fn pool_names_versions_and_registers() {
        assert_eq!(parse_pool_name("hugepages-2048kB"), Ok(2048));
        assert_eq!(parse_pool_name("hugepages-1048576kB"), Ok(1048576));
        for bad in [
            "hugepages-0kB",
            "hugepages-2048",
            "hugepages-kB",
            "hugepages-2MB",
            "x",
        ] {
            assert!(parse_pool_name(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_intel_version("1:0"), Ok((1, 0)));
        assert_eq!(parse_intel_version("6:12"), Ok((6, 12)));
        for bad in ["1", "1:", ":0", "1.0", "-1:0"] {
            assert!(parse_intel_version(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_register("d2008c40660462"), Ok(0xd2008c40660462));
        assert_eq!(parse_register("ffffffffffffffff"), Ok(u64::MAX));
        for bad in ["", "0xf050de", "1ffffffffffffffff", "g"] {
            assert!(parse_register(bad).is_err(), "{bad}");
        }
        let unit = IntelIommu {
            version: (1, 0),
            cap: 0,
            ecap: 0xf050de,
        };
        assert!(unit.device_tlb() && unit.pass_through());
        let unit = IntelIommu {
            ecap: 0xf050da & !0x40,
            ..unit
        };
        assert!(!unit.device_tlb() && !unit.pass_through());
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = parse_group_type(&s);
            let _ = parse_thp_choice(&s);
            let _ = parse_meminfo_hugepages(&s);
            let _ = parse_pool_name(&s);
            let _ = parse_intel_version(&s);
            let _ = parse_register(&s);
            let _ = cmdline_mode(&iommu_tokens(&s));
        }

        #[test]
        fn generated_meminfo_reads_back(
            total: u64, free: u64, reserved: u64, surplus: u64, size in 1u64..u64::MAX,
            pad in 1usize..12,
        ) {
            let line = |name: &str, v: u64, unit: &str| format!("{name}:{}{v}{unit}", " ".repeat(pad));
            let text = [
                line("MemTotal", 1, " kB"),
                line("HugePages_Total", total, ""),
                line("HugePages_Free", free, ""),
                line("HugePages_Rsvd", reserved, ""),
                line("HugePages_Surp", surplus, ""),
                line("Hugepagesize", size, " kB"),
            ]
            .join("\n");
            let want = MeminfoHugepages { total, free, reserved, surplus, size_kib: size, anon_huge_kib: None };
            prop_assert_eq!(parse_meminfo_hugepages(&text), Ok(Some(want)));
        }

        #[test]
        fn generated_thp_settings_read_back(
            choices in prop::collection::vec("[a-z+]{1,12}", 1..6), pick: prop::sample::Index,
        ) {
            let i = pick.index(choices.len());
            let text: Vec<String> = choices
                .iter()
                .enumerate()
                .map(|(j, c)| if i == j { format!("[{c}]") } else { c.clone() })
                .collect();
            prop_assert_eq!(parse_thp_choice(&text.join(" ")), Ok(choices[i].clone()));
        }

        #[test]
        fn registers_and_versions_round_trip(v: u64, major: u32, minor: u32) {
            prop_assert_eq!(parse_register(&format!("{v:x}")), Ok(v));
            prop_assert_eq!(parse_intel_version(&format!("{major}:{minor}")), Ok((major, minor)));
            prop_assert_eq!(parse_pool_name(&format!("hugepages-{}kB", v.max(1))), Ok(v.max(1)));
        }
    }
}
