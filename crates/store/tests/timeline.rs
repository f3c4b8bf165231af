//! One path over runs (`Store::path_timeline`, the agent's `/api/hosts/{host}/timeline`):
//! only that path, oldest first, bounded by `since` and `limit`, failed probes kept as
//! points without values.

mod common;

use model::{PathStatus, Report};
use store::{PathPoint, Store};

/// A healthy report whose rnic0 -> gpu1 path measured `bw` Gb/s with `status`.
fn with_gpu1(bw: f64, status: PathStatus) -> Report {
    let mut r = common::healthy("dgx-a100", 3);
    r.paths[1].bandwidth_gbps = Some(bw);
    r.paths[1].latency_us = Some(1.0 + bw / 100.0);
    r.paths[1].status = status;
    r
}

#[test]
fn a_path_over_runs_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let series = [
        (197.0, PathStatus::Normal),
        (40.0, PathStatus::Abnormal),
        (196.0, PathStatus::Normal),
        (41.5, PathStatus::Abnormal),
    ];
    let mut ids = Vec::new();
    for (i, (bw, status)) in series.iter().enumerate() {
        ids.push(common::insert_idle_run(
            &mut store,
            10_000 + 1_000 * i as i64,
            &with_gpu1(*bw, *status),
        ));
    }
    // A run whose probe of the path failed is a point without values.
    let mut failed = common::healthy("dgx-a100", 3);
    failed.paths[1] = common::failed_path("rnic0", "gpu1", "ibv_post_send: QP in error");
    let failed_id = common::insert_idle_run(&mut store, 20_000, &failed);

    let points = store.path_timeline("rnic0", "gpu1", 0, 100).unwrap();
    let mut expected: Vec<PathPoint> = series
        .iter()
        .zip(&ids)
        .enumerate()
        .map(|(i, ((bw, status), id))| PathPoint {
            run_id: *id,
            started_unix_ms: 10_000 + 1_000 * i as i64,
            latency_us: Some(1.0 + bw / 100.0),
            bandwidth_gbps: Some(*bw),
            status: serde_json::to_value(status)
                .unwrap()
                .as_str()
                .unwrap()
                .into(),
        })
        .collect();
    expected.push(PathPoint {
        run_id: failed_id,
        started_unix_ms: 20_000,
        latency_us: None,
        bandwidth_gbps: None,
        status: "uncertain".into(),
    });
    assert_eq!(points, expected);

    // `since` drops older runs; `limit` keeps the newest, still oldest first.
    let since = store.path_timeline("rnic0", "gpu1", 12_000, 100).unwrap();
    assert_eq!(since, expected[2..]);
    let newest = store.path_timeline("rnic0", "gpu1", 0, 2).unwrap();
    assert_eq!(newest, expected[3..]);
    // Another path, and one never probed.
    let other = store.path_timeline("rnic0", "gpu0", 0, 100).unwrap();
    assert_eq!(other.len(), 5);
    assert!(other.iter().all(|p| p.bandwidth_gbps == Some(197.5)));
    assert!(store
        .path_timeline("rnic3", "gpu7", 0, 100)
        .unwrap()
        .is_empty());
}
