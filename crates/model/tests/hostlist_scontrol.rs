//! Slurm's own expansion is the reference: every list here, written and generated, expands
//! to exactly the names `scontrol show hostnames` prints, and what scontrol refuses is
//! refused. Needs Slurm's `scontrol` (the test command installs slurm-wlm); without it the
//! test says so and passes, unless HOSTPING_REQUIRE_SLURM is set.

use std::process::Command;
use std::sync::OnceLock;

use model::hostlist::expand;
use proptest::prelude::*;

/// scontrol reads a configuration even to expand a hostlist: a one-node one, written once
/// for all the tests of this file (they run in parallel).
fn slurm_conf() -> Option<std::path::PathBuf> {
    static CONF: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    CONF.get_or_init(write_slurm_conf).clone()
}

fn write_slurm_conf() -> Option<std::path::PathBuf> {
    let available = Command::new("scontrol").arg("--version").output().is_ok();
    if !available {
        assert!(
            std::env::var_os("HOSTPING_REQUIRE_SLURM").is_none(),
            "HOSTPING_REQUIRE_SLURM is set but scontrol is not installed"
        );
        eprintln!("scontrol not installed: Slurm's expansion not compared");
        return None;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hostlist-slurm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("slurm.conf");
    std::fs::write(
        &conf,
        "ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=localhost\nPartitionName=p Nodes=localhost\n",
    )
    .unwrap();
    Some(conf)
}

/// What scontrol makes of `list`: its names, or `None` when it refuses it.
fn scontrol(conf: &std::path::Path, list: &str) -> Option<Vec<String>> {
    let out = Command::new("scontrol")
        .args(["show", "hostnames", list])
        .env("SLURM_CONF", conf)
        .output()
        .expect("scontrol runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || stderr.contains("Invalid") {
        return None;
    }
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn written_lists_expand_as_scontrol_expands_them() {
    let Some(conf) = slurm_conf() else { return };
    for list in [
        "node[001-016,020]",
        "rack[1-2]-n[01-02],x",
        "k[1-003]",
        "n[8-11],m[08-11]",
        "gpu[0-3],gpu7",
        "a[5]b[2-3]",
    ] {
        assert_eq!(Some(expand(list).unwrap()), scontrol(&conf, list), "{list}");
    }
    // (scontrol 22.05 prints `a]` for the unclosed `a[1-2`; hostping refuses it.)
    for list in ["a[3-1]", "gpu[0-3]a"] {
        assert!(expand(list).is_err(), "{list}");
        assert_eq!(scontrol(&conf, list), None, "scontrol accepts {list}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// Generated lists of ranges with padding, several brackets and plain names.
    #[test]
    fn generated_lists_expand_as_scontrol_expands_them(
        items in prop::collection::vec(
            (0u64..30, 0u64..12, 1usize..4, prop::bool::ANY, 0u64..4),
            1..4,
        )
    ) {
        let Some(conf) = slurm_conf() else { return Ok(()) };
        let list = items
            .iter()
            .map(|&(low, len, width, second, extra)| {
                let high = low + len;
                let mut item = format!("n[{low:0width$}-{high},{}]", high + 5);
                if second {
                    item += &format!("-r[{extra}-{}]", extra + 1);
                }
                item
            })
            .collect::<Vec<_>>()
            .join(",");
        prop_assert_eq!(Some(expand(&list).unwrap()), scontrol(&conf, &list), "{}", list);
    }
}
