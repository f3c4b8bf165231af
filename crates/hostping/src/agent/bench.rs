//! `hostping bench agent` and `hostping bench counters`: what the agent costs the host it
//! watches. The agent's cost is read from the outside (`/proc/<pid>/stat` and `statm` of a
//! child `hostping agent`), so the measurement does not disturb what it measures.

use super::cost;
use serde::Serialize;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The agent's steady-state cost.
#[derive(Debug, Clone, Serialize)]
pub struct AgentCost {
    /// Virtual host watched.
    pub host: String,
    /// Monitor cadence, s.
    pub cadence_s: f64,
    /// Wall seconds measured (after the warm-up).
    pub seconds: f64,
    /// CPU time over wall time, % of one core.
    pub cpu_percent_of_core: f64,
    /// Resident memory at the end, MiB.
    pub rss_mib: f64,
    /// Highest resident memory sampled (once a second), MiB.
    pub peak_rss_mib: f64,
}

/// Warm-up before measuring: start-up (simulated baseline, first full mesh) is not steady state.
const WARM_UP: Duration = Duration::from_secs(5);

/// Kills the child on every way out.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn read_proc(pid: u32, file: &str) -> anyhow::Result<String> {
    let path = format!("/proc/{pid}/{file}");
    std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("cannot read {path}: {e}"))
}

/// Starts `hostping agent --sim <model>` at real time (1 s symptom cadence) and samples it
/// for `seconds` after the warm-up.
pub fn agent_cost(model: &str, seconds: u64) -> anyhow::Result<AgentCost> {
    let dir = tempfile::tempdir()?;
    let exe = std::env::current_exe()?;
    let child = Command::new(exe)
        .args(["agent", "--sim", model, "--listen", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("runs.db"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let child = Reaped(child);
    let pid = child.0.id();
    std::thread::sleep(WARM_UP);
    let cpu = |pid| -> anyhow::Result<f64> {
        cost::cpu_seconds(&read_proc(pid, "stat")?)
            .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/stat: no CPU times"))
    };
    let rss = |pid| -> anyhow::Result<u64> {
        cost::resident_bytes(&read_proc(pid, "statm")?)
            .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/statm: no resident size"))
    };
    let cpu0 = cpu(pid)?;
    let t0 = Instant::now();
    let mut peak = 0u64;
    let bar = indicatif::ProgressBar::new(seconds);
    for _ in 0..seconds {
        std::thread::sleep(Duration::from_secs(1));
        peak = peak.max(rss(pid)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let wall = t0.elapsed().as_secs_f64();
    let used = cpu(pid)? - cpu0;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    Ok(AgentCost {
        host: model.to_string(),
        cadence_s: 1.0,
        seconds: wall,
        cpu_percent_of_core: used / wall * 100.0,
        rss_mib: mib(rss(pid)?),
        peak_rss_mib: mib(peak),
    })
}

/// The agent cost as a table.
pub fn agent_cost_table(c: &AgentCost) -> String {
    format!(
        "hostping agent idle-monitoring a virtual {} at {} s cadence, {:.0} s after a {} s warm-up:\n  CPU:              {:.3} % of one core (target < 0.5 %)\n  resident memory:  {:.1} MiB at the end, {:.1} MiB peak (target < 30 MiB)\n",
        c.host, c.cadence_s, c.seconds, WARM_UP.as_secs(), c.cpu_percent_of_core, c.rss_mib, c.peak_rss_mib
    )
}

/// Time of one full counter snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct CountersCost {
    /// The root read.
    pub root: String,
    /// Snapshots timed.
    pub repeat: u32,
    /// Sources read successfully in the last snapshot.
    pub sources_ok: usize,
    /// Median wall time, ms.
    pub median_ms: f64,
    /// 90th percentile wall time, ms.
    pub p90_ms: f64,
}

/// Times `repeat` full counter snapshots under `root`.
pub fn counters_cost(root: rdma::sysfs::SysRoot, repeat: u32) -> anyhow::Result<CountersCost> {
    let name = root.root().display().to_string();
    let mut sources = rdma::monitor::HostMonitor::open(root)?;
    let mut times = Vec::with_capacity(repeat as usize);
    let mut ok = 0;
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        let report = sources.read();
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        ok = report.sources.iter().filter(|s| s.is_ok()).count();
    }
    times.sort_by(f64::total_cmp);
    let p90 = times[(times.len() * 9 / 10).min(times.len() - 1)];
    Ok(CountersCost {
        root: name,
        repeat: repeat.max(1),
        sources_ok: ok,
        median_ms: probe::median(times.iter().copied()).expect("repeat >= 1"),
        p90_ms: p90,
    })
}

/// The snapshot time as a table.
pub fn counters_cost_table(c: &CountersCost) -> String {
    format!(
        "full counter snapshot of {} ({} sources read), {} snapshots:\n  median {:.2} ms, p90 {:.2} ms\n",
        c.root, c.sources_ok, c.repeat, c.median_ms, c.p90_ms
    )
}
