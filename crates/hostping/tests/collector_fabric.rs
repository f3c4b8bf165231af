//! Switch-port counters at the collector (issue 27 section 5): `hostping fabric sample
//! --collector` on ibsim's simulated fabric (scripts/ibsim/run.sh: ibsim, a real opensm,
//! libibumad redirected to ibsim) posting each sweep to `hostping collector` on a real
//! PostgreSQL; the stored deltas and the window sums checked exactly against the counters
//! the sampler printed, a counter reset counted from zero, the refusals storing nothing, a
//! resend stored once, and retention.
//!
//! Skipped (with a message) when PostgreSQL's server binaries or ibsim are missing, unless
//! `HOSTPING_REQUIRE_POSTGRES` / `HOSTPING_REQUIRE_IBSIM` are set, as `./test.sh` does.

mod common;

use common::ibsim::{self, have_ibsim};
use common::postgres::{get, post_to, Collector, Postgres};
use common::{stderr, temp_dir};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

const TOKEN_S1: &str = "tok-s1-0123456789abcdef";
const TOKEN_S2: &str = "tok-s2-0123456789abcdef";
const TOKEN_OLD: &str = "tok-old-0123456789abcdef";

const NAMES: [&str; 9] = [
    "xmit_data_bytes",
    "rcv_data_bytes",
    "xmit_pkts",
    "rcv_pkts",
    "xmit_wait",
    "symbol_errors",
    "link_downed",
    "rcv_errors",
    "xmit_discards",
];

fn collector(dir: &Path, pg: &Postgres, extra: &[&str]) -> Collector {
    let tokens = dir.join("tokens");
    std::fs::write(
        &tokens,
        format!("# host token\ns1 {TOKEN_S1}\ns2 {TOKEN_S2}\nold {TOKEN_OLD}\n"),
    )
    .unwrap();
    Collector::start(pg, &tokens, extra)
}

/// Posts a sweep body; the status and the JSON answer.
fn post_sweep(addr: SocketAddr, token: Option<&str>, body: &[u8]) -> (u16, Value) {
    post_to(addr, "/api/fabric/sweeps", token, body)
}

/// A port's counters in a printed sweep, by `guid[port]`.
fn counters(sweep: &Value) -> HashMap<(String, u64), (u64, [u64; 9])> {
    sweep["ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["counters"].is_null())
        .map(|p| {
            let mut c = [0; 9];
            for (v, n) in c.iter_mut().zip(NAMES) {
                *v = p["counters"][n].as_u64().unwrap();
            }
            (
                (
                    p["guid"].as_str().unwrap().to_owned(),
                    p["port"].as_u64().unwrap(),
                ),
                (p["at_unix_ns"].as_u64().unwrap(), c),
            )
        })
        .collect()
}

/// The delta the collector should store between two reads: the growth, or the value read
/// now when the counter went down (a reset).
fn expected(was: u64, is: u64) -> u64 {
    if is >= was {
        is - was
    } else {
        is
    }
}

/// The stored deltas of the sweep that `sampler` numbered `sweep`, by `guid[port]`.
fn stored(pg: &Postgres, sampler: &str, start_unix_ns: u64) -> HashMap<(String, u64), [u64; 9]> {
    let rows = pg.scalar(&format!(
        "SELECT string_agg(format('0x%s %s %s', lpad(to_hex(d.guid), 16, '0'), d.port,
                 concat_ws(',', xmit_data_bytes, rcv_data_bytes, xmit_pkts, rcv_pkts, xmit_wait,
                           symbol_errors, link_downed, rcv_errors, xmit_discards)), E'\\n')
         FROM fabric_port_deltas d JOIN fabric_sweeps s ON s.id = d.sweep_id
         WHERE s.sampler = '{sampler}' AND s.start_unix_ns = {start_unix_ns}"
    ));
    rows.lines()
        .map(|l| {
            let mut f = l.split(' ');
            let guid = f.next().unwrap().to_owned();
            let port = f.next().unwrap().parse().unwrap();
            let mut c = [0; 9];
            for (v, t) in c.iter_mut().zip(f.next().unwrap().split(',')) {
                *v = t.parse().unwrap();
            }
            ((guid, port), c)
        })
        .collect()
}

#[test]
fn sweeps_from_a_sampler_on_ibsim_are_stored_as_exact_deltas() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("collector-fabric-ibsim");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let c = collector(&dir, &pg, &[]);
    let url = format!("http://{}", c.addr);
    let out = dir.join("sweeps.jsonl");
    // Three single sweeps of one sampler (three processes: the collector keeps the base of
    // each port's next delta), the switches' counters changed between them through ibsim's
    // console (fd 7 of run.sh): XmitWait grows, a symbol error counter goes down (a reset).
    let sample = format!(
        "\"$HOSTPING\" fabric sample --once --format json --collector {url} --token {TOKEN_S1} \
         --name s1 >> {out}",
        out = out.display()
    );
    let script = format!(
        "set -e
         {sample}
         echo 'PerformanceSet \"leaf-b\"[2] PortCounters.PortXmitWait=5000' >&7
         echo 'PerformanceSet \"leaf-a\"[7] PortCounters.SymbolErrorCounter=3' >&7
         sleep 0.5
         {sample}
         echo 'PerformanceSet \"leaf-b\"[2] PortCounters.PortXmitWait=6000' >&7
         echo 'PerformanceSet \"leaf-b\"[2] PortCounters.PortRcvErrors=20' >&7
         sleep 0.5
         {sample}"
    );
    let o = ibsim::run_on(
        "two-switches.net",
        &[
            r#"PerformanceSet "leaf-a"[7] PortCounters.SymbolErrorCounter=7"#,
            r#"PerformanceSet "leaf-b"[2] PortCounters.PortXmitWait=4321"#,
            r#"PerformanceSet "leaf-b"[2] PortCounters.PortRcvErrors=11"#,
        ],
    )
    .args(["bash", "-c", &script])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("posting sweeps to {url} as s1")),
        "{}",
        stderr(&o)
    );
    let sweeps: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sweeps.len(), 3);
    assert_eq!(pg.count("fabric_sweeps"), 3);
    let reads: Vec<_> = sweeps.iter().map(counters).collect();
    assert_eq!(reads[0].len(), 8, "{}", sweeps[0]);

    // The first sweep is each port's baseline; each later one stores, per port, exactly
    // the difference of what the sampler read (or the value after a reset).
    let start = |s: &Value| s["start_unix_ns"].as_u64().unwrap();
    assert!(stored(&pg, "s1", start(&sweeps[0])).is_empty());
    for n in 1..3 {
        let got = stored(&pg, "s1", start(&sweeps[n]));
        assert_eq!(got.len(), 8);
        for (key, (_, is)) in &reads[n] {
            let (_, was) = reads[n - 1][key];
            let want: Vec<u64> = was.iter().zip(is).map(|(&w, &i)| expected(w, i)).collect();
            assert_eq!(got[key].to_vec(), want, "{key:?} in sweep {n}");
        }
    }
    let b2 = ("0x0000000000200001".to_owned(), 2);
    let a7 = ("0x0000000000200000".to_owned(), 7);
    assert_eq!(stored(&pg, "s1", start(&sweeps[1]))[&b2][4], 5000 - 4321);
    assert_eq!(
        stored(&pg, "s1", start(&sweeps[1]))[&a7][5],
        3,
        "7 then 3: a reset, 3 since"
    );
    assert_eq!(stored(&pg, "s1", start(&sweeps[2]))[&b2][7], 20 - 11);

    // The window over everything sums the deltas exactly, with the reset counted.
    let (status, all) = get(
        c.addr,
        "/api/fabric/ports?since=0&until=9000000000000&ports=leaf-b/2,0x0000000000200000/7,leaf-a/99",
    );
    assert_eq!(status, 200, "{all}");
    let ports = all["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 3, "{all}");
    let entry = |name: &str| -> &Value {
        ports
            .iter()
            .find(|p| p["port"] == name)
            .unwrap_or_else(|| panic!("no {name} in {all}"))
    };
    let (first, last) = (&reads[0], &reads[2]);
    for (key, name) in [(&b2, "leaf-b/2"), (&a7, "0x0000000000200000/7")] {
        let entry = entry(name);
        assert_eq!(entry["port"], name, "{entry}");
        assert_eq!(entry["sampler"], "s1");
        assert_eq!(entry["intervals"], 2);
        let (t0, c0) = first[key];
        let (t2, c2) = last[key];
        assert_eq!(entry["seconds"].as_f64().unwrap(), (t2 - t0) as f64 / 1e9);
        for (i, n) in NAMES.iter().enumerate() {
            let (_, c1) = reads[1][key];
            let want = expected(c0[i], c1[i]) + expected(c1[i], c2[i]);
            assert_eq!(entry["deltas"][n], want, "{name} {n}");
            let rate = want as f64 / ((t2 - t0) as f64 / 1e9);
            assert!(
                (entry["rates"][n].as_f64().unwrap() - rate).abs() <= rate * 1e-12,
                "{name} {n}"
            );
        }
    }
    assert_eq!(entry("leaf-b/2")["switch"], "leaf-b");
    assert_eq!(entry("leaf-b/2")["deltas"]["xmit_wait"], 6000 - 4321);
    assert_eq!(entry("leaf-b/2")["resets"], 0);
    let a7 = entry("0x0000000000200000/7");
    assert_eq!(
        (a7["switch"].as_str(), a7["number"].as_u64()),
        (Some("leaf-a"), Some(7))
    );
    assert_eq!(a7["deltas"]["symbol_errors"], 3);
    assert_eq!(a7["resets"], 1);
    // Asked for and never stored: listed last, with no counts.
    assert_eq!(ports[2]["port"], "leaf-a/99");
    assert!(ports[2]["deltas"].is_null() && ports[2]["sampler"].is_null());

    // A window starting after the second sweep's reads holds the third sweep's deltas only.
    let since_ms = reads[1]
        .values()
        .map(|(t, _)| t.div_ceil(1_000_000))
        .max()
        .unwrap();
    let (_, late) = get(
        c.addr,
        &format!("/api/fabric/ports?since={since_ms}&until=9000000000000&ports=leaf-b/2"),
    );
    assert_eq!(late["ports"][0]["intervals"], 1, "{late}");
    assert_eq!(late["ports"][0]["deltas"]["xmit_wait"], 1000);
    assert_eq!(late["ports"][0]["deltas"]["rcv_errors"], 9);
    // Without ports=, every port in the window: the 8 ports of two-switches.net.
    let (_, every) = get(c.addr, "/api/fabric/ports?since=0&until=9000000000000");
    assert_eq!(every["ports"].as_array().unwrap().len(), 8, "{every}");
}

/// A synthetic sweep of one port at `at_unix_ns` with `xmit_wait`.
fn sweep(sampler: &str, n: u64, at_unix_ns: u64, xmit_wait: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "sampler": sampler, "sweep": n, "start_unix_ns": at_unix_ns, "spread_us": 10.0,
        "ports": [{"guid": "0x0002c90300000001", "switch": "leaf1", "lid": 3, "port": 9,
                   "at_unix_ns": at_unix_ns,
                   "counters": {"xmit_data_bytes": 0, "rcv_data_bytes": 0, "xmit_pkts": 0,
                                "rcv_pkts": 0, "xmit_wait": xmit_wait, "symbol_errors": 0,
                                "link_downed": 0, "rcv_errors": 0, "xmit_discards": 0},
                   "error": null}]}))
    .unwrap()
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn refusals_store_nothing_resends_store_once_and_old_sweeps_leave() {
    let dir = temp_dir("collector-fabric-refusals");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let c = collector(&dir, &pg, &["--keep-sweeps", "3s", "--max-body", "100000"]);
    let start = now_ns();
    let first = sweep("old", 1, start, 100);
    let (status, answer) = post_sweep(c.addr, Some(TOKEN_OLD), &first);
    assert_eq!(
        (status, answer["deltas"].as_u64(), answer["first"].as_u64()),
        (201, Some(0), Some(1))
    );
    let before = pg.count("fabric_sweeps");

    // 401 without a token or with an unknown one, 403 for another host's token, 400 for a
    // body outside the contract, 413 over --max-body: nothing stored by any.
    let second_at = start + 500_000_000;
    let second = sweep("old", 2, second_at, 250);
    for (token, body, want) in [
        (None, second.clone(), 401),
        (Some("nope"), second.clone(), 401),
        (Some(TOKEN_S1), second.clone(), 403),
        (Some(TOKEN_OLD), b"{\"sampler\": \"old\"}".to_vec(), 400),
        (
            Some(TOKEN_OLD),
            second.replace_bytes("0x0002c90300000001", "0x2c9"),
            400,
        ),
        (Some(TOKEN_OLD), vec![b' '; 200_000], 413),
    ] {
        let (status, answer) = post_sweep(c.addr, token, &body);
        assert_eq!(status, want, "{answer}");
        assert!(answer["error"].is_string(), "{answer}");
    }
    assert_eq!(pg.count("fabric_sweeps"), before);
    assert_eq!(pg.count("fabric_port_deltas"), 0);

    let (status, answer) = post_sweep(c.addr, Some(TOKEN_OLD), &second);
    assert_eq!(
        (status, answer["deltas"].as_u64()),
        (201, Some(1)),
        "{answer}"
    );
    // Sent again (an answer lost on the way): stored once.
    let (status, answer) = post_sweep(c.addr, Some(TOKEN_OLD), &second);
    assert_eq!(
        (status, answer["duplicate"].as_bool()),
        (200, Some(true)),
        "{answer}"
    );
    assert_eq!(pg.count("fabric_port_deltas"), 1);
    assert_eq!(pg.scalar("SELECT xmit_wait FROM fabric_port_deltas"), "150");

    // A sweep 4 s later, with --keep-sweeps 3s: the first two sweeps and the second's
    // delta leave; the new delta is taken against the second's read all the same.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let third_at = now_ns();
    let (status, _) = post_sweep(c.addr, Some(TOKEN_OLD), &sweep("old", 3, third_at, 1000));
    assert_eq!(status, 201);
    assert_eq!(pg.count("fabric_sweeps"), 1);
    assert_eq!(
        pg.scalar("SELECT xmit_wait || ' ' || interval_ns FROM fabric_port_deltas"),
        format!("750 {}", third_at - second_at)
    );

    // Queries outside the contract: 400 naming what.
    for (query, said) in [
        ("until=1", "since=MS is required"),
        ("since=5&until=1", "before since=5"),
        ("since=0&until=1&ports=leaf1", "port `leaf1`"),
    ] {
        let (status, answer) = get(c.addr, &format!("/api/fabric/ports?{query}"));
        assert_eq!(status, 400, "{answer}");
        assert!(answer["error"].as_str().unwrap().contains(said), "{answer}");
    }
}

/// `Vec<u8>` with one text replaced, for corrupting a body.
trait ReplaceBytes {
    fn replace_bytes(&self, from: &str, to: &str) -> Vec<u8>;
}

impl ReplaceBytes for Vec<u8> {
    fn replace_bytes(&self, from: &str, to: &str) -> Vec<u8> {
        String::from_utf8(self.clone())
            .unwrap()
            .replacen(from, to, 1)
            .into_bytes()
    }
}

#[test]
fn a_sampler_with_the_collector_down_says_so_and_fails() {
    if !have_ibsim() {
        return;
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let o = ibsim::run_on("two-switches.net", &[])
        .args([
            "bash",
            "-c",
            &format!(
                "\"$HOSTPING\" fabric sample --once --format json --collector http://{addr} \
                 --token t --name s1"
            ),
        ])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("collector unreachable, 1 sweeps kept, sampling goes on"),
        "{err}"
    );
    assert!(
        err.contains("1 of 1 sweeps not stored by the collector"),
        "{err}"
    );
    // The sweep was still printed.
    assert!(
        common::stdout(&o).contains("\"sweep\":1"),
        "{}",
        common::stdout(&o)
    );
}

#[test]
fn bad_collector_flags_exit_two_before_any_mad() {
    let dir = temp_dir("collector-fabric-flags");
    let empty = dir.join("token");
    std::fs::write(&empty, "\n").unwrap();
    let empty = empty.to_str().unwrap();
    for (args, said) in [
        (
            vec!["--collector", "http://127.0.0.1:9"],
            "needs this host's token: give --token-file FILE",
        ),
        (
            vec!["--collector", "collector:9470", "--token", "t"],
            "has no scheme",
        ),
        (
            vec!["--collector", "http://127.0.0.1:9", "--token-file", empty],
            "is empty",
        ),
        (vec!["--token", "t"], "--collector"),
    ] {
        let o = common::hostping(&[&["fabric", "sample", "--once"][..], &args].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
}

#[test]
fn sweeps_made_while_the_collector_is_down_are_stored_when_it_comes_up() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("collector-fabric-late");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let listen = format!("127.0.0.1:{}", common::postgres::free_port());
    let script = format!(
        "\"$HOSTPING\" fabric sample --hz 5 --duration 3s --format json \
         --collector http://{listen} --token {TOKEN_S1} --name s1"
    );
    let mut sampler = ibsim::run_on("two-switches.net", &[])
        .args(["bash", "-c", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The collector starts once the sampler has printed its first sweep, which it could
    // not post.
    let mut out = std::io::BufReader::new(sampler.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    assert!(first.starts_with("{\"sweep\":1"), "{first}");
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("s1 {TOKEN_S1}\n")).unwrap();
    let _c = Collector::start_on(&pg, &tokens, &listen, &[]);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let o = sampler.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let printed = 1 + rest.lines().count() as i64;
    assert!(printed >= 10, "{printed} sweeps in 3 s at 5 Hz: {err}");
    assert_eq!(pg.count("fabric_sweeps"), printed, "{err}");
    assert_eq!(pg.count("fabric_port_deltas"), 8 * (printed - 1), "{err}");
    assert!(
        err.contains("collector unreachable, 1 sweeps kept, sampling goes on"),
        "{err}"
    );
    assert!(err.contains("collector reachable again"), "{err}");
}

#[test]
fn the_sweep_bench_stores_what_it_reports() {
    let dir = temp_dir("collector-fabric-bench");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let url = pg.url();
    let args = [
        "bench",
        "sweeps",
        "--database",
        &url,
        "--samplers",
        "2",
        "--ports",
        "72",
        "--duration",
        "2s",
        "--run-clients",
        "2",
        "--run-hosts",
        "5",
        "--format",
        "json",
    ];
    let o = common::hostping(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let b: Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_eq!(b["simulated"], true);
    let phases = b["phases"].as_array().unwrap();
    // Paced: one sweep a second per sampler, 2 s.
    assert!(
        (2..=6).contains(&phases[0]["sweeps"].as_u64().unwrap()),
        "{b}"
    );
    let sweeps: u64 = phases.iter().map(|p| p["sweeps"].as_u64().unwrap()).sum();
    let deltas: u64 = phases
        .iter()
        .map(|p| p["port_deltas"].as_u64().unwrap())
        .sum();
    assert_eq!(pg.count("fabric_sweeps") as u64, sweeps);
    // Each sampler's first sweep is its 36 ports' baseline.
    assert_eq!(deltas, 36 * (sweeps - 2));
    assert_eq!(b["delta_rows"].as_u64(), Some(deltas));
    assert_eq!(b["queries"][0]["work"], "12 ports");
    // The run load: alone, then beside the paced sweeps; every run it counts is stored.
    let loads = b["run_load"].as_array().unwrap();
    let names: Vec<&str> = loads.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alone", "with paced sweeps"], "{b}");
    let runs: u64 = loads.iter().map(|l| l["runs"].as_u64().unwrap()).sum();
    assert!(loads.iter().all(|l| l["runs"].as_u64() > Some(0)), "{b}");
    assert_eq!(pg.count("runs") as u64, runs, "{b}");
    // A database holding sweeps is refused.
    let again = common::hostping(&args);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already holds runs or sweeps"),
        "{}",
        stderr(&again)
    );
}
