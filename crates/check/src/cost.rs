//! What a process costs the host it runs on, from the kernel's own accounting: this
//! process's CPU time from getrusage(2) (microseconds, fine enough for one check), resident
//! memory from `/proc/self/statm` field 2 and its peak from `VmHWM` of `/proc/self/status`;
//! another process's (a child being measured) from `/proc/<pid>/stat` fields 14 and 15
//! (utime, stime, clock ticks) and `/proc/<pid>/statm` (proc(5)). And what one full-mesh
//! check costs (`hostping bench check`).

use crate::pipeline::{self, CheckSettings};
use analyze::ModeChoice;
use model::HostTopology;
use serde::Serialize;
use vhost::VhostConfig;

/// CPU seconds used and resident bytes of this process so far; 0 bytes where procfs is
/// missing.
pub fn process_cost() -> (f64, u64) {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    (
        cpu_seconds(),
        parse_resident_pages(&statm).map_or(0, |p| p * page_size()),
    )
}

/// CPU time of this process so far, seconds (user + system).
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is always valid.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The most this process has had resident (`VmHWM` of `/proc/self/status`), bytes.
pub fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_peak_kib(&status).map(|kib| kib * 1024)
}

/// A `/proc/<pid>` file of another process that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
#[error("/proc/{pid}/{file}: {reason}")]
pub struct ProcError {
    /// The process.
    pub pid: u32,
    /// The file under `/proc/<pid>`.
    pub file: &'static str,
    /// Why.
    pub reason: String,
}

/// CPU seconds process `pid` has used so far.
pub fn cpu_seconds_of(pid: u32) -> Result<f64, ProcError> {
    let stat = read_proc(pid, "stat")?;
    parse_cpu_ticks(&stat)
        .map(|t| t as f64 / clock_ticks_per_second())
        .ok_or_else(|| ProcError {
            pid,
            file: "stat",
            reason: "no CPU times".into(),
        })
}

/// Resident bytes of process `pid` now.
pub fn resident_bytes_of(pid: u32) -> Result<u64, ProcError> {
    let statm = read_proc(pid, "statm")?;
    parse_resident_pages(&statm)
        .map(|p| p * page_size())
        .ok_or_else(|| ProcError {
            pid,
            file: "statm",
            reason: "no resident size".into(),
        })
}

fn read_proc(pid: u32, file: &'static str) -> Result<String, ProcError> {
    std::fs::read_to_string(format!("/proc/{pid}/{file}")).map_err(|e| ProcError {
        pid,
        file,
        reason: e.to_string(),
    })
}

fn parse_peak_kib(status: &str) -> Option<u64> {
    let value = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    value.trim().trim_end_matches("kB").trim().parse().ok()
}

/// utime + stime: the command name (field 2) may hold spaces and parentheses, so fields
/// are counted after its last `)`.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn parse_resident_pages(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

/// CPU cost of a full-mesh check, milliseconds per check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckCost {
    /// Host model.
    pub host: String,
    /// Paths probed per check.
    pub paths: usize,
    /// Re-probes of single-judge paths and their witnesses per check (idle runs, within the
    /// run; `analyze::reprobe`): median over the checks.
    pub reprobes: usize,
    /// Iterations per message size per path.
    pub iterations: u32,
    /// Checks timed.
    pub repeat: u32,
    /// Probe + analysis with a baseline at hand: median CPU ms per check.
    pub check_cpu_ms: f64,
    /// The same plus building the simulated baseline (3 healthy runs): median CPU ms.
    pub with_baseline_cpu_ms: f64,
}

/// Times `repeat` full-mesh checks of a healthy model, by CPU time.
pub fn check_cost(host: &HostTopology, repeat: u32) -> CheckCost {
    let settings = CheckSettings {
        mode: ModeChoice::Idle,
        ..CheckSettings::default()
    };
    let noise = VhostConfig::default().noise;
    let mut check_ms = Vec::new();
    let mut total_ms = Vec::new();
    let mut reprobes = Vec::new();
    for seed in 0..u64::from(repeat.max(1)) {
        let t0 = cpu_seconds();
        let baseline = crate::record::simulated(
            host,
            crate::record::DEFAULT_RUNS,
            seed,
            &settings.latency,
            noise,
        );
        let t1 = cpu_seconds();
        let reports = pipeline::check_virtual(host, Vec::new(), seed, &baseline, &settings);
        let t2 = cpu_seconds();
        assert_eq!(reports.len(), 1);
        reprobes.push(
            reports[0]
                .paths
                .iter()
                .map(|p| p.reprobes.len())
                .sum::<usize>() as f64,
        );
        check_ms.push((t2 - t1) * 1e3);
        total_ms.push((t2 - t0) * 1e3);
    }
    CheckCost {
        host: host.name.clone(),
        paths: host.paths().len(),
        reprobes: analyze::robust::median(reprobes).expect("repeat >= 1") as usize,
        iterations: settings.latency.iterations,
        repeat: repeat.max(1),
        check_cpu_ms: analyze::robust::median(check_ms).expect("repeat >= 1"),
        with_baseline_cpu_ms: analyze::robust::median(total_ms).expect("repeat >= 1"),
    }
}

/// [`CheckCost`] for people.
pub fn check_cost_table(cost: &CheckCost) -> String {
    format!(
        "full-mesh check of {} ({} paths + {} re-probes, each {} iterations x 2 sizes, \
         simulated), median of {} checks:\n  probe + analysis:             {:.1} ms CPU\n  \
         with a fresh 3-run baseline:  {:.1} ms CPU\n",
        cost.host,
        cost.paths,
        cost.reprobes,
        cost.iterations,
        cost.repeat,
        cost.check_cpu_ms,
        cost.with_baseline_cpu_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_comes_from_vmhwm() {
        let status =
            "Name:\thostping\nVmPeak:\t  20000 kB\nVmHWM:\t   14336 kB\nVmRSS:\t 9000 kB\n";
        assert_eq!(parse_peak_kib(status), Some(14336));
        assert_eq!(parse_peak_kib("Name: x\n"), None);
        assert!(peak_resident_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn fields_are_counted_after_the_command_name() {
        let stat =
            "4242 (host ping) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 70 0 0 20 0 3 0 \
                    100 12345678 2000 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat), Some(320));
        assert_eq!(
            parse_resident_pages("5000 2000 300 10 0 900 0\n"),
            Some(2000)
        );
        assert_eq!(parse_cpu_ticks("garbage"), None);
        assert_eq!(parse_resident_pages(""), None);
    }

    #[test]
    fn this_process_uses_some_memory() {
        let (cpu, rss) = process_cost();
        assert!(rss > 1 << 20, "{rss}");
        assert!(cpu >= 0.0);
        let pid = std::process::id();
        assert!(resident_bytes_of(pid).unwrap() > 1 << 20);
        assert!(cpu_seconds_of(pid).unwrap() >= 0.0);
        let gone = cpu_seconds_of(u32::MAX).unwrap_err();
        assert!(gone
            .to_string()
            .starts_with(&format!("/proc/{}/stat: ", u32::MAX)));
    }
}
