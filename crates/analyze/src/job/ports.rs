//! What the switch ports on a job's routes counted over its window: errors, link downs and
//! waits, each against the same port before the window and against ports off the routes.

use model::job::{JobPort, JobPortSummary};
use model::switch_port::SwitchPortCounters;

/// Errors in a window at or past which a port is in error: `ibqueryerrors`' default
/// threshold for SymbolErrorCounter, PortRcvErrors and PortXmitDiscards (infiniband-diags,
/// `error_thresholds`).
pub const ERRORS_TH: u64 = 10;

/// A port waits for credits this many times as often as before the window before it counts
/// as congested.
pub const WAIT_FACTOR: f64 = 4.0;

/// A port's state over the window.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PortState {
    /// Nothing past a threshold.
    Normal,
    /// Symbol errors, receive errors or discards at or past [`ERRORS_TH`].
    Errors,
    /// The link went down during the window (LinkDownedCounter rose).
    Down,
    /// It waited for credits far more than its references.
    Congested,
}

impl PortState {
    fn as_str(self) -> &'static str {
        match self {
            PortState::Normal => "normal",
            PortState::Errors => "errors",
            PortState::Down => "down",
            PortState::Congested => "congested",
        }
    }
}

/// One port judged.
#[derive(Clone, Debug)]
pub struct JudgedPort<'a> {
    /// The evidence.
    pub port: &'a JobPort,
    /// Its state.
    pub state: PortState,
    /// Errors (symbol, receive, discards) in the window.
    pub errors: u64,
    /// The same before the window, scaled to the window's length; `None` when not read.
    pub errors_before: Option<f64>,
    /// XmitWait ticks a second in the window.
    pub wait_per_s: f64,
}

impl JudgedPort<'_> {
    /// The port in the report.
    pub fn summary(&self) -> JobPortSummary {
        JobPortSummary {
            port: self.port.port.clone(),
            on_job_route: self.port.on_job_route,
            state: self.state.as_str().to_string(),
            errors_per_s: self.errors as f64 / self.port.during_s.max(f64::MIN_POSITIVE),
            xmit_wait_per_s: self.wait_per_s,
        }
    }

    /// The counters in words, for evidence.
    pub fn words(&self) -> String {
        let mut out = format!("{}: {}", self.port.port, self.port.during.error_words());
        out.push_str(&format!(" in {:.0} s", self.port.during_s));
        // A follow-up read (issue 28 section 2) came after the window: say so, so that
        // nobody reads it as the window's own count.
        let read_now = self.port.read_now_s;
        if read_now > 0.0 && read_now >= self.port.during_s {
            out.push_str(", read now as a follow-up: no sampler read it in the window");
            return out;
        }
        if read_now > 0.0 {
            out.push_str(&format!(
                ", {read_now:.0} s of it read now, after the window, as a follow-up"
            ));
        }
        match self.errors_before {
            Some(before) => out.push_str(&format!(" ({before:.0} in as long before)")),
            None => out.push_str(" (not read before the window)"),
        }
        out
    }
}

fn errors(c: &SwitchPortCounters) -> u64 {
    c.symbol_errors + c.rcv_errors + c.xmit_discards
}

fn per_s(value: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        value as f64 / seconds
    } else {
        0.0
    }
}

/// Waits a second below which a port is never congested: a thousandth of a second's worth of
/// ticks of the slowest tick a switch counts in is noise.
pub const WAIT_FLOOR_PER_S: f64 = 1_000.0;

/// Judges every port. A port is congested when its waits a second pass [`WAIT_FACTOR`] times
/// its own rate before the window (when read) and [`WAIT_FLOOR_PER_S`].
pub fn judge(ports: &[JobPort]) -> Vec<JudgedPort<'_>> {
    ports
        .iter()
        .map(|port| {
            let errors_during = errors(&port.during);
            let scale = if port.before_s > 0.0 {
                port.during_s / port.before_s
            } else {
                0.0
            };
            let errors_before = port.before.map(|b| errors(&b) as f64 * scale);
            let wait_per_s = per_s(port.during.xmit_wait, port.during_s);
            let wait_before = port
                .before
                .map_or(0.0, |b| per_s(b.xmit_wait, port.before_s));
            let reference = (WAIT_FACTOR * wait_before).max(WAIT_FLOOR_PER_S);
            let state = if port.during.link_downed > 0 {
                PortState::Down
            } else if errors_during >= ERRORS_TH {
                PortState::Errors
            } else if wait_per_s > reference {
                PortState::Congested
            } else {
                PortState::Normal
            };
            JudgedPort {
                port,
                state,
                errors: errors_during,
                errors_before,
                wait_per_s,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(name: &str, on: bool, during: SwitchPortCounters) -> JobPort {
        JobPort {
            port: name.into(),
            cable: name.into(),
            on_job_route: on,
            during,
            during_s: 10.0,
            before: None,
            before_s: 0.0,
            read_now_s: 0.0,
        }
    }

    #[test]
    fn errors_down_and_waits_are_told_apart() {
        let busy = SwitchPortCounters {
            xmit_pkts: 1000,
            xmit_wait: 5_000,
            ..Default::default()
        };
        let ports = [
            port(
                "leaf1/1",
                true,
                SwitchPortCounters {
                    symbol_errors: 9,
                    ..busy
                },
            ),
            port(
                "leaf1/2",
                true,
                SwitchPortCounters {
                    rcv_errors: 10,
                    ..busy
                },
            ),
            port(
                "leaf1/3",
                true,
                SwitchPortCounters {
                    link_downed: 1,
                    ..busy
                },
            ),
            port(
                "leaf1/4",
                true,
                SwitchPortCounters {
                    xmit_wait: 200_000,
                    ..busy
                },
            ),
            port("leaf2/1", false, busy),
            port("leaf2/2", false, busy),
        ];
        let states: Vec<PortState> = judge(&ports).iter().map(|p| p.state).collect();
        assert_eq!(
            states,
            [
                PortState::Normal,
                PortState::Errors,
                PortState::Down,
                PortState::Congested,
                PortState::Normal,
                PortState::Normal
            ]
        );
    }

    #[test]
    fn a_port_that_always_waited_as_much_is_not_congested() {
        let during = SwitchPortCounters {
            xmit_pkts: 1000,
            xmit_wait: 200_000,
            ..Default::default()
        };
        let mut p = port("leaf1/4", true, during);
        p.before = Some(during);
        p.before_s = 10.0;
        assert_eq!(judge(&[p])[0].state, PortState::Normal);
    }
}
