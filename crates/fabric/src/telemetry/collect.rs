//! The receiver NIC (algorithms 4, 7 and 9): turns every delivered packet's reservoirs into
//! weighted counts per output port, per sending job and per arrival-time window (thesis 3.2:
//! "periodically store and reset counts"; Figure 4.11).

use super::candidates::{Candidate, CandidateSets};
use super::hash::{hash_bit_with, id_factor};
use super::tally::WindowTally;
use super::{Delivery, Header, Samples, TelemetryConfig, TelemetryKind};
use crate::topology::Topology;

/// At most this many arrival-time windows: each holds about 40 B per port and job (0.7 MB on
/// `full`), so a window far narrower than the run must not grow without bound. Arrivals after
/// the last window's start fall into it; it runs to the end of the run.
pub const MAX_WINDOWS: usize = 100;

/// Receiver-side accumulation (algorithms 4 / 7 / 9), per sending job and per time window.
/// Only tagged packets count: `packets`, the arrival span and every estimate are over tagged
/// packets (see [`super::estimate::scale_to_all_packets`]).
pub struct Collector {
    config: TelemetryConfig,
    window_ps: Option<u64>,
    num_ports: usize,
    candidates: CandidateSets,
    /// `jobs[j][w]`; windows are added as later arrivals need them.
    jobs: Vec<Vec<WindowTally>>,
}

impl Collector {
    /// `jobs`: number of jobs; `window_ps`: width of the arrival-time windows (Figure 4.11), or
    /// `None` (or `Some(0)`) for one window covering the whole run.
    pub fn new(
        topology: &Topology,
        config: &TelemetryConfig,
        jobs: usize,
        window_ps: Option<u64>,
    ) -> Self {
        Collector {
            config: config.clone(),
            window_ps: window_ps.filter(|&width| width > 0),
            num_ports: topology.num_ports(),
            candidates: CandidateSets::new(topology),
            jobs: vec![Vec::new(); jobs],
        }
    }

    /// Adds one delivered packet of job `delivery.job` (below the `jobs` given to
    /// [`Collector::new`]). `topology` must be the one the collector was built for.
    pub fn on_receive(&mut self, topology: &Topology, delivery: &Delivery) {
        let header = &delivery.header;
        if !header.tagged || self.config.kind == TelemetryKind::Off {
            return;
        }
        let window = match self.window_ps {
            Some(width) => ((delivery.arrival_ps / width) as usize).min(MAX_WINDOWS - 1),
            None => 0,
        };
        let windows = &mut self.jobs[usize::from(delivery.job)];
        if windows.len() <= window {
            windows.resize_with(window + 1, WindowTally::default);
        }
        let tally = &mut windows[window];
        tally.record_arrival(self.num_ports, delivery.arrival_ps);
        let bytes = f64::from(delivery.bytes);
        if self.config.kind == TelemetryKind::Reservoir {
            add_reservoir_samples(tally, header, bytes);
            return;
        }
        let (up, down) = self.candidates.get(topology, delivery.src, delivery.dst);
        let votes = HashVotes {
            id_factor: id_factor(delivery.packet_id),
            bytes,
        };
        for candidates in [up, down] {
            if self.config.kind == TelemetryKind::SingleBit {
                votes.add_single_reservoir(tally, candidates, header);
            } else {
                votes.add_two_reservoirs(tally, candidates, header);
            }
        }
    }

    /// Every job gets the same number of windows (at least one), each with full-length vectors,
    /// so that `jobs[j][w].counts[e]` is valid for every job, window and port.
    pub fn finish(self) -> Samples {
        let one_bit = matches!(
            self.config.kind,
            TelemetryKind::Reservoir1Bit | TelemetryKind::SingleBit
        );
        let windows = self.jobs.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let num_ports = self.num_ports;
        let jobs = self
            .jobs
            .into_iter()
            .map(|mut job| {
                job.resize_with(windows, WindowTally::default);
                job.into_iter()
                    .map(|tally| tally.into_samples(num_ports, one_bit))
                    .collect()
            })
            .collect();
        Samples {
            config: self.config,
            window_ps: self.window_ps,
            jobs,
        }
    }
}

/// Algorithm 4: charge the whole path length to the sampled port, so that paths of different
/// lengths combine into an unbiased count (thesis 3.2). A count of 0 means an empty reservoir.
fn add_reservoir_samples(tally: &mut WindowTally, header: &Header, bytes: f64) {
    if header.hop_count > 0 {
        tally.add_count(header.hop_sample, f64::from(header.hop_count), bytes);
    }
    if header.congested_count > 0 {
        tally.add_congested(header.congested_sample, f64::from(header.congested_count));
    }
}

/// One packet of a 1-bit kind: every candidate port `d` (the set D of algorithm 7 line 2)
/// gains the hop count when `H(id, d)` matches the stored bit and loses it otherwise
/// (thesis 5.2: 2 * B_d - Q, weighted by path length). This loop runs over up to ~450 ports
/// per packet on the large trees, so it is branch-free: a mismatch flips the sign bit.
struct HashVotes {
    id_factor: u32,
    bytes: f64,
}

impl HashVotes {
    /// `+weight` when `H(id, d)` equals `bit`, `-weight` otherwise.
    fn vote(&self, d: &Candidate, bit: u32, weight: f64) -> f64 {
        let mismatch = hash_bit_with(self.id_factor, d.key) ^ bit;
        f64::from_bits(weight.to_bits() ^ (u64::from(mismatch) << 63))
    }

    /// Algorithm 7: the hop and the congested reservoir vote independently.
    fn add_two_reservoirs(&self, tally: &mut WindowTally, candidates: &[Candidate], h: &Header) {
        let weight = f64::from(h.hop_count);
        let congested_weight = f64::from(h.congested_count);
        match (h.hop_count > 0, h.congested_count > 0) {
            (false, _) => {}
            (true, false) => {
                for d in candidates {
                    tally.add_vote(d.index, self.vote(d, h.hop_sample, weight), self.bytes);
                }
            }
            (true, true) => {
                for d in candidates {
                    let vote = self.vote(d, h.hop_sample, weight);
                    let congested_vote = self.vote(d, h.congested_sample, congested_weight);
                    tally.add_votes(d.index, vote, congested_vote, self.bytes);
                }
            }
        }
    }

    /// Algorithm 9: one reservoir; a packet whose sampled hop was congested moves the
    /// congested count by the same vote as the count.
    fn add_single_reservoir(&self, tally: &mut WindowTally, candidates: &[Candidate], h: &Header) {
        if h.hop_count == 0 {
            return;
        }
        let weight = f64::from(h.hop_count);
        for d in candidates {
            let vote = self.vote(d, h.hop_sample, weight);
            if h.congested_bit {
                tally.add_votes(d.index, vote, vote, self.bytes);
            } else {
                tally.add_vote(d.index, vote, self.bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::hash::{hash_bit, port_key};
    use crate::telemetry::PortSamples;
    use crate::topology::{FatTreeParams, NodeId, PortIndex};

    fn config(kind: TelemetryKind) -> TelemetryConfig {
        TelemetryConfig {
            kind,
            hop_counter_bits: 3,
            tag_fraction: 1.0,
        }
    }

    fn delivery(job: u16, arrival_ps: u64, header: Header) -> Delivery {
        Delivery {
            src: NodeId(0),
            dst: NodeId(127),
            job,
            packet_id: 123_457,
            bytes: 1000,
            arrival_ps,
            header,
        }
    }

    fn tagged(
        hop_count: u8,
        hop_sample: u32,
        congested_count: u8,
        congested_sample: u32,
    ) -> Header {
        Header {
            tagged: true,
            hop_count,
            hop_sample,
            congested_count,
            congested_sample,
            congested_bit: false,
        }
    }

    /// Algorithm 4, windows and jobs: each packet lands in `jobs[job][arrival / width]`; empty
    /// reservoirs and untagged packets add nothing; `finish` gives every job every window.
    #[test]
    fn windows_stop_at_the_cap_and_keep_every_sample() {
        let topology = Topology::new(FatTreeParams::radix8()).unwrap();
        let mut collector =
            Collector::new(&topology, &config(TelemetryKind::Reservoir), 1, Some(10));
        for arrival in [5, 15, 10 * MAX_WINDOWS as u64 + 3, 1_000_000] {
            collector.on_receive(&topology, &delivery(0, arrival, tagged(2, 7, 0, 9)));
        }
        let samples = collector.finish();
        assert_eq!(samples.windows(), MAX_WINDOWS);
        let last = &samples.jobs[0][MAX_WINDOWS - 1];
        assert_eq!((last.packets, last.counts[7]), (2, 4.0));
        assert_eq!(samples.total().counts[7], 8.0);
    }

    #[test]
    fn algorithm_4_per_job_and_window() {
        let topology = Topology::new(FatTreeParams::radix8()).unwrap();
        let ports = topology.num_ports();
        let mut collector =
            Collector::new(&topology, &config(TelemetryKind::Reservoir), 2, Some(100));
        collector.on_receive(&topology, &delivery(1, 350, tagged(5, 7, 2, 9)));
        collector.on_receive(&topology, &delivery(1, 310, tagged(3, 7, 0, 9)));
        collector.on_receive(&topology, &delivery(0, 20, tagged(0, 7, 0, 9)));
        collector.on_receive(&topology, &delivery(0, 30, Header::default()));
        let samples = collector.finish();
        assert_eq!(samples.windows(), 4);
        assert_eq!(samples.jobs.len(), 2);
        let w = &samples.jobs[1][3];
        assert_eq!(
            (w.counts[7], w.bytes[7], w.congested[9]),
            (8.0, 8000.0, 2.0)
        );
        assert_eq!(w.counts.iter().sum::<f64>(), 8.0);
        assert_eq!(
            (w.packets, w.first_arrival_ps, w.last_arrival_ps),
            (2, 310, 350)
        );
        assert!(w.candidates.is_empty());
        // The packet with an empty reservoir still arrived; the untagged one did not.
        assert_eq!(samples.jobs[0][0].packets, 1);
        assert_eq!(samples.jobs[0][0].counts.iter().sum::<f64>(), 0.0);
        for job in &samples.jobs {
            for window in job {
                assert_eq!(
                    (window.counts.len(), window.congested.len()),
                    (ports, ports)
                );
            }
        }
        assert_eq!(samples.total().counts[7], 8.0);
        assert_eq!(samples.sum(|job, _| job == 0).counts[7], 0.0);
        let mut from_empty = PortSamples::default();
        from_empty.add(&samples.jobs[1][3]);
        assert_eq!((from_empty.counts[7], from_empty.packets), (8.0, 2));
    }

    /// Algorithm 7 against a direct transcription: `±hop count` on exactly the set D.
    #[test]
    fn algorithm_7_votes_on_every_candidate() {
        let topology = Topology::new(FatTreeParams::radix8()).unwrap();
        let mut collector =
            Collector::new(&topology, &config(TelemetryKind::Reservoir1Bit), 1, None);
        let packet = delivery(0, 5, tagged(5, 1, 2, 0));
        collector.on_receive(&topology, &packet);
        let samples = &collector.finish().jobs[0][0];
        let mut d = Vec::new();
        topology.candidate_ports(packet.src, packet.dst, &mut d);
        for e in 0..topology.num_ports() as PortIndex {
            let key = port_key(topology.port_ref(e));
            let sign = |bit| {
                if hash_bit(packet.packet_id, key) == bit {
                    1.0
                } else {
                    -1.0
                }
            };
            let (count, congested, q) = if d.contains(&e) {
                (5.0 * sign(1), 2.0 * sign(0), 1)
            } else {
                (0.0, 0.0, 0)
            };
            let i = e as usize;
            assert_eq!(samples.counts[i], count, "port {e}");
            assert_eq!(samples.bytes[i], 1000.0 * count);
            assert_eq!(samples.congested[i], congested);
            assert_eq!(
                (samples.candidates[i], samples.congested_candidates[i]),
                (q, q)
            );
        }
    }

    /// Algorithm 9: the congested count moves with the count, only for a set congested bit.
    #[test]
    fn algorithm_9_congested_bit_follows_the_vote() {
        let topology = Topology::new(FatTreeParams::radix8()).unwrap();
        let mut collector = Collector::new(&topology, &config(TelemetryKind::SingleBit), 1, None);
        let calm = tagged(5, 1, 0, 0);
        let congested = Header {
            congested_bit: true,
            ..calm
        };
        collector.on_receive(&topology, &delivery(0, 1, calm));
        let mut second = delivery(0, 2, congested);
        second.packet_id += 1;
        collector.on_receive(&topology, &second);
        let samples = &collector.finish().jobs[0][0];
        let mut d = Vec::new();
        topology.candidate_ports(second.src, second.dst, &mut d);
        for &e in &d {
            let key = port_key(topology.port_ref(e));
            let vote = if hash_bit(second.packet_id, key) == 1 {
                5.0
            } else {
                -5.0
            };
            let i = e as usize;
            assert_eq!(samples.congested[i], vote);
            assert_eq!(
                (samples.candidates[i], samples.congested_candidates[i]),
                (2, 1)
            );
        }
        assert_eq!(
            samples.congested.iter().filter(|&&c| c != 0.0).count(),
            d.len()
        );
    }
}
