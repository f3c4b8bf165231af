//! Help texts made from the libraries' own names: the causes a report can give
//! (`model::Cause`), the link kinds (`model::LinkKind`) and the fault grammar
//! (`vhost::FAULT_KINDS`). They are added to the derived command tree here, so that a cause
//! or fault kind added to a library shows up in every `--help` without anyone editing prose.

use super::Cli;
use clap::{Arg, CommandFactory};

/// The command tree of `hostping`, with the generated help texts in place.
pub fn command() -> clap::Command {
    Cli::command()
        .mut_subcommand("check", |c| {
            before_long_epilogue(c, causes_paragraph()).mut_arg("inject", with_fault_grammar)
        })
        .mut_subcommand("counters", |c| c.mut_arg("inject", with_fault_grammar))
        .mut_subcommand("lint", |c| c.mut_arg("inject", with_fault_grammar))
        .mut_subcommand("agent", |c| c.mut_arg("inject", with_fault_grammar))
        .mut_subcommand("topology", |c| {
            before_long_epilogue(c, link_kinds_paragraph())
        })
        .mut_subcommand("fleet", |fleet| {
            fleet.mut_subcommand("hosts", |hosts| {
                hosts.mut_arg("cause", |a| {
                    a.help(format!(
                        "Only hosts whose latest run has this cause: {}",
                        cause_names().join(", ")
                    ))
                })
            })
        })
}

/// `cmd` with `text` as the first paragraph after its long help (before its examples).
fn before_long_epilogue(cmd: clap::Command, text: String) -> clap::Command {
    let text = match cmd.get_after_long_help() {
        Some(examples) => format!("{text}\n\n{examples}"),
        None => text,
    };
    cmd.after_long_help(text)
}

/// Every cause a report can name, as it names them.
fn cause_names() -> Vec<&'static str> {
    model::Cause::ALL.iter().map(|c| c.as_str()).collect()
}

/// `check --help`'s list of causes.
fn causes_paragraph() -> String {
    format!(
        "Causes a diagnosis names (the `cause` field of --format json): {}.",
        cause_names().join(", ")
    )
}

/// `topology --help`'s list of link kinds.
fn link_kinds_paragraph() -> String {
    let kinds: Vec<&str> = model::LinkKind::ALL.iter().map(|k| k.as_str()).collect();
    format!(
        "Link ids are DOWNSTREAM--UPSTREAM (rnic0--lsw0, mem0--cpu0, cpu0--cpu1). Link kinds: {}.",
        kinds.join(", ")
    )
}

/// An `--inject` flag's help, followed by every fault the virtual host takes, one a line.
fn with_fault_grammar(arg: Arg) -> Arg {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let faults: String = vhost::FAULT_KINDS
        .iter()
        .map(|(_, shape)| format!("\n  {shape}"))
        .collect();
    arg.long_help(format!("{help}\n\nFAULT is one of:{faults}"))
}
