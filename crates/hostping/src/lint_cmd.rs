//! `hostping lint`: risky configuration found without probing.

use crate::cli::LintArgs;
use crate::output::{print, Outcome};
use anyhow::Result;
use check::host::{Host, HostOptions};
use views::Style;

/// Runs `hostping lint`.
pub fn run(args: LintArgs) -> Result<Outcome> {
    let mut opened = Host::open(
        &args.host.spec(),
        HostOptions {
            inject: args.inject.clone(),
            ..HostOptions::default()
        },
    )?;
    let config = opened.config();
    let host = opened.model().cloned();
    let findings = match &host {
        Some(host) => analyze::lint::lint(host, &config),
        None => Vec::new(),
    };
    let document = serde_json::json!({
        "host": host.as_ref().map(|h| h.name.clone()),
        "provenance": config.provenance,
        "findings": findings,
        "unavailable": config.unavailable,
    });
    print(args.format, &document, |_| {
        views::lint(host.as_ref(), &config, &findings, Style::for_stdout())
    })?;
    Ok(Outcome::found(!findings.is_empty()))
}
