//! `hostping odp-bench --sim MODEL`: the micro-benchmarks on the virtual host's RNIC
//! transport model (labelled simulated).

use crate::cli::OdpBenchArgs;
use model::odp_bench::{OdpBenchKind, OdpBenchReport};

/// Runs the micro-benchmark `kind` on the virtual host `model`.
pub fn run(
    _args: &OdpBenchArgs,
    kind: OdpBenchKind,
    model: &str,
) -> anyhow::Result<OdpBenchReport> {
    anyhow::bail!(
        "odp-bench {} --sim {model}: the transport model is not written yet",
        kind.as_str()
    )
}
