//! Idle or busy: which probe plan and which inference rules a run gets (Hostping 4.2). The
//! hardware monitor calls a host busy when any RNIC carries more than Thp_low of its line
//! rate or any GPU is running work (Hostping 5: "Thp_low is 5 % of the RNIC line rate, and
//! all GPUs are idle").

use model::{HostSnapshot, HostTopology, Mode, Thresholds};

/// How the mode of a run is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModeChoice {
    /// From the monitors ([`mode_from_snapshot`]).
    #[default]
    Auto,
    /// Full mesh, judged against the baseline.
    Idle,
    /// Affinitive paths only, judged relatively.
    Busy,
}

impl ModeChoice {
    /// The mode of a run that starts with `snapshot`.
    pub fn resolve(self, host: &HostTopology, snapshot: &HostSnapshot, th: &Thresholds) -> Mode {
        match self {
            ModeChoice::Auto => mode_from_snapshot(host, snapshot, th),
            ModeChoice::Idle => Mode::Idle,
            ModeChoice::Busy => Mode::Busy,
        }
    }
}

/// The mode Hostping's hardware monitor would pick from a snapshot (Hostping 4.2, 5). An
/// RNIC or GPU the monitor could not read does not make the host busy.
pub fn mode_from_snapshot(host: &HostTopology, snapshot: &HostSnapshot, th: &Thresholds) -> Mode {
    let rnic_busy = host.rnics().any(|r| {
        let line = r.rnic().map_or(0.0, |n| n.line_rate_gbps);
        snapshot
            .rnic(&r.id)
            .and_then(|a| a.throughput_gbps)
            .is_some_and(|t| !th.rnic_idle(t, line))
    });
    let gpu_busy = snapshot.gpus.iter().any(|g| g.busy == Some(true));
    if rnic_busy || gpu_busy {
        Mode::Busy
    } else {
        Mode::Idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{GpuActivity, RnicActivity};

    fn with(rnic0_gbps: Option<f64>, gpu0_busy: Option<bool>) -> HostSnapshot {
        HostSnapshot {
            rnics: vec![RnicActivity {
                id: "rnic0".into(),
                throughput_gbps: rnic0_gbps,
                tx_pause_ratio: None,
                drops: None,
            }],
            gpus: vec![GpuActivity {
                id: "gpu0".into(),
                busy: gpu0_busy,
            }],
            ..HostSnapshot::default()
        }
    }

    #[test]
    fn thp_low_and_gpu_activity_decide_the_mode() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let th = Thresholds::default();
        let mode = |s: &HostSnapshot| mode_from_snapshot(&host, s, &th);
        // Thp_low is 5 % of 200 Gb/s.
        assert_eq!(mode(&with(Some(5.0), Some(false))), Mode::Idle);
        assert_eq!(mode(&with(Some(10.5), Some(false))), Mode::Busy);
        assert_eq!(mode(&with(Some(0.0), Some(true))), Mode::Busy);
        // Unread is not busy.
        assert_eq!(mode(&with(None, None)), Mode::Idle);
        assert_eq!(
            ModeChoice::Busy.resolve(&host, &with(None, None), &th),
            Mode::Busy
        );
        assert_eq!(
            ModeChoice::Idle.resolve(&host, &with(Some(150.0), None), &th),
            Mode::Idle
        );
    }
}
