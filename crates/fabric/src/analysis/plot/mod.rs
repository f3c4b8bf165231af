//! Congested-fraction plots (thesis 3.4) as SVG and PNG, one per view, per direction when
//! asked, and one per arrival-time window (Figure 4.11).

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use thiserror::Error;

use super::view::{LinkView, ViewError, ViewSpec};
use crate::sim::SimResult;
use crate::topology::Topology;

mod draw;
pub mod font;
mod layout;
mod shade;

use layout::Layout;

/// One picture: both directions of every link averaged (the thesis' default), or one
/// direction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Diagram {
    /// Both directions of each link, averaged.
    Averaged,
    /// The links going up, towards the cores.
    Up,
    /// The links going down, towards the nodes.
    Down,
}

/// One averaged picture, or an up and a down one ("in figures where the link direction is
/// important, two diagrams will be shown").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Directions {
    /// One picture, directions averaged.
    Averaged,
    /// Two pictures, one per direction.
    Split,
}

impl Directions {
    /// The diagrams and the suffix of their file names.
    fn diagrams(self) -> &'static [(Diagram, &'static str)] {
        match self {
            Directions::Averaged => &[(Diagram::Averaged, "")],
            Directions::Split => &[(Diagram::Up, "-up"), (Diagram::Down, "-down")],
        }
    }
}

/// How congested-fraction plots are drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotOptions {
    /// One picture or one per direction.
    pub directions: Directions,
    /// Draw only the first K leaves (with their pods' aggregation switches and the cores).
    pub crop_leaves: Option<u32>,
    /// Pixels (width, height); chosen from the tree's size when `None`.
    pub size: Option<(u32, u32)>,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            directions: Directions::Averaged,
            crop_leaves: None,
            size: None,
        }
    }
}

/// Why a plot could not be written.
#[derive(Debug, Error)]
pub enum PlotError {
    /// The file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The plot file being written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The plotting library failed.
    #[error("drawing {what}: {reason}")]
    Draw {
        /// What was being drawn (the file).
        what: String,
        /// The library's error, in words.
        reason: String,
    },
    /// The view to plot could not be built from the run.
    #[error(transparent)]
    View(#[from] ViewError),
}

/// Lays out one diagram and draws it on the backend `open` makes for the picture's size;
/// `what` names the output in errors.
fn draw_on<DB: DrawingBackend>(
    topology: &Topology,
    view: &LinkView,
    diagram: Diagram,
    options: &PlotOptions,
    what: &str,
    open: impl FnOnce((u32, u32)) -> DB,
) -> Result<(), PlotError> {
    font::ensure_registered();
    let layout = Layout::new(topology, options.crop_leaves, options.size);
    let picture = draw::Picture {
        topology,
        view,
        layout: &layout,
        diagram,
    };
    let area = open((layout.width, layout.height)).into_drawing_area();
    draw::draw(&area, &picture)
        .and_then(|()| area.present())
        .map_err(|e| PlotError::Draw {
            what: what.to_string(),
            reason: e.to_string(),
        })
}

/// The SVG text of one diagram.
pub fn render_svg(
    topology: &Topology,
    view: &LinkView,
    diagram: Diagram,
    options: &PlotOptions,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    draw_on(topology, view, diagram, options, "SVG", |size| {
        SVGBackend::with_string(&mut svg, size)
    })?;
    Ok(svg)
}

/// One diagram as a PNG file.
pub fn write_png(
    topology: &Topology,
    view: &LinkView,
    diagram: Diagram,
    options: &PlotOptions,
    path: &Path,
) -> Result<(), PlotError> {
    let what = path.display().to_string();
    draw_on(topology, view, diagram, options, &what, |size| {
        BitMapBackend::new(path, size)
    })
}

/// `STEM.svg` and `STEM.png`, or `STEM-up.*` and `STEM-down.*` for split directions; returns
/// the files written.
pub fn write_plots(
    topology: &Topology,
    view: &LinkView,
    options: &PlotOptions,
    stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let mut written = Vec::new();
    for &(diagram, suffix) in options.directions.diagrams() {
        let svg_path = with_suffix(stem, suffix, "svg");
        let svg = render_svg(topology, view, diagram, options)?;
        std::fs::write(&svg_path, svg).map_err(|source| PlotError::Io {
            path: svg_path.clone(),
            source,
        })?;
        let png_path = with_suffix(stem, suffix, "png");
        write_png(topology, view, diagram, options, &png_path)?;
        written.push(svg_path);
        written.push(png_path);
    }
    Ok(written)
}

/// Figure 4.11: the plots of `spec`'s samples window by window (`STEM-w000.svg`, ...), for
/// every window in which the selected jobs' packets arrived; returns the files written.
pub fn write_window_plots(
    topology: &Topology,
    result: &SimResult,
    spec: &ViewSpec,
    options: &PlotOptions,
    stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let windows = result.telemetry.as_ref().map_or(0, |s| s.windows());
    let mut written = Vec::new();
    for window in 0..windows {
        let view = LinkView::build(topology, result, &spec.clone().in_window(window))?;
        if view.links.iter().all(|l| l.count <= 0.0) {
            continue;
        }
        let window_stem = with_suffix(stem, &format!("-w{window:03}"), "");
        written.extend(write_plots(topology, &view, options, &window_stem)?);
    }
    Ok(written)
}

/// `STEM` + `suffix` + `.ext` (no extension when `ext` is empty), beside `STEM`.
fn with_suffix(stem: &Path, suffix: &str, ext: &str) -> PathBuf {
    let mut name = stem.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    if !ext.is_empty() {
        name.push(".");
        name.push(ext);
    }
    stem.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_keep_the_folder() {
        let stem = Path::new("out/congested-fraction");
        assert_eq!(
            with_suffix(stem, "-up", "svg"),
            Path::new("out/congested-fraction-up.svg")
        );
        assert_eq!(
            with_suffix(stem, "-w002", ""),
            Path::new("out/congested-fraction-w002")
        );
    }
}
