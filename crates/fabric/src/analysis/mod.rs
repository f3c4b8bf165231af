//! Congestion analysis (thesis 3.2-3.4, 4.1-4.4, 5.3): what the samples say about every link,
//! which cause the congestion has, and the pictures and tables that show it.
//!
//! - [`view`]: a [`LinkView`] of every switch output port from the telemetry of chosen jobs and
//!   windows, or from the simulator's exact counts: weighted and congested counts, congested
//!   fraction, estimated Gb/s (1-bit kinds thresholded first, 5.3).
//! - [`bandwidth`]: bytes over time as Gb/s (4.2).
//! - `trees`: congestion trees and their roots (4.1).
//! - [`counter_roots`]: the roots a switch-port counter sampler finds in one window.
//! - [`diagnose`]: the cause (`communication_pattern`, `mapping`, `background_traffic`,
//!   `no_congestion`, or `inconclusive` when too little was sampled to judge) with its
//!   evidence; [`report`] renders it as text.
//! - [`plot`]: congested-fraction plots, SVG and PNG (3.4, Figure 4.11).
//! - [`table`]: runs side by side as in Table 4.1.

pub mod bandwidth;
pub mod counter_roots;
pub mod diagnose;
pub mod plot;
pub mod report;
pub mod table;
pub(crate) mod trees;
pub mod view;

pub use diagnose::{
    diagnose, judge_uniform, oversubscription, Cause, Diagnosis, Oversubscription, Thresholds,
    UniformLoad,
};
pub use plot::{write_plots, write_window_plots, Diagram, Directions, PlotOptions};
pub use report::render_text;
pub use table::{ComparisonTable, ReferenceFigures, TableRow};
pub use view::{JobSelection, LinkView, ViewSpec};
