//! Max-min fair sharing by progressive filling (water-filling).
//!
//! A small generic solver: resources have capacities, flows have a demand (`f64::INFINITY`
//! for an elastic flow) and use resources with coefficients (a loopback probe loads a
//! memory channel twice per unit of rate, Hostping 3.2.1 / `LinkKind::loopback_load`). All
//! unfrozen flows grow at the same rate; a flow freezes when it reaches its demand or when
//! a resource it uses saturates. The result is the max-min fair allocation: no flow can
//! grow without shrinking a flow that has no more.
//!
//! It knows nothing about hosts: [`crate::net`] builds the resources (link directions, RNIC
//! receive line rates) and the flows (service traffic, the probe).

/// One flow of the problem.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Flow {
    /// The most this flow wants; `f64::INFINITY` when it is elastic.
    pub demand: f64,
    /// `(resource, coefficient)`: a rate `x` puts `x * coefficient` on that resource.
    /// Coefficients are positive; a resource may appear once.
    pub usage: Vec<(usize, f64)>,
}

/// Relative tolerance under which a resource counts as saturated or a demand as met.
const TOLERANCE: f64 = 1e-9;

/// The max-min fair rates of `flows` over resources of the given capacities (negative
/// capacities count as zero). An elastic flow that uses no resource gets `f64::INFINITY`.
pub(crate) fn solve(capacity: &[f64], flows: &[Flow]) -> Vec<f64> {
    let mut rate = vec![0.0; flows.len()];
    let mut frozen: Vec<bool> = flows.iter().map(|f| f.demand <= 0.0).collect();
    let mut remaining: Vec<f64> = capacity.iter().map(|&c| c.max(0.0)).collect();
    let mut saturated = vec![false; capacity.len()];
    let mut weight = vec![0.0; capacity.len()];
    // Every round freezes at least one flow, so this loop runs at most flows.len() times.
    while frozen.iter().any(|f| !f) {
        weight.iter_mut().for_each(|w| *w = 0.0);
        for (flow, _) in flows.iter().zip(&frozen).filter(|(_, &fr)| !fr) {
            for &(r, c) in &flow.usage {
                weight[r] += c;
            }
        }
        // The largest common increment that breaks no capacity and no demand.
        let mut step = f64::INFINITY;
        for r in 0..remaining.len() {
            if weight[r] > 0.0 {
                step = step.min(remaining[r] / weight[r]);
            }
        }
        for (f, flow) in flows.iter().enumerate() {
            if !frozen[f] {
                step = step.min(flow.demand - rate[f]);
            }
        }
        if step.is_infinite() {
            // Only elastic flows that use no resource are left: nothing bounds them.
            for (f, r) in rate.iter_mut().enumerate() {
                if !frozen[f] {
                    *r = f64::INFINITY;
                    frozen[f] = true;
                }
            }
            break;
        }
        let step = step.max(0.0);
        for r in 0..remaining.len() {
            if weight[r] > 0.0 {
                remaining[r] -= step * weight[r];
                if remaining[r] <= TOLERANCE * capacity[r].abs().max(1.0) {
                    remaining[r] = 0.0;
                    saturated[r] = true;
                }
            }
        }
        for (f, flow) in flows.iter().enumerate() {
            if frozen[f] {
                continue;
            }
            rate[f] += step;
            let met = flow.demand.is_finite()
                && flow.demand - rate[f] <= TOLERANCE * flow.demand.max(1.0);
            if met {
                rate[f] = flow.demand;
            }
            if met || flow.usage.iter().any(|&(r, _)| saturated[r]) {
                frozen[f] = true;
            }
        }
    }
    rate
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn elastic(usage: &[(usize, f64)]) -> Flow {
        Flow {
            demand: f64::INFINITY,
            usage: usage.to_vec(),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn one_flow_gets_its_bottleneck() {
        let r = solve(
            &[252.0, 200.0, 126.0],
            &[elastic(&[(0, 1.0), (1, 1.0), (2, 1.0)])],
        );
        assert!(close(r[0], 126.0), "{r:?}");
    }

    #[test]
    fn coefficients_scale_the_load() {
        // A loopback over a memory channel loads it twice (Hostping 3.2.1).
        let r = solve(&[245.76], &[elastic(&[(0, 2.0)])]);
        assert!(close(r[0], 122.88), "{r:?}");
    }

    #[test]
    fn equal_elastic_flows_split_evenly() {
        let r = solve(
            &[90.0],
            &[
                elastic(&[(0, 1.0)]),
                elastic(&[(0, 1.0)]),
                elastic(&[(0, 1.0)]),
            ],
        );
        assert!(r.iter().all(|&x| close(x, 30.0)), "{r:?}");
    }

    #[test]
    fn demand_limited_flows_leave_the_rest_to_elastic_ones() {
        let flows = [
            Flow {
                demand: 37.5,
                usage: vec![(0, 1.0)],
            },
            Flow {
                demand: 37.5,
                usage: vec![(0, 1.0)],
            },
            elastic(&[(0, 1.0)]),
        ];
        let r = solve(&[200.0], &flows);
        assert!(
            close(r[0], 37.5) && close(r[1], 37.5) && close(r[2], 125.0),
            "{r:?}"
        );
    }

    #[test]
    fn classic_parking_lot() {
        // Two links of 10: a long flow over both, one short flow on each. Max-min gives 5
        // to everyone.
        let flows = [
            elastic(&[(0, 1.0), (1, 1.0)]),
            elastic(&[(0, 1.0)]),
            elastic(&[(1, 1.0)]),
        ];
        let r = solve(&[10.0, 10.0], &flows);
        assert!(r.iter().all(|&x| close(x, 5.0)), "{r:?}");
        // With the second link at 4: the long flow and the second short flow get 2 each,
        // and the first short flow takes the remaining 8 of the first link.
        let r = solve(&[10.0, 4.0], &flows);
        assert!(
            close(r[0], 2.0) && close(r[1], 8.0) && close(r[2], 2.0),
            "{r:?}"
        );
    }

    #[test]
    fn zero_capacity_and_unbounded_flows() {
        let r = solve(
            &[0.0, -3.0],
            &[elastic(&[(0, 1.0)]), elastic(&[(1, 1.0)]), elastic(&[])],
        );
        assert_eq!(r[0], 0.0);
        assert_eq!(r[1], 0.0);
        assert_eq!(r[2], f64::INFINITY);
        let r = solve(
            &[5.0],
            &[
                Flow {
                    demand: 3.0,
                    usage: vec![],
                },
                Flow {
                    demand: 0.0,
                    usage: vec![(0, 1.0)],
                },
            ],
        );
        assert_eq!(r, [3.0, 0.0]);
    }

    fn problem() -> impl Strategy<Value = (Vec<f64>, Vec<Flow>)> {
        (1usize..8).prop_flat_map(|n_res| {
            let caps = proptest::collection::vec(prop_oneof![Just(0.0), 0.0f64..1000.0], n_res);
            let flow = (
                prop_oneof![Just(f64::INFINITY), 0.0f64..600.0],
                proptest::collection::btree_map(
                    0..n_res,
                    prop_oneof![Just(1.0), Just(2.0), 0.1f64..4.0],
                    1..=n_res,
                ),
            )
                .prop_map(|(demand, usage)| Flow {
                    demand,
                    usage: usage.into_iter().collect(),
                });
            (caps, proptest::collection::vec(flow, 1..10))
        })
    }

    proptest! {
        #[test]
        fn allocation_is_feasible_and_max_min_fair((caps, flows) in problem()) {
            let rate = solve(&caps, &flows);
            let mut load = vec![0.0; caps.len()];
            for (f, flow) in flows.iter().enumerate() {
                prop_assert!(rate[f] >= 0.0 && rate[f] <= flow.demand, "flow {f}: {} of {}", rate[f], flow.demand);
                for &(r, c) in &flow.usage {
                    load[r] += rate[f] * c;
                }
            }
            let slack = |r: usize| 1e-6 * caps[r].max(1.0);
            for r in 0..caps.len() {
                prop_assert!(load[r] <= caps[r] + slack(r), "resource {r}: {} > {}", load[r], caps[r]);
            }
            // Every flow meets its demand, or crosses a saturated resource on which no
            // other flow has more than it (its bottleneck).
            for (f, flow) in flows.iter().enumerate() {
                if rate[f] >= flow.demand - 1e-6 * flow.demand.max(1.0) {
                    continue;
                }
                let bottlenecked = flow.usage.iter().any(|&(r, _)| {
                    load[r] >= caps[r] - slack(r)
                        && flows.iter().enumerate().all(|(g, other)| {
                            !other.usage.iter().any(|&(s, _)| s == r) || rate[g] <= rate[f] + 1e-6 * rate[f].max(1.0)
                        })
                });
                prop_assert!(bottlenecked, "flow {f} at {} has no bottleneck: {rate:?} {load:?}", rate[f]);
            }
        }
    }
}
