//! What the agent costs the host it watches (`hostping bench agent` and `hostping bench
//! counters`). The agent's cost is read from the outside (`/proc/<pid>/stat` and `statm` of a
//! child `hostping agent`), so the measurement does not disturb what it measures.

use check::cost::{cpu_seconds_of, resident_bytes_of, ProcError};
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

/// Why a cost could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    /// The agent could not be started (no temporary folder, no executable).
    #[error("cannot start `hostping agent`: {0}")]
    Start(#[source] std::io::Error),
    /// The measured agent's procfs files.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// The counter sources could not be opened.
    #[error(transparent)]
    Sources(#[from] rdma::sysfs::DiscoverError),
}

/// Starts `hostping agent --sim <model>` at real time (1 s symptom cadence) and samples it
/// for `seconds` after the warm-up; `progress(done)` after each second measured.
pub fn agent_cost(
    model: &str,
    seconds: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<AgentCost, CostError> {
    let dir = tempfile::tempdir().map_err(CostError::Start)?;
    let exe = std::env::current_exe().map_err(CostError::Start)?;
    let child = Command::new(exe)
        .args(["agent", "--sim", model, "--listen", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("runs.db"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(CostError::Start)?;
    let child = Reaped(child);
    let pid = child.0.id();
    std::thread::sleep(WARM_UP);
    let cpu = cpu_seconds_of;
    let rss = resident_bytes_of;
    let cpu0 = cpu(pid)?;
    let t0 = Instant::now();
    let mut peak = 0u64;
    for second in 1..=seconds {
        std::thread::sleep(Duration::from_secs(1));
        peak = peak.max(rss(pid)?);
        progress(second);
    }
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
pub fn counters_cost(root: rdma::sysfs::SysRoot, repeat: u32) -> Result<CountersCost, CostError> {
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
        median_ms: analyze::robust::median(times.iter().copied()).expect("repeat >= 1"),
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
