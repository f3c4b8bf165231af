//! Naming the cause of congestion from a link view (thesis 4.1 to 4.4).
//!
//! 1. Congested links: congested fraction at least [`Thresholds::congested_fraction`] over at
//!    least [`Thresholds::min_count`] weighted packets sampled.
//! 2. Congestion trees of those links (`trees`), each judged by its root:
//!    - the root leads to a compute node: endpoint congestion, the node receives more than
//!      its link carries, and no mapping can remove it (Theorem 4.1): `communication_pattern`;
//!    - the root is inside the network and its link runs near line rate (at least
//!      [`Thresholds::line_rate_fraction`] of it over the view's time span): the traffic these
//!      samples see saturates it (Theorem 4.2), so placing the ranks differently can relieve
//!      it: `mapping`;
//!    - the root is inside the network but its link carries well under line rate in samples
//!      that leave some jobs out: a root link is fully used (Theorem 4.2), so the rest is
//!      traffic these samples cannot see (thesis 4.4, "no port exceeds 30 Gbps"):
//!      `background_traffic`. With every job's samples nothing is unseen; such a root means
//!      the congestion came in bursts, and it stays `mapping`.
//! 3. The cause holding the most congested weighted count is the diagnosis; the others are
//!    reported beside it.
//! 4. Without a congested link, `no_congestion` needs every link that may be congested to have
//!    been judged: a view with no packet, none with [`Thresholds::min_count`] samples, or
//!    links that look congested on fewer (thesis 3.3) is `inconclusive`, naming them.

use serde::{Deserialize, Serialize};

use super::trees::{congestion_trees, CongestionTree};
use super::view::{link_name, switch_name, Direction, LinkStats, LinkView, SampleSet};
use crate::topology::{Level, NodeId, Peer, PortRef, Topology};

/// Why the application's packets met congestion.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The roots are endpoint links: a node receives more than its link carries, whatever the
    /// placement (Theorem 4.1; the naive reduction of thesis 4.3).
    CommunicationPattern,
    /// A root inside the network runs near line rate with the traffic the samples see: placing
    /// the ranks differently can relieve it (Theorem 4.2; the stencil's mappings of thesis 4.2).
    Mapping,
    /// A root inside the network is congested well under line rate in samples that leave jobs
    /// out: traffic they cannot see fills it (thesis 4.4).
    BackgroundTraffic,
    /// A root inside the network at line rate under traffic whose load on the leaves' up
    /// links no placement changes (uniform random traffic), offered beyond what a leaf's up
    /// links carry: the fabric is oversubscribed for this load, and no mapping relieves it
    /// ([`judge_uniform`]).
    Oversubscription,
    /// No link is congested.
    NoCongestion,
    /// No congestion was found in what could be judged, but too little was sampled to call the
    /// run free of it: nothing was delivered, no link has enough samples, or links look
    /// congested on too few samples to judge (thesis 3.3). Never a clean verdict.
    Inconclusive,
}

impl Cause {
    /// The cause's name in the JSON and the CLI (`communication_pattern`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::CommunicationPattern => "communication_pattern",
            Cause::Mapping => "mapping",
            Cause::BackgroundTraffic => "background_traffic",
            Cause::Oversubscription => "oversubscription",
            Cause::NoCongestion => "no_congestion",
            Cause::Inconclusive => "inconclusive",
        }
    }
}

/// The numbers the diagnosis judges by; they are part of its evidence.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A link is congested when at least this fraction of its packets were marked congested.
    /// 0.25: a persistently oversubscribed port marks nearly every packet (thesis 4.3: > 0.998
    /// at the root; 4.4: > 0.9), and the branches it spreads to most of theirs, while bursts
    /// of otherwise healthy traffic mark a few; a quarter keeps the branches and drops the
    /// bursts.
    pub congested_fraction: f64,
    /// ...over at least this many weighted packets sampled (tagged, thesis 5.1). The weighted
    /// count of N packets on paths of l hops has a coefficient of variation of
    /// sqrt((l - 1) / N) (thesis 3.3): 0.35 for N = 32 and l = 5, so fewer packets give
    /// fractions too noisy to act on.
    pub min_count: f64,
    /// Congestion spreads upstream from a congested link only to links at most 1 / this as
    /// congested (`trees`). 0.5: back-pressure congests a link at most while the queue after
    /// it is full, so a link more than twice as congested as every congested link after it
    /// is oversubscribed itself and roots its own tree; half leaves room for sampling noise
    /// (thesis 3.3) and for the head-of-line blocking that lets one full queue stall several
    /// inputs.
    pub upstream_ratio: f64,
    /// A root link runs at line rate when its estimated bandwidth is at least this fraction of
    /// it. 0.85: the thesis measured 101.9 and 92.6 Gb/s for saturated roots (4.2, 4.3) and
    /// under 30 Gb/s for a root driven by unseen traffic (4.4); the estimate's own error is
    /// about 10 %.
    pub line_rate_fraction: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            congested_fraction: 0.25,
            min_count: 32.0,
            upstream_ratio: 0.5,
            line_rate_fraction: 0.85,
        }
    }
}

impl Thresholds {
    /// Whether `link` is congested: at least [`Thresholds::congested_fraction`] of at least
    /// [`Thresholds::min_count`] tagged weighted packets.
    pub fn is_congested(&self, link: &LinkStats) -> bool {
        link.tagged_count >= self.min_count && link.congested_fraction >= self.congested_fraction
    }
}

/// How much of the congestion one cause explains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CauseShare {
    /// The cause these trees' roots were judged to have.
    pub cause: Cause,
    /// Congestion trees whose root it judged.
    pub trees: usize,
    /// Congested weighted count of its trees' links.
    pub congested_count: f64,
    /// Its part of the congested weighted count of all trees.
    pub share: f64,
}

/// The root link of a congestion tree, with what judged it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RootLink {
    /// The link in words (`leaf 0 port 0 -> node 0`).
    pub link: String,
    /// The root's switch output port.
    pub port: PortRef,
    /// The compute node it leads to (endpoint congestion).
    pub endpoint: Option<NodeId>,
    /// What the root's judgement named.
    pub cause: Cause,
    /// Congested fraction of the root link, in [0, 1].
    pub congested_fraction: f64,
    /// One standard deviation of that estimate (thesis 3.3; 0 for exact counts).
    pub congested_fraction_sd: f64,
    /// Estimated utilised bandwidth of the root link over the view's time span, Gb/s.
    pub gbps: f64,
    /// Line rate of the link, Gb/s (the comparison of [`Thresholds::line_rate_fraction`]).
    pub line_rate_gbps: f64,
    /// Links in the root's congestion tree.
    pub tree_links: usize,
    /// Congested weighted count of the tree's links.
    pub tree_congested_count: f64,
}

/// One stage of links, by the level they leave and their direction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Leaf to aggregation switch.
    LeafUp,
    /// Aggregation switch to core.
    AggregationUp,
    /// Core to aggregation switch.
    CoreDown,
    /// Aggregation switch to leaf.
    AggregationDown,
    /// Leaf to compute node: the endpoint links.
    LeafDown,
}

impl Stage {
    /// In path order: up from the leaves, over the cores, down to the nodes.
    pub const ALL: [Stage; 5] = [
        Stage::LeafUp,
        Stage::AggregationUp,
        Stage::CoreDown,
        Stage::AggregationDown,
        Stage::LeafDown,
    ];

    /// The stage a link belongs to.
    pub fn of(link: &LinkStats) -> Stage {
        match (link.level, link.direction) {
            (Level::Leaf, Direction::Up) => Stage::LeafUp,
            (Level::Aggregation, Direction::Up) => Stage::AggregationUp,
            (Level::Core, _) => Stage::CoreDown,
            (Level::Aggregation, Direction::Down) => Stage::AggregationDown,
            (Level::Leaf, Direction::Down) => Stage::LeafDown,
        }
    }

    /// The stage in words (`leaf -> aggregation`).
    pub fn describe(self) -> &'static str {
        match self {
            Stage::LeafUp => "leaf -> aggregation",
            Stage::AggregationUp => "aggregation -> core",
            Stage::CoreDown => "core -> aggregation",
            Stage::AggregationDown => "aggregation -> leaf",
            Stage::LeafDown => "leaf -> node",
        }
    }
}

/// The links of one [`Stage`] taken together: where along the paths congestion sits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// Which stage of links this is.
    pub stage: Stage,
    /// Links in the stage.
    pub links: usize,
    /// Of those, links congested by [`Thresholds::is_congested`].
    pub congested_links: usize,
    /// Weighted count of the stage's links (thesis 3.2).
    pub count: f64,
    /// Congested weighted count of the stage's links.
    pub congested_count: f64,
    /// `congested_count / count`.
    pub congested_fraction: f64,
    /// Highest congested fraction of a link with at least `min_count` weighted packets sampled.
    pub worst_fraction: f64,
}

/// What a diagnosis was judged from, for readers who want to check it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Which samples the view holds (jobs, window, telemetry).
    pub samples: SampleSet,
    /// [`SampleSet::describe`], for readers of the JSON.
    pub samples_described: String,
    /// The thresholds judged by.
    pub thresholds: Thresholds,
    /// Line rate of every link, each direction, Gb/s.
    pub line_rate_gbps: f64,
    /// Congested links in the view.
    pub congested_links: usize,
    /// Of all packet-hops in the view, the fraction marked congested (Table 4.1).
    pub congested_hop_fraction: f64,
    /// The largest trees' roots, at most [`MAX_LISTED_ROOTS`].
    pub roots: Vec<RootLink>,
    /// Roots beyond those listed.
    pub roots_not_listed: usize,
    /// Every [`Stage`] in path order.
    pub stages: Vec<StageSummary>,
}

/// The cause of congestion a link view shows (thesis 4.1 to 4.4), in words and with its
/// evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The dominant cause: the one holding the most congested weighted count.
    pub cause: Cause,
    /// In plain words: what was found, why it means this cause, and what to do.
    pub summary: String,
    /// Every cause found, dominant first (empty without congestion).
    pub causes: Vec<CauseShare>,
    /// What the diagnosis was judged from.
    pub evidence: Evidence,
    /// Set when the cause is [`Cause::Inconclusive`]: what could not be judged, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<NotJudged>,
    /// Set when the cause is [`Cause::Oversubscription`]: the leaf whose up links the traffic
    /// oversubscribes most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oversubscription: Option<Oversubscription>,
}

/// Uniform random traffic on a fat tree: each rank offers `rank_gbps` to destinations drawn
/// evenly from the other ranks, so the load on a leaf's up links depends on how many ranks
/// it holds, never on which ranks they are.
#[derive(Clone, Debug)]
pub struct UniformLoad {
    /// The node of each rank.
    pub placement: Vec<NodeId>,
    /// What each rank offers, Gb/s.
    pub rank_gbps: f64,
}

/// The leaf whose up links uniform traffic loads most, against what they carry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Oversubscription {
    /// The leaf (`leaf 3`).
    pub leaf: String,
    /// Ranks on it.
    pub ranks: usize,
    /// Line rate of their node links together, Gb/s.
    pub ranks_line_gbps: f64,
    /// Its up links (those present).
    pub up_links: usize,
    /// Their line rate together, Gb/s.
    pub up_gbps: f64,
    /// `ranks_line_gbps / up_gbps`: the leaf's oversubscription (32 for 32:1).
    pub ratio: f64,
    /// What the traffic offers up those links, whatever the placement, Gb/s: the ranks'
    /// offer times the share of the other ranks that run on other leaves.
    pub offered_gbps: f64,
}

/// The leaf of `topology` (a fat tree with a level above its leaves) whose up links `load`
/// loads most against their line rate (`link_gbps` where the tree has no rates per link);
/// `None` for a one-switch tree, a graph, or fewer than two ranks.
pub fn oversubscription(
    topology: &Topology,
    link_gbps: f64,
    load: &UniformLoad,
) -> Option<Oversubscription> {
    let ranks = load.placement.len();
    if topology.is_graph() || topology.num_aggs() == 0 || ranks < 2 {
        return None;
    }
    let rate = |port: PortRef| topology.link_rate_or(topology.port_index(port), link_gbps);
    let mut on_leaf = vec![Vec::new(); topology.num_leaves() as usize];
    for &node in &load.placement {
        on_leaf[topology.leaf_of(node).0 as usize].push(node);
    }
    on_leaf
        .iter()
        .enumerate()
        .filter(|(_, nodes)| !nodes.is_empty())
        .map(|(leaf, nodes)| {
            let switch = crate::topology::SwitchId(leaf as u32);
            let up: Vec<PortRef> = topology
                .up_ports(switch)
                .map(|port| PortRef { switch, port })
                .filter(|&port| !topology.is_absent(port))
                .collect();
            let up_gbps: f64 = up.iter().map(|&port| rate(port)).sum();
            let ranks_line_gbps: f64 = nodes
                .iter()
                .map(|&node| rate(topology.node_port(node)))
                .sum();
            let elsewhere = (ranks - nodes.len()) as f64 / (ranks - 1) as f64;
            Oversubscription {
                leaf: switch_name(topology, switch),
                ranks: nodes.len(),
                ranks_line_gbps,
                up_links: up.len(),
                up_gbps,
                ratio: ranks_line_gbps / up_gbps,
                offered_gbps: nodes.len() as f64 * load.rank_gbps * elsewhere,
            }
        })
        .max_by(|a, b| (a.offered_gbps / a.up_gbps).total_cmp(&(b.offered_gbps / b.up_gbps)))
}

/// `diagnosis` under uniform traffic (`load`): congestion rooted inside the network at line
/// rate is no mapping's when the traffic offers a leaf's up links more than they carry,
/// since no placement of uniform traffic changes that load (Theorem 4.2's oversubscribed
/// root, with the fabric as the cause): it is [`Cause::Oversubscription`], with the leaf's
/// figures. Any other diagnosis is returned as it is.
pub fn judge_uniform(
    mut diagnosis: Diagnosis,
    topology: &Topology,
    link_gbps: f64,
    load: &UniformLoad,
) -> Diagnosis {
    if diagnosis.cause != Cause::Mapping {
        return diagnosis;
    }
    let Some(worst) = oversubscription(topology, link_gbps, load) else {
        return diagnosis;
    };
    // The largest mapping tree's root is listed: trees are listed largest first.
    let listed = diagnosis
        .evidence
        .roots
        .iter()
        .any(|r| r.cause == Cause::Mapping);
    if worst.offered_gbps < worst.up_gbps || !listed {
        return diagnosis;
    }
    for share in &mut diagnosis.causes {
        if share.cause == Cause::Mapping {
            share.cause = Cause::Oversubscription;
        }
    }
    for root in &mut diagnosis.evidence.roots {
        if root.cause == Cause::Mapping {
            root.cause = Cause::Oversubscription;
        }
    }
    diagnosis.cause = Cause::Oversubscription;
    let main = diagnosis
        .evidence
        .roots
        .iter()
        .find(|r| r.cause == Cause::Oversubscription)
        .expect("listed, as checked above");
    let trees = diagnosis.causes[0].trees;
    let mut text = format!(
        "The fabric is oversubscribed for this load: {trees} congestion tree{} rooted at \
         switches, the largest at {} ({}, {}). The most loaded leaf, {}, holds {} ranks, {:.0} \
         Gb/s of node links, over {} up link{} of {:.0} Gb/s together ({:.1}:1 oversubscribed); uniform traffic \
         offers {:.0} Gb/s up them ({:.1} times what they carry) wherever its ranks run, so no \
         mapping relieves it: offer each rank under {:.1} Gb/s, or cable more up links.",
        plural(trees),
        far_switch(topology, main.port),
        root_facts(main),
        tree_size(main.tree_links),
        worst.leaf,
        worst.ranks,
        worst.ranks_line_gbps,
        worst.up_links,
        plural(worst.up_links),
        worst.up_gbps,
        worst.ratio,
        worst.offered_gbps,
        worst.offered_gbps / worst.up_gbps,
        load.rank_gbps * worst.up_gbps / worst.offered_gbps,
    );
    text += &also(&diagnosis.causes[1..]);
    diagnosis.summary = text;
    diagnosis.oversubscription = Some(worst);
    diagnosis
}

/// What a view could not judge (the cause is then [`Cause::Inconclusive`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NotJudged {
    /// Why, in words.
    pub reason: String,
    /// Links that look congested on too few samples to judge, at most [`MAX_LISTED_ROOTS`]
    /// (`leaf 0 port 0 -> node 0`); empty when nothing at all could be judged.
    pub links: Vec<String>,
    /// Such links beyond those listed.
    pub links_not_listed: usize,
}

/// Roots listed in the evidence, largest trees first; the others are only counted.
pub const MAX_LISTED_ROOTS: usize = 10;

/// The summary names another cause beside the dominant one when it holds at least this share
/// of the congestion; smaller ones are a few stray trees, listed in `causes` only.
pub const MENTIONED_SHARE: f64 = 0.05;

/// Diagnoses the congestion a view shows.
pub fn diagnose(topology: &Topology, view: &LinkView, thresholds: &Thresholds) -> Diagnosis {
    let trees = congestion_trees(
        topology,
        view,
        |e| thresholds.is_congested(view.link(e)),
        thresholds.upstream_ratio,
    );
    let roots: Vec<RootLink> = trees
        .iter()
        .map(|tree| root_link(topology, view, thresholds, tree))
        .collect();
    let causes = cause_shares(&roots);
    let found = causes.first().map(|c| c.cause);
    // A finding stands on the links that show it; "no congestion" needs every link that
    // might be congested to have been judged.
    let not_judged = match found {
        Some(_) => None,
        None => not_judged(topology, view, thresholds),
    };
    let cause = match (found, &not_judged) {
        (Some(cause), _) => cause,
        (None, Some(_)) => Cause::Inconclusive,
        (None, None) => Cause::NoCongestion,
    };
    let summary = match cause {
        Cause::NoCongestion => no_congestion_summary(topology, view, thresholds),
        Cause::Inconclusive => format!(
            "Inconclusive: {} No congestion was found in what could be judged, but the run \
             cannot be called free of it.",
            not_judged.as_ref().expect("set for inconclusive").reason
        ),
        _ => {
            let main = roots
                .iter()
                .find(|r| r.cause == cause)
                .expect("the dominant cause has a tree");
            let same = causes[0].trees;
            let mut text = cause_summary(topology, view, thresholds, main, same);
            text += &also(&causes[1..]);
            text
        }
    };
    let congested_links = view
        .links
        .iter()
        .filter(|l| thresholds.is_congested(l))
        .count();
    Diagnosis {
        cause,
        summary,
        causes,
        evidence: Evidence {
            samples: view.samples.clone(),
            samples_described: view.describe(),
            thresholds: *thresholds,
            line_rate_gbps: view.link_gbps,
            congested_links,
            congested_hop_fraction: view.congested_hop_fraction(),
            roots_not_listed: roots.len().saturating_sub(MAX_LISTED_ROOTS),
            roots: roots.into_iter().take(MAX_LISTED_ROOTS).collect(),
            stages: stage_summaries(view, thresholds),
        },
        not_judged,
        oversubscription: None,
    }
}

/// What keeps a view without congested links from being a verdict (thesis 3.3: a fraction
/// over fewer than [`Thresholds::min_count`] weighted packets is too noisy to act on): no
/// sample at all, no link sampled enough to judge, or links that look congested on too few
/// samples. `None` when every link that may be congested was judged.
fn not_judged(topology: &Topology, view: &LinkView, thresholds: &Thresholds) -> Option<NotJudged> {
    let min = thresholds.min_count;
    let busiest = view
        .links
        .iter()
        .filter(|l| l.tagged_count > 0.0)
        .max_by(|a, b| a.tagged_count.total_cmp(&b.tagged_count));
    let Some(busiest) = busiest else {
        return Some(NotJudged {
            reason: format!(
                "the samples ({}) hold no packet: nothing was delivered in them.",
                view.describe()
            ),
            links: Vec::new(),
            links_not_listed: 0,
        });
    };
    if busiest.tagged_count < min {
        return Some(NotJudged {
            reason: format!(
                "no link has {min} weighted packets sampled (the most is {:.0} on {}), too few \
                 to judge a congested fraction (thesis 3.3).",
                busiest.tagged_count,
                link_name(topology, busiest.port)
            ),
            links: Vec::new(),
            links_not_listed: 0,
        });
    }
    let mut thin: Vec<&LinkStats> = view
        .links
        .iter()
        .filter(|l| {
            l.tagged_count > 0.0
                && l.tagged_count < min
                && l.congested_fraction >= thresholds.congested_fraction
        })
        .collect();
    if thin.is_empty() {
        return None;
    }
    thin.sort_by(|a, b| b.congested.total_cmp(&a.congested));
    let worst = thin[0];
    Some(NotJudged {
        reason: format!(
            "{} link{} look{} congested on fewer than {min} weighted packets sampled, too few to \
             judge (thesis 3.3); the most congested packets are on {} (congested fraction {:.3} \
             +- {:.3} over {:.0} sampled).",
            thin.len(),
            plural(thin.len()),
            if thin.len() == 1 { "s" } else { "" },
            link_name(topology, worst.port),
            worst.congested_fraction,
            worst.congested_fraction_sd,
            worst.tagged_count
        ),
        links_not_listed: thin.len().saturating_sub(MAX_LISTED_ROOTS),
        links: thin
            .iter()
            .take(MAX_LISTED_ROOTS)
            .map(|l| link_name(topology, l.port))
            .collect(),
    })
}

/// Theorem 4.1 for a root at a compute node; Theorem 4.2, and its contrapositive when the
/// samples leave jobs out (thesis 4.4), for a root inside the network.
fn root_cause(
    root: &LinkStats,
    line_rate_gbps: f64,
    view: &LinkView,
    thresholds: &Thresholds,
) -> Cause {
    if root.endpoint.is_some() {
        Cause::CommunicationPattern
    } else if root.gbps >= thresholds.line_rate_fraction * line_rate_gbps {
        Cause::Mapping
    } else if !view.samples.all_jobs {
        Cause::BackgroundTraffic
    } else {
        Cause::Mapping
    }
}

fn root_link(
    topology: &Topology,
    view: &LinkView,
    thresholds: &Thresholds,
    tree: &CongestionTree,
) -> RootLink {
    let root = view.link(tree.root);
    let line_rate_gbps = line_rate(topology, view, root.port);
    RootLink {
        link: link_name(topology, root.port),
        port: root.port,
        endpoint: root.endpoint,
        cause: root_cause(root, line_rate_gbps, view, thresholds),
        congested_fraction: root.congested_fraction,
        congested_fraction_sd: root.congested_fraction_sd,
        gbps: root.gbps,
        line_rate_gbps,
        tree_links: tree.links.len(),
        tree_congested_count: tree.congested_count,
    }
}

/// The line rate of the link out of `port`: its own where the tree's links run at rates of
/// their own (a real fabric's QDR hosts under FDR10 trunks: a trunk at 36 Gb/s runs at 90 %
/// of its 40, not above the run's 32), the view's one rate otherwise.
fn line_rate(topology: &Topology, view: &LinkView, port: PortRef) -> f64 {
    topology.link_rate_or(topology.port_index(port), view.link_gbps)
}

/// Causes by the congested weighted count of their trees, largest first.
fn cause_shares(roots: &[RootLink]) -> Vec<CauseShare> {
    let total: f64 = roots.iter().map(|r| r.tree_congested_count).sum();
    let mut shares: Vec<CauseShare> = Vec::new();
    for root in roots {
        match shares.iter_mut().find(|s| s.cause == root.cause) {
            Some(share) => {
                share.trees += 1;
                share.congested_count += root.tree_congested_count;
            }
            None => shares.push(CauseShare {
                cause: root.cause,
                trees: 1,
                congested_count: root.tree_congested_count,
                share: 0.0,
            }),
        }
    }
    for share in &mut shares {
        share.share = if total > 0.0 {
            share.congested_count / total
        } else {
            0.0
        };
    }
    shares.sort_by(|a, b| b.congested_count.total_cmp(&a.congested_count));
    shares
}

/// "1 congested link", "53 congested links".
fn tree_size(links: usize) -> String {
    format!("{links} congested link{}", plural(links))
}

/// " Also: ..." for each cause after the dominant one with a share worth mentioning.
fn also(others: &[CauseShare]) -> String {
    others
        .iter()
        .filter(|c| c.share >= MENTIONED_SHARE)
        .map(|other| {
            format!(
                " Also: {} ({:.0} % of the congested packets, {} tree{}).",
                other.cause.as_str(),
                other.share * 100.0,
                other.trees,
                plural(other.trees)
            )
        })
        .collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// "leaf 0 port 0 -> node 0: congested fraction 0.999 ± 0.001, 92.6 of 100 Gb/s".
fn root_facts(root: &RootLink) -> String {
    format!(
        "{}: congested fraction {:.3} ± {:.3}, {:.1} of {:.0} Gb/s",
        root.link,
        root.congested_fraction,
        root.congested_fraction_sd,
        root.gbps,
        root.line_rate_gbps
    )
}

fn far_switch(topology: &Topology, port: PortRef) -> String {
    match topology.peer(port) {
        Peer::Switch { switch, .. } => switch_name(topology, switch),
        Peer::Node(node) => format!("node {}", node.0),
    }
}

fn cause_summary(
    topology: &Topology,
    view: &LinkView,
    thresholds: &Thresholds,
    main: &RootLink,
    trees: usize,
) -> String {
    let percent = thresholds.line_rate_fraction * 100.0;
    match main.cause {
        Cause::CommunicationPattern => format!(
            "Endpoint congestion: {trees} congestion tree{} rooted at compute nodes, the largest \
             at {} ({}, {}). The node receives more than its link can carry, and \
             no mapping of ranks to nodes removes endpoint congestion (Theorem 4.1): change the \
             communication pattern, e.g. a tree reduction (MPI_Reduce) instead of every rank \
             sending to one.",
            plural(trees),
            far_switch(topology, main.port),
            root_facts(main),
            tree_size(main.tree_links),
        ),
        Cause::Mapping => {
            let mut text = format!(
                "Congestion inside the network: {trees} congestion tree{} rooted at switches, the \
                 largest at {} ({}, {}), with no endpoint congestion behind it. \
                 The root links of a congestion tree are saturated by the traffic that \
                 oversubscribes them (Theorem 4.2), and these samples see that traffic: the \
                 placement of ranks concentrates it. A mapping with more locality should relieve \
                 it: try `hostping fabric suggest-mapping`.",
                plural(trees),
                far_switch(topology, main.port),
                root_facts(main),
                tree_size(main.tree_links),
            );
            if main.gbps < thresholds.line_rate_fraction * main.line_rate_gbps {
                text += &format!(
                    " The root carries less than {percent:.0} % of line rate on average, so the \
                     congestion came in bursts; plots by time window (Figure 4.11) show when."
                );
            }
            text
        }
        Cause::BackgroundTraffic => format!(
            "Congestion inside the network that the samples of {} cannot explain: {trees} \
             congestion tree{} rooted at switches, the largest at {} ({}, {}), \
             below {percent:.0} % of line rate. The root links of a congestion tree run at line \
             rate (Theorem 4.2), so traffic these samples do not see, another application's, \
             fills them. It may be gone next run; the application need not change.",
            view.samples.jobs.join(", "),
            plural(trees),
            far_switch(topology, main.port),
            root_facts(main),
            tree_size(main.tree_links),
        ),
        Cause::NoCongestion | Cause::Inconclusive | Cause::Oversubscription => {
            unreachable!("a tree's root is judged one of the three causes above")
        }
    }
}

fn no_congestion_summary(topology: &Topology, view: &LinkView, thresholds: &Thresholds) -> String {
    let rule = format!(
        "no link has a congested fraction of at least {} over at least {} weighted packets \
         sampled",
        thresholds.congested_fraction, thresholds.min_count
    );
    match view.worst_link(thresholds.min_count) {
        Some(worst) if worst.congested > 0.0 => format!(
            "No significant congestion: {rule} (the worst is {:.3} on {}).",
            worst.congested_fraction,
            link_name(topology, worst.port)
        ),
        _ => format!("No significant congestion: {rule}; no packet was marked congested."),
    }
}

fn stage_summaries(view: &LinkView, thresholds: &Thresholds) -> Vec<StageSummary> {
    Stage::ALL
        .iter()
        .map(|&stage| {
            let links: Vec<&LinkStats> = view
                .links
                .iter()
                .filter(|l| Stage::of(l) == stage)
                .collect();
            let count: f64 = links.iter().map(|l| l.count.max(0.0)).sum();
            let congested_count: f64 = links.iter().map(|l| l.congested.max(0.0)).sum();
            StageSummary {
                stage,
                links: links.len(),
                congested_links: links.iter().filter(|l| thresholds.is_congested(l)).count(),
                count,
                congested_count,
                congested_fraction: crate::telemetry::estimate::congested_fraction(
                    congested_count,
                    count,
                ),
                worst_fraction: links
                    .iter()
                    .filter(|l| l.tagged_count >= thresholds.min_count)
                    .map(|l| l.congested_fraction)
                    .fold(0.0, f64::max),
            }
        })
        .filter(|s| s.links > 0)
        .collect()
}
