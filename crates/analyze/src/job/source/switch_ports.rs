//! The switch ports' counters as an evidence source ([`super::super::ports`] judges them).

use model::job::{JobEvidence, JobReport};

use super::{Reading, Source};
use crate::job::culprits::Judged;
use crate::job::ports::{judge, PortState};

/// The switch ports' counters, registered in [`crate::job::SOURCES`]: a port's errors or
/// link downs accuse its cable on their own, before the tomography; waits far above their
/// references are other jobs' traffic.
pub struct SwitchPorts;

impl Source for SwitchPorts {
    fn name(&self) -> &'static str {
        "switch ports"
    }

    fn read<'a>(&self, evidence: &'a JobEvidence, reading: &mut Reading<'a>) {
        reading.ports = judge(&evidence.ports);
        reading.accused.extend(
            reading
                .ports
                .iter()
                .filter(|p| matches!(p.state, PortState::Errors | PortState::Down))
                .map(|p| p.port.cable.clone()),
        );
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.ports = judged
            .ports()
            .iter()
            .filter(|p| p.port.on_job_route || p.state != PortState::Normal)
            .map(|p| p.summary())
            .collect();
    }
}
