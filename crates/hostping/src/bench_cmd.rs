//! `hostping bench ...`: the scenario suite's accuracy, the CPU cost of a check, the agent's
//! own cost, the time of a counter snapshot, and the collector at scale. The measuring is
//! in the library crates; this module gives each a progress bar and prints its result.

use crate::cli::{BenchCommand, Format, JobSuite};
use crate::output::{print, write_stdout, Outcome};
use crate::progress::{counted, progress_bar};
use anyhow::{bail, Result};
use check::accuracy;
use check::scenario::Scenario;
use indicatif::ProgressBar;
use model::HostTopology;
use rdma::sysfs::SysRoot;
use std::sync::Mutex;
use views::Style;

/// Runs `hostping bench ...`.
pub fn run(cmd: BenchCommand) -> Result<Outcome> {
    match cmd {
        BenchCommand::Job {
            suite,
            seed,
            passive: true,
            show_failures,
            format,
            ..
        } => return passive_jobs(suite, seed, show_failures, format),
        BenchCommand::Job {
            suite,
            seed,
            cluster,
            show_failures,
            format,
            ..
        } => return job(suite, seed, cluster.as_deref(), show_failures, format),
        BenchCommand::Agent {
            sim,
            seconds,
            format,
        } => {
            let bar = counted(seconds, "measuring the agent", "s");
            let cost = agent::cost::agent_cost(&sim, seconds, &mut |s| bar.set_position(s))?;
            bar.finish_and_clear();
            print(format, &cost, agent::cost::agent_cost_table)?;
        }
        BenchCommand::Counters {
            sysfs_root,
            repeat,
            format,
        } => {
            let root = sysfs_root.map(SysRoot::new).unwrap_or_else(SysRoot::system);
            let cost = agent::cost::counters_cost(root, repeat)?;
            print(format, &cost, agent::cost::counters_cost_table)?;
        }
        BenchCommand::Scenarios {
            dir,
            healthy_runs,
            show_failures,
            format,
        } => return scenarios(dir.as_deref(), healthy_runs, show_failures, format),
        BenchCommand::Collector {
            database,
            hosts,
            days,
            cadence,
            clients,
            queries,
            sim,
            format,
        } => {
            let settings = collector::bench::BenchSettings {
                database,
                hosts,
                days,
                cadence,
                clients,
                queries,
                reports: simulated_reports(&check::sim::load_host(&sim)?),
            };
            let bar = PhaseBar::default();
            let result = collector::bench::run(&settings, &bar);
            bar.finish();
            print(format, &result?, collector::bench::table)?;
        }
        BenchCommand::Sweeps {
            database,
            samplers,
            ports,
            duration,
            run_clients,
            run_hosts,
            sim,
            format,
        } => {
            let settings = collector::fabric::bench::SweepBenchSettings {
                database,
                samplers,
                ports,
                duration,
                run_clients,
                run_hosts,
                reports: simulated_reports(&check::sim::load_host(&sim)?),
            };
            let result = collector::fabric::bench::run(&settings)?;
            print(format, &result, collector::fabric::bench::table)?;
        }
        BenchCommand::Check {
            sim,
            repeat,
            format,
        } => {
            let host = check::sim::load_host(&sim)?;
            let cost = check::cost::check_cost(&host, repeat);
            print(format, &cost, check::cost::check_cost_table)?;
        }
    }
    Ok(Outcome::Healthy)
}

/// The reports the collector benches' simulated hosts send (`check::bench_reports`).
fn simulated_reports(host: &HostTopology) -> collector::bench::SimulatedReports {
    collector::bench::SimulatedReports {
        model: host.name.clone(),
        variants: check::bench_reports::fleet_variants(host, collector::bench::HEALTHY_VARIANTS),
    }
}

/// The collector bench's phases, one bar each.
#[derive(Default)]
struct PhaseBar(Mutex<Option<ProgressBar>>);

impl collector::bench::Progress for PhaseBar {
    fn phase(&self, name: &str, total: u64) {
        let mut bar = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(done) = bar.take() {
            done.finish();
        }
        *bar = Some(progress_bar(total, name));
    }
    fn at(&self, done: u64) {
        if let Some(bar) = self.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            bar.set_position(done);
        }
    }
}

impl PhaseBar {
    fn finish(&self) {
        if let Some(bar) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish();
        }
    }
}

/// `bench scenarios`: every scenario (of `dir`, or the suite built in), then the false
/// alarms of healthy noisy runs of each built-in model.
fn scenarios(
    dir: Option<&std::path::Path>,
    healthy_runs: u32,
    show_failures: bool,
    format: Format,
) -> Result<Outcome> {
    let scenarios = match dir {
        Some(dir) => Scenario::load_dir(dir)?,
        None => Scenario::builtin()?,
    };
    if let (Some(dir), true) = (dir, scenarios.is_empty()) {
        bail!("--dir {}: no scenario files (*.toml)", dir.display());
    }
    let hosts = model::builtin::names()
        .map(|n| model::builtin::load(n).expect("a built-in name loads"))
        .collect::<Result<Vec<HostTopology>, _>>()?;
    let total = scenarios.len() as u64 + u64::from(healthy_runs) * hosts.len() as u64;
    let bar = progress_bar(total, "bench");
    bar.set_message("scenarios");
    let rows = accuracy::run_scenarios(&scenarios, &mut |_| bar.inc(1));
    let mut false_alarms = Vec::new();
    for host in &hosts {
        bar.set_message(format!("healthy {}", host.name));
        false_alarms.push(accuracy::false_alarms(host, healthy_runs, &mut || {
            bar.inc(1)
        }));
    }
    bar.finish_and_clear();
    let passed = rows.iter().filter(|(r, _)| r.pass).count();
    let result = accuracy::SuiteResult {
        scenarios: rows.iter().map(|(r, _)| r.clone()).collect(),
        passed,
        false_alarms,
    };
    let mut out = match format {
        Format::Json => serde_json::to_string_pretty(&result)? + "\n",
        Format::Table => accuracy::suite_table(&result),
    };
    if show_failures {
        for ((row, outcome), s) in rows.iter().zip(&scenarios) {
            if !row.pass {
                out.push_str(&format!(
                    "\n--- {} {} ({}) ---\n",
                    row.case,
                    row.title,
                    s.file.display()
                ));
                out.push_str(&views::report(
                    &s.host,
                    &outcome.report,
                    s.runs,
                    Style { color: false },
                ));
            }
        }
    }
    write_stdout(&out)?;
    Ok(Outcome::found(!result.ok()))
}

/// `hostping bench job --passive` (issue 39 item 5): jobs whose only symptom is their own
/// collectives, each simulated step by step writing NCCL Inspector records, its fault
/// starting mid-run; detection time from the onset and top-1 accuracy without and with
/// probes (`simcluster::labelled::passive`).
fn passive_jobs(
    suite: JobSuite,
    seed: u64,
    show_failures: bool,
    format: Format,
) -> Result<Outcome> {
    use simcluster::labelled::{self, passive};
    let pod = simcluster::Cluster::builtin("pod-32").expect("pod-32 is built in")?;
    let suite = match suite {
        JobSuite::Fast => labelled::Suite::Fast,
        JobSuite::Full => labelled::Suite::Full,
    };
    let cases = passive::cases(&pod, suite, seed);
    let bar = counted(cases.len() as u64, "bench job --passive", "jobs judged");
    let mut outcomes = Vec::with_capacity(cases.len());
    for case in &cases {
        bar.set_message(case.class);
        outcomes.push(passive::run(&pod, case)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let scores = passive::scores(&outcomes);
    #[derive(serde::Serialize)]
    struct Bench<'a> {
        simulated: bool,
        passive: &'a [passive::PassiveScore],
        cases: &'a [passive::PassiveOutcome],
    }
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(&Bench {
                simulated: true,
                passive: &scores,
                cases: &outcomes,
            })? + "\n"
        }
        Format::Table => passive::table(&scores, &outcomes, show_failures),
    };
    write_stdout(&text)?;
    Ok(Outcome::Healthy)
}

/// `hostping bench job`: the labelled jobs, run one after another (each mesh simulates its
/// pairs on every core), and their scores.
fn job(
    suite: JobSuite,
    seed: u64,
    only: Option<&str>,
    show_failures: bool,
    format: Format,
) -> Result<Outcome> {
    use simcluster::labelled;
    let pod = simcluster::Cluster::builtin("pod-32").expect("pod-32 is built in")?;
    let large = simcluster::Cluster::builtin("full-891").expect("full-891 is built in")?;
    let suite = match suite {
        JobSuite::Fast => labelled::Suite::Fast,
        JobSuite::Full => labelled::Suite::Full,
    };
    let mut cases = labelled::cases(&pod, Some(&large), suite, seed);
    if let Some(name) = only {
        cases.retain(|case| case.cluster == name);
        if cases.is_empty() {
            bail!(
                "--cluster {name}: the {} suite has no jobs on it (its clusters: {}, {})",
                format!("{suite:?}").to_lowercase(),
                pod.name,
                large.name
            );
        }
    }
    let bar = counted(cases.len() as u64, "bench job", "jobs judged");
    let mut outcomes = Vec::with_capacity(cases.len());
    for case in &cases {
        let cluster = if case.cluster == large.name {
            &large
        } else {
            &pod
        };
        bar.set_message(format!("{} on {}", case.class, case.cluster));
        outcomes.push(labelled::run(cluster, case)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let scores = labelled::scores(&outcomes);
    #[derive(serde::Serialize)]
    struct Bench<'a> {
        simulated: bool,
        scores: &'a labelled::Scores,
        cases: &'a [labelled::Outcome],
    }
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(&Bench {
                simulated: true,
                scores: &scores,
                cases: &outcomes,
            })? + "\n"
        }
        Format::Table => {
            let mut out = simcluster::labelled::tables::scores_table(&scores);
            if show_failures {
                out.push_str(&simcluster::labelled::tables::failures(&outcomes));
            }
            out
        }
    };
    write_stdout(&text)?;
    Ok(Outcome::Healthy)
}
