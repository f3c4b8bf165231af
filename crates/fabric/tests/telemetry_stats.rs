//! Statistical checks of the telemetry against Taffet's thesis (3.3, 5.3, 5.4, 5.6, 5.7):
//! packets go through `on_send`, `on_switch` at every hop and `on_receive` along known routes
//! of the radix-8 tree, without the simulator. Seeds are fixed, so the tests are
//! deterministic; tolerances are honest statistical bands (means within 4 standard errors,
//! variance ratios within 4 standard deviations of a sample variance), and each test says which
//! wrong algorithm it would catch.

use fabric::telemetry::estimate::{
    congested_fraction, congested_fraction_moments, one_bit_count_moments, scale_to_all_packets,
    thresholded_counts, weighted_count_moments, CongestedFlow, OneBitFlow, PathFlow, Z_99,
};
use fabric::telemetry::hash::{hash_bit, port_key};
use fabric::telemetry::{Collector, Delivery, PortSamples, TelemetryConfig, TelemetryKind};
use fabric::topology::{FatTreeParams, NodeId, Peer, PortIndex, PortRef, Topology};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn radix8() -> Topology {
    Topology::new(FatTreeParams::radix8()).expect("built-in tree")
}

/// The output ports a packet from `src` to `dst` leaves through when every switch that must
/// go up takes its up port number `up` (fat-tree routes: up, then the one way down).
fn route(topology: &Topology, src: NodeId, dst: NodeId, up: u16) -> Vec<PortRef> {
    let mut switch = topology.leaf_of(src);
    let mut ports = Vec::new();
    loop {
        let port = topology
            .down_port(switch, dst)
            .unwrap_or_else(|| topology.up_ports(switch).start + up);
        let here = PortRef { switch, port };
        ports.push(here);
        match topology.peer(here) {
            Peer::Node(node) => {
                assert_eq!(node, dst);
                return ports;
            }
            Peer::Switch { switch: next, .. } => switch = next,
        }
    }
}

/// One source-destination pair and its route.
struct Flow {
    src: NodeId,
    dst: NodeId,
    route: Vec<PortRef>,
}

impl Flow {
    fn new(topology: &Topology, src: u32, dst: u32, up: u16) -> Self {
        let (src, dst) = (NodeId(src), NodeId(dst));
        Flow {
            src,
            dst,
            route: route(topology, src, dst, up),
        }
    }

    fn hops(&self) -> usize {
        self.route.len()
    }

    fn port(&self, topology: &Topology, hop: usize) -> usize {
        topology.port_index(self.route[hop]) as usize
    }
}

/// Packet ids: the engine numbers packets in sequence; the thesis' analysis assumes a hash
/// that behaves like independent coin flips, which random ids give.
#[derive(Copy, Clone)]
enum Ids {
    Sequential,
    Random,
}

/// The sender NICs and switches of one experiment: one RNG for the switches' random
/// integers, tagging and random ids.
struct Network<'a> {
    topology: &'a Topology,
    config: TelemetryConfig,
    rng: ChaCha8Rng,
    ids: Ids,
    next_id: u32,
}

impl<'a> Network<'a> {
    fn new(topology: &'a Topology, config: TelemetryConfig, ids: Ids, seed: u64) -> Self {
        Network {
            topology,
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ids,
            next_id: 1,
        }
    }

    fn collector(&self) -> Collector {
        Collector::new(self.topology, &self.config, 1, None)
    }

    /// Sends one packet of `flow`, congested at the hops `congested_at` lists, and delivers it.
    fn send(&mut self, collector: &mut Collector, flow: &Flow, congested_at: &[usize]) {
        let packet_id = match self.ids {
            Ids::Sequential => self.next_id,
            Ids::Random => self.rng.next_u32(),
        };
        self.next_id = self.next_id.wrapping_add(1);
        let mut header = self.config.on_send(&mut self.rng);
        for (hop, &at) in flow.route.iter().enumerate() {
            let index = self.topology.port_index(at);
            let congested = congested_at.contains(&hop);
            self.config
                .on_switch(&mut header, packet_id, at, index, congested, &mut self.rng);
        }
        let delivery = Delivery {
            src: flow.src,
            dst: flow.dst,
            job: 0,
            packet_id,
            bytes: 4096,
            arrival_ps: u64::from(packet_id),
            header,
        };
        collector.on_receive(self.topology, &delivery);
    }

    /// `trials` independent runs of `packets` packets of `flow`; packet `i` is congested at
    /// `congested_at` when `congested(i)`.
    fn trials(
        &mut self,
        trials: usize,
        packets: usize,
        flow: &Flow,
        congested_at: &[usize],
        congested: impl Fn(usize) -> bool,
    ) -> Vec<PortSamples> {
        (0..trials)
            .map(|_| {
                let mut collector = self.collector();
                for i in 0..packets {
                    let at = if congested(i) { congested_at } else { &[] };
                    self.send(&mut collector, flow, at);
                }
                collector.finish().jobs.swap_remove(0).swap_remove(0)
            })
            .collect()
    }
}

fn config(kind: TelemetryKind) -> TelemetryConfig {
    TelemetryConfig {
        kind,
        hop_counter_bits: 3,
        tag_fraction: 1.0,
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn sample_variance(values: &[f64]) -> f64 {
    let m = mean(values);
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64
}

/// The mean is within 4 standard errors of `expected`, the standard error taken from the
/// `variance` of one value.
fn assert_mean(values: &[f64], expected: f64, variance: f64, what: &str) {
    let standard_error = (variance / values.len() as f64).sqrt();
    let m = mean(values);
    assert!(
        (m - expected).abs() <= 4.0 * standard_error,
        "{what}: mean {m:.2}, expected {expected:.2} +- {:.2}",
        4.0 * standard_error
    );
}

/// The sample variance over `expected` is within 4 standard deviations of 1 for near-normal
/// values (a sample variance of T values has relative standard deviation sqrt(2 / (T - 1))).
fn assert_variance(values: &[f64], expected: f64, what: &str) {
    let ratio = sample_variance(values) / expected;
    let band = 4.0 * (2.0 / (values.len() - 1) as f64).sqrt();
    assert!(
        (ratio - 1.0).abs() <= band,
        "{what}: variance ratio {ratio:.3}, expected 1 +- {band:.3}"
    );
}

fn at(samples: &[PortSamples], port: usize, field: fn(&PortSamples) -> &Vec<f64>) -> Vec<f64> {
    samples.iter().map(|s| field(s)[port]).collect()
}

fn counts(s: &PortSamples) -> &Vec<f64> {
    &s.counts
}

fn congested(s: &PortSamples) -> &Vec<f64> {
    &s.congested
}

/// (a) Thesis 3.3: N packets along one path of length l give every port on it a weighted
/// count of mean N and variance N (l - 1), and no count elsewhere. An unweighted count
/// (`+1` instead of `+hop count`) would have mean N / l, hundreds of standard errors off.
#[test]
fn one_path_weighted_count_has_mean_n_and_variance_n_l_minus_1() {
    let topology = radix8();
    let (trials, packets) = (300, 2000);
    for (src, dst) in [(0, 5), (0, 127)] {
        let flow = Flow::new(&topology, src, dst, 1);
        let mut network = Network::new(
            &topology,
            config(TelemetryKind::Reservoir),
            Ids::Sequential,
            11,
        );
        let samples = network.trials(trials, packets, &flow, &[], |_| false);
        let moments = weighted_count_moments(
            &[PathFlow {
                packets: packets as f64,
                hops: flow.hops() as f64,
            }],
            1.0,
        );
        for hop in 0..flow.hops() {
            let w = at(&samples, flow.port(&topology, hop), counts);
            let what = format!("l = {}, hop {hop}", flow.hops());
            assert_mean(&w, moments.mean, moments.variance, &what);
            assert_variance(&w, moments.variance, &what);
        }
        let total: f64 = samples.iter().flat_map(|s| &s.counts).sum();
        assert_eq!(
            total,
            (trials * packets * flow.hops()) as f64,
            "every packet adds l once"
        );
    }
}

/// (b) Thesis 3.3: flows of lengths 1, 3 and 5 into one node add up on their shared links:
/// mean sum N_i, variance sum N_i (l_i - 1). Raw counts would give sum N_i / l_i instead.
#[test]
fn paths_of_different_lengths_add_up_on_a_shared_link() {
    let topology = radix8();
    let flows = [
        (Flow::new(&topology, 4, 5, 2), 500),
        (Flow::new(&topology, 0, 5, 2), 1500),
        (Flow::new(&topology, 100, 5, 2), 2500),
    ];
    assert_eq!(
        flows.iter().map(|(f, _)| f.hops()).collect::<Vec<_>>(),
        [1, 3, 5]
    );
    let mut network = Network::new(
        &topology,
        config(TelemetryKind::Reservoir),
        Ids::Sequential,
        12,
    );
    let trials = 200;
    let samples: Vec<PortSamples> = (0..trials)
        .map(|_| {
            let mut collector = network.collector();
            for i in 0..2500 {
                for (flow, packets) in &flows {
                    if i < *packets {
                        network.send(&mut collector, flow, &[]);
                    }
                }
            }
            collector.finish().jobs.swap_remove(0).swap_remove(0)
        })
        .collect();
    // The last link carries all three flows; the aggregation switch's link down to the leaf
    // carries the 3- and 5-hop flows (both climb through up port 2 to the same aggregation).
    let last = flows[0].0.port(&topology, 0);
    let agg_down = flows[1].0.port(&topology, 1);
    assert_eq!(agg_down, flows[2].0.port(&topology, 3));
    for (port, sharing) in [(last, &flows[..]), (agg_down, &flows[1..])] {
        let paths: Vec<PathFlow> = sharing
            .iter()
            .map(|(flow, packets)| PathFlow {
                packets: *packets as f64,
                hops: flow.hops() as f64,
            })
            .collect();
        let moments = weighted_count_moments(&paths, 1.0);
        let w = at(&samples, port, counts);
        assert_mean(&w, moments.mean, moments.variance, "shared link");
        assert_variance(&w, moments.variance, "shared link");
    }
}

/// (c) Thesis 3.3: with M of N packets congested on g = 2 of l = 5 hops, the congested
/// fraction F has mean ~ M/N (+ the Taylor terms) and variance ~ the 3.3 formula, and its
/// error shrinks like 1/sqrt(N): the slope of log RMS error against log N is -1/2. Raw counts
/// would give F ~ M l / (N g) = 0.75 instead of 0.3; an error that does not shrink (a bias)
/// would give a slope near 0.
#[test]
fn congested_fraction_converges_like_one_over_sqrt_n() {
    let topology = radix8();
    let flow = Flow::new(&topology, 0, 127, 3);
    let congested_hops = [1, 3];
    let port = flow.port(&topology, 1);
    let mut network = Network::new(
        &topology,
        config(TelemetryKind::Reservoir),
        Ids::Sequential,
        13,
    );
    let mut points = Vec::new();
    for (packets, trials) in [(100usize, 400), (1000, 200), (10_000, 100), (100_000, 30)] {
        let congested_packets = packets * 3 / 10;
        let samples = network.trials(trials, packets, &flow, &congested_hops, |i| i % 10 < 3);
        let fractions: Vec<f64> = samples
            .iter()
            .map(|s| congested_fraction(s.congested[port], s.counts[port]))
            .collect();
        let expected = congested_fraction_moments(&[CongestedFlow {
            packets: packets as f64,
            hops: flow.hops() as f64,
            congested_packets: congested_packets as f64,
            congested_hops: congested_hops.len() as f64,
        }]);
        let what = format!("N = {packets}");
        assert_mean(
            &fractions,
            expected.mean,
            sample_variance(&fractions),
            &what,
        );
        // The Taylor approximation of Var[F] holds for large N: at N = 100 the exact variance
        // of this model is 1.26 times the approximation (1.02 times at N = 1000).
        if packets >= 1000 {
            assert_variance(&fractions, expected.variance, &what);
        }
        let truth = congested_packets as f64 / packets as f64;
        let rms_error =
            (fractions.iter().map(|f| (f - truth).powi(2)).sum::<f64>() / trials as f64).sqrt();
        points.push(((packets as f64).ln(), rms_error.ln()));
    }
    let slope = least_squares_slope(&points);
    assert!(
        (slope + 0.5).abs() <= 0.1,
        "log error vs log N slope {slope:.3}"
    );
}

fn least_squares_slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}

/// The set D of the flow, and which of its ports the flow really crosses.
fn candidates_of(topology: &Topology, flow: &Flow) -> Vec<(usize, bool)> {
    let mut d = Vec::new();
    topology.candidate_ports(flow.src, flow.dst, &mut d);
    let on_route: Vec<PortIndex> = flow.route.iter().map(|&p| topology.port_index(p)).collect();
    d.iter()
        .map(|e| (*e as usize, on_route.contains(e)))
        .collect()
}

/// (d) Thesis 5.3, algorithms 5-7: with an ideal hash (random ids), every port of D has
/// `E[W] = N` (0 off the route) and `Var[W] = Q l^2 - N` with Q = N, so 24 N on the route and
/// 25 N off it, far from the N (l - 1) = 4 N of algorithm 4; Q counts exactly the packets.
/// The 99 % threshold of 5.3 then keeps every on-route port and zeroes off-route ones in
/// about 1 % of the cases. A receiver voting +-1 instead of +-l would have mean N / 5.
///
/// With the engine's sequential ids, `H_mult'` over consecutive ids is a Weyl sequence: false
/// matches come out more even than coin flips, so the counts stay unbiased and their variance
/// is at most the 5.3 value (about 0.8 of it here), which keeps the threshold conservative.
#[test]
fn one_bit_count_has_mean_n_and_variance_q_l2_minus_n() {
    let topology = radix8();
    let flow = Flow::new(&topology, 0, 127, 1);
    let (trials, packets) = (300, 1000);
    let n = packets as f64;
    let candidates = candidates_of(&topology, &flow);
    for (ids, seed) in [(Ids::Random, 14), (Ids::Sequential, 15)] {
        let mut network = Network::new(&topology, config(TelemetryKind::Reservoir1Bit), ids, seed);
        let samples = network.trials(trials, packets, &flow, &[], |_| false);
        let kept: Vec<Vec<f64>> = samples
            .iter()
            .map(|s| thresholded_counts(&s.counts, &s.candidates, topology.diameter(), Z_99))
            .collect();
        let mut false_positives = 0;
        for &(port, on_route) in &candidates {
            let moments = one_bit_count_moments(&[OneBitFlow {
                packets: if on_route { n } else { 0.0 },
                candidates: n,
                hops: flow.hops() as f64,
            }]);
            let w = at(&samples, port, counts);
            let what = format!("port {port}, on route {on_route}");
            assert_mean(&w, moments.mean, moments.variance, &what);
            match ids {
                Ids::Random => assert_variance(&w, moments.variance, &what),
                Ids::Sequential => {
                    let band = 4.0 * (2.0 / (trials - 1) as f64).sqrt();
                    let ratio = sample_variance(&w) / moments.variance;
                    assert!(ratio <= 1.0 + band, "{what}: variance ratio {ratio:.3}");
                }
            }
            for (s, kept) in samples.iter().zip(&kept) {
                assert_eq!(s.candidates[port], packets as u64);
                if on_route {
                    assert!(kept[port] > 0.0, "an on-route port was thresholded away");
                } else if kept[port] != 0.0 {
                    false_positives += 1;
                }
            }
        }
        let off_route = candidates.iter().filter(|c| !c.1).count() * trials;
        let rate = f64::from(false_positives) / off_route as f64;
        let limit = 0.01 + 4.0 * (0.01 * 0.99 / off_route as f64).sqrt();
        assert!(
            rate <= limit,
            "false positive rate {rate:.4} above {limit:.4}"
        );
    }
}

/// (e) Algorithms 8-9: one 1-bit reservoir and a congested bit estimate both the counts
/// (mean N on the route, 0 off it) and the congested counts (mean M on the two congested
/// hops, 0 on the others) without bias. Setting the bit when any hop was congested, instead of
/// the sampled one, would show M on every hop of the route.
#[test]
fn single_bit_variant_is_unbiased() {
    let topology = radix8();
    let flow = Flow::new(&topology, 0, 127, 2);
    let (trials, packets) = (300, 1000);
    let congested_hops = [1, 3];
    let congested_ports: Vec<usize> = congested_hops
        .iter()
        .map(|&h| flow.port(&topology, h))
        .collect();
    let mut network = Network::new(
        &topology,
        config(TelemetryKind::SingleBit),
        Ids::Sequential,
        16,
    );
    let samples = network.trials(trials, packets, &flow, &congested_hops, |i| i % 10 < 3);
    for (port, on_route) in candidates_of(&topology, &flow) {
        let w = at(&samples, port, counts);
        let expected = if on_route { packets as f64 } else { 0.0 };
        assert_mean(&w, expected, sample_variance(&w), &format!("count {port}"));
        let c = at(&samples, port, congested);
        let expected = if congested_ports.contains(&port) {
            (packets * 3 / 10) as f64
        } else {
            0.0
        };
        assert_mean(
            &c,
            expected,
            sample_variance(&c),
            &format!("congested {port}"),
        );
    }
}

/// (f) Thesis 5.6: with 2-bit counters on a 5-hop path the counter saturates at 3, the last
/// hop is kept with probability 1/4 and each other with 3/16, so the expected weighted counts
/// are 9/16 N on the first four hops and 12/16 N on the fifth. A wrapping counter would read 0
/// at the fifth switch and leave N on the fifth hop and 0 elsewhere; 3-bit counters are exact.
#[test]
fn saturating_counter_matches_the_thesis_example() {
    let topology = radix8();
    let flow = Flow::new(&topology, 0, 127, 0);
    let packets = 100_000;
    for (bits, expected) in [
        (
            2u8,
            [9.0 / 16.0, 9.0 / 16.0, 9.0 / 16.0, 9.0 / 16.0, 12.0 / 16.0],
        ),
        (3, [1.0; 5]),
    ] {
        let mut cfg = config(TelemetryKind::Reservoir);
        cfg.hop_counter_bits = bits;
        // The count every packet arrives with: the path length, or the saturated counter.
        let weight = f64::from(cfg.hop_counter_max()).min(flow.hops() as f64);
        let mut network = Network::new(&topology, cfg, Ids::Sequential, 17);
        let mut collector = network.collector();
        for _ in 0..packets {
            network.send(&mut collector, &flow, &[]);
        }
        let samples = collector.finish();
        let counts = &samples.jobs[0][0].counts;
        for (hop, share) in expected.iter().enumerate() {
            // Per packet the hop gets `weight` with probability share / weight.
            let p = share / weight;
            let variance = packets as f64 * (weight * weight * p - share * share);
            let n = packets as f64;
            let count = counts[flow.port(&topology, hop)];
            assert!(
                (count - share * n).abs() <= 4.0 * variance.sqrt(),
                "{bits} bits, hop {hop}: {count} vs {}",
                share * n
            );
        }
    }
}

/// (g) Thesis 5.4, Theorem 5.1: for a fixed id != 0, `H_mult'(id, d) = 1` for half of the d:
/// exactly over a full period (2^20 values of d when id has 12 trailing zeros), and within
/// 4 standard errors of a fair coin over 2^20 consecutive d for other ids, small ones
/// included. The port keys of the real trees are distinct and never below 509.
#[test]
fn hash_is_balanced_over_ports() {
    let span = 1u32 << 20;
    let ones = |id: u32| (509..509 + span).map(|d| hash_bit(id, d)).sum::<u32>();
    assert_eq!(ones(5 << 12), span / 2, "a full period is exactly balanced");
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let mut ids = vec![1, 2, 3, 6, 44_974_351, 1 << 31, u32::MAX];
    ids.extend((0..8).map(|_| rng.next_u32() | 1));
    let tolerance = 4.0 * (0.25 / f64::from(span)).sqrt();
    for id in ids {
        let fraction = f64::from(ones(id)) / f64::from(span);
        assert!((fraction - 0.5).abs() <= tolerance, "id {id}: {fraction}");
    }
    for topology in [radix8(), Topology::full(), Topology::tapered()] {
        let mut keys: Vec<u32> = (0..topology.num_ports() as PortIndex)
            .map(|e| port_key(topology.port_ref(e)))
            .collect();
        assert!(keys.iter().all(|&d| d >= 509));
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(
            keys.len(),
            topology.num_ports(),
            "{}: keys collide",
            topology.name()
        );
    }
}

/// `H(id, d)` for every id of `ids`, packed 64 to a word, so agreement is a popcount.
fn hash_bits(ids: &[u32], key: u32) -> Vec<u64> {
    ids.chunks(64)
        .map(|chunk| {
            chunk.iter().enumerate().fold(0u64, |word, (i, &id)| {
                word | u64::from(hash_bit(id, key)) << i
            })
        })
        .collect()
}

/// Fraction of `ids` for which `H(id, d1) = H(id, d2)`.
fn agreement(ids: &[u32], d1: &[u64], d2: &[u64]) -> f64 {
    let differ: u32 = d1.iter().zip(d2).map(|(a, b)| (a ^ b).count_ones()).sum();
    1.0 - f64::from(differ) / ids.len() as f64
}

/// (g) Independence across ids, the property Theorem 5.2 hoped for: for two distinct ports of
/// a candidate set, `H(id, d1) = H(id, d2)` for half of the ids, so traffic on one port does
/// not show on the other. Random ids pass for every pair (within 4.5 standard errors, over
/// 2145 pairs). The engine's sequential ids make `H_mult'` a Weyl sequence: almost every pair
/// agrees for half the ids even more closely than coin flips, but a few pairs (about 1 in
/// 1000 on the full tree, keys related by a near-rational ratio) agree for up to 62 % of 2^16
/// consecutive ids; the check asks for 99 % of the pairs. The thesis' counterexample, the
/// small keys 2 and 6, agrees for 2/3 of the ids and fails it: that is why keys stay above 500.
#[test]
fn hashes_of_distinct_ports_agree_half_the_time() {
    let topology = Topology::full();
    let mut d = Vec::new();
    topology.candidate_ports(NodeId(0), NodeId(3563), &mut d);
    let keys: Vec<u32> = d
        .iter()
        .step_by(7)
        .map(|&e| port_key(topology.port_ref(e)))
        .collect();
    let count = 1usize << 16;
    let tolerance = 4.5 * (0.25 / count as f64).sqrt();
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let random: Vec<u32> = (0..count).map(|_| rng.next_u32()).collect();
    let sequential: Vec<u32> = (1..=count as u32).collect();
    for (ids, required_share) in [(random, 1.0), (sequential, 0.99)] {
        let bits: Vec<Vec<u64>> = keys.iter().map(|&key| hash_bits(&ids, key)).collect();
        let (mut pairs, mut balanced) = (0, 0);
        for (i, d1) in bits.iter().enumerate() {
            for d2 in &bits[i + 1..] {
                pairs += 1;
                if (agreement(&ids, d1, d2) - 0.5).abs() <= tolerance {
                    balanced += 1;
                }
            }
        }
        assert!(
            f64::from(balanced) >= required_share * f64::from(pairs),
            "{balanced} of {pairs} pairs agree on half the ids"
        );
    }
    let ids: Vec<u32> = (1..=count as u32).collect();
    let small = agreement(&ids, &hash_bits(&ids, 2), &hash_bits(&ids, 6));
    assert!((small - 2.0 / 3.0).abs() < 0.01, "keys 2 and 6: {small}");
}

/// (h) Tagging a fraction f of the packets: about f N packets reach the collector, and the
/// counts scaled by 1/f estimate N with variance N (l / f - 1). Unscaled counts would have
/// mean f N.
#[test]
fn tag_fraction_scales_up_to_all_packets() {
    let topology = radix8();
    let flow = Flow::new(&topology, 0, 127, 1);
    let fraction = 0.25;
    let mut cfg = config(TelemetryKind::Reservoir);
    cfg.tag_fraction = fraction;
    let (trials, packets) = (300, 4000);
    let n = packets as f64;
    let mut network = Network::new(&topology, cfg, Ids::Sequential, 19);
    let samples = network.trials(trials, packets, &flow, &[], |_| false);
    let tagged: Vec<f64> = samples.iter().map(|s| s.packets as f64).collect();
    assert_mean(
        &tagged,
        fraction * n,
        n * fraction * (1.0 - fraction),
        "tagged",
    );
    let moments = weighted_count_moments(
        &[PathFlow {
            packets: n,
            hops: flow.hops() as f64,
        }],
        fraction,
    );
    for hop in 0..flow.hops() {
        let port = flow.port(&topology, hop);
        let scaled: Vec<f64> = samples
            .iter()
            .map(|s| scale_to_all_packets(&s.counts, fraction)[port])
            .collect();
        assert_mean(&scaled, moments.mean, moments.variance, "scaled count");
        assert_variance(&scaled, moments.variance, "scaled count");
    }
}
