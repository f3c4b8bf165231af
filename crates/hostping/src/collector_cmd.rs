//! `hostping collector`: the fleet's collector, until stopped.

use crate::cli::CollectorArgs;
use crate::output::Outcome;
use anyhow::Result;
use collector::CollectorConfig;
use fleet_api::tls::TlsFiles;

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
        max_body: args.max_body,
        keep_sweeps: args.keep_sweeps,
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
    };
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
