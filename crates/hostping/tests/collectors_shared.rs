//! Two collectors on one PostgreSQL database (issue 37, item 6: "everything a request
//! depends on lives in PostgreSQL"): a request answered by either is answered alike.
//!
//! - The board of switch-port reads a job verdict asks the samplers for
//!   (collector::fabric::board) through two pools, as two collectors hold them: a request
//!   put through one is handed over through the other, once; a request no one waits for is
//!   dropped; a full board refuses a request whole, whichever collector asks.
//! - On ibsim's fabric with its routes programmed by opensm (scripts/ibsim/nets/job-tree.net,
//!   as tests/job_ibsim.rs runs it): collectors A and B, the job's two hosts registered and
//!   their runs posted one at each, a real sampler (`hostping fabric sample --collector`)
//!   posting to B only, sweeping too rarely for any port to have counters in the window.
//!   The verdict without `--probe` is the same JSON from A and from B. With `--probe` asked
//!   of A, the route port that no sweep covered is read now by the sampler that posts to B
//!   (the request crosses the database), and its erring cable is the culprit; asked of B,
//!   the verdict is the same.
//!
//! Skipped (with a message) when ibsim or PostgreSQL's server binaries are missing, unless
//! `HOSTPING_REQUIRE_IBSIM` / `HOSTPING_REQUIRE_POSTGRES` are set, as `./test.sh` does.

mod common;

use collector::fabric::board::{self, AskError, ReadNow, MAX_PENDING};
use common::ibsim::{have_ibsim, Driven};
use common::job::{job_verdict, now_ms, post_healthy_run, register, sleep_past, token};
use common::postgres::{Collector, Postgres};
use common::{probe_tokens_file, sim_report, temp_dir, tokens_file};
use serde_json::Value;
use std::time::Duration;

fn port(guid: u64, port: u8) -> ReadNow {
    ReadNow {
        guid: model::switch_port::guid_text(guid),
        port,
    }
}

#[test]
fn the_board_of_port_reads_is_one_for_every_collector_on_the_database() {
    let dir = temp_dir("shared-board");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let runtime = common::postgres::runtime();
    runtime.block_on(async {
        // A pool each, as two collector processes hold them.
        let (a, b) = (pg.pool(1), pg.pool(1));
        let mut a = a.get().await.unwrap();
        let mut b = b.get().await.unwrap();
        collector::schema::migrate(&mut a).await.unwrap();
        let wait = Duration::from_secs(60);

        // Asked through A (twice for one port) and B, handed over through either, to its
        // sampler only, once.
        board::ask(&mut a, "s1", &[port(1, 3), port(1, 4)], wait)
            .await
            .unwrap();
        board::ask(&mut b, "s1", &[port(1, 3)], wait).await.unwrap();
        board::ask(&mut a, "s2", &[port(2, 9)], wait).await.unwrap();
        assert_eq!(board::take(&**b, "s3").await.unwrap(), vec![]);
        assert_eq!(
            board::take(&**b, "s1").await.unwrap(),
            vec![port(1, 3), port(1, 4)]
        );
        assert_eq!(board::take(&**a, "s1").await.unwrap(), vec![]);
        assert_eq!(board::take(&**b, "s2").await.unwrap(), vec![port(2, 9)]);

        // A request whose verdict no longer waits is dropped unsent; the later deadline of
        // a port asked twice is kept.
        board::ask(&mut a, "s1", &[port(1, 3)], Duration::ZERO)
            .await
            .unwrap();
        board::ask(&mut b, "s1", &[port(1, 4)], Duration::ZERO)
            .await
            .unwrap();
        board::ask(&mut a, "s1", &[port(1, 4)], wait).await.unwrap();
        assert_eq!(board::take(&**b, "s1").await.unwrap(), vec![port(1, 4)]);
        assert_eq!(pg.count("fabric_read_board"), 0);

        // Filled through A: B's request is refused whole and A's stays; asked again,
        // nothing is new and it is accepted.
        let many: Vec<ReadNow> = (0..MAX_PENDING as u64).map(|g| port(g, 1)).collect();
        board::ask(&mut a, "s1", &many, wait).await.unwrap();
        board::ask(&mut b, "s1", &many[..10], wait).await.unwrap();
        let refused = board::ask(&mut b, "s2", &[port(1, 2)], wait).await;
        assert!(matches!(refused, Err(AskError::Full)), "{refused:?}");
        assert_eq!(board::take(&**a, "s2").await.unwrap(), vec![]);
        assert_eq!(board::take(&**b, "s1").await.unwrap().len(), MAX_PENDING);
        board::ask(&mut b, "s2", &[port(1, 2)], wait).await.unwrap();
        assert_eq!(board::take(&**a, "s2").await.unwrap(), vec![port(1, 2)]);
    });
}

/// The job: node1 on leaf-1, node3 on leaf-2; its route crosses one spine each way.
const NODES: &str = "node[1,3]";
/// The sampler's name at the collectors.
const SAMPLER: &str = "s1";
/// The probe token of the collectors' probe-tokens file.
const OPS: &str = "tok-ops-0123456789abcdef";
/// Between the sampler's sweeps: long enough that the job's window falls between two of
/// them, so that no port has counters in it.
const PERIOD_S: u64 = 20;

/// `report` less what two verdicts with a port read now differ in although they judge
/// alike: each read is a read of its own, over its own second, of a counter that keeps
/// rising. So every number is dropped (the ports' `errors_per_s` and `xmit_wait_per_s`, the
/// culprits' `score`, the pairs' figures), and every run of digits in a text becomes `#`
/// (the read's counts and seconds in `follow_ups[].outcome`, the culprit's evidence and the
/// summary quoting them). The verdict, the names of every culprit, port, cable and pair,
/// and the words around the counts are kept; the callers check the read port's figures
/// and names exactly on each report.
fn less_the_reads(report: &Value) -> Value {
    match report {
        Value::Number(_) => Value::Null,
        Value::String(s) => {
            let mut out = String::new();
            for c in s.chars() {
                if !c.is_ascii_digit() {
                    out.push(c);
                } else if !out.ends_with('#') {
                    out.push('#');
                }
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(less_the_reads).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), less_the_reads(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Checks that a verdict with `--probe` had the route port `raised` read now by the
/// sampler, with its errors counted over the read's second, and that they make its cable
/// the culprit. Over a second, not a period: a verdict whose request never reached the
/// sampler waits two of its periods, and at that deadline a delta of its regular sweeps
/// that began after the request counts as the read, over [`PERIOD_S`].
fn check_read_now(report: &Value, raised: &str, culprit: &str) {
    let read = report["follow_ups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "ports" && f["target"].as_str().unwrap().contains(raised))
        .unwrap_or_else(|| panic!("{raised} not read: {report}"));
    let outcome = read["outcome"].as_str().unwrap();
    assert!(
        outcome.starts_with(&format!("read now by sampler {SAMPLER}: ")),
        "{read}"
    );
    assert!(!outcome.contains("not read"), "{read}");
    // `spine-1/2 100 symbol errors, 0 receive errors, 0 discards in 1.0 s`
    let said = outcome
        .split(&format!("{raised} "))
        .nth(1)
        .unwrap_or_else(|| panic!("{raised} not said in {read}"));
    let errors: u64 = said
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of {raised} in {read}"));
    let seconds: f64 = said
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no interval of {raised} in {read}"));
    assert!(seconds < PERIOD_S as f64 / 4.0, "{read}");
    assert!(errors >= 60, "{read}");
    assert_eq!(report["verdict"], "network", "{report}");
    assert_eq!(report["culprits"][0]["component"], culprit, "{report}");
    assert_eq!(report["culprits"][0]["cause"], "link_errors", "{report}");
}

#[test]
fn a_port_read_asked_through_one_collector_is_served_by_a_sampler_posting_to_the_other() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("shared-verdict");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let mut fabric = Driven::start("job-tree.net", &dir);
    // The cabling, the switches' tables, and the job's route as they forward it.
    fabric.run(
        "\"$HOSTPING\" fabric discover --format ibnetdiscover > fabric.topo && \
         \"$HOSTPING\" fabric discover --format json > nodes.json && \
         \"$HOSTPING\" fabric route --dump -o tables.json",
    );
    let nodes = fabric.read_json("nodes.json");
    let lid = |ca: &str| {
        let found = nodes["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["description"] == ca);
        found.unwrap_or_else(|| panic!("no CA `{ca}` in {nodes}"))["lid"]
            .as_u64()
            .unwrap()
    };
    let (node1, node3) = (lid("node1 mlx5_0"), lid("node3 mlx5_0"));
    fabric.run(&format!(
        "\"$HOSTPING\" fabric route --from {node1} --to {node3} --format json > there.json"
    ));
    let hops = fabric.read_json("there.json")["hops"].clone();
    let hop = |i: usize, field: &str| hops[i][field].clone();
    let spine = hop(1, "description").as_str().unwrap().to_string();
    assert!(spine.starts_with("spine-"), "{hops}");
    let raised = format!("{spine}/{}", hop(1, "out_port"));
    let culprit = format!(
        "{}/{}",
        hop(2, "description").as_str().unwrap(),
        hop(2, "in_port")
    );

    let names = ["node1", "node3", SAMPLER];
    let tokens: Vec<(String, String)> = names.iter().map(|n| (n.to_string(), token(n))).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let tokens = tokens_file(&dir, &pairs);
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let (topo, tables) = (path("fabric.topo"), path("tables.json"));
    let flags = [
        "--fabric",
        &topo,
        "--routes",
        &tables,
        "--probe-tokens",
        probe_tokens.to_str().unwrap(),
    ];
    // Started with the same files, as replicas are: only the database is shared.
    let a = Collector::start(&pg, &tokens, &flags);
    let b = Collector::start(&pg, &tokens, &flags);
    let (url_a, url_b) = (format!("http://{}", a.addr), format!("http://{}", b.addr));
    register(a.addr, "node1", "mlx5_0");
    register(b.addr, "node3", "mlx5_0");

    // The sampler posts to B only, every PERIOD_S (its first sweep is each port's
    // baseline); bounded, should the test stop before it ends it.
    fabric.run(&format!(
        "\"$HOSTPING\" fabric sample --hz {} --duration 3m --format json --collector {url_b} \
         --token {} --name {SAMPLER} > sampler.jsonl 2> sampler.log & echo $! > sampler.pid",
        1.0 / PERIOD_S as f64,
        token(SAMPLER)
    ));
    common::wait_until("the sampler's first sweep", Duration::from_secs(60), || {
        pg.count("fabric_sweeps") >= 1
    });
    let since = now_ms() / 1000 + 1;
    sleep_past(since);
    let report = sim_report(&[]);
    post_healthy_run(a.addr, "node1", &report);
    post_healthy_run(b.addr, "node3", &report);
    // The spine's port to leaf-2 errs from now on, 100 symbol errors a second, for longer
    // than the test runs.
    fabric.run(&format!(
        "(for i in $(seq 1 900); do echo 'PerformanceSet \"{spine}\"[{}] \
         PortCounters.SymbolErrorCounter='$((i * 20)) >&7; sleep 0.2; done) \
         > /dev/null 2>&1 &",
        hop(1, "out_port")
    ));
    let until = since + 2;
    sleep_past(until);

    // Without --probe: the same answer from either, to the byte (it reads only the
    // database; no port has counters in the window, so it is inconclusive).
    let (status_a, plain_a) = job_verdict(NODES, &url_a, since, until, &[]);
    let (status_b, plain_b) = job_verdict(NODES, &url_b, since, until, &[]);
    assert_eq!(plain_a["verdict"], "inconclusive", "{plain_a}");
    assert_eq!((status_a, status_b), (Some(3), Some(3)));
    assert_eq!(plain_a, plain_b);

    // With --probe asked of A: the request waits on the board in the database, the
    // sampler's next post to B takes it, and its read judges the cable.
    let probe = ["--probe", "--token", OPS];
    let (status_a, probed_a) = job_verdict(NODES, &url_a, since, until, &probe);
    check_read_now(&probed_a, &raised, &culprit);
    assert_eq!(status_a, Some(1), "{probed_a}");
    // Asked of B, where the sampler posts: the same verdict, but for the figures of its
    // own read (less_the_reads says which).
    let (status_b, probed_b) = job_verdict(NODES, &url_b, since, until, &probe);
    check_read_now(&probed_b, &raised, &culprit);
    assert_eq!(status_b, Some(1), "{probed_b}");
    assert_eq!(less_the_reads(&probed_a), less_the_reads(&probed_b));
    // Each verdict's request was handed to the sampler once, through B, and none is left
    // on the board.
    let log = std::fs::read_to_string(dir.join("sampler.log")).unwrap_or_default();
    assert_eq!(log.matches("the collector asked for").count(), 2, "{log}");
    assert_eq!(pg.count("fabric_read_board"), 0);
    fabric.run("kill $(cat sampler.pid)");
}
