//! The job verdict (DESIGN 4.7, issue 28): "my job is slow: is it a host or the network, and
//! which part?", judged from a [`JobEvidence`] with no I/O.
//!
//! 1. The hosts ([`hosts`]): each host's own check says which of the job's paths (RNIC to
//!    the endpoint its data lives in) are abnormal and why; a diagnosis on a path the job
//!    does not cross is a fault, but not the job's.
//! 2. One tomography ([`paths`]) over the hosts' paths and the pairs' network parts names the
//!    elements that explain every abnormal observation: a host's path or a cable. A network
//!    part measured beside an abnormal or unjudged host part is set aside (host noise makes a
//!    probe look like the network's fault: R-Pingmesh's stated weakness).
//! 3. The switch ports ([`ports`]): errors and link downs on the job's routes name their
//!    cable on their own; waits far above the same ports before the window and the ports off
//!    the routes on many ports are other jobs' traffic, not a fault.
//! 4. The what-if, when given, says whether the job's own pattern or mapping explains a
//!    healthy infrastructure's time.
//! 5. The verdict ([`culprits`]): host, network, both; neither only when every host and
//!    every cable of the job's routes was judged; inconclusive otherwise.

mod culprits;
pub mod hosts;
pub mod paths;
pub mod ports;

use model::job::{JobEvidence, JobHostSummary, JobReport};

pub use culprits::{BACKGROUND_MIN_PORTS, SCORE_CANDIDATES, SCORE_COUNTERS, SCORE_PROVEN};

/// Judges a job.
pub fn judge(evidence: &JobEvidence) -> JobReport {
    let hosts = hosts::read(&evidence.hosts);
    let tomography = paths::run(&hosts.segments, &evidence.pairs);
    let ports = ports::judge(&evidence.ports);
    let judged = culprits::Judged::new(evidence, &hosts, &tomography, &ports);
    let (culprits, not_the_jobs) = judged.culprits();
    let mut not_judged = hosts.not_judged.clone();
    not_judged.extend(tomography.not_judged.iter().cloned());
    not_judged.extend(judged.unjudged_cables());
    let verdict = culprits::verdict(&culprits, &not_judged);
    JobReport {
        job: evidence.job.clone(),
        nodes: evidence.nodes.clone(),
        verdict,
        summary: culprits::summary(verdict, &culprits, &not_judged),
        culprits,
        pairs: evidence.pairs.clone(),
        not_judged,
        simulated: evidence.simulated,
        not_the_jobs,
        hosts: evidence
            .hosts
            .iter()
            .map(|h| JobHostSummary {
                host: h.host.clone(),
                healthy: h.report.as_ref().map(|r| r.healthy),
                causes: h.report.as_ref().map_or(Vec::new(), |r| {
                    r.diagnoses
                        .iter()
                        .map(|d| d.cause.as_str().to_string())
                        .collect()
                }),
            })
            .collect(),
        ports: ports
            .iter()
            .filter(|p| p.port.on_job_route || p.state != ports::PortState::Normal)
            .map(|p| p.summary())
            .collect(),
        what_if: evidence.what_if.clone(),
        follow_ups: Vec::new(),
    }
}
