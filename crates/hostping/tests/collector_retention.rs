//! Retention of runs at the collector (issue 38 section 5, collector::retention), on a
//! throwaway PostgreSQL cluster with runs posted through `POST /api/runs` as agents post
//! them:
//!
//! - runs older than the setting are deleted with their paths, links and diagnoses, newer
//!   ones kept, and each host's latest run kept however old; the hosts' run counts follow;
//! - the baselines (the hosts' sample sets, the fleet's baselines, pairs' recorded
//!   baselines) are left whole, and a host's baseline page answers as before;
//! - two collectors deleting at once, while runs arrive, neither fail nor delete a run
//!   twice;
//! - a tick deletes no more than its batch bound;
//! - `hostping collector --keep-runs 30d` deletes on its own and counts what it deleted
//!   in `GET /metrics`; `--keep-runs 0s` is refused.
//!
//! Skipped (with a message) when PostgreSQL's server binaries are missing, unless
//! `HOSTPING_REQUIRE_POSTGRES` is set, as `./test.sh` does.

mod common;

use collector::retention::{self, Deleted, Tick};
use common::job::{now_ms, post_run, token};
use common::postgres::{get, Collector, Postgres};
use common::{hostping, sim_report, temp_dir, tokens_file, wait_until, TestDir};
use std::time::Duration;

const DAY_S: i64 = 86_400;

/// The setting the tests keep: 30 days.
const KEEP_DAYS: i64 = 30;

/// A fleet's history at a collector that keeps every run: `n1` has six runs 45 to 40 days
/// old (every other one with a degraded link, so with a diagnosis) and two of the last
/// days; `n2` has three runs 60 to 58 days old and nothing since, so its latest is old.
struct Fleet {
    pg: Postgres,
    collector: Collector,
    /// Dropped last: PostgreSQL's data is in it.
    _dir: TestDir,
}

/// Runs past 30 days that retention may delete: n1's six, and n2's two before its latest.
const OLD: u64 = 8;
/// Of them, with a diagnosis: n1's runs 1, 3 and 5, one diagnosis each.
const OLD_DIAGNOSED: u64 = 3;

fn fleet(name: &str) -> Option<Fleet> {
    let dir = temp_dir(name);
    let pg = Postgres::start(&dir)?;
    let tokens = tokens_file(
        &dir,
        &[
            ("n1", &token("n1")),
            ("n2", &token("n2")),
            ("n3", &token("n3")),
        ],
    );
    // Started with `--keep-runs forever` (the tests' collectors are).
    let collector = Collector::start(&pg, &tokens, &[]);
    let healthy = sim_report(&[]);
    let faulty = sim_report(&["degrade:gpu0--lsw0:0.5"]);
    let now = now_ms() / 1000;
    for (id, age_days) in (1..=6).zip([45, 44, 43, 42, 41, 40]) {
        let report = if id % 2 == 1 { &faulty } else { &healthy };
        post_run(collector.addr, "n1", id, now - age_days * DAY_S, report);
    }
    post_run(collector.addr, "n1", 7, now - 2 * DAY_S, &healthy);
    post_run(collector.addr, "n1", 8, now - DAY_S, &healthy);
    for (id, age_days) in (1..=3).zip([60, 59, 58]) {
        post_run(collector.addr, "n2", id, now - age_days * DAY_S, &healthy);
    }
    assert_eq!(pg.count("runs"), 11);
    assert_eq!(pg.count("diagnoses") as u64, OLD_DIAGNOSED);
    Some(Fleet {
        pg,
        collector,
        _dir: dir,
    })
}

/// The cutoff of a 30-day setting now.
fn cutoff() -> i64 {
    now_ms() - KEEP_DAYS * DAY_S * 1000
}

/// One tick through a pool of its own, as a collector runs it.
fn tick(pg: &Postgres, batch: u32, batches: u32) -> Tick {
    common::postgres::runtime().block_on(async {
        let pool = pg.pool(1);
        let mut client = pool.get().await.unwrap();
        retention::tick(&mut client, cutoff(), batch, batches)
            .await
            .unwrap()
    })
}

/// The hosts' `runs` counts, by name.
fn host_runs(fleet: &Fleet) -> Vec<(String, i64)> {
    let (status, hosts) = get(fleet.collector.addr, "/api/hosts");
    assert_eq!(status, 200, "{hosts}");
    hosts
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().into(),
                h["runs"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The agent run ids of `host`'s stored runs, newest first.
fn run_ids(fleet: &Fleet, host: &str) -> Vec<i64> {
    let (status, runs) = get(
        fleet.collector.addr,
        &format!("/api/hosts/{host}/runs?limit=100"),
    );
    assert_eq!(status, 200, "{runs}");
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn runs_past_the_setting_are_deleted_with_their_rows_and_the_rest_kept() {
    let Some(fleet) = fleet("retention-age") else {
        return;
    };
    let pg = &fleet.pg;
    let deleted = tick(pg, 1000, 10);
    assert_eq!(
        deleted,
        Tick::Deleted(Deleted {
            runs: OLD,
            run_paths: OLD,
            run_links: OLD,
            diagnoses: OLD_DIAGNOSED,
            ..Deleted::default()
        })
    );
    // n1 keeps its two recent runs; n2 its latest, 58 days old, which the fleet overview
    // and the host page read.
    assert_eq!(run_ids(&fleet, "n1"), vec![8, 7]);
    assert_eq!(run_ids(&fleet, "n2"), vec![3]);
    for table in ["runs", "run_paths", "run_links"] {
        assert_eq!(pg.count(table), 3, "{table}");
    }
    assert_eq!(pg.count("diagnoses"), 0);
    assert_eq!(
        host_runs(&fleet),
        vec![("n1".to_string(), 2), ("n2".to_string(), 1)]
    );
    let (_, status) = get(fleet.collector.addr, "/api/fleet/status");
    assert_eq!(status["runs"], 3, "{status}");
    // Nothing more is old enough.
    assert_eq!(tick(pg, 1000, 10), Tick::Deleted(Deleted::default()));
}

/// A digest of a table's rows, in a stable order.
fn digest(pg: &Postgres, table: &str) -> String {
    pg.scalar(&format!(
        "SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '')
         FROM {table} t"
    ))
}

#[test]
fn baselines_survive_retention() {
    let Some(fleet) = fleet("retention-baselines") else {
        return;
    };
    let pg = &fleet.pg;
    // A pair's recorded baseline and a fleet baseline, as `hostping mesh --record-baseline`
    // and the refresh store them: rows of their own, recorded long ago (the fleet's of a
    // kind no host here has, which the refresh running meanwhile leaves alone).
    let old_ms = now_ms() - 50 * DAY_S * 1000;
    pg.scalar(&format!(
        "INSERT INTO pair_baselines VALUES ('n1', 'rnic0', 'n2', 'rnic0', {old_ms},
             '{{\"latency_us\": 2.0}}', '{{}}') RETURNING 1"
    ));
    pg.scalar(&format!(
        "INSERT INTO fleet_baselines VALUES ('kept-kind', 'rnic0', 'gpu0', 2.0, 0.1, 0.1,
             190.0, 1.0, 1.0, 5, 45, {old_ms}) RETURNING 1"
    ));
    // The collector's baseline refresh has seen every host's samples (it runs beside this
    // test and writes fleet_batches on its own).
    wait_until("the baseline refresh", Duration::from_secs(30), || {
        pg.count("hosts WHERE paths_version <> baseline_version") == 0
    });
    let tables = [
        "host_samples",
        "fleet_baselines",
        "fleet_batches",
        "pair_baselines",
    ];
    let before: Vec<String> = tables.iter().map(|t| digest(pg, t)).collect();
    assert!(!before[0].starts_with("0:"), "{}", before[0]);
    let page = |host: &str| get(fleet.collector.addr, &format!("/api/hosts/{host}/baseline"));
    let (n1, n2) = (page("n1"), page("n2"));
    assert_eq!(n1.0, 200, "{}", n1.1);

    assert!(matches!(tick(pg, 1000, 10), Tick::Deleted(d) if d.runs == OLD));

    let after: Vec<String> = tables.iter().map(|t| digest(pg, t)).collect();
    assert_eq!(after, before, "{tables:?}");
    assert_eq!((page("n1"), page("n2")), (n1, n2));
}

#[test]
fn two_collectors_deleting_at_once_neither_fail_nor_delete_a_run_twice() {
    let Some(fleet) = fleet("retention-two") else {
        return;
    };
    let pg = &fleet.pg;
    let addr = fleet.collector.addr;
    // Runs keep arriving meanwhile, for a host whose old runs are being deleted (its row
    // is locked by both) and for a new one. (Not for n2: a new latest would make its old
    // latest deletable, sooner or later.)
    let healthy = sim_report(&[]);
    let arriving = std::thread::spawn(move || {
        let now = now_ms() / 1000;
        for id in 100..120 {
            post_run(addr, "n1", id, now, &healthy);
            post_run(addr, "n3", id, now, &healthy);
        }
    });
    let (a, b) = common::postgres::runtime().block_on(async {
        let (a, b) = (pg.pool(1), pg.pool(1));
        let collector = |pool: deadpool_postgres::Pool| async move {
            let mut client = pool.get().await.unwrap();
            let mut total = Deleted::default();
            let mut busy = 0;
            // Batches of one, so that the two collectors' ticks interleave; until one
            // tick finds nothing left.
            loop {
                match retention::tick(&mut client, cutoff(), 1, 1).await.unwrap() {
                    Tick::Deleted(d) if d.runs == 0 => return (total, busy),
                    Tick::Deleted(d) => total.runs += d.runs,
                    Tick::Busy(d) => {
                        total.runs += d.runs;
                        busy += 1;
                        tokio::task::yield_now().await;
                    }
                }
            }
        };
        tokio::join!(collector(a), collector(b))
    });
    arriving.join().unwrap();
    eprintln!("deleted by A: {:?}, by B: {:?}", a, b);
    assert_eq!(a.0.runs + b.0.runs, OLD, "A {a:?}, B {b:?}");
    assert_eq!(pg.count("runs"), 11 - OLD as i64 + 40);
    assert_eq!(
        host_runs(&fleet),
        vec![
            ("n1".to_string(), 22),
            ("n2".to_string(), 1),
            ("n3".to_string(), 20)
        ]
    );
}

#[test]
fn a_tick_deletes_no_more_than_its_batch_bound() {
    let Some(fleet) = fleet("retention-bound") else {
        return;
    };
    let pg = &fleet.pg;
    let runs = |t: Tick| match t {
        Tick::Deleted(d) => d.runs,
        Tick::Busy(_) => panic!("no other collector deletes"),
    };
    // Two batches of three a tick: six, then the last two, the oldest first (n2's two,
    // then n1's four oldest).
    assert_eq!(runs(tick(pg, 3, 2)), 6);
    assert_eq!(pg.count("runs"), 5);
    assert_eq!(run_ids(&fleet, "n1"), vec![8, 7, 6, 5]);
    assert_eq!(run_ids(&fleet, "n2"), vec![3]);
    assert_eq!(runs(tick(pg, 3, 2)), 2);
    assert_eq!(runs(tick(pg, 3, 2)), 0);
    assert_eq!(pg.count("runs"), 3);
}

#[test]
fn the_collector_deletes_old_runs_itself_and_says_so_in_its_metrics() {
    let Some(fleet) = fleet("retention-collector") else {
        return;
    };
    let pg = &fleet.pg;
    // The collector that keeps every run deleted nothing.
    assert_eq!(pg.count("runs"), 11);
    let metrics = |c: &Collector| {
        let (status, text) = common::http_get(c.addr, "/metrics");
        assert_eq!(status, 200, "{text}");
        text
    };
    assert!(
        metrics(&fleet.collector).contains("hostping_collector_retention_keep_seconds 0.0"),
        "{}",
        metrics(&fleet.collector)
    );

    let dir = temp_dir("retention-collector-b");
    let tokens = tokens_file(&dir, &[("n1", &token("n1"))]);
    let b = Collector::start(pg, &tokens, &["--keep-runs", "30d"]);
    wait_until(
        "the second collector's retention",
        Duration::from_secs(30),
        || pg.count("runs") == 3,
    );
    wait_until("its metrics", Duration::from_secs(10), || {
        metrics(&b).contains("hostping_collector_retention_deleted_rows_total{table=\"runs\"} 8")
    });
    let text = metrics(&b);
    for line in [
        "hostping_collector_retention_deleted_rows_total{table=\"diagnoses\"} 3",
        "hostping_collector_retention_deleted_rows_total{table=\"run_paths\"} 8",
        "hostping_collector_retention_keep_seconds 2592000.0",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    assert!(text.contains("hostping_collector_retention_last_run_timestamp_seconds "));

    // Zero would delete every run but the latest: refused, naming the flag.
    let out = hostping(&["collector", "--keep-runs", "0s"]);
    assert_eq!(out.status.code(), Some(2));
    let said = common::stderr(&out);
    assert!(said.contains("--keep-runs"), "{said}");
}
