//! Every real ibnetdiscover capture in `crates/fabric/testdata/ibnetdiscover/` (sources in
//! its SOURCES.md) through `hostping fabric sim --topology FILE`: each is read as it is and
//! simulated, or refused with exit status 2 and a message that names the line or the reason.
//! A new file in that folder fails this test until its outcome is written down here.

mod common;

use common::{hostping, stderr, temp_dir};
use std::path::{Path, PathBuf};

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fabric/testdata/ibnetdiscover")
}

/// What hostping must say of one file: every part in `says` appears on stderr.
struct Expected {
    file: &'static str,
    /// Exit status: 2 for a refused file; for a simulated one the verdict's (0 no congestion,
    /// 1 a finding, 3 inconclusive).
    status: i32,
    says: &'static [&'static str],
}

const EXPECTED: &[Expected] = &[
    Expected {
        file: "gary-ibdiagnet2-ndr.ibnetdiscover",
        // ibdiagnet's variant, simulated: port labels read past, the spine's port 65 taken
        // for the Aggregation Node port its leaves have.
        status: 1,
        says: &[
            "a two-level fat tree: 8 leaves (63 node ports each) under 1 spines; radix 64",
            "note: left out 7 SHARP Aggregation Nodes",
            "counted 'MF0;ib-switch-sequoia:MQM9700/U1' port 65",
            "as the SHARP Aggregation Node port that the same switch model has",
            "links at 400 Gb/s, the file's rate (4xNDR x 264)",
        ],
    },
    Expected {
        file: "gary-ibdiagnet2-ndr-default.ibnetdiscover",
        // The same fabric two weeks earlier, its hosts named otherwise.
        status: 1,
        says: &[
            "a two-level fat tree: 8 leaves (63 node ports each) under 1 spines; radix 64",
            "248 of its 504 nodes have no host cabled (free leaf ports) and get no ranks",
            "note: left out 7 SHARP Aggregation Nodes",
            "links at 400 Gb/s, the file's rate (4xNDR x 264)",
        ],
    },
    Expected {
        file: "hk-ibsim-ring-hand-edited.topo",
        status: 2,
        says: &[
            "hk-ibsim-ring-hand-edited.topo:13: a node id is S-, H- or R- and a hex GUID",
            "H-0host44444444444",
        ],
    },
    Expected {
        file: "hk-lab4-invalid-lid.topo",
        // The ring below with an empty LID: LIDs only matter to --routes.
        status: 1,
        says: &[
            "note: left out 4 SHARP Aggregation Nodes",
            "not a fat tree (leaf switches",
            "are cabled to each other",
            "simulated as cabled, routed minhop: updn found no root",
        ],
    },
    Expected {
        file: "hk-lab4-ring-an-b.topo",
        // A ring: simulated as cabled; opensm's updn finds no root in a ring and routes
        // min-hop, and so does the simulator.
        status: 1,
        says: &[
            "note: left out 4 SHARP Aggregation Nodes",
            "not a fat tree (leaf switches",
            "are cabled to each other",
            "simulated as cabled, routed minhop: updn found no root",
            "4 switches",
            "8 hosts, paths of up to 3 hops",
        ],
    },
    Expected {
        file: "hk-quantum-lab60-selfloops.topo",
        // 60 switch ASICs and 2 hosts: 58 switches have both hosts at one distance (opensm's
        // test); the roots of updn are the top rank of them, the 20 that see the hosts at
        // the fewest hops (issue 38, 3; was 58 roots).
        status: 0,
        says: &[
            "note: left out 19 loopback cables",
            "'Quantum Mellanox Technologies (0x98039b0300866890)' 19-20",
            "not a fat tree (core switch",
            "sits above a single pod",
            "simulated as cabled, routed updn from 20 roots; 60 switches",
            "each link at its own rate, as the file gives them (4xHDR x 786, 4xSDR x 2)",
        ],
    },
    Expected {
        file: "hk-lab4-ring-lone-cr.topo",
        // The ring with lone CRs ending its port lines: read as the ring.
        status: 1,
        says: &[
            "not a fat tree (leaf switches",
            "simulated as cabled, routed minhop: updn found no root",
            "8 hosts, paths of up to 3 hops",
        ],
    },
    Expected {
        file: "hk-lab4-ring-putty-session.topo",
        // The ring in a PuTTY session log: its header and the prompts passed over, named.
        status: 1,
        says: &[
            "note: skipped 3 lines that are not topology: line 1 (`=~=~=~=~=~=~=~=~=~=~=~= PuTTY \
             log 2023.02.03 09:32:49 =~=~=~=~=~=~=~=~=~=~=~=`, not topology, before its first \
             line); line 2 (`[root@l-csi-r750-05 ~]# ibnetdiscover`, not topology, before its \
             first line); line 143 (`[root@l-csi-r750-05 ~]#`, a terminal's prompt or log \
             header)",
            "simulated as cabled, routed minhop: updn found no root",
            "8 hosts, paths of up to 3 hops",
        ],
    },
    Expected {
        file: "hk-quantum-lab60-tabs-removed.topo",
        // The Quantum lab with every TAB deleted (`Switch41 "S-..."# "..."`): read as it,
        // to the same 20 roots.
        status: 0,
        says: &[
            "note: left out 19 loopback cables",
            "simulated as cabled, routed updn from 20 roots; 60 switches",
            "each link at its own rate, as the file gives them (4xHDR x 786, 4xSDR x 2)",
        ],
    },
    Expected {
        file: "jabl-ibm-one-switch.topo",
        // Simulated; too few packets in 100 us of 4xSDR to judge a link: inconclusive.
        status: 3,
        says: &[
            "a one-level tree: one switch with 8 node ports; radix 8",
            "note: links at 8 Gb/s, the file's rate (4xSDR x 2)",
        ],
    },
    Expected {
        file: "jabl-nvidia-ufm-lab-loops.topo",
        // Switches of 36 and 12 ports: simulated as cabled.
        status: 0,
        says: &[
            "note: skipped 1 line that is not topology: line 1 (`src/query_smp.c:195;",
            "a warning of ibnetdiscover",
            "note: left out 3 loopback cables",
            "'SwitchIB Mellanox Technologies' 19-21",
            "switch 'SwitchIB Mellanox Technologies' has 36 ports and \
             'MF0;switch-de779e:SX6012/U1' has 12",
            "simulated as cabled, routed minhop",
        ],
    },
    Expected {
        file: "jabl-voltaire-grouped.topo",
        // Switches of 24 and 8 ports: simulated as cabled; too few packets in 100 us of
        // 4xSDR to judge a link: inconclusive.
        status: 3,
        says: &[
            "note: skipped 1 line that is not topology: line 7 (`Non-Chassis Nodes`, a grouping \
             line of ibnetdiscover -g)",
            "switch 'ISR9024 Voltaire' has 24 ports and 'SW-6IB4 Voltaire' has 8",
            "simulated as cabled, routed minhop",
        ],
    },
    Expected {
        file: "junousi-bx900-cas-missing.topo",
        status: 2,
        says: &[
            "junousi-bx900-cas-missing.topo:16: names node 0002c9030003bf82, whose block is \
             missing from the file: the capture was cut short",
        ],
    },
    Expected {
        file: "junousi-sun-dcs36-one-switch.topo",
        // Read as the one-level tree it is; with one host there is no traffic to simulate.
        status: 2,
        says: &[
            "a one-level tree: one switch with 36 node ports; radix 36; 35 of its 36 nodes have \
             no host cabled",
            "links at 32 Gb/s, the file's rate (4xQDR x 1)",
            "uniform needs at least 2 ranks (each sends to another), and has 1",
        ],
    },
    Expected {
        file: "loginoff-sx6036-fattree.topo",
        // Simulated: one cable of 4 between ib1 and ib8 missing, QDR hosts on FDR10 trunks.
        status: 1,
        says: &[
            "a two-level fat tree: 6 leaves (28 node ports each) under 2 spines; radix 36",
            "note: simulated without the missing cables, as the fabric runs: \
             'MF0;ib1:SX6036/U1' -- 'MF0;ib8:SX6036/U1' (3 of 4 cables)",
            "left out 2 hosts cabled to switches above the leaves",
            "tank1 mlx4_0, tank2 mlx4_0",
            "note: each link at its own rate, as the file gives them (4xQDR x 142, 4xFDR10 x 47)",
        ],
    },
    Expected {
        file: "treydock-ports-edr.txt",
        status: 2,
        says: &[
            "treydock-ports-edr.txt: is a ports list of `ibnetdiscover -p`",
            "run ibnetdiscover without -p",
        ],
    },
    Expected {
        file: "treydock-ports-hdr-sharp.txt",
        status: 2,
        says: &["treydock-ports-hdr-sharp.txt: is a ports list of `ibnetdiscover -p`"],
    },
    Expected {
        file: "treydock-ports-qdr-one.txt",
        status: 2,
        says: &["treydock-ports-qdr-one.txt: is a ports list of `ibnetdiscover -p`"],
    },
    Expected {
        file: "zyp-sonic-router-xdr-excerpt.topo",
        // An IB router's block (indented, spaces for TABs, a 1xXDR link) read; the excerpt
        // lacks the block of the switch it is cabled to.
        status: 2,
        says: &[
            "zyp-sonic-router-xdr-excerpt.topo:6: names node b8e924030000b921, whose block is \
             missing from the file: the capture was cut short",
        ],
    },
];

/// `fabric sim` of `file` into `out`, a short uniform workload, with `extra` arguments.
fn sim(file: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let (file, out) = (file.to_str().unwrap(), out.to_str().unwrap());
    let mut args = vec![
        "fabric",
        "sim",
        "--topology",
        file,
        "--workload",
        "uniform,load=0.5,bytes=16KiB",
        "--end",
        "100us",
        "--out",
        out,
    ];
    args.extend(extra);
    hostping(&args)
}

#[test]
fn every_real_capture_is_read_as_it_is_or_refused_naming_why() {
    let mut files: Vec<String> = std::fs::read_dir(folder())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "SOURCES.md")
        .collect();
    files.sort();
    let mut listed: Vec<&str> = EXPECTED.iter().map(|e| e.file).collect();
    listed.sort();
    assert_eq!(files, listed, "every capture has its outcome written down");
    let sources = std::fs::read_to_string(folder().join("SOURCES.md")).unwrap();
    let out = temp_dir("fabric-real-inputs");
    for expected in EXPECTED {
        assert!(
            sources.contains(&format!("| {} |", expected.file)),
            "{} has no source in SOURCES.md",
            expected.file
        );
        let o = sim(&folder().join(expected.file), &out.join(expected.file), &[]);
        let err = stderr(&o);
        assert_eq!(
            o.status.code(),
            Some(expected.status),
            "{}: {err}",
            expected.file
        );
        for part in expected.says {
            assert!(
                err.contains(part),
                "{}: wants `{part}` in: {err}",
                expected.file
            );
        }
    }
}

/// What a failed `hostping fabric discover > FILE` leaves (nothing, or only the comment
/// header) is named so, not reported as a TOML file missing `radix`.
#[test]
fn an_empty_or_comment_only_file_says_so() {
    let dir = temp_dir("fabric-real-inputs-empty");
    for (name, text, says) in [
        ("empty.topo", "", "empty.topo: is empty"),
        (
            "comments.topo",
            "#\n# Topology file: generated by hostping fabric discover\n#\n",
            "comments.topo: holds only comments, no topology",
        ),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let o = sim(&file, &dir.join("out"), &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
        assert!(!stderr(&o).contains("radix`"), "{}", stderr(&o));
        assert!(!stderr(&o).contains("missing field"), "{}", stderr(&o));
    }
}

/// `--link-gbps` runs every link at one rate and says what the file's rates were; ranks run
/// on the hosts, not on free leaf ports; the summary names the missing cables for scripts.
#[test]
fn link_gbps_overrides_the_files_rates_and_says_so() {
    let out = temp_dir("fabric-real-inputs-rates");
    let file = folder().join("loginoff-sx6036-fattree.topo");
    let o = sim(&file, &out, &["--link-gbps", "100"]);
    let err = stderr(&o);
    assert!(
        err.contains(
            "note: every link at 100 Gb/s as --link-gbps says; the file's cables run at \
             4xQDR x 142, 4xFDR10 x 47"
        ),
        "{err}"
    );
    // 142 hosts on 168 tree nodes: the free leaf ports get no rank.
    let out_text = String::from_utf8_lossy(&o.stdout);
    assert!(out_text.contains("job uniform: 142 ranks"), "{out_text}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["fabric"]["missing_cables"],
        serde_json::json!(["'MF0;ib1:SX6036/U1' -- 'MF0;ib8:SX6036/U1' (3 of 4 cables)"])
    );
}

/// Issue 38, 3: uniform random traffic at 0.3 load on the real two-level fat trees.
/// loginoff's is healthy: 24 hosts a leaf at 4xQDR (32 Gb/s) over 8 trunks at 4xFDR10 (40
/// Gb/s), 2.4:1, so 0.3 load offers the trunks 60 % of what they carry (69 % on ib1, one
/// cable short). It is not diagnosed: the 6 hosts that ib8's missing cable to ib1 led to
/// took the next cable, all of them, 48 Gb/s on a 40 Gb/s trunk, diagnosed `mapping`; they
/// are spread over the 3 cables left now, as a subnet manager balances them. gary's is not
/// healthy for this load: 32 hosts at 4xNDR a leaf over one 4xNDR up link, 32:1, offered 8.4
/// times what it carries, whatever the placement: diagnosed `oversubscription` with those
/// figures, not `mapping`.
#[test]
fn uniform_load_on_the_real_fat_trees_is_no_mapping() {
    let out = temp_dir("fabric-real-inputs-uniform");
    let run = |file: &str, seed: &str| {
        let (path, out) = (folder().join(file), out.join(format!("{file}-{seed}")));
        hostping(&[
            "fabric",
            "sim",
            "--topology",
            path.to_str().unwrap(),
            "--workload",
            "uniform,load=0.3,bytes=16KiB",
            "--end",
            "100us",
            "--seed",
            seed,
            "--out",
            out.to_str().unwrap(),
        ])
    };
    for seed in ["1", "2", "3"] {
        let o = run("loginoff-sx6036-fattree.topo", seed);
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "seed {seed}: {text}{}",
            stderr(&o)
        );
        assert!(text.contains("diagnosis: no_congestion"), "{text}");
        for file in [
            "gary-ibdiagnet2-ndr.ibnetdiscover",
            "gary-ibdiagnet2-ndr-default.ibnetdiscover",
        ] {
            let o = run(file, seed);
            let text = String::from_utf8_lossy(&o.stdout);
            assert_eq!(o.status.code(), Some(1), "{file} seed {seed}: {text}");
            assert!(text.contains("diagnosis: oversubscription"), "{text}");
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                flat.contains(
                    "holds 32 ranks, 12800 Gb/s of node links, over 1 up link of 400 Gb/s \
                     together (32.0:1 oversubscribed); uniform traffic offers 3373 Gb/s up them \
                     (8.4 times what they carry) wherever its ranks run, so no mapping relieves it"
                ),
                "{file}: {text}"
            );
            assert!(!text.contains("diagnosis: mapping"), "{text}");
            // Scripts read the figures from the summary.
            let summary = out.join(format!("{file}-{seed}")).join("summary.json");
            let summary: serde_json::Value =
                serde_json::from_slice(&std::fs::read(summary).unwrap()).unwrap();
            let figures = &summary["diagnosis"]["oversubscription"];
            assert_eq!(
                (figures["ratio"].as_f64(), figures["up_links"].as_u64()),
                (Some(32.0), Some(1)),
                "{figures}"
            );
        }
    }
}
