//! Where everything goes in a congested-fraction plot (thesis 3.4): one row per stage, cores
//! at the top, aggregation switches, leaves; under every leaf a column of its compute nodes,
//! numbered top to bottom, left to right. Wide trees may be cropped to the first leaves, with
//! the aggregation switches of their pods and every core (each core reaches every pod).

use crate::topology::{Level, SwitchId, Topology};

const LEFT: f64 = 110.0;
const RIGHT: f64 = 30.0;
/// Title, then a gap above the core row.
const TOP: f64 = 80.0;
/// Legend and its notes.
const BOTTOM: f64 = 80.0;
/// Below the node columns, for their labels.
const NODE_LABELS: f64 = 24.0;
/// Automatic sizes: a leaf column, the gap between stage rows, a node box and its gap.
const COLUMN: f64 = 24.0;
const ROW_GAP: f64 = 110.0;
const NODE_PITCH: f64 = 11.0;
const MIN_WIDTH: f64 = 760.0;

/// Pixel positions of one plot.
#[derive(Clone, Debug)]
pub struct Layout {
    pub width: u32,
    pub height: u32,
    /// The switches drawn, by level.
    pub leaves: Vec<SwitchId>,
    pub aggs: Vec<SwitchId>,
    pub cores: Vec<SwitchId>,
    /// Centre of every drawn switch, by switch number.
    centres: Vec<Option<(i32, i32)>>,
    /// y of the core, aggregation and leaf rows.
    pub rows: [i32; 3],
    pub switch_radius: u32,
    /// Top of the first node box, and a box's size and pitch.
    pub nodes_top: i32,
    pub node_size: (i32, i32),
    pub node_pitch: i32,
    pub nodes_per_leaf: u32,
    /// Width of the thickest link.
    pub max_stroke: u32,
    pub legend_top: i32,
    pub left: i32,
}

impl Layout {
    /// `crop_leaves`: draw only the first K leaves; `size`: the picture's pixels (otherwise
    /// chosen from the number of leaves and nodes per leaf).
    pub fn new(topology: &Topology, crop_leaves: Option<u32>, size: Option<(u32, u32)>) -> Self {
        let kept = crop_leaves.map_or(topology.num_leaves(), |k| k.clamp(1, topology.num_leaves()));
        let leaves: Vec<SwitchId> = (0..kept).map(SwitchId).collect();
        let pods: Vec<u32> = {
            let mut pods: Vec<u32> = leaves.iter().filter_map(|&l| topology.pod_of(l)).collect();
            pods.dedup();
            pods
        };
        let aggs: Vec<SwitchId> = topology
            .switches_at(Level::Aggregation)
            .map(SwitchId)
            .filter(|&a| topology.pod_of(a).is_some_and(|p| pods.contains(&p)))
            .collect();
        let cores: Vec<SwitchId> = topology.switches_at(Level::Core).map(SwitchId).collect();
        let npl = topology.nodes_per_leaf();

        let auto_nodes = f64::from(npl) * NODE_PITCH;
        let (width, height) = size.unwrap_or_else(|| {
            let w = (LEFT + RIGHT + f64::from(kept) * COLUMN).max(MIN_WIDTH);
            let h = TOP + 2.0 * ROW_GAP + 30.0 + auto_nodes + NODE_LABELS + BOTTOM;
            (w.round() as u32, h.round() as u32)
        });
        // Whatever the size, rows and node columns share the height in the automatic ratio.
        let free = (f64::from(height) - TOP - 30.0 - NODE_LABELS - BOTTOM).max(20.0);
        let scale = free / (2.0 * ROW_GAP + auto_nodes);
        let row_gap = ROW_GAP * scale;
        let pitch = (NODE_PITCH * scale).max(1.0);
        let plot_width = (f64::from(width) - LEFT - RIGHT).max(10.0);
        let column = plot_width / f64::from(kept);

        let rows = [TOP, TOP + row_gap, TOP + 2.0 * row_gap].map(|y| y.round() as i32);
        let mut centres = vec![None; topology.num_switches() as usize];
        let leaf_x = |i: usize| LEFT + (i as f64 + 0.5) * column;
        for (i, leaf) in leaves.iter().enumerate() {
            centres[leaf.0 as usize] = Some((leaf_x(i).round() as i32, rows[2]));
        }
        // The aggregation switches of a pod spread over the width of its drawn leaves.
        let aggs_per_pod = aggs.len() / pods.len().max(1);
        let mut agg_spacing = plot_width;
        for &pod in &pods {
            let in_pod: Vec<usize> = (0..leaves.len())
                .filter(|&i| topology.pod_of(leaves[i]) == Some(pod))
                .collect();
            let start = leaf_x(in_pod[0]) - column / 2.0;
            let span = in_pod.len() as f64 * column;
            let spacing = span / aggs_per_pod as f64;
            agg_spacing = agg_spacing.min(spacing);
            let pod_aggs = aggs.iter().filter(|&&a| topology.pod_of(a) == Some(pod));
            for (j, agg) in pod_aggs.enumerate() {
                let x = start + (j as f64 + 0.5) * spacing;
                centres[agg.0 as usize] = Some((x.round() as i32, rows[1]));
            }
        }
        let core_spacing = plot_width / cores.len().max(1) as f64;
        for (c, core) in cores.iter().enumerate() {
            let x = LEFT + (c as f64 + 0.5) * core_spacing;
            centres[core.0 as usize] = Some((x.round() as i32, rows[0]));
        }
        let closest = column.min(agg_spacing).min(core_spacing);
        let switch_radius = (closest / 3.0).clamp(2.0, 10.0).round() as u32;
        let nodes_top = rows[2] + switch_radius as i32 + 14;
        let node_width = (column * 0.6).clamp(2.0, 20.0);
        let node_height = (pitch - 2.0).max(1.0);
        Layout {
            width,
            height,
            leaves,
            aggs,
            cores,
            centres,
            rows,
            switch_radius,
            nodes_top,
            node_size: (node_width.round() as i32, node_height.round() as i32),
            node_pitch: pitch.round().max(1.0) as i32,
            nodes_per_leaf: npl,
            max_stroke: (column / 4.0).clamp(2.0, 8.0).round() as u32,
            legend_top: (f64::from(height) - BOTTOM + 10.0).round() as i32,
            left: LEFT as i32,
        }
    }

    /// Centre of a switch, if it is drawn.
    pub fn centre(&self, switch: SwitchId) -> Option<(i32, i32)> {
        self.centres.get(switch.0 as usize).copied().flatten()
    }

    /// Corners of the box of the `slot`-th node under a drawn leaf.
    pub fn node_box(&self, leaf: SwitchId, slot: u32) -> Option<[(i32, i32); 2]> {
        let (x, _) = self.centre(leaf)?;
        let top = self.nodes_top + slot as i32 * self.node_pitch;
        let half = self.node_size.0 / 2;
        Some([
            (x - half, top),
            (x - half + self.node_size.0, top + self.node_size.1),
        ])
    }

    /// y just under the node columns.
    pub fn nodes_bottom(&self) -> i32 {
        self.nodes_top + self.nodes_per_leaf as i32 * self.node_pitch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::FatTreeParams;

    #[test]
    fn crop_keeps_the_first_leaves_their_pods_and_every_core() {
        let t = Topology::new(FatTreeParams::radix8()).unwrap();
        let full = Layout::new(&t, None, None);
        assert_eq!(
            (full.leaves.len(), full.aggs.len(), full.cores.len()),
            (32, 32, 16)
        );
        let cropped = Layout::new(&t, Some(6), None);
        // Leaves 0-5 span pods 0 and 1 (4 leaves per pod): 8 aggregation switches.
        assert_eq!(
            (
                cropped.leaves.len(),
                cropped.aggs.len(),
                cropped.cores.len()
            ),
            (6, 8, 16)
        );
        assert!(cropped.centre(SwitchId(6)).is_none());
        assert!(cropped.aggs.iter().all(|&a| t.pod_of(a).unwrap() < 2));
    }

    #[test]
    fn everything_fits_in_the_requested_size() {
        let t = Topology::new(FatTreeParams::radix8()).unwrap();
        let l = Layout::new(&t, Some(8), Some((900, 600)));
        assert_eq!((l.width, l.height), (900, 600));
        for s in l.leaves.iter().chain(&l.aggs).chain(&l.cores) {
            let (x, y) = l.centre(*s).unwrap();
            assert!(x > 0 && x < 900 && y > 0 && y < 600, "{s:?} at {x},{y}");
        }
        assert!(l.rows[0] < l.rows[1] && l.rows[1] < l.rows[2]);
        assert!(l.nodes_bottom() < l.legend_top);
        let [_, (_, bottom)] = l.node_box(SwitchId(7), 3).unwrap();
        assert!(bottom <= l.nodes_bottom());
    }
}
