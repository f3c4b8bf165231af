//! The hardware monitor's view of a real host, as far as a one-shot check needs it
//! (Hostping 4.2): each RNIC's receive throughput, from the PMA counter
//! `ports/<p>/counters/port_rcv_data` (Documentation/ABI/stable/sysfs-class-infiniband)
//! sampled twice over [`WINDOW`]. The value counts 4-byte words ("octets divided by 4",
//! IBA PortCounters), so it is multiplied by 4.
//!
//! What is not read is `None`, never zero: rxe has no `counters/` directory; a 32-bit
//! counter stuck at its maximum has saturated and says nothing about the window. GPU
//! activity and link utilisation come with the counter sources of the agent.

use crate::sysfs::{Bindings, SysRoot};
use model::{ComponentId, GpuActivity, HostSnapshot, RnicActivity};
use std::time::{Duration, Instant};

/// Sampling window: long enough that a 1 Gb/s trickle moves megabytes, short enough for
/// an interactive check.
pub const WINDOW: Duration = Duration::from_millis(200);

/// Reads RNIC counters of the bound ports under a sysfs root.
pub struct SysfsMonitor {
    root: SysRoot,
    rnics: Vec<(ComponentId, String)>,
    gpus: Vec<ComponentId>,
}

/// `port_rcv_data` of the 32-bit PortCounters table saturates at this value (IB counters
/// stick at their maximum rather than wrap: rdma-core perfquery.c).
const SATURATED_32: u64 = u32::MAX as u64;

impl SysfsMonitor {
    /// A monitor of the RNICs and GPUs in `bindings`.
    pub fn new(root: SysRoot, bindings: &Bindings) -> SysfsMonitor {
        SysfsMonitor {
            root,
            rnics: bindings
                .rnics
                .iter()
                .map(|(id, b)| {
                    (
                        id.clone(),
                        format!(
                            "sys/class/infiniband/{}/ports/{}/counters/port_rcv_data",
                            b.device, b.port
                        ),
                    )
                })
                .collect(),
            gpus: bindings.gpus.iter().map(|(id, _)| id.clone()).collect(),
        }
    }

    fn read_all(&self) -> Vec<Option<u64>> {
        self.rnics
            .iter()
            .map(|(_, rel)| {
                std::fs::read_to_string(self.root.path(rel))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .filter(|&v| v != SATURATED_32)
            })
            .collect()
    }

    /// One snapshot; sleeps for [`WINDOW`] when some counter can be read.
    pub fn snapshot(&mut self) -> HostSnapshot {
        let before = self.read_all();
        let mut throughput = vec![None; before.len()];
        if before.iter().any(Option::is_some) {
            let t0 = Instant::now();
            std::thread::sleep(WINDOW);
            let after = self.read_all();
            let secs = t0.elapsed().as_secs_f64();
            for (i, (b, a)) in before.iter().zip(&after).enumerate() {
                if let (Some(b), Some(a)) = (b, a) {
                    // A counter reset between the reads (a < b) gives no reading.
                    throughput[i] = a
                        .checked_sub(*b)
                        .map(|words| words as f64 * 4.0 * 8.0 / secs / 1e9);
                }
            }
        }
        HostSnapshot {
            at_ns: 0,
            rnics: self
                .rnics
                .iter()
                .zip(throughput)
                .map(|((id, _), throughput_gbps)| RnicActivity {
                    id: id.clone(),
                    throughput_gbps,
                    tx_pause_ratio: None,
                    drops: None,
                })
                .collect(),
            gpus: self
                .gpus
                .iter()
                .map(|id| GpuActivity {
                    id: id.clone(),
                    busy: None,
                })
                .collect(),
            links: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysfs::{LinkLayer, RnicBinding};

    fn binding(device: &str) -> RnicBinding {
        RnicBinding {
            device: device.into(),
            port: 1,
            gid_index: None,
            link_layer: LinkLayer::InfiniBand,
            lid: Some(1),
            software: false,
        }
    }

    #[test]
    fn throughput_comes_from_the_counter_delta_and_absent_or_saturated_counters_are_none() {
        let dir = std::env::temp_dir().join(format!("hostping-monitor-{}", std::process::id()));
        let counter = |dev: &str| {
            dir.join(format!(
                "sys/class/infiniband/{dev}/ports/1/counters/port_rcv_data"
            ))
        };
        for dev in ["mlx5_0", "mlx5_1"] {
            std::fs::create_dir_all(counter(dev).parent().unwrap()).unwrap();
        }
        std::fs::write(counter("mlx5_0"), "1000\n").unwrap();
        std::fs::write(counter("mlx5_1"), format!("{}\n", u32::MAX)).unwrap();
        let bindings = Bindings {
            rnics: vec![
                ("rnic0".into(), binding("mlx5_0")),
                ("rnic1".into(), binding("mlx5_1")),
                ("rnic2".into(), binding("rxe0")),
            ],
            memory: vec![],
            gpus: vec![],
        };
        let mut monitor = SysfsMonitor::new(SysRoot::new(&dir), &bindings);
        // 125 M words of 4 bytes = 4 Gb moved during the window.
        let writer = {
            let path = counter("mlx5_0");
            std::thread::spawn(move || {
                std::thread::sleep(WINDOW / 4);
                std::fs::write(path, format!("{}\n", 1000 + 125_000_000u64)).unwrap();
            })
        };
        let s = monitor.snapshot();
        writer.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let gbps = s.rnics[0].throughput_gbps.expect("read");
        let window = WINDOW.as_secs_f64();
        // The window is at least WINDOW long, so at most 4 Gb / WINDOW.
        assert!(
            gbps <= 4.0 / window + 1e-9 && gbps > 4.0 / (window * 3.0),
            "{gbps}"
        );
        assert_eq!(s.rnics[1].throughput_gbps, None, "saturated 32-bit counter");
        assert_eq!(s.rnics[2].throughput_gbps, None, "rxe has no counters/");
    }
}
