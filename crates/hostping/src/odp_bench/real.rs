//! `hostping odp-bench` on a real device. Before any memory is registered, the device's ODP
//! capabilities are checked (`ibv_query_device_ex`): both micro-benchmarks need ODP memory as
//! the target of RDMA READ over RC.

use crate::cli::OdpBenchArgs;
use model::odp_bench::{OdpBenchKind, OdpBenchReport};
use rdma::odp_bench::NoOdp;
use rdma::verbs::{Unavailable, Verbs, VerbsError};

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
    /// The device has ODP, but the READ loops of the micro-benchmarks are not written yet.
    #[error(
        "odp-bench {kind}: {device} supports ODP READ over RC, but this build has no verbs \
         run of the micro-benchmark yet: nothing was measured"
    )]
    NotBuilt {
        /// The micro-benchmark.
        kind: &'static str,
        /// The device.
        device: String,
    },
}

/// Runs the micro-benchmark `kind` on the device `args` name.
pub fn run(args: &OdpBenchArgs, kind: OdpBenchKind) -> Result<OdpBenchReport, OdpBenchError> {
    let kind = kind.as_str();
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
    let context = verbs.open(&device).map_err(OdpBenchError::Verbs)?;
    let caps = context.odp_caps().map_err(OdpBenchError::Verbs)?;
    rdma::odp_bench::require_rc_read(&device, &caps)
        .map_err(|missing| OdpBenchError::NoOdp { kind, missing })?;
    Err(OdpBenchError::NotBuilt { kind, device })
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
}
