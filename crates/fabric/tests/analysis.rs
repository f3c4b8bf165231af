//! The analysis on hand-built samples of the radix-8 tree (128 nodes; leaves 0-31 with node
//! ports 0-3 and up ports 4-7 to aggregation switches 32-63, four per pod; aggregation up
//! ports 4-7 to cores 64-79), one situation per case study of thesis chapter 4.

use std::collections::HashSet;

use fabric::analysis::diagnose::{diagnose, Cause, Thresholds};
use fabric::analysis::plot::{
    render_svg, write_plots, write_window_plots, Diagram, Directions, PlotOptions,
};
use fabric::analysis::report::render_text;
use fabric::analysis::table::{ComparisonTable, ReferenceFigures, TableRow};
use fabric::analysis::view::{link_name, JobSelection, LinkView, Source, ViewSpec};
use fabric::sim::{GroundTruth, JobResult, SimConfig, SimResult};
use fabric::telemetry::{PortSamples, Samples, TelemetryConfig, TelemetryKind};
use fabric::topology::{FatTreeParams, NodeId, Peer, PortRef, SwitchId, Topology};

const SPAN_PS: u64 = 1_000_000_000; // 1 ms of arrivals
const PACKET: f64 = 4096.0;

fn tree() -> Topology {
    Topology::new(FatTreeParams::radix8()).unwrap()
}

fn port(switch: u32, port: u16) -> PortRef {
    PortRef {
        switch: SwitchId(switch),
        port,
    }
}

/// Traffic on one directed link: Gb/s over the span and the congested fraction.
#[derive(Copy, Clone)]
struct Load {
    port: PortRef,
    gbps: f64,
    fraction: f64,
}

fn load(port: PortRef, gbps: f64, fraction: f64) -> Load {
    Load {
        port,
        gbps,
        fraction,
    }
}

fn bytes_of(gbps: f64) -> f64 {
    gbps * SPAN_PS as f64 / 8000.0
}

/// Telemetry of one job (one window) that estimates exactly `loads`.
fn port_samples(t: &Topology, loads: &[Load]) -> PortSamples {
    let mut s = PortSamples::zeroed(t.num_ports(), false);
    for l in loads {
        let e = t.port_index(l.port) as usize;
        s.bytes[e] += bytes_of(l.gbps);
        s.counts[e] += bytes_of(l.gbps) / PACKET;
        s.congested[e] += bytes_of(l.gbps) / PACKET * l.fraction;
    }
    s.packets = 1000;
    s.first_arrival_ps = 5_000_000;
    s.last_arrival_ps = 5_000_000 + SPAN_PS;
    s
}

fn run(t: &Topology, jobs: &[(&str, Vec<PortSamples>)], kind: TelemetryKind) -> SimResult {
    SimResult {
        topology: t.name().to_string(),
        config: SimConfig::default(),
        counters: Vec::new(),
        sampling: None,
        end_ps: 2 * SPAN_PS,
        events: 0,
        packets_delivered: 0,
        wall_seconds: 0.0,
        jobs: jobs
            .iter()
            .map(|(name, _)| JobResult {
                name: name.to_string(),
                ..JobResult::default()
            })
            .collect(),
        ground_truth: GroundTruth::default(),
        telemetry: Some(Samples {
            config: TelemetryConfig {
                kind,
                ..TelemetryConfig::default()
            },
            window_ps: None,
            jobs: jobs.iter().map(|(_, windows)| windows.clone()).collect(),
        }),
    }
}

fn one_job(t: &Topology, loads: &[Load]) -> SimResult {
    run(
        t,
        &[("app", vec![port_samples(t, loads)])],
        TelemetryKind::Reservoir,
    )
}

fn all_samples() -> ViewSpec {
    ViewSpec::telemetry(JobSelection::All)
}

/// Thesis 4.3: every rank sends to rank 0 on node 0. The tree spreads from leaf 0's port to
/// node 0 up through the aggregation switches of pod 0, the cores, pod 1's aggregation
/// switches and leaf 4, and the other leaves of pod 0; leaf 8 carries some lightly congested
/// traffic and leaf 5 healthy traffic.
fn endpoint_loads() -> Vec<Load> {
    let mut loads = vec![load(port(0, 0), 95.0, 0.999)];
    for a in 0..4u32 {
        loads.push(load(port(32 + a, 0), 24.0, 0.9)); // aggregation -> leaf 0
        for c in 0..4u32 {
            loads.push(load(port(64 + 4 * a + c, 0), 4.0, 0.6)); // core -> pod 0
            loads.push(load(port(36 + a, 4 + c as u16), 4.0, 0.5)); // pod 1 -> core
        }
        loads.push(load(port(4, 4 + a as u16), 16.0, 0.3)); // leaf 4 up
        for leaf in 1..4 {
            loads.push(load(port(leaf, 4 + a as u16), 2.0, 0.4)); // pod 0 leaves up
        }
        loads.push(load(port(8, 4 + a as u16), 10.0, 0.1)); // below the threshold
    }
    loads.push(load(port(5, 1), 60.0, 0.0));
    loads
}

/// Thesis 4.2: leaves 0 and 2 send everything to their neighbours under leaves 1 and 3; their
/// up links are oversubscribed and run at line rate, the aggregation switches forward it
/// freely. Endpoint hotspots at nodes 80 and 84 are a secondary finding.
fn mapping_loads() -> Vec<Load> {
    let mut loads = Vec::new();
    for (from, to) in [(0u32, 1u16), (2, 3)] {
        for a in 0..4u32 {
            loads.push(load(port(from, 4 + a as u16), 98.0, 0.8));
            loads.push(load(port(32 + a, to), 98.0, 0.0));
        }
        for n in 0..4 {
            loads.push(load(port(u32::from(to), n), 98.0, 0.0));
        }
    }
    loads.push(load(port(20, 0), 98.0, 0.999));
    loads.push(load(port(21, 0), 10.0, 0.5));
    loads
}

/// Thesis 4.4: the primary's packets into leaf 1 meet congested aggregation -> leaf 1 links
/// that carry only 25 Gb/s of them; the background job oversubscribes node 6.
fn background_jobs(t: &Topology) -> SimResult {
    let mut primary = vec![
        load(port(1, 0), 50.0, 0.0),
        load(port(1, 1), 50.0, 0.0),
        load(port(64, 0), 25.0, 0.4),
    ];
    let mut background = vec![load(port(1, 2), 98.0, 0.95)];
    for a in 0..4u32 {
        primary.push(load(port(32 + a, 1), 25.0, 0.6));
        background.push(load(port(32 + a, 1), 70.0, 0.8));
    }
    run(
        t,
        &[
            ("primary", vec![port_samples(t, &primary)]),
            ("background", vec![port_samples(t, &background)]),
        ],
        TelemetryKind::Reservoir,
    )
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

#[test]
fn endpoint_congestion_is_the_communication_pattern() {
    let t = tree();
    let result = one_job(&t, &endpoint_loads());
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let d = diagnose(&t, &view, &Thresholds::default());
    assert_eq!(d.cause, Cause::CommunicationPattern);
    assert_eq!(d.causes.len(), 1);
    let roots = &d.evidence.roots;
    assert_eq!(roots.len(), 1, "one tree: {roots:?}");
    let root = &roots[0];
    assert_eq!(root.port, port(0, 0));
    assert_eq!(root.endpoint, Some(NodeId(0)));
    assert_eq!(root.link, "leaf 0 port 0 -> node 0");
    assert!(close(root.congested_fraction, 0.999, 1e-9));
    assert!(close(root.gbps, 95.0, 1e-6));
    assert_eq!(root.line_rate_gbps, 100.0);
    // 1 root + 4 aggregation->leaf 0 + 16 core->pod 0 + 16 pod 1->core + 4 leaf 4 + 12 pod 0.
    assert_eq!(root.tree_links, 53);
    assert_eq!(d.evidence.congested_links, 53);
    assert!(d.summary.contains("Theorem 4.1"), "{}", d.summary);
    assert!(d.summary.contains("tree reduction"));
    assert!(d.evidence.samples.all_jobs);
}

#[test]
fn saturated_internal_roots_are_the_mapping() {
    let t = tree();
    let result = one_job(&t, &mapping_loads());
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let d = diagnose(&t, &view, &Thresholds::default());
    assert_eq!(d.cause, Cause::Mapping);
    let mapping_roots: Vec<_> = d
        .evidence
        .roots
        .iter()
        .filter(|r| r.cause == Cause::Mapping)
        .collect();
    // Every oversubscribed leaf up link is its own root: the aggregation switch forwards it.
    assert_eq!(mapping_roots.len(), 8);
    for root in &mapping_roots {
        assert!([0, 2].contains(&root.port.switch.0) && t.is_up(root.port));
        assert!(close(root.gbps, 98.0, 1e-6) && close(root.congested_fraction, 0.8, 1e-9));
        assert_eq!(root.tree_links, 1);
    }
    // The hotspots at nodes 80 and 84 are reported beside it, with their share of the
    // congestion (14 %, enough to be named in the summary).
    assert_eq!(d.causes[1].cause, Cause::CommunicationPattern);
    assert_eq!(d.causes[1].trees, 2);
    let hotspots = 98.0 * 0.999 + 10.0 * 0.5;
    let internal = 8.0 * 98.0 * 0.8;
    assert!(close(
        d.causes[1].share,
        hotspots / (hotspots + internal),
        1e-9
    ));
    assert!(d.summary.contains("suggest-mapping"), "{}", d.summary);
    assert!(
        d.summary.contains("Also: communication_pattern (14 %"),
        "{}",
        d.summary
    );
    let leaf_up = d
        .evidence
        .stages
        .iter()
        .find(|s| s.stage == fabric::analysis::diagnose::Stage::LeafUp)
        .unwrap();
    assert_eq!((leaf_up.links, leaf_up.congested_links), (128, 8));

    // A hotspot holding under 5 % of the congestion is listed, not named in the summary.
    let mut loads = mapping_loads();
    loads.retain(|l| l.port.switch.0 < 20);
    loads.push(load(port(21, 0), 98.0, 0.3));
    let view = LinkView::build(&t, &one_job(&t, &loads), &all_samples()).unwrap();
    let d = diagnose(&t, &view, &Thresholds::default());
    assert_eq!(d.cause, Cause::Mapping);
    assert!(close(d.causes[1].share, 29.4 / (29.4 + internal), 1e-9));
    assert!(!d.summary.contains("Also"), "{}", d.summary);
}

#[test]
fn congestion_below_line_rate_in_own_samples_is_background_traffic() {
    let t = tree();
    let result = background_jobs(&t);
    let primary = JobSelection::parse("primary", &result.jobs).unwrap();
    let view = LinkView::build(&t, &result, &ViewSpec::telemetry(primary)).unwrap();
    let d = diagnose(&t, &view, &Thresholds::default());
    assert_eq!(d.cause, Cause::BackgroundTraffic);
    assert_eq!(d.evidence.samples.jobs, vec!["primary".to_string()]);
    assert!(!d.evidence.samples.all_jobs);
    let roots = &d.evidence.roots;
    assert_eq!(roots.len(), 4, "{roots:?}");
    for root in roots {
        assert_eq!(
            root.link,
            format!("aggregation {} port 1 -> leaf 1", root.port.switch.0)
        );
        assert!(close(root.gbps, 25.0, 1e-6));
        assert!(close(root.congested_fraction, 0.6, 1e-9));
    }
    // The congested core -> aggregation 32 link drains into one of them.
    assert_eq!(roots.iter().map(|r| r.tree_links).sum::<usize>(), 5);
    assert!(d.summary.contains("primary") && d.summary.contains("Theorem 4.2"));

    // The administrator's view, with every job's samples, finds the background job's
    // endpoint congestion at node 6 instead (thesis Figure 4.17).
    let everything = LinkView::build(&t, &result, &all_samples()).unwrap();
    let d = diagnose(&t, &everything, &Thresholds::default());
    assert_eq!(d.cause, Cause::CommunicationPattern);
    assert_eq!(d.evidence.roots[0].endpoint, Some(NodeId(6)));
    assert!(close(d.evidence.roots[0].gbps, 98.0, 1e-6));
}

/// Thesis 4.2 measured the root's rate while the traffic flowed ("using packet arrival time").
/// A primary job saturating aggregation -> leaf 1 links in the first of four windows, idle
/// after: over its own arrival span, or in that window, the root runs at line rate (mapping);
/// over the whole run it averages a quarter of line rate and reads as background traffic.
#[test]
fn the_time_base_decides_line_rate_for_bursty_traffic() {
    let t = tree();
    let primary: Vec<Load> = (0..4u32)
        .map(|a| load(port(32 + a, 1), 98.0, 0.6))
        .chain([load(port(1, 0), 98.0, 0.0)])
        .collect();
    let idle = PortSamples::zeroed(t.num_ports(), false);
    let background = port_samples(&t, &[load(port(9, 0), 10.0, 0.0)]);
    let mut result = run(
        &t,
        &[
            (
                "primary",
                vec![port_samples(&t, &primary), idle.clone(), idle.clone(), idle],
            ),
            ("background", vec![background; 4]),
        ],
        TelemetryKind::Reservoir,
    );
    result.telemetry.as_mut().unwrap().window_ps = Some(SPAN_PS);
    result.end_ps = 4 * SPAN_PS;
    let primary = ViewSpec::telemetry(JobSelection::Only(vec![0]));
    let whole_run = ViewSpec {
        time_base: fabric::analysis::view::TimeBase::WindowWidth,
        ..primary.clone()
    };
    let judge = |spec: &ViewSpec| {
        let view = LinkView::build(&t, &result, spec).unwrap();
        let d = diagnose(&t, &view, &Thresholds::default());
        (d.cause, d.evidence.roots[0].gbps)
    };
    let (cause, gbps) = judge(&primary);
    assert_eq!(cause, Cause::Mapping);
    assert!(close(gbps, 98.0, 1e-9));
    let (cause, gbps) = judge(&whole_run);
    assert_eq!(cause, Cause::BackgroundTraffic);
    assert!(close(gbps, 24.5, 1e-9));
    let (cause, gbps) = judge(&whole_run.clone().in_window(0));
    assert_eq!(cause, Cause::Mapping);
    assert!(close(gbps, 98.0, 1e-9));
}

/// Light congestion everywhere is no congestion; a link that looks fully congested on too few
/// samples to judge (thesis 3.3) keeps the run from that verdict: it is inconclusive and names
/// the link.
#[test]
fn light_congestion_is_none_and_thin_congestion_is_inconclusive() {
    let t = tree();
    let mut loads: Vec<Load> = (0..8).map(|leaf| load(port(leaf, 4), 30.0, 0.05)).collect();
    // Fully congested, but 7 weighted packets sampled: below min_count, even though with one
    // packet in ten tagged they stand for 70.
    loads.push(Load {
        port: port(9, 4),
        gbps: 7.0 * PACKET * 8000.0 / SPAN_PS as f64,
        fraction: 1.0,
    });
    let mut result = one_job(&t, &loads);
    result.telemetry.as_mut().unwrap().config.tag_fraction = 0.1;
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let thin = view.link(t.port_index(port(9, 4)));
    assert!(close(thin.count, 70.0, 1e-9) && close(thin.tagged_count, 7.0, 1e-9));
    let d = diagnose(&t, &view, &Thresholds::default());
    assert_eq!(d.cause, Cause::Inconclusive);
    assert!(d.causes.is_empty() && d.evidence.roots.is_empty());
    let not_judged = d.not_judged.as_ref().unwrap();
    assert_eq!(not_judged.links, vec![link_name(&t, port(9, 4))]);
    assert!(
        not_judged
            .reason
            .contains("1 link looks congested on fewer than 32"),
        "{}",
        not_judged.reason
    );
    assert!(render_text(&d).starts_with("diagnosis: inconclusive\n"));

    // Without the thin link, the light congestion is judged: none.
    loads.pop();
    let result = one_job(&t, &loads);
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let d = diagnose(&t, &view, &Thresholds::default());
    assert_eq!(d.cause, Cause::NoCongestion);
    assert!(d.not_judged.is_none());
    assert!(d.summary.contains("worst is 0.050"), "{}", d.summary);
    let text = render_text(&d);
    assert!(text.starts_with("diagnosis: no_congestion\n"));
}

#[test]
fn diagnosis_renders_and_serialises() {
    let t = tree();
    let result = one_job(&t, &endpoint_loads());
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let d = diagnose(&t, &view, &Thresholds::default());
    let text = render_text(&d);
    assert!(text.starts_with("diagnosis: communication_pattern\n"));
    assert!(text.contains("leaf 0 port 0 -> node 0"));
    assert!(text.contains("samples: simulated; reservoir telemetry of all jobs; whole run"));
    assert!(text.contains("leaf -> node"));
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["cause"], "communication_pattern");
    assert_eq!(
        json["evidence"]["roots"][0]["cause"],
        "communication_pattern"
    );
    assert_eq!(json["evidence"]["stages"][0]["stage"], "leaf_up");
    let back: fabric::analysis::Diagnosis = serde_json::from_value(json).unwrap();
    assert_eq!(back, d);
}

#[test]
fn ground_truth_view_uses_exact_counts_and_the_run_length() {
    let t = tree();
    let ports = t.num_ports();
    let mut result = one_job(&t, &[]);
    result.jobs.push(JobResult {
        name: "other".into(),
        ..JobResult::default()
    });
    let e = t.port_index(port(0, 0)) as usize;
    let mut truth = GroundTruth {
        packets: vec![vec![0; ports]; 2],
        congested: vec![vec![0; ports]; 2],
        bytes: vec![0; ports],
        busy_ps: vec![0; ports],
    };
    truth.packets[0][e] = 3000;
    truth.congested[0][e] = 2970;
    truth.packets[1][e] = 1000;
    truth.bytes[e] = 4000 * 4096;
    result.ground_truth = truth;
    let spec = ViewSpec::ground_truth(JobSelection::Only(vec![0]));
    let view = LinkView::build(&t, &result, &spec).unwrap();
    let link = view.link(e as u32);
    assert_eq!((link.count, link.congested), (3000.0, 2970.0));
    assert!(close(link.congested_fraction, 0.99, 1e-12));
    // Job 0's share of the bytes (3 of 4 packets) over the 2 ms run.
    let expected = 3000.0 * 4096.0 * 8.0 / (2 * SPAN_PS) as f64 * 1000.0;
    assert!(close(link.gbps, expected, 1e-9));
    assert_eq!(view.samples.source, Source::GroundTruth);
    assert!(view
        .describe()
        .contains("exact counts (ground truth) of job app (1 of 2 jobs)"));
    assert!(LinkView::build(&t, &result, &spec.in_window(0)).is_err());
}

#[test]
fn runs_without_telemetry_fall_back_to_the_ground_truth() {
    let t = tree();
    let mut result = one_job(&t, &[]);
    let spec = ViewSpec::for_run(&result, JobSelection::All);
    assert_eq!(spec.source, Source::Telemetry);
    result.telemetry.as_mut().unwrap().config.kind = TelemetryKind::Off;
    assert_eq!(
        LinkView::build(&t, &result, &spec).unwrap_err().to_string(),
        "the run has no telemetry samples (telemetry was off); use the ground truth"
    );
    assert_eq!(
        ViewSpec::for_run(&result, JobSelection::All).source,
        Source::GroundTruth
    );
    result.telemetry = None;
    assert_eq!(
        ViewSpec::for_run(&result, JobSelection::All).source,
        Source::GroundTruth
    );
}

#[test]
fn bandwidth_uses_arrival_span_or_window_width_and_tagging() {
    let t = tree();
    let mut result = one_job(&t, &[load(port(3, 2), 50.0, 0.5)]);
    let e = t.port_index(port(3, 2));
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    assert!(close(view.link(e).gbps, 50.0, 1e-9));
    let by_run = ViewSpec {
        time_base: fabric::analysis::view::TimeBase::WindowWidth,
        ..all_samples()
    };
    let view = LinkView::build(&t, &result, &by_run).unwrap();
    assert!(
        close(view.link(e).gbps, 25.0, 1e-9),
        "1 ms of bytes over a 2 ms run"
    );
    // Half the packets tagged: counts and bytes stand for twice as many, the fraction stays.
    result.telemetry.as_mut().unwrap().config.tag_fraction = 0.5;
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let link = view.link(e);
    assert!(close(link.gbps, 100.0, 1e-9));
    assert!(close(link.count, 2.0 * bytes_of(50.0) / PACKET, 1e-6));
    assert!(close(link.tagged_count, bytes_of(50.0) / PACKET, 1e-6));
    assert!(close(link.congested_fraction, 0.5, 1e-12));
}

#[test]
fn one_bit_threshold_zeroes_small_spurious_counts() {
    let t = tree();
    let (real, spurious) = (port(0, 4), port(40, 5));
    let mut s = PortSamples::zeroed(t.num_ports(), true);
    let (r, f) = (t.port_index(real) as usize, t.port_index(spurious) as usize);
    // Threshold L sqrt(Q) z with the diameter L = 5 and z = 2.326: Q = 100 gives 116.3.
    s.candidates[f] = 100;
    s.counts[f] = 110.0;
    s.bytes[f] = 110.0 * PACKET;
    s.congested_candidates[f] = 100;
    s.congested[f] = 110.0;
    // Q = 1000 gives 367.8: 3000 is real, and so are its 2400 congested.
    s.candidates[r] = 1000;
    s.counts[r] = 3000.0;
    s.bytes[r] = 3000.0 * PACKET;
    s.congested_candidates[r] = 1000;
    s.congested[r] = 2400.0;
    s.packets = 10;
    s.last_arrival_ps = SPAN_PS;
    for kind in [TelemetryKind::Reservoir1Bit, TelemetryKind::SingleBit] {
        let result = run(&t, &[("app", vec![s.clone()])], kind);
        let view = LinkView::build(&t, &result, &all_samples()).unwrap();
        let spurious = view.link(f as u32);
        assert_eq!(
            (spurious.count, spurious.congested, spurious.gbps),
            (0.0, 0.0, 0.0)
        );
        let real = view.link(r as u32);
        assert_eq!((real.count, real.congested), (3000.0, 2400.0));
        assert!(close(real.congested_fraction, 0.8, 1e-12));
    }
    // The full reservoir has no false positives to remove.
    let result = run(&t, &[("app", vec![s])], TelemetryKind::Reservoir);
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    assert_eq!(view.link(f as u32).count, 110.0);
}

/// A minimal XML check: tags nest and close, attributes are quoted, text has no stray `<`
/// or unescaped `&`. Returns the root element's name.
fn check_well_formed(xml: &str) -> String {
    let mut stack: Vec<String> = Vec::new();
    let mut root = None;
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"]
                    .iter()
                    .any(|e| entity.starts_with(e)),
                "unescaped & in {text:?}"
            );
        }
        let end = start + rest[start..].find('>').expect("tag closes");
        let tag = &rest[start + 1..end];
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
        if tag.starts_with('?') || tag.starts_with('!') {
        } else if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else {
            let name = tag
                .split_whitespace()
                .next()
                .expect("tag name")
                .trim_end_matches('/');
            if stack.is_empty() {
                assert!(root.is_none(), "two root elements");
                root = Some(name.to_string());
            }
            if !tag.ends_with('/') {
                stack.push(name.to_string());
            }
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    assert!(!rest.contains('>'));
    root.expect("a root element")
}

fn count(svg: &str, element: &str) -> usize {
    svg.matches(&format!("<{element} ")).count()
}

/// Physical switch-to-switch links with a congested fraction above 0 in either direction, and
/// in each direction.
fn shaded_links(t: &Topology, loads: &[Load]) -> (usize, usize, usize) {
    let mut both = HashSet::new();
    let (mut up, mut down) = (0, 0);
    for l in loads.iter().filter(|l| l.fraction > 0.0) {
        if let Peer::Switch { switch, port } = t.peer(l.port) {
            let far = PortRef { switch, port };
            both.insert(if t.is_up(l.port) {
                (l.port, far)
            } else {
                (far, l.port)
            });
            if t.is_up(l.port) {
                up += 1;
            } else {
                down += 1;
            }
        }
    }
    (both.len(), up, down)
}

#[test]
fn svg_has_one_shaded_line_per_congested_link() {
    let t = tree();
    let loads = endpoint_loads();
    let result = one_job(&t, &loads);
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let (both, up, down) = shaded_links(&t, &loads);
    assert_eq!((both, up, down), (56, 36, 20));
    let options = PlotOptions::default();
    let svg = render_svg(&t, &view, Diagram::Averaged, &options).unwrap();
    assert_eq!(check_well_formed(&svg), "svg");
    assert_eq!(count(&svg, "polyline"), both);
    // 32 leaves, 32 aggregation switches, 16 cores.
    assert_eq!(count(&svg, "circle"), 80);
    // Black boxes: node 0's (0.999) and the legend's bar for 1.0; every node has an outline.
    let black_boxes = svg
        .lines()
        .filter(|l| l.starts_with("<rect ") && l.contains("fill=\"#000000\""))
        .count();
    assert_eq!(black_boxes, 2);
    assert_eq!(svg.matches("stroke=\"#78AAD2\"").count(), 128);
    assert!(svg.contains("Congested fraction, both directions averaged"));
    assert!(svg.contains("simulated; reservoir telemetry of all jobs; whole run"));
    for (diagram, expected) in [(Diagram::Up, up), (Diagram::Down, down)] {
        let svg = render_svg(&t, &view, diagram, &options).unwrap();
        check_well_formed(&svg);
        assert_eq!(count(&svg, "polyline"), expected, "{diagram:?}");
    }
}

#[test]
fn crop_keeps_the_first_leaves() {
    let t = tree();
    let result = one_job(&t, &endpoint_loads());
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let options = PlotOptions {
        crop_leaves: Some(6),
        ..PlotOptions::default()
    };
    let svg = render_svg(&t, &view, Diagram::Averaged, &options).unwrap();
    check_well_formed(&svg);
    // Leaves 0-5, the 8 aggregation switches of pods 0 and 1, the 16 cores.
    assert_eq!(count(&svg, "circle"), 6 + 8 + 16);
    assert_eq!(svg.matches("stroke=\"#78AAD2\"").count(), 6 * 4);
    // Links among them: 4 aggregation->leaf 0, 16 core->pod 0, 16 pod 1->core, leaf 4's 4
    // and pod 0 leaves' 12; leaf 8 is cut off.
    assert_eq!(count(&svg, "polyline"), 52);
    assert!(svg.contains("first 6 of 32 leaves"));
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fabric-analysis-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn plot_files_are_svg_and_png_of_the_requested_size() {
    let t = tree();
    let result = one_job(&t, &endpoint_loads());
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let dir = scratch("files");
    let options = PlotOptions {
        directions: Directions::Split,
        crop_leaves: Some(8),
        size: Some((900, 640)),
    };
    let written = write_plots(&t, &view, &options, &dir.join("cf")).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["cf-up.svg", "cf-up.png", "cf-down.svg", "cf-down.png"]
    );
    for path in &written {
        let bytes = std::fs::read(path).unwrap();
        if path.extension().unwrap() == "png" {
            assert_eq!(png_size(&bytes), (900, 640));
        } else {
            let svg = String::from_utf8(bytes).unwrap();
            check_well_formed(&svg);
            assert!(svg.contains("width=\"900\" height=\"640\""));
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn window_series_plots_each_window_with_packets() {
    let t = tree();
    let busy = port_samples(&t, &endpoint_loads());
    let idle = PortSamples::zeroed(t.num_ports(), false);
    let mut result = run(
        &t,
        &[("app", vec![busy.clone(), idle, busy])],
        TelemetryKind::Reservoir,
    );
    result.telemetry.as_mut().unwrap().window_ps = Some(SPAN_PS);
    result.end_ps = 5 * SPAN_PS / 2;
    let spec = ViewSpec {
        time_base: fabric::analysis::view::TimeBase::WindowWidth,
        ..all_samples()
    };
    let root = t.port_index(port(0, 0));
    let first = LinkView::build(&t, &result, &spec.clone().in_window(0)).unwrap();
    assert!(first.describe().ends_with("window 0: 0.00-1.00 ms"));
    assert!(close(first.link(root).gbps, 95.0, 1e-9));
    // The run ended half way through the last window: its bytes took half the time.
    let last = LinkView::build(&t, &result, &spec.clone().in_window(2)).unwrap();
    assert!(last.describe().ends_with("window 2: 2.00-2.50 ms"));
    assert!(close(last.link(root).gbps, 190.0, 1e-9));
    let dir = scratch("windows");
    let options = PlotOptions {
        crop_leaves: Some(4),
        ..PlotOptions::default()
    };
    let written = write_window_plots(&t, &result, &spec, &options, &dir.join("cf")).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["cf-w000.svg", "cf-w000.png", "cf-w002.svg", "cf-w002.png"]
    );
    let svg = std::fs::read_to_string(&written[2]).unwrap();
    assert!(svg.contains("window 2: 2.00-2.50 ms"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn table_is_aligned_and_round_trips_through_json() {
    let t = tree();
    let result = one_job(&t, &mapping_loads());
    let view = LinkView::build(&t, &result, &all_samples()).unwrap();
    let job = JobResult {
        name: "stencil".into(),
        packets_delivered: 1000,
        total_hops: 2087,
        completion_ps: 61_186_000,
        finished: true,
        ..JobResult::default()
    };
    let thresholds = Thresholds::default();
    let row = TableRow::from_run("Row major", &job, &view, &thresholds);
    assert!(close(row.elapsed_us, 61.186, 1e-9));
    assert!(close(row.average_path_length, 2.087, 1e-12));
    assert!(close(row.worst_congested_fraction, 0.999, 1e-12));
    let congested = 8.0 * 98.0 * 0.8 + 98.0 * 0.999 + 10.0 * 0.5;
    let all = 8.0 * 98.0 * 3.0 + 98.0 + 10.0;
    assert!(close(row.congested_hop_fraction, congested / all, 1e-12));
    let unfinished = TableRow::from_run(
        "Random",
        &JobResult {
            finished: false,
            ..job.clone()
        },
        &view,
        &thresholds,
    );
    let table = ComparisonTable {
        title: "2-D stencil mappings (thesis Table 4.1)".into(),
        reference_label: "thesis".into(),
        rows: vec![
            row.with_reference(ReferenceFigures {
                elapsed_us: Some(61.186),
                average_path_length: Some(2.087),
            }),
            unfinished.with_reference(ReferenceFigures {
                elapsed_us: None,
                average_path_length: Some(4.657),
            }),
        ],
    };
    let text = table.render_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "2-D stencil mappings (thesis Table 4.1)");
    let grid = &lines[1..4];
    assert!(grid[0].contains("elapsed us") && grid[0].ends_with("thesis path"));
    assert!(grid[1].starts_with("Row major") && grid[2].starts_with("Random"));
    // Numbers are right-aligned: every column ends where its header ends.
    let width = grid[0].chars().count();
    assert!(grid.iter().all(|l| l.chars().count() == width), "{text}");
    let path_end = grid[0].find("avg path").unwrap() + "avg path".len();
    assert_eq!(&grid[1][path_end - 5..path_end], "2.087");
    assert!(grid[2].contains(">61.2") && grid[2].contains("  -  "));
    assert!(lines[4].contains("thesis columns: reference figures, not simulated"));
    let json = serde_json::to_string(&table).unwrap();
    let back: ComparisonTable = serde_json::from_str(&json).unwrap();
    assert_eq!(back, table);
}

/// Uniform traffic's load on a leaf's up links is the leaf's ranks' offer times the share of
/// the other ranks elsewhere, whatever the placement: 6 ranks a leaf at 10 Gb/s, 18 of the
/// other 23 on other leaves, over 2 up links of 100 Gb/s (3:1).
#[test]
fn uniform_load_on_a_leafs_up_links_is_its_ranks_offer_to_other_leaves() {
    use fabric::analysis::{oversubscription, UniformLoad};
    let t = Topology::new(FatTreeParams {
        name: "three-to-one".into(),
        radix: 8,
        nodes_per_leaf: 6,
        leaves: 4,
        leaves_per_pod: 4,
        aggs_per_pod: 2,
    })
    .unwrap();
    let load = UniformLoad {
        placement: (0..24).map(NodeId).collect(),
        rank_gbps: 10.0,
    };
    let o = oversubscription(&t, 100.0, &load).unwrap();
    assert_eq!((o.ranks, o.up_links), (6, 2));
    assert!(close(o.ratio, 3.0, 1e-9), "{o:?}");
    assert!(close(o.offered_gbps, 60.0 * 18.0 / 23.0, 1e-9), "{o:?}");
    assert!(close(o.up_gbps, 200.0, 1e-9), "{o:?}");
}
