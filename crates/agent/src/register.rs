//! Tells the collector where this agent's API listens, which RNICs it probes from and their
//! device names (`PUT /api/hosts/{host}/agent` with the host's token, DESIGN 4.5's rules),
//! so that the collector can ask it for pair probes (`POST /api/mesh`), and what the host's
//! links allow a job's collectives (the job verdict's `expected`). Done once at start
//! on a thread of its own, tried again with a growing wait (as runs are) until the collector
//! takes it or the agent stops.

use crate::Control;
use fleet_api::post::{FIRST_BACKOFF, MAX_BACKOFF};
use fleet_api::register::AgentRegistration;
use std::sync::Arc;

/// What the agent registers.
pub struct Registration {
    /// The collector's base URL.
    pub collector: String,
    /// This host's collector token.
    pub token: String,
    /// This host's fleet name.
    pub host: String,
    /// Where this agent's API is reached (`--advertise`).
    pub url: String,
    /// The RNIC ids a pair probe may name (`rnic0`..).
    pub rnics: Vec<String>,
    /// Their RDMA devices (`mlx5_0`), in the same order, by which a collector with the
    /// fabric's cabling finds them on it; none on a simulated host.
    pub devices: Vec<String>,
    /// What the host's links allow a job's communicators (`verdict::job::expected_busbw` on
    /// its model); unknown on a host without a model.
    pub expected_busbw_gbs: model::job::ExpectedBusBandwidth,
    /// What an https:// collector's certificate is checked against.
    pub tls: ureq::tls::TlsConfig,
}

/// The default `--advertise`: `http://` the listen address, or this host's name where the
/// agent listens on every address.
pub fn default_url(listen: std::net::SocketAddr, hostname: &str) -> String {
    if listen.ip().is_unspecified() {
        format!("http://{hostname}:{}", listen.port())
    } else {
        format!("http://{listen}")
    }
}

/// Registers on a thread until done or stopped; each outcome is one line of `log`.
pub fn start(
    registration: Registration,
    control: Arc<Control>,
    log: fn(&str),
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let client = fleet_api::post::client(registration.tls.clone());
        let mut wait = FIRST_BACKOFF;
        loop {
            match put(&client, &registration) {
                Ok(()) => {
                    log(&format!(
                        "registered {} ({}) with {} as {}",
                        registration.url,
                        registration.rnics.join(" "),
                        registration.collector,
                        registration.host
                    ));
                    return;
                }
                Err(why) => log(&format!(
                    "registering with the collector: {why}; again in {} ms",
                    wait.as_millis()
                )),
            }
            if control.sleep(wait) {
                return;
            }
            wait = (wait * 2).min(MAX_BACKOFF);
        }
    })
}

/// One `PUT /api/hosts/{host}/agent`.
fn put(client: &ureq::Agent, r: &Registration) -> Result<(), String> {
    let url = format!(
        "{}/api/hosts/{}/agent",
        r.collector.trim_end_matches('/'),
        r.host
    );
    let body = AgentRegistration {
        url: r.url.clone(),
        rnics: r.rnics.clone(),
        devices: r.devices.clone(),
        expected_busbw_gbs: r.expected_busbw_gbs,
    };
    let body = serde_json::to_vec(&body).map_err(|e| format!("{url}: {e}"))?;
    let mut answer = client
        .put(&url)
        .header("Authorization", format!("Bearer {}", r.token))
        .header("Content-Type", "application/json")
        .send(&body[..])
        .map_err(|e| format!("{url}: {e}"))?;
    if answer.status().is_success() {
        return Ok(());
    }
    let text = answer
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    Err(format!("{} from {url}: {}", answer.status(), text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_url_is_the_listen_address_or_the_hostname() {
        assert_eq!(
            default_url("0.0.0.0:9469".parse().unwrap(), "node01"),
            "http://node01:9469"
        );
        assert_eq!(
            default_url("10.0.0.7:9500".parse().unwrap(), "node01"),
            "http://10.0.0.7:9500"
        );
        assert_eq!(
            default_url("[::]:9469".parse().unwrap(), "node01"),
            "http://node01:9469"
        );
    }
}
