//! A real node_exporter (Debian's `prometheus-node-exporter` package) serving one textfile
//! folder on a free port of its own (never the system service's :9100), every other
//! collector off; killed on drop.

use super::http_get;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Where Debian installs it.
pub const BINARY: &str = "/usr/bin/prometheus-node-exporter";

/// Whether the binary is there. Without it the caller skips (with a message), unless
/// `HOSTPING_REQUIRE_NODE_EXPORTER` is set, as `./test.sh` does after installing it.
pub fn have_node_exporter() -> bool {
    super::have_debian_binary(
        BINARY,
        "prometheus-node-exporter",
        "HOSTPING_REQUIRE_NODE_EXPORTER",
    )
}

/// node_exporter serving the `.prom` files of one folder.
pub struct NodeExporter {
    child: Child,
    pub addr: SocketAddr,
}

impl NodeExporter {
    /// Starts it on a free port, once its /metrics answers (within 30 s).
    pub fn start(textfiles: &Path) -> NodeExporter {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let child = Command::new(BINARY)
            .arg(format!("--web.listen-address={addr}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!(
                "--collector.textfile.directory={}",
                textfiles.display()
            ))
            .arg("--web.disable-exporter-metrics")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let exporter = NodeExporter { child, addr };
        super::wait_until("node_exporter's /metrics", Duration::from_secs(30), || {
            std::net::TcpStream::connect(addr).is_ok() && http_get(addr, "/metrics").0 == 200
        });
        exporter
    }

    /// Its /metrics page.
    pub fn metrics(&self) -> String {
        http_get(self.addr, "/metrics").1
    }
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
