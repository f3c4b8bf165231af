//! `hostping odp-bench` on a real device. Before any memory is registered, the device's ODP
//! capabilities are checked (`ibv_query_device_ex`): both micro-benchmarks need ODP memory as
//! the target of RDMA READ over RC. Then [`rdma::odp_bench::OdpBench`] measures the sweep's
//! points one by one, telling the caller's progress after each; a
//! point that fails stops the sweep, and the points before it still reach the reader.

use super::{OdpSweep, SweepProgress};
use model::odp_bench::{OdpBenchKind, OdpBenchReport};
use model::Provenance;
use rdma::odp_bench::{BenchError, Measured, NoOdp, OdpBench};
use rdma::sysfs::{RnicBinding, SysRoot};
use rdma::verbs::{Unavailable, Verbs, VerbsError};
use std::time::Duration;

/// Why `odp-bench` did not run (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum OdpBenchError {
    /// No libibverbs.
    #[error("odp-bench needs libibverbs: {0}")]
    NoVerbs(Unavailable),
    /// A verbs call failed (the error is in the message, not a source, so that it is
    /// printed once).
    #[error("odp-bench: {0}")]
    Verbs(VerbsError),
    /// No RDMA device, or not the one asked for.
    #[error("odp-bench: no RDMA device {wanted} (devices: {found})")]
    NoDevice {
        /// The device asked for, or `at all`.
        wanted: String,
        /// The devices there are.
        found: String,
    },
    /// The device lacks ODP READ over RC.
    #[error("odp-bench {kind}: {missing}")]
    NoOdp {
        /// The micro-benchmark.
        kind: &'static str,
        /// What is missing (in the message, not a source, so that it is printed once).
        missing: NoOdp,
    },
    /// The device is not among the usable (ACTIVE) RDMA ports sysfs shows.
    #[error("odp-bench: {device} has no ACTIVE port to connect a QP on ({detail})")]
    NoPort {
        /// The device.
        device: String,
        /// What discovery found.
        detail: String,
    },
    /// sysfs could not be read.
    #[error("odp-bench: {0}")]
    Discover(rdma::sysfs::DiscoverError),
    /// The device's port could not be opened.
    #[error("odp-bench {kind}: {error}")]
    Open {
        /// The micro-benchmark.
        kind: &'static str,
        /// Why (in the message, not a source, so that it is printed once).
        error: BenchError,
    },
    /// A point failed; the points measured before it are in `partial`, which is printed
    /// before the error.
    #[error("odp-bench {}: {error} (the {} points measured before it are printed above)", partial.kind.as_str(), partial.points.len())]
    Stopped {
        /// The report of the points measured before.
        partial: Box<OdpBenchReport>,
        /// Why the point failed.
        error: BenchError,
    },
}

impl OdpBenchError {
    /// The points measured before the run stopped, when it stopped part way.
    pub fn partial(&self) -> Option<&OdpBenchReport> {
        match self {
            OdpBenchError::Stopped { partial, .. } => Some(partial),
            _ => None,
        }
    }
}

/// Runs the micro-benchmark of `args` on the device it names (default: the first).
pub fn run(
    args: &OdpSweep,
    progress: &mut dyn FnMut(SweepProgress<'_>),
) -> Result<OdpBenchReport, OdpBenchError> {
    let kind = args.kind;
    let word = kind.as_str();
    let verbs = Verbs::load().map_err(OdpBenchError::NoVerbs)?;
    let names = verbs.device_names().map_err(OdpBenchError::Verbs)?;
    let device = match &args.device {
        Some(d) => names.iter().find(|n| *n == d),
        None => names.first(),
    }
    .cloned()
    .ok_or_else(|| OdpBenchError::NoDevice {
        wanted: args
            .device
            .clone()
            .map_or("at all".to_string(), |d| format!("`{d}`")),
        found: if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        },
    })?;
    {
        let context = verbs.open(&device).map_err(OdpBenchError::Verbs)?;
        let caps = context.odp_caps().map_err(OdpBenchError::Verbs)?;
        rdma::odp_bench::require_rc_read(&device, &caps).map_err(|missing| {
            OdpBenchError::NoOdp {
                kind: word,
                missing,
            }
        })?;
    }
    let root = SysRoot::system();
    let discovery = rdma::sysfs::discover(&root).map_err(OdpBenchError::Discover)?;
    let binding = discovery
        .bindings
        .rnics
        .iter()
        .map(|(_, b)| b)
        .find(|b| b.device == device)
        .cloned()
        .ok_or_else(|| OdpBenchError::NoPort {
            device: device.clone(),
            detail: ports_seen(&discovery),
        })?;
    let timeout = Duration::from_millis(args.timeout_ms);
    let mut bench = OdpBench::open(&verbs, &binding, root, timeout)
        .map_err(|error| OdpBenchError::Open { kind: word, error })?;
    let mut report = OdpBenchReport {
        kind,
        device: device.clone(),
        rnic: None,
        provenance: Provenance::Measured,
        points: Vec::new(),
        notes: setup_notes(&bench, &binding, kind),
    };
    let sweep: Vec<u32> = match kind {
        OdpBenchKind::Damming => args.intervals.clone(),
        OdpBenchKind::Flood => (1..=args.qps).collect(),
    };
    let mut measured = Vec::new();
    for &x in &sweep {
        progress(SweepProgress {
            device: &device,
            done: measured.len(),
            total: sweep.len(),
            at: x,
        });
        let point = match kind {
            OdpBenchKind::Damming => bench.damming(x),
            OdpBenchKind::Flood => bench.flood(x),
        };
        match point {
            Ok(m) => {
                report.points.push(m.point.clone());
                measured.push(m);
            }
            Err(error) => {
                report.notes.extend(result_notes(&bench, &measured));
                return Err(OdpBenchError::Stopped {
                    partial: Box::new(report),
                    error,
                });
            }
        }
    }
    progress(SweepProgress {
        device: &device,
        done: measured.len(),
        total: sweep.len(),
        at: 0,
    });
    report.notes.extend(result_notes(&bench, &measured));
    Ok(report)
}

/// The RDMA ports discovery saw, for the error of a device without a usable one.
fn ports_seen(discovery: &rdma::sysfs::Discovery) -> String {
    if discovery.rdma_ports.is_empty() {
        return "sysfs shows no RDMA port".into();
    }
    let ports: Vec<String> = discovery
        .rdma_ports
        .iter()
        .map(|p| format!("{} port {} {:?}", p.device, p.port, p.state))
        .collect();
    format!("ports: {}", ports.join(", "))
}

/// What a reader must know before the numbers: what the device is, the QP settings in
/// force, where the memory comes from.
fn setup_notes(bench: &OdpBench, binding: &RnicBinding, kind: OdpBenchKind) -> Vec<String> {
    let mut notes = Vec::new();
    if binding.software {
        notes.push(format!(
            "{} is a software RNIC: rxe resolves page faults in the kernel, synchronously, \
             while it handles the packet, so a fault neither drops a packet nor waits for a \
             transport timeout; ISPASS'21's hardware damming and flood are not expected",
            binding.device
        ));
    }
    let asked = rdma::odp_bench::ACK_TIMEOUT_MIN;
    notes.push(match bench.in_force() {
        Ok(t) => format!(
            "QP local ACK timeout: asked {asked} (the smallest, {}), in force per \
             ibv_query_qp {} ({}), retry_cnt {}, max_rd_atomic {}; firmware may floor the \
             timer whatever the query says (ConnectX: ~500 ms, ISPASS'21)",
            timeout_words(asked),
            t.timeout,
            timeout_words(t.timeout),
            t.retry_cnt,
            t.max_rd_atomic
        ),
        Err(e) => format!(
            "QP local ACK timeout: asked {asked} (the smallest, {}); not read back: {e}",
            timeout_words(asked)
        ),
    });
    notes.push(match kind {
        OdpBenchKind::Damming => "each point registers new mappings (mmap) as ODP MRs on both \
             sides, so both READs meet pages the RNIC has never mapped; each READ has a page \
             of its own"
            .into(),
        OdpBenchKind::Flood => "each point registers a new mapping (mmap) as the local ODP MR \
             (client-side ODP) and reads from a pinned MR; READs go round robin over the QPs, \
             at most max_rd_atomic outstanding per QP"
            .into(),
    });
    notes.push(
        "every QP is connected to itself on one port: each packet is counted once sent and \
         once received"
            .into(),
    );
    notes
}

/// `4.096 us x 2^t` in words (`0`: no timeout).
fn timeout_words(t: u8) -> String {
    if t == 0 {
        return "no timeout".into();
    }
    let us = 4.096 * 2f64.powi(i32::from(t));
    if us < 1000.0 {
        format!("{us:.3} us")
    } else {
        format!("{:.3} ms", us / 1000.0)
    }
}

/// What the points showed besides the table: the MRs in the netlink dump, and for damming
/// each READ's time.
fn result_notes(bench: &OdpBench, measured: &[Measured]) -> Vec<String> {
    let mut notes = Vec::new();
    let seen: Vec<_> = measured.iter().filter_map(|m| m.mrs).collect();
    if let Some(gap) = &bench.netlink_gap {
        notes.push(format!("RDMA netlink: the benchmark's MRs not read: {gap}"));
    } else if !measured.is_empty() {
        let registered: usize = measured.iter().map(|m| m.mrs_registered).sum();
        let listed: usize = seen.iter().map(|s| s.listed).sum();
        let marked: usize = seen.iter().map(|s| s.odp_marked).sum();
        let faults = seen.iter().any(|s| s.page_faults.is_some());
        notes.push(format!(
            "RDMA netlink listed {listed} of the {registered} ODP MRs the points registered, \
             {marked} marked ODP by the driver; per-MR page_faults {}",
            if faults {
                "read"
            } else {
                "not reported by the driver"
            }
        ));
    }
    let resident: Vec<(usize, usize)> = measured
        .iter()
        .filter_map(|m| m.resident_after_registration)
        .collect();
    if !resident.is_empty() {
        let (r, p) = resident
            .iter()
            .fold((0, 0), |(r, p), (a, b)| (r + a, p + b));
        notes.push(format!(
            "right after registration {r} of the local ODP mappings' {p} pages were resident \
             (mincore): the driver pinned {}",
            if r == 0 {
                "none (on-demand paging)"
            } else {
                "some"
            }
        ));
    }
    let reads: Vec<String> = measured
        .iter()
        .filter(|m| !m.read_us.is_empty())
        .map(|m| {
            let times: Vec<String> = m
                .read_us
                .iter()
                .map(|us| format!("{:.3}", us / 1000.0))
                .collect();
            format!(
                "{} us: {}",
                m.point.interval_us.unwrap_or(0),
                times.join(" / ")
            )
        })
        .collect();
    if !reads.is_empty() {
        notes.push(format!(
            "each READ's post-to-completion time, ms (first / second), by interval: {}",
            reads.join("; ")
        ));
    }
    let misplaced: Vec<String> = measured
        .iter()
        .filter(|m| m.misplaced_reads > 0)
        .map(|m| {
            let at = match m.point.interval_us {
                Some(us) => format!("interval {us} us"),
                None => format!("{} QPs", m.point.qps),
            };
            format!("{at}: {} of {}", m.misplaced_reads, m.point.reads)
        })
        .collect();
    notes.push(if misplaced.is_empty() {
        "data check: every READ's bytes arrived at its local address".into()
    } else {
        format!(
            "data check: READs that completed without error but whose bytes are not at their \
             local address afterwards (the driver's ODP placed them elsewhere): {}",
            misplaced.join("; ")
        )
    });
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma::verbs::ffi::ibv_odp_caps;
    use rdma::verbs::{CapsSource, OdpCaps};

    #[test]
    fn the_missing_capability_is_printed_once_on_one_line() {
        let none = ibv_odp_caps {
            general_caps: 0,
            rc_odp_caps: 0,
            uc_odp_caps: 0,
            ud_odp_caps: 0,
        };
        let caps = OdpCaps::from_raw(none, 0, u64::MAX, CapsSource::Extended);
        let missing = rdma::odp_bench::require_rc_read("rxe0", &caps).unwrap_err();
        let e = anyhow::Error::from(OdpBenchError::NoOdp {
            kind: "damming",
            missing,
        });
        // What main prints: the whole chain.
        let text = format!("{e:#}");
        assert!(
            text.starts_with("odp-bench damming: rxe0 has no on-demand paging"),
            "{text}"
        );
        assert_eq!(text.matches("rxe0").count(), 1, "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    #[test]
    fn a_point_that_times_out_keeps_the_points_before_it() {
        let point = model::odp_bench::OdpBenchPoint {
            interval_us: Some(500),
            qps: 1,
            reads: 2,
            read_bytes: 100,
            elapsed_us: 2500.0,
            slowest_read_us: 2000.0,
            packets: Some(8),
            transport: Default::default(),
            page_faults: None,
        };
        let partial = OdpBenchReport {
            kind: OdpBenchKind::Damming,
            device: "rxe0".into(),
            rnic: None,
            provenance: Provenance::Measured,
            points: vec![point],
            notes: Vec::new(),
        };
        let e = OdpBenchError::Stopped {
            partial: Box::new(partial.clone()),
            error: BenchError::Timeout {
                point: "damming interval 1000 us".into(),
                device: "rxe0".into(),
                read: 2,
                reads: 2,
                after_ms: 10_000,
            },
        };
        assert_eq!(e.partial(), Some(&partial));
        let text = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(
            text,
            "odp-bench damming: damming interval 1000 us on rxe0: READ 2 of 2 did not complete \
             within 10000 ms (the 1 points measured before it are printed above)"
        );
    }
}
