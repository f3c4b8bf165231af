//! `fabric sim`'s output contract (`fabric::summary`) on a short run of the radix-8 tree:
//! the summary reads back as what `merge` compares, `ports.csv` has one row per switch
//! output port (with the fabric's switch and port for a tree recognised from cables), and a
//! fabric that does not describe the tree is an error naming its file, not a panic.

use fabric::analysis::view::JobSelection;
use fabric::analysis::{diagnose, LinkView, Thresholds, ViewSpec};
use fabric::cabling::Cabling;
use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::summary::{ports_csv, FabricOrigin, MergedRun, RunSummary, SummaryError};
use fabric::topology::Topology;
use fabric::traffic::{self, MappingSpec, WorkloadSpec};

fn run(topology: &Topology) -> SimResult {
    let workload: WorkloadSpec = "uniform,load=0.3".parse().unwrap();
    let mapping: MappingSpec = "row-major".parse().unwrap();
    let config = SimConfig {
        end_ps: Some(2_000_000),
        ..SimConfig::default()
    };
    let jobs = traffic::build_jobs(&workload, &mapping, topology, &config.job_settings()).unwrap();
    Simulation::new(topology, config, jobs)
        .unwrap()
        .run(&mut |_| {})
}

fn views(topology: &Topology, result: &SimResult) -> (LinkView, LinkView) {
    let truth =
        LinkView::build(topology, result, &ViewSpec::ground_truth(JobSelection::All)).unwrap();
    let estimate = LinkView::build(
        topology,
        result,
        &ViewSpec::for_run(result, JobSelection::All),
    )
    .unwrap();
    (truth, estimate)
}

/// The radix-8 tree as its cables, recognised back: every switch named, no free node.
fn origin(topology: &Topology) -> FabricOrigin {
    let recognized = Cabling::of_tree(topology).recognize("radix8").unwrap();
    FabricOrigin::of("radix8.topo", &recognized)
}

#[test]
fn the_summary_reads_back_as_what_merge_compares() {
    let topology = Topology::resolve("radix8").unwrap();
    let result = run(&topology);
    let (truth, estimate) = views(&topology, &result);
    let diagnosis = diagnose(&topology, &estimate, &Thresholds::default());
    let mut summary = RunSummary::new(
        &topology,
        "uniform,load=0.3,bytes=128KiB",
        "row-major",
        "reservoir",
        &result,
        &truth,
        &diagnosis,
    );
    summary.fabric = Some(origin(&topology));
    let json = summary.to_json().unwrap();
    assert!(json.ends_with("}\n"), "{json}");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["simulated"], true);
    assert_eq!(
        (value["nodes"].as_u64(), value["switches"].as_u64()),
        (Some(128), Some(80))
    );
    assert_eq!(value["cause"], diagnosis.cause.as_str());
    assert_eq!(value["fabric"]["file"], "radix8.topo");
    assert_eq!(value["fabric"]["switches"].as_array().unwrap().len(), 80);
    assert_eq!(value["fabric"]["free_nodes"].as_array().unwrap().len(), 0);
    // The fabric ports stay out of the summary: ports.csv carries them.
    assert!(value["fabric"].get("ports").is_none(), "{json}");

    let merged: MergedRun = serde_json::from_str(&json).unwrap();
    assert_eq!(merged.topology, "radix8");
    assert_eq!(merged.seed, result.config.seed);
    assert_eq!(merged.jobs.len(), 1);
    assert_eq!(merged.jobs[0].name, summary.jobs[0].name);
    assert_eq!(merged.packets_delivered, result.packets_delivered);
}

#[test]
fn ports_csv_has_a_row_per_port_and_the_fabric_columns_of_a_recognised_tree() {
    let topology = Topology::resolve("radix8").unwrap();
    let result = run(&topology);
    let (truth, estimate) = views(&topology, &result);

    let plain = ports_csv(&topology, &truth, &estimate, None).unwrap();
    let rows: Vec<&str> = plain.lines().collect();
    assert_eq!(rows.len(), 1 + 80 * 8);
    assert!(
        rows[0].ends_with(",est_gbps,est_count_sd,est_congested_sd,est_congested_fraction_sd"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].starts_with("0,leaf 0 port 0 -> node 0,leaf,down,"),
        "{}",
        rows[1]
    );

    let fabric = origin(&topology);
    let cabled = ports_csv(&topology, &truth, &estimate, Some(&fabric)).unwrap();
    let rows: Vec<&str> = cabled.lines().collect();
    assert_eq!(rows.len(), 1 + 80 * 8);
    assert!(
        rows[0].ends_with(",est_congested_fraction_sd,fabric_switch,fabric_port"),
        "{}",
        rows[0]
    );
    // Each row is the plain row with the fabric's switch and port after it.
    for (with, without) in rows.iter().zip(plain.lines()).skip(1) {
        let extra = with.strip_prefix(without).unwrap();
        let (switch, port) = extra[1..].rsplit_once(',').unwrap();
        assert!(fabric.switches.iter().any(|s| s == switch), "{with}");
        assert!(port.parse::<u16>().unwrap() >= 1, "{with}");
    }
}

#[test]
fn a_fabric_that_does_not_describe_the_tree_is_an_error_naming_its_file() {
    let topology = Topology::resolve("radix8").unwrap();
    let result = run(&topology);
    let (truth, estimate) = views(&topology, &result);

    let mut short = origin(&topology);
    short.switches.truncate(3);
    let err = ports_csv(&topology, &truth, &estimate, Some(&short)).unwrap_err();
    assert!(matches!(
        err,
        SummaryError::OriginMismatch {
            what: "switch",
            index: 3,
            count: 3,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "radix8.topo: the recognised fabric has no switch for the tree's switch 3 (it names 3)"
    );

    let mut short = origin(&topology);
    short.ports.truncate(10);
    let err = ports_csv(&topology, &truth, &estimate, Some(&short)).unwrap_err();
    assert!(matches!(
        err,
        SummaryError::OriginMismatch {
            what: "port",
            index: 10,
            count: 10,
            ..
        }
    ));
}
