//! Progress on stderr for long work, one look for every command: a bar of counted steps, or
//! a spinner where the end is unknown. indicatif hides them when stderr is not a terminal,
//! so scripts and tests see only the output.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps: `⠁ what [=====>     ] 3/40 message (2s)`.
pub fn progress_bar(len: u64, what: &str) -> ProgressBar {
    counted(len, what, "")
}

/// A bar of `len` steps of `unit` (`us simulated`): `what [=====>     ] 3/40 unit, message (2s)`.
pub fn counted(len: u64, what: &str, unit: &str) -> ProgressBar {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit},")
    };
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} [{{bar:30}}] {{pos}}/{{len}}{unit} {{msg}} ({{elapsed}})"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// A spinner for work of unknown length: `what ⠁ message (2s)`.
pub fn spinner(what: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template(&format!("{what} {{spinner}} {{msg}} ({{elapsed}})"))
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar
}

/// Progress of a series of checks on its bar: the run as position, the paths done as
/// message.
pub fn show_run(bar: &ProgressBar, run: u32, done: usize, total: usize) {
    bar.set_position(u64::from(run));
    bar.set_message(format!("run {}: {done}/{total} paths", run + 1));
}
