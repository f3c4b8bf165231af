//! A job's collectives read from Prometheus (DESIGN 4.8, issue 39 item 6,
//! collector::prometheus), everything real: a job writes NCCL Inspector's textfile mode
//! as the plugin does (one `.prom` file a GPU, rewritten each interval with each
//! communicator's newest collective), Debian's `prometheus-node-exporter` serves the folder
//! on a port of its own, Debian's `prometheus` scrapes it every second, and `hostping
//! collector --prometheus URL` on a throwaway PostgreSQL reads the `nccl_*` series over
//! Prometheus's HTTP API. From its onset on, rank 6 (node002's GPU2) is 40 ms late: the
//! collector lists the job slow with its straggler and judges it by itself, its culprit the
//! straggler's host and GPU, as it does when an agent posts the job's records
//! (agent_nccl.rs). Then Prometheus stops: the reads fail, are counted and logged naming
//! the URL, and what was stored stays.
//!
//! Also: a Prometheus that accepts and never answers is given up on within the timeout;
//! a malformed `--prometheus` is exit 2 naming the flag.
//!
//! Skipped (with a message) without PostgreSQL, `prometheus` or node_exporter, unless
//! `HOSTPING_REQUIRE_POSTGRES`, `HOSTPING_REQUIRE_PROMETHEUS` and
//! `HOSTPING_REQUIRE_NODE_EXPORTER` are set, as `./test.sh` does after installing them.

mod common;

use common::nccl::{GPUS, HOSTS, WORLD};
use common::node_exporter::{have_node_exporter, NodeExporter};
use common::postgres::Postgres;
use common::prometheus::{have_prometheus, Prometheus};
use common::{http_get, temp_dir, tokens_file, wait_until};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The job's Slurm id and name.
const JOB: &str = "4747";
/// 256 MiB all-reduces, 20 ms each when healthy, one a second.
const BYTES_LABEL: &str = "256.00MB";
const BYTES: f64 = (256u64 << 20) as f64;
const HEALTHY_US: f64 = 20_000.0;
/// The rank that turns late, its host and GPU.
const LATE_RANK: u32 = 6;
/// Seconds of healthy collectives before the onset: six 5 s buckets of earlier level.
const HISTORY: u64 = 30;

/// `hostping collector` with its stderr in a file (the lines the test reads), killed on
/// drop.
struct LoggedCollector {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
}

impl LoggedCollector {
    fn start(pg: &Postgres, dir: &Path, extra: &[&str]) -> LoggedCollector {
        let log = dir.join("collector.log");
        let tokens = tokens_file(dir, &[("node001", "tok-node001-0123456789abcdef")]);
        let url = pg.url();
        let mut args = vec![
            "collector",
            "--database",
            &url,
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            tokens.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let child = Command::new(env!("CARGO_BIN_EXE_hostping"))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut collector = LoggedCollector {
            child,
            addr: "127.0.0.1:0".parse().unwrap(),
            log,
        };
        let mut addr = None;
        wait_until("the collector to serve", Duration::from_secs(60), || {
            addr = collector
                .lines()
                .lines()
                .find_map(|l| l.split("serving http://").nth(1).map(str::to_string))
                .and_then(|rest| rest.split('/').next()?.parse().ok());
            addr.is_some()
        });
        collector.addr = addr.unwrap();
        collector
    }

    fn lines(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A counter of its `/metrics` (0 when not there yet).
    fn counter(&self, name: &str) -> f64 {
        let (_, text) = http_get(self.addr, "/metrics");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .map_or(0.0, |v| v.trim().parse().unwrap())
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = http_get(self.addr, path);
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }
}

impl Drop for LoggedCollector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The three lines the plugin writes for one collective (`inspectorPromWriteCollInfo`:
/// its labels in the plugin's order, `%.6g` values), dumped at `at_s`.
fn collective(
    (comm, rank, n_ranks, n_nodes): (&str, u32, u32, u32),
    host: &str,
    gpu: u32,
    sn: u64,
    at_s: u64,
    exec_us: f64,
) -> String {
    let stamp = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(at_s));
    let labels = format!(
        "comm_id=\"{comm}\",hostname=\"{host}\",rank=\"{rank}\",slurm_job=\"train\",\
         slurm_job_id=\"{JOB}\",nranks=\"{n_ranks}\",n_nodes=\"{n_nodes}\",\
         gpu_device_id=\"GPU{gpu}\",collective=\"AllReduce\",coll_sn=\"{sn}\",\
         timestamp=\"{stamp}\",message_size=\"{BYTES_LABEL}\""
    );
    let algobw = BYTES / (exec_us * 1e-6) / 1e9;
    let busbw = algobw * 2.0 * f64::from(n_ranks - 1) / f64::from(n_ranks);
    format!(
        "nccl_algorithm_bandwidth_gbs{{{labels}}} {algobw:.6}\n\
         nccl_bus_bandwidth_gbs{{{labels}}} {busbw:.6}\n\
         nccl_collective_exec_time_microseconds{{{labels}}} {exec_us:.0}\n"
    )
}

/// Rewrites every GPU's file with collective `sn` of the world communicator and of its
/// host's own (dumped at `start_s + sn`), written whole and renamed into place so that
/// node_exporter never reads half a file; from `onset` on rank 6 arrives 40 ms late and
/// the other ranks wait for it.
fn dump(dir: &Path, start_s: u64, sn: u64, onset: u64) {
    for (h, host) in HOSTS.iter().enumerate() {
        for gpu in 0..GPUS {
            let rank = h as u32 * GPUS + gpu;
            let jitter = f64::from((rank * 7 + sn as u32) % 5) * 20.0;
            let exec_us = match sn >= onset {
                true if rank == LATE_RANK => HEALTHY_US,
                true => HEALTHY_US + 40_000.0,
                false => HEALTHY_US,
            } + jitter;
            let n = HOSTS.len() as u32 * GPUS;
            let at_s = start_s + sn;
            let mut text = collective((WORLD, rank, n, 4), host, gpu, sn, at_s, exec_us);
            let local = format!("0x7a00000000{h:02}");
            text += &collective((&local, gpu, GPUS, 1), host, gpu, sn, at_s, 2_000.0);
            let file = format!("nccl_inspector_metrics_GPU-{h:02}{gpu:02}.prom");
            let part = dir.join(format!(".{file}.part"));
            std::fs::write(&part, text).unwrap();
            std::fs::rename(&part, dir.join(file)).unwrap();
        }
    }
}

#[test]
fn a_job_seen_only_through_prometheus_is_judged_as_an_agents_is() {
    if !have_prometheus() || !have_node_exporter() {
        return;
    }
    let dir = temp_dir("collector-prometheus");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let textfiles = dir.join("textfiles");
    std::fs::create_dir_all(&textfiles).unwrap();
    let start_s = unix_s().floor() as u64;
    let onset = HISTORY;
    dump(&textfiles, start_s, 0, onset);
    let exporter = NodeExporter::start(&textfiles);
    assert!(
        exporter
            .metrics()
            .contains("nccl_bus_bandwidth_gbs{coll_sn=\"0\""),
        "node_exporter serves the textfiles: {}",
        exporter.metrics()
    );
    let prom_dir = dir.join("prometheus");
    std::fs::create_dir_all(&prom_dir).unwrap();
    let prom = Prometheus::start(&prom_dir, exporter.addr);
    wait_until(
        "Prometheus to scrape node_exporter",
        Duration::from_secs(60),
        || !prom.query("nccl_bus_bandwidth_gbs").is_empty(),
    );
    let url = format!("http://{}", prom.addr);
    let collector = LoggedCollector::start(
        &pg,
        &dir,
        &["--prometheus", &url, "--prometheus-bucket", "5s"],
    );

    // One collective a second, each dumped once it has run, until the collector's own
    // verdict is stored; two minutes past the onset at most.
    let mut stored = Value::Null;
    let mut sn = 1;
    while sn < onset + 120 {
        let due = (start_s + sn) as f64;
        std::thread::sleep(Duration::from_secs_f64((due - unix_s()).max(0.0)));
        dump(&textfiles, start_s, sn, onset);
        sn += 1;
        let (status, answer) = collector.get(&format!("/api/jobs/{JOB}/verdict"));
        if status == 200 {
            stored = answer;
            break;
        }
    }
    let onset_s = (start_s + onset) as f64;
    assert!(
        stored.is_object(),
        "no verdict on job {JOB} two minutes after its onset; the collector said:\n{}",
        collector.lines()
    );
    println!(
        "a job read from Prometheus judged {:.1} s after its onset ({sn} collectives of 16 ranks \
         dumped, scraped every second, 5 s buckets)",
        stored["judged_at"].as_f64().unwrap() - onset_s
    );
    // The same answer as from an agent's posts: the straggler's host and GPU.
    let culprit = &stored["report"]["culprits"][0];
    assert_eq!(culprit["cause"], "straggler", "{stored:#}");
    assert_eq!(culprit["host"], "node002", "{stored:#}");
    assert_eq!(culprit["component"], "gpu2", "{stored:#}");
    let since = stored["onset_s"].as_f64().unwrap();
    assert!(
        (since - onset_s).abs() <= 5.0,
        "onset {since}, truly {onset_s}"
    );

    let (status, jobs) = collector.get("/api/jobs");
    assert_eq!(status, 200, "{jobs}");
    let job = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == JOB)
        .unwrap_or_else(|| panic!("{jobs:#}"));
    assert_eq!(job["slow"], true, "{job:#}");
    assert_eq!(
        job["nodes"],
        serde_json::json!(["node001", "node002", "node003", "node004"])
    );
    let (status, symptom) = collector.get(&format!("/api/jobs/{JOB}/symptom"));
    assert_eq!(status, 200, "{symptom}");
    let straggler = &symptom["stragglers"][0];
    assert_eq!(straggler["rank"], LATE_RANK, "{symptom:#}");
    assert_eq!(straggler["communicator"], WORLD);
    assert_eq!(straggler["host"], "node002");
    assert_eq!(straggler["gpu"], "gpu2", "from gpu_device_id");
    let late = straggler["late_us"].as_f64().unwrap();
    assert!((late - 40_000.0).abs() < 3_000.0, "{late}");
    assert!(symptom["records"].as_u64().unwrap() > 0, "{symptom:#}");
    // The job page's plot: the world communicator's bus bandwidth, bucket by bucket, from
    // ~25 GB/s (256 MiB in 20 ms, x 15/8) down to ~8 GB/s once the others wait 40 ms.
    let (status, busbw) = collector.get(&format!("/api/jobs/{JOB}/busbw"));
    assert_eq!(status, 200, "{busbw}");
    let world = busbw["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["communicator"] == WORLD)
        .unwrap_or_else(|| panic!("{busbw:#}"));
    let points: Vec<(f64, f64)> = world["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["width_s"].as_f64().unwrap(),
                p["busbw_gbs"].as_f64().unwrap(),
            )
        })
        .collect();
    assert!(points.iter().all(|(w, _)| *w == 5.0), "{points:?}");
    let (first, last) = (points[0].1, points[points.len() - 1].1);
    assert!((22.0..28.0).contains(&first), "{points:?}");
    assert!((7.0..10.0).contains(&last), "{points:?}");
    // Stored as an agent's posts are, marked as read from Prometheus.
    let rows: i64 = pg
        .scalar("SELECT count(*) FROM job_collectives")
        .parse()
        .unwrap();
    let from_prometheus: i64 = pg
        .scalar("SELECT count(*) FROM job_collectives WHERE host = 'prometheus' AND job = '4747'")
        .parse()
        .unwrap();
    assert!(
        rows > 0 && rows == from_prometheus,
        "{rows} {from_prometheus}"
    );
    assert!(collector.counter("hostping_collector_prometheus_series_total") > 0.0);
    assert!(collector.counter("hostping_collector_prometheus_summaries_total") > 0.0);
    assert_eq!(
        collector.counter("hostping_collector_prometheus_errors_total"),
        0.0,
        "{}",
        collector.lines()
    );

    // Prometheus stops: each poll fails, is counted and logged naming the URL; what was
    // stored stays.
    drop(prom);
    wait_until(
        "a failed read of the stopped Prometheus",
        Duration::from_secs(30),
        || collector.counter("hostping_collector_prometheus_errors_total") >= 1.0,
    );
    // Its log line follows the count, and the harness reads stderr on a thread of its own:
    // waited for, not read at once (a fresh-clone run of 2026-11-30 read the log before it).
    let logged = |log: &str| {
        log.lines().any(|l| {
            l.contains(&format!("prometheus {url}/api/v1/query: ")) && l.contains("asked again")
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !logged(&collector.lines()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = collector.lines();
    assert!(logged(&log), "{log}");
    let (status, symptom_after) = collector.get(&format!("/api/jobs/{JOB}/symptom"));
    assert_eq!(status, 200, "{symptom_after}");
    assert_eq!(symptom_after["stragglers"][0]["host"], "node002");
    let rows_after: i64 = pg
        .scalar("SELECT count(*) FROM job_collectives")
        .parse()
        .unwrap();
    assert!(rows_after >= rows, "{rows_after} < {rows}");
}

/// A Prometheus that takes the connection and never answers: the read is given up on
/// within its timeout, counted and logged, and the collector keeps serving.
#[test]
fn a_prometheus_that_never_answers_is_given_up_on() {
    let dir = temp_dir("collector-prometheus-silent");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    // Connections are taken and held, never answered.
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in silent.incoming().take(4) {
            open.push(stream);
        }
        std::thread::sleep(Duration::from_secs(60));
    });
    let started = std::time::Instant::now();
    let collector = LoggedCollector::start(&pg, &dir, &["--prometheus", &url]);
    wait_until(
        "a read of the silent Prometheus given up on",
        Duration::from_secs(40),
        || collector.counter("hostping_collector_prometheus_errors_total") >= 1.0,
    );
    // One poll (5 s) and the timeout (10 s), give or take the start.
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(10), "{took:?}");
    let log = collector.lines();
    assert!(
        log.lines().any(|l| l.contains(&format!(
            "prometheus {url}/api/v1/query: no answer within 10 s"
        ))),
        "{log}"
    );
    let (status, _) = collector.get("/api/jobs");
    assert_eq!(status, 200);
    drop(held);
}

#[test]
fn a_malformed_prometheus_url_is_exit_2_naming_the_flag() {
    for bad in [
        "prom:9090",
        "ftp://prom:9090",
        "http://prom:9090/?x=1",
        "http://",
    ] {
        let out = common::hostping(&[
            "collector",
            "--database",
            "postgres://nobody@127.0.0.1:1/none",
            "--prometheus",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = common::stderr(&out);
        assert!(err.contains("--prometheus"), "{bad}: {err}");
    }
    let out = common::hostping(&[
        "collector",
        "--database",
        "postgres://nobody@127.0.0.1:1/none",
        "--prometheus-bucket",
        "5s",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("--prometheus"));
}
