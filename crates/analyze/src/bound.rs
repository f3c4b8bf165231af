//! Links that only latency-bound paths cross, judged down to the loss those paths could
//! have shown (Hostping 3.2.2, 4.3).
//!
//! Algorithm 1 calls a link normal only when a path at line rate crosses it: a GDR path
//! through the root complex is capped by the RNIC's outstanding reads over its round trip
//! (Hostping 3.2.2: 125.5 Gb/s at 2.2 us), so "if the bandwidth of a link degrades but is
//! still higher than the RNIC rate, the measured bandwidth is still close to the baseline"
//! (Hostping 4.3), and such a path stays uncertain. On a host where a link has no other
//! path (amd-2s: the GPUs under the root port without an RNIC, the narrow socket link that
//! caps every remote path below line rate), no probe of the plan can ever call it normal,
//! and leaving it uncertain makes every healthy idle check inconclusive.
//!
//! Such a link is still judged, as far as its paths reach: a path that carries `B` Gb/s
//! (its baseline) is abnormal once its bandwidth falls below `(1 - Abnormal_th) * B`, which
//! a link of capacity `C`, loaded `k` times by the loopback (2 for a memory channel's shared
//! bus), causes once it keeps less than `(1 - Abnormal_th) * B * k` of `C`. So a path as
//! expected says the link lost at most `1 - (1 - Abnormal_th) * B * k / C` of its capacity.
//! The link is marked normal with that bound ([`model::LinkBound`], the smallest over its
//! paths), and the report says it. Only links that no path of the host model reaches at
//! line rate are judged this way: where a line-rate path exists but was not judged (its
//! probe failed, it had no baseline), the link stays uncertain, since that path would have
//! judged it fully.

use crate::status::{PathVerdict, Reference};
use crate::tomography::{LinkVerdict, ObservedPath};
use model::{HostTopology, LinkBound, LinkStatus, PathStatus, Thresholds};

/// For each link (in `links` order): marks the uncertain links that only latency-bound
/// paths cross, and that such a path judged against its baseline as expected, normal; and
/// returns their bound (`None` for every other link).
pub(crate) fn judge(
    host: &HostTopology,
    observed: &[ObservedPath],
    verdicts: &[PathVerdict<'_>],
    observed_verdict: &[usize],
    links: &mut [LinkVerdict],
    th: &Thresholds,
) -> Vec<Option<LinkBound>> {
    links
        .iter_mut()
        .map(|v| {
            if v.status != LinkStatus::Uncertain {
                return None;
            }
            let link = host.link(&v.id).filter(|l| l.capacity_known)?;
            let full_rate = host
                .paths()
                .iter()
                .any(|p| p.affinitive && p.links.contains(&v.id));
            if full_rate {
                return None;
            }
            // (loss above which path j is abnormal, capacity below which, label), for each
            // latency-bound path judged against its baseline as expected.
            let mut seen: Vec<(f64, f64, String)> = observed
                .iter()
                .enumerate()
                .filter(|(_, p)| p.status == PathStatus::Uncertain && p.links.contains(&v.id))
                .filter_map(|(j, _)| {
                    let pv = &verdicts[observed_verdict[j]];
                    let judged = pv.error.is_none()
                        && pv.reference == Reference::Baseline
                        && pv.path.is_some_and(|p| p.capacity_known);
                    let base = pv.baseline_bandwidth_gbps.filter(|_| judged)?;
                    let below_gbps = (1.0 - th.abnormal_th) * base * link.kind.loopback_load();
                    let loss = (1.0 - below_gbps / link.capacity_gbps).clamp(0.0, 1.0);
                    Some((loss, below_gbps, pv.label()))
                })
                .collect();
            if seen.is_empty() {
                return None;
            }
            seen.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.2.cmp(&b.2)));
            let (loss_above, below_gbps, path) = seen[0].clone();
            let mut paths: Vec<String> = seen.into_iter().map(|(_, _, p)| p).collect();
            paths.sort();
            v.status = LinkStatus::Normal;
            Some(LinkBound {
                loss_above,
                below_gbps,
                path,
                paths,
            })
        })
        .collect()
}
