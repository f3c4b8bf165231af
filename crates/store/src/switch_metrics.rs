//! The switch-port series of the agent's `[fabric]` sampler, under the names and labels of
//! `treydock/infiniband_exporter`, so that its recording rules and Grafana dashboards work
//! on hostping's `/metrics` unchanged.
//!
//! Source of the names and labels: `collectors/switch.go` of infiniband_exporter (releases
//! 0.1.0 to 0.9.0), `NewSwitchCollector`: the port counters are `prometheus.BuildFQName(
//! "infiniband", "switch", "port_transmit_data_bytes_total")` and so on, with the label set
//! `labels := []string{"guid", "port"}`, exposed as `CounterValue` of the switch's own
//! counter; `infiniband_switch_info` is a gauge 1 with `guid`, `switch`, `lid`; and
//! `infiniband_switch_uplink_info` a gauge 1 with `guid`, `port`, `switch`, `uplink`,
//! `uplink_guid`, `uplink_type`, `uplink_port`, `uplink_lid` (its `collectors/switch_test.go`
//! shows the exposition). The exporter's example rules (`examples/infiniband.rules`) join
//! the counters to the switch and peer names with `* on(guid,port) group_left(switch,
//! host, uplink, uplink_port) infiniband_switch_uplink_info`. The exporter's counters carry
//! no `switch` label of their own (its first release had one; 0.1.0 moved it to the info
//! series), but hostping's contract (DESIGN 4.4) gives them `switch` too, the switch's
//! NodeDescription (empty until the agent knows it): a query by switch name then needs no
//! join, and the exporter's join still works, since it matches `on(guid,port)` and
//! `group_left(switch, ...)` takes the same value from the info series.
//!
//! Of the exporter's 28 port counters these are the nine a sweep reads (DESIGN 4.4); the
//! others (unicast/multicast packets, the rarer error counters) are absent, not zero.

use crate::sweeps::{guid_text, FabricSweep};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// A switch, for `infiniband_switch_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchInfo {
    /// Node GUID.
    pub guid: u64,
    /// LID (of port 0).
    pub lid: u16,
    /// NodeDescription (the exporter's `switch` label).
    pub name: String,
}

/// What a switch port is linked to, for `infiniband_switch_uplink_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UplinkInfo {
    /// The switch's GUID.
    pub guid: u64,
    /// The switch's port.
    pub port: u8,
    /// The switch's NodeDescription.
    pub switch: String,
    /// The peer's NodeDescription.
    pub uplink: String,
    /// The peer's node GUID.
    pub uplink_guid: u64,
    /// The peer's kind as ibnetdiscover writes it: `SW`, `CA` or `RT`.
    pub uplink_type: &'static str,
    /// The peer's port.
    pub uplink_port: u8,
    /// The peer port's LID (a switch's port 0 LID); `None` when unassigned.
    pub uplink_lid: Option<u16>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PortLabels {
    guid: String,
    port: String,
}

/// The port counters' labels: the exporter's, and the switch's name (DESIGN 4.4).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CounterLabels {
    guid: String,
    port: String,
    switch: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SwitchLabels {
    guid: String,
    lid: String,
    switch: String,
}

/// In the exporter's order, which is also alphabetical.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UplinkLabels {
    guid: String,
    port: String,
    switch: String,
    uplink: String,
    uplink_guid: String,
    uplink_lid: String,
    uplink_port: String,
    uplink_type: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The counter families, in [`crate::SwitchPortCounters::fields`] order, with the
/// exporter's name (less `_total`, which the OpenMetrics encoder appends to counters) and
/// help text.
const COUNTERS: [(&str, &str); 9] = [
    (
        "infiniband_switch_port_transmit_data_bytes",
        "Infiniband switch port PortXmitData",
    ),
    (
        "infiniband_switch_port_receive_data_bytes",
        "Infiniband switch port PortRcvData",
    ),
    (
        "infiniband_switch_port_transmit_packets",
        "Infiniband switch port PortXmitPkts",
    ),
    (
        "infiniband_switch_port_receive_packets",
        "Infiniband switch port PortRcvPkts",
    ),
    (
        "infiniband_switch_port_transmit_wait",
        "Infiniband switch port PortXmitWait",
    ),
    (
        "infiniband_switch_port_symbol_error",
        "Infiniband switch port SymbolErrorCounter",
    ),
    (
        "infiniband_switch_port_link_downed",
        "Infiniband switch port LinkDownedCounter",
    ),
    (
        "infiniband_switch_port_receive_errors",
        "Infiniband switch port PortRcvErrors",
    ),
    (
        "infiniband_switch_port_transmit_discards",
        "Infiniband switch port PortXmitDiscards",
    ),
];

/// The series of the switch-port sampler, registered into the agent's registry the first
/// time the agent reports a sweep or a topology (an agent without `[fabric]` has none).
#[derive(Debug)]
pub(crate) struct SwitchPortMetrics {
    counters: [Family<CounterLabels, Counter>; 9],
    /// NodeDescription by GUID, from the latest topology, for the counters' `switch` label.
    names: HashMap<u64, String>,
    switch_info: Family<SwitchLabels, Gauge>,
    uplink_info: Family<UplinkLabels, Gauge>,
    port_error: Family<PortLabels, Gauge>,
    sweeps: Counter,
    failed_sweeps: Counter,
    store_errors: Counter,
    spread: FloatGauge,
    last_sweep: FloatGauge,
    ports_sampled: Gauge,
    ports_in_error: Gauge,
}

impl SwitchPortMetrics {
    pub(crate) fn register(r: &mut Registry) -> SwitchPortMetrics {
        let m = SwitchPortMetrics {
            counters: Default::default(),
            names: HashMap::new(),
            switch_info: Family::default(),
            uplink_info: Family::default(),
            port_error: Family::default(),
            sweeps: Counter::default(),
            failed_sweeps: Counter::default(),
            store_errors: Counter::default(),
            spread: FloatGauge::default(),
            last_sweep: FloatGauge::default(),
            ports_sampled: Gauge::default(),
            ports_in_error: Gauge::default(),
        };
        for ((name, help), family) in COUNTERS.iter().zip(&m.counters) {
            r.register(*name, *help, family.clone());
        }
        r.register(
            "infiniband_switch_info",
            "Infiniband switch information",
            m.switch_info.clone(),
        );
        r.register(
            "infiniband_switch_uplink_info",
            "Infiniband switch uplink information",
            m.uplink_info.clone(),
        );
        r.register(
            "hostping_fabric_sweeps",
            "Sweeps of the switch ports completed",
            m.sweeps.clone(),
        );
        r.register(
            "hostping_fabric_sweep_failures",
            "Sweeps that could not be sent at all (the umad port failed)",
            m.failed_sweeps.clone(),
        );
        r.register(
            "hostping_fabric_store_errors",
            "Sweeps the agent failed to store (they were still published)",
            m.store_errors.clone(),
        );
        r.register(
            "hostping_fabric_sweep_spread_seconds",
            "Latest sweep: from the start of the first query to the end of the last",
            m.spread.clone(),
        );
        r.register(
            "hostping_fabric_last_sweep_timestamp_seconds",
            "Latest sweep: when its first query left, seconds since the Unix epoch",
            m.last_sweep.clone(),
        );
        r.register(
            "hostping_fabric_ports_sampled",
            "Latest sweep: switch ports asked",
            m.ports_sampled.clone(),
        );
        r.register(
            "hostping_fabric_ports_in_error",
            "Latest sweep: switch ports that gave no counters",
            m.ports_in_error.clone(),
        );
        r.register(
            "hostping_fabric_port_error",
            "1 for each switch port that gave no counters in the latest sweep",
            m.port_error.clone(),
        );
        m
    }

    /// Replaces the port series by this sweep's: a port that did not answer loses its
    /// counter series (a gap, not a frozen value) and gets `hostping_fabric_port_error`.
    pub(crate) fn observe_sweep(&self, sweep: &FabricSweep) {
        for family in &self.counters {
            family.clear();
        }
        self.port_error.clear();
        for p in &sweep.ports {
            let labels = PortLabels {
                guid: guid_text(p.guid),
                port: p.port.to_string(),
            };
            match &p.counters {
                Some(c) => {
                    let labels = CounterLabels {
                        guid: labels.guid,
                        port: labels.port,
                        switch: self.names.get(&p.guid).cloned().unwrap_or_default(),
                    };
                    for (family, (_, value)) in self.counters.iter().zip(c.fields()) {
                        // The switch's own total, set as it is: a reset by the switch (or
                        // `perfquery -R`) shows as a counter reset, as with the exporter.
                        family
                            .get_or_create(&labels)
                            .inner()
                            .store(value, Ordering::Relaxed);
                    }
                }
                None => {
                    self.port_error.get_or_create(&labels).set(1);
                }
            }
        }
        self.sweeps.inc();
        self.spread.set(sweep.spread_us / 1e6);
        self.last_sweep.set(sweep.start_unix_ns as f64 / 1e9);
        self.ports_sampled
            .set(i64::try_from(sweep.ports.len()).unwrap_or(i64::MAX));
        self.ports_in_error
            .set(i64::try_from(sweep.ports_in_error()).unwrap_or(i64::MAX));
    }

    pub(crate) fn observe_failed_sweep(&self) {
        self.failed_sweeps.inc();
    }

    pub(crate) fn observe_store_error(&self) {
        self.store_errors.inc();
    }

    /// Replaces the info series by these.
    pub(crate) fn observe_topology(&mut self, switches: &[SwitchInfo], uplinks: &[UplinkInfo]) {
        self.names = switches.iter().map(|s| (s.guid, s.name.clone())).collect();
        self.switch_info.clear();
        for s in switches {
            self.switch_info
                .get_or_create(&SwitchLabels {
                    guid: guid_text(s.guid),
                    lid: s.lid.to_string(),
                    switch: s.name.clone(),
                })
                .set(1);
        }
        self.uplink_info.clear();
        for u in uplinks {
            self.uplink_info
                .get_or_create(&UplinkLabels {
                    guid: guid_text(u.guid),
                    port: u.port.to_string(),
                    switch: u.switch.clone(),
                    uplink: u.uplink.clone(),
                    uplink_guid: guid_text(u.uplink_guid),
                    uplink_lid: u.uplink_lid.map_or(String::new(), |l| l.to_string()),
                    uplink_port: u.uplink_port.to_string(),
                    uplink_type: u.uplink_type.to_string(),
                })
                .set(1);
        }
    }
}
