//! Memory-bus-induced host congestion (HotNets'22 3.2): "CPUs reading/writing data to
//! memory share the memory bus with the NIC performing DMA operations; when memory bus is
//! contended, CPUs are able to acquire a larger fraction of memory bus bandwidth than NIC".
//!
//! [`congested`] is asked, before a memory channel is called overloaded or failed
//! ([`crate::causes::link_cause`]), whether the uncore counters of its memory node show the
//! cores taking the bus:
//! - the cores (everything but the RNICs' DMA) move more than the RNICs do;
//! - what they leave of the node's bandwidth is less than a loopback at the fastest RNIC's
//!   line rate moves over the memory bus (read and write back: twice the rate), so the
//!   probe cannot reach its baseline however healthy the channel is;
//! - the RNICs carry no service traffic of their own there (their DMA is at most Thp_low of
//!   the fastest line rate): when they do, the paper's verdict stands, `link_overloaded`
//!   (Hostping 6 #11, #12: the RNICs carry the load).
//!
//! A memory channel that lost bandwidth has low utilisation, so the cores leave plenty and
//! `link_failure` stays the verdict.

use crate::evidence;
use crate::facts::Facts;
use model::{ComponentId, LinkId, LinkKind};

/// The evidence that the memory bus of one of `links` is taken by the cores, if one is.
pub(crate) fn congested(f: &Facts<'_>, links: &[LinkId]) -> Option<String> {
    let line = f.rnics.iter().map(|r| r.line_rate_gbps).fold(0.0, f64::max);
    links.iter().find_map(|id| {
        let link = f.host.link(id)?;
        if link.kind != LinkKind::MemoryChannel {
            return None;
        }
        let node: &ComponentId = &link.down;
        let bw = f.snapshot.memory.iter().find(|m| &m.node == node)?;
        let (capacity, total, rnic) = (bw.capacity_gbps?, bw.total_gbps?, bw.rnic_dma_gbps?);
        let cores = bw.cores_gbps()?;
        let left = (capacity - total).max(0.0);
        let needed = 2.0 * line;
        if capacity <= 0.0 || cores <= rnic || left >= needed || rnic > f.th.thp_low * line {
            return None;
        }
        // Nodes of one socket are counted together (NPS, SNC): say so.
        let node = match &bw.measured_with[..] {
            [] => node.to_string(),
            others => format!(
                "{node} with {} (the counters count their socket together)",
                others
                    .iter()
                    .map(ComponentId::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Some(format!(
            "the uncore counters read {node} moving {} of its {} ({}): {} from the cores and {} \
             of RNIC DMA, so the cores leave {}, less than the {} a loopback at the {} line \
             rate moves over the memory bus (read and write back); when CPU traffic and NIC \
             DMA exceed a node's bandwidth the CPUs win the larger share and DMA latency rises \
             (HotNets'22 3.2); the RNICs carry no service traffic there (so not \
             link_overloaded, Hostping 6 #11, #12) and the bus is busy, not idle (so not a \
             failed channel)",
            evidence::gbps(total),
            evidence::gbps(capacity),
            evidence::percent(total / capacity),
            evidence::gbps(cores),
            evidence::gbps(rnic),
            evidence::gbps(left),
            evidence::gbps(needed),
            evidence::gbps(line),
        ))
    })
}
