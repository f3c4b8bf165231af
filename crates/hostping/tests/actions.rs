//! Confirm, then act (DESIGN 4.9, issue 40) with the real parts: a one-node Slurm
//! (scripts/slurm/one-node.sh), a throw-away PostgreSQL, a real Alertmanager (Debian's
//! `prometheus-alertmanager`) and `hostping collector --actions FILE`.
//!
//! First the whole loop, nothing called in-process: the node's agent (a simulated host with
//! a degraded GPU link) checks and reports; a job's collectives, posted as its agent posts
//! them, slow down; the collector's slow-job watch judges the job by itself (probes on), asks
//! the agent to check the node again (the recheck that confirms), and acts:
//!
//! - the confirmed host culprit drains the node (`sinfo` shows DRAIN with hostping's
//!   reason) and fires an alert with DESIGN 4.9's labels (read back from Alertmanager); the
//!   drain says what it wins back, from the job's own collectives.
//!
//! Then the policy's other paths, each on a real verdict (`hostping job --sim-cluster
//! --probe` on a host fault, its host named as the Slurm node) handed to the collector's
//! actions (`collector::actions::Actions::on_verdict`, what the watch does with each verdict
//! it stores) on the collector's database, while the collector itself serves the runs,
//! `GET /api/actions`, undo, and runs the upkeep tick (resume after healthy checks, alerts
//! resolved):
//!
//! - `resume_after` healthy checks resume the loop's drain and resolve its alert;
//! - drained again, undo (`POST /api/actions/{id}/undo`, an action token; 401 without)
//!   resumes it;
//! - a node an operator drained stays drained (the drain refused, the healthy checks do not
//!   resume it);
//! - a burst of culprits past the limits drains nothing, each refusal naming its limit;
//! - a culprit the follow-ups cleared never acts;
//! - the UI's actions page (`/actions`) in a real headless Chromium lists them all, newest
//!   first, a refusal with its limit, a resumed drain in the healthy colour (screenshot
//!   `target/test-artifacts/ui/actions.png`; skipped without chromium unless
//!   HOSTPING_REQUIRE_CHROMIUM is set).
//!
//! Needs root (Slurm's daemons; skipped with a message otherwise), PostgreSQL's server,
//! Slurm and Alertmanager; skipped with a message without them unless
//! HOSTPING_REQUIRE_POSTGRES, HOSTPING_REQUIRE_SLURM and HOSTPING_REQUIRE_ALERTMANAGER are
//! set, as ./test.sh does.

mod common;
#[path = "../../slurm/tests/support/one_node.rs"]
mod one_node;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use collector::actions::Actions;
use common::alertmanager::{have_alertmanager, Alertmanager};
use common::browser::{is_green, js, rgb, screenshot, wait_until, ChromeDriver};
use common::job::{now_s, post_run, token};
use common::postgres::{get, post_to, runtime, Collector, Postgres};
use common::summaries::{summary, BUCKETS, BYTES, EXEC, ONSET_BUCKET, WIDTH};
use common::{agent, hostping, probe_tokens_file, sim_report, temp_dir, tokens_file, Agent};
use model::inspector::{RankSummary, Skipped};
use model::job::{FollowUp, JobReport};
use one_node::{node_name, sinfo, OneNode};
use serde_json::Value;
use verdict::actions::Policy;

/// The token the collector's own verdicts probe with (`--judge-probe-token-file`).
const PROBE_TOKEN: &str = "tok-probe-0123456789abcdef";

/// The longest wait for a recheck the collector asked of an agent.
const CHECK_WAIT: Duration = collector::job::follow_up::CHECK_WAIT;

/// `hostping job` on the simulated pod-32's node001 and node002 with `inject`, then `extra`.
fn sim_job(inject: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "job",
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node[001-002]",
        "--inject",
        inject,
    ];
    args.extend_from_slice(extra);
    hostping(&args)
}

/// node002's degraded PCIe link on its job path, which its recheck finds again.
const HOST_FAULT: &str = "node002:degrade:gpu0--lsw0:0.3";

/// A real verdict with a confirmed host culprit: the simulated cluster's, on a degraded
/// PCIe link of node002's job path (its recheck finds it again), its hosts renamed so that
/// node002 is `node`.
fn host_verdict(node: &str, job: &str) -> JobReport {
    let o = sim_job(HOST_FAULT, &["--probe", "--format", "json"]);
    let text = String::from_utf8(o.stdout).unwrap();
    let text = text.replace("node002", node);
    let mut report: JobReport =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    report.job = Some(job.to_string());
    assert_eq!(report.culprits[0].host.as_deref(), Some(node), "{text}");
    report
}

/// `node`'s agent, reporting to `collector`: a simulated dgx-a100 with a degraded GPU link
/// that checks at its start and when a holder of a token of `probe_tokens` asks, its clock
/// 600 times faster so that its duty cycle lets an asked-for check run at once.
fn node_agent(dir: &Path, node: &str, collector: &Collector, probe_tokens: &Path) -> Agent {
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        "[triggers]\nhost_status_every = \"100h\"\nsymptoms_every = \"100h\"\n",
    )
    .unwrap();
    let url = format!("http://{}", collector.addr);
    agent(
        &dir.join("agent.db"),
        &[
            "--config",
            config.to_str().unwrap(),
            "--time-scale",
            "600",
            "--name",
            node,
            "--collector",
            &url,
            "--token",
            &token(node),
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
            "--inject",
            "degrade:gpu0--lsw0:0.3",
        ],
        &[],
    )
}

/// Alertmanager's firing alerts of `node` from hostping.
fn firing(am: &Alertmanager, node: &str) -> Vec<Value> {
    am.alerts()
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == "HostpingCulprit" && a["labels"]["host"] == node)
        .collect()
}

/// `GET /api/actions`.
fn actions(collector: &Collector) -> Vec<Value> {
    let (code, v) = get(collector.addr, "/api/actions");
    assert_eq!(code, 200, "{v}");
    v.as_array().unwrap().clone()
}

fn state_of(collector: &Collector, id: i64) -> String {
    actions(collector)
        .iter()
        .find(|a| a["id"] == id)
        .map(|a| a["state"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
fn confirmed_culprits_drain_alert_resume_and_stay_within_the_limits() {
    let dir = temp_dir("actions");
    for sub in ["pg", "slurm", "am"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let Some(pg) = Postgres::start(&dir.join("pg")) else {
        return;
    };
    if !have_alertmanager() {
        return;
    }
    // scontrol and sinfo, here and in the collector, find it through SLURM_CONF.
    let Some(_slurm) = OneNode::start(&dir.join("slurm")) else {
        return;
    };
    let am = Alertmanager::start(&dir.join("am"));
    let node = node_name();
    let policy_text = format!(
        "mode = \"act\"\nconfirm = 1\nresume_after = 2\nalertmanager = \"{}\"\n\
         [limits]\nper_hour = 20\ndrained_share = 1.0\n",
        am.url()
    );
    let policy_file = dir.join("actions.toml");
    std::fs::write(&policy_file, &policy_text).unwrap();
    let undo_token = "tok-undo-0123456789abcdef";
    let action_tokens = probe_tokens_file(&dir, undo_token);
    // The collector's own verdicts probe with this token (its rechecks of a suspected host
    // go to the host's agent, which accepts it).
    std::fs::create_dir_all(dir.join("probe")).unwrap();
    let probe_tokens = probe_tokens_file(&dir.join("probe"), PROBE_TOKEN);
    let judge_token = dir.join("judge.token");
    std::fs::write(&judge_token, format!("{PROBE_TOKEN}\n")).unwrap();
    let tokens = tokens_file(&dir, &[(&node, &token(&node))]);
    let collector = Collector::start(
        &pg,
        &tokens,
        &[
            "--actions",
            policy_file.to_str().unwrap(),
            "--action-tokens",
            action_tokens.to_str().unwrap(),
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
            "--judge-probe-token-file",
            judge_token.to_str().unwrap(),
        ],
    );
    let policy = Policy::parse(&policy_file, &policy_text).unwrap();
    let acting = Actions::new(pg.pool(4), policy);
    let rt = runtime();
    let log = |line: String| eprintln!("{line}");
    let healthy = sim_report(&[]);
    let mut run_id = 0;
    let mut post_healthy = |n: usize| {
        for _ in 0..n {
            run_id += 1;
            // Started after the action (the runs counted are those since it).
            post_run(
                collector.addr,
                &node,
                run_id,
                now_s() + 2 + run_id,
                &healthy,
            );
        }
    };

    // -- a job slows; the collector judges it by itself, checks the host again, acts -------
    // The node's agent: a simulated host with a degraded GPU link, which checks only at its
    // start and when asked (its clock 600 times faster so that its duty cycle lets it).
    let agent = node_agent(&dir, &node, &collector, &probe_tokens);
    common::wait_until("the agent's first check", Duration::from_secs(90), || {
        pg.count("runs") >= 1
    });
    // Its job: four ranks on the node whose all-reduce halved its bus bandwidth 30 s ago,
    // every rank alike (no straggler), posted as the node's agent posts them.
    let t0 = ((now_s() - (BUCKETS as i64 * WIDTH as i64)) / 5 * 5) as f64;
    let job: Vec<RankSummary> = (0..BUCKETS)
        .flat_map(|b| {
            let node = node.clone();
            (0..4).map(move |rank| {
                let exec = if b >= ONSET_BUCKET { 2.0 * EXEC } else { EXEC };
                summary(
                    ("0xc", "AllReduce", BYTES),
                    (rank, 4, 1),
                    &node,
                    (t0, b),
                    exec,
                )
            })
        })
        .collect();
    let upload = common::summaries::upload(&node, &[("77", &job)], &Skipped::default());
    let (status, answer) = post_to(
        collector.addr,
        "/api/collectives",
        Some(&token(&node)),
        &serde_json::to_vec(&upload).unwrap(),
    );
    assert_eq!(status, 201, "{answer}");
    let mut listed = Vec::new();
    common::wait_until(
        "the collector's own drain and alert",
        CHECK_WAIT + Duration::from_secs(60),
        || {
            listed = actions(&collector);
            listed.len() >= 2
        },
    );
    drop(agent);
    let (code, stored) = get(collector.addr, "/api/jobs/77/verdict");
    assert_eq!(code, 200, "{stored}");
    let report: JobReport = serde_json::from_value(stored["report"].clone()).unwrap();
    let culprit = &report.culprits[0];
    assert_eq!(culprit.host.as_deref(), Some(node.as_str()), "{report:#?}");
    let recheck = report
        .follow_ups
        .iter()
        .find(|f| f.kind == "recheck")
        .unwrap_or_else(|| panic!("the node checked again: {:#?}", report.follow_ups));
    assert!(
        recheck.outcome.starts_with("checked (run ") && recheck.outcome.contains(&culprit.cause),
        "{recheck:?}"
    );
    let taken: Vec<(&str, &str)> = listed
        .iter()
        .map(|a| (a["kind"].as_str().unwrap(), a["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        taken,
        [("alert", "taken"), ("drain", "taken")],
        "{listed:#?}"
    );
    let drain = &listed[1];
    let reason = drain["reason"].as_str().unwrap().to_string();
    assert_eq!(
        reason,
        format!(
            "hostping: {} {} job 77",
            culprit.cause,
            culprit.component.as_deref().unwrap()
        )
    );
    assert_eq!(sinfo(&node), ("drain".to_string(), reason.clone()));
    let why = drain["why"].as_str().unwrap();
    assert!(why.contains("confirmed by recheck "), "{why}");
    // What it wins back: the job's own all-reduce at its level before the onset, about
    // half its time since.
    let wins = &drain["wins_back"];
    assert_eq!(wins["source"], "collectives", "{drain:#}");
    let ratio = wins["to_us"].as_f64().unwrap() / wins["from_us"].as_f64().unwrap();
    assert!((0.4..0.6).contains(&ratio), "{wins}");
    let alerts = firing(&am, &node);
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    let labels = &alerts[0]["labels"];
    assert_eq!(labels["cause"], culprit.cause.as_str());
    assert_eq!(labels["layer"], "host");
    assert_eq!(labels["job"], "77");
    assert_eq!(
        labels["component"],
        culprit.component.clone().unwrap().as_str()
    );
    assert!(alerts[0]["annotations"]["why"]
        .as_str()
        .unwrap()
        .contains("confirmed by"));
    // Listed newest first, with the verdict that caused them.
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["kind"], "alert");
    assert_eq!(listed[1]["kind"], "drain");
    let drain_id = listed[1]["id"].as_i64().unwrap();
    let (code, one) = get(collector.addr, &format!("/api/actions/{drain_id}"));
    assert_eq!(code, 200);
    assert_eq!(one["verdict"]["job"], "77");
    assert_eq!(one["verdict"]["culprits"][0]["host"], node.as_str());

    // -- healthy checks resume it and resolve the alert ---------------------------------------
    post_healthy(1);
    std::thread::sleep(collector::actions::TICK * 2);
    assert_eq!(
        sinfo(&node).0,
        "drain",
        "one healthy check of two resumed it"
    );
    post_healthy(1);
    common::wait_until("the drain resumed", Duration::from_secs(30), || {
        state_of(&collector, drain_id) == "resumed"
    });
    assert_ne!(sinfo(&node).0, "drain");
    // The record end to end (verdict, confirmation, estimate, drain, resume), as a reader
    // of the audit trail sees it.
    let (_, record) = get(collector.addr, &format!("/api/actions/{drain_id}"));
    println!("the drain's record: {record:#}");
    common::wait_until("the alert resolved", Duration::from_secs(30), || {
        firing(&am, &node).is_empty()
    });
    assert!(actions(&collector)
        .iter()
        .any(|a| a["kind"] == "alert" && a["state"] == "resolved"));

    // -- drained again; undo: an action token, then the node resumes ------------------------
    let report = host_verdict(&node, "78");
    let taken = rt
        .block_on(acting.on_verdict("78", 2.0, &report, &log))
        .unwrap();
    let kinds: Vec<(&str, &str)> = taken
        .iter()
        .map(|a| (a.kind.as_str(), a.state.as_str()))
        .collect();
    assert_eq!(kinds, [("drain", "taken"), ("alert", "taken")], "{taken:?}");
    assert_eq!(sinfo(&node).0, "drain");
    let undo = format!("/api/actions/{}/undo", taken[0].id.unwrap());
    let (code, _) = post_to(collector.addr, &undo, None, b"");
    assert_eq!(code, 401);
    let (code, _) = post_to(
        collector.addr,
        &undo,
        Some("tok-wrong-0123456789abcdef"),
        b"",
    );
    assert_eq!(code, 401);
    let (code, v) = post_to(collector.addr, &undo, Some(undo_token), b"");
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["state"], "undone");
    assert_ne!(sinfo(&node).0, "drain");
    let (code, v) = post_to(collector.addr, &undo, Some(undo_token), b"");
    assert_eq!(code, 409, "undone twice: {v}");

    // -- an operator's drain stays ------------------------------------------------------------
    let status = Command::new("scontrol")
        .args([
            "update",
            &format!("NodeName={node}"),
            "State=DRAIN",
            "Reason=bad DIMM, ticket 4411",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let report = host_verdict(&node, "79");
    let taken = rt
        .block_on(acting.on_verdict("79", 3.0, &report, &log))
        .unwrap();
    let drain = taken.iter().find(|a| a.kind.as_str() == "drain").unwrap();
    assert_eq!(drain.state.as_str(), "refused");
    assert!(
        drain
            .refused_by
            .as_deref()
            .unwrap()
            .contains("drained already, not by hostping"),
        "{drain:?}"
    );
    post_healthy(2);
    std::thread::sleep(collector::actions::TICK * 3);
    assert_eq!(
        sinfo(&node),
        ("drain".to_string(), "bad DIMM, ticket 4411".to_string())
    );

    // -- a burst past the limits drains nothing -------------------------------------------------
    assert!(Command::new("scontrol")
        .args(["update", &format!("NodeName={node}"), "State=RESUME"])
        .status()
        .unwrap()
        .success());
    let tight = Policy::parse(
        Path::new("tight.toml"),
        "mode = \"act\"\nconfirm = 1\nkinds = [\"drain\"]\n[limits]\nper_hour = 100\n\
         drained_share = 0.5",
    )
    .unwrap();
    let burst = Actions::new(pg.pool(2), tight);
    for job in ["80", "81", "82"] {
        let report = host_verdict(&node, job);
        let taken = rt
            .block_on(burst.on_verdict(job, 4.0, &report, &log))
            .unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].state.as_str(), "refused");
        assert!(
            taken[0]
                .refused_by
                .as_deref()
                .unwrap()
                .starts_with("limits.drained_share: draining "),
            "{:?}",
            taken[0]
        );
    }
    let per_hour = Policy::parse(
        Path::new("per-hour.toml"),
        "mode = \"act\"\nconfirm = 1\nkinds = [\"drain\"]\n[limits]\nper_hour = 1\n\
         drained_share = 1.0",
    )
    .unwrap();
    let report = host_verdict(&node, "83");
    let taken = rt
        .block_on(Actions::new(pg.pool(2), per_hour).on_verdict("83", 5.0, &report, &log))
        .unwrap();
    assert_eq!(taken[0].state.as_str(), "refused");
    assert!(taken[0]
        .refused_by
        .as_deref()
        .unwrap()
        .starts_with("limits.per_hour: "));
    assert_ne!(
        sinfo(&node).0,
        "drain",
        "a burst past the limits drained the node"
    );
    let refused = actions(&collector)
        .iter()
        .filter(|a| a["state"] == "refused")
        .count();
    assert_eq!(refused, 5, "each refusal recorded");

    // -- a culprit the follow-ups cleared never acts --------------------------------------------
    let mut report = host_verdict(&node, "84");
    report.follow_ups.push(FollowUp {
        kind: "recheck".into(),
        target: format!("{node} loopback"),
        why: String::new(),
        outcome: "checked (run 12): healthy".into(),
        round: None,
    });
    let before = actions(&collector).len();
    let taken = rt
        .block_on(acting.on_verdict("84", 6.0, &report, &log))
        .unwrap();
    assert!(taken.is_empty(), "{taken:?}");
    assert_eq!(actions(&collector).len(), before);
    assert_ne!(sinfo(&node).0, "drain");

    // -- the actions page, in a real browser -----------------------------------------------------
    if let Some(driver) = ChromeDriver::start() {
        let listed = actions(&collector);
        let url = format!("http://{}/actions", collector.addr);
        rt.block_on(async {
            let c = driver.session(1400, 1200).await;
            c.goto(&url).await.unwrap();
            wait_until(
                &c,
                "the actions table",
                "document.querySelectorAll('#actions tbody tr').length > 0",
            )
            .await;
            let rows = js(
                &c,
                "return [...document.querySelectorAll('#actions tbody tr')].map((r) => ({
                    id: r.dataset.id, kind: r.dataset.kind, state: r.dataset.state,
                    text: r.textContent,
                    badge: getComputedStyle(r.querySelector('.badge')).backgroundColor}));",
            )
            .await;
            let rows = rows.as_array().unwrap();
            // Every action, newest first, as the API lists them.
            let ids: Vec<String> = rows
                .iter()
                .map(|r| r["id"].as_str().unwrap().to_string())
                .collect();
            let want: Vec<String> = listed.iter().map(|a| a["id"].to_string()).collect();
            assert_eq!(ids, want);
            let refused = rows.iter().find(|r| r["state"] == "refused").unwrap();
            assert!(
                refused["text"]
                    .as_str()
                    .unwrap()
                    .contains("refused: limits.per_hour: "),
                "{refused}"
            );
            let resumed = rows.iter().find(|r| r["state"] == "resumed").unwrap();
            assert_eq!(resumed["kind"], "drain");
            assert!(
                resumed["text"].as_str().unwrap().contains("hostping: "),
                "{resumed}"
            );
            assert!(
                is_green(rgb(resumed["badge"].as_str().unwrap())),
                "{resumed}"
            );
            let summary = js(
                &c,
                "return document.getElementById('actions-summary').textContent;",
            )
            .await;
            assert!(summary.as_str().unwrap().contains(" refused"), "{summary}");
            screenshot(&c, "actions").await;
            c.close().await.unwrap();
        });
    }
    drop(collector);
}

/// `hostping job --actions FILE`: the report's `actions`, what the policy would do; the
/// CLI acts on nothing.
#[test]
fn job_actions_say_what_the_policy_would_do() {
    let dir = temp_dir("job-actions");
    let policy = dir.join("actions.toml");
    std::fs::write(&policy, "confirm = 1\nkinds = [\"drain\"]\n").unwrap();
    let policy = policy.to_str().unwrap();
    let run = |inject: &str| -> Value {
        let o = sim_job(
            inject,
            &["--format", "json", "--actions", policy, "--probe"],
        );
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let v = run(HOST_FAULT);
    let actions = v["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{v}");
    let a = &actions[0];
    assert_eq!(a["kind"], "drain");
    assert_eq!(a["state"], "proposed");
    assert_eq!(a["host"], "node002");
    assert_eq!(a["reason"], "hostping: link_failure gpu0--lsw0 job -");
    assert_eq!(a["wins_back"], Value::Null, "no what-if ran");
    assert!(a["why"]
        .as_str()
        .unwrap()
        .contains("confirmed by recheck node002 loopback: checked (simulated): link_failure"));
    // In words: the policy's section.
    let o = sim_job(HOST_FAULT, &["--actions", policy, "--probe"]);
    let text = common::stdout(&o);
    assert!(
        text.contains("what the policy would do (--actions):\n  drain node002 (proposed): hostping: link_failure gpu0--lsw0 job -"),
        "{text}"
    );
    // A fault on a host the job does not use: no action.
    let v = run("node009:degrade:gpu0--lsw0:0.3");
    assert!(v.get("actions").is_none(), "{}", v["actions"]);
    // Without follow-up probes nothing is confirmed, nothing would act, and it is said.
    let o = sim_job(HOST_FAULT, &["--format", "json", "--actions", policy]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("actions").is_none(), "{}", v["actions"]);
    assert!(
        common::stderr(&o).contains("--actions without --probe"),
        "{}",
        common::stderr(&o)
    );
}

/// A bad policy file is refused before anything runs: exit 2, the file and the field named.
#[test]
fn bad_policy_files_are_refused_with_exit_2() {
    let dir = temp_dir("bad-actions");
    let cases = [
        (
            "[limits]\ndrained_share = 1.5\n",
            "field `limits.drained_share`: must be within 0 and 1",
        ),
        (
            "kinds = [\"drain\"]\nmoed = \"act\"\n",
            "unknown field `moed`",
        ),
        (
            "mode = \"act\"\n",
            "field `alertmanager`: is needed for `alert`",
        ),
    ];
    for (text, want) in cases {
        let file = dir.join("actions.toml");
        std::fs::write(&file, text).unwrap();
        let f = file.to_str().unwrap();
        for args in [
            vec!["job", "--sim-cluster", "pod-32", "--actions", f],
            vec![
                "collector",
                "--database",
                "postgres://nobody@127.0.0.1:1/none",
                "--actions",
                f,
            ],
        ] {
            let o = hostping(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            let err = common::stderr(&o);
            assert!(err.contains(&format!("--actions {f}: ")), "{err}");
            assert!(err.contains(want), "{err}");
        }
    }
    let o = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--actions",
        "/nonexistent.toml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("--actions /nonexistent.toml: "));
}
