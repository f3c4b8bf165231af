//! A real Prometheus server (Debian's `prometheus` package) for tests: one target scraped
//! every second, instant queries through its HTTP API, killed on drop.

use super::http_get;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Whether `prometheus` is on PATH. Without it the caller skips (with a message), unless
/// `HOSTPING_REQUIRE_PROMETHEUS` is set, as `./test.sh` does after installing it.
pub fn have_prometheus() -> bool {
    super::have_debian_binary("prometheus", "prometheus", "HOSTPING_REQUIRE_PROMETHEUS")
}

/// A Prometheus server scraping one target every second, its data under `dir`.
pub struct Prometheus {
    child: Child,
    pub addr: SocketAddr,
}

impl Prometheus {
    pub fn start(dir: &Path, target: SocketAddr) -> Prometheus {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: hostping\n    \
                 static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Prometheus { child, addr }
    }

    /// The result vector of an instant query; empty until Prometheus is ready (its API
    /// answers 503 until its TSDB has opened; `/-/ready` says when).
    pub fn query(&self, q: &str) -> Vec<Value> {
        if std::net::TcpStream::connect(self.addr).is_err()
            || http_get(self.addr, "/-/ready").0 != 200
        {
            return Vec::new();
        }
        let encoded: String = q
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (code, body) = http_get(self.addr, &format!("/api/v1/query?query={encoded}"));
        assert_eq!(code, 200, "{q}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{q}: {body}");
        v["data"]["result"].as_array().unwrap().clone()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
