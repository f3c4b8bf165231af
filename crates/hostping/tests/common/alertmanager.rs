//! A real Alertmanager (Debian's `prometheus-alertmanager`) for tests: a minimal
//! configuration (one receiver that sends nowhere), its storage in a test folder, a free
//! port, no clustering; alerts read back through its v2 API. Killed on drop.

use super::http_get;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = "prometheus-alertmanager";

/// Whether the binary is installed. Without it the caller skips (with a message), unless
/// `HOSTPING_REQUIRE_ALERTMANAGER` is set, as `./test.sh` does after installing it.
pub fn have_alertmanager() -> bool {
    super::have_debian_binary(
        BINARY,
        "prometheus-alertmanager",
        "HOSTPING_REQUIRE_ALERTMANAGER",
    )
}

/// A running Alertmanager.
pub struct Alertmanager {
    child: Child,
    pub addr: SocketAddr,
}

impl Alertmanager {
    /// Starts one with its files under `dir`, ready (`/-/ready` answers 200) within 30 s.
    pub fn start(dir: &Path) -> Alertmanager {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let config = dir.join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: nowhere\nreceivers:\n  - name: nowhere\n",
        )
        .unwrap();
        let child = Command::new(BINARY)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            // No gossip port: one instance, nothing else bound.
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let am = Alertmanager { child, addr };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let up =
                std::net::TcpStream::connect(addr).is_ok() && http_get(addr, "/-/ready").0 == 200;
            if up {
                return am;
            }
            assert!(
                Instant::now() < deadline,
                "alertmanager not ready on {addr} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its base URL, as a policy names it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The alerts it holds as firing (`GET /api/v2/alerts`: active, silenced or inhibited;
    /// a resolved alert is not listed).
    pub fn alerts(&self) -> Vec<Value> {
        let (code, body) = http_get(self.addr, "/api/v2/alerts");
        assert_eq!(code, 200, "{body}");
        serde_json::from_str::<Value>(&body)
            .unwrap()
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
