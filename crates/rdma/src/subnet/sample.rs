//! The switch-port sampler of the LDMS ibfabric paper (`shared/papers/004_ec259f6a0c4ca99b`):
//! one sweep reads the counters of every assigned port, all of them in flight at once
//! through the umad window, timestamps each port when its answer arrives, and measures the
//! sweep's spread, "the time from the start of the first query to the end of the last".
//!
//! Per switch (by LID) ClassPortInfo is asked once and remembered: where it offers
//! PortCountersExtended the data counters come from there (64-bit), and PortCounters still
//! gives the error counters and PortXmitWait, which the extended attribute lacks; where it
//! does not, PortCounters gives everything, and a 32-bit counter that has stopped at its
//! maximum is named in the sample's `saturated` list (IBA 16.1.3.5: counters stop rather
//! than wrap, so a delta across it undercounts).

use crate::mad::perf::{
    self, dwords_to_bytes, perf_data, ClassPortInfoRepr, PortCountersExtendedRepr, PortCountersRepr,
};
use crate::mad::{MadPacket, MAD_LEN};
use crate::umad::rpc::{exchange, exchange_in_order, Failure, Request, Settings};
use crate::umad::{Address, Agent, Port, UmadError};
use serde::Serialize;
use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

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

/// A port's counters, data in bytes (the MADs count 4-byte words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PortCounterValues {
    /// PortXmitData, bytes.
    pub xmit_data_bytes: u64,
    /// PortRcvData, bytes.
    pub rcv_data_bytes: u64,
    /// PortXmitPkts.
    pub xmit_pkts: u64,
    /// PortRcvPkts.
    pub rcv_pkts: u64,
    /// PortXmitWait.
    pub xmit_wait: u64,
    /// SymbolErrorCounter.
    pub symbol_errors: u64,
    /// LinkDownedCounter.
    pub link_downed: u64,
    /// PortRcvErrors.
    pub rcv_errors: u64,
    /// PortXmitDiscards.
    pub xmit_discards: u64,
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
    pub counters: Option<PortCounterValues>,
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

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
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
        // Requests: PortCounters for every port, PortCountersExtended beside it where the
        // switch offers it.
        // `owner[k]`: the port of request k, and whether it asks the extended attribute.
        let mut requests = Vec::new();
        let mut owner = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            if let Some(Ok(caps)) = self.capabilities.get(&p.lid) {
                requests.push(self.get(p.lid, perf::attr::PORT_COUNTERS, p.port));
                owner.push((i, false));
                if caps.has_extended_counters() {
                    requests.push(self.get(p.lid, perf::attr::PORT_COUNTERS_EXTENDED, p.port));
                    owner.push((i, true));
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
        let mut narrow: HashMap<usize, PortCountersRepr> = HashMap::new();
        let mut wide: HashMap<usize, PortCountersExtendedRepr> = HashMap::new();
        for (k, answer) in answers.into_iter().enumerate() {
            let (i, extended) = owner[k];
            let (at, result) = answer.expect("every request ends");
            let s = &mut samples[i];
            s.at_unix_ns = s.at_unix_ns.max(at);
            let parsed = result.map_err(|e| e.to_string()).and_then(|b| {
                let d = data(&b)?;
                if extended {
                    PortCountersExtendedRepr::parse(d)
                        .map(|c| {
                            wide.insert(i, c);
                        })
                        .map_err(|e| e.to_string())
                } else {
                    PortCountersRepr::parse(d)
                        .map(|c| {
                            narrow.insert(i, c);
                        })
                        .map_err(|e| e.to_string())
                }
            });
            if let Err(e) = parsed {
                let what = if extended {
                    "PortCountersExtended"
                } else {
                    "PortCounters"
                };
                s.error.get_or_insert_with(|| format!("{what}: {e}"));
            }
        }
        for (i, s) in samples.iter_mut().enumerate() {
            if s.error.is_some() {
                continue;
            }
            let Some(n) = narrow.get(&i) else { continue };
            let mut c = PortCounterValues {
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
            match wide.get(&i) {
                Some(w) => {
                    c.xmit_data_bytes = dwords_to_bytes(w.xmit_data_dwords);
                    c.rcv_data_bytes = dwords_to_bytes(w.rcv_data_dwords);
                    c.xmit_pkts = w.xmit_pkts;
                    c.rcv_pkts = w.rcv_pkts;
                    s.saturated = n
                        .saturated()
                        .into_iter()
                        .filter(|f| *f == "xmit_wait")
                        .collect();
                }
                None => s.saturated = n.saturated(),
            }
            s.counters = Some(c);
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
