//! The verdict's reads of chosen switch ports now (issue 28 section 2, `probe=1`): the ends
//! of the cables the pairs could not tell apart and of the job's route cables no sampler's
//! counters covered in the window ([`verdict::follow_up::plan_port_reads`], planned by the
//! verdict's pipeline).
//!
//! The collector cannot reach the switches; the samplers can, and none listens on a port.
//! So each port is asked of the sampler that read it last (the Delegator gave it that
//! port: `fabric_port_last`) on the board ([`crate::fabric::board`], a table every
//! collector on the database shares); that sampler's next `POST /api/fabric/sweeps`, to
//! whichever collector, is answered with the ports in `read_now`, and it reads them
//! twice [`READ_GAP`] apart and posts both reads. The verdict waits, two of that sampler's
//! periods and the reads ([`wait_for`], at most [`PORT_READ_WAIT`]), for deltas whose
//! interval began after it asked (by the samplers' clocks, which the window's reads trust
//! too), and adds them to the port's counters in the
//! window (or makes them its counters, when it had none there). A port no sampler covers,
//! or whose read did not arrive, is said so in the follow-up and stays unjudged.

use super::routes::JobRoutes;
use crate::fabric::board::{self, AskError, ReadNow, READ_GAP};
use crate::fabric::ports::PortSums;
use crate::fabric::store::{self, Owner};
use crate::mesh::Access;
use model::job::{FollowUp, JobEvidence, JobPort};
use model::switch_port::{guid_text, SwitchPortCounters};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};
use verdict::follow_up::PortRead;

/// The longest the verdict waits for a sampler's reads: a sampler is handed the request
/// at its next post, so one sweeping at 1 Hz (`fabric sample`'s default) answers within
/// about two seconds (its next sweep, then [`READ_GAP`]); one sweeping less often than
/// every 30 s may not, and its ports are said not read.
pub const PORT_READ_WAIT: Duration = Duration::from_secs(60);
/// Beyond its reads, what a sampler's answer may take: the database's polls ([`POLL`]),
/// the post, the MADs.
const SLACK: Duration = Duration::from_secs(2);

/// How long to wait for a sampler sweeping every `period` (`None`: not known): two
/// periods (a post may just have left when the request came), its two reads, and
/// [`SLACK`]; never past [`PORT_READ_WAIT`].
pub fn wait_for(period: Option<Duration>) -> Duration {
    period.map_or(PORT_READ_WAIT, |p| {
        p.saturating_mul(2)
            .saturating_add(READ_GAP + SLACK)
            .min(PORT_READ_WAIT)
    })
}

/// How often the database is read while waiting.
const POLL: Duration = Duration::from_millis(500);

/// Reads the ports of `reads` (chosen by `plan_port_reads`) and adds them to `evidence`;
/// returns what was read (or could not be) and why, one follow-up per cable.
pub async fn read_ports(
    access: &Access,
    routes: &JobRoutes,
    reads: &[PortRead],
    evidence: &mut JobEvidence,
) -> Vec<FollowUp> {
    let mut follow_ups = Vec::new();
    if reads.is_empty() {
        return follow_ups;
    }
    let outcomes = match read(access, reads).await {
        Ok(outcomes) => outcomes,
        Err(why) => {
            let why = format!("not run: {why}");
            follow_ups.extend(reads.iter().map(|r| follow_up(r, why.clone())));
            return follow_ups;
        }
    };
    for read in reads {
        let mut said = Vec::new();
        let mut by: Vec<&str> = Vec::new();
        for port in &read.ports {
            let outcome = &outcomes[port];
            if let Outcome::Read { sampler, sums } = outcome {
                add(evidence, routes, port, sums);
                if !by.contains(&sampler.as_str()) {
                    by.push(sampler);
                }
            }
            said.push(format!("{port} {}", outcome.words()));
        }
        let said = said.join("; ");
        let outcome = match by.as_slice() {
            [] => said,
            samplers => format!("read now by sampler {}: {said}", samplers.join(", ")),
        };
        follow_ups.push(follow_up(read, outcome));
    }
    follow_ups
}

fn follow_up(read: &PortRead, outcome: String) -> FollowUp {
    FollowUp {
        kind: "ports".to_string(),
        target: read.ports.join(", "),
        why: read.why.clone(),
        outcome,
        round: None,
    }
}

/// What became of one port.
enum Outcome {
    /// Read by `sampler` after the request: its deltas.
    Read { sampler: String, sums: PortSums },
    /// No sampler has posted it by its switch's name.
    Unowned,
    /// Asked of its sampler, but no read arrived in time.
    Late {
        owner: Owner,
        asked_ns: i64,
        waited: Duration,
    },
    /// The board refused the request: it is full.
    Refused(String),
}

impl Outcome {
    fn words(&self) -> String {
        match self {
            Outcome::Read { sums, .. } => counted(sums),
            Outcome::Unowned => "not read: no sampler has posted this port (by its switch's \
                                 name), so its counters are not known"
                .to_string(),
            Outcome::Late {
                owner,
                asked_ns,
                waited,
            } => format!(
                "asked of sampler {}, but no read arrived within {:.0} s (its last read of the \
                 port was {:.0} s before the request): not judged",
                owner.sampler,
                waited.as_secs_f64(),
                (asked_ns - owner.at_unix_ns).max(0) as f64 / 1e9
            ),
            Outcome::Refused(why) => format!("not read: {why}"),
        }
    }
}

/// Asks each port of `reads` of its sampler and waits for the reads; each port's outcome,
/// or why none was asked (the database).
async fn read(access: &Access, reads: &[PortRead]) -> Result<BTreeMap<String, Outcome>, String> {
    let mut client = access
        .pool
        .get()
        .await
        .map_err(|e| format!("database: {e}"))?;
    let labels: Vec<&String> = reads.iter().flat_map(|r| &r.ports).collect();
    // A label of the fabric is `<switch>/<port>` (a switch's description may hold '/').
    let names: Vec<(String, u8)> = labels
        .iter()
        .filter_map(|l| {
            let (switch, port) = l.rsplit_once('/')?;
            Some((switch.to_string(), port.parse().ok()?))
        })
        .collect();
    let owners = store::owners(&**client, &names)
        .await
        .map_err(|e| format!("database: {}", crate::server_words(&e)))?;
    let owner_of = |label: &str| {
        owners
            .iter()
            .find(|o| format!("{}/{}", o.switch, o.port) == label)
    };
    let asked_ns = model::time::unix_ns(SystemTime::now());
    let mut outcomes = BTreeMap::new();
    let mut by_sampler: BTreeMap<&str, Vec<ReadNow>> = BTreeMap::new();
    let mut waiting: Vec<(String, Owner)> = Vec::new();
    for label in labels {
        let Some(owner) = owner_of(label) else {
            outcomes.insert(label.clone(), Outcome::Unowned);
            continue;
        };
        by_sampler.entry(&owner.sampler).or_default().push(ReadNow {
            guid: guid_text(owner.guid),
            port: owner.port,
        });
        waiting.push((label.clone(), owner.clone()));
    }
    let samplers: Vec<&str> = by_sampler.keys().copied().collect();
    let periods = store::periods(&**client, &samplers)
        .await
        .map_err(|e| format!("database: {}", crate::server_words(&e)))?;
    let waits: BTreeMap<&str, Duration> = samplers
        .iter()
        .map(|&s| {
            let period = periods.iter().find(|(p, _)| p == s).map(|&(_, d)| d);
            (s, wait_for(period))
        })
        .collect();
    for (sampler, ports) in &by_sampler {
        match board::ask(&mut client, sampler, ports, waits[sampler]).await {
            Ok(()) => {}
            Err(AskError::Database(e)) => {
                return Err(format!("database: {}", crate::server_words(&e)))
            }
            Err(full @ AskError::Full) => waiting.retain(|(label, owner)| {
                let refused = owner.sampler == *sampler;
                if refused {
                    outcomes.insert(label.clone(), Outcome::Refused(full.to_string()));
                }
                !refused
            }),
        }
    }
    let started = Instant::now();
    while !waiting.is_empty() {
        let asked: Vec<(String, u64, u8)> = waiting
            .iter()
            .map(|(_, o)| (o.sampler.clone(), o.guid, o.port))
            .collect();
        let fresh = store::fresh(&**client, &asked, asked_ns)
            .await
            .map_err(|e| format!("database: {}", crate::server_words(&e)))?;
        let waited = started.elapsed();
        waiting.retain(|(label, owner)| {
            let late = waited >= waits[owner.sampler.as_str()];
            let sums = fresh.iter().find(|s| {
                s.sampler == owner.sampler && s.guid == owner.guid && s.port == owner.port
            });
            // Done when the reads span the gap the sampler leaves between its two; at the
            // deadline, whatever began after the request is still a read of it.
            match sums {
                Some(s) if late || s.interval_ns >= READ_GAP.as_nanos() as u64 => {
                    outcomes.insert(
                        label.clone(),
                        Outcome::Read {
                            sampler: owner.sampler.clone(),
                            sums: s.clone(),
                        },
                    );
                    false
                }
                _ if late => {
                    outcomes.insert(
                        label.clone(),
                        Outcome::Late {
                            owner: owner.clone(),
                            asked_ns,
                            waited: waits[owner.sampler.as_str()],
                        },
                    );
                    false
                }
                _ => true,
            }
        });
        if !waiting.is_empty() {
            tokio::time::sleep(POLL).await;
        }
    }
    Ok(outcomes)
}

/// A read's counters in words: the errors the verdict judges a port by.
fn counted(sums: &PortSums) -> String {
    format!(
        "{} in {:.1} s",
        SwitchPortCounters::from_values(sums.deltas).error_words(),
        sums.interval_ns as f64 / 1e9
    )
}

/// Adds the read of `port` to its counters in the window, or makes it its counters when it
/// had none there.
fn add(evidence: &mut JobEvidence, routes: &JobRoutes, port: &str, sums: &PortSums) {
    let read = SwitchPortCounters::from_values(sums.deltas);
    let seconds = sums.interval_ns as f64 / 1e9;
    match evidence.ports.iter_mut().find(|p| p.port == port) {
        Some(p) => {
            p.during += read;
            p.during_s += seconds;
            p.read_now_s += seconds;
        }
        None => evidence.ports.push(JobPort {
            port: port.to_string(),
            cable: routes.cable_of(port),
            on_job_route: routes.on_route(port),
            during: read,
            during_s: seconds,
            before: None,
            before_s: 0.0,
            read_now_s: seconds,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_is_waited_for_two_periods_and_its_reads_never_past_the_bound() {
        let s = Duration::from_secs;
        // 1 Hz: 2 s, the reads' second, and the slack.
        assert_eq!(wait_for(Some(s(1))), s(5));
        assert_eq!(wait_for(Some(s(20))), s(43));
        assert_eq!(wait_for(Some(s(40))), PORT_READ_WAIT);
        assert_eq!(wait_for(None), PORT_READ_WAIT);
        assert_eq!(wait_for(Some(Duration::MAX)), PORT_READ_WAIT);
    }
}
