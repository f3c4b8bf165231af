//! Issue 38, 3: a full-bisection three-level HDR fat tree with management switches cabled
//! into its cores (an extra pod; `crates/fabric/testdata/generated/`, generated, not
//! captured: no public capture of such a fabric was found). Its tree is recognised beside
//! the extra pod and simulated as the fat tree it is, and uniform random traffic at 0.3 load,
//! which a healthy full-bisection tree carries, is not diagnosed; routed up/down as cabled,
//! its roots are the top ranks, not nearly every switch. A two-level (leaf/spine) HDR tree
//! with management switches cabled into its spines is recognised alike.

mod common;

use common::{hostping, stderr, temp_dir};
use std::path::{Path, PathBuf};

fn fabric() -> PathBuf {
    generated("hdr-3level-22pods-management.topo")
}

fn generated(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/generated")
        .join(file)
}

/// `fabric sim` of the fabric: uniform random traffic at 0.3 load for 100 us, with `extra`.
fn sim(out: &Path, extra: &[&str]) -> std::process::Output {
    sim_of(&fabric(), out, extra)
}

/// [`sim`] of `file`.
fn sim_of(file: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let out = out.to_str().unwrap().to_string();
    let mut args = vec![
        "fabric",
        "sim",
        "--topology",
        file.to_str().unwrap(),
        "--workload",
        "uniform,load=0.3,bytes=16KiB",
        "--end",
        "100us",
        "--out",
        &out,
    ];
    args.extend(extra);
    hostping(&args)
}

#[test]
fn the_tree_beside_the_management_pod_is_recognised_and_not_diagnosed() {
    let out = temp_dir("fabric-extra-pod");
    // Seed 3 is a run that up/down from every switch diagnosed as `mapping`.
    for seed in ["1", "3"] {
        let o = sim(&out.join(seed), &["--seed", seed]);
        let err = stderr(&o);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            err.contains(
                "a three-level fat tree: 44 leaves (12 node ports each) and 44 aggregation \
                 switches in 22 pods under 24 cores; radix 24"
            ),
            "{err}"
        );
        assert!(
            err.contains(
                "left out 2 switches cabled into the cores beside the tree (an extra pod: \
                 management, UFM or storage switches) and their 4 hosts: \
                 'MF0;mgmt-0:MQM8700/U1' (mgmt-0-login HCA-1, ufm-0 HCA-1)"
            ),
            "{err}"
        );
        assert_eq!(o.status.code(), Some(0), "seed {seed}: {text}{err}");
        assert!(text.contains("diagnosis: no_congestion"), "{text}");
    }
}

/// Routed up/down as cabled, the roots are no longer every switch (114 before): the cores,
/// and, because the two management switches hang from different cores (no up/down path
/// joins them through the cores alone), the rank below them (aggregation and management
/// switches); no leaf is a root.
#[test]
fn routed_updn_its_roots_are_the_cores_and_the_rank_below() {
    let out = temp_dir("fabric-extra-pod-updn");
    let o = sim(&out, &["--routing", "updn", "--seed", "1"]);
    let err = stderr(&o);
    assert!(
        err.contains("routed updn from 70 roots; 114 switches"),
        "{err}"
    );
    assert!(err.contains("paths of up to 5 hops"), "{err}");
}

/// Two levels: 12 leaves of 20 hosts under 10 spines (2 cables a pair), and 2 management
/// switches cabled into the spines in turn (mgmt-0 to the even ones, mgmt-1 to the odd
/// ones). As leaves they would be leaves missing most of their cables, whose hosts have no
/// up/down path to each other's; they are left out, and the tree beside them is recognised
/// and, healthy, not diagnosed under uniform traffic at 0.3 load.
#[test]
fn the_leaf_spine_tree_beside_the_management_pod_is_recognised_and_not_diagnosed() {
    let out = temp_dir("fabric-extra-pod-two-level");
    let file = generated("hdr-2level-12leaves-management.topo");
    for seed in ["1", "3"] {
        let o = sim_of(&file, &out.join(seed), &["--seed", seed]);
        let err = stderr(&o);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            err.contains(
                "a two-level fat tree: 12 leaves (20 node ports each) under 10 spines; radix 40"
            ),
            "{err}"
        );
        assert!(
            err.contains(
                "left out 2 switches cabled into the spines beside the tree (an extra pod: \
                 management, UFM or storage switches) and their 4 hosts: \
                 'MF0;mgmt-0:MQM8700/U1' (mgmt-0-login HCA-1, ufm-0 HCA-1), \
                 'MF0;mgmt-1:MQM8700/U1' (mgmt-1-login HCA-1, ufm-1 HCA-1)"
            ),
            "{err}"
        );
        assert!(!err.contains("missing cables"), "{err}");
        assert_eq!(o.status.code(), Some(0), "seed {seed}: {text}{err}");
        assert!(text.contains("job uniform: 240 ranks"), "{text}");
        assert!(text.contains("diagnosis: no_congestion"), "{text}");
    }
}
