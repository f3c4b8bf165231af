//! `hostping collector`: the fleet's collector, until stopped.

use crate::cli::CollectorArgs;
use crate::output::Outcome;
use anyhow::{anyhow, Context, Result};
use collector::mesh::MeshFabric;
use collector::CollectorConfig;
use fleet_api::tls::TlsFiles;
use std::path::Path;

/// Runs `hostping collector`.
pub fn run(args: CollectorArgs) -> Result<Outcome> {
    let env = std::env::var(collector::database_url::ENV).ok();
    let database =
        collector::database_url::resolve(args.database, args.database_file.as_deref(), env)?;
    let config = CollectorConfig {
        database,
        listen: args.listen,
        tokens: args.tokens,
        probe_tokens: args.probe_tokens,
        fabric: args
            .fabric
            .as_deref()
            .map(|file| read_fabric(file, args.routes.as_deref()))
            .transpose()?,
        max_body: args.max_body,
        keep_sweeps: args.keep_sweeps,
        keep_runs: args.keep_runs.0,
        actions: args
            .actions
            .as_deref()
            .map(verdict::actions::Policy::load)
            .transpose()?,
        action_tokens: args.action_tokens,
        judge_probe_token: args
            .judge_probe_token_file
            .as_deref()
            .map(|file| {
                agent::sender::read_token_file(file)
                    .map_err(|e| anyhow!("--judge-probe-token-file: {e}"))
            })
            .transpose()?,
        prometheus: args
            .prometheus
            .map(|url| collector::prometheus::PrometheusSource {
                url,
                bucket_s: args.prometheus_bucket.as_secs_f64(),
            }),
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
    };
    if config.actions.is_some() && config.judge_probe_token.is_none() {
        // DESIGN 4.9: only a culprit follow-up probes confirmed acts.
        eprintln!(
            "hostping collector: --actions without --judge-probe-token-file: its own verdicts \
             do not probe, so no culprit is confirmed and nothing acts"
        );
    }
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    collector::run(&config, |addr| {
        eprintln!("hostping collector: serving {scheme}://{addr}/api/runs and /api/hosts")
    })?;
    Ok(Outcome::Healthy)
}

/// `--fabric FILE [--routes FILE]`, read and checked as a cluster file's `[fabric]` is
/// (crate::mesh_cmd::read_fabric): an error names the file and the line.
fn read_fabric(file: &Path, routes: Option<&Path>) -> Result<MeshFabric> {
    let cabling = crate::mesh_cmd::read_fabric(file, routes)
        .with_context(|| format!("--fabric {}", file.display()))?;
    if cabling.node_cas.iter().all(Option::is_none) {
        return Err(anyhow!(
            "--fabric {}: no CA of the fabric has a description (\"HOST DEVICE\") to find hosts by",
            file.display()
        ));
    }
    Ok(MeshFabric {
        file: file.display().to_string(),
        cabling,
        from_tables: routes.is_some(),
    })
}
