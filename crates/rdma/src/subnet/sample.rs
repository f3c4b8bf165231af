//! The switch-port sampler of the LDMS ibfabric paper (`shared/papers/004_ec259f6a0c4ca99b`):
//! one sweep reads the counters of every assigned port, all of them in flight at once
//! through the umad window, timestamps each port when its answer arrives, and measures the
//! sweep's spread, "the time from the start of the first query to the end of the last".
//!
//! Per switch (by LID) ClassPortInfo is asked once and remembered, and decides what a port
//! costs: where it offers PortCountersExtended with the additional counters (CapabilityMask2
//! bit 1, as current switches do) one PortCountersExtended reads everything at 64 bits;
//! where it offers PortCountersExtended without them (ibsim) the data counters come from
//! there and PortCounters still gives the error counters and PortXmitWait; where it offers
//! neither, PortCounters gives everything, and a 32-bit counter that has stopped at its
//! maximum is named in the sample's `saturated` list (IBA 16.1.3.5: counters stop rather
//! than wrap, so a delta across it undercounts).

use crate::mad::perf::{
    self, dwords_to_bytes, perf_data, ClassPortInfoRepr, ExtendedErrorsRepr,
    PortCountersExtendedRepr, PortCountersRepr,
};
use crate::mad::{MadPacket, MAD_LEN};
use crate::umad::rpc::{exchange, exchange_in_order, Failure, Request, Settings};
use crate::umad::{Address, Agent, Port, UmadError};
pub use model::switch_port::SwitchPortCounters;
use serde::Serialize;
use std::collections::HashMap;
use std::time::{Instant, SystemTime};

/// One switch port to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SamplePort {
    /// The switch's node GUID.
    pub guid: u64,
    /// The switch's LID (its port 0's).
    pub lid: u16,
    /// The port number.
    pub port: u8,
}

/// One port in one sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortSample {
    /// The switch GUID (`0x` and 16 hex digits).
    #[serde(serialize_with = "guid")]
    pub guid: u64,
    /// The switch LID.
    pub lid: u16,
    /// The port.
    pub port: u8,
    /// When its answer arrived, ns since the Unix epoch.
    pub at_unix_ns: u64,
    /// The counters; `None` when the port did not answer.
    pub counters: Option<SwitchPortCounters>,
    /// 32-bit counters that have stopped at their maximum.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub saturated: Vec<&'static str>,
    /// Why there are no counters.
    pub error: Option<String>,
}

fn guid<S: serde::Serializer>(g: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&super::guid_text(*g))
}

/// One sweep over every assigned port (a JSON line of `hostping fabric sample`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// The sweep's number, from 1.
    pub sweep: u64,
    /// When its first query left, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// From the first query's start to the last answer, us.
    pub spread_us: f64,
    /// Every port, in the order assigned.
    pub ports: Vec<PortSample>,
}

/// Now, in ns since the Unix epoch, as the samples carry it (DESIGN 4.4's `start_unix_ns`):
/// `model::time` converts; a clock before the epoch reads 0, as it always did here.
fn unix_ns() -> u64 {
    u64::try_from(model::time::unix_ns(SystemTime::now())).unwrap_or(0)
}

/// What a switch's ClassPortInfo said, or why it said nothing.
type Capabilities = Result<ClassPortInfoRepr, String>;

/// An answer and when it arrived (ns since the Unix epoch).
type Timed = (u64, Result<[u8; MAD_LEN], Failure>);

/// Samples switch ports through one umad port.
pub struct Sampler {
    agent: Agent,
    settings: Settings,
    capabilities: HashMap<u16, Capabilities>,
    sweeps: u64,
}

impl Sampler {
    /// A sampler sending on `agent` (registered for class 0x04) with `settings`.
    pub fn new(agent: Agent, settings: Settings) -> Sampler {
        Sampler {
            agent,
            settings,
            capabilities: HashMap::new(),
            sweeps: 0,
        }
    }

    fn get(&self, lid: u16, attribute: u16, port: u8) -> Request {
        Request {
            agent: self.agent,
            to: Address::gsi(lid),
            mad: perf::get_request(attribute, port, 0),
        }
    }

    /// Asks ClassPortInfo of the switches in `ports` not asked yet (a switch that did not
    /// answer is asked again next sweep).
    fn learn(&mut self, port: &mut Port, ports: &[SamplePort]) -> Result<(), UmadError> {
        let mut lids: Vec<u16> = ports
            .iter()
            .map(|p| p.lid)
            .filter(|l| !matches!(self.capabilities.get(l), Some(Ok(_))))
            .collect();
        lids.sort_unstable();
        lids.dedup();
        let requests: Vec<Request> = lids
            .iter()
            .map(|&l| self.get(l, perf::attr::CLASS_PORT_INFO, 0))
            .collect();
        let answers = exchange_in_order(port, &requests, self.settings)?;
        for (lid, answer) in lids.into_iter().zip(answers) {
            let caps = answer.map_err(|e| e.to_string()).and_then(|b| {
                data(&b).and_then(|d| ClassPortInfoRepr::parse(d).map_err(|e| e.to_string()))
            });
            self.capabilities.insert(lid, caps);
        }
        Ok(())
    }

    /// One sweep over `ports`.
    pub fn sweep(&mut self, port: &mut Port, ports: &[SamplePort]) -> Result<Sweep, UmadError> {
        let started = Instant::now();
        let start_unix_ns = unix_ns();
        self.learn(port, ports)?;
        // Requests: what each port's switch offers (see `Reading`); `owner[k]`: the port of
        // request k and the attribute it asks.
        let mut requests = Vec::new();
        let mut owner = Vec::new();
        let mut readings = vec![None; ports.len()];
        for (i, p) in ports.iter().enumerate() {
            if let Some(Ok(caps)) = self.capabilities.get(&p.lid) {
                let reading = Reading::of(caps);
                readings[i] = Some(reading);
                for &attribute in reading.attributes() {
                    requests.push(self.get(p.lid, attribute, p.port));
                    owner.push((i, attribute));
                }
            }
        }
        let mut answers: Vec<Option<Timed>> = vec![None; requests.len()];
        exchange(port, &requests, self.settings, |i, r| {
            answers[i] = Some((unix_ns(), r))
        })?;
        let spread_us = started.elapsed().as_secs_f64() * 1e6;
        let mut samples: Vec<PortSample> = ports
            .iter()
            .map(|p| PortSample {
                guid: p.guid,
                lid: p.lid,
                port: p.port,
                at_unix_ns: 0,
                counters: None,
                saturated: Vec::new(),
                error: match self.capabilities.get(&p.lid) {
                    Some(Err(e)) => Some(format!("ClassPortInfo: {e}")),
                    _ => None,
                },
            })
            .collect();
        let mut answered: Vec<Answers> = vec![Answers::default(); ports.len()];
        for (k, answer) in answers.into_iter().enumerate() {
            let (i, attribute) = owner[k];
            let (at, result) = answer.expect("every request ends");
            let s = &mut samples[i];
            s.at_unix_ns = s.at_unix_ns.max(at);
            let parsed = result
                .map_err(|e| e.to_string())
                .and_then(|b| answered[i].take(attribute, data(&b)?));
            if let Err(e) = parsed {
                let what = if attribute == perf::attr::PORT_COUNTERS {
                    "PortCounters"
                } else {
                    "PortCountersExtended"
                };
                s.error.get_or_insert_with(|| format!("{what}: {e}"));
            }
        }
        for ((s, reading), answers) in samples.iter_mut().zip(readings).zip(answered) {
            if s.error.is_some() {
                continue;
            }
            if let Some((counters, saturated)) = reading.and_then(|r| answers.counters(r)) {
                s.counters = Some(counters);
                s.saturated = saturated;
            }
        }
        self.sweeps += 1;
        Ok(Sweep {
            sweep: self.sweeps,
            start_unix_ns,
            spread_us,
            ports: samples,
        })
    }
}

/// Which attributes a sweep asks of a port, by what its switch's ClassPortInfo offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// PortCounters alone: 32-bit data counters that stop at their maximum.
    Narrow,
    /// PortCountersExtended for the 64-bit data counters, PortCounters for the error
    /// counters and PortXmitWait, which the extended attribute lacks here.
    NarrowAndWide,
    /// PortCountersExtended alone, with its additional counters: one MAD a port.
    Wide,
}

impl Reading {
    fn of(caps: &ClassPortInfoRepr) -> Reading {
        if caps.has_extended_errors() {
            Reading::Wide
        } else if caps.has_extended_counters() {
            Reading::NarrowAndWide
        } else {
            Reading::Narrow
        }
    }

    fn attributes(self) -> &'static [u16] {
        use perf::attr::{PORT_COUNTERS, PORT_COUNTERS_EXTENDED};
        match self {
            Reading::Narrow => &[PORT_COUNTERS],
            Reading::NarrowAndWide => &[PORT_COUNTERS, PORT_COUNTERS_EXTENDED],
            Reading::Wide => &[PORT_COUNTERS_EXTENDED],
        }
    }
}

/// The parsed answers of one port in one sweep.
#[derive(Debug, Clone, Copy, Default)]
struct Answers {
    narrow: Option<PortCountersRepr>,
    wide: Option<(PortCountersExtendedRepr, ExtendedErrorsRepr)>,
}

impl Answers {
    /// Keeps the answer to `attribute`.
    fn take(&mut self, attribute: u16, data: &[u8]) -> Result<(), String> {
        if attribute == perf::attr::PORT_COUNTERS {
            self.narrow = Some(PortCountersRepr::parse(data).map_err(|e| e.to_string())?);
        } else {
            let wide = PortCountersExtendedRepr::parse(data).map_err(|e| e.to_string())?;
            // Zero where the switch lacks them; `counters` reads them only for `Wide`.
            let errors = ExtendedErrorsRepr::parse(data).unwrap_or_default();
            self.wide = Some((wide, errors));
        }
        Ok(())
    }

    /// The port's counters and its saturated 32-bit counters, once every answer `reading`
    /// needs is in.
    fn counters(&self, reading: Reading) -> Option<(SwitchPortCounters, Vec<&'static str>)> {
        let data = |w: &PortCountersExtendedRepr| {
            (
                dwords_to_bytes(w.xmit_data_dwords),
                dwords_to_bytes(w.rcv_data_dwords),
                w.xmit_pkts,
                w.rcv_pkts,
            )
        };
        let from_narrow = |n: &PortCountersRepr| SwitchPortCounters {
            xmit_data_bytes: dwords_to_bytes(u64::from(n.xmit_data_dwords)),
            rcv_data_bytes: dwords_to_bytes(u64::from(n.rcv_data_dwords)),
            xmit_pkts: u64::from(n.xmit_pkts),
            rcv_pkts: u64::from(n.rcv_pkts),
            xmit_wait: u64::from(n.xmit_wait),
            symbol_errors: u64::from(n.symbol_errors),
            link_downed: u64::from(n.link_downed),
            rcv_errors: u64::from(n.rcv_errors),
            xmit_discards: u64::from(n.xmit_discards),
        };
        match reading {
            Reading::Narrow => {
                let n = self.narrow.as_ref()?;
                Some((from_narrow(n), n.saturated()))
            }
            Reading::NarrowAndWide => {
                let (n, (w, _)) = (self.narrow.as_ref()?, self.wide.as_ref()?);
                let mut c = from_narrow(n);
                (c.xmit_data_bytes, c.rcv_data_bytes, c.xmit_pkts, c.rcv_pkts) = data(w);
                let saturated = n.saturated().into_iter().filter(|f| *f == "xmit_wait");
                Some((c, saturated.collect()))
            }
            Reading::Wide => {
                let (w, e) = self.wide.as_ref()?;
                let (xmit_data_bytes, rcv_data_bytes, xmit_pkts, rcv_pkts) = data(w);
                let c = SwitchPortCounters {
                    xmit_data_bytes,
                    rcv_data_bytes,
                    xmit_pkts,
                    rcv_pkts,
                    xmit_wait: e.xmit_wait,
                    symbol_errors: e.symbol_errors,
                    link_downed: e.link_downed,
                    rcv_errors: e.rcv_errors,
                    xmit_discards: e.xmit_discards,
                };
                Some((c, Vec::new()))
            }
        }
    }
}

/// The attribute data of a PerfMgt answer, or why the answer is not one.
fn data(bytes: &[u8; MAD_LEN]) -> Result<&[u8], String> {
    let status = MadPacket::new_unchecked(&bytes[..]).status();
    if status & 0x7fff != 0 {
        return Err(crate::mad::MadStatus::from_word(status).to_string());
    }
    perf_data(&bytes[..]).map_err(|e| e.to_string())
}

/// Every switch port with a link in `subnet`, switch by switch: what a sampler with no
/// port list of its own samples.
pub fn switch_ports(subnet: &super::Subnet) -> Vec<SamplePort> {
    let mut ports = Vec::new();
    for n in subnet
        .nodes
        .iter()
        .filter(|n| n.kind == super::NodeKind::Switch)
    {
        let Some(lid) = n.lid() else { continue };
        for port in 1..=n.ports {
            if subnet.peer(super::End { guid: n.guid, port }).is_some() {
                ports.push(SamplePort {
                    guid: n.guid,
                    lid,
                    port,
                });
            }
        }
    }
    ports
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(mask: u16, mask2: u32) -> ClassPortInfoRepr {
        ClassPortInfoRepr {
            class_version: 1,
            capability_mask: mask,
            capability_mask2: mask2,
            resp_time_value: 18,
        }
    }

    /// A PortCountersExtended answer's data with the additional counters filled.
    fn wide_answer() -> [u8; 192] {
        let mut data = [0u8; 192];
        PortCountersExtendedRepr {
            port_select: 7,
            xmit_data_dwords: 5 << 32,
            rcv_data_dwords: 3,
            xmit_pkts: 11,
            rcv_pkts: 13,
            ..Default::default()
        }
        .emit(&mut data);
        ExtendedErrorsRepr {
            symbol_errors: 1 << 40,
            link_downed: 2,
            rcv_errors: 17,
            xmit_discards: 19,
            xmit_wait: 1 << 33,
            ..Default::default()
        }
        .emit(&mut data);
        data
    }

    fn narrow_answer() -> [u8; 192] {
        let mut data = [0u8; 192];
        PortCountersRepr {
            port_select: 7,
            symbol_errors: 7,
            link_downed: 2,
            xmit_data_dwords: u32::MAX,
            xmit_wait: 1234,
            ..Default::default()
        }
        .emit(&mut data);
        data
    }

    #[test]
    fn what_a_port_costs_follows_class_port_info() {
        let ext = ClassPortInfoRepr::EXTENDED_WIDTH;
        let add = ClassPortInfoRepr::ADDITIONAL_PORT_COUNTERS_EXTENDED;
        assert_eq!(Reading::of(&caps(ext, add)), Reading::Wide);
        assert_eq!(Reading::of(&caps(ext | 0x1000, 0)), Reading::NarrowAndWide);
        assert_eq!(Reading::of(&caps(0x1000, add)), Reading::Narrow);
        assert_eq!(Reading::Wide.attributes().len(), 1, "one MAD a port");
        assert_eq!(Reading::NarrowAndWide.attributes().len(), 2);
    }

    #[test]
    fn one_extended_answer_gives_every_counter_at_64_bits() {
        let mut a = Answers::default();
        a.take(perf::attr::PORT_COUNTERS_EXTENDED, &wide_answer())
            .unwrap();
        let (c, saturated) = a.counters(Reading::Wide).unwrap();
        assert_eq!(
            c,
            SwitchPortCounters {
                xmit_data_bytes: 4 * (5 << 32),
                rcv_data_bytes: 12,
                xmit_pkts: 11,
                rcv_pkts: 13,
                xmit_wait: 1 << 33,
                symbol_errors: 1 << 40,
                link_downed: 2,
                rcv_errors: 17,
                xmit_discards: 19,
            }
        );
        assert!(saturated.is_empty());
        // The other readings wait for PortCounters.
        assert_eq!(a.counters(Reading::NarrowAndWide), None);
        assert_eq!(a.counters(Reading::Narrow), None);
    }

    #[test]
    fn narrow_and_wide_take_data_from_the_wide_and_the_rest_from_the_narrow() {
        let mut a = Answers::default();
        a.take(perf::attr::PORT_COUNTERS, &narrow_answer()).unwrap();
        assert_eq!(a.counters(Reading::NarrowAndWide), None, "wide missing");
        let (c, saturated) = a.counters(Reading::Narrow).unwrap();
        assert_eq!(c.xmit_data_bytes, 4 * u64::from(u32::MAX));
        assert_eq!(saturated, ["xmit_data"]);
        a.take(perf::attr::PORT_COUNTERS_EXTENDED, &wide_answer())
            .unwrap();
        let (c, saturated) = a.counters(Reading::NarrowAndWide).unwrap();
        assert_eq!((c.xmit_data_bytes, c.xmit_pkts), (4 * (5 << 32), 11));
        assert_eq!((c.xmit_wait, c.symbol_errors, c.link_downed), (1234, 7, 2));
        assert!(
            saturated.is_empty(),
            "the 32-bit data counters are not used"
        );
    }

    #[test]
    fn a_cut_short_answer_is_an_error() {
        let mut a = Answers::default();
        assert!(a.take(perf::attr::PORT_COUNTERS, &[0u8; 10]).is_err());
        assert!(a
            .take(perf::attr::PORT_COUNTERS_EXTENDED, &[0u8; 71])
            .is_err());
    }
}
