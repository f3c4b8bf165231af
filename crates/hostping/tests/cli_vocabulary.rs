//! One vocabulary across commands, as a user reads it in `--help`: every subcommand's help
//! fits the terminal without being re-wrapped, names nothing a user does not have (the
//! design notes, `../shared/`), lists the model's own causes and the virtual host's own
//! faults; the old spellings of `--format` and the output flags still work and give the same
//! output as the new ones; `bench scenarios` runs outside a checkout.

mod common;

use common::{hostping, stderr, stdout, temp_dir};
use std::path::Path;
use std::process::{Command, Output};

/// `hostping ARGS` with the terminal `columns` wide (clap reads COLUMNS when stdout is not
/// a terminal).
fn at_width(args: &[&str], columns: u32) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_hostping"))
        .args(args)
        .env("COLUMNS", columns.to_string())
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// The subcommand paths under `path` (its own included), read from the `Commands:` lists
/// of `-h`, as a user finds them.
fn command_tree(path: Vec<String>, into: &mut Vec<Vec<String>>) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("-h");
    let help = at_width(&args, 200);
    into.push(path.clone());
    let listed = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect::<Vec<_>>();
    for name in listed {
        let mut sub = path.clone();
        sub.push(name);
        command_tree(sub, into);
    }
}

fn every_command() -> Vec<Vec<String>> {
    let mut all = Vec::new();
    command_tree(Vec::new(), &mut all);
    all
}

/// The lines of a help's examples (what a user copies), as it prints them.
fn examples(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|l| !l.starts_with("Example"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn every_help_fits_80_and_100_columns_and_names_only_what_users_have() {
    let commands = every_command();
    // `hostping` itself, its 11 commands, 5 fleet questions, 5 benches, 8 fabric commands
    // and their 4 benches.
    assert!(
        commands.len() >= 34,
        "{} commands: {commands:?}",
        commands.len()
    );
    for path in commands {
        for flag in ["-h", "--help"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push(flag);
            let wide = at_width(&args, 100);
            for columns in [80, 100] {
                let help = at_width(&args, columns);
                for line in help.lines() {
                    // A longer line is wrapped by the terminal wherever it falls, mid-word.
                    assert!(
                        line.chars().count() <= columns as usize,
                        "{args:?} at {columns} columns: {} characters: {line}",
                        line.chars().count()
                    );
                }
                // Examples are laid out to fit: never re-wrapped by clap.
                for example in examples(&wide) {
                    assert!(
                        help.lines().any(|l| l == example),
                        "{args:?} at {columns} columns re-wraps the example `{example}`:\n{help}"
                    );
                }
            }
            for unknown in ["DESIGN", "../shared", "shared/"] {
                assert!(
                    !wide.contains(unknown),
                    "{args:?} points to `{unknown}`, which users do not have:\n{wide}"
                );
            }
        }
    }
}

#[test]
fn check_help_lists_every_cause_and_fault_and_topology_every_link_kind() {
    let check = at_width(&["check", "--help"], 100);
    for cause in model::Cause::ALL {
        assert!(
            check.contains(cause.as_str()),
            "{} missing:\n{check}",
            cause.as_str()
        );
    }
    for (kind, shape) in vhost::FAULT_KINDS {
        assert!(check.contains(shape), "fault {kind} missing:\n{check}");
    }
    // Every command that injects faults shows the same grammar.
    for command in ["counters", "lint", "agent"] {
        let help = at_width(&[command, "--help"], 100);
        for (kind, shape) in vhost::FAULT_KINDS {
            assert!(help.contains(shape), "{command}: fault {kind} missing");
        }
    }
    let topology = at_width(&["topology", "--help"], 100);
    for kind in model::LinkKind::ALL {
        assert!(topology.contains(kind.as_str()), "{}", kind.as_str());
    }
    let hosts = at_width(&["fleet", "hosts", "--help"], 100);
    for cause in model::Cause::ALL {
        assert!(
            hosts.contains(cause.as_str()),
            "{} missing:\n{hosts}",
            cause.as_str()
        );
    }
    // One spelling in prose; the fault grammar's placeholder is the contract's own.
    for path in every_command() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = at_width(&args, 100).replace("<utilization>", "");
        assert!(!help.to_lowercase().contains("utiliz"), "{args:?}:\n{help}");
    }
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.code().is_some_and(|c| c == 0 || c == 1),
        "exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    stdout(o)
}

/// `hostping ARGS` run in `dir` (so that relative output paths print alike).
fn hostping_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hostping"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

#[test]
fn format_text_is_table_on_every_command() {
    for args in [
        vec!["topology", "--sim", "single-socket"],
        vec!["lint", "--sim", "dgx-a100", "--inject", "acs:lsw2"],
        vec!["counters", "--sim", "single-socket"],
    ] {
        let new = ok(&hostping(
            &[args.as_slice(), &["--format", "table"]].concat(),
        ));
        let old = ok(&hostping(
            &[args.as_slice(), &["--format", "text"]].concat(),
        ));
        assert_eq!(new, old, "{args:?}");
        assert!(
            !new.trim_start().starts_with('{'),
            "{args:?}: a table, not JSON"
        );
    }
    // The hidden alias is accepted, not advertised.
    let help = at_width(&["check", "--help"], 100);
    assert!(help.contains("table") && !help.contains("text:"), "{help}");
}

#[test]
fn the_output_flags_old_spellings_write_what_the_new_ones_write() {
    let dir = temp_dir("vocabulary-out");
    // A file: -o/--output, and the old --out of `fabric net`.
    let mut nets = Vec::new();
    for flag in ["--output", "-o", "--out"] {
        let file = dir.join(format!("radix8{flag}.net"));
        let o = hostping(&[
            "fabric",
            "net",
            "--topology",
            "radix8",
            flag,
            file.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", stderr(&o));
        nets.push(std::fs::read_to_string(&file).expect("the net file is written"));
    }
    assert!(nets[0].contains("Switch"), "{}", nets[0]);
    assert!(nets.iter().all(|n| *n == nets[0]));

    // A folder: --out-dir, and the old --out of `fabric sim`, with --format text vs table.
    let mut runs = Vec::new();
    for (flag, format) in [("--out-dir", "table"), ("--out", "text")] {
        let here = dir.join(format!("sim{flag}"));
        std::fs::create_dir_all(&here).unwrap();
        let o = hostping_in(
            &here,
            &[
                "fabric",
                "sim",
                "--topology",
                "radix8",
                "--workload",
                "stencil:8x8",
                flag,
                "run",
                "--format",
                format,
            ],
        );
        // All but the wall time it took.
        let printed: Vec<String> = ok(&o)
            .lines()
            .filter(|l| !l.contains(" s wall"))
            .map(str::to_owned)
            .collect();
        let summary = here.join("run/summary.json");
        assert!(summary.is_file(), "{flag}: no {}", summary.display());
        runs.push((printed, here.join("run")));
    }
    assert_eq!(runs[0].0, runs[1].0, "the same run prints the same");
    let ports = |d: &Path| std::fs::read_to_string(d.join("ports.csv")).unwrap();
    assert_eq!(ports(&runs[0].1), ports(&runs[1].1));

    // `fabric merge --format text` is its table.
    let merged: Vec<String> = ["table", "text"]
        .iter()
        .map(|f| {
            ok(&hostping(&[
                "fabric",
                "merge",
                runs[0].1.to_str().unwrap(),
                "--format",
                f,
            ]))
        })
        .collect();
    assert_eq!(merged[0], merged[1]);

    // `fabric delegate`: --out-dir, and the old -o and --out, write the same port lists.
    let topo =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../rdma/testdata/subnet/two-switches.topo");
    // One sampler on each of the fixture's two switches (ibsim's capture, see its header).
    let samplers = "host-1,host-3";
    let mut lists = Vec::new();
    for flag in ["--out-dir", "-o", "--out"] {
        let out = dir.join(format!("lists{flag}"));
        let o = hostping(&[
            "fabric",
            "delegate",
            "--topology",
            topo.to_str().unwrap(),
            "--samplers",
            samplers,
            flag,
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", stderr(&o));
        let mut files: Vec<(String, String)> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{flag}: no port list");
        lists.push(files);
    }
    assert!(lists.iter().all(|l| *l == lists[0]));

    // `fabric bench cases`: the old --out is taken (the case name is what is refused).
    let o = hostping(&["fabric", "bench", "cases", "--case", "nope", "--out", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--case nope"), "{}", stderr(&o));

    // The old spellings are not advertised.
    for args in [
        ["fabric", "sim", "--help"],
        ["fabric", "delegate", "--help"],
        ["fabric", "net", "--help"],
    ] {
        let help = at_width(&args, 100);
        assert!(
            !help.contains("--out ") && !help.contains("--out <"),
            "{args:?}:\n{help}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_scenarios_runs_outside_the_checkout() {
    let away = temp_dir("vocabulary-scenarios");
    let o = hostping_in(&away, &["bench", "scenarios", "--healthy-runs", "1"]);
    let table = ok(&o);
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = 0;
    for entry in std::fs::read_dir(&suite).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&file).unwrap();
        let case = text
            .lines()
            .find_map(|l| l.strip_prefix("case = "))
            .expect("every scenario has a case")
            .trim_matches('"');
        assert!(
            table.contains(case),
            "{case} ({}) missing:\n{table}",
            file.display()
        );
    }
    assert!(files >= 32, "{files} scenario files");
    // --dir still reads a folder, and names it when it cannot.
    let o = hostping_in(&away, &["bench", "scenarios", "--dir", "nowhere"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nowhere"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&away);
}
