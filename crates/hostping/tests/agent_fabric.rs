//! `hostping agent` with a `[fabric]` table against a real InfiniBand management stack:
//! ibsim's simulated fabric (scripts/ibsim/nets/two-switches.net), LIDs from a real opensm,
//! the agent's libibumad redirected to ibsim (`scripts/ibsim/run.sh`). The agent sweeps the
//! switch ports on its cadence; the test scrapes `/metrics` (infiniband_exporter's names),
//! reads the sweeps back from SQLite and through the JSON API, and stops it with SIGTERM; a
//! real Prometheus scrapes it and joins the counters to the uplinks as the exporter's
//! recording rules do.
//!
//! Skipped (with a message) when ibsim, opensm or libumad2sim (or, for the last test,
//! Prometheus) are missing, unless `HOSTPING_REQUIRE_IBSIM` (`HOSTPING_REQUIRE_PROMETHEUS`)
//! is set, as `./test.sh` does after installing them.

mod common;

use common::ibsim::{self, have_ibsim};
use common::prometheus::{have_prometheus, Prometheus};
use common::{dashboard, hostping, http_get, stderr, temp_dir, wait_until_serving};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use store::{Store, StoredSweep};

const LEAF_A: &str = "0x0000000000200000";
const LEAF_B: &str = "0x0000000000200001";

/// An agent on a virtual dgx-a100 whose `[fabric]` sampler talks to ibsim.
struct FabricAgent {
    /// `scripts/ibsim/run.sh`, which ends when the agent does.
    child: Child,
    /// The agent's own pid (the shell run.sh starts `exec`s it).
    pid: i32,
    addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
    lines: Vec<String>,
}

impl FabricAgent {
    /// Starts ibsim with `console` commands and the agent with `config` on `db`, in the
    /// folder of `config` (libumad2sim keeps a `sys-PID` tree in the working folder while a
    /// process runs, and leaves it behind when the process is killed).
    fn start(console: &[&str], config: &Path, db: &Path) -> FabricAgent {
        let mut child = ibsim::run_on("two-switches.net", console)
            .current_dir(config.parent().unwrap())
            .args(["bash", "-c"])
            .arg(format!(
                "echo $$; exec \"$HOSTPING\" agent --sim dgx-a100 --config {} --db {} \
                 --listen 127.0.0.1:0",
                config.display(),
                db.display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("scripts/ibsim/run.sh runs");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let pid: i32 = first
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("no pid from run.sh: {first:?}"));
        let (stderr, lines, addr) = wait_until_serving(&mut child, Duration::from_secs(90));
        FabricAgent {
            child,
            pid,
            addr,
            stderr,
            lines,
        }
    }

    /// Everything the agent logged so far.
    fn log(&mut self) -> String {
        while let Ok(line) = self.stderr.try_recv() {
            self.lines.push(line);
        }
        self.lines.join("\n")
    }

    /// SIGTERM to the agent; its status, and how long it took to end.
    fn terminate(&mut self) -> (ExitStatus, Duration) {
        let sent = Instant::now();
        // SAFETY: kill has no memory preconditions.
        assert_eq!(unsafe { libc::kill(self.pid, libc::SIGTERM) }, 0);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, sent.elapsed());
            }
            assert!(
                sent.elapsed() < Duration::from_secs(60),
                "the agent did not stop: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for FabricAgent {
    fn drop(&mut self) {
        // SAFETY: as above; the agent may be gone already.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Waits until the database holds `n` sweeps.
fn wait_for_sweeps(agent: &mut FabricAgent, db: &Path, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let count = Store::open_read_only(db)
            .and_then(|s| s.sweep_count())
            .unwrap_or(0);
        if count >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{count} of {n} sweeps after 60 s: {}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sweeps(db: &Path) -> Vec<StoredSweep> {
    Store::open_read_only(db)
        .unwrap()
        .sweeps(1000, None)
        .unwrap()
}

type Labels = BTreeMap<String, String>;

/// The samples of an OpenMetrics exposition: `name{labels} value`, as (name, labels, the
/// value's text). Label values here hold no `"`, `,` or `}`.
fn samples(text: &str) -> Vec<(String, Labels, String)> {
    assert!(text.ends_with("# EOF\n"), "{text}");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => {
                    let body = rest.strip_suffix('}').unwrap();
                    let labels = body
                        .split("\",")
                        .filter(|kv| !kv.is_empty())
                        .map(|kv| {
                            let (k, v) = kv.split_once("=\"").unwrap();
                            (k.to_string(), v.trim_end_matches('"').to_string())
                        })
                        .collect();
                    (name, labels)
                }
                None => (series, Labels::new()),
            };
            (name.to_string(), labels, value.to_string())
        })
        .collect()
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The name of a switch of two-switches.net, the counters' `switch` label (DESIGN 4.4).
fn switch_of(guid: &str) -> &'static str {
    match guid {
        LEAF_A => "leaf-a",
        LEAF_B => "leaf-b",
        other => panic!("no switch {other} in two-switches.net"),
    }
}

/// The value text of the one series `name{pairs}`, if present.
fn value(
    samples: &[(String, Labels, String)],
    name: &str,
    pairs: &[(&str, &str)],
) -> Option<String> {
    let want = labels(pairs);
    let found: Vec<&String> = samples
        .iter()
        .filter(|(n, l, _)| n == name && *l == want)
        .map(|(_, _, v)| v)
        .collect();
    assert!(
        found.len() <= 1,
        "{name}{want:?} appears {} times",
        found.len()
    );
    found.first().map(|v| v.to_string())
}

/// The exporter's counter names (collectors/switch.go of treydock/infiniband_exporter) and
/// the sweep's counter each carries.
const EXPORTER_COUNTERS: [(&str, &str); 9] = [
    (
        "infiniband_switch_port_transmit_data_bytes_total",
        "xmit_data_bytes",
    ),
    (
        "infiniband_switch_port_receive_data_bytes_total",
        "rcv_data_bytes",
    ),
    ("infiniband_switch_port_transmit_packets_total", "xmit_pkts"),
    ("infiniband_switch_port_receive_packets_total", "rcv_pkts"),
    ("infiniband_switch_port_transmit_wait_total", "xmit_wait"),
    ("infiniband_switch_port_symbol_error_total", "symbol_errors"),
    ("infiniband_switch_port_link_downed_total", "link_downed"),
    ("infiniband_switch_port_receive_errors_total", "rcv_errors"),
    (
        "infiniband_switch_port_transmit_discards_total",
        "xmit_discards",
    ),
];

/// The counters of one stored port as JSON (`{"xmit_wait": .., ...}`), or null.
fn stored_counters(sweep: &StoredSweep, guid: &str, port: u64) -> Value {
    let json = serde_json::to_value(sweep).unwrap();
    json["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["guid"] == guid && p["port"] == port)
        .unwrap_or_else(|| panic!("no {guid}[{port}] in {json}"))["counters"]
        .clone()
}

#[test]
fn the_agent_serves_and_stores_what_the_switches_hold() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("agent-fabric");
    let db = dir.join("runs.db");
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        "[fabric]\nevery = \"250ms\"\nsampler = \"host-1\"\n",
    )
    .unwrap();
    let mut agent = FabricAgent::start(
        &[
            r#"PerformanceSet "leaf-a"[7] PortCounters.PortXmitWait=1234"#,
            r#"PerformanceSet "leaf-a"[7] PortCounters.SymbolErrorCounter=7"#,
            r#"PerformanceSet "leaf-a"[7] PortCounters.LinkDownedCounter=2"#,
            r#"PerformanceSet "leaf-b"[2] PortCounters.PortRcvErrors=11"#,
            r#"PerformanceSet "leaf-b"[2] PortCounters.PortXmitDiscards=5"#,
        ],
        &config,
        &db,
    );
    wait_for_sweeps(&mut agent, &db, 3);
    let (code, text) = http_get(agent.addr, "/metrics");
    assert_eq!(code, 200);
    let s = samples(&text);

    // The scrape shows one sweep, which was stored before it was published: find it by
    // its start time.
    let at: f64 = value(&s, "hostping_fabric_last_sweep_timestamp_seconds", &[])
        .unwrap()
        .parse()
        .unwrap();
    let stored = sweeps(&db);
    let shown = stored
        .iter()
        .find(|w| w.sweep.start_unix_ns as f64 / 1e9 == at)
        .unwrap_or_else(|| panic!("no stored sweep started at {at}: {}", agent.log()));
    assert_eq!(
        shown.sweep.ports.len(),
        8,
        "two switches, four linked ports each"
    );
    assert_eq!(shown.sweep.sampler, "host-1");
    assert_eq!(
        value(&s, "hostping_fabric_sweeps_total", &[]).unwrap(),
        shown.sweep.sweep.to_string()
    );
    assert_eq!(
        value(&s, "hostping_fabric_ports_sampled", &[]).unwrap(),
        "8"
    );
    assert_eq!(
        value(&s, "hostping_fabric_ports_in_error", &[]).unwrap(),
        "0"
    );
    let spread: f64 = value(&s, "hostping_fabric_sweep_spread_seconds", &[])
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(spread, shown.sweep.spread_us / 1e6);

    // Every counter of every port, exactly the stored value, under exactly {guid, port}.
    for (name, field) in EXPORTER_COUNTERS {
        let family = name.strip_suffix("_total").unwrap();
        assert!(
            text.contains(&format!("\n# TYPE {family} counter\n")),
            "{family}"
        );
        let series: Vec<&Labels> = s
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, l, _)| l)
            .collect();
        assert_eq!(series.len(), 8, "{name}");
        for p in &shown.sweep.ports {
            let guid = store::guid_text(p.guid);
            let port = p.port.to_string();
            let want = p
                .counters
                .unwrap()
                .fields()
                .into_iter()
                .find(|(f, _)| *f == field)
                .unwrap()
                .1;
            assert_eq!(
                value(
                    &s,
                    name,
                    &[
                        ("guid", &guid),
                        ("port", &port),
                        ("switch", switch_of(&guid))
                    ]
                ),
                Some(want.to_string()),
                "{name} {guid}[{port}]"
            );
        }
    }
    // The counters set on the console, exactly.
    let a7 = [("guid", LEAF_A), ("port", "7"), ("switch", "leaf-a")];
    let b2 = [("guid", LEAF_B), ("port", "2"), ("switch", "leaf-b")];
    for (name, pairs, want) in [
        ("infiniband_switch_port_transmit_wait_total", a7, "1234"),
        ("infiniband_switch_port_symbol_error_total", a7, "7"),
        ("infiniband_switch_port_link_downed_total", a7, "2"),
        ("infiniband_switch_port_receive_errors_total", b2, "11"),
        ("infiniband_switch_port_transmit_discards_total", b2, "5"),
        ("infiniband_switch_port_transmit_wait_total", b2, "0"),
    ] {
        assert_eq!(
            value(&s, name, &pairs).as_deref(),
            Some(want),
            "{name}{pairs:?}"
        );
    }
    for w in &stored {
        assert_eq!(stored_counters(w, LEAF_A, 7)["xmit_wait"], 1234);
        assert_eq!(stored_counters(w, LEAF_B, 2)["rcv_errors"], 11);
        assert!(w
            .sweep
            .ports
            .iter()
            .all(|p| p.error.is_none() && p.at_unix_ns >= w.sweep.start_unix_ns));
    }

    // The names the dashboards join on: the switches, and what each port is linked to.
    let lid_a = shown
        .sweep
        .ports
        .iter()
        .find(|p| p.guid == 0x200000)
        .unwrap()
        .lid
        .to_string();
    let lid_b = shown
        .sweep
        .ports
        .iter()
        .find(|p| p.guid == 0x200001)
        .unwrap()
        .lid
        .to_string();
    assert_eq!(
        value(
            &s,
            "infiniband_switch_info",
            &[("guid", LEAF_A), ("lid", &lid_a), ("switch", "leaf-a")]
        )
        .as_deref(),
        Some("1")
    );
    assert_eq!(
        value(
            &s,
            "infiniband_switch_info",
            &[("guid", LEAF_B), ("lid", &lid_b), ("switch", "leaf-b")]
        )
        .as_deref(),
        Some("1")
    );
    assert_eq!(
        value(
            &s,
            "infiniband_switch_uplink_info",
            &[
                ("guid", LEAF_A),
                ("port", "7"),
                ("switch", "leaf-a"),
                ("uplink", "leaf-b"),
                ("uplink_guid", LEAF_B),
                ("uplink_lid", &lid_b),
                ("uplink_port", "7"),
                ("uplink_type", "SW"),
            ]
        )
        .as_deref(),
        Some("1")
    );
    let uplinks: Vec<&Labels> = s
        .iter()
        .filter(|(n, _, _)| n == "infiniband_switch_uplink_info")
        .map(|(_, l, _)| l)
        .collect();
    assert_eq!(uplinks.len(), 8);
    let host_4 = uplinks
        .iter()
        .find(|l| l["guid"] == LEAF_B && l["port"] == "2")
        .unwrap();
    assert_eq!(
        (
            host_4["uplink"].as_str(),
            host_4["uplink_type"].as_str(),
            host_4["uplink_port"].as_str()
        ),
        ("host-4", "CA", "1")
    );

    // Sweeps follow the cadence: never closer than `every` (less scheduling jitter).
    let mut starts: Vec<u64> = stored.iter().map(|w| w.sweep.start_unix_ns).collect();
    starts.sort_unstable();
    for pair in starts.windows(2) {
        assert!(pair[1] - pair[0] >= 200_000_000, "{starts:?}");
    }

    // The JSON API: newest first, the sample JSON of DESIGN 4.4 with id and sampler.
    let (code, body) = http_get(agent.addr, "/api/fabric/sweeps?limit=2");
    assert_eq!(code, 200, "{body}");
    let api: Value = serde_json::from_str(&body).unwrap();
    let api = api.as_array().unwrap();
    assert_eq!(api.len(), 2);
    assert!(api[0]["id"].as_i64() > api[1]["id"].as_i64());
    assert_eq!(api[0]["sampler"], "host-1");
    assert_eq!(api[0]["ports"].as_array().unwrap().len(), 8);
    let a7_json = api[0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["guid"] == LEAF_A && p["port"] == 7)
        .unwrap();
    assert_eq!(a7_json["counters"]["xmit_wait"], 1234);
    assert!(a7_json["error"].is_null());

    // SIGTERM: the sampler's wait ends at once; the agent stops cleanly.
    let (status, took) = agent.terminate();
    assert!(status.success(), "{status}: {}", agent.log());
    assert!(took < Duration::from_secs(10), "stopped after {took:?}");
    let log = agent.log();
    assert!(log.contains("fabric: discovered 6 nodes"), "{log}");
    assert!(log.contains("fabric: sampling 8 switch ports"), "{log}");
    assert!(log.contains("stopped;"), "{log}");
    assert!(!log.contains("gave no counters"), "{log}");
}

#[test]
fn a_silent_switch_gives_port_errors_and_the_agent_goes_on() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("agent-fabric-silent");
    let topo = dir.join("fabric.topo");
    // The topology comes from a healthy fabric; then leaf-b loses every MAD.
    let o = ibsim::run_on("two-switches.net", &[])
        .current_dir(&dir)
        .args([
            "bash",
            "-c",
            &format!(
                "\"$HOSTPING\" fabric discover --format ibnetdiscover > {}",
                topo.display()
            ),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let db = dir.join("runs.db");
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "[fabric]\ntopology = \"{}\"\nevery = \"200ms\"\ntimeout_ms = 50\nretries = 1\n\
             keep = \"1s\"\n",
            topo.display()
        ),
    )
    .unwrap();
    let mut agent = FabricAgent::start(&[r#"Error "leaf-b" 100"#], &config, &db);
    // Enough sweeps for the retention to have dropped the first ones.
    let deadline = Instant::now() + Duration::from_secs(60);
    let s = loop {
        let (code, text) = http_get(agent.addr, "/metrics");
        assert_eq!(code, 200);
        let s = samples(&text);
        let done: u64 =
            value(&s, "hostping_fabric_sweeps_total", &[]).map_or(0, |v| v.parse().unwrap());
        if done >= 8 {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "{done} sweeps after 60 s: {}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        value(&s, "hostping_fabric_ports_in_error", &[]).as_deref(),
        Some("4")
    );
    for port in ["1", "2", "7", "8"] {
        let b = [("guid", LEAF_B), ("port", port)];
        let a = [("guid", LEAF_A), ("port", port)];
        assert_eq!(
            value(&s, "hostping_fabric_port_error", &b).as_deref(),
            Some("1")
        );
        let b_counter = [("guid", LEAF_B), ("port", port), ("switch", "leaf-b")];
        assert_eq!(
            value(&s, "infiniband_switch_port_transmit_wait_total", &b_counter),
            None
        );
        let a_counter = [("guid", LEAF_A), ("port", port), ("switch", "leaf-a")];
        assert!(value(&s, "infiniband_switch_port_transmit_wait_total", &a_counter).is_some());
        assert_eq!(value(&s, "hostping_fabric_port_error", &a), None);
    }
    // The names come from the topology file, silent switch included.
    assert!(s
        .iter()
        .any(|(n, l, _)| n == "infiniband_switch_info" && l["switch"] == "leaf-b"));
    // Retention: the database keeps the sweeps of the last `keep` (1 s), never the first.
    let stored = sweeps(&db);
    let starts: Vec<u64> = stored.iter().map(|w| w.sweep.start_unix_ns).collect();
    let (newest, oldest) = (starts.iter().max().unwrap(), starts.iter().min().unwrap());
    assert!(newest - oldest <= 1_000_000_000, "{starts:?}");
    assert!(
        stored.iter().all(|w| w.sweep.sweep > 1),
        "the first sweeps are gone"
    );
    assert!(
        (1..=6).contains(&stored.len()),
        "{} sweeps kept",
        stored.len()
    );
    for w in stored {
        for p in &w.sweep.ports {
            if p.guid == 0x200001 {
                assert!(p.counters.is_none(), "{p:?}");
                assert!(
                    p.error
                        .as_deref()
                        .unwrap()
                        .contains("no response in 50 ms, 2 tries"),
                    "{p:?}"
                );
            } else {
                assert!(p.counters.is_some() && p.error.is_none(), "{p:?}");
            }
        }
        // The silent switch never holds a sweep up past its MADs' deadlines.
        assert!(w.sweep.spread_us < 400_000.0, "{}", w.sweep.spread_us);
    }
    let (status, _) = agent.terminate();
    assert!(status.success(), "{status}: {}", agent.log());
    let log = agent.log();
    // Logged when it began, not at every sweep.
    assert_eq!(log.matches("gave no counters").count(), 1, "{log}");
    assert!(log.contains("leaf-b (0x0000000000200001)"), "{log}");
}

#[test]
fn a_fabric_table_with_a_missing_port_list_stops_the_agent_naming_it() {
    let dir = temp_dir("agent-fabric-bad");
    let config = dir.join("agent.toml");
    std::fs::write(&config, "[fabric]\nports = \"/nonexistent/host-1.ports\"\n").unwrap();
    let db = dir.join("runs.db");
    let o = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--config",
        config.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fabric.ports `/nonexistent/host-1.ports`: cannot read"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn without_a_umad_port_the_agent_keeps_running_and_counts_failed_sweeps() {
    // On a machine with InfiniBand the sampler would find real switches.
    if Path::new("/dev/infiniband").exists() {
        eprintln!("skipped: this machine has /dev/infiniband");
        return;
    }
    let dir = temp_dir("agent-fabric-no-port");
    let config = dir.join("agent.toml");
    std::fs::write(&config, "[fabric]\nevery = \"100ms\"\n").unwrap();
    let db = dir.join("runs.db");
    let agent = common::agent(&db, &["--config", config.to_str().unwrap()], &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let failed = loop {
        let (_, text) = http_get(agent.addr, "/metrics");
        let s = samples(&text);
        let failed: u64 = value(&s, "hostping_fabric_sweep_failures_total", &[])
            .map_or(0, |v| v.parse().unwrap());
        if failed >= 3 {
            break failed;
        }
        assert!(Instant::now() < deadline, "{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(failed >= 3);
    let (code, body) = http_get(agent.addr, "/api/fabric/sweeps");
    assert_eq!((code, body.as_str()), (200, "[]"));
    agent.signal(libc::SIGTERM);
    let out = agent.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    // One line when the trouble began, not one per try.
    assert_eq!(
        out.stderr.matches("fabric: no sweep:").count(),
        1,
        "{}",
        out.stderr
    );
}

#[test]
fn prometheus_joins_the_counters_to_the_uplinks_as_the_exporters_rules_do() {
    if !have_ibsim() || !have_prometheus() {
        return;
    }
    let dir = temp_dir("agent-fabric-prometheus");
    let db = dir.join("runs.db");
    let config = dir.join("agent.toml");
    std::fs::write(&config, "[fabric]\nevery = \"500ms\"\n").unwrap();
    let mut agent = FabricAgent::start(
        &[r#"PerformanceSet "leaf-a"[7] PortCounters.PortXmitWait=1234"#],
        &config,
        &db,
    );
    let prometheus = Prometheus::start(&dir, agent.addr);
    // The join of infiniband_exporter's examples/infiniband.rules (its Grafana dashboards
    // read the recorded series): switch and peer names come from the uplink info series.
    let joined = "infiniband_switch_port_transmit_wait_total * on(guid,port) \
                  group_left(switch, host, uplink, uplink_port) infiniband_switch_uplink_info";
    let deadline = Instant::now() + Duration::from_secs(60);
    let series = loop {
        let r = prometheus.query(joined);
        if r.len() == 8 {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus has {} joined series after 60 s: {r:?}; agent: {}",
            r.len(),
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let a7 = series
        .iter()
        .find(|s| s["metric"]["guid"] == LEAF_A && s["metric"]["port"] == "7")
        .unwrap();
    assert_eq!(a7["metric"]["switch"], "leaf-a");
    assert_eq!(a7["metric"]["uplink"], "leaf-b");
    assert_eq!(a7["metric"]["uplink_port"], "7");
    assert_eq!(a7["value"][1], "1234");
    // The dashboards' "most congested switches" panel sums by switch.
    let by_switch = prometheus.query(&format!("sum by (switch) ({joined})"));
    let total = |name: &str| {
        by_switch
            .iter()
            .find(|s| s["metric"]["switch"] == name)
            .map(|s| s["value"][1].as_str().unwrap().to_string())
    };
    assert_eq!(total("leaf-a").as_deref(), Some("1234"));
    assert_eq!(total("leaf-b").as_deref(), Some("0"));
    // The Grafana dashboard's switch-port panels (packaging/grafana/; prometheus.rs runs the
    // others) are valid PromQL and return this sampler's series.
    let switch_panels: Vec<_> = dashboard::queries()
        .into_iter()
        .filter(|q| q.row == dashboard::SWITCH_PORT_ROW)
        .collect();
    assert!(switch_panels.len() >= 3, "{switch_panels:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    for q in &switch_panels {
        while prometheus.query(&q.expr).is_empty() {
            assert!(
                Instant::now() < deadline,
                "dashboard panel {:?} returns no series: {}; agent: {}",
                q.panel,
                q.expr,
                agent.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    let (status, _) = agent.terminate();
    assert!(status.success(), "{status}: {}", agent.log());
}
