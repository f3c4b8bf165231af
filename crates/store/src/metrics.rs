//! The Prometheus exposition (series table in the crate doc).

use crate::sweeps::FabricSweep;
use crate::switch_metrics::{SwitchInfo, SwitchPortMetrics, UplinkInfo};
use model::{HostSnapshot, LinkStatus, PathStatus, Report};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

/// The content type of [`Metrics::encode`]'s output (OpenMetrics text 1.0.0).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What the agent did with a trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TriggerOutcome {
    /// A probe run followed.
    Probed,
    /// Dropped: the previous run was too recent.
    RateLimited,
    /// Dropped: the host was too busy to probe.
    SkippedBusy,
}

impl TriggerOutcome {
    /// The `outcome` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerOutcome::Probed => "probed",
            TriggerOutcome::RateLimited => "rate_limited",
            TriggerOutcome::SkippedBusy => "skipped_busy",
        }
    }
}

/// Link statuses in the order of the `hostping_link_status` state set.
const LINK_STATUSES: [LinkStatus; 4] = [
    LinkStatus::Normal,
    LinkStatus::Abnormal,
    LinkStatus::Gray,
    LinkStatus::Uncertain,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PathLabels {
    rnic: String,
    endpoint: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LinkLabels {
    link: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LinkStatusLabels {
    link: String,
    kind: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DiagnosisLabels {
    cause: String,
    links: String,
    rnic: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    trigger: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerOutcomeLabels {
    trigger: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RnicLabels {
    rnic: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The agent's metric series, in a `prometheus-client` registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    path_bandwidth: Family<PathLabels, FloatGauge>,
    path_latency: Family<PathLabels, FloatGauge>,
    path_abnormal: Family<PathLabels, Gauge>,
    path_failed: Family<PathLabels, Gauge>,
    link_status: Family<LinkStatusLabels, Gauge>,
    link_abnormal_count: Family<LinkLabels, Gauge>,
    link_utilisation: Family<LinkLabels, FloatGauge>,
    diagnosis_active: Family<DiagnosisLabels, Gauge>,
    diagnoses_total: Family<CauseLabels, Counter>,
    runs_total: Family<TriggerLabels, Counter>,
    triggers_total: Family<TriggerOutcomeLabels, Counter>,
    run_duration: Histogram,
    rnic_throughput: Family<RnicLabels, FloatGauge>,
    rnic_tx_pause_ratio: Family<RnicLabels, FloatGauge>,
    last_run_healthy: Gauge,
    host_inconclusive: Gauge,
    last_run_timestamp: FloatGauge,
    cpu_seconds: Counter<f64, AtomicU64>,
    resident_memory: Gauge,
    duty_cycle: FloatGauge,
    store_errors: Counter,
    /// Registered on the first sweep or topology: without `[fabric]` nothing changes.
    switch_ports: Option<SwitchPortMetrics>,
    /// Registered on the first outbox observation: only an agent with `--collector`.
    outbox: Option<OutboxMetrics>,
}

/// The delivery of runs to the fleet collector.
#[derive(Debug)]
struct OutboxMetrics {
    queued: Gauge,
    sent: Counter,
    dropped: Counter,
}

impl OutboxMetrics {
    fn register(registry: &mut Registry) -> OutboxMetrics {
        let m = OutboxMetrics {
            queued: Gauge::default(),
            sent: Counter::default(),
            dropped: Counter::default(),
        };
        registry.register(
            "hostping_outbox_runs",
            "Runs waiting in the outbox for the fleet collector",
            m.queued.clone(),
        );
        registry.register(
            "hostping_outbox_sent",
            "Runs the fleet collector acknowledged",
            m.sent.clone(),
        );
        registry.register(
            "hostping_outbox_dropped",
            "Runs dropped unsent: pushed out of a full outbox, or refused by the collector as outside the contract",
            m.dropped.clone(),
        );
        m
    }
}

impl Metrics {
    /// Registers every series; `hostping_agent_info{host,provenance,version}` carries the
    /// identity of the agent.
    pub fn new(host: &str, provenance: &str) -> Metrics {
        let mut registry = Registry::default();
        registry.register(
            "hostping_agent",
            "The agent: host model, provenance (measured or simulated) and version",
            Info::new(vec![
                ("host".to_string(), host.to_string()),
                ("provenance".to_string(), provenance.to_string()),
                ("version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
            ]),
        );
        let m = Metrics {
            registry,
            path_bandwidth: Family::default(),
            path_latency: Family::default(),
            path_abnormal: Family::default(),
            path_failed: Family::default(),
            link_status: Family::default(),
            link_abnormal_count: Family::default(),
            link_utilisation: Family::default(),
            diagnosis_active: Family::default(),
            diagnoses_total: Family::default(),
            runs_total: Family::default(),
            triggers_total: Family::default(),
            // 10 ms .. 82 s.
            run_duration: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            rnic_throughput: Family::default(),
            rnic_tx_pause_ratio: Family::default(),
            last_run_healthy: Gauge::default(),
            host_inconclusive: Gauge::default(),
            last_run_timestamp: FloatGauge::default(),
            cpu_seconds: Counter::default(),
            resident_memory: Gauge::default(),
            duty_cycle: FloatGauge::default(),
            store_errors: Counter::default(),
            switch_ports: None,
            outbox: None,
        };
        m.register_all()
    }

    fn register_all(mut self) -> Metrics {
        let r = &mut self.registry;
        r.register(
            "hostping_path_bandwidth_gbps",
            "Bandwidth of each path probed by the latest run, Gb/s",
            self.path_bandwidth.clone(),
        );
        r.register(
            "hostping_path_latency_us",
            "Small-message median latency of each path probed by the latest run, us",
            self.path_latency.clone(),
        );
        r.register(
            "hostping_path_abnormal",
            "1 if the latest run judged the path abnormal",
            self.path_abnormal.clone(),
        );
        r.register(
            "hostping_path_failed",
            "1 if the probe of the path failed in the latest run",
            self.path_failed.clone(),
        );
        r.register(
            "hostping_link_status",
            "Link status after tomography in the latest run: 1 for the current status",
            self.link_status.clone(),
        );
        r.register(
            "hostping_link_abnormal_count",
            "How many RNICs marked the link abnormal in the latest run",
            self.link_abnormal_count.clone(),
        );
        r.register(
            "hostping_link_utilisation",
            "Link utilisation in the latest monitor snapshot, 0..1",
            self.link_utilisation.clone(),
        );
        r.register(
            "hostping_diagnosis_active",
            "1 for each diagnosis of the latest run",
            self.diagnosis_active.clone(),
        );
        r.register(
            "hostping_diagnoses",
            "Diagnoses made, by cause",
            self.diagnoses_total.clone(),
        );
        r.register(
            "hostping_runs",
            "Probe runs, by trigger",
            self.runs_total.clone(),
        );
        r.register(
            "hostping_triggers",
            "Triggers, by what the agent did with them",
            self.triggers_total.clone(),
        );
        r.register(
            "hostping_run_duration_seconds",
            "Probe and analysis time of a run on the engine clock",
            self.run_duration.clone(),
        );
        r.register(
            "hostping_rnic_throughput_gbps",
            "RNIC service throughput in the latest monitor snapshot, Gb/s",
            self.rnic_throughput.clone(),
        );
        r.register(
            "hostping_rnic_tx_pause_ratio",
            "Fraction of time the RNIC paused its upstream port in the latest snapshot",
            self.rnic_tx_pause_ratio.clone(),
        );
        r.register(
            "hostping_last_run_healthy",
            "1 if the latest run found nothing wrong",
            self.last_run_healthy.clone(),
        );
        r.register(
            "hostping_host_inconclusive",
            "1 if the latest run could not judge some link, so the host cannot be called healthy",
            self.host_inconclusive.clone(),
        );
        r.register(
            "hostping_last_run_timestamp_seconds",
            "Wall clock when the latest run was observed, seconds since the Unix epoch",
            self.last_run_timestamp.clone(),
        );
        r.register(
            "hostping_agent_cpu_seconds",
            "CPU time the agent used",
            self.cpu_seconds.clone(),
        );
        r.register(
            "hostping_agent_resident_memory_bytes",
            "Resident memory of the agent",
            self.resident_memory.clone(),
        );
        r.register(
            "hostping_agent_probe_duty_cycle",
            "Fraction of time the agent spent probing",
            self.duty_cycle.clone(),
        );
        r.register(
            "hostping_store_errors",
            "Runs the agent failed to store",
            self.store_errors.clone(),
        );
        self
    }

    /// Records a run observed now (see [`Metrics::observe_run_at`]).
    pub fn observe_run(&mut self, trigger: &str, report: &Report, duration_ns: u64) {
        let now_ms = model::time::unix_ms(SystemTime::now());
        self.observe_run_at(trigger, report, duration_ns, now_ms);
    }

    /// Records a run observed at `at_unix_ms`: the path, link and diagnosis series are
    /// replaced by this run's; the counters and the histogram grow.
    pub fn observe_run_at(
        &mut self,
        trigger: &str,
        report: &Report,
        duration_ns: u64,
        at_unix_ms: i64,
    ) {
        for family in [&self.path_bandwidth, &self.path_latency] {
            family.clear();
        }
        for family in [&self.path_abnormal, &self.path_failed] {
            family.clear();
        }
        for p in &report.paths {
            let labels = PathLabels {
                rnic: p.rnic.to_string(),
                endpoint: p.endpoint.to_string(),
            };
            if let Some(bw) = p.bandwidth_gbps {
                self.path_bandwidth.get_or_create(&labels).set(bw);
            }
            if let Some(lat) = p.latency_us {
                self.path_latency.get_or_create(&labels).set(lat);
            }
            let abnormal = p.status == PathStatus::Abnormal;
            self.path_abnormal
                .get_or_create(&labels)
                .set(i64::from(abnormal));
            self.path_failed
                .get_or_create(&labels)
                .set(i64::from(p.error.is_some()));
        }

        self.link_status.clear();
        self.link_abnormal_count.clear();
        for l in &report.links {
            let kind = l.kind.as_str();
            for status in LINK_STATUSES {
                let labels = LinkStatusLabels {
                    link: l.id.to_string(),
                    kind: kind.to_owned(),
                    status: status.as_str().to_owned(),
                };
                self.link_status
                    .get_or_create(&labels)
                    .set(i64::from(status == l.status));
            }
            self.link_abnormal_count
                .get_or_create(&LinkLabels {
                    link: l.id.to_string(),
                })
                .set(i64::from(l.abnormal_cnt));
        }

        self.diagnosis_active.clear();
        for d in &report.diagnoses {
            let links: Vec<&str> = d.links.iter().map(|l| l.as_str()).collect();
            let labels = DiagnosisLabels {
                cause: d.cause.as_str().to_string(),
                links: links.join(","),
                rnic: d.rnic.as_ref().map_or(String::new(), |r| r.to_string()),
            };
            self.diagnosis_active.get_or_create(&labels).set(1);
            self.diagnoses_total
                .get_or_create(&CauseLabels {
                    cause: d.cause.as_str().to_string(),
                })
                .inc();
        }

        self.runs_total
            .get_or_create(&TriggerLabels {
                trigger: trigger.to_string(),
            })
            .inc();
        self.run_duration.observe(duration_ns as f64 / 1e9);
        self.last_run_healthy.set(i64::from(report.healthy));
        self.host_inconclusive.set(i64::from(report.inconclusive));
        self.last_run_timestamp.set(at_unix_ms as f64 / 1e3);
    }

    /// Counts a trigger and what the agent did with it.
    pub fn observe_trigger(&mut self, trigger: &str, outcome: TriggerOutcome) {
        self.triggers_total
            .get_or_create(&TriggerOutcomeLabels {
                trigger: trigger.to_string(),
                outcome: outcome.as_str().to_string(),
            })
            .inc();
    }

    /// Replaces the RNIC and link-utilisation series by this snapshot's; a value the
    /// monitor did not read has no series.
    pub fn observe_snapshot(&mut self, snapshot: &HostSnapshot) {
        self.rnic_throughput.clear();
        self.rnic_tx_pause_ratio.clear();
        for r in &snapshot.rnics {
            let labels = RnicLabels {
                rnic: r.id.to_string(),
            };
            if let Some(v) = r.throughput_gbps {
                self.rnic_throughput.get_or_create(&labels).set(v);
            }
            if let Some(v) = r.tx_pause_ratio {
                self.rnic_tx_pause_ratio.get_or_create(&labels).set(v);
            }
        }
        self.link_utilisation.clear();
        for l in &snapshot.links {
            if let Some(u) = l.utilisation {
                self.link_utilisation
                    .get_or_create(&LinkLabels {
                        link: l.id.to_string(),
                    })
                    .set(u);
            }
        }
    }

    /// The agent's own cost. `cpu_seconds` and `store_errors` are totals since the agent
    /// started (the counters follow them and never go back); `duty_cycle` is 0..1.
    pub fn observe_self(
        &mut self,
        cpu_seconds: f64,
        resident_bytes: u64,
        duty_cycle: f64,
        store_errors: u64,
    ) {
        let cpu_delta = cpu_seconds - self.cpu_seconds.get();
        if cpu_delta > 0.0 {
            self.cpu_seconds.inc_by(cpu_delta);
        }
        let errors_delta = store_errors.saturating_sub(self.store_errors.get());
        if errors_delta > 0 {
            self.store_errors.inc_by(errors_delta);
        }
        self.resident_memory
            .set(i64::try_from(resident_bytes).unwrap_or(i64::MAX));
        self.duty_cycle.set(duty_cycle);
    }

    fn switch_ports(&mut self) -> &mut SwitchPortMetrics {
        let registry = &mut self.registry;
        self.switch_ports
            .get_or_insert_with(|| SwitchPortMetrics::register(registry))
    }

    /// Replaces the switch-port series by this sweep's (see [`crate::switch_metrics`]).
    pub fn observe_sweep(&mut self, sweep: &FabricSweep) {
        self.switch_ports().observe_sweep(sweep);
    }

    /// Counts a sweep that could not be sent at all; the series of the previous sweep stay.
    pub fn observe_failed_sweep(&mut self) {
        self.switch_ports().observe_failed_sweep();
    }

    /// Counts a sweep that could not be stored (it is still published).
    pub fn observe_sweep_store_error(&mut self) {
        self.switch_ports().observe_store_error();
    }

    /// Replaces `infiniband_switch_info` and `infiniband_switch_uplink_info` by these.
    pub fn observe_switches(&mut self, switches: &[SwitchInfo], uplinks: &[UplinkInfo]) {
        self.switch_ports().observe_topology(switches, uplinks);
    }

    fn outbox(&mut self) -> &OutboxMetrics {
        let registry = &mut self.registry;
        self.outbox
            .get_or_insert_with(|| OutboxMetrics::register(registry))
    }

    /// The outbox to the fleet collector: runs waiting now, and runs acknowledged since the
    /// last call (added to the counter).
    pub fn observe_outbox(&mut self, queued: u64, sent: u64) {
        let m = self.outbox();
        m.queued.set(i64::try_from(queued).unwrap_or(i64::MAX));
        m.sent.inc_by(sent);
    }

    /// Runs dropped unsent since the last call.
    pub fn observe_outbox_dropped(&mut self, dropped: u64) {
        self.outbox().dropped.inc_by(dropped);
    }

    /// The OpenMetrics text exposition, `# EOF` included (serve it as [`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; the encoder only propagates the writer's errors.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
