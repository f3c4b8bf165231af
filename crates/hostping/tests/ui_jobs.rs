//! The jobs' pages of the web UI (issue 39 item 4, DESIGN 4.8) on a throwaway PostgreSQL
//! cluster and a real `hostping collector`, with the jobs' collectives posted as agents post
//! them (`POST /api/collectives`, each host with its own token), and the pages in a real
//! headless Chromium:
//!
//! - `GET /api/jobs/{job}/busbw`: one series per communicator, collective and size, each
//!   point the median over the ranks of the bus bandwidth posted for its bucket; `since`
//!   cuts the older buckets; 404 naming an unknown job, 400 a `since` that is no number;
//! - `/jobs` empty says how to make agents send collectives; with a straggler job (running,
//!   rank 6 late from an onset bucket on) and a healthy one posted, and the straggler job
//!   judged by the collector by itself, it lists the slow job first with its verdict and a
//!   link, reached from the overview's navigation;
//! - the slow job's page (`/job?job=ID` alone) shows the collector's verdict, the plot with
//!   one line per communicator and the onset where the axis puts it, the straggler table
//!   naming rank 6 on its host, and the picture with that host in the abnormal colour (no
//!   `--fabric`: hosts only, and the page says the fabric is not known);
//! - the healthy job's page says there is no slowdown and the collector has not judged it;
//! - a stored verdict of a simulated fat tree (`hostping job --sim-cluster pod-32`, a host
//!   culprit and a cable culprit) draws hosts, leaves and spines with the routes' lines, the
//!   culprit host, switch and cable in the abnormal colour.
//!
//! Screenshots go to `target/test-artifacts/ui/` (`jobs-empty.png`, `jobs.png`,
//! `job-collectives.png`, `job-healthy.png`, `job-fabric.png`). Skipped without PostgreSQL's
//! server binaries or chromium/chromedriver unless `HOSTPING_REQUIRE_POSTGRES` /
//! `HOSTPING_REQUIRE_CHROMIUM` are set (as `./test.sh` does).

mod common;

use common::browser::{is_red, js, rgb, screenshot, wait_until, ChromeDriver};
use common::job::{now_s, token};
use common::postgres::{get, post_to, Collector, Postgres};
use common::summaries::{
    healthy_job, straggler_job, summary, upload, BUCKETS, BYTES, HOSTS, ONSET_BUCKET, WIDTH,
};
use common::{hostping, stdout, temp_dir, tokens_file, TestDir};
use fantoccini::{Client, Locator};
use fleet_api::job_series::JobBusbw;
use model::inspector::{RankSummary, Skipped};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The per-host communicator's all-gather's size.
const SMALL: u64 = 1 << 20;
const SLOW: &str = "4242";
const HEALTHY: &str = "4343";

/// Job [`SLOW`]: the straggler job of `common::summaries` (communicator `0xa`, rank 6
/// late from [`ONSET_BUCKET`] on), and a steady all-gather of one rank per host in
/// communicator `0xc`, each rank on its host's GPU 2 (a rail's communicator, as the
/// textfile's `gpu_device_id` says it).
fn slow_job(t0: f64) -> Vec<RankSummary> {
    let mut out = straggler_job(t0);
    for b in 0..BUCKETS {
        for rank in 0..4 {
            let mut s = summary(
                ("0xc", "AllGather", SMALL),
                (rank, 4, 4),
                HOSTS[rank as usize],
                (t0, b),
                200.0,
            );
            s.gpu = Some(2);
            out.push(s);
        }
    }
    out
}

/// Posts both jobs' summaries from `t0` on, each host its own ranks with its own token.
fn post_jobs(addr: std::net::SocketAddr, t0: f64) -> (Vec<RankSummary>, Vec<RankSummary>) {
    let (slow, healthy) = (slow_job(t0), healthy_job(t0));
    for host in HOSTS {
        let body = serde_json::to_vec(&upload(
            host,
            &[(SLOW, &slow), (HEALTHY, &healthy)],
            &Skipped::default(),
        ))
        .unwrap();
        let (status, answer) = post_to(addr, "/api/collectives", Some(&token(host)), &body);
        assert_eq!(status, 201, "{answer}");
    }
    (slow, healthy)
}

/// A PostgreSQL cluster and a collector holding the hosts' tokens.
/// The folder comes first, to be dropped last: PostgreSQL's data is in it.
fn fleet(name: &str) -> Option<(TestDir, Postgres, Collector)> {
    let dir = temp_dir(name);
    let pg = Postgres::start(&dir)?;
    let tokens: Vec<(&str, String)> = HOSTS.iter().map(|h| (*h, token(h))).collect();
    let tokens: Vec<(&str, &str)> = tokens.iter().map(|(h, t)| (*h, t.as_str())).collect();
    let collector = Collector::start(&pg, &tokens_file(&dir, &tokens), &[]);
    Some((dir, pg, collector))
}

/// The middle value, or the mean of the two middle values: the test's own median.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Per (communicator, bucket start): the median of the bus bandwidth posted, and of how
/// many ranks.
fn medians(summaries: &[RankSummary]) -> BTreeMap<(String, u64), (f64, u32)> {
    let mut by: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
    for s in summaries {
        by.entry((s.communicator.clone(), s.start_s as u64))
            .or_default()
            .push(s.busbw_gbs);
    }
    by.into_iter()
        .map(|(k, v)| {
            let n = v.len() as u32;
            (k, (median(v), n))
        })
        .collect()
}

#[test]
fn the_busbw_series_are_the_medians_over_ranks_per_bucket() {
    let Some((_dir, _pg, collector)) = fleet("ui-jobs-busbw") else {
        return;
    };
    let addr = collector.addr;
    // An hour ago, on a bucket boundary: ended, so the collector does not judge it.
    let t0 = ((now_s() - 3600) / 5 * 5) as f64;
    let (slow, _) = post_jobs(addr, t0);

    let (status, answer) = get(addr, &format!("/api/jobs/{SLOW}/busbw"));
    assert_eq!(status, 200, "{answer}");
    let busbw: JobBusbw = serde_json::from_value(answer).unwrap();
    assert_eq!(busbw.job, SLOW);
    assert_eq!(busbw.summaries as usize, slow.len());
    assert!(!busbw.truncated);
    let keys: Vec<(&str, &str, u64, u32)> = busbw
        .series
        .iter()
        .map(|x| {
            (
                x.communicator.as_str(),
                x.collective.as_str(),
                x.bytes,
                x.ranks,
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("0xa", "AllReduce", BYTES, 16),
            ("0xc", "AllGather", SMALL, 4)
        ],
        "one series per communicator, collective and size, in that order"
    );
    let posted = medians(&slow);
    for x in &busbw.series {
        assert_eq!(x.points.len(), BUCKETS as usize, "{}", x.communicator);
        for (b, p) in x.points.iter().enumerate() {
            let start = t0 + b as f64 * WIDTH;
            assert_eq!((p.start_s, p.width_s, p.buckets), (start, WIDTH, 1));
            let (want, ranks) = posted[&(x.communicator.clone(), start as u64)];
            assert_eq!(p.summaries, ranks);
            assert!(
                (p.busbw_gbs - want).abs() < 1e-9,
                "{} bucket {b}: {} != {want}",
                x.communicator,
                p.busbw_gbs
            );
        }
    }
    // The straggler job's all-reduce drops from the onset on; its all-gather does not.
    let a = &busbw.series[0].points;
    let onset = ONSET_BUCKET as usize;
    assert!(a[onset].busbw_gbs < a[onset - 1].busbw_gbs / 3.0, "{a:?}");

    // `since` keeps the buckets that end at or after it.
    let since = t0 + 31.0;
    let (status, answer) = get(addr, &format!("/api/jobs/{SLOW}/busbw?since={since}"));
    assert_eq!(status, 200, "{answer}");
    let later: JobBusbw = serde_json::from_value(answer).unwrap();
    assert_eq!(later.since, since);
    let starts: Vec<f64> = later.series[0].points.iter().map(|p| p.start_s).collect();
    let want: Vec<f64> = (6..BUCKETS).map(|b| t0 + b as f64 * WIDTH).collect();
    assert_eq!(starts, want);
    let (status, answer) = get(addr, &format!("/api/jobs/{HEALTHY}/busbw"));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["series"].as_array().unwrap().len(), 1);

    let (status, answer) = get(addr, "/api/jobs/9999/busbw");
    assert_eq!(status, 404, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("job 9999"),
        "{answer}"
    );
    // After the job's last bucket: nothing in the window.
    let after = t0 + BUCKETS as f64 * WIDTH + 1.0;
    let (status, answer) = get(addr, &format!("/api/jobs/{SLOW}/busbw?since={after}"));
    assert_eq!(status, 404, "{answer}");
    let (status, answer) = get(addr, &format!("/api/jobs/{SLOW}/busbw?since=yesterday"));
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("since"),
        "{answer}"
    );
}

/// What `script` returns, as `T`.
async fn read<T: serde::de::DeserializeOwned>(c: &Client, script: &str) -> T {
    serde_json::from_value(js(c, script).await).unwrap()
}

async fn text(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap()
}

/// `HH:MM:SS` of Unix seconds `t`, UTC: how the pages write a time's clock.
fn clock(t: f64) -> String {
    let s = t as u64 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The computed fill of the picture's box of `node`, as red, green, blue.
async fn node_fill(c: &Client, node: &str) -> (u8, u8, u8) {
    let fill = js(
        c,
        &format!(
            "return getComputedStyle(document.querySelector('#picture-svg g[data-node=\"{node}\"] rect')).fill;"
        ),
    )
    .await;
    rgb(fill.as_str().unwrap_or_else(|| panic!("{node}: {fill}")))
}

/// The picture's boxes: (name, kind, culprit) each.
async fn picture_nodes(c: &Client) -> Vec<(String, String, String)> {
    serde_json::from_value(
        js(
            c,
            "return [...document.querySelectorAll('#picture-svg g[data-node]')].map(g =>
                [g.dataset.node, g.dataset.kind, g.dataset.culprit]);",
        )
        .await,
    )
    .unwrap()
}

#[test]
fn the_jobs_page_lists_the_slow_job_first_and_its_page_draws_its_collectives() {
    let Some(driver) = ChromeDriver::start() else {
        return;
    };
    let Some((_dir, pg, collector)) = fleet("ui-jobs") else {
        return;
    };
    let addr = collector.addr;
    let url = format!("http://{addr}");
    let runtime = common::postgres::runtime();
    let c = runtime.block_on(driver.session(1280, 1800));

    // No job yet: the list says how to make agents send their collectives.
    runtime.block_on(async {
        c.goto(&format!("{url}/jobs")).await.unwrap();
        wait_until(
            &c,
            "the empty state",
            "!document.getElementById('jobs-empty').hidden",
        )
        .await;
        assert_eq!(
            js(&c, "return document.getElementById('jobs').hidden;").await,
            true
        );
        let empty = text(&c, "#jobs-empty").await;
        assert!(empty.contains("No job has sent collectives yet"), "{empty}");
        assert_eq!(
            text(&c, "#jobs-agent-command").await,
            format!("hostping agent --collector {url} --token-file FILE --nccl-dir DIR")
        );
        screenshot(&c, "jobs-empty").await;
    });

    // Both jobs running: their newest buckets end now.
    let t0 = ((now_s() - (BUCKETS as i64 * WIDTH as i64)) / 5 * 5) as f64;
    post_jobs(addr, t0);
    let onset = t0 + ONSET_BUCKET as f64 * WIDTH;
    let mut stored = Value::Null;
    common::wait_until(
        "the collector's own verdict on the slow job",
        Duration::from_secs(60),
        || {
            let (status, answer) = get(addr, &format!("/api/jobs/{SLOW}/verdict"));
            stored = answer;
            status == 200
        },
    );
    assert_eq!(stored["onset_s"].as_f64(), Some(onset), "{stored:#}");
    let verdict = stored["report"]["verdict"].as_str().unwrap().to_owned();
    let culprit = &stored["report"]["culprits"][0];
    assert_eq!(
        (&culprit["cause"], &culprit["host"]),
        (&Value::from("straggler"), &Value::from("node003")),
        "{stored:#}"
    );

    runtime.block_on(async {
        // The overview links to the jobs; the slow job first, with its verdict and a link.
        c.goto(&url).await.unwrap();
        c.find(Locator::Id("nav-jobs"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_until(
            &c,
            "the jobs list",
            "document.querySelectorAll('#jobs tbody tr').length === 2",
        )
        .await;
        assert_eq!(c.current_url().await.unwrap().path(), "/jobs");
        let rows: Vec<(String, String, String, String, String)> = read(&c, "return [...document.querySelectorAll('#jobs tbody tr')].map(r => [
                    r.dataset.job, r.dataset.slow, r.querySelector('a').getAttribute('href'),
                    r.querySelector('td.nodes').title,
                    (r.querySelector('.verdict-cell [data-verdict]') || {dataset: {}}).dataset.verdict || '']);").await;
        let nodes = HOSTS.join(", ");
        assert_eq!(
            rows,
            [
                (SLOW, "true", "/job?job=4242", nodes.as_str(), verdict.as_str()),
                (HEALTHY, "false", "/job?job=4343", "node001, node002", ""),
            ]
            .map(|(job, slow, link, nodes, verdict)| (
                job.to_string(),
                slow.to_string(),
                link.to_string(),
                nodes.to_string(),
                verdict.to_string()
            )),
            "slow first"
        );
        let first = "#jobs tbody tr:first-child";
        let cells = text(&c, first).await;
        assert!(cells.contains("4 nodes"), "{cells}");
        assert!(cells.contains(&clock(onset)), "the onset: {cells}");
        assert!(cells.contains("running"), "{cells}");
        let badge = |row: &str| {
            format!(
                "return getComputedStyle(document.querySelector('{row} td:nth-child(2) .badge')).backgroundColor;"
            )
        };
        let slow_badge = js(&c, &badge(first)).await;
        assert!(is_red(rgb(slow_badge.as_str().unwrap())), "{slow_badge}");
        let healthy_badge = js(&c, &badge("#jobs tbody tr:nth-child(2)")).await;
        assert!(
            common::browser::is_green(rgb(healthy_badge.as_str().unwrap())),
            "{healthy_badge}"
        );
        assert_eq!(
            text(&c, "#jobs tbody tr:nth-child(2) .verdict-cell").await,
            "not judged (not slow)"
        );
        screenshot(&c, "jobs").await;

        // Its page: the collector's verdict, then the collectives.
        c.find(Locator::Css(&format!("{first} a")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_until(
            &c,
            "the plot and the verdict",
            "document.getElementById('busbw-svg') !== null &&
             document.querySelector('#verdict [data-verdict]') !== null",
        )
        .await;
        let address = c.current_url().await.unwrap();
        assert_eq!(
            (address.path(), address.query()),
            ("/job", Some("job=4242"))
        );
        assert_eq!(text(&c, "#verdict [data-verdict]").await, verdict);
        let status = text(&c, "#job-status").await;
        assert!(
            status.starts_with("Judged by the collector by itself"),
            "{status}"
        );
        assert_eq!(
            js(&c, "return document.getElementById('job-nodes').value;").await,
            "node001,node002,node003,node004",
            "the form holds the job's hosts"
        );
        assert_eq!(
            js(&c, "return document.getElementById('job-judged').dataset.judged;").await,
            "true"
        );
        assert_eq!(
            js(&c, "return document.getElementById('symptom-summary').dataset.slow;").await,
            "true"
        );

        // One line per communicator, the onset where the axis puts it.
        let lines: Vec<(String, String)> = read(&c, "return [...document.querySelectorAll('#busbw-svg .busbw')].map(l =>
                    [l.dataset.communicator, l.dataset.points]);").await;
        assert_eq!(
            lines,
            [("0xa", "12"), ("0xc", "12")].map(|(a, b)| (a.to_string(), b.to_string()))
        );
        let axis: Vec<f64> = read(&c, "const g = document.getElementById('busbw-svg').dataset;
                 const o = document.getElementById('busbw-onset');
                 return [g.t0, g.t1, g.left, g.width, o.dataset.onsetS, o.getAttribute('x1'),
                         o.getAttribute('x2')].map(Number);").await;
        let [a0, a1, left, width, drawn_onset, x1, x2] = axis[..] else {
            panic!("{axis:?}")
        };
        assert_eq!((a0, a1), (t0, t0 + (BUCKETS - 1) as f64 * WIDTH));
        assert_eq!(drawn_onset, onset);
        let want = left + (onset - a0) / (a1 - a0) * width;
        assert!((x1 - want).abs() < 0.1 && x1 == x2, "{x1} != {want}");
        let label = text(&c, "#busbw-svg text.onset").await;
        assert_eq!(label, format!("onset {} UTC", clock(onset)));

        // The straggler, on its host.
        let stragglers: Vec<(String, String)> = read(&c, "return [...document.querySelectorAll('#stragglers tbody tr')].map(r =>
                    [r.dataset.rank, r.dataset.host]);").await;
        assert_eq!(stragglers, [("6".to_string(), "node003".to_string())]);
        let row = text(&c, "#stragglers tbody tr").await;
        assert!(row.contains("node003") && row.contains("0xa"), "{row}");

        // Each communicator's rail: 0xc's ranks all drive GPU 2; 0xa's GPUs are not known.
        let rails: Vec<(String, String)> = read(&c, "return [...document.querySelectorAll('#communicators tbody tr')].map(r =>
                    [r.dataset.communicator, r.querySelector('td.rail').textContent]);").await;
        let rail_of = |id: &str| rails.iter().find(|(c, _)| c == id).map(|(_, r)| r.as_str());
        assert_eq!(rail_of("0xc"), Some("rail 2 (gpu2)"), "{rails:?}");
        assert_eq!(rail_of("0xa"), Some("\u{2014}"), "{rails:?}");

        // The picture: the hosts alone (no --fabric), the straggler's host a culprit.
        let drawn = picture_nodes(&c).await;
        let want: Vec<(String, String, String)> = HOSTS
            .iter()
            .map(|h| {
                let culprit = if *h == "node003" { "true" } else { "false" };
                (h.to_string(), "host".to_string(), culprit.to_string())
            })
            .collect();
        assert_eq!(drawn, want);
        assert!(is_red(node_fill(&c, "node003").await));
        assert!(!is_red(node_fill(&c, "node001").await));
        let title = js(
            &c,
            "return document.querySelector('#picture-svg g[data-node=\"node003\"] title').textContent;",
        )
        .await;
        assert!(
            title.as_str().unwrap().starts_with("node003: Straggler"),
            "{title}"
        );
        let note = text(&c, "#picture-note").await;
        assert!(
            note.contains("the fabric is not known to the collector"),
            "{note}"
        );
        screenshot(&c, "job-collectives").await;

        // Asked with nodes, the page asks the verdict API, which refuses hosts that sent no
        // check (the collector's own verdict judged them as not judged): the refusal in
        // words, and the job's collectives all the same, linking to the collector's verdict.
        c.goto(&format!("{url}/job?nodes=node[001-004]&job={SLOW}"))
            .await
            .unwrap();
        wait_until(
            &c,
            "the collectives beside the refusal",
            "document.getElementById('busbw-svg') !== null &&
             document.getElementById('job-status').classList.contains('error')",
        )
        .await;
        let said = text(&c, "#job-status").await;
        assert!(
            said.contains("HTTP 404") && said.contains("unknown nodes"),
            "{said}"
        );
        assert_eq!(
            js(&c, "return document.getElementById('job-report').hidden;").await,
            true
        );
        assert_eq!(
            js(
                &c,
                "return document.querySelector('#job-judged a').getAttribute('href');"
            )
            .await,
            "/job?job=4242"
        );

        // The healthy job: no slowdown, not judged by the collector.
        c.goto(&format!("{url}/job?job={HEALTHY}")).await.unwrap();
        wait_until(
            &c,
            "the healthy job's collectives",
            "document.getElementById('busbw-svg') !== null",
        )
        .await;
        assert_eq!(
            js(&c, "return document.getElementById('symptom-summary').dataset.slow;").await,
            "false"
        );
        let summary = text(&c, "#symptom-summary").await;
        assert!(summary.contains("No slowdown"), "{summary}");
        let judged = text(&c, "#job-judged").await;
        assert!(
            judged.starts_with("The collector has not judged this job"),
            "{judged}"
        );
        assert_eq!(
            js(&c, "return document.getElementById('job-report').hidden;").await,
            true,
            "no verdict to show"
        );
        let status = text(&c, "#job-status").await;
        assert!(status.starts_with("Not judged by the collector"), "{status}");
        assert_eq!(
            js(&c, "return document.querySelectorAll('#busbw-svg .busbw').length;").await,
            1
        );
        assert_eq!(
            js(&c, "return document.getElementById('busbw-onset');").await,
            Value::Null
        );
        assert!(text(&c, "#stragglers-note").await.starts_with("No straggler"));
        screenshot(&c, "job-healthy").await;
    });

    // A verdict over a fat tree (`pod-32`, simulated): a host culprit and a cable culprit,
    // stored as the collector stores its own (a job without collectives).
    let out = hostping(&[
        "job",
        "--sim-cluster",
        "pod-32",
        "--nodes",
        "node[001-002],node009",
        "--inject",
        "fabric:errors:leaf2/9:1000",
        "--inject",
        "node002:degrade:gpu4--lsw4:0.5",
        "--format",
        "json",
    ]);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let culprits: Vec<(Value, Value)> = report["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["host"].clone(), c["component"].clone()))
        .collect();
    assert!(
        culprits.contains(&(Value::from("node002"), Value::from("gpu4--lsw4")))
            && culprits.contains(&(Value::Null, Value::from("leaf2/9"))),
        "{report:#}"
    );
    runtime.block_on(async {
        let pool = pg.pool(1);
        let client = pool.get().await.unwrap();
        client
            .execute(
                "INSERT INTO job_verdicts (job, onset_s, judged_at, verdict, probed, report)
                 VALUES ('4545', $1, now(), $2, false, $3::text::jsonb)",
                &[
                    &onset,
                    &report["verdict"].as_str().unwrap(),
                    &report.to_string(),
                ],
            )
            .await
            .unwrap();
        c.goto(&format!("{url}/job?job=4545")).await.unwrap();
        wait_until(
            &c,
            "the stored verdict's picture",
            "document.getElementById('picture-svg') !== null",
        )
        .await;
        assert_eq!(
            js(&c, "return document.getElementById('collectives-section').hidden;").await,
            true,
            "no collectives of that job"
        );
        assert_eq!(text(&c, "#job-title").await, "Job 4545");
        let drawn = picture_nodes(&c).await;
        let kind_of = |n: &str| drawn.iter().find(|d| d.0 == n).map(|d| d.1.as_str());
        assert_eq!(kind_of("spine1"), Some("spine"));
        assert_eq!(kind_of("leaf2"), Some("leaf"));
        assert_eq!(kind_of("node009"), Some("host"));
        let culprits: Vec<&str> = drawn
            .iter()
            .filter(|d| d.2 == "true")
            .map(|d| d.0.as_str())
            .collect();
        assert_eq!(culprits, ["leaf2", "node002"]);
        assert!(is_red(node_fill(&c, "leaf2").await));
        assert!(is_red(node_fill(&c, "node002").await));
        assert!(!is_red(node_fill(&c, "spine1").await));
        // Rows: spines above leaves above hosts.
        let y = |n: &str| {
            let c = c.clone();
            let n = n.to_string();
            async move {
                js(
                    &c,
                    &format!(
                        "return Number(document.querySelector('#picture-svg g[data-node=\"{n}\"] rect').getAttribute('y'));"
                    ),
                )
                .await
                .as_f64()
                .unwrap()
            }
        };
        let (spine, leaf, host) = (y("spine1").await, y("leaf2").await, y("node009").await);
        assert!(spine < leaf && leaf < host, "{spine} {leaf} {host}");
        // The routes' lines: a host to its leaf, the culprit cable leaf2/9 (to spine1) red.
        let wires: Vec<(String, String, bool)> = read(&c, "return [...document.querySelectorAll('#picture-svg line.wire')].map(l =>
                    [l.dataset.from, l.dataset.to, l.classList.contains('culprit')]);").await;
        let has = |a: &str, b: &str| {
            wires
                .iter()
                .find(|w| (w.0 == a && w.1 == b) || (w.0 == b && w.1 == a))
                .map(|w| w.2)
        };
        assert_eq!(has("node009", "leaf2"), Some(false), "{wires:?}");
        assert_eq!(has("leaf2", "spine1"), Some(true), "{wires:?}");
        let stroke = js(
            &c,
            "return getComputedStyle(document.querySelector('#picture-svg line.wire.culprit')).stroke;",
        )
        .await;
        assert!(is_red(rgb(stroke.as_str().unwrap())), "{stroke}");
        screenshot(&c, "job-fabric").await;
        c.close().await.unwrap();
    });
}
