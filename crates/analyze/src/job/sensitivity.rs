//! How small a loss the job's measurements could have seen, layer by layer (issue 38
//! section 1). A host path is abnormal only once its bandwidth falls Abnormal_th below its
//! baseline (Hostping 5: 20 %), and a pair's network part only once its rate falls
//! Abnormal_th below what its hosts' paths and the healthy fabric allow
//! ([`crate::pair::judge`]): a link or a cable that keeps 80 % of its rate answers healthy.
//! A verdict of `neither` is only as fine as these bounds, and says them.

use std::collections::BTreeMap;

use model::job::{JobEvidence, LayerSensitivity, Sensitivity};
use model::{LinkStatus, PathStatus, Report};

use super::hosts::Hosts;
use crate::pair::pair_th;

/// The bounds of the hosts' checks (on the job's paths they judged) and of the pairs whose
/// network part was judged, each with the thresholds they were judged with.
pub fn of(evidence: &JobEvidence, hosts: &Hosts<'_>) -> Sensitivity {
    Sensitivity {
        host: host_layer(evidence, hosts),
        network: network_layer(evidence),
    }
}

/// A job path is abnormal once its bandwidth is more than its host's Abnormal_th below its
/// baseline; a link on it that only latency-bound paths judged (`links[].bound`) is seen
/// from its own, larger, loss on.
fn host_layer(evidence: &JobEvidence, hosts: &Hosts<'_>) -> LayerSensitivity {
    let mut threshold: Option<f64> = None;
    // (loss, host, link) of the job paths' links judged only down to a bound.
    let mut bounded: Option<(f64, String, String)> = None;
    for host in &evidence.hosts {
        let Some(report) = &host.report else { continue };
        let judged = hosts
            .segments
            .iter()
            .any(|s| s.host == host.host && s.status != PathStatus::Uncertain);
        if !judged {
            continue;
        }
        let th = report.judged_with().abnormal_th;
        threshold = Some(threshold.map_or(th, |t| t.max(th)));
        for link in job_path_bounds(report, host) {
            if !matches!(&bounded, Some((loss, _, _)) if *loss >= link.0) {
                bounded = Some((link.0, host.host.clone(), link.1));
            }
        }
    }
    let Some(th) = threshold else {
        return LayerSensitivity {
            min_visible_loss: None,
            basis: "no host's check judged a job path".to_string(),
        };
    };
    let mut basis = format!(
        "a job path is abnormal once its bandwidth falls more than {} below its baseline \
         (Abnormal_th): a link on it that loses up to {} of what the path carries does not \
         show (more on a link wider than the path)",
        percent(th),
        percent(th)
    );
    let mut loss = th;
    if let Some((bound, host, link)) = bounded.filter(|(b, _, _)| *b > th) {
        basis.push_str(&format!(
            "; {link} on {host}, which only latency-bound paths cross, was judged only down \
             to a loss of {}",
            percent(bound)
        ));
        loss = bound;
    }
    LayerSensitivity {
        min_visible_loss: Some(loss),
        basis,
    }
}

/// The bounds (`loss_above`, link) of the links on `host`'s job paths that its check judged
/// only down to a bound.
fn job_path_bounds<'r>(
    report: &'r Report,
    host: &'r model::job::JobHost,
) -> impl Iterator<Item = (f64, String)> + 'r {
    report
        .links
        .iter()
        .filter(|l| l.status == LinkStatus::Normal)
        .filter(|l| host.job_paths.iter().any(|p| p.links.contains(&l.id)))
        .filter_map(|l| l.bound.as_ref().map(|b| (b.loss_above, l.id.to_string())))
}

/// A pair's network part is abnormal once its rate falls more than Abnormal_th (the larger
/// of its two hosts', as the collector judges it) below what its hosts' paths and the
/// healthy fabric allow, or its latency rises that far above the healthy fabric's.
fn network_layer(evidence: &JobEvidence) -> LayerSensitivity {
    let by_host: BTreeMap<String, f64> = evidence
        .hosts
        .iter()
        .filter_map(|h| Some((h.host.clone(), h.report.as_ref()?.judged_with().abnormal_th)))
        .collect();
    let threshold = evidence
        .pairs
        .iter()
        .filter(|p| {
            matches!(
                p.parts.network_status,
                model::pair::PartStatus::Normal | model::pair::PartStatus::Abnormal
            )
        })
        .map(|p| pair_th(&by_host, &p.parts.a.host, &p.parts.b.host))
        .reduce(f64::max);
    let Some(th) = threshold else {
        return LayerSensitivity {
            min_visible_loss: None,
            basis: "no pair's network part was judged".to_string(),
        };
    };
    LayerSensitivity {
        min_visible_loss: Some(th),
        basis: format!(
            "a pair's network part is abnormal once its rate falls more than {} below what \
             its hosts' paths and the healthy fabric allow, or its latency rises {} above \
             the healthy fabric's (Abnormal_th; against a recorded baseline, also past both \
             probes' noise): a cable that keeps more than {} of its rate does not show \
             (less where the pair's host paths are slower than the cable); switch-port \
             counters see errors and waits, not a lower rate",
            percent(th),
            percent(th),
            percent(1.0 - th)
        ),
    }
}

/// `20 %`.
pub fn percent(fraction: f64) -> String {
    format!("{:.0} %", fraction * 100.0)
}

#[cfg(test)]
mod tests {
    use model::job::Verdict;
    use model::pair::PartStatus;
    use model::PathStatus;

    use crate::job::judge;
    use crate::job::tests::{evidence, host, pair, report};

    #[test]
    fn a_healthy_job_says_the_smallest_loss_each_layer_could_have_seen() {
        let e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![pair(PartStatus::Normal)],
        );
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Neither, "{}", r.summary);
        assert_eq!(r.sensitivity.host.min_visible_loss, Some(0.2));
        assert_eq!(r.sensitivity.network.min_visible_loss, Some(0.2));
        assert!(
            r.summary.contains("up to 20 %") && r.summary.contains("would not show"),
            "{}",
            r.summary
        );
    }

    #[test]
    fn a_hosts_own_thresholds_and_a_latency_bound_link_widen_the_bound() {
        let mut loose = report("n2", PathStatus::Normal);
        loose.thresholds = Some(model::Thresholds {
            abnormal_th: 0.3,
            ..model::Thresholds::default()
        });
        let mut e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(loose)),
            ],
            vec![pair(PartStatus::Normal)],
        );
        let r = judge(&e);
        assert_eq!(r.sensitivity.host.min_visible_loss, Some(0.3));
        // The pair is judged at the larger Abnormal_th of its two hosts.
        assert_eq!(r.sensitivity.network.min_visible_loss, Some(0.3));
        // n1's job path crosses a link only latency-bound paths judged, down to 60 %.
        let n1 = &mut e.hosts[0];
        n1.job_paths[0].links = vec!["gpu0--lsw0".into()];
        n1.report.as_mut().unwrap().links = vec![model::LinkReport {
            id: "gpu0--lsw0".into(),
            kind: model::LinkKind::GpuPcie,
            status: model::LinkStatus::Normal,
            abnormal_cnt: 0,
            utilisation: None,
            bound: Some(model::LinkBound {
                loss_above: 0.6,
                below_gbps: 100.0,
                path: "rnic0->gpu0".into(),
                paths: vec!["rnic0->gpu0".into()],
            }),
        }];
        let r = judge(&e);
        assert_eq!(r.sensitivity.host.min_visible_loss, Some(0.6));
        assert!(
            r.sensitivity.host.basis.contains("gpu0--lsw0 on n1"),
            "{}",
            r.sensitivity.host.basis
        );
    }

    #[test]
    fn what_was_not_measured_has_no_bound() {
        let e = evidence(vec![host("n1", None), host("n2", None)], vec![]);
        let r = judge(&e);
        assert_eq!(r.sensitivity.host.min_visible_loss, None);
        assert_eq!(r.sensitivity.network.min_visible_loss, None);
    }
}
