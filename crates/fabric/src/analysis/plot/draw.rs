//! Drawing one congested-fraction plot (thesis 3.4, Figure 3.1) on any plotters backend.
//!
//! Every link between two drawn switches with a congested fraction above 0 is one line (a
//! `polyline` in SVG), shaded and thickened by the fraction; uncongested links are left out,
//! as in the thesis. Switches are light blue circles, compute nodes boxes with a thin light
//! blue outline, filled with the colour of their leaf-to-node link. The legend uses filled
//! bars, never lines, so that lines are links only.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::font::FAMILY;
use super::layout::Layout;
use super::shade::{colour, thickness, OUTLINE_BLUE, SWITCH_BLUE};
use super::Diagram;
use crate::analysis::view::LinkView;
use crate::topology::{NodeId, Peer, PortIndex, PortRef, Topology};

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// What one picture shows.
pub struct Picture<'a> {
    pub topology: &'a Topology,
    pub view: &'a LinkView,
    pub layout: &'a Layout,
    pub diagram: Diagram,
}

/// Legend fractions.
const LEGEND: [f64; 5] = [0.1, 0.25, 0.5, 0.75, 1.0];

pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    picture: &Picture,
) -> DrawResult<DB> {
    area.fill(&WHITE)?;
    draw_links(area, picture)?;
    draw_switches(area, picture.layout)?;
    draw_nodes(area, picture)?;
    draw_labels(area, picture)?;
    draw_legend(area, picture)
}

/// The links drawn in `picture`: every link between two drawn switches whose fraction (by the
/// diagram's direction) is above 0, as (the lower switch's up port, the upper switch's down
/// port, fraction).
fn shaded_links(picture: &Picture) -> Vec<(PortRef, PortRef, f64)> {
    let (topology, layout) = (picture.topology, picture.layout);
    let mut links = Vec::new();
    for &switch in layout.leaves.iter().chain(&layout.aggs) {
        for port in topology.up_ports(switch) {
            let up = PortRef { switch, port };
            let Peer::Switch {
                switch: far,
                port: back,
            } = topology.peer(up)
            else {
                continue;
            };
            if layout.centre(far).is_none() {
                continue;
            }
            let down = PortRef {
                switch: far,
                port: back,
            };
            let f = link_fraction(picture, topology.port_index(up), topology.port_index(down));
            if f > 0.0 {
                links.push((up, down, f));
            }
        }
    }
    links
}

/// Congested fraction of a link as the diagram shows it, clamped to 0..=1 (sampling can
/// estimate more congested packets than packets, thesis 3.2).
fn link_fraction(picture: &Picture, up: PortIndex, down: PortIndex) -> f64 {
    let f = |e: PortIndex| picture.view.link(e).congested_fraction.clamp(0.0, 1.0);
    match picture.diagram {
        Diagram::Averaged => (f(up) + f(down)) / 2.0,
        Diagram::Up => f(up),
        Diagram::Down => f(down),
    }
}

/// A node box shows its leaf-to-node link; in the up diagram nothing, since the node-to-leaf
/// link leaves no switch and is never sampled (thesis 4.2, footnote on link A).
fn node_fraction(picture: &Picture, node: NodeId) -> Option<f64> {
    let topology = picture.topology;
    match picture.diagram {
        Diagram::Up => None,
        Diagram::Averaged | Diagram::Down => {
            let e = topology.port_index(topology.node_port(node));
            Some(picture.view.link(e).congested_fraction.clamp(0.0, 1.0))
        }
    }
}

fn draw_links<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    picture: &Picture,
) -> DrawResult<DB> {
    let layout = picture.layout;
    for (up, down, f) in shaded_links(picture) {
        let from = layout.centre(up.switch).expect("drawn switch");
        let to = layout.centre(down.switch).expect("drawn switch");
        let style = colour(f).stroke_width(thickness(f, layout.max_stroke));
        area.draw(&PathElement::new(vec![from, to], style))?;
    }
    Ok(())
}

fn draw_switches<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    layout: &Layout,
) -> DrawResult<DB> {
    for &switch in layout
        .cores
        .iter()
        .chain(&layout.aggs)
        .chain(&layout.leaves)
    {
        let centre = layout.centre(switch).expect("drawn switch");
        area.draw(&Circle::new(
            centre,
            layout.switch_radius,
            SWITCH_BLUE.filled(),
        ))?;
    }
    Ok(())
}

fn draw_nodes<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    picture: &Picture,
) -> DrawResult<DB> {
    let (topology, layout) = (picture.topology, picture.layout);
    for &leaf in &layout.leaves {
        for slot in 0..layout.nodes_per_leaf {
            let node = NodeId(leaf.0 * topology.nodes_per_leaf() + slot);
            let corners = layout.node_box(leaf, slot).expect("drawn leaf");
            if let Some(f) = node_fraction(picture, node).filter(|&f| f > 0.0) {
                area.draw(&Rectangle::new(corners, colour(f).filled()))?;
            }
            area.draw(&Rectangle::new(corners, OUTLINE_BLUE.stroke_width(1)))?;
        }
    }
    Ok(())
}

fn text_style(size: f64, pos: Pos) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK).pos(pos)
}

fn draw_labels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    picture: &Picture,
) -> DrawResult<DB> {
    let (topology, layout) = (picture.topology, picture.layout);
    let top_left = Pos::new(HPos::Left, VPos::Top);
    let direction = match picture.diagram {
        Diagram::Averaged => "both directions averaged",
        Diagram::Up => "up direction (towards the cores)",
        Diagram::Down => "down direction (towards the nodes)",
    };
    let kept = layout.leaves.len() as u32;
    let crop = if kept < topology.num_leaves() {
        format!(" - first {kept} of {} leaves", topology.num_leaves())
    } else {
        String::new()
    };
    area.draw_text(
        &format!("Congested fraction, {direction}{crop}"),
        &text_style(18.0, top_left),
        (10, 10),
    )?;
    area.draw_text(
        &picture.view.describe(),
        &text_style(13.0, top_left),
        (10, 34),
    )?;
    let left_middle = Pos::new(HPos::Left, VPos::Center);
    let stages = [
        ("core", layout.rows[0]),
        ("aggregation", layout.rows[1]),
        ("leaf", layout.rows[2]),
        ("nodes", layout.nodes_top + layout.node_size.1 / 2),
    ];
    for (name, y) in stages {
        area.draw_text(name, &text_style(13.0, left_middle), (10, y))?;
    }
    // The first node under a leaf, on every column that leaves room for its number.
    let column = match layout.leaves.as_slice() {
        [a, b, ..] => layout.centre(*b).unwrap().0 - layout.centre(*a).unwrap().0,
        _ => i32::MAX,
    };
    let every = (44 / column.max(1)).max(1) as usize;
    let centre_top = Pos::new(HPos::Center, VPos::Top);
    for &leaf in layout.leaves.iter().step_by(every) {
        let (x, _) = layout.centre(leaf).expect("drawn leaf");
        let first = leaf.0 * topology.nodes_per_leaf();
        area.draw_text(
            &first.to_string(),
            &text_style(10.0, centre_top),
            (x, layout.nodes_bottom() + 4),
        )?;
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    picture: &Picture,
) -> DrawResult<DB> {
    let layout = picture.layout;
    let y = layout.legend_top;
    let left_middle = Pos::new(HPos::Left, VPos::Center);
    area.draw_text(
        "congested fraction",
        &text_style(13.0, left_middle),
        (10, y + 10),
    )?;
    for (i, &f) in LEGEND.iter().enumerate() {
        let x = layout.left + 40 + i as i32 * 70;
        // A bar as thick as a link of this fraction, centred on the legend's line.
        let width = thickness(f, layout.max_stroke) as i32;
        let top = y + 10 - width / 2;
        area.draw(&Rectangle::new(
            [(x, top), (x + 50, top + width)],
            colour(f).filled(),
        ))?;
        area.draw_text(
            &format!("{f:.2}"),
            &text_style(11.0, Pos::new(HPos::Center, VPos::Top)),
            (x + 25, y + 20),
        )?;
    }
    let nodes = match picture.diagram {
        Diagram::Up => "node boxes empty: node -> leaf links leave no switch and are not sampled",
        Diagram::Averaged | Diagram::Down => {
            "node boxes: congested fraction of the leaf -> node link"
        }
    };
    area.draw_text(
        &format!("links without congestion are not drawn; {nodes}"),
        &text_style(11.0, left_middle),
        (10, y + 52),
    )?;
    Ok(())
}
