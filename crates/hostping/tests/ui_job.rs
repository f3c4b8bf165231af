//! The web UI's job page (issue 28 section 4) in a real headless Chromium: a collector on a
//! real PostgreSQL with the cabling of a real fat tree (`--fabric`, the SX6036 capture
//! `job_collector.rs` uses), runs posted for a job's three hosts (one with a PCIe link
//! failure diagnosed) and a sampler's sweeps in which symbol errors rise on the cable of one
//! of the job's hosts (on its routes) and on another host's cable (off them). The page,
//! opened for the job, must show the verdict and summary the API answers, the host culprit
//! and the cable culprit with their actions, the errored port red and marked as on the
//! job's routes, the other one listed as not the job's, the hosts linking to their pages;
//! opened bare, its form must lead to the same verdict; a bad `nodes` must show the API's
//! refusal in words. Screenshots go to `target/test-artifacts/ui/` (`job.png`,
//! `job-error.png`).
//!
//! Needs PostgreSQL's server binaries and chromium/chromedriver; skipped without them unless
//! `HOSTPING_REQUIRE_POSTGRES` / `HOSTPING_REQUIRE_CHROMIUM` are set (as `./test.sh` does).

mod common;

use common::browser::{is_red, js, rgb, screenshot, wait_until, ChromeDriver};
use common::job::{now_s, post_run, post_sweep, register, token, OFF_ROUTE, ON_ROUTE};
use common::postgres::{get, Collector, Postgres};
use common::{sim_report, temp_dir, tokens_file};
use fantoccini::{Client, Locator};
use model::job::JobReport;
use serde_json::json;
use std::path::Path;

/// The job's hosts (stage1 and stage2 on the leaf `MF0;ib1:SX6036/U1`, stage60 on a leaf of
/// its own) and stage100, outside the job, each with its RNIC `mlx4_0` on the fabric.
const JOB: [&str; 3] = ["stage1", "stage2", "stage60"];
const OUTSIDE: &str = "stage100";
/// The job's hosts as a Slurm hostlist.
const NODES: &str = "stage[1-2],stage60";
/// stage60's run diagnoses this link (on the job's path from its RNIC).
const FAULT: &str = "degrade:gpu0--lsw0:0.5";
const FAULTY_LINK: &str = "gpu0--lsw0";
// `ON_ROUTE` (common::job) is stage1's cable, on every route of the job; `OFF_ROUTE` is
// stage100's, off the job's routes.

async fn text(c: &Client, css: &str) -> String {
    let e = c
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    e.text().await.unwrap()
}

/// The culprits drawn under `list`: (host, component, cause), in order.
async fn drawn_culprits(c: &Client, list: &str) -> Vec<(String, String, String)> {
    let v = js(
        c,
        &format!(
            "return [...document.querySelectorAll('#{list} li')].map(l =>
                [l.dataset.host || '', l.dataset.component || '', l.dataset.cause]);"
        ),
    )
    .await;
    serde_json::from_value(v).unwrap()
}

fn culprit_keys(culprits: &[model::job::Culprit]) -> Vec<(String, String, String)> {
    culprits
        .iter()
        .map(|c| {
            (
                c.host.clone().unwrap_or_default(),
                c.component.clone().unwrap_or_default(),
                c.cause.clone(),
            )
        })
        .collect()
}

/// Waits for the job page to show its verdict.
async fn wait_for_verdict(c: &Client) {
    wait_until(
        c,
        "the verdict",
        "document.querySelector('#verdict [data-verdict]') !== null",
    )
    .await;
}

#[test]
fn the_job_page_shows_the_verdict_the_culprits_and_the_ports() {
    let Some(driver) = ChromeDriver::start() else {
        return;
    };
    let dir = temp_dir("ui-job");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/ibnetdiscover/loginoff-sx6036-fattree.topo");
    let names: Vec<&str> = JOB.iter().copied().chain([OUTSIDE, "s1"]).collect();
    let tokens: Vec<(String, String)> = names.iter().map(|h| (h.to_string(), token(h))).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(h, t)| (h.as_str(), t.as_str()))
        .collect();
    let collector = Collector::start(
        &pg,
        &tokens_file(&dir, &pairs),
        &["--fabric", capture.to_str().unwrap()],
    );
    let addr = collector.addr;
    let now = now_s();
    let (since, until) = (now - 600, now);
    let healthy = sim_report(&[]);
    let faulty = sim_report(&[FAULT]);
    for host in JOB.iter().chain([&OUTSIDE]) {
        register(addr, host, "mlx4_0");
        let report = if *host == "stage60" {
            &faulty
        } else {
            &healthy
        };
        post_run(addr, host, 1, now - 300, report);
    }
    // Steady counters before the window; both cables' symbol errors rise inside it.
    post_sweep(addr, 1, now - 1100, 7, 7);
    post_sweep(addr, 2, now - 700, 7, 7);
    post_sweep(addr, 3, now - 400, 7, 7);
    post_sweep(addr, 4, now - 50, 5007, 5007);

    let query = format!("nodes={NODES}&since={since}&until={until}&job=77");
    let (status, answer) = get(addr, &format!("/api/jobs/verdict?{query}"));
    assert_eq!(status, 200, "{answer}");
    let report: JobReport = serde_json::from_value(answer.clone()).unwrap();
    // What the page must show: a host culprit on stage60's link and a cable culprit on
    // stage1's, and stage100's cable not the job's.
    assert!(report.verdict.infrastructure_at_fault(), "{answer}");
    let culprits = culprit_keys(&report.culprits);
    assert!(
        culprits
            .iter()
            .any(|c| c.0 == "stage60" && c.1 == FAULTY_LINK),
        "{culprits:?}"
    );
    assert!(culprits.iter().any(|c| c.1 == ON_ROUTE), "{culprits:?}");
    assert!(
        report
            .not_the_jobs
            .iter()
            .any(|c| c.component.as_deref() == Some(OFF_ROUTE)),
        "{answer}"
    );
    let port_state = |name: &str| {
        let p = report.ports.iter().find(|p| p.port == name).unwrap();
        (p.state.clone(), p.on_job_route)
    };
    assert_eq!(port_state(ON_ROUTE), ("errors".to_string(), true));
    assert_eq!(port_state(OFF_ROUTE), ("errors".to_string(), false));
    let bad_nodes = "stage[2-1]";
    let (status, refusal) = get(addr, &format!("/api/jobs/verdict?nodes={bad_nodes}"));
    assert_eq!(status, 400, "{refusal}");
    let refusal = refusal["error"].as_str().unwrap().to_owned();

    let url = format!("http://{addr}");
    let runtime = common::postgres::runtime();
    runtime.block_on(async {
        let c = driver.session(1280, 1800).await;

        // Bare: the form, and the job judged from it.
        c.goto(&format!("{url}/job")).await.unwrap();
        wait_until(
            &c,
            "the form's prompt",
            "document.getElementById('job-status').textContent.startsWith('Enter')",
        )
        .await;
        assert_eq!(
            js(&c, "return document.getElementById('job-report').hidden;").await,
            true
        );
        for (id, value) in [
            ("job-nodes", NODES.to_string()),
            ("job-since", since.to_string()),
            ("job-until", until.to_string()),
            ("job-id", "77".to_string()),
        ] {
            c.find(Locator::Id(id))
                .await
                .unwrap()
                .send_keys(&value)
                .await
                .unwrap();
        }
        c.find(Locator::Css("#job-form button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_for_verdict(&c).await;
        let address = c.current_url().await.unwrap();
        let asked: Vec<(String, String)> = address
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        assert_eq!(
            asked,
            [
                ("nodes", NODES.to_string()),
                ("since", since.to_string()),
                ("until", until.to_string()),
                ("job", "77".to_string())
            ]
            .map(|(k, v)| (k.to_string(), v)),
            "{address}"
        );

        // The verdict and its summary, as the API answers them, in the colour of a fault.
        c.goto(&format!("{url}/job?{query}")).await.unwrap();
        wait_for_verdict(&c).await;
        assert_eq!(
            text(&c, "#verdict [data-verdict]").await,
            report.verdict.as_str()
        );
        assert_eq!(text(&c, "#verdict-summary").await, report.summary);
        let badge = js(
            &c,
            "return getComputedStyle(document.querySelector('#verdict .badge')).backgroundColor;",
        )
        .await;
        assert!(is_red(rgb(badge.as_str().unwrap())), "{badge}");
        // The runs come from simulated hosts: the verdict and the page say so (issue 38).
        assert!(report.simulated, "{}", report.summary);
        assert_eq!(text(&c, "#verdict-simulated").await, "SIMULATED");
        assert_eq!(text(&c, "#job-title").await, "Job 77");

        // Each culprit ranked as the API ranks them, with its evidence and action in words.
        assert_eq!(drawn_culprits(&c, "culprits").await, culprits);
        let items = c.find_all(Locator::Css("#culprits li")).await.unwrap();
        for (item, culprit) in items.iter().zip(&report.culprits) {
            let words = item.text().await.unwrap();
            assert!(words.contains(&culprit.evidence), "{words}");
            assert!(
                words.contains(&format!("Action: {}", culprit.action)),
                "{words}"
            );
            assert!(
                words.contains(&format!("score {:.2}", culprit.score)),
                "{words}"
            );
        }
        let host_culprit = text(
            &c,
            &format!("#culprits li[data-host='stage60'][data-component='{FAULTY_LINK}']"),
        )
        .await;
        assert!(
            host_culprit.contains(&format!(" on stage60 {FAULTY_LINK}")),
            "{host_culprit}"
        );
        // The fault off the job's routes is listed apart, and what was not judged is said.
        assert_eq!(
            drawn_culprits(&c, "not-the-jobs").await,
            culprit_keys(&report.not_the_jobs)
        );
        let unjudged = text(&c, "#job-not-judged").await;
        for n in &report.not_judged {
            assert!(
                unjudged.contains(&format!("{}: {}", n.what, n.why)),
                "{unjudged}"
            );
        }

        // The hosts with their health, each linking to its page.
        let rows: Vec<(String, String, String)> = serde_json::from_value(
            js(
                &c,
                "return [...document.querySelectorAll('#job-hosts tbody tr')].map(r =>
                [r.dataset.host, r.dataset.health, r.querySelector('a').getAttribute('href')]);",
            )
            .await,
        )
        .unwrap();
        let expected: Vec<(String, String, String)> = report
            .hosts
            .iter()
            .map(|x| {
                let health = match x.healthy {
                    Some(true) => "healthy",
                    Some(false) => "unhealthy",
                    None => "not_judged",
                };
                (
                    x.host.clone(),
                    health.to_string(),
                    format!("/hosts/{}", x.host),
                )
            })
            .collect();
        assert_eq!(rows, expected);
        assert!(
            rows.iter().any(|r| r.0 == "stage60" && r.1 == "unhealthy"),
            "{rows:?}"
        );

        // The ports, grouped by switch: the errored one on the job's routes red and outlined,
        // the one off them red and not outlined.
        let cell = |port: &str| format!("#switches .switch .port[data-port=\"{port}\"]");
        for (port, route) in [(ON_ROUTE, "true"), (OFF_ROUTE, "false")] {
            let e = c
                .find(Locator::Css(&cell(port)))
                .await
                .unwrap_or_else(|e| panic!("{port}: {e}"));
            assert_eq!(
                e.attr("data-state").await.unwrap().as_deref(),
                Some("errors")
            );
            assert_eq!(e.attr("data-route").await.unwrap().as_deref(), Some(route));
            assert!(
                is_red(rgb(&e.css_value("background-color").await.unwrap())),
                "{port}"
            );
            let border = e.css_value("border-top-color").await.unwrap();
            let outlined = rgb(&border) == (29, 35, 41) && !border.ends_with(", 0)");
            assert_eq!(outlined, route == "true", "{port}");
        }
        assert_eq!(text(&c, &cell(ON_ROUTE)).await, "32");
        let switch = js(
            &c,
            &format!(
                "return document.querySelector('{}').closest('.switch').dataset.switch;",
                cell(ON_ROUTE)
            ),
        )
        .await;
        assert_eq!(switch, "MF0;ib1:SX6036/U1");
        let drawn = js(
            &c,
            "return document.querySelectorAll('#switches .port').length;",
        )
        .await;
        assert_eq!(drawn, json!(report.ports.len()));
        let pairs_note = text(&c, "#pairs-note").await;
        assert!(
            pairs_note.starts_with("No RNIC-to-RNIC pair was probed"),
            "{pairs_note}"
        );
        screenshot(&c, "job").await;

        // A bad hostlist: the API's refusal in words, no report.
        c.goto(&format!("{url}/job?nodes={bad_nodes}"))
            .await
            .unwrap();
        wait_until(
            &c,
            "the refusal",
            "document.getElementById('job-status').classList.contains('error')",
        )
        .await;
        let said = text(&c, "#job-status").await;
        assert!(
            said.contains("HTTP 400") && said.contains(&refusal),
            "{said}"
        );
        assert_eq!(
            js(&c, "return document.getElementById('job-report').hidden;").await,
            true
        );
        screenshot(&c, "job-error").await;
        c.close().await.unwrap();
    });
}

/// The probe token of the follow-up test's collector (`--probe-tokens`).
const OPS: &str = "tok-ops-ui-0123456789abcdef";

/// Issue 38 section 1, the job page: a collector without `--fabric` (and with
/// `--probe-tokens`), runs posted for a job's two hosts, no pair probed. The page must say
/// why no switch port was read (the collector's words, naming `--fabric`), show the
/// `hostping job ... --probe` command that follows up, hostlist quoted for a shell, and its
/// probe form must ask the collector for the verdict with probes: refused in words with a
/// wrong token, and with the right one the verdict drawn again with the pair probed (its
/// agents are down: the pair failed, with why), the token in no URL.
#[test]
fn the_job_page_says_why_no_port_was_read_and_offers_the_probe_follow_up() {
    let Some(driver) = ChromeDriver::start() else {
        return;
    };
    let dir = temp_dir("ui-job-probe");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let hosts = ["node01", "node02"];
    let nodes = "node[01-02]";
    let tokens: Vec<(String, String)> = hosts.iter().map(|h| (h.to_string(), token(h))).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(h, t)| (h.as_str(), t.as_str()))
        .collect();
    let probe_tokens = common::probe_tokens_file(&dir, OPS);
    let collector = Collector::start(
        &pg,
        &tokens_file(&dir, &pairs),
        &["--probe-tokens", probe_tokens.to_str().unwrap()],
    );
    let addr = collector.addr;
    let now = now_s();
    let (since, until) = (now - 600, now);
    for host in hosts {
        register(addr, host, "mlx4_0");
        post_run(addr, host, 1, now - 300, &sim_report(&[]));
    }
    let query = format!("nodes={nodes}&since={since}&until={until}");
    let (status, answer) = get(addr, &format!("/api/jobs/verdict?{query}"));
    assert_eq!(status, 200, "{answer}");
    // The API says why no port was read; the report itself reads as before.
    let unread = answer["ports_unread"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer:#}"));
    assert!(unread.contains("without --fabric"), "{unread}");
    let report: JobReport = serde_json::from_value(answer.clone()).unwrap();
    assert!(
        report.ports.is_empty() && report.pairs.is_empty(),
        "{answer}"
    );

    let url = format!("http://{addr}");
    let runtime = common::postgres::runtime();
    runtime.block_on(async {
        let c = driver.session(1280, 1800).await;
        c.goto(&format!("{url}/job?{query}")).await.unwrap();
        wait_for_verdict(&c).await;
        assert_eq!(
            text(&c, "#switches-note").await,
            format!("No switch port was read for this job: {unread}.")
        );

        // The follow-up: the command to copy, the hostlist quoted (its brackets are a glob).
        assert_eq!(
            js(&c, "return document.getElementById('probe-section').hidden;").await,
            false
        );
        assert_eq!(
            text(&c, "#probe-command").await,
            format!(
                "hostping job --collector {url} --nodes '{nodes}' --since {since} --until {until} --probe --token-file FILE"
            )
        );
        screenshot(&c, "job-probe-offer").await;

        // The form: a wrong token is refused in the collector's words.
        let probe = |token: &'static str| {
            let c = c.clone();
            async move {
                let input = c.find(Locator::Id("probe-token")).await.unwrap();
                input.clear().await.unwrap();
                input.send_keys(token).await.unwrap();
                c.find(Locator::Css("#probe-form button[type=submit]"))
                    .await
                    .unwrap()
                    .click()
                    .await
                    .unwrap();
            }
        };
        probe("not-a-probe-token").await;
        wait_until(
            &c,
            "the refusal",
            "document.getElementById('probe-status').classList.contains('error')",
        )
        .await;
        let said = text(&c, "#probe-status").await;
        assert!(said.contains("HTTP 401"), "{said}");

        // The right token: the verdict asked with probe=1, drawn again with the pair.
        probe(OPS).await;
        wait_until(
            &c,
            "the probed verdict",
            "document.getElementById('probe-status').dataset.probed === 'true'",
        )
        .await;
        let drawn: Vec<(String, String)> = serde_json::from_value(
            js(
                &c,
                "return [...document.querySelectorAll('#pairs tbody tr')].map(r =>
                    [r.dataset.pair, r.dataset.status]);",
            )
            .await,
        )
        .unwrap();
        assert_eq!(
            drawn,
            [(
                "node01/rnic0<->node02/rnic0".to_string(),
                "failed".to_string()
            )]
        );
        let why = text(&c, "#pairs tbody tr td:last-child").await;
        assert!(why.contains("unreachable"), "{why}");
        assert!(text(&c, "#pairs-note").await.starts_with("1 RNIC-to-RNIC pairs"));
        // The token went in a header: neither the page's address nor the field keeps it.
        let address = c.current_url().await.unwrap();
        assert!(!address.as_str().contains(OPS), "{address}");
        assert!(address.query_pairs().all(|(k, _)| k != "probe"), "{address}");
        assert_eq!(
            js(&c, "return document.getElementById('probe-token').value;").await,
            ""
        );
        screenshot(&c, "job-probed").await;
        c.close().await.unwrap();
    });
}
