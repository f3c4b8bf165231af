//! Running totals of one (job, window) while packets arrive. The receiver's hot loops touch
//! every field of a port at once, so a port's totals sit together (one cache line, not five
//! vectors); [`WindowTally::into_samples`] turns them into the per-field vectors of
//! [`PortSamples`].

use super::PortSamples;
use crate::topology::PortIndex;

/// Algorithm 4 / 7 / 9 totals of one port.
#[derive(Copy, Clone, Debug, Default)]
struct PortTally {
    counts: f64,
    bytes: f64,
    congested: f64,
    /// Sums of squared weights: the variance estimates of thesis 3.3.
    counts_sq: f64,
    congested_sq: f64,
    candidates: u64,
    congested_candidates: u64,
}

/// One (job, window): no port storage until its first packet arrives.
#[derive(Clone, Debug, Default)]
pub(crate) struct WindowTally {
    ports: Vec<PortTally>,
    packets: u64,
    first_arrival_ps: u64,
    last_arrival_ps: u64,
}

impl WindowTally {
    /// Counts a tagged packet, giving the window its `num_ports` ports if it had none.
    pub(crate) fn record_arrival(&mut self, num_ports: usize, arrival_ps: u64) {
        if self.packets == 0 {
            self.ports = vec![PortTally::default(); num_ports];
            self.first_arrival_ps = arrival_ps;
            self.last_arrival_ps = arrival_ps;
        } else {
            self.first_arrival_ps = self.first_arrival_ps.min(arrival_ps);
            self.last_arrival_ps = self.last_arrival_ps.max(arrival_ps);
        }
        self.packets += 1;
    }

    /// Algorithm 4 / 7 / 9: a packet's weight (its hop count, signed by the hash vote for the
    /// 1-bit kinds) for port `e`; `bytes` weights the byte estimate.
    pub(crate) fn add_count(&mut self, e: PortIndex, weight: f64, bytes: f64) {
        let port = &mut self.ports[e as usize];
        port.counts += weight;
        port.counts_sq += weight * weight;
        port.bytes += weight * bytes;
    }

    pub(crate) fn add_congested(&mut self, e: PortIndex, weight: f64) {
        let port = &mut self.ports[e as usize];
        port.congested += weight;
        port.congested_sq += weight * weight;
    }

    /// A 1-bit vote on port `e` from a packet that may have crossed it (one more in Q).
    pub(crate) fn add_vote(&mut self, e: PortIndex, vote: f64, bytes: f64) {
        let port = &mut self.ports[e as usize];
        port.counts += vote;
        port.counts_sq += vote * vote;
        port.bytes += vote * bytes;
        port.candidates += 1;
    }

    /// [`Self::add_vote`] for the congested count, in the same pass over D.
    pub(crate) fn add_votes(&mut self, e: PortIndex, vote: f64, congested_vote: f64, bytes: f64) {
        let port = &mut self.ports[e as usize];
        port.counts += vote;
        port.counts_sq += vote * vote;
        port.bytes += vote * bytes;
        port.candidates += 1;
        port.congested += congested_vote;
        port.congested_sq += congested_vote * congested_vote;
        port.congested_candidates += 1;
    }

    /// The finished window; candidate counts only for the 1-bit kinds.
    pub(crate) fn into_samples(self, num_ports: usize, one_bit: bool) -> PortSamples {
        let mut samples = PortSamples::zeroed(num_ports, one_bit);
        for (e, port) in self.ports.iter().enumerate() {
            samples.counts[e] = port.counts;
            samples.bytes[e] = port.bytes;
            samples.congested[e] = port.congested;
            samples.counts_sq[e] = port.counts_sq;
            samples.congested_sq[e] = port.congested_sq;
            if one_bit {
                samples.candidates[e] = port.candidates;
                samples.congested_candidates[e] = port.congested_candidates;
            }
        }
        samples.packets = self.packets;
        samples.first_arrival_ps = self.first_arrival_ps;
        samples.last_arrival_ps = self.last_arrival_ps;
        samples
    }
}
