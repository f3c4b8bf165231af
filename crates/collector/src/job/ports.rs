//! The switch ports' counters over the job's window and over as long a window just
//! before it, from the sweeps the samplers posted ([`crate::fabric::store::window`]),
//! each port marked when the job's routes cross it and named by its cable (so read only
//! where the routes are known).

use super::query::Window;
use super::routes::JobRoutes;
use crate::fabric::ports::{PortSums, PortsQuery};
use crate::fabric::store;
use model::job::JobPort;
use model::switch_port::{guid_text, SwitchPortCounters};
use std::collections::BTreeMap;
use tokio_postgres::GenericClient;

/// Every port with deltas in the window, by name (`<switch>/<port>`, the switch by its
/// description as its sampler sent it, else its GUID).
pub async fn ports(
    client: &impl GenericClient,
    window: Window,
    routes: &JobRoutes,
) -> Result<Vec<JobPort>, tokio_postgres::Error> {
    let during = sums(client, window).await?;
    let mut before = sums(client, window.before()).await?;
    Ok(during
        .into_iter()
        .map(|(port, now)| {
            let earlier = before.remove(&port);
            JobPort {
                cable: routes.cable_of(&port),
                on_job_route: routes.on_route(&port),
                during: counters(&now),
                during_s: seconds(&now),
                before_s: earlier.as_ref().map_or(0.0, seconds),
                read_now_s: 0.0,
                before: earlier.as_ref().map(counters),
                port,
            }
        })
        .collect())
}

/// Each port's sums over `window`: where two samplers read one port, the one whose reads
/// cover the longer time.
async fn sums(
    client: &impl GenericClient,
    window: Window,
) -> Result<BTreeMap<String, PortSums>, tokio_postgres::Error> {
    let query = PortsQuery {
        since_unix_ms: window.since_s * 1000,
        until_unix_ms: window.until_s * 1000,
        ports: None,
    };
    let mut by_name: BTreeMap<String, PortSums> = BTreeMap::new();
    for sums in store::window(client, &query).await? {
        let name = format!(
            "{}/{}",
            sums.switch.clone().unwrap_or_else(|| guid_text(sums.guid)),
            sums.port
        );
        match by_name.get(&name) {
            Some(kept) if kept.interval_ns >= sums.interval_ns => {}
            _ => {
                by_name.insert(name, sums);
            }
        }
    }
    Ok(by_name)
}

fn seconds(sums: &PortSums) -> f64 {
    sums.interval_ns as f64 / 1e9
}

fn counters(sums: &PortSums) -> SwitchPortCounters {
    SwitchPortCounters::from_values(sums.deltas)
}
