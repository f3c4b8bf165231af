//! Jobs' collectives at the collector (DESIGN 4.8, collector::collectives), on a throwaway
//! PostgreSQL cluster and a real `hostping collector`, with summaries posted as agents
//! post them (`POST /api/collectives`, each host with its own token):
//!
//! - a straggler job (16 ranks over 4 hosts, rank 6 short and the others 40 ms longer from
//!   an onset on) and a healthy one (8 ranks over 2 hosts): `GET /api/jobs` lists both,
//!   the slow one first with its onset, and `GET /api/jobs/{job}/symptom` names the
//!   straggler; a resend replaces, never adds; an unknown job is 404;
//! - refusals: no token 401, another host's token 403, a summary outside the contract 400
//!   naming the field, more summaries than the cap 400;
//! - what a job's hosts allow (their newest runs' built-in kinds): a job far under it is
//!   slow from its start; with a host of no known kind nothing is expected;
//! - a job that slowed while running is judged by the collector by itself (crate
//!   collector::slow_jobs): its verdict is stored once (`GET /api/jobs/{job}/verdict`),
//!   listed, and exported (`hostping_job_slow`, `hostping_job_verdict`,
//!   `hostping_job_culprit` on `GET /metrics`); a healthy running job has none;
//! - retention (`--keep-runs`) deletes collectives whose buckets ended before its cutoff,
//!   and verdicts reached before it.
//!
//! Skipped (with a message) when PostgreSQL's server binaries are missing, unless
//! `HOSTPING_REQUIRE_POSTGRES` is set, as `./test.sh` does.

mod common;

use collector::retention::{self, Tick};
use common::job::{now_s, token};
use common::postgres::{get, post_to, Collector, Postgres};
use common::summaries::{
    healthy_job, straggler_job, BUCKETS, BYTES, HOSTS, ONSET_BUCKET, PER_BUCKET, WIDTH,
};
use common::{temp_dir, tokens_file, TestDir};
use fleet_api::collectives::{CollectivesUpload, JobEntry};
use model::inspector::{RankSummary, Skipped, Symptom};
use serde_json::{json, Value};

/// What `host`'s agent posts of `jobs`: its own ranks', each job having skipped one
/// record of a kind not known.
fn upload(host: &str, jobs: &[(&str, &[RankSummary])]) -> CollectivesUpload {
    let skipped = Skipped {
        unknown_records: 1,
        bad_records: 0,
    };
    common::summaries::upload(host, jobs, &skipped)
}

/// Posts `upload` with `host`'s token: the status and the answer.
fn post(addr: std::net::SocketAddr, token_of: &str, upload: &CollectivesUpload) -> (u16, Value) {
    let body = serde_json::to_vec(upload).unwrap();
    post_to(addr, "/api/collectives", Some(&token(token_of)), &body)
}

struct Fleet {
    pg: Postgres,
    collector: Collector,
    /// Dropped last: PostgreSQL's data is in it.
    _dir: TestDir,
}

fn fleet(name: &str) -> Option<Fleet> {
    let dir = temp_dir(name);
    let pg = Postgres::start(&dir)?;
    let tokens: Vec<(&str, String)> = HOSTS.iter().map(|h| (*h, token(h))).collect();
    let tokens: Vec<(&str, &str)> = tokens.iter().map(|(h, t)| (*h, t.as_str())).collect();
    let collector = Collector::start(&pg, &tokens_file(&dir, &tokens), &[]);
    Some(Fleet {
        pg,
        collector,
        _dir: dir,
    })
}

/// The window's start: an hour ago, on a bucket boundary.
fn t0() -> f64 {
    ((now_s() - 3600) / 5 * 5) as f64
}

/// Posts both jobs, each host its own ranks: the healthy job a minute later than the
/// straggler job, so that it is the newest.
fn post_jobs(fleet: &Fleet, t0: f64) -> (Vec<RankSummary>, Vec<RankSummary>) {
    let (slow, healthy) = (straggler_job(t0), healthy_job(t0 + 60.0));
    for host in HOSTS {
        let (status, answer) = post(
            fleet.collector.addr,
            host,
            &upload(host, &[("4242", &slow), ("4343", &healthy)]),
        );
        assert_eq!(status, 201, "{answer}");
        let jobs = if matches!(host, "node001" | "node002") {
            2
        } else {
            1
        };
        let mine = 4 * BUCKETS as u64 + if jobs == 2 { 4 * BUCKETS as u64 } else { 0 };
        assert_eq!(answer["host"], host, "{answer}");
        assert_eq!(answer["jobs"], jobs, "{answer}");
        assert_eq!(answer["new"], mine, "{answer}");
        assert_eq!(answer["replaced"], 0, "{answer}");
    }
    (slow, healthy)
}

fn jobs(fleet: &Fleet, query: &str) -> Vec<JobEntry> {
    let (status, answer) = get(fleet.collector.addr, &format!("/api/jobs{query}"));
    assert_eq!(status, 200, "{answer}");
    serde_json::from_value(answer).unwrap()
}

fn symptom(fleet: &Fleet, job: &str) -> Symptom {
    let (status, answer) = get(fleet.collector.addr, &format!("/api/jobs/{job}/symptom"));
    assert_eq!(status, 200, "{answer}");
    serde_json::from_value(answer).unwrap()
}

#[test]
fn the_jobs_list_puts_the_straggler_job_first_and_its_symptom_names_the_straggler() {
    let Some(fleet) = fleet("collector-jobs") else {
        return;
    };
    let t0 = t0();
    let (slow, healthy) = post_jobs(&fleet, t0);
    assert_eq!(
        fleet.pg.count("job_collectives") as usize,
        slow.len() + healthy.len()
    );

    let listed = jobs(&fleet, "");
    assert_eq!(listed.len(), 2, "{listed:?}");
    let (a, b) = (&listed[0], &listed[1]);
    assert_eq!(a.job, "4242", "slow first, though the healthy job is newer");
    assert!(a.slow);
    assert_eq!(a.since, Some(t0 + ONSET_BUCKET as f64 * WIDTH));
    assert_eq!(a.nodes, HOSTS.to_vec());
    assert_eq!(a.last_seen, t0 + BUCKETS as f64 * WIDTH);
    // The median rank waits 40 ms more: 64 MiB over ~46 ms, ring busbw x 15/8.
    let during = a.busbw_gbs.unwrap();
    assert!((1.5..3.5).contains(&during), "{during}");
    assert_eq!(
        (a.expected_gbs, &a.verdict, a.verdict_at),
        (None, &None, None)
    );

    assert_eq!(b.job, "4343");
    assert!(!b.slow && b.since.is_none(), "{b:?}");
    assert_eq!(b.nodes, vec!["node001", "node002"]);
    assert_eq!(b.last_seen, t0 + 60.0 + BUCKETS as f64 * WIDTH);
    let before = b.busbw_gbs.unwrap();
    assert!((15.0..22.0).contains(&before), "64 MiB in ~6 ms: {before}");

    let s = symptom(&fleet, "4242");
    assert!(s.slow);
    assert_eq!(s.since, a.since);
    assert_eq!(s.stragglers.len(), 1, "{:?}", s.stragglers);
    let st = &s.stragglers[0];
    assert_eq!((st.rank, st.communicator.as_str()), (6, "0xa"));
    assert_eq!(st.host, "node003", "rank 6 on HOSTS[6 % 4]");
    assert!((st.late_us - 40_000.0).abs() < 3_000.0, "{}", st.late_us);
    assert_eq!(
        st.collectives,
        (BUCKETS - ONSET_BUCKET) as u64 * PER_BUCKET,
        "every collective from the onset on"
    );
    assert_eq!(s.records, slow.iter().map(|s| s.count).sum::<u64>());
    assert_eq!(s.skipped.unknown_records, 4, "one per host's post");
    let healthy_symptom = symptom(&fleet, "4343");
    assert!(!healthy_symptom.slow && healthy_symptom.stragglers.is_empty());

    // A resend (an agent that did not see the answer) replaces what it sent before.
    let (status, answer) = post(
        fleet.collector.addr,
        "node003",
        &upload("node003", &[("4242", &slow)]),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (answer["new"].as_u64(), answer["replaced"].as_u64()),
        (Some(0), Some(48))
    );
    assert_eq!(
        fleet.pg.count("job_collectives") as usize,
        slow.len() + healthy.len()
    );
    let again = symptom(&fleet, "4242");
    assert_eq!(again.records, s.records, "counts are replaced, not added");
    assert_eq!(again.skipped, s.skipped);
    assert_eq!(again.stragglers, s.stragglers);

    // A window after the straggler job's end lists the healthy one only.
    let later = jobs(&fleet, &format!("?since={}", t0 + 61.0));
    assert_eq!(
        later.iter().map(|j| j.job.as_str()).collect::<Vec<_>>(),
        vec!["4343"]
    );

    let (status, answer) = get(fleet.collector.addr, "/api/jobs/9999/symptom");
    assert_eq!(status, 404, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("job 9999"),
        "{answer}"
    );
    let (status, answer) = get(fleet.collector.addr, "/api/jobs?since=yesterday");
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("since"));
}

/// What the job's hosts' agents registered their links allow (DESIGN 4.8's `expected`):
/// the healthy job's 8 ranks on two hosts of four 200 Gb/s RNICs (100 GB/s across hosts, as
/// a dgx-a100's agent registers it) run at a quarter of what NCCL's model gives a 64 MiB
/// ring there, so it is slow from its start, with no earlier level to fall from. Once a
/// host's agent registers without it (an older agent) nothing is expected and it is not.
#[test]
fn a_job_far_under_what_its_hosts_allow_is_slow_from_its_start() {
    let Some(fleet) = fleet("collector-jobs-expected") else {
        return;
    };
    let t0 = t0();
    let healthy = healthy_job(t0);
    for host in ["node001", "node002"] {
        let (status, answer) = post(
            fleet.collector.addr,
            host,
            &upload(host, &[("4343", &healthy)]),
        );
        assert_eq!(status, 201, "{answer}");
    }
    // An agent's registration, saying what its host's links allow when given.
    let register = |host: &str, allows: Option<Value>| {
        let mut body = json!({"url": "http://127.0.0.1:1", "rnics": ["rnic0"]});
        if let Some(allows) = allows {
            body["expected_busbw_gbs"] = allows;
        }
        common::job::register_body(fleet.collector.addr, host, &body);
    };
    register(
        "node001",
        Some(json!({"across_hosts": 100.0, "within_host": 31.5})),
    );
    let job = &jobs(&fleet, "")[0];
    assert_eq!(job.expected_gbs, None, "node002 has no agent: {job:?}");
    assert!(!job.slow, "{job:?}");

    register(
        "node002",
        Some(json!({"across_hosts": 100.0, "within_host": 31.5})),
    );
    let job = &jobs(&fleet, "")[0];
    let expected = analyze::ring_model::ring_busbw_gbs(100.0, "AllReduce", BYTES, 8, 2);
    assert_eq!(job.expected_gbs, expected, "{job:?}");
    assert!((80.0..95.0).contains(&expected.unwrap()));
    assert!(job.slow, "{job:?}");
    assert_eq!(job.since, Some(t0), "from its first bucket");
    let busbw = job.busbw_gbs.unwrap();
    assert!(busbw < 0.5 * expected.unwrap(), "{busbw}");
    let s = symptom(&fleet, "4343");
    assert_eq!(s.busbw_gbs.before, None, "no earlier level: {s:?}");

    // The host that allows least bounds the job.
    register(
        "node002",
        Some(json!({"across_hosts": 50.0, "within_host": 31.5})),
    );
    let job = &jobs(&fleet, "")[0];
    let least = analyze::ring_model::ring_busbw_gbs(50.0, "AllReduce", BYTES, 8, 2);
    assert_eq!(job.expected_gbs, least, "{job:?}");

    // An older agent on node002, which does not say.
    register("node002", None);
    let job = &jobs(&fleet, "")[0];
    assert_eq!(job.expected_gbs, None, "{job:?}");
    assert!(!job.slow, "{job:?}");
}

#[test]
fn the_collector_judges_a_running_job_that_slowed_by_itself() {
    let Some(fleet) = fleet("collector-jobs-judged") else {
        return;
    };
    // Both jobs running: their newest buckets end now.
    let t0 = ((now_s() - (BUCKETS as i64 * WIDTH as i64)) / 5 * 5) as f64;
    let (slow, healthy) = (straggler_job(t0), healthy_job(t0));
    for host in HOSTS {
        let (status, answer) = post(
            fleet.collector.addr,
            host,
            &upload(host, &[("4242", &slow), ("4343", &healthy)]),
        );
        assert_eq!(status, 201, "{answer}");
    }
    let addr = fleet.collector.addr;
    let mut stored = Value::Null;
    common::wait_until(
        "the collector's own verdict on job 4242",
        std::time::Duration::from_secs(60),
        || {
            let (status, answer) = get(addr, "/api/jobs/4242/verdict");
            stored = answer;
            status == 200
        },
    );
    let onset = t0 + ONSET_BUCKET as f64 * WIDTH;
    assert_eq!(stored["job"], "4242");
    assert_eq!(stored["onset_s"].as_f64(), Some(onset), "{stored:#}");
    assert_eq!(stored["probed"], false);
    let report: model::job::JobReport = serde_json::from_value(stored["report"].clone()).unwrap();
    assert_eq!(report.job.as_deref(), Some("4242"));
    assert_eq!(report.nodes, HOSTS.to_vec(), "the ranks' hosts");
    assert!(!report.simulated);
    let symptom = report
        .symptom
        .as_ref()
        .expect("the job's collectives as evidence");
    assert!(symptom.slow && symptom.since == Some(onset), "{symptom:?}");
    assert_eq!(symptom.stragglers[0].host, "node003");
    let culprit = &report.culprits[0];
    assert_eq!(
        (culprit.cause.as_str(), culprit.host.as_deref()),
        ("straggler", Some("node003")),
        "{report:#?}"
    );
    assert_eq!(
        culprit.component.as_deref(),
        Some("rank6"),
        "no GPU in the records"
    );
    // No host sent a check: their own paths are said to be unjudged, not healthy.
    assert!(
        report.not_judged.iter().any(|n| n.what.contains("node001")),
        "{:?}",
        report.not_judged
    );
    let verdict = serde_json::to_value(report.verdict).unwrap();
    let verdict = verdict.as_str().unwrap();

    // Listed with the job, and exported while it runs.
    let listed = jobs(&fleet, "");
    let entry = listed.iter().find(|j| j.job == "4242").unwrap();
    assert_eq!(entry.verdict.as_deref(), Some(verdict));
    let judged_at = stored["judged_at"].as_f64().unwrap();
    assert_eq!(entry.verdict_at, Some(judged_at));
    let other = listed.iter().find(|j| j.job == "4343").unwrap();
    assert_eq!((other.slow, &other.verdict), (false, &None));
    let (status, answer) = get(addr, "/api/jobs/4343/verdict");
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("job 4343"));

    let mut metrics = String::new();
    common::wait_until(
        "the verdict on GET /metrics",
        std::time::Duration::from_secs(30),
        || {
            metrics = common::http_get(addr, "/metrics").1;
            metrics.contains("hostping_job_verdict{")
        },
    );
    for series in [
        "hostping_job_slow{job=\"4242\"} 1".to_string(),
        "hostping_job_slow{job=\"4343\"} 0".to_string(),
        format!("hostping_job_verdict{{job=\"4242\",verdict=\"{verdict}\"}} 1"),
        "hostping_job_culprit{job=\"4242\",layer=\"host\",host=\"node003\",component=\"rank6\",cause=\"straggler\"}".to_string(),
    ] {
        assert!(metrics.contains(&series), "{series} in\n{metrics}");
    }
    assert!(!metrics.contains("job=\"4343\",verdict"), "{metrics}");

    // One verdict a slowdown: later ticks keep it rather than judging again.
    std::thread::sleep(collector::slow_jobs::EVERY * 2);
    assert_eq!(fleet.pg.count("job_verdicts"), 1);

    // The same job from records a simulation wrote (`hostping nccl replay`): its verdict is
    // labelled simulated, as a simulated number always is.
    for host in HOSTS {
        let mut posted = upload(host, &[("4545", &slow)]);
        posted.jobs[0].simulated = true;
        let (status, answer) = post(fleet.collector.addr, host, &posted);
        assert_eq!(status, 201, "{answer}");
    }
    let mut simulated = Value::Null;
    common::wait_until(
        "the collector's own verdict on job 4545",
        std::time::Duration::from_secs(60),
        || {
            let (status, answer) = get(addr, "/api/jobs/4545/verdict");
            simulated = answer;
            status == 200
        },
    );
    assert_eq!(simulated["report"]["simulated"], true, "{simulated:#}");
    let (_, again) = get(addr, "/api/jobs/4242/verdict");
    assert_eq!(again["judged_at"], stored["judged_at"]);
}

#[test]
fn posts_outside_the_contract_or_of_another_host_are_refused() {
    let Some(fleet) = fleet("collector-jobs-refused") else {
        return;
    };
    let addr = fleet.collector.addr;
    let slow = straggler_job(t0());
    let mine = upload("node001", &[("4242", &slow)]);
    let body = serde_json::to_vec(&mine).unwrap();

    let (status, answer) = post_to(addr, "/api/collectives", None, &body);
    assert_eq!(status, 401, "{answer}");
    let (status, answer) = post_to(addr, "/api/collectives", Some("not-a-token"), &body);
    assert_eq!(status, 401, "{answer}");
    let (status, answer) = post(addr, "node002", &mine);
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("node002"),
        "{answer}"
    );

    let refused = |change: &dyn Fn(&mut RankSummary), field: &str| {
        let mut bad = mine.clone();
        change(&mut bad.jobs[0].summaries[3]);
        let (status, answer) = post(addr, "node001", &bad);
        assert_eq!(status, 400, "{answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.starts_with(&format!("jobs[0].summaries[3].{field}:")),
            "{error}"
        );
    };
    refused(&|s| s.count = 0, "count");
    refused(&|s| s.width_s = 0.0, "width_s");
    refused(&|s| s.exec_us = -1.0, "exec_us");
    refused(&|s| s.first_seq = s.last_seq + 1, "first_seq");
    refused(&|s| s.hostname.clear(), "hostname");

    let mut many = mine.clone();
    let one = many.jobs[0].summaries[0].clone();
    many.jobs[0].summaries = (0..10_001)
        .map(|i| RankSummary {
            start_s: one.start_s + i as f64 * WIDTH,
            ..one.clone()
        })
        .collect();
    let (status, answer) = post(addr, "node001", &many);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("10000"),
        "{answer}"
    );

    let (status, answer) = post_to(
        addr,
        "/api/collectives",
        Some(&token("node001")),
        b"{\"host\": 1}",
    );
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        fleet.pg.count("job_collectives"),
        0,
        "nothing refused is stored"
    );
}

#[test]
fn retention_deletes_collectives_past_the_setting() {
    let Some(fleet) = fleet("collector-jobs-retention") else {
        return;
    };
    let day = 86_400.0;
    let old = straggler_job(t0() - 40.0 * day);
    let recent = healthy_job(t0());
    let (status, answer) = post(
        fleet.collector.addr,
        "node001",
        &upload("node001", &[("old", &old), ("recent", &recent)]),
    );
    assert_eq!(status, 201, "{answer}");
    let old_rows = old.iter().filter(|s| s.hostname == "node001").count() as u64;
    let cutoff_ms = (now_s() - 30 * 86_400) * 1000;
    let tick = common::postgres::runtime().block_on(async {
        let pool = fleet.pg.pool(1);
        let mut client = pool.get().await.unwrap();
        // Verdicts reached 40 days ago and now (the collector judges only running jobs:
        // these two are written as an older collector would have).
        client
            .batch_execute(
                "INSERT INTO job_verdicts (job, onset_s, judged_at, verdict, probed, report)
                 VALUES ('old', 1, now() - interval '40 days', 'host', false, '{}'),
                        ('recent', 2, now(), 'neither', false, '{}')",
            )
            .await
            .unwrap();
        // Actions (crate::actions): an old one that ended goes; an old one still in force
        // (a node still drained) and a recent one stay.
        client
            .batch_execute(
                "INSERT INTO actions (at, kind, state, host, ended_at, action, verdict) VALUES
                   (now() - interval '40 days', 'drain', 'resumed', 'n1',
                    now() - interval '39 days', '{}', '{}'),
                   (now() - interval '40 days', 'drain', 'taken', 'n2', NULL, '{}', '{}'),
                   (now(), 'alert', 'resolved', 'n3', now(), '{}', '{}')",
            )
            .await
            .unwrap();
        retention::tick(&mut client, cutoff_ms, 1000, 10)
            .await
            .unwrap()
    });
    let Tick::Deleted(deleted) = tick else {
        panic!("{tick:?}")
    };
    assert_eq!(
        (
            deleted.job_collectives,
            deleted.job_collective_reads,
            deleted.job_verdicts
        ),
        (old_rows, 1, 1)
    );
    assert_eq!(
        fleet.pg.count("job_verdicts"),
        1,
        "the recent verdict stays"
    );
    assert_eq!(deleted.actions, 1, "the old action that ended");
    assert_eq!(
        fleet
            .pg
            .scalar("SELECT string_agg(host, ',' ORDER BY host) FROM actions"),
        "n2,n3",
        "an action in force and a recent one stay"
    );
    assert_eq!(fleet.pg.count("job_collective_reads"), 1);
    let left = jobs(&fleet, &format!("?since={}", t0() - 50.0 * day));
    assert_eq!(
        left.iter().map(|j| j.job.as_str()).collect::<Vec<_>>(),
        vec!["recent"]
    );
}
