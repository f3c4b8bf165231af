//! The agent's own cost, from procfs (proc(5)): CPU time from `/proc/self/stat` fields 14
//! and 15 (utime, stime, in clock ticks), resident memory from `/proc/self/statm` field 2
//! (pages). The agent must stay light on the host it watches; it exports both.

/// CPU seconds used and resident bytes of this process; zeros where procfs is missing.
pub fn process_cost() -> (f64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    (
        parse_cpu_ticks(&stat).map_or(0.0, |t| t as f64 / clock_ticks_per_second()),
        parse_resident_pages(&statm).map_or(0, |p| p * page_size()),
    )
}

/// CPU time of a process in the given `/proc/<pid>/stat` text, seconds.
pub fn cpu_seconds(stat: &str) -> Option<f64> {
    parse_cpu_ticks(stat).map(|t| t as f64 / clock_ticks_per_second())
}

/// The most this process has had resident (`VmHWM` of `/proc/self/status`), bytes.
pub fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_peak_kib(&status).map(|kib| kib * 1024)
}

fn parse_peak_kib(status: &str) -> Option<u64> {
    let value = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    value.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Resident bytes of a process in the given `/proc/<pid>/statm` text.
pub fn resident_bytes(statm: &str) -> Option<u64> {
    parse_resident_pages(statm).map(|p| p * page_size())
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
    }
}
