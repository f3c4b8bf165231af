/*!
Run history (and switch-port sweeps) in SQLite, and the Prometheus exposition of the
hostping agent.

The agent (crate `hostping`) probes, analyzes and then hands each run to this crate twice:
[`Store::insert_run`] keeps it, [`Metrics::observe_run`] exposes it. This crate **owns** the
database file and its schema (migrations, WAL, integrity), and the names and labels of the
metric series. It **must not decide health**: whether a path is abnormal, a link gray or a
run healthy is the analyzer's word, copied here verbatim from [`model::Report`]. It never
probes, reads counters, or interprets a snapshot beyond copying its values.

```
let dir = tempfile::tempdir().unwrap();
let mut store = store::Store::open(&dir.path().join("runs.db")).unwrap();
assert_eq!(store.schema_version().unwrap(), store::SCHEMA_VERSION);
assert!(store.runs(&store::RunQuery::default()).unwrap().is_empty());
# let _ = &mut store;
```

# Store

One SQLite file, opened by one writer ([`Store::open`]: `journal_mode=WAL`,
`synchronous=NORMAL`, a busy timeout) and any number of readers
([`Store::open_read_only`], for the HTTP API). Each run is one transaction, so a run is
either entirely present or absent, even if the agent is killed mid-write; with WAL and
`synchronous=NORMAL` a run survives a crash of the process (only a power loss may lose the
last runs, never corrupt the file).

The schema version is `PRAGMA user_version`. [`MIGRATIONS`] is an ordered list of SQL
batches; batch *i* takes the schema from version *i* to *i + 1* and is applied in one
transaction together with the version bump. A database from a newer hostping (a version
above [`SCHEMA_VERSION`]) is refused, never touched.

## Schema (version 6)

Each run is stored twice: whole, as the JSON the agent handed in (`runs.report`,
`runs.snapshot`, `runs.counters`), which is what [`Store::run`] and
[`Store::recent_reports`] return, and normalised into rows for SQL users.

| table | column | type | meaning |
|---|---|---|---|
| `runs` | `id` | INTEGER PK AUTOINCREMENT | run id (never reused) |
| | `started_unix_ms` | INTEGER | wall clock at the start of the run |
| | `clock_ns`, `duration_ns` | INTEGER | engine clock at the start; probe + analysis time |
| | `trigger`, `trigger_detail` | TEXT | `idle`, `pfc`, `drops`, `manual`, ...; why |
| | `host`, `mode`, `provenance` | TEXT | from the report (`dgx-a100`, `idle`/`busy`, `measured`/`simulated`) |
| | `healthy` | INTEGER 0/1 | the report's verdict |
| | `inconclusive` | INTEGER 0/1 | some link could not be judged (DESIGN 4.3; v6, 0 for older runs) |
| | `snapshot` | TEXT (JSON) | the monitor snapshot that triggered the run |
| | `report` | TEXT (JSON) | the full [`model::Report`] |
| | `counters` | TEXT (JSON) or NULL | full counter snapshot, when read (v2) |
| `paths` | `run_id`, `idx` | INTEGER, PK | run, position in `report.paths` |
| | `rnic`, `endpoint` | TEXT | the path |
| | `latency_us`, `bandwidth_gbps` | REAL or NULL | NULL when not measured |
| | `status` | TEXT | `normal` / `abnormal` / `uncertain` |
| | `error` | TEXT or NULL | why the probe failed; a path is *failed* iff this is set |
| `links` | `run_id`, `idx` | INTEGER, PK | run, position in `report.links` |
| | `id` | TEXT | link id (`rnic0--lsw0`) |
| | `kind`, `status` | TEXT | `rnic_pcie` ...; `normal` / `abnormal` / `gray` / `uncertain` |
| | `abnormal_cnt` | INTEGER | RNICs that marked it abnormal |
| | `utilisation` | REAL or NULL | from the bus monitor, if read |
| `diagnoses` | `run_id`, `idx` | INTEGER, PK | run, position in `report.diagnoses` |
| | `cause` | TEXT | `link_failure`, ... |
| | `links` | TEXT (JSON array) | implicated links |
| | `rnic` | TEXT or NULL | for RNIC settings |
| | `evidence` | TEXT | the analyzer's words |

| `fabric_sweeps` | `id` | INTEGER PK AUTOINCREMENT | sweep row id (v3) |
| | `sweep` | INTEGER | the sampler's own sweep number, from 1 per agent start |
| | `start_unix_ns` | INTEGER | when the sweep's first query left |
| | `spread_us` | REAL | first query's start to last answer |
| | `sampler` | TEXT | who sampled (host name or `fabric.sampler`) |
| `fabric_ports` | `sweep_id`, `idx` | INTEGER, PK | sweep, position in the sampler's port list |
| | `guid` | TEXT | switch node GUID, `0x` and 16 hex digits |
| | `lid`, `port` | INTEGER | switch LID, port number |
| | `at_unix_ns` | INTEGER | when its answer arrived (0: none did) |
| | `xmit_data_bytes`, `rcv_data_bytes`, `xmit_pkts`, `rcv_pkts`, `xmit_wait`, `symbol_errors`, `link_downed`, `rcv_errors`, `xmit_discards` | INTEGER or NULL | the switch's totals; all NULL when the port did not answer |
| | `error` | TEXT or NULL | why there are no counters |
| `outbox` | `run_id` | INTEGER PK | a run not yet acknowledged by the fleet collector (v4) |
| | `queued_unix_ms` | INTEGER | the run's start |
| | `attempts`, `last_error` | INTEGER, TEXT or NULL | failed deliveries so far, and the last reason |
| `instance` | `id` | TEXT | one row: this database's instance id, 32 random hex digits made once (v5; [`Store::instance_id`]) |

Indexes: `runs(trigger, id)` (v1; trigger filter), `runs(host, id)` (v2;
[`Store::recent_reports`]), `paths(rnic, endpoint, run_id)` (v2; one path's history),
`fabric_sweeps(start_unix_ns)` (v3; retention), `fabric_ports(guid, port, sweep_id)` (v3;
one port's history). With [`Store::queue_for_collector`], [`Store::insert_run`] also queues
the run in `outbox` in its transaction and drops the oldest queued runs beyond the cap
(they stay in `runs`). Child rows reference `runs(id)` / `fabric_sweeps(id)` `ON DELETE
CASCADE`. Runs leave only by [`Store::prune_runs`] (the agent's retention: older than a
cut-off or beyond a count, a bounded batch per call); [`Store::insert_sweep`] deletes, in the sweep's
transaction, the sweeps that started more than its `keep` before it. Unsigned clocks are stored as SQLite
integers and must fit in `i64` (292 years of nanoseconds).

# Metrics

[`Metrics`] holds a `prometheus-client` registry; [`Metrics::encode`] writes the OpenMetrics
text exposition (served with [`CONTENT_TYPE`], which Prometheus 2.x scrapes natively).
The agent identity is an info metric, not labels on every series: join with
`* on(instance) group_left(host) hostping_agent_info`.

| series | type | labels | source |
|---|---|---|---|
| `hostping_agent_info` | info | `host`, `provenance`, `version` | [`Metrics::new`] |
| `hostping_path_bandwidth_gbps` | gauge | `rnic`, `endpoint` | latest run; absent if not measured |
| `hostping_path_latency_us` | gauge | `rnic`, `endpoint` | latest run; absent if not measured |
| `hostping_path_abnormal` | gauge 0/1 | `rnic`, `endpoint` | latest run: status `abnormal` |
| `hostping_path_failed` | gauge 0/1 | `rnic`, `endpoint` | latest run: the probe reported an error |
| `hostping_link_status` | gauge, state set | `link`, `kind`, `status` | latest run: 1 for the link's status, 0 for the other three |
| `hostping_link_abnormal_count` | gauge | `link` | latest run: `abnormal_cnt` |
| `hostping_link_utilisation` | gauge | `link` | latest snapshot; absent if not read |
| `hostping_diagnosis_active` | gauge 1 | `cause`, `links`, `rnic` | diagnoses of the latest run only |
| `hostping_diagnoses_total` | counter | `cause` | every diagnosis of every run |
| `hostping_runs_total` | counter | `trigger` | every run |
| `hostping_triggers_total` | counter | `trigger`, `outcome` | `probed` / `rate_limited` / `skipped_busy` |
| `hostping_run_duration_seconds` | histogram | | probe + analysis time on the engine clock |
| `hostping_rnic_throughput_gbps` | gauge | `rnic` | latest snapshot; absent if not read |
| `hostping_rnic_tx_pause_ratio` | gauge | `rnic` | latest snapshot; absent if not read |
| `hostping_last_run_healthy` | gauge 0/1 | | latest run's `healthy` |
| `hostping_host_inconclusive` | gauge 0/1 | | latest run's `inconclusive`: some link could not be judged, so the host is neither healthy nor found faulty there (DESIGN 4.3) |
| `hostping_last_run_timestamp_seconds` | gauge | | wall clock when the latest run was observed (or the time given to [`Metrics::observe_run_at`]) |
| `hostping_agent_cpu_seconds_total` | counter | | [`Metrics::observe_self`] |
| `hostping_agent_resident_memory_bytes` | gauge | | [`Metrics::observe_self`] |
| `hostping_agent_probe_duty_cycle` | gauge | | [`Metrics::observe_self`] (0..1) |
| `hostping_store_errors_total` | counter | | [`Metrics::observe_self`] |
| `hostping_outbox_runs` | gauge | | runs waiting for the fleet collector ([`Metrics::observe_outbox`]; only with `--collector`) |
| `hostping_outbox_sent_total` | counter | | runs the collector acknowledged |
| `hostping_outbox_dropped_total` | counter | | runs dropped unsent (outbox full, or refused as outside the contract) |

With a `[fabric]` sampler, [`Metrics::observe_sweep`] and [`Metrics::observe_switches`]
add the switch-port series under `treydock/infiniband_exporter`'s names
(`infiniband_switch_port_*_total{guid,port}`, `infiniband_switch_info`,
`infiniband_switch_uplink_info`) and `hostping_fabric_*` gauges; [`switch_metrics`] lists
them and cites the exporter's source. They are registered on the first sweep: an agent
without `[fabric]` exposes none of them.

Label values: `links` is the implicated link ids joined by `,` in report order; `rnic` is
empty when the diagnosis names none. Odd characters in labels are escaped (`\\`, `\"`,
`\n`) by the encoder.

**Stale series are removed, not frozen.** Every series marked *latest run* or *latest
snapshot* describes exactly the latest observation: observing a run (or snapshot) first
drops all series of its families, then sets those the new one carries. A busy-mode run
probes only affinitive paths, so the other paths' series disappear until the next idle run;
Prometheus marks them stale, and a graph shows a gap instead of an old value that looks
fresh. The values themselves remain in Prometheus' history and in the store. Likewise a
diagnosis that the latest run no longer makes is dropped from `hostping_diagnosis_active`
(alert on `hostping_diagnosis_active == 1`; it resolves when the series goes away), while
`hostping_diagnoses_total` keeps the count. Counters are never removed.
*/
#![deny(missing_docs)]

mod db;
mod metrics;
mod outbox;
mod retention;
mod schema;
mod sweeps;
pub mod switch_metrics;
mod timeline;

pub use db::{NewRun, RunQuery, RunSummary, Store, StoreError, StoredRun};
pub use metrics::{Metrics, TriggerOutcome, CONTENT_TYPE};
pub use outbox::{OutboxRun, OutboxStats};
pub use retention::RunRetention;
pub use schema::{MIGRATIONS, SCHEMA_VERSION};
pub use sweeps::{guid_text, FabricSweep, StoredSweep, SwitchPortCounters, SwitchPortSample};
pub use switch_metrics::{SwitchInfo, UplinkInfo};
pub use timeline::PathPoint;
