/*!
NIC statistics through the ethtool ioctls (what `ethtool -S` prints), and the PFC pause
and drop counters Hostping's trigger watches (Hostping 5: run the engine when the Tx pause
duration ratio exceeds PFC_high = 3 % "(every second, transmission is paused by 30ms)" or
when packets are dropped). Names and meanings are mlx5's (linux-counters.md 2,
`Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst`,
`en_stats.c`).

# Reading ([`read_stats`])

On a `socket(AF_INET, SOCK_DGRAM)`, `ioctl(SIOCETHTOOL)` with `ifr_data` pointing at:
1. `ETHTOOL_GSSET_INFO` for the size of the `ETH_SS_STATS` string set; on a kernel without
   it, `ETHTOOL_GDRVINFO`'s `n_stats`;
2. `ETHTOOL_GSTRINGS`: the names, `ETH_GSTRING_LEN` (32) bytes each, NUL-padded; trailing
   spaces are trimmed (one old kernel wrote `"tx_pause_storm_warning_events "`);
3. `ETHTOOL_GSTATS`: one `u64` per name.

The count changes at run time (PFC reconfigured, channels added), and the kernel writes as
many entries as the driver has *now*, whatever length the caller passed
(`net/ethtool/ioctl.c` `ethtool_get_strings` / `ethtool_get_stats`). So each reply buffer
ends where a `PROT_NONE` page begins: a reply grown past it fails with `EFAULT` instead of
writing over this process's memory. A reply whose count differs from the names fetched
(or that hit the guard) starts over from step 1, up to [`ATTEMPTS`] times.
*/

use serde::Serialize;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `ETHTOOL_GDRVINFO` (`include/uapi/linux/ethtool.h`).
const ETHTOOL_GDRVINFO: u32 = 0x03;
/// `ETHTOOL_GSTRINGS`.
const ETHTOOL_GSTRINGS: u32 = 0x1b;
/// `ETHTOOL_GSTATS`.
const ETHTOOL_GSTATS: u32 = 0x1d;
/// `ETHTOOL_GSSET_INFO`.
const ETHTOOL_GSSET_INFO: u32 = 0x37;
/// `ETH_SS_STATS`: the string set of `ethtool -S`.
const ETH_SS_STATS: u32 = 1;
/// `ETH_GSTRING_LEN`: bytes per name.
const ETH_GSTRING_LEN: usize = 32;
/// Offset of `n_stats` in `struct ethtool_drvinfo` (`cmd`, five 32-byte strings,
/// `reserved2[12]`, `n_priv_flags`), and the struct's size.
const DRVINFO_N_STATS: usize = 4 + 5 * 32 + 12 + 4;
const DRVINFO_LEN: usize = DRVINFO_N_STATS + 4 * 4;

/// How many times a read starts over when the statistics count changes under it.
pub const ATTEMPTS: usize = 3;

/// Why the statistics of an interface could not be read. Each names the interface.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EthtoolError {
    /// Not something the kernel could name an interface (empty, 16 bytes or more, NUL).
    #[error("`{ifname}` is not a network interface name (1 to 15 bytes, no NUL)")]
    InvalidName {
        /// The name given.
        ifname: String,
    },
    /// `ENODEV`: no interface of that name.
    #[error("{ifname}: no such network interface (ENODEV)")]
    NoSuchInterface {
        /// The name given.
        ifname: String,
    },
    /// The driver has no `ETH_SS_STATS` set (`EOPNOTSUPP`, or a set of size 0): loopback,
    /// many virtual devices.
    #[error("{ifname}: the driver has no ethtool statistics (EOPNOTSUPP)")]
    NoStatistics {
        /// The interface.
        ifname: String,
    },
    /// `EPERM` or `EACCES`.
    #[error("{ifname}: {request} not permitted: {}", errno_text(.errno))]
    PermissionDenied {
        /// The interface.
        ifname: String,
        /// The ioctl (`ETHTOOL_GSTATS`).
        request: &'static str,
        /// The errno.
        errno: i32,
    },
    /// Any other failure of the socket or an ioctl.
    #[error("{ifname}: {request} failed: {}", errno_text(.errno))]
    Os {
        /// The interface.
        ifname: String,
        /// The call (`socket(AF_INET, SOCK_DGRAM)`, `ETHTOOL_GSTRINGS`).
        request: &'static str,
        /// The errno.
        errno: i32,
    },
    /// The count changed between the names and the values on every attempt.
    #[error("{ifname}: the statistics count changed during each of {ATTEMPTS} reads")]
    CountKeptChanging {
        /// The interface.
        ifname: String,
    },
}

impl EthtoolError {
    /// The errno behind the error, where there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            EthtoolError::NoSuchInterface { .. } => Some(libc::ENODEV),
            EthtoolError::PermissionDenied { errno, .. } | EthtoolError::Os { errno, .. } => {
                Some(*errno)
            }
            _ => None,
        }
    }
}

/// Every statistic of `ifname` as `ethtool -S` lists them: (name, value), driver order.
pub fn read_stats(ifname: &str) -> Result<Vec<(String, u64)>, EthtoolError> {
    let dev = Device::open(ifname)?;
    for _ in 0..ATTEMPTS {
        let count = dev.stats_count()?;
        if count == 0 {
            return Err(EthtoolError::NoStatistics {
                ifname: ifname.into(),
            });
        }
        let Some(names) = dev.names(count)? else {
            continue;
        };
        if let Some(values) = dev.values(count)? {
            return Ok(names.into_iter().zip(values).collect());
        }
    }
    Err(EthtoolError::CountKeptChanging {
        ifname: ifname.into(),
    })
}

/// An interface name and a socket to send its ethtool requests on.
struct Device {
    ifname: String,
    socket: OwnedFd,
}

impl Device {
    fn open(ifname: &str) -> Result<Device, EthtoolError> {
        if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ || ifname.contains('\0') {
            return Err(EthtoolError::InvalidName {
                ifname: ifname.into(),
            });
        }
        // SAFETY: plain socket(2); the descriptor is owned right away.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(os_error(
                ifname,
                "socket(AF_INET, SOCK_DGRAM)",
                last_errno(),
            ));
        }
        Ok(Device {
            ifname: ifname.into(),
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            socket: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// `SIOCETHTOOL` with `ifr_data = data`; `Err(errno)` on failure.
    fn ethtool(&self, data: *mut u8) -> Result<(), i32> {
        // SAFETY: ifreq is plain data; zeroed is a valid value.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in ifr.ifr_name.iter_mut().zip(self.ifname.bytes()) {
            *dst = src as libc::c_char;
        }
        ifr.ifr_ifru.ifru_data = data.cast();
        // SAFETY: `ifr` names the interface (NUL-terminated: open() checked the length)
        // and `data` points at a command buffer the kernel may fill up to the size its
        // command implies; callers pass buffers of that size or a guarded one.
        let rc = unsafe { libc::ioctl(self.socket.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr) };
        if rc < 0 {
            Err(last_errno())
        } else {
            Ok(())
        }
    }

    fn error(&self, request: &'static str, errno: i32) -> EthtoolError {
        match errno {
            libc::ENODEV => EthtoolError::NoSuchInterface {
                ifname: self.ifname.clone(),
            },
            libc::EOPNOTSUPP => EthtoolError::NoStatistics {
                ifname: self.ifname.clone(),
            },
            libc::EPERM | libc::EACCES => EthtoolError::PermissionDenied {
                ifname: self.ifname.clone(),
                request,
                errno,
            },
            _ => os_error(&self.ifname, request, errno),
        }
    }

    /// Size of `ETH_SS_STATS`: `GSSET_INFO`, else `GDRVINFO`'s `n_stats`.
    fn stats_count(&self) -> Result<usize, EthtoolError> {
        // struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[]; }
        // with one bit asked: one u32 of data.
        let mut info = [0u8; 24];
        info[..4].copy_from_slice(&ETHTOOL_GSSET_INFO.to_ne_bytes());
        info[8..16].copy_from_slice(&(1u64 << ETH_SS_STATS).to_ne_bytes());
        match self.ethtool(info.as_mut_ptr()) {
            // The kernel clears the bit of a set the driver does not have.
            Ok(()) if u64_at(&info, 8) & (1 << ETH_SS_STATS) == 0 => Ok(0),
            Ok(()) => Ok(u32_at(&info, 16) as usize),
            Err(libc::EOPNOTSUPP) => {
                let mut drvinfo = [0u8; DRVINFO_LEN];
                drvinfo[..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
                self.ethtool(drvinfo.as_mut_ptr())
                    .map_err(|e| self.error("ETHTOOL_GDRVINFO", e))?;
                Ok(u32_at(&drvinfo, DRVINFO_N_STATS) as usize)
            }
            Err(e) => Err(self.error("ETHTOOL_GSSET_INFO", e)),
        }
    }

    /// The `count` names, or `None` when the driver now has another count.
    fn names(&self, count: usize) -> Result<Option<Vec<String>>, EthtoolError> {
        // struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
        let header = 12;
        let Some(reply) =
            self.guarded_request("ETHTOOL_GSTRINGS", header, count, ETH_GSTRING_LEN, |b| {
                b[..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
                b[4..8].copy_from_slice(&ETH_SS_STATS.to_ne_bytes());
                b[8..12].copy_from_slice(&(count as u32).to_ne_bytes());
            })?
        else {
            return Ok(None);
        };
        if u32_at(&reply, 8) as usize != count {
            return Ok(None);
        }
        Ok(Some(
            reply[header..]
                .chunks_exact(ETH_GSTRING_LEN)
                .map(stat_name)
                .collect(),
        ))
    }

    /// The `count` values, or `None` when the driver now has another count.
    fn values(&self, count: usize) -> Result<Option<Vec<u64>>, EthtoolError> {
        // struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[]; }
        let header = 8;
        let Some(reply) = self.guarded_request("ETHTOOL_GSTATS", header, count, 8, |b| {
            b[..4].copy_from_slice(&ETHTOOL_GSTATS.to_ne_bytes());
            b[4..8].copy_from_slice(&(count as u32).to_ne_bytes());
        })?
        else {
            return Ok(None);
        };
        if u32_at(&reply, 4) as usize != count {
            return Ok(None);
        }
        Ok(Some(
            reply[header..]
                .chunks_exact(8)
                .map(|v| u64_at(v, 0))
                .collect(),
        ))
    }

    /// One variable-length request in a [`GuardedBuf`] of `header + count * entry` bytes;
    /// the reply's bytes, or `None` when the reply ran into the guard page (`EFAULT`).
    fn guarded_request(
        &self,
        request: &'static str,
        header: usize,
        count: usize,
        entry: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Option<Vec<u8>>, EthtoolError> {
        let len = count
            .checked_mul(entry)
            .and_then(|n| n.checked_add(header))
            .ok_or_else(|| self.error(request, libc::ENOMEM))?;
        let mut buf = GuardedBuf::new(len)
            .map_err(|e| self.error(request, e.raw_os_error().unwrap_or(libc::ENOMEM)))?;
        fill(buf.bytes_mut());
        match self.ethtool(buf.bytes_mut().as_mut_ptr()) {
            Ok(()) => Ok(Some(buf.bytes_mut().to_vec())),
            Err(libc::EFAULT) => Ok(None),
            Err(e) => Err(self.error(request, e)),
        }
    }
}

/// A name slot: up to the first NUL, trailing spaces trimmed.
fn stat_name(slot: &[u8]) -> String {
    let end = slot.iter().position(|b| *b == 0).unwrap_or(slot.len());
    String::from_utf8_lossy(&slot[..end]).trim_end().to_string()
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(word)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(word)
}

/// An errno in words, with its number (`No such device (os error 19)`).
fn errno_text(errno: &i32) -> io::Error {
    io::Error::from_raw_os_error(*errno)
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn os_error(ifname: &str, request: &'static str, errno: i32) -> EthtoolError {
    EthtoolError::Os {
        ifname: ifname.into(),
        request,
        errno,
    }
}

/// `len` bytes that end exactly where a `PROT_NONE` page begins (see the module doc).
struct GuardedBuf {
    map: *mut u8,
    map_len: usize,
    start: usize,
    len: usize,
}

impl GuardedBuf {
    fn new(len: usize) -> io::Result<GuardedBuf> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| *p > 0)
            .unwrap_or(4096);
        let body = len.div_ceil(page).max(1) * page;
        let map_len = body + page;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let buf = GuardedBuf {
            map: map.cast(),
            map_len,
            start: body - len,
            len,
        };
        // SAFETY: the last page of the mapping made above.
        if unsafe { libc::mprotect(map.cast::<u8>().add(body).cast(), page, libc::PROT_NONE) } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(buf)
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `start + len` is the end of the writable part of the mapping, which
        // lives as long as `self`.
        unsafe { std::slice::from_raw_parts_mut(self.map.add(self.start), self.len) }
    }
}

impl Drop for GuardedBuf {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

/// The pause and drop counters of one `ethtool -S` reading (linux-counters.md 2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PauseDrops {
    /// `tx_prio<p>_pause_duration`: µs this port asked its peer to pause priority p.
    /// mlx5 lists a priority only while PFC is enabled on it.
    pub tx_pause_duration_us: BTreeMap<u8, u64>,
    /// `rx_prio<p>_pause_duration`: µs the peer paused this port on priority p.
    pub rx_pause_duration_us: BTreeMap<u8, u64>,
    /// `tx_prio<p>_pause`: PFC frames sent.
    pub tx_pause_frames: BTreeMap<u8, u64>,
    /// `rx_prio<p>_pause`: PFC frames received.
    pub rx_pause_frames: BTreeMap<u8, u64>,
    /// `tx_global_pause_duration` (802.3x pause, listed only while it is on), µs.
    pub tx_global_pause_duration_us: Option<u64>,
    /// `rx_global_pause_duration`, µs.
    pub rx_global_pause_duration_us: Option<u64>,
    /// `tx_pause_ctrl_phy`: link-layer pause frames sent (always present on mlx5).
    pub tx_pause_ctrl_phy: Option<u64>,
    /// `rx_pause_ctrl_phy`: link-layer pause frames received.
    pub rx_pause_ctrl_phy: Option<u64>,
    /// `tx_pause_storm_warning_events`: the device sent pauses for a long period.
    pub pause_storm_warning_events: Option<u64>,
    /// `tx_pause_storm_error_events`: it hit the stall timeout and stopped pausing.
    pub pause_storm_error_events: Option<u64>,
    /// Drop counters by name: `rx_discards_phy` (no NIC buffer: the host cannot absorb the
    /// traffic), `tx_discards_phy`, `rx_out_of_buffer` (no software receive buffer),
    /// `outbound_pci_buffer_overflow` (PCIe slower than the receive rate), and the
    /// per-priority `rx_prio<p>_discards`, `rx_prio<p>_buf_discard`,
    /// `rx_prio<p>_cong_discard`.
    pub drops: BTreeMap<String, u64>,
    /// `outbound_pci_stalled_rd`: % of the last second outbound non-posted reads were
    /// blocked by PCIe credits (a gauge).
    pub pci_stalled_rd_pct: Option<u64>,
    /// `outbound_pci_stalled_wr`: the same for posted writes.
    pub pci_stalled_wr_pct: Option<u64>,
}

/// Port-level drop totals (see [`PauseDrops::drops`]).
const DROP_TOTALS: [&str; 4] = [
    "rx_discards_phy",
    "tx_discards_phy",
    "rx_out_of_buffer",
    "outbound_pci_buffer_overflow",
];

/// Per-priority drop counters, `rx_prio<p>_<suffix>`.
const PRIO_DROPS: [&str; 3] = ["discards", "buf_discard", "cong_discard"];

impl PauseDrops {
    /// Picks the pause and drop counters out of a statistics list; other names are ignored.
    pub fn from_stats(stats: &[(String, u64)]) -> PauseDrops {
        let mut out = PauseDrops::default();
        for (name, value) in stats {
            let v = Some(*value);
            match name.as_str() {
                "tx_global_pause_duration" => out.tx_global_pause_duration_us = v,
                "rx_global_pause_duration" => out.rx_global_pause_duration_us = v,
                "tx_pause_ctrl_phy" => out.tx_pause_ctrl_phy = v,
                "rx_pause_ctrl_phy" => out.rx_pause_ctrl_phy = v,
                "tx_pause_storm_warning_events" => out.pause_storm_warning_events = v,
                "tx_pause_storm_error_events" => out.pause_storm_error_events = v,
                "outbound_pci_stalled_rd" => out.pci_stalled_rd_pct = v,
                "outbound_pci_stalled_wr" => out.pci_stalled_wr_pct = v,
                n if DROP_TOTALS.contains(&n) => {
                    out.drops.insert(name.clone(), *value);
                }
                n => out.per_priority(n, *value),
            }
        }
        out
    }

    fn per_priority(&mut self, name: &str, value: u64) {
        let Some((dir, prio, what)) = split_prio(name) else {
            return;
        };
        let map = match (dir, what) {
            ("tx", "pause_duration") => &mut self.tx_pause_duration_us,
            ("rx", "pause_duration") => &mut self.rx_pause_duration_us,
            ("tx", "pause") => &mut self.tx_pause_frames,
            ("rx", "pause") => &mut self.rx_pause_frames,
            ("rx", drop) if PRIO_DROPS.contains(&drop) => {
                self.drops.insert(name.to_string(), value);
                return;
            }
            _ => return,
        };
        map.insert(prio, value);
    }
}

/// `rx_prio3_pause_duration` -> (`rx`, 3, `pause_duration`).
fn split_prio(name: &str) -> Option<(&str, u8, &str)> {
    let (dir, rest) = name.split_at_checked(2)?;
    let rest = rest.strip_prefix("_prio")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (prio, what) = rest.split_at(digits);
    let prio = prio.parse().ok().filter(|_| digits > 0)?;
    Some((dir, prio, what.strip_prefix('_')?))
}

/// Tx pause duration ratio over an interval (linux-counters.md 2): the largest
/// Δ`tx_prio<p>_pause_duration` [µs] / (`interval_s` x 1e6) over the priorities both
/// readings list, and the global pause likewise. Compare with PFC_high = 0.03 (Hostping 5).
///
/// `None` when the interval is not positive, when the readings share no pause duration,
/// or when one went backwards (a counter reset): no number is better than a wrong one.
/// Not clamped: a value slightly above 1 means the two reads were not `interval_s` apart.
pub fn tx_pause_ratio(prev: &PauseDrops, cur: &PauseDrops, interval_s: f64) -> Option<f64> {
    if !(interval_s > 0.0 && interval_s.is_finite()) {
        return None;
    }
    let mut pairs: Vec<(u64, u64)> = cur
        .tx_pause_duration_us
        .iter()
        .filter_map(|(p, c)| Some((*prev.tx_pause_duration_us.get(p)?, *c)))
        .collect();
    if let (Some(p), Some(c)) = (
        prev.tx_global_pause_duration_us,
        cur.tx_global_pause_duration_us,
    ) {
        pairs.push((p, c));
    }
    let mut worst: Option<u64> = None;
    for (p, c) in pairs {
        worst = Some(worst.unwrap_or(0).max(c.checked_sub(p)?));
    }
    Some(worst? as f64 / (interval_s * 1e6))
}

/// Packets dropped between two readings: the sum of the moves of the port-level totals
/// both list, or, on a NIC without them, of the per-priority counters. Never both: the
/// per-priority discards split the port's buffer drops by priority (mlx5 commit 827a8cb
/// "count (per priority) the number of received packets that dropped due to lack of
/// buffers on a physical port"), so adding them would count one drop twice.
///
/// `None` when the readings share no drop counter or one went backwards.
pub fn drops_delta(prev: &PauseDrops, cur: &PauseDrops) -> Option<u64> {
    let shared = |total: bool| {
        cur.drops
            .iter()
            .filter(move |(name, _)| DROP_TOTALS.contains(&name.as_str()) == total)
            .filter_map(|(name, c)| Some((*prev.drops.get(name)?, *c)))
            .collect::<Vec<_>>()
    };
    let totals = shared(true);
    let pairs = if totals.is_empty() {
        shared(false)
    } else {
        totals
    };
    if pairs.is_empty() {
        return None;
    }
    pairs
        .into_iter()
        .try_fold(0u64, |sum, (p, c)| sum.checked_add(c.checked_sub(p)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::Path;

    /// Reads `ethtool -S` output (`NIC statistics:` then `     name: value` lines, names
    /// padded by `%.*s` so that one may end in a space) into the list [`read_stats`] gives.
    /// Tests only: the agent reads the ioctls.
    fn parse_ethtool_s(text: &str) -> Vec<(String, u64)> {
        text.lines()
            .skip_while(|l| l.trim() != "NIC statistics:")
            .skip(1)
            .map(|l| {
                let (name, value) = l.trim_start().rsplit_once(": ").expect(l);
                (name.trim_end().to_string(), value.parse().expect(l))
            })
            .collect()
    }

    fn fixture(name: &str) -> Vec<(String, u64)> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/counters/ethtool")
            .join(name);
        parse_ethtool_s(&std::fs::read_to_string(&path).expect("fixture"))
    }

    #[test]
    fn the_mlx5_snapshot_has_pfc_on_priority_3_only() {
        let stats = fixture("mlx5-pfc3-t0.txt");
        let at = |n: &str| stats.iter().position(|(name, _)| name == n).expect(n);
        // en_stats.c order: traffic per priority, then PFC of enabled priorities.
        assert!(at("tx_prio7_packets") < at("rx_prio3_pause"));
        assert!(at("rx_prio3_pause") < at("rx_prio3_pause_duration"));
        assert!(at("tx_prio3_pause_duration") < at("rx_prio3_pause_transition"));
        let pd = PauseDrops::from_stats(&stats);
        assert_eq!(
            pd,
            PauseDrops {
                tx_pause_duration_us: BTreeMap::from([(3, 1_845_220_117)]),
                rx_pause_duration_us: BTreeMap::from([(3, 21_004_512)]),
                tx_pause_frames: BTreeMap::from([(3, 38_444_164)]),
                rx_pause_frames: BTreeMap::from([(3, 437_594)]),
                tx_global_pause_duration_us: None,
                rx_global_pause_duration_us: None,
                tx_pause_ctrl_phy: Some(38_444_164),
                rx_pause_ctrl_phy: Some(437_594),
                pause_storm_warning_events: Some(0),
                pause_storm_error_events: Some(0),
                drops: [
                    ("rx_discards_phy", 10_577),
                    ("tx_discards_phy", 0),
                    ("rx_out_of_buffer", 0),
                    ("outbound_pci_buffer_overflow", 0),
                ]
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .chain((0..8).flat_map(|p| {
                    let d = if p == 3 { 10_577 } else { 0 };
                    [
                        (format!("rx_prio{p}_discards"), d),
                        (format!("rx_prio{p}_buf_discard"), 0),
                        (format!("rx_prio{p}_cong_discard"), 0),
                    ]
                }))
                .collect(),
                pci_stalled_rd_pct: Some(0),
                pci_stalled_wr_pct: Some(2),
            }
        );
    }

    #[test]
    fn one_second_later_the_port_paused_4_5_percent_and_dropped() {
        let t0 = PauseDrops::from_stats(&fixture("mlx5-pfc3-t0.txt"));
        let t1 = PauseDrops::from_stats(&fixture("mlx5-pfc3-t1.txt"));
        let ratio = tx_pause_ratio(&t0, &t1, 1.0).unwrap();
        assert!((ratio - 0.045).abs() < 1e-12, "{ratio}");
        assert!(ratio > 0.03, "above PFC_high");
        assert_eq!(tx_pause_ratio(&t0, &t1, 2.0), Some(0.0225));
        // 131 discarded for lack of NIC buffers + 7 for PCIe overflow; the priority-3
        // breakdown of the 131 is not added again.
        assert_eq!(drops_delta(&t0, &t1), Some(138));
        assert_eq!(t1.pci_stalled_wr_pct, Some(37));
        assert_eq!(tx_pause_ratio(&t1, &t0, 1.0), None, "backwards");
        assert_eq!(drops_delta(&t1, &t0), None, "backwards");
        assert_eq!(tx_pause_ratio(&t0, &t1, 0.0), None);
        assert_eq!(tx_pause_ratio(&t0, &t1, f64::NAN), None);
    }

    #[test]
    fn an_old_kernels_trailing_space_is_trimmed() {
        let stats = parse_ethtool_s(
            "NIC statistics:\n     tx_pause_storm_warning_events : 4\n     rx_pause_ctrl_phy: 1\n",
        );
        assert_eq!(stats[0], ("tx_pause_storm_warning_events".to_string(), 4));
        assert_eq!(
            stat_name(b"tx_pause_storm_warning_events \0\0"),
            "tx_pause_storm_warning_events"
        );
        assert_eq!(stat_name(&[b'x'; 32]), "x".repeat(32));
        assert_eq!(
            PauseDrops::from_stats(&stats).pause_storm_warning_events,
            Some(4)
        );
    }

    fn stats(pairs: &[(&str, u64)]) -> PauseDrops {
        let list: Vec<(String, u64)> = pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        PauseDrops::from_stats(&list)
    }

    #[test]
    fn global_pause_counts_like_a_priority_and_the_worst_wins() {
        let t0 = stats(&[
            ("tx_prio0_pause_duration", 100),
            ("tx_prio5_pause_duration", 100),
            ("tx_global_pause_duration", 0),
        ]);
        let t1 = stats(&[
            ("tx_prio0_pause_duration", 10_100),
            ("tx_prio5_pause_duration", 20_100),
            ("tx_global_pause_duration", 50_000),
        ]);
        assert_eq!(tx_pause_ratio(&t0, &t1, 1.0), Some(0.05));
        // A priority enabled between the readings has no delta and is skipped.
        let t2 = stats(&[
            ("tx_prio0_pause_duration", 10_100),
            ("tx_prio4_pause_duration", 9),
        ]);
        assert_eq!(tx_pause_ratio(&t1, &t2, 1.0), Some(0.0));
        assert_eq!(
            tx_pause_ratio(&stats(&[]), &t1, 1.0),
            None,
            "nothing shared"
        );
    }

    #[test]
    fn per_priority_drops_count_only_without_port_totals() {
        let t0 = stats(&[("rx_prio3_discards", 5), ("rx_prio4_cong_discard", 1)]);
        let t1 = stats(&[("rx_prio3_discards", 9), ("rx_prio4_cong_discard", 2)]);
        assert_eq!(drops_delta(&t0, &t1), Some(5));
        assert_eq!(drops_delta(&stats(&[]), &stats(&[])), None);
        assert_eq!(split_prio("rx_prio10_pause"), Some(("rx", 10, "pause")));
        assert_eq!(split_prio("rx_prio_pause"), None);
        assert_eq!(split_prio("rx_prio300_pause"), None);
        assert_eq!(split_prio("rx_prio3"), None);
    }

    #[test]
    fn names_are_checked_before_any_ioctl() {
        for bad in ["", "sixteen-bytes-xx", "a\0b"] {
            assert_eq!(
                read_stats(bad),
                Err(EthtoolError::InvalidName { ifname: bad.into() })
            );
        }
    }

    #[test]
    fn a_guarded_buffer_ends_at_its_guard_page() {
        for len in [1, 8, 4095, 4096, 4097, 40_000] {
            let mut buf = GuardedBuf::new(len).unwrap();
            let bytes = buf.bytes_mut();
            assert_eq!(bytes.len(), len);
            bytes.fill(0xa5);
            let end = bytes.as_ptr() as usize + len;
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
            assert_eq!(end % page, 0, "{len}");
        }
    }

    proptest! {
        #[test]
        fn the_parser_never_panics(names in prop::collection::vec("\\PC{0,40}", 0..20), v: u64) {
            let list: Vec<(String, u64)> = names.into_iter().map(|n| (n, v)).collect();
            let pd = PauseDrops::from_stats(&list);
            let _ = tx_pause_ratio(&pd, &pd, 1.0);
            let _ = drops_delta(&pd, &pd);
        }

        #[test]
        fn generated_names_round_trip(dir in prop::sample::select(vec!["rx", "tx"]), prio: u8, v: u64) {
            let name = format!("{dir}_prio{prio}_pause_duration");
            let pd = PauseDrops::from_stats(&[(name, v)]);
            let map = if dir == "tx" { &pd.tx_pause_duration_us } else { &pd.rx_pause_duration_us };
            prop_assert_eq!(map.get(&prio), Some(&v));
        }

        #[test]
        fn ratios_are_never_bogus(a: u32, b: u32) {
            let p = stats(&[("tx_prio3_pause_duration", u64::from(a))]);
            let c = stats(&[("tx_prio3_pause_duration", u64::from(b))]);
            match tx_pause_ratio(&p, &c, 1.0) {
                Some(r) => prop_assert!(b >= a && r == f64::from(b - a) / 1e6),
                None => prop_assert!(b < a),
            }
        }

        #[test]
        fn name_slots_never_panic(slot in prop::collection::vec(any::<u8>(), 32)) {
            let name = stat_name(&slot);
            prop_assert!(name.len() <= 3 * 32 && !name.ends_with(' ') && !name.contains('\0'));
        }
    }
}
