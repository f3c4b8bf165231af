//! How a host's sockets are joined, from the distances between them (ACPI SLIT, ACPI 6.5
//! section 5.2.17): the one rule of discovery from sysfs (`rdma`) and of other tools' host
//! files ([`crate::host_tree`]).

/// The links between `n` sockets as (lower, higher) index pairs, ascending: the pairs at the
/// smallest distance, then, at each next distance, every pair between groups still apart,
/// until all are joined. A whole distance is read before its pairs join, so every link of a
/// full mesh, a ring or the near pairs of a 2-hop topology is kept. A pair whose distance is
/// `None` is never a link.
pub fn joined_by_distance(
    n: usize,
    distance: impl Fn(usize, usize) -> Option<u64>,
) -> Vec<(usize, usize)> {
    let pairs: Vec<(usize, usize, u64)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .filter_map(|(a, b)| Some((a, b, distance(a, b)?)))
        .collect();
    let mut levels: Vec<u64> = pairs.iter().map(|&(_, _, d)| d).collect();
    levels.sort_unstable();
    levels.dedup();
    // Union-find: `group[i]` leads towards the root of socket i's group.
    let mut group: Vec<usize> = (0..n).collect();
    fn root(group: &mut [usize], mut i: usize) -> usize {
        while group[i] != i {
            group[i] = group[group[i]];
            i = group[i];
        }
        i
    }
    let mut links = Vec::new();
    for level in levels {
        let apart: Vec<(usize, usize)> = pairs
            .iter()
            .filter(|&&(a, b, d)| d == level && root(&mut group, a) != root(&mut group, b))
            .map(|&(a, b, _)| (a, b))
            .collect();
        for &(a, b) in &apart {
            let (ra, rb) = (root(&mut group, a), root(&mut group, b));
            group[ra] = rb;
        }
        links.extend(apart);
        if (0..n).all(|i| root(&mut group, i) == root(&mut group, 0)) {
            break;
        }
    }
    links.sort_unstable();
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(rows: &[[u64; 4]]) -> impl Fn(usize, usize) -> Option<u64> + '_ {
        |a, b| Some(rows[a][b])
    }

    #[test]
    fn sockets_join_at_the_nearest_distance_then_the_next() {
        // A ring of four: 0-1-2-3-0 at 20, diagonals at 30.
        let ring = [
            [10, 20, 30, 20],
            [20, 10, 20, 30],
            [30, 20, 10, 20],
            [20, 30, 20, 10],
        ];
        assert_eq!(
            joined_by_distance(4, matrix(&ring)),
            [(0, 1), (0, 3), (1, 2), (2, 3)]
        );
        // Two near pairs, far apart: every pair at the far distance between them.
        let pairs = [
            [10, 12, 30, 30],
            [12, 10, 30, 30],
            [30, 30, 10, 12],
            [30, 30, 12, 10],
        ];
        assert_eq!(
            joined_by_distance(4, matrix(&pairs)),
            [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
        );
        // A pair without a distance is never a link.
        assert_eq!(
            joined_by_distance(3, |a, b| (a == 0).then_some(10 + b as u64)),
            [(0, 1), (0, 2)]
        );
    }
}
