//! Building and combining the receivers' per-port samples: windows and jobs add up, because
//! every estimate of thesis 3.3 and 5.3 is a sum over packets.

use super::{PortSamples, Samples};

impl PortSamples {
    /// All-zero vectors for `num_ports` ports; the candidate counts only for the 1-bit kinds.
    pub fn zeroed(num_ports: usize, one_bit: bool) -> Self {
        let candidates = if one_bit {
            vec![0; num_ports]
        } else {
            Vec::new()
        };
        PortSamples {
            counts: vec![0.0; num_ports],
            congested: vec![0.0; num_ports],
            counts_sq: vec![0.0; num_ports],
            congested_sq: vec![0.0; num_ports],
            bytes: vec![0.0; num_ports],
            congested_candidates: candidates.clone(),
            candidates,
            packets: 0,
            first_arrival_ps: 0,
            last_arrival_ps: 0,
        }
    }

    fn zeroed_like(&self) -> PortSamples {
        PortSamples::zeroed(self.counts.len(), !self.candidates.is_empty())
    }

    /// Adds another (job, window)'s samples of the same tree and kind to these; an empty
    /// (default) `PortSamples` takes the other's shape.
    pub fn add(&mut self, other: &PortSamples) {
        fn add_all<T: Copy + std::ops::AddAssign>(to: &mut [T], from: &[T]) {
            assert_eq!(to.len(), from.len(), "samples of different trees or kinds");
            for (to, &from) in to.iter_mut().zip(from) {
                *to += from;
            }
        }
        if other.packets == 0 {
            return;
        }
        if self.counts.is_empty() {
            *self = other.zeroed_like();
        }
        add_all(&mut self.counts, &other.counts);
        add_all(&mut self.congested, &other.congested);
        add_all(&mut self.counts_sq, &other.counts_sq);
        add_all(&mut self.congested_sq, &other.congested_sq);
        add_all(&mut self.bytes, &other.bytes);
        add_all(&mut self.candidates, &other.candidates);
        add_all(&mut self.congested_candidates, &other.congested_candidates);
        if self.packets == 0 {
            self.first_arrival_ps = other.first_arrival_ps;
            self.last_arrival_ps = other.last_arrival_ps;
        } else {
            self.first_arrival_ps = self.first_arrival_ps.min(other.first_arrival_ps);
            self.last_arrival_ps = self.last_arrival_ps.max(other.last_arrival_ps);
        }
        self.packets += other.packets;
    }
}

impl Samples {
    /// Number of arrival-time windows (the same for every job).
    pub fn windows(&self) -> usize {
        self.jobs.first().map_or(0, Vec::len)
    }

    /// The sum over the jobs and windows that `keep(job, window)` selects.
    pub fn sum(&self, keep: impl Fn(usize, usize) -> bool) -> PortSamples {
        let mut total = self
            .jobs
            .iter()
            .find_map(|windows| windows.first())
            .map_or_else(PortSamples::default, PortSamples::zeroed_like);
        for (job, windows) in self.jobs.iter().enumerate() {
            for (window, samples) in windows.iter().enumerate() {
                if keep(job, window) {
                    total.add(samples);
                }
            }
        }
        total
    }

    /// Everything the receivers collected: all jobs, the whole run.
    pub fn total(&self) -> PortSamples {
        self.sum(|_, _| true)
    }
}
