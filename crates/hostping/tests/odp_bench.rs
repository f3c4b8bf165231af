//! `hostping odp-bench --sim`: ISPASS'21's micro-benchmarks on the virtual host's transport
//! model, as a user meets them: labelled simulated, the pitfalls' shapes, one-line errors.

mod common;

use common::{hostping, stderr, stdout};
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let o = hostping(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn points(v: &Value) -> &Vec<Value> {
    v["points"].as_array().unwrap()
}

#[test]
fn damming_stalls_every_interval_for_at_least_the_timeout_floor() {
    let v = json(&[
        "odp-bench",
        "damming",
        "--sim",
        "dgx-a100",
        "--format",
        "json",
    ]);
    assert_eq!(v["provenance"], "simulated");
    assert_eq!(v["kind"], "damming");
    assert_eq!(v["device"], "rnic0");
    let pts = points(&v);
    let intervals: Vec<u64> = pts
        .iter()
        .map(|p| p["interval_us"].as_u64().unwrap())
        .collect();
    assert_eq!(intervals, (1..=9).map(|i| i * 500).collect::<Vec<_>>());
    for p in pts {
        let ms = p["elapsed_us"].as_f64().unwrap() / 1000.0;
        assert!(ms >= 500.0, "{p}");
        assert_eq!(p["reads"], 2, "{p}");
        assert_eq!(p["read_bytes"], 100, "{p}");
        assert!(
            p["transport"]["local_ack_timeout_err"].as_u64().unwrap() >= 1,
            "{p}"
        );
    }
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("not ISPASS'21's figures")),
        "{notes:?}"
    );
}

#[test]
fn flood_time_and_packets_rise_with_qps() {
    let v = json(&[
        "odp-bench",
        "flood",
        "--sim",
        "dgx-a100",
        "--qps",
        "6",
        "--format",
        "json",
    ]);
    assert_eq!(v["provenance"], "simulated");
    let pts = points(&v);
    assert_eq!(pts.len(), 6);
    let elapsed: Vec<f64> = pts
        .iter()
        .map(|p| p["elapsed_us"].as_f64().unwrap())
        .collect();
    let packets: Vec<u64> = pts.iter().map(|p| p["packets"].as_u64().unwrap()).collect();
    let timeouts: Vec<u64> = pts
        .iter()
        .map(|p| p["transport"]["local_ack_timeout_err"].as_u64().unwrap())
        .collect();
    assert_eq!(timeouts[0], 0, "one QP has no peer to disagree with");
    assert!(elapsed[0] < 100_000.0, "one QP: {elapsed:?}");
    assert!(
        elapsed[5] >= 500_000.0,
        "six QPs wait out a timeout: {elapsed:?}"
    );
    for w in packets.windows(2) {
        assert!(w[1] >= w[0], "{packets:?}");
    }
    // Time rises too, but for the shorter share of READs each QP has with more QPs.
    for w in elapsed.windows(2) {
        assert!(w[1] >= 0.99 * w[0], "{elapsed:?}");
    }
    assert!(packets[5] > packets[0], "{packets:?}");
    for p in pts {
        assert_eq!(p["reads"], 8192, "{p}");
        assert!(p["packets"].as_u64().unwrap() >= 2 * 8192, "{p}");
    }
}

#[test]
fn the_table_says_simulated_and_names_the_rnic() {
    let o = hostping(&[
        "odp-bench",
        "flood",
        "--sim",
        "dgx-a100",
        "--device",
        "rnic3",
        "--qps",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("odp-bench flood on rnic3 (simulated)"),
        "{text}"
    );
    assert!(
        lines.next().unwrap().trim_start().starts_with("qps"),
        "{text}"
    );
    let rows: Vec<Vec<&str>> = lines
        .take(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..2], ["1", "8192"], "{text}");
    assert_eq!(rows[1][..2], ["2", "8192"], "{text}");
    assert!(text.contains("note: simulated:"), "{text}");
}

#[test]
fn an_unknown_rnic_exits_two_naming_it() {
    let o = hostping(&[
        "odp-bench",
        "damming",
        "--sim",
        "dgx-a100",
        "--device",
        "mlx5_7",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("mlx5_7") && err.contains("rnic0"), "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn an_unknown_model_exits_two() {
    let o = hostping(&["odp-bench", "flood", "--sim", "no-such-host"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-host"), "{}", stderr(&o));
}

#[test]
fn plot_draws_a_marker_per_point_and_a_bad_extension_exits_two() {
    let dir = common::temp_dir("odp-plot");
    let svg = dir.join("damming.svg");
    let o = hostping(&[
        "odp-bench",
        "damming",
        "--sim",
        "dgx-a100",
        "--intervals",
        "500,1500,4500",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("(simulated)"));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(text.matches("<circle").count(), 3, "{text}");
    assert!(text.contains("odp-bench damming on rnic0 (simulated)"));
    assert!(text.contains("elapsed (ms)"));
    let o = hostping(&[
        "odp-bench",
        "flood",
        "--sim",
        "dgx-a100",
        "--qps",
        "2",
        "--plot",
        dir.join("flood.jpg").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("flood.jpg"), "{}", stderr(&o));
}
