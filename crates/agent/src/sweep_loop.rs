//! The one switch-sampler loop, run by the agent's sampler ([`crate::switch_sampler`], its
//! switches from `[fabric]`) and by `hostping fabric sample` (its switches from its flags):
//! sweeps on a cadence ([`pace`]), each handed to the [`Sweeper`] that took it (the agent
//! stores and publishes it, `fabric sample` prints it) and, with an [`Upload`], posted to
//! the collector; between sweeps, the ports the collector asks for are read as asked
//! ([`read_now`]), else the sweeper waits for its next sweep or its stop.

use fleet_api::sweep::{PortUpload, SweepUpload};
use fleet_api::sweep_client::{ReadNow, Sender, READ_GAP};
use model::switch_port::parse_guid;
use rdma::subnet::pace::{pace, Paced, Sweeping, Swept};
use rdma::subnet::sample::{SamplePort, Sweep};
use rdma::subnet::{guid_text, Subnet};
use std::time::{Duration, Instant};

/// What a loop does around its sweeps: where its switches come from, what becomes of a
/// sweep, and when it stops.
pub trait Sweeper {
    /// What ends the loop.
    type Error;

    /// One sweep of every port, handled (printed, stored); `None` when none was taken
    /// and the sweeper has dealt with why (the agent logs it and reopens its port).
    fn sweep(&mut self) -> Result<Option<Sweep>, Self::Error>;

    /// One read of `ports` (some of [`Sweeper::ports`]) that the collector asked for;
    /// `None` when none was taken.
    fn read(&mut self, ports: &[SamplePort]) -> Result<Option<Sweep>, Self::Error>;

    /// The ports this sampler sweeps.
    fn ports(&self) -> &[SamplePort];

    /// The subnet, for the switches' names, when the sampler knows it.
    fn subnet(&self) -> Option<&Subnet>;

    /// When the schedule starts again after the last sweep (a port opened during it).
    fn restart_from(&mut self) -> Option<Instant> {
        None
    }

    /// Whether the loop ends before the sweep due at `next` (a count or a duration).
    fn done(&mut self, next: Instant) -> bool;

    /// Waits until `until`, or less when stopped.
    fn sleep(&mut self, until: Instant);

    /// Whether the sampler was told to stop.
    fn stopped(&self) -> bool;
}

/// Where sweeps are posted: the sampler's name at the collector, its sender, and the
/// sampler's log line writer.
pub struct Upload {
    /// The HOST of the sampler's line in the collector's tokens file.
    pub name: String,
    /// The queue posting to the collector.
    pub sender: Sender,
    /// Writes one line where the sampler logs.
    pub log: fn(&str),
}

impl Upload {
    /// Queues `sweep` for the collector.
    fn post(&self, sweep: &Sweep, subnet: Option<&Subnet>) {
        let body = serde_json::to_vec(&to_upload(&self.name, sweep, subnet))
            .expect("a sweep upload is strings and numbers, which serialize");
        self.sender.send(sweep.sweep, body);
    }
}

/// Sweeps every `period` until the sweeper is done or stopped; `upload` posts each sweep
/// and each read asked for.
pub fn run<S: Sweeper>(
    period: Duration,
    sweeper: &mut S,
    upload: Option<&Upload>,
) -> Result<Paced, S::Error> {
    pace(period, &mut Looping { sweeper, upload })
}

/// The loop on [`pace`]'s schedule.
struct Looping<'a, S> {
    sweeper: &'a mut S,
    upload: Option<&'a Upload>,
}

impl<S: Sweeper> Sweeping for Looping<'_, S> {
    type Error = S::Error;

    fn sweep(&mut self) -> Result<Swept, S::Error> {
        if let Some(sweep) = self.sweeper.sweep()? {
            if let Some(upload) = self.upload {
                upload.post(&sweep, self.sweeper.subnet());
            }
        }
        Ok(Swept {
            restart_from: self.sweeper.restart_from(),
        })
    }

    fn wait_until(&mut self, next: Instant) -> Result<bool, S::Error> {
        if self.sweeper.done(next) || self.sweeper.stopped() {
            return Ok(true);
        }
        match self.upload {
            // Until the next sweep, the ports the collector asks for are read as asked.
            Some(upload) => loop {
                let asked = upload.sender.wait_for_reads(next);
                if asked.is_empty() || self.sweeper.stopped() {
                    break;
                }
                read_now(self.sweeper, &asked, upload)?;
            },
            None => self.sweeper.sleep(next),
        }
        Ok(self.sweeper.stopped())
    }
}

/// Reads the ports of `asked` that are this sampler's twice, [`READ_GAP`] apart, and posts
/// both reads (sweeps of those ports only), so that the collector has their counters over
/// an interval begun after it asked. A port that is not the sampler's is left to the
/// sampler it belongs to.
fn read_now<S: Sweeper>(
    sweeper: &mut S,
    asked: &[ReadNow],
    upload: &Upload,
) -> Result<(), S::Error> {
    let wanted: Vec<SamplePort> = sweeper
        .ports()
        .iter()
        .filter(|p| {
            asked
                .iter()
                .any(|a| a.port == p.port && parse_guid(&a.guid) == Some(p.guid))
        })
        .copied()
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let mut numbers = Vec::new();
    for read in 0..2 {
        if read == 1 {
            std::thread::sleep(READ_GAP);
        }
        let Some(sweep) = sweeper.read(&wanted)? else {
            return Ok(());
        };
        numbers.push(sweep.sweep);
        upload.post(&sweep, sweeper.subnet());
    }
    (upload.log)(&format!(
        "the collector asked for {} port(s) now: read in sweeps {} and {}, {} s apart",
        wanted.len(),
        numbers[0],
        numbers[1],
        READ_GAP.as_secs_f64()
    ));
    Ok(())
}

/// A sweep as the collector takes it: DESIGN 4.4's, with the sampler and each switch's
/// description where the subnet names it.
pub fn to_upload(sampler: &str, sweep: &Sweep, subnet: Option<&Subnet>) -> SweepUpload {
    SweepUpload {
        sampler: sampler.to_owned(),
        sweep: sweep.sweep,
        start_unix_ns: sweep.start_unix_ns,
        spread_us: sweep.spread_us,
        ports: sweep
            .ports
            .iter()
            .map(|p| PortUpload {
                guid: guid_text(p.guid),
                switch: subnet
                    .and_then(|s| s.node(p.guid))
                    .map(|n| n.description.clone())
                    .filter(|d| !d.is_empty()),
                lid: p.lid,
                port: p.port,
                at_unix_ns: p.at_unix_ns,
                counters: p.counters,
                error: p.error.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma::subnet::sample::PortSample;
    use rdma::subnet::topofile;

    const TWO_SWITCHES: &str = include_str!("../../rdma/testdata/subnet/two-switches.topo");

    #[test]
    fn an_upload_names_the_switches_the_subnet_knows_and_passes_the_contract() {
        let subnet = topofile::parse(TWO_SWITCHES, "two-switches.topo").unwrap();
        let leaf = subnet
            .nodes
            .iter()
            .find(|n| n.description == "leaf-a")
            .unwrap();
        let port = |guid: u64, port: u8| PortSample {
            guid,
            lid: 1,
            port,
            at_unix_ns: 13,
            counters: None,
            saturated: vec![],
            error: Some("no response".into()),
        };
        let sweep = Sweep {
            sweep: 3,
            start_unix_ns: 11,
            spread_us: 12.5,
            ports: vec![port(leaf.guid, 7), port(0x42, 1)],
        };
        let named = to_upload("node001", &sweep, Some(&subnet));
        assert_eq!(named.ports[0].switch.as_deref(), Some("leaf-a"));
        assert_eq!(named.ports[1].switch, None);
        assert_eq!(named.ports[0].error.as_deref(), Some("no response"));
        assert_eq!(to_upload("node001", &sweep, None).ports[0].switch, None);
        let body = serde_json::to_vec(&named).unwrap();
        assert_eq!(fleet_api::sweep::parse(&body).unwrap(), named);
    }
}
