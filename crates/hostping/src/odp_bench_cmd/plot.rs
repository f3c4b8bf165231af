//! `odp-bench --plot FILE`: the report as a picture, SVG or PNG by the file's extension, of
//! any report, measured or simulated (the title says which). Damming: elapsed ms against the
//! interval (ISPASS'21's "Execution time of the microbench"); flood: elapsed seconds and
//! packets against QPs, side by side (its Figures (a) and (b)). The font is the one the
//! fabric plots carry ([`fabric::analysis::plot::font`]).

use fabric::analysis::plot::font;
use model::odp_bench::{OdpBenchKind, OdpBenchReport};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Pixels of a picture.
const SIZE: (u32, u32) = (960, 540);

/// Why the plot was not written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Neither `.svg` nor `.png`.
    #[error("--plot {0}: the file name must end in .svg or .png")]
    Extension(PathBuf),
    /// Writing the file failed.
    #[error("--plot {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// plotters failed.
    #[error("--plot {path}: drawing failed: {reason}")]
    Draw {
        /// The file.
        path: PathBuf,
        /// plotters' message.
        reason: String,
    },
}

/// Writes the picture of `report` to `path` (SVG or PNG by extension).
pub fn write(report: &OdpBenchReport, path: &Path) -> Result<(), PlotError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let draw_error = |e: String| PlotError::Draw {
        path: path.to_path_buf(),
        reason: e,
    };
    match ext.as_deref() {
        Some("svg") => {
            let svg = render_svg(report).map_err(draw_error)?;
            std::fs::write(path, svg).map_err(|source| PlotError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
        Some("png") => {
            // The bitmap backend reports a failed write as a drawing error: check the
            // folder first so that the message names the I/O problem.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::metadata(dir).map_err(|source| PlotError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
            }
            font::ensure_registered();
            let area = BitMapBackend::new(path, SIZE).into_drawing_area();
            draw(&area, report)
                .and_then(|()| area.present().map_err(|e| e.to_string()))
                .map_err(draw_error)
        }
        _ => Err(PlotError::Extension(path.to_path_buf())),
    }
}

/// The SVG text of the picture of `report`.
fn render_svg(report: &OdpBenchReport) -> Result<String, String> {
    font::ensure_registered();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&area, report)?;
        area.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The title: what ran, where, and whether it was measured or simulated.
fn title(report: &OdpBenchReport) -> String {
    format!(
        "odp-bench {} on {} ({})",
        report.kind.as_str(),
        report.device,
        report.provenance.as_str()
    )
}

fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    report: &OdpBenchReport,
) -> Result<(), String> {
    area.fill(&WHITE).map_err(|e| e.to_string())?;
    let area = area
        .titled(&title(report), (font::FAMILY, 24))
        .map_err(|e| e.to_string())?;
    match report.kind {
        OdpBenchKind::Damming => {
            let points: Vec<(f64, f64)> = report
                .points
                .iter()
                .filter_map(|p| Some((f64::from(p.interval_us?), p.elapsed_us / 1e3)))
                .collect();
            series(
                &area,
                &points,
                "interval between the two READs (us)",
                "elapsed (ms)",
            )
        }
        OdpBenchKind::Flood => {
            let (left, right) = area.split_horizontally(SIZE.0 / 2);
            let elapsed: Vec<(f64, f64)> = report
                .points
                .iter()
                .map(|p| (f64::from(p.qps), p.elapsed_us / 1e6))
                .collect();
            series(&left, &elapsed, "QPs", "elapsed (s)")?;
            let packets: Vec<(f64, f64)> = report
                .points
                .iter()
                .filter_map(|p| Some((f64::from(p.qps), p.packets? as f64)))
                .collect();
            series(&right, &packets, "QPs", "packets")
        }
    }
}

/// One chart: the points joined by a line, a circle on each.
fn series<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[(f64, f64)],
    x_label: &str,
    y_label: &str,
) -> Result<(), String> {
    let (x0, x1) = bounds(points.iter().map(|p| p.0), false);
    let (y0, y1) = bounds(points.iter().map(|p| p.1), true);
    let mut chart = ChartBuilder::on(area)
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .label_style((font::FAMILY, 14))
        .axis_desc_style((font::FAMILY, 16))
        .draw()
        .map_err(|e| e.to_string())?;
    if points.is_empty() {
        return Ok(());
    }
    chart
        .draw_series(std::iter::once(PathElement::new(points.to_vec(), BLUE)))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// A tick label: whole numbers without decimals, others with up to two.
fn tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let text = format!("{v:.2}");
        text.trim_end_matches('0').to_string()
    }
}

/// An axis range around `values` with a margin; from zero when `from_zero`.
fn bounds(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let lo = if from_zero { lo.min(0.0) } else { lo };
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(0.5);
    (if from_zero { lo } else { lo - pad }, hi + pad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::odp_bench::{OdpBenchPoint, TransportDelta};
    use model::Provenance;

    fn point(interval_us: Option<u32>, qps: u32, elapsed_us: f64, packets: u64) -> OdpBenchPoint {
        OdpBenchPoint {
            interval_us,
            qps,
            reads: 2,
            read_bytes: 100,
            elapsed_us,
            slowest_read_us: elapsed_us,
            packets: Some(packets),
            transport: TransportDelta::default(),
            page_faults: None,
        }
    }

    fn report(kind: OdpBenchKind, provenance: Provenance) -> OdpBenchReport {
        let points = match kind {
            OdpBenchKind::Damming => (1..=9)
                .map(|i| point(Some(i * 500), 1, 500_000.0 + f64::from(i), 6))
                .collect(),
            OdpBenchKind::Flood => (1..=5)
                .map(|q| point(None, q, f64::from(q) * 3e5, 16_384 + u64::from(q) * 100))
                .collect(),
        };
        OdpBenchReport {
            kind,
            device: "rnic0".into(),
            rnic: None,
            provenance,
            points,
            notes: vec![],
        }
    }

    #[test]
    fn damming_has_a_marker_per_interval_and_its_axes() {
        let svg = render_svg(&report(OdpBenchKind::Damming, Provenance::Simulated)).unwrap();
        assert_eq!(svg.matches("<circle").count(), 9, "{svg}");
        assert!(svg.contains("interval between the two READs (us)"));
        assert!(svg.contains("elapsed (ms)"));
        assert!(svg.contains("odp-bench damming on rnic0 (simulated)"));
    }

    #[test]
    fn flood_has_two_charts_each_with_a_marker_per_qp_count() {
        let svg = render_svg(&report(OdpBenchKind::Flood, Provenance::Measured)).unwrap();
        assert_eq!(svg.matches("<circle").count(), 10, "{svg}");
        assert!(svg.contains("elapsed (s)") && svg.contains("packets"));
        assert!(svg.contains("odp-bench flood on rnic0 (measured)"));
    }

    #[test]
    fn the_extension_picks_the_format() {
        let dir = std::env::temp_dir().join(format!("odp-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = report(OdpBenchKind::Flood, Provenance::Simulated);
        let png = dir.join("flood.png");
        write(&r, &png).unwrap();
        assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
        let svg = dir.join("flood.SVG");
        write(&r, &svg).unwrap();
        assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
        let e = write(&r, &dir.join("flood.pdf")).unwrap_err();
        assert!(e.to_string().contains("flood.pdf"), "{e}");
        let e = write(&r, &dir.join("missing/flood.png")).unwrap_err();
        assert!(matches!(e, PlotError::Io { .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
