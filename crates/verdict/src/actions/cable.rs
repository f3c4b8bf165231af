//! A cable culprit's two ends and the hosts whose job traffic crosses it, from the pairs
//! the verdict probed: a pair whose `cables` hold it crosses it, and its `route` (each
//! switch's input port, then its output port, from A) puts the other end beside it.

use std::collections::BTreeSet;

use model::job::JobPair;

/// Both ends of `cable` (named by one end) as the pairs' routes show them, that end first;
/// just the one end when no route shows the other.
pub fn ends(pairs: &[JobPair], cable: &str) -> Vec<String> {
    let mut ends = vec![cable.to_string()];
    for pair in pairs.iter().filter(|p| p.cables.iter().any(|c| c == cable)) {
        let route = &pair.parts.route;
        let Some(i) = route.iter().position(|p| p == cable) else {
            continue;
        };
        // An input port (even index) is cabled to the previous hop: the switch before,
        // or A's RNIC; an output port (odd) to the next: the switch after, or B's RNIC.
        let other = if i % 2 == 0 {
            match i {
                0 => format!("{}/{}", pair.parts.a.host, pair.parts.a.rnic),
                _ => route[i - 1].clone(),
            }
        } else {
            match route.get(i + 1) {
                Some(next) => next.clone(),
                None => format!("{}/{}", pair.parts.b.host, pair.parts.b.rnic),
            }
        };
        ends.push(other);
        break;
    }
    ends
}

/// The hosts of the pairs that crossed `cable`: those whose job traffic crosses it.
pub fn hosts(pairs: &[JobPair], cable: &str) -> Vec<String> {
    let hosts: BTreeSet<String> = pairs
        .iter()
        .filter(|p| p.cables.iter().any(|c| c == cable))
        .flat_map(|p| [p.parts.a.host.clone(), p.parts.b.host.clone()])
        .collect();
    hosts.into_iter().collect()
}
