//! The collector's writers on a real PostgreSQL: runs queued together are stored in one
//! transaction (resends and copies within the batch answered as duplicates, each host's
//! summary from its latest run, each host's newest sample sets kept), and a run the server
//! refuses fails alone while the rest of its batch is stored.
//!
//! The runs are queued from one thread of a single-threaded runtime before the writer task
//! first runs, so they are one batch by construction, and `xmin` shows it.

mod common;

use collector::batch::{Arrival, Stored};
use collector::writer::{WriteError, Writer};
use common::postgres::Postgres;
use common::{hostping, stdout, temp_dir};
use fleet_api::upload as ingest;
use serde_json::{json, Value};
use std::future::Future;
use std::task::Poll;

/// What a request is told: stored (now or before), or why not.
type Outcome = Result<Stored, WriteError>;

/// `runs` real reports of the virtual dgx-a100, made idle runs (what feeds the baselines).
fn idle_reports(runs: u32) -> Vec<Value> {
    let n = runs.to_string();
    let out = hostping(&[
        "check", "--sim", "dgx-a100", "--format", "json", "--runs", &n,
    ]);
    serde_json::Deserializer::from_str(&stdout(&out))
        .into_iter::<Value>()
        .map(|r| {
            let mut r = r.unwrap();
            r["mode"] = "idle".into();
            r
        })
        .collect()
}

fn arrival(host: &str, id: i64, started: i64, trigger: &str, report: &Value) -> Arrival {
    let body = json!({"host": host, "id": id, "trigger": trigger, "started_unix_ms": started,
                      "rack": format!("rack-{host}"), "report": report});
    let (upload, report) = ingest::parse(&serde_json::to_vec(&body).unwrap()).unwrap();
    Arrival { upload, report }
}

/// A runtime, a pool on `pg` with the schema migrated, and one writer.
fn writer_on(pg: &Postgres) -> (tokio::runtime::Runtime, Writer) {
    let runtime = common::postgres::runtime();
    let writer = runtime.block_on(async {
        let pool = pg.pool(2);
        let mut client = pool.get().await.unwrap();
        collector::schema::migrate(&mut client).await.unwrap();
        drop(client);
        Writer::start(pool, 1)
    });
    (runtime, writer)
}

/// Queues every run before the writer runs, then waits for all the answers.
fn store_together(
    runtime: &tokio::runtime::Runtime,
    writer: &Writer,
    runs: Vec<Arrival>,
) -> Vec<Outcome> {
    let mut waiting: Vec<_> = runs
        .into_iter()
        .map(|a| Box::pin(writer.store(a)))
        .collect();
    let mut answers: Vec<Option<Outcome>> = waiting.iter().map(|_| None).collect();
    // One task polls every request in order: the first pass queues them all before the
    // writer task gets a turn.
    runtime.block_on(std::future::poll_fn(|cx| {
        let mut pending = false;
        for (request, answer) in waiting.iter_mut().zip(answers.iter_mut()) {
            if answer.is_none() {
                match request.as_mut().poll(cx) {
                    Poll::Ready(outcome) => *answer = Some(outcome),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }));
    answers.into_iter().map(Option::unwrap).collect()
}

fn new_id(outcome: &Outcome) -> i64 {
    match outcome {
        Ok(Stored::New(id)) => *id,
        other => panic!("expected a new run, got {other:?}"),
    }
}

#[test]
fn runs_queued_together_are_one_transaction_with_duplicates_and_summaries() {
    let dir = temp_dir("collector-batch");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let (runtime, writer) = writer_on(&pg);
    let reports = idle_reports(4);
    let earlier = store_together(
        &runtime,
        &writer,
        vec![arrival("node-2", 5, 500, "idle", &reports[0])],
    );
    let earlier_id = new_id(&earlier[0]);

    let mut unhealthy = reports[2].clone();
    unhealthy["healthy"] = false.into();
    let outcomes = store_together(
        &runtime,
        &writer,
        vec![
            arrival("node-1", 2, 2000, "idle", &unhealthy),
            arrival("node-1", 1, 1000, "idle", &reports[1]),
            arrival("node-1", 2, 2000, "idle", &unhealthy),
            arrival("node-2", 5, 500, "idle", &reports[0]),
            arrival("node-3", 1, 3000, "pfc", &reports[3]),
        ],
    );
    let newest_1 = new_id(&outcomes[0]);
    let older_1 = new_id(&outcomes[1]);
    assert_eq!(
        outcomes[2].as_ref().ok(),
        Some(&Stored::Duplicate(newest_1)),
        "a copy within the batch"
    );
    assert_eq!(
        outcomes[3].as_ref().ok(),
        Some(&Stored::Duplicate(earlier_id)),
        "a resend of an earlier batch"
    );
    let node_3 = new_id(&outcomes[4]);

    // One transaction stored the batch's three new runs.
    assert_eq!(
        pg.scalar(&format!(
            "SELECT count(DISTINCT xmin::text) || ' ' || count(*) FROM runs
             WHERE id IN ({newest_1}, {older_1}, {node_3})"
        )),
        "1 3"
    );
    assert_eq!(pg.count("runs"), 4);
    // Each host's summary: runs counted once each, the latest by start time, whatever the
    // order in the batch.
    assert_eq!(
        pg.scalar(
            "SELECT string_agg(name || ':' || runs || ':' || latest_run_id || ':'
                               || latest_healthy || ':' || rack, ' ' ORDER BY name)
             FROM hosts"
        ),
        format!(
            "node-1:2:{newest_1}:false:rack-node-1 node-2:1:{earlier_id}:true:rack-node-2 \
             node-3:1:{node_3}:true:rack-node-3"
        )
    );
    // Every new run's paths and links in report order, each run its own.
    for (id, report) in [
        (newest_1, &unhealthy),
        (older_1, &reports[1]),
        (node_3, &reports[3]),
    ] {
        let endpoints: Vec<String> = report["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["endpoint"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            pg.scalar(&format!(
                "SELECT array_to_string(endpoint, ',') FROM run_paths WHERE run_id = {id}"
            )),
            endpoints.join(",")
        );
        let links = report["links"].as_array().unwrap().len();
        assert_eq!(
            pg.scalar(&format!(
                "SELECT cardinality(link) FROM run_links WHERE run_id = {id}"
            )),
            links.to_string()
        );
    }
}

#[test]
fn a_batch_keeps_each_hosts_newest_sample_sets() {
    let dir = temp_dir("collector-batch-sets");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let (runtime, writer) = writer_on(&pg);
    let reports = idle_reports(12);
    let arrivals = |ids: std::ops::Range<i64>| -> Vec<Arrival> {
        ids.map(|i| {
            arrival(
                "node-1",
                i,
                i * 300_000,
                "idle",
                &reports[(i as usize - 1) % 12],
            )
        })
        .collect()
    };
    // Three sets stored, then twelve in one batch: the batch's newest nine are kept.
    let first: Vec<i64> = store_together(&runtime, &writer, arrivals(1..4))
        .iter()
        .map(new_id)
        .collect();
    let batch: Vec<i64> = store_together(&runtime, &writer, arrivals(4..16))
        .iter()
        .map(new_id)
        .collect();
    let kept = |pg: &Postgres| {
        pg.scalar("SELECT array_to_string(array_agg(seq ORDER BY seq), ',') FROM host_samples")
    };
    let ids = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    assert_eq!(kept(&pg), ids(&batch[3..]));
    // Two more: the two oldest of those nine go.
    let last: Vec<i64> = store_together(&runtime, &writer, arrivals(16..18))
        .iter()
        .map(new_id)
        .collect();
    let expected: Vec<i64> = batch[5..].iter().chain(&last).copied().collect();
    assert_eq!(kept(&pg), ids(&expected));
    assert!(first.iter().all(|id| *id < batch[0]));
    assert_eq!(pg.scalar("SELECT paths_version FROM hosts"), "17");
}

#[test]
fn a_run_the_database_refuses_fails_alone_and_the_rest_of_its_batch_is_stored() {
    let dir = temp_dir("collector-batch-refused");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let (runtime, writer) = writer_on(&pg);
    let reports = idle_reports(3);
    // PostgreSQL's text holds no NUL character: the contract lets it through, the server
    // refuses the statement, and with it the batch.
    let outcomes = store_together(
        &runtime,
        &writer,
        vec![
            arrival("node-1", 1, 1000, "idle", &reports[0]),
            arrival("node-1", 2, 2000, "idle\u{0}", &reports[1]),
            arrival("node-2", 1, 3000, "idle", &reports[2]),
        ],
    );
    let first = new_id(&outcomes[0]);
    let third = new_id(&outcomes[2]);
    let refused = outcomes[1]
        .as_ref()
        .expect_err("the NUL trigger is refused");
    assert!(refused.to_string().contains("0x00"), "{refused}");
    assert!(matches!(refused, WriteError::Refused { .. }), "{refused:?}");
    assert_eq!(pg.count("runs"), 2);
    assert_eq!(
        pg.scalar("SELECT string_agg(run_id::text, ',' ORDER BY run_id) FROM run_paths"),
        format!("{first},{third}")
    );
    assert_eq!(
        pg.scalar("SELECT string_agg(name || ':' || runs, ' ' ORDER BY name) FROM hosts"),
        "node-1:1 node-2:1"
    );
}

/// A real report of the virtual dgx-a100 with a degraded link: it has diagnoses.
fn faulty_report() -> Value {
    let out = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--format",
        "json",
        "--inject",
        "degrade:gpu4--lsw4:0.3",
    ]);
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn runs_refused_for_their_evidence_or_path_ids_fail_alone_naming_the_run() {
    let dir = temp_dir("collector-batch-nul");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let (runtime, writer) = writer_on(&pg);
    let faulty = faulty_report();
    let mut nul_evidence = faulty.clone();
    nul_evidence["diagnoses"][0]["evidence"] = "below the baseline\u{0}".into();
    let mut nul_path = idle_reports(1).remove(0);
    nul_path["paths"][3]["endpoint"] = "mem\u{0}1".into();
    let outcomes = store_together(
        &runtime,
        &writer,
        vec![
            arrival("node-1", 1, 1000, "idle", &faulty),
            arrival("node-1", 2, 2000, "idle", &nul_evidence),
            arrival("node-2", 1, 3000, "idle", &nul_path),
            arrival("node-3", 1, 4000, "idle", &faulty),
        ],
    );
    let first = new_id(&outcomes[0]);
    let last = new_id(&outcomes[3]);
    for (i, run) in [(1, "run 2 of host node-1"), (2, "run 1 of host node-2")] {
        let refused = outcomes[i].as_ref().expect_err("a NUL is refused");
        assert!(matches!(refused, WriteError::Refused { .. }), "{refused:?}");
        let message = refused.to_string();
        assert!(
            message.contains(run) && message.contains("0x00"),
            "{message}"
        );
    }
    assert_eq!(
        pg.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM runs"),
        format!("{first},{last}")
    );
    let diagnoses = faulty["diagnoses"].as_array().unwrap().len();
    assert_eq!(pg.count("diagnoses"), 2 * diagnoses as i64);
    assert_eq!(
        pg.scalar("SELECT string_agg(name, ',' ORDER BY name) FROM hosts WHERE runs > 0"),
        "node-1,node-3"
    );
}

#[test]
fn a_batch_whose_rows_vanish_fails_naming_them_and_its_writer_goes_on() {
    let dir = temp_dir("collector-batch-vanish");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    // One writer: had it died, nothing more would be stored.
    let (runtime, writer) = writer_on(&pg);
    // Triggers that skip rows the collector inserts: the upsert of host node-9 returns no
    // row, and a run of trigger `vanish` is neither inserted nor there before. PostgreSQL
    // does what it is told; the collector must not take its own statements' results on
    // trust.
    pg.scalar(
        "CREATE FUNCTION vanish_host() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.name = 'node-9' THEN RETURN NULL; END IF; RETURN NEW; END $$;
         CREATE TRIGGER vanish BEFORE INSERT ON hosts
             FOR EACH ROW EXECUTE FUNCTION vanish_host();
         CREATE FUNCTION vanish_run() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.trigger = 'vanish' THEN RETURN NULL; END IF; RETURN NEW; END $$;
         CREATE TRIGGER vanish BEFORE INSERT ON runs
             FOR EACH ROW EXECUTE FUNCTION vanish_run();",
    );
    let reports = idle_reports(2);
    for (lost, named) in [
        (arrival("node-9", 1, 1000, "idle", &reports[0]), "node-9"),
        (
            arrival("node-1", 1, 1000, "vanish", &reports[0]),
            "run 1 of host node-1",
        ),
    ] {
        let outcome = store_together(&runtime, &writer, vec![lost]);
        let error = outcome[0].as_ref().expect_err("a vanished row");
        assert!(matches!(error, WriteError::Failed { .. }), "{error:?}");
        assert!(error.to_string().contains(named), "{error}");
    }
    let stored = store_together(
        &runtime,
        &writer,
        vec![arrival("node-1", 2, 2000, "idle", &reports[1])],
    );
    let id = new_id(&stored[0]);
    assert_eq!(
        pg.scalar("SELECT string_agg(id::text, ',') FROM runs"),
        id.to_string()
    );
}
