//! The PromQL of packaging/grafana/hostping-dashboard.json, with Grafana's variables given
//! the values Grafana would give them, to run against a real Prometheus.

use serde_json::Value;
use std::path::Path;

/// The title of the dashboard row whose panels need a `[fabric]` sampler's switch-port
/// sweeps (run under ibsim by agent_fabric.rs); every other row needs a plain agent.
pub const SWITCH_PORT_ROW: &str = "InfiniBand switch ports ([fabric] samplers)";

/// One query of one panel.
#[derive(Debug, Clone)]
pub struct PanelQuery {
    /// The row the panel lies in.
    pub row: String,
    pub panel: String,
    /// As Grafana sends it: `$instance` is "All" (the variable's allValue) and
    /// `$__rate_interval` is 1m (four scrapes at Grafana's default 15 s; the tests scrape
    /// every second).
    pub expr: String,
}

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../packaging/grafana/hostping-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The metric the `instance` variable takes its values from (`label_values(METRIC, instance)`).
pub fn instance_variable_metric() -> String {
    let d = dashboard();
    let variable = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "instance")
        .expect("the dashboard has an instance variable");
    let definition = variable["definition"].as_str().unwrap();
    let inner = definition
        .strip_prefix("label_values(")
        .and_then(|s| s.strip_suffix(", instance)"))
        .unwrap_or_else(|| panic!("unexpected variable query {definition}"));
    assert_eq!(variable["allValue"], ".+");
    inner.to_string()
}

/// Every query of every panel, in the dashboard's order.
pub fn queries() -> Vec<PanelQuery> {
    let d = dashboard();
    let all_value = ".+";
    let mut row = String::new();
    let mut out = Vec::new();
    for panel in d["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap().to_string();
        if panel["type"] == "row" {
            row = title;
            continue;
        }
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("panel {title} has a target without expr"));
            out.push(PanelQuery {
                row: row.clone(),
                panel: title.clone(),
                expr: expr
                    .replace("$__rate_interval", "1m")
                    .replace("$instance", all_value),
            });
        }
    }
    assert!(
        out.iter().all(|q| !q.expr.contains('$')),
        "a variable the tests do not give: {out:?}"
    );
    out
}
