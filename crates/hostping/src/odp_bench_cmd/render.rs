//! The odp-bench report as a table for people and as JSON for machines. The table's title
//! says whether the numbers were measured or simulated, and every row shows the work done
//! (READs, QPs) beside the time.

use model::odp_bench::{OdpBenchKind, OdpBenchPoint, OdpBenchReport};
use std::fmt::Write;

/// The report as JSON (the serialised [`OdpBenchReport`]).
pub fn render_json(report: &OdpBenchReport) -> String {
    serde_json::to_string_pretty(report).expect("a report always serialises")
}

fn count(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

/// The first column: the damming interval, or the flood's QP count.
fn swept(kind: OdpBenchKind, p: &OdpBenchPoint) -> String {
    match kind {
        OdpBenchKind::Damming => p.interval_us.map_or_else(|| "-".into(), |i| i.to_string()),
        OdpBenchKind::Flood => p.qps.to_string(),
    }
}

/// The report as a table, one row a point, then the notes.
pub fn render_table(report: &OdpBenchReport) -> String {
    let mut out = String::new();
    let what = match report.kind {
        OdpBenchKind::Damming => "two READs at each interval, one QP, ODP on both sides",
        OdpBenchKind::Flood => "back-to-back READs over 1..N QPs, client-side ODP",
    };
    let _ = writeln!(
        out,
        "odp-bench {} on {} ({}): {what}",
        report.kind.as_str(),
        report.device,
        report.provenance.as_str()
    );
    let first = match report.kind {
        OdpBenchKind::Damming => "interval_us",
        OdpBenchKind::Flood => "qps",
    };
    let _ = writeln!(
        out,
        "{first:>11} {:>6} {:>11} {:>11} {:>9} {:>8} {:>8} {:>8} {:>8} {:>11}",
        "reads",
        "elapsed_ms",
        "slowest_ms",
        "timeouts",
        "seq_err",
        "out_seq",
        "dup_req",
        "faults",
        "packets"
    );
    for p in &report.points {
        let t = &p.transport;
        let _ = writeln!(
            out,
            "{:>11} {:>6} {:>11} {:>11} {:>9} {:>8} {:>8} {:>8} {:>8} {:>11}",
            swept(report.kind, p),
            p.reads,
            ms(p.elapsed_us),
            ms(p.slowest_read_us),
            count(t.local_ack_timeout_err),
            count(t.packet_seq_err),
            count(t.out_of_sequence),
            count(t.duplicate_request),
            count(p.page_faults),
            count(p.packets)
        );
    }
    for note in &report.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::odp_bench::TransportDelta;
    use model::Provenance;

    fn report() -> OdpBenchReport {
        OdpBenchReport {
            kind: OdpBenchKind::Damming,
            device: "rxe0".into(),
            rnic: None,
            provenance: Provenance::Measured,
            points: vec![OdpBenchPoint {
                interval_us: Some(500),
                qps: 1,
                reads: 2,
                read_bytes: 100,
                elapsed_us: 512_345.0,
                slowest_read_us: 511_000.0,
                packets: None,
                transport: TransportDelta {
                    local_ack_timeout_err: Some(1),
                    ..TransportDelta::default()
                },
                page_faults: Some(2),
            }],
            notes: vec!["a software RNIC resolves page faults in the kernel".into()],
        }
    }

    #[test]
    fn the_table_says_where_the_numbers_come_from_and_shows_the_work() {
        let text = render_table(&report());
        let mut lines = text.lines();
        assert!(
            lines.next().unwrap().contains("on rxe0 (measured)"),
            "{text}"
        );
        let row: Vec<&str> = lines.nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row[..4], ["500", "2", "512.345", "511.000"], "{text}");
        assert_eq!(row[4], "1", "{text}");
        assert_eq!(row[9], "-", "{text}");
        assert!(text.ends_with("note: a software RNIC resolves page faults in the kernel\n"));
    }

    #[test]
    fn json_round_trips() {
        let r = report();
        let back: OdpBenchReport = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(v["provenance"], "measured");
        assert_eq!(v["kind"], "damming");
    }
}
