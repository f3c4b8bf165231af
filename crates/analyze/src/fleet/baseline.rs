//! Fleet baselines (Hostping 4.3: the baseline is "obtained via loopback tests on a batch of
//! idle hosts with the same devices and configurations"; Hostping 5 deployed it so).
//!
//! Hosts of one kind (the report's model name) share a baseline per path (RNIC, endpoint):
//!
//! 1. **Per host**, at ingest: each idle run's measured paths that were not abnormal are the
//!    run's sample set; a host keeps the sets of its last [`HOST_RUNS`] runs that gave any
//!    (table `host_samples`, one row a run, the oldest dropped by the same statement). A
//!    host's ring for a path is its values in those sets, oldest first, and its value for
//!    the path the ring's median, so each host weighs one vote however often it reports, and
//!    a few bad runs of a host do not move its vote.
//! 2. **Per kind**, refreshed when hosts of the kind sent new values (`collector::refresh`):
//!    over a batch of at most [`BATCH_HOSTS`] hosts of the kind (those that reported last), the
//!    median of the hosts' values is the baseline and their MAD its spread between hosts;
//!    the median of each host's own MAD over its ring is the run-to-run spread. A path needs
//!    [`MIN_FLEET_HOSTS`] hosts for a fleet baseline.
//!
//! Ingest only adds one host's sample set and bumps its `paths_version`; a refresh reads
//! at most [`BATCH_HOSTS`] hosts' rings, and runs when a kind has a host whose
//! `paths_version` moved past the `baseline_version` the last refresh saw (a background
//! task every `collector::refresh::REFRESH_EVERY`, and any read that needs the baseline
//! first), so the cost of a run at ingest does not grow with the fleet or its history.
//!
//! Busy runs (Hostping 4.2: service traffic shares the RNIC) and abnormal paths (more than
//! Abnormal_th below the host's own reference) are kept out: a baseline is the performance
//! of a healthy idle host (DESIGN 2).

use crate::robust::{Robust, MAD_TO_SIGMA};
use model::{Mode, PathStatus, Report, Thresholds};
use std::collections::BTreeMap;

/// Runs per host and path whose median is the host's value: 9, the median of which no 4
/// bad runs can move outside the healthy ones, 45 minutes at Hostping 5's 5-minute cadence
/// (recent enough to follow a replaced part within the hour).
pub const HOST_RUNS: i32 = 9;
/// The most hosts a kind's baseline is computed over, those that reported last: the
/// median of 100 host values has a standard error of about 0.13 of their spread (1.25 /
/// sqrt(100)), more hosts would add cost and no precision, and a refresh stays bounded
/// (100 hosts x paths rows) however large the fleet.
pub const BATCH_HOSTS: i64 = 100;
/// Hosts a path needs for a fleet baseline: with 3, one broken host cannot set the median.
pub const MIN_FLEET_HOSTS: usize = 3;
/// How many standard deviations (robust: MAD x [`MAD_TO_SIGMA`]) below the baseline make one
/// run's path slow (`collector::judge`): at 3, one healthy measurement in about 740 (one-sided normal tail).
pub const SLOW_SIGMAS: f64 = 3.0;

/// The smallest deficit called slow, as a fraction: a tenth of Abnormal_th (2 % at the
/// paper's 20 %), about the noise of one probe; below it a deficit is no finding however
/// tight the fleet is (a fleet of identical virtual hosts has a MAD near 0).
pub fn min_slow_fraction(th: &Thresholds) -> f64 {
    th.abnormal_th / 10.0
}

/// The measurements of a run that feed its host's recent values (its sample set, stored by
/// collector/batch.rs), as parallel arrays: element i of each column is path i.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    /// The RNICs.
    pub rnics: Vec<String>,
    /// The endpoints.
    pub endpoints: Vec<String>,
    /// Small-message latencies, us.
    pub latency_us: Vec<f64>,
    /// Bandwidths, Gb/s.
    pub bandwidth_gbps: Vec<f64>,
}

impl Samples {
    /// The paths of a run that describe a healthy idle host: an idle run's measured paths
    /// (finite values, no probe error, probed by design) that were not abnormal.
    pub fn of(report: &Report) -> Samples {
        let mut samples = Samples::default();
        if report.mode != Mode::Idle {
            return samples;
        }
        let healthy = report
            .paths
            .iter()
            .filter(|p| p.status != PathStatus::Abnormal && p.error.is_none() && !p.unavailable);
        for p in healthy {
            if let (Some(l), Some(b)) = (p.latency_us, p.bandwidth_gbps) {
                if l.is_finite() && b.is_finite() {
                    samples.rnics.push(p.rnic.to_string());
                    samples.endpoints.push(p.endpoint.to_string());
                    samples.latency_us.push(l);
                    samples.bandwidth_gbps.push(b);
                }
            }
        }
        samples
    }

    /// Whether the run adds nothing.
    pub fn is_empty(&self) -> bool {
        self.rnics.is_empty()
    }

    /// Whether the four columns are of one length, as [`Samples::of`] makes them; a set
    /// read back from the database is checked before its columns are indexed together.
    pub fn check(&self, host: &str) -> Result<(), UnevenSamples> {
        let lengths = [
            self.rnics.len(),
            self.endpoints.len(),
            self.latency_us.len(),
            self.bandwidth_gbps.len(),
        ];
        if lengths.iter().all(|&n| n == lengths[0]) {
            return Ok(());
        }
        Err(UnevenSamples {
            host: host.to_owned(),
            rnics: lengths[0],
            endpoints: lengths[1],
            latencies: lengths[2],
            bandwidths: lengths[3],
        })
    }
}

/// A sample set whose parallel columns differ in length: each path is one element of each
/// column, so such a set cannot say which values belong together. [`Samples::of`] never
/// makes one; a set read back from the database can be one when the rows were written by
/// something else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "host {host}: a sample set of {rnics} RNICs, {endpoints} endpoints, {latencies} latencies \
     and {bandwidths} bandwidths (one of each per path expected)"
)]
pub struct UnevenSamples {
    /// The host whose set it is.
    pub host: String,
    /// Elements of its `rnics` column.
    pub rnics: usize,
    /// Elements of its `endpoints` column.
    pub endpoints: usize,
    /// Elements of its `latency_us` column.
    pub latencies: usize,
    /// Elements of its `bandwidth_gbps` column.
    pub bandwidths: usize,
}

/// Hosts' rings from their sample sets, each host's given oldest first: per host and path,
/// the path's values in set order.
///
/// A set whose columns differ in length is left out and named in [`Rings::uneven`], never
/// indexed: the sets come back from the database, and one bad row must not panic the
/// collector. What to make of it is the caller's: a baseline refresh refuses to compute a
/// baseline without some host's values ([`Rings::checked`]), while a reader ranking hosts
/// may go on without one set.
pub fn rings(sets: impl IntoIterator<Item = (String, Samples)>) -> Rings {
    let mut rings: BTreeMap<(String, String, String), Ring> = BTreeMap::new();
    let mut uneven = Vec::new();
    for (host, set) in sets {
        if let Err(e) = set.check(&host) {
            uneven.push(e);
            continue;
        }
        let columns = set
            .rnics
            .iter()
            .zip(&set.endpoints)
            .zip(set.latency_us.iter().zip(&set.bandwidth_gbps));
        for ((rnic, endpoint), (&latency, &bandwidth)) in columns {
            let ring = rings
                .entry((host.clone(), rnic.clone(), endpoint.clone()))
                .or_insert_with(|| Ring {
                    host: host.clone(),
                    rnic: rnic.clone(),
                    endpoint: endpoint.clone(),
                    latency_us: Vec::new(),
                    bandwidth_gbps: Vec::new(),
                });
            ring.latency_us.push(latency);
            ring.bandwidth_gbps.push(bandwidth);
        }
    }
    Rings {
        rings: rings.into_values().collect(),
        uneven,
    }
}

/// What [`rings`] made of a list of sample sets: the rings, by host, RNIC and endpoint, and
/// the sets it could not use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rings {
    /// Per host and path, its values; ordered by host, RNIC and endpoint.
    pub rings: Vec<Ring>,
    /// The sets left out, their columns being of different lengths.
    pub uneven: Vec<UnevenSamples>,
}

impl Rings {
    /// The rings, or the first set that had to be left out: a baseline computed without
    /// some of a host's values would be one nobody asked for.
    pub fn checked(self) -> Result<Vec<Ring>, UnevenSamples> {
        match self.uneven.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(self.rings),
        }
    }

    /// The rings.
    pub fn iter(&self) -> std::slice::Iter<'_, Ring> {
        self.rings.iter()
    }
}

impl<'a> IntoIterator for &'a Rings {
    type Item = &'a Ring;
    type IntoIter = std::slice::Iter<'a, Ring>;

    fn into_iter(self) -> Self::IntoIter {
        self.rings.iter()
    }
}

/// One host's recent values of one path.
#[derive(Debug, Clone, PartialEq)]
pub struct Ring {
    /// The host.
    pub host: String,
    /// The RNIC.
    pub rnic: String,
    /// The endpoint.
    pub endpoint: String,
    /// Latencies, us, oldest first.
    pub latency_us: Vec<f64>,
    /// Bandwidths, Gb/s, oldest first.
    pub bandwidth_gbps: Vec<f64>,
}

/// One metric of a fleet path: the hosts' values summarised, and the run-to-run spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Median and MAD of the hosts' values (each host's value: the median of its ring).
    pub hosts: Robust,
    /// The median over hosts of each host's MAD over its ring: how much one run of a
    /// healthy host wanders around its own value.
    pub run_mad: f64,
}

impl Spread {
    fn of(rings: &[&[f64]]) -> Option<Spread> {
        let per_host: Vec<Robust> = rings.iter().filter_map(|r| Robust::of(r)).collect();
        let values: Vec<f64> = per_host.iter().map(|r| r.median).collect();
        let run_mads: Vec<f64> = per_host.iter().map(|r| r.mad).collect();
        Some(Spread {
            hosts: Robust::of(&values)?,
            run_mad: crate::robust::median(run_mads)?,
        })
    }

    /// The standard deviation expected of one run of a healthy host around the baseline:
    /// the spread between hosts and a run's spread around its host, added as variances.
    pub fn run_sigma(&self) -> f64 {
        MAD_TO_SIGMA * self.hosts.mad.hypot(self.run_mad)
    }

    /// The standard deviation expected of a healthy host's median of `runs` runs around
    /// the baseline: the spread between hosts' values, and no less than what the median of
    /// `runs` runs keeps of the run-to-run spread (1.2533 / sqrt(n): the median's standard
    /// error for normal data) when the batch is too small or too alike to show it.
    pub fn host_sigma(&self, runs: usize) -> f64 {
        let median_noise = 1.2533 * self.run_mad / (runs.max(1) as f64).sqrt();
        MAD_TO_SIGMA * self.hosts.mad.max(median_noise)
    }
}

/// The fleet baseline of one path of a kind.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetPath {
    /// The RNIC.
    pub rnic: String,
    /// The endpoint.
    pub endpoint: String,
    /// Small-message latency, us.
    pub latency: Spread,
    /// Bandwidth, Gb/s.
    pub bandwidth: Spread,
    /// Hosts it is computed over.
    pub hosts: usize,
    /// Runs those hosts' values are the medians of, in all.
    pub runs: usize,
}

/// Per path, the fleet baseline over `rings` (one host's ring per host and path); paths
/// with fewer than [`MIN_FLEET_HOSTS`] hosts get none.
pub fn fleet_paths(rings: &[Ring]) -> Vec<FleetPath> {
    let mut by_path: BTreeMap<(&str, &str), Vec<&Ring>> = BTreeMap::new();
    for r in rings.iter().filter(|r| !r.bandwidth_gbps.is_empty()) {
        by_path
            .entry((r.rnic.as_str(), r.endpoint.as_str()))
            .or_default()
            .push(r);
    }
    by_path
        .into_iter()
        .filter(|(_, hosts)| hosts.len() >= MIN_FLEET_HOSTS)
        .filter_map(|((rnic, endpoint), hosts)| {
            let latency: Vec<&[f64]> = hosts.iter().map(|r| r.latency_us.as_slice()).collect();
            let bandwidth: Vec<&[f64]> =
                hosts.iter().map(|r| r.bandwidth_gbps.as_slice()).collect();
            Some(FleetPath {
                rnic: rnic.to_owned(),
                endpoint: endpoint.to_owned(),
                latency: Spread::of(&latency)?,
                bandwidth: Spread::of(&bandwidth)?,
                hosts: hosts.len(),
                runs: hosts.iter().map(|r| r.bandwidth_gbps.len()).sum(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[(&str, f64)]) -> Samples {
        Samples {
            rnics: paths.iter().map(|_| "rnic0".to_owned()).collect(),
            endpoints: paths.iter().map(|(e, _)| (*e).to_owned()).collect(),
            latency_us: paths.iter().map(|(_, v)| v / 100.0).collect(),
            bandwidth_gbps: paths.iter().map(|(_, v)| *v).collect(),
        }
    }

    #[test]
    fn rings_take_each_paths_values_in_set_order_and_skip_sets_without_it() {
        let sets = vec![
            ("a".to_owned(), set(&[("mem0", 1.0), ("gpu0", 2.0)])),
            // mem0 abnormal in this run: not in its set.
            ("a".to_owned(), set(&[("gpu0", 3.0)])),
            ("a".to_owned(), set(&[("mem0", 4.0), ("gpu0", 5.0)])),
            ("b".to_owned(), set(&[("mem0", 6.0)])),
        ];
        let got: Vec<(String, String, Vec<f64>, Vec<f64>)> = rings(sets)
            .checked()
            .unwrap()
            .into_iter()
            .map(|r| (r.host, r.endpoint, r.bandwidth_gbps, r.latency_us))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "a".into(),
                    "gpu0".into(),
                    vec![2.0, 3.0, 5.0],
                    vec![0.02, 0.03, 0.05]
                ),
                ("a".into(), "mem0".into(), vec![1.0, 4.0], vec![0.01, 0.04]),
                ("b".into(), "mem0".into(), vec![6.0], vec![0.06]),
            ]
        );
    }

    #[test]
    fn a_set_of_uneven_columns_is_left_out_and_named_not_indexed() {
        let mut short = set(&[("mem0", 7.0), ("gpu0", 8.0)]);
        short.latency_us.pop();
        let sets = vec![
            ("a".to_owned(), set(&[("mem0", 1.0)])),
            ("b".to_owned(), short),
            ("b".to_owned(), set(&[("mem0", 9.0)])),
        ];
        let made = rings(sets);
        let kept: Vec<(&str, &[f64])> = made
            .iter()
            .map(|r| (r.host.as_str(), r.bandwidth_gbps.as_slice()))
            .collect();
        assert_eq!(kept, vec![("a", &[1.0][..]), ("b", &[9.0][..])]);
        let expected = UnevenSamples {
            host: "b".into(),
            rnics: 2,
            endpoints: 2,
            latencies: 1,
            bandwidths: 2,
        };
        assert_eq!(made.uneven, vec![expected.clone()]);
        assert_eq!(
            expected.to_string(),
            "host b: a sample set of 2 RNICs, 2 endpoints, 1 latencies and 2 bandwidths \
             (one of each per path expected)"
        );
        assert_eq!(made.checked(), Err(expected));
    }

    #[test]
    fn every_column_is_checked() {
        let even = set(&[("mem0", 1.0), ("gpu0", 2.0)]);
        assert_eq!(even.check("h"), Ok(()));
        let cut: [fn(&mut Samples); 4] = [
            |s| {
                s.rnics.pop();
            },
            |s| {
                s.endpoints.pop();
            },
            |s| {
                s.latency_us.pop();
            },
            |s| {
                s.bandwidth_gbps.pop();
            },
        ];
        for (i, cut) in cut.iter().enumerate() {
            let mut s = even.clone();
            cut(&mut s);
            let e = s.check("h").expect_err("a short column");
            let lengths = [e.rnics, e.endpoints, e.latencies, e.bandwidths];
            let mut expected = [2; 4];
            expected[i] = 1;
            assert_eq!(lengths, expected);
        }
        assert_eq!(Samples::default().check("h"), Ok(()));
    }

    fn ring(host: &str, lat: &[f64], bw: &[f64]) -> Ring {
        Ring {
            host: host.into(),
            rnic: "rnic0".into(),
            endpoint: "mem0".into(),
            latency_us: lat.to_vec(),
            bandwidth_gbps: bw.to_vec(),
        }
    }

    #[test]
    fn each_host_is_one_vote_whatever_its_runs() {
        // h1 reports nine times at 150, the others once each at about 200: the median of
        // the hosts' values is theirs, not h1's.
        let rings = [
            ring("h1", &[2.0; 9], &[150.0; 9]),
            ring("h2", &[2.0], &[198.0]),
            ring("h3", &[2.0], &[200.0]),
            ring("h4", &[2.0], &[202.0]),
        ];
        let paths = fleet_paths(&rings);
        assert_eq!(paths.len(), 1);
        let p = &paths[0];
        assert_eq!((p.hosts, p.runs), (4, 12));
        assert_eq!(p.bandwidth.hosts.median, 199.0);
        assert_eq!(p.bandwidth.hosts.mad, 2.0);
        assert_eq!(p.bandwidth.run_mad, 0.0);
    }

    #[test]
    fn too_few_hosts_make_no_baseline() {
        let rings = [ring("h1", &[2.0], &[200.0]), ring("h2", &[2.0], &[200.0])];
        assert!(fleet_paths(&rings).is_empty());
    }
}
