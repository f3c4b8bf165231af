//! Counting: `perf_event_open` of the planned counters, reading them, and turning two
//! samples into bytes per second.

use super::discovery::EventConfig;
use super::events::{plan, BusMetric, CounterSpec, Gap, Unavailable};
use crate::sysfs::SysRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd};

// ---------------------------------------------------------------------------------------
// perf_event_open

/// `struct perf_event_attr` up to `config2` (`PERF_ATTR_SIZE_VER1`, 72 bytes; every
/// kernel since 2.6.33 takes it and zero-fills the rest), from
/// include/uapi/linux/perf_event.h:
///
/// | offset | field |
/// |---|---|
/// | 0 | `__u32 type` |
/// | 4 | `__u32 size` |
/// | 8 | `__u64 config` |
/// | 16 | `__u64 sample_period` (union with `sample_freq`) |
/// | 24 | `__u64 sample_type` |
/// | 32 | `__u64 read_format` |
/// | 40 | `__u64` flag bits (`disabled`, `inherit`, ..., `exclude_*`): all 0 here |
/// | 48 | `__u32 wakeup_events` |
/// | 52 | `__u32 bp_type` |
/// | 56 | `__u64 config1` (union with `bp_addr`) |
/// | 64 | `__u64 config2` (union with `bp_len`) |
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
}

const PERF_ATTR_SIZE_VER1: u32 = 72;
const _: () = {
    assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER1 as usize);
    assert!(std::mem::offset_of!(PerfEventAttr, read_format) == 32);
    assert!(std::mem::offset_of!(PerfEventAttr, config1) == 56);
};

/// `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING`: `read()` gives
/// `{ value, time_enabled, time_running }`.
const READ_FORMAT: u64 = 1 | 2;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// One open perf counter, closed on drop.
#[derive(Debug)]
pub struct Counter {
    file: File,
}

/// One read of a [`Counter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CounterValue {
    /// Events counted while the counter ran.
    pub count: u64,
    /// Nanoseconds the counter was enabled.
    pub time_enabled_ns: u64,
    /// Nanoseconds it was on the hardware (less than enabled when multiplexed).
    pub time_running_ns: u64,
}

impl Counter {
    /// `perf_event_open` of an event of PMU type `pmu_type`, counting system-wide on `cpu`.
    pub fn open(pmu_type: u32, config: EventConfig, cpu: u32) -> io::Result<Counter> {
        let attr = PerfEventAttr {
            type_: pmu_type,
            size: PERF_ATTR_SIZE_VER1,
            config: config.config,
            read_format: READ_FORMAT,
            config1: config.config1,
            config2: config.config2,
            ..PerfEventAttr::default()
        };
        let cpu = libc::c_int::try_from(cpu)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "CPU number too large"))?;
        // SAFETY: attr is a valid perf_event_attr of the size it states; pid -1 with a CPU
        // and no group is a system-wide counter; the fd returned is ours.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                -1 as libc::pid_t,
                cpu,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        Ok(Counter {
            file: File::from(fd),
        })
    }

    /// The current count and times.
    pub fn read(&self) -> io::Result<CounterValue> {
        let mut buf = [0u8; 24];
        (&self.file).read_exact(&mut buf)?;
        let word = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
        Ok(CounterValue {
            count: word(0),
            time_enabled_ns: word(1),
            time_running_ns: word(2),
        })
    }
}

/// The sysctl that gates system-wide counters.
const PARANOID: &str = "proc/sys/kernel/perf_event_paranoid";

/// Why `perf_event_open` of `what` failed, in words. Permission errors name the value of
/// `/proc/sys/kernel/perf_event_paranoid` (read below `root`).
pub fn open_failure(root: &SysRoot, what: &str, e: &io::Error) -> Unavailable {
    let reason = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            let value = match root.read_optional(&root.path(PARANOID)) {
                Ok(Some(v)) => v,
                _ => "unreadable".to_string(),
            };
            format!(
                "perf_event_open({what}): {e}: system-wide counters need \
                 /proc/sys/kernel/perf_event_paranoid <= 0 (it is {value}) or CAP_PERFMON \
                 (CAP_SYS_ADMIN before Linux 5.8), and a seccomp profile that allows \
                 perf_event_open"
            )
        }
        Some(libc::ENOENT) => {
            format!("perf_event_open({what}): {e}: the kernel has no such PMU type or event")
        }
        _ => format!("perf_event_open({what}): {e}"),
    };
    Unavailable { reason }
}

// ---------------------------------------------------------------------------------------
// The monitor

/// Open counters for every metric of a host's [`Plan`].
#[derive(Debug)]
pub struct UncoreMonitor {
    counters: Vec<(CounterSpec, Counter)>,
    gaps: Vec<Gap>,
    notes: Vec<String>,
}

impl UncoreMonitor {
    /// Plans and opens every counter. A metric whose counter will not open becomes a
    /// [`Gap`] (all its counters are closed: a partial sum would be wrong); a permission
    /// error, or nothing left to count, makes the whole monitor [`Unavailable`].
    pub fn open(root: &SysRoot) -> Result<UncoreMonitor, Unavailable> {
        let plan = plan(root)?;
        let mut failed: BTreeMap<BusMetric, String> = BTreeMap::new();
        let mut counters = Vec::new();
        for spec in plan.counters {
            if failed.contains_key(&spec.metric) {
                continue;
            }
            match Counter::open(spec.pmu_type, spec.config, spec.cpu) {
                Ok(counter) => counters.push((spec, counter)),
                Err(e) => {
                    let why = open_failure(root, &spec.to_string(), &e);
                    if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
                        return Err(why);
                    }
                    failed.insert(spec.metric, why.reason);
                }
            }
        }
        counters.retain(|(spec, _)| !failed.contains_key(&spec.metric));
        let mut gaps = plan.gaps;
        gaps.extend(failed.into_iter().map(|(metric, reason)| Gap {
            family: metric.family(),
            reason: format!("{metric}: {reason}"),
        }));
        if counters.is_empty() {
            let gaps: Vec<String> = gaps.iter().map(Gap::to_string).collect();
            return Err(Unavailable {
                reason: gaps.join("; "),
            });
        }
        Ok(UncoreMonitor {
            counters,
            gaps,
            notes: plan.notes,
        })
    }

    /// The open counters.
    pub fn counters(&self) -> impl Iterator<Item = &CounterSpec> {
        self.counters.iter().map(|(spec, _)| spec)
    }

    /// What cannot be counted, and why.
    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// What was skipped inside the families that are counted.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Reads every counter.
    pub fn read(&self) -> io::Result<UncoreSample> {
        let counters = self
            .counters
            .iter()
            .map(|(spec, counter)| {
                let value = counter
                    .read()
                    .map_err(|e| io::Error::new(e.kind(), format!("read {spec}: {e}")))?;
                Ok(SampledCounter {
                    metric: spec.metric.clone(),
                    bytes_per_count: spec.bytes_per_count,
                    value,
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(UncoreSample { counters })
    }
}

/// One counter's value in a sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledCounter {
    /// What it measures.
    pub metric: BusMetric,
    /// Bytes per count.
    pub bytes_per_count: f64,
    /// The value read.
    pub value: CounterValue,
}

/// Every counter of a monitor, read once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UncoreSample {
    /// In the monitor's order.
    pub counters: Vec<SampledCounter>,
}

/// Cumulative bytes of one metric since its counters opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BusReading {
    /// What.
    pub metric: BusMetric,
    /// Bytes, summed over the metric's counters, each scaled by enabled/running.
    pub bytes: u64,
}

/// Bytes per second of one metric over an interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BusRate {
    /// What.
    pub metric: BusMetric,
    /// `None` when a counter of the metric never ran in the interval (or the interval is
    /// not positive): absent, not zero.
    pub bytes_per_s: Option<f64>,
}

/// `count` scaled for multiplexing: x enabled / running when the counter ran part time.
pub(crate) fn scaled(count: u64, enabled: u64, running: u64) -> f64 {
    if running > 0 && enabled > running {
        count as f64 * enabled as f64 / running as f64
    } else {
        count as f64
    }
}

impl UncoreSample {
    /// Cumulative bytes per metric, sorted by metric.
    pub fn readings(&self) -> Vec<BusReading> {
        let mut sums: BTreeMap<&BusMetric, f64> = BTreeMap::new();
        for c in &self.counters {
            let v = c.value;
            *sums.entry(&c.metric).or_default() +=
                scaled(v.count, v.time_enabled_ns, v.time_running_ns) * c.bytes_per_count;
        }
        sums.into_iter()
            .map(|(metric, bytes)| BusReading {
                metric: metric.clone(),
                bytes: bytes.round() as u64,
            })
            .collect()
    }
}

/// Counter width of the uncore PMUs used here.
const COUNTER_MASK: u64 = (1 << 48) - 1;

/// Bytes per second per metric between two samples of one monitor, `interval_s` apart,
/// sorted by metric. Each counter's difference is taken modulo 2^48 (a wrapped 48-bit
/// counter; the kernel's 64-bit totals give the same difference) and scaled by the
/// enabled/running times of the interval. Counters that do not pair up (samples of two
/// different monitors) are left out.
pub fn rates(prev: &UncoreSample, cur: &UncoreSample, interval_s: f64) -> Vec<BusRate> {
    let mut sums: BTreeMap<&BusMetric, Option<f64>> = BTreeMap::new();
    for (p, c) in prev.counters.iter().zip(&cur.counters) {
        if p.metric != c.metric {
            continue;
        }
        let count = c.value.count.wrapping_sub(p.value.count) & COUNTER_MASK;
        let enabled = c
            .value
            .time_enabled_ns
            .saturating_sub(p.value.time_enabled_ns);
        let running = c
            .value
            .time_running_ns
            .saturating_sub(p.value.time_running_ns);
        let bytes = (running > 0).then(|| scaled(count, enabled, running) * c.bytes_per_count);
        let sum = sums.entry(&c.metric).or_insert(Some(0.0));
        *sum = sum.zip(bytes).map(|(a, b)| a + b);
    }
    let valid = interval_s.is_finite() && interval_s > 0.0;
    sums.into_iter()
        .map(|(metric, bytes)| BusRate {
            metric: metric.clone(),
            bytes_per_s: bytes.filter(|_| valid).map(|b| b / interval_s),
        })
        .collect()
}
