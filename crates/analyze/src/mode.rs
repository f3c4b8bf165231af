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
    if busy_because(host, snapshot, th).is_empty() {
        Mode::Idle
    } else {
        Mode::Busy
    }
}

/// What makes the host busy in `snapshot`, for people: each RNIC above Thp_low with the
/// traffic it carries, and each GPU running work. Empty on an idle host.
pub fn busy_because(host: &HostTopology, snapshot: &HostSnapshot, th: &Thresholds) -> Vec<String> {
    let rnics = host.rnics().filter_map(|r| {
        let line = r.rnic().map_or(0.0, |n| n.line_rate_gbps);
        let carried = snapshot.rnic(&r.id).and_then(|a| a.throughput_gbps)?;
        (!th.rnic_idle(carried, line)).then(|| {
            format!(
                "{} carries {carried:.1} Gb/s of other traffic ({:.0} % of its {line} Gb/s; \
                 idle is at most Thp_low, {:.0} %)",
                r.id,
                100.0 * carried / line,
                100.0 * th.thp_low
            )
        })
    });
    let gpus = snapshot
        .gpus
        .iter()
        .filter(|g| g.busy == Some(true))
        .map(|g| format!("{} is running work", g.id));
    rnics.chain(gpus).collect()
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
        // And the words name what made it busy.
        let why = |s: &HostSnapshot| busy_because(&host, s, &th);
        assert!(why(&with(Some(5.0), Some(false))).is_empty());
        assert_eq!(
            why(&with(Some(150.0), Some(true))),
            [
                "rnic0 carries 150.0 Gb/s of other traffic (75 % of its 200 Gb/s; idle is at \
                 most Thp_low, 5 %)",
                "gpu0 is running work"
            ]
        );
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
