//! `rdma::netlink` against reply buffers built from the kernel's layout
//! (`testdata/netlink/*.hex`, made by `make_fixtures.py` there, which says how), the
//! numbers against the installed `<rdma/rdma_netlink.h>`, property tests of the parsers,
//! and the real socket on this machine.

use proptest::prelude::*;
use rdma::netlink::mr::{emit_table, odp_regions, parse_device, parse_table};
use rdma::netlink::nldev::{attr, cmd, message_type};
use rdma::netlink::{
    Device, DriverAttr, DriverValue, Dump, MrEntry, MrStats, NetlinkError, OdpCounters, OdpKind,
    Owner, RdmaNetlink, Step, WireError,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The receive buffers of a fixture: one per `# recv N` block of hex bytes.
fn buffers(name: &str) -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/netlink")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out: Vec<Vec<u8>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("# recv ") {
            out.push(Vec::new());
        } else if !line.starts_with('#') {
            let buf = out.last_mut().expect("bytes after a # recv line");
            buf.extend(
                line.split_whitespace()
                    .map(|b| u8::from_str_radix(b, 16).unwrap()),
            );
        }
    }
    out
}

type Parse<T> = fn(&[u8], &str) -> Result<Vec<T>, WireError>;

fn devices(p: &[u8], at: &str) -> Result<Vec<Device>, WireError> {
    Ok(vec![parse_device(p, at)?])
}
fn mrs(p: &[u8], at: &str) -> Result<Vec<MrEntry>, WireError> {
    parse_table(p, at, MrEntry::parse)
}
fn stats(p: &[u8], at: &str) -> Result<Vec<MrStats>, WireError> {
    parse_table(p, at, MrStats::parse)
}

/// Feeds every buffer of `fixture` to a dump of sequence `seq`; the steps and what it found.
fn run<T>(fixture: &str, seq: u32, parse: Parse<T>) -> (Vec<Step>, Vec<T>) {
    let mut dump = Dump::new("test dump", seq);
    let steps = buffers(fixture)
        .iter()
        .map(|b| dump.absorb(b, parse).unwrap())
        .collect();
    (steps, dump.into_found())
}

fn mlx5_0() -> Device {
    Device {
        index: 0,
        name: "mlx5_0".into(),
    }
}

fn odp(word: &str) -> Vec<DriverAttr> {
    vec![DriverAttr {
        name: "odp".into(),
        value: DriverValue::Str(word.into()),
        hex: false,
    }]
}

fn expected_mrs() -> Vec<MrEntry> {
    let mr = |mrn, length, key, pdn, owner, driver| MrEntry {
        device: mlx5_0(),
        mrn,
        length,
        rkey: Some(key),
        lkey: Some(key),
        iova: None,
        pdn,
        owner,
        driver,
    };
    vec![
        mr(
            1,
            131072,
            0x3f00,
            None,
            Owner::Kernel("nvme_rdma".into()),
            vec![],
        ),
        mr(6, 8 << 20, 0x1b4d1, Some(3), Owner::Process(4242), vec![]),
        mr(
            7,
            1 << 30,
            0x1c0a2,
            Some(4),
            Owner::Process(5150),
            odp("explicit"),
        ),
        mr(
            8,
            u64::MAX,
            0x500,
            Some(4),
            Owner::Process(5150),
            odp("implicit"),
        ),
    ]
}

#[test]
fn the_device_dump_names_each_device() {
    let (steps, found) = run("dev-get.hex", 1, devices);
    assert_eq!(steps, [Step::More, Step::Complete { interrupted: false }]);
    assert_eq!(
        found,
        [
            mlx5_0(),
            Device {
                index: 1,
                name: "mlx5_1".into()
            }
        ]
    );
}

#[test]
fn the_mr_dump_gives_every_region_across_messages() {
    let (steps, found) = run("mr-dump-mlx5_0.hex", 2, mrs);
    assert_eq!(
        steps,
        [
            Step::More,
            Step::More,
            Step::Complete { interrupted: false }
        ]
    );
    assert_eq!(found, expected_mrs());
    let kinds: Vec<Option<OdpKind>> = found.iter().map(MrEntry::odp).collect();
    assert_eq!(
        kinds,
        [None, None, Some(OdpKind::Explicit), Some(OdpKind::Implicit)]
    );
}

#[test]
fn the_statistics_dump_gives_odp_counters_joined_to_their_regions() {
    let (steps, found) = run("mr-stat-mlx5_0.hex", 3, stats);
    assert_eq!(steps, [Step::More, Step::Complete { interrupted: false }]);
    let ids: Vec<u32> = found.iter().map(|s| s.mrn).collect();
    assert_eq!(ids, [1, 6, 7, 8]);
    assert!(found[0].counters.is_empty() && found[0].odp().is_none());
    assert_eq!(
        found[3].counters,
        [
            ("page_faults".to_string(), 5210933),
            ("page_invalidations".to_string(), 4096),
            ("page_prefetch".to_string(), 65536)
        ]
    );
    let regions = odp_regions(&expected_mrs(), &found);
    assert_eq!(regions.len(), 2);
    assert_eq!(regions[0].mr.mrn, 7);
    assert_eq!(regions[0].kind, OdpKind::Explicit);
    assert_eq!(
        regions[0].counters,
        Some(OdpCounters {
            page_faults: Some(1843),
            page_invalidations: Some(12),
            page_prefetch: Some(0),
        })
    );
    assert_eq!(regions[1].mr.owner, Owner::Process(5150));
    assert_eq!(regions[1].kind, OdpKind::Implicit);
    assert_eq!(regions[1].counters.unwrap().page_faults, Some(5210933));
    // Without statistics the region is still listed, its counters absent, not zero.
    assert_eq!(odp_regions(&expected_mrs(), &[])[0].counters, None);
}

/// Buffers the real kernel sent (Linux 6.1, rxe, captured in the Soft-RoCE guest by
/// tests/guest.rs): the device list, one 64 KiB MR of task 164, its statistics entry.
#[test]
fn captured_rxe_replies_parse_and_re_emit_byte_for_byte() {
    let rxe0 = Device {
        index: 0,
        name: "rxe0".into(),
    };
    let (steps, found) = run("dev-get-rxe0.hex", 1, devices);
    assert_eq!(steps.last(), Some(&Step::Complete { interrupted: false }));
    assert_eq!(found, std::slice::from_ref(&rxe0));

    let (steps, found) = run("mr-dump-rxe0.hex", 2, mrs);
    assert_eq!(steps, [Step::More, Step::Complete { interrupted: false }]);
    let want = MrEntry {
        device: rxe0.clone(),
        mrn: 0,
        length: 65536,
        rkey: Some(0x273),
        lkey: Some(0x273),
        iova: None,
        pdn: Some(1),
        owner: Owner::Process(164),
        driver: vec![],
    };
    assert_eq!(found, std::slice::from_ref(&want));
    assert_eq!(found[0].odp(), None);
    assert_eq!(
        emit_table(&rxe0, &found, MrEntry::emit),
        payload("mr-dump-rxe0.hex", 0, 0)
    );

    let (steps, found) = run("mr-stat-rxe0.hex", 3, stats);
    assert_eq!(steps, [Step::More, Step::Complete { interrupted: false }]);
    let want_stats = MrStats {
        device: rxe0.clone(),
        mrn: 0,
        counters: vec![],
    };
    assert_eq!(found, [want_stats]);
    assert_eq!(
        emit_table(&rxe0, &found, MrStats::emit),
        payload("mr-stat-rxe0.hex", 0, 0)
    );
    // The statistics replies are of type STAT_GET.
    let buf = &buffers("mr-stat-rxe0.hex")[0];
    let replies = rdma::netlink::dump::replies(buf, "capture").unwrap();
    assert!(matches!(
        replies[0].body,
        rdma::netlink::Body::Data { message_type: t, .. } if t == message_type(cmd::STAT_GET)
    ));
    assert!(odp_regions(&[want], &[]).is_empty());
}

#[test]
fn a_vanished_device_is_a_refusal_with_its_errno() {
    let (steps, found) = run::<MrEntry>("mr-dump-gone.hex", 4, mrs);
    assert_eq!(steps, [Step::Refused(libc::EINVAL)]);
    assert!(found.is_empty());
}

#[test]
fn replies_to_other_requests_are_ignored() {
    let (steps, found) = run("mr-dump-mlx5_0.hex", 99, mrs);
    assert_eq!(steps, [Step::More; 3]);
    assert!(found.is_empty());
}

/// The payload of message `n` (from 0) of buffer `b` of a fixture.
fn payload(fixture: &str, b: usize, n: usize) -> Vec<u8> {
    let buf = &buffers(fixture)[b];
    let replies = rdma::netlink::dump::replies(buf, "fixture").unwrap();
    match replies[n].body {
        rdma::netlink::Body::Data { payload, .. } => payload.to_vec(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn emitting_the_parsed_entries_gives_the_kernel_bytes_back() {
    let want = expected_mrs();
    assert_eq!(
        emit_table(&mlx5_0(), &want[2..], MrEntry::emit),
        payload("mr-dump-mlx5_0.hex", 1, 0)
    );
    assert_eq!(
        emit_table(&mlx5_0(), &want[..2], MrEntry::emit),
        payload("mr-dump-mlx5_0.hex", 0, 0)
    );
    let (_, parsed) = run("mr-stat-mlx5_0.hex", 3, stats);
    assert_eq!(
        emit_table(&mlx5_0(), &parsed, MrStats::emit),
        payload("mr-stat-mlx5_0.hex", 0, 0)
    );
}

#[test]
fn a_missing_or_short_attribute_is_an_error_naming_the_entry() {
    // A second entry whose RES_MRLEN is a u32 where the kernel puts a u64.
    let mut w = rdma::netlink::AttrWriter::new();
    w.u32(attr::DEV_INDEX, 0)
        .string(attr::DEV_NAME, "mlx5_0")
        .nest(attr::RES_MR, |w| {
            w.nest(attr::RES_MR_ENTRY, |w| {
                w.u64(attr::RES_MRLEN, 4096).u32(attr::RES_MRN, 1);
            })
            .nest(attr::RES_MR_ENTRY, |w| {
                w.u32(attr::RES_MRLEN, 4096).u32(attr::RES_MRN, 2);
            });
        });
    let e = mrs(&w.into_bytes(), "RES_MR_GET reply 1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "RES_MR_GET reply 1, RES_MR_ENTRY 2, RDMA_NLDEV_ATTR_RES_MRLEN: 4 bytes, a u64 is 8"
    );
    // An entry without its MRN.
    let mut w = rdma::netlink::AttrWriter::new();
    w.u32(attr::DEV_INDEX, 0)
        .string(attr::DEV_NAME, "mlx5_0")
        .nest(attr::RES_MR, |w| {
            w.nest(attr::RES_MR_ENTRY, |w| {
                w.u64(attr::RES_MRLEN, 4096);
            });
        });
    assert_eq!(
        mrs(&w.into_bytes(), "reply").unwrap_err(),
        WireError::Missing {
            at: "reply, RES_MR_ENTRY 1".into(),
            attr: "RDMA_NLDEV_ATTR_RES_MRN"
        }
    );
}

#[test]
fn every_cut_of_a_reply_is_an_error_or_a_shorter_answer_never_a_panic() {
    let buf = &buffers("mr-dump-mlx5_0.hex")[1];
    for len in 0..buf.len() {
        let mut dump = Dump::new("RES_MR_GET dump of mlx5_0", 2);
        match dump.absorb(&buf[..len], mrs) {
            Ok(step) => assert_ne!(step, Step::Complete { interrupted: false }, "{len}"),
            Err(e) => assert!(
                e.at()
                    .starts_with("RES_MR_GET dump of mlx5_0 reply buffer 1"),
                "{len}: {e}"
            ),
        }
    }
}

#[test]
fn the_numbers_match_the_installed_header() {
    const HEADER: &str = "/usr/include/rdma/rdma_netlink.h";
    if !Path::new(HEADER).exists() {
        assert!(
            std::env::var_os("HOSTPING_REQUIRE_VERBS_HEADERS").is_none(),
            "{HEADER} is missing (install linux-libc-dev)"
        );
        eprintln!("skipped: {HEADER} not installed");
        return;
    }
    let ours: Vec<(&str, u32)> = vec![
        ("RDMA_NL_NLDEV", 5),
        ("RDMA_NLDEV_CMD_GET", cmd::GET.into()),
        ("RDMA_NLDEV_CMD_RES_MR_GET", cmd::RES_MR_GET.into()),
        ("RDMA_NLDEV_CMD_STAT_GET", cmd::STAT_GET.into()),
        (
            "RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_MR_GET)",
            message_type(cmd::RES_MR_GET).into(),
        ),
        ("RDMA_NLDEV_ATTR_PAD", attr::PAD.into()),
        ("RDMA_NLDEV_ATTR_DEV_INDEX", attr::DEV_INDEX.into()),
        ("RDMA_NLDEV_ATTR_DEV_NAME", attr::DEV_NAME.into()),
        ("RDMA_NLDEV_ATTR_RES_PID", attr::RES_PID.into()),
        ("RDMA_NLDEV_ATTR_RES_KERN_NAME", attr::RES_KERN_NAME.into()),
        ("RDMA_NLDEV_ATTR_RES_MR", attr::RES_MR.into()),
        ("RDMA_NLDEV_ATTR_RES_MR_ENTRY", attr::RES_MR_ENTRY.into()),
        ("RDMA_NLDEV_ATTR_RES_RKEY", attr::RES_RKEY.into()),
        ("RDMA_NLDEV_ATTR_RES_LKEY", attr::RES_LKEY.into()),
        ("RDMA_NLDEV_ATTR_RES_IOVA", attr::RES_IOVA.into()),
        ("RDMA_NLDEV_ATTR_RES_MRLEN", attr::RES_MRLEN.into()),
        ("RDMA_NLDEV_ATTR_DRIVER", attr::DRIVER.into()),
        ("RDMA_NLDEV_ATTR_DRIVER_STRING", attr::DRIVER_STRING.into()),
        (
            "RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE",
            attr::DRIVER_PRINT_TYPE.into(),
        ),
        ("RDMA_NLDEV_ATTR_DRIVER_S32", attr::DRIVER_S32.into()),
        ("RDMA_NLDEV_ATTR_DRIVER_U32", attr::DRIVER_U32.into()),
        ("RDMA_NLDEV_ATTR_DRIVER_S64", attr::DRIVER_S64.into()),
        ("RDMA_NLDEV_ATTR_DRIVER_U64", attr::DRIVER_U64.into()),
        ("RDMA_NLDEV_ATTR_RES_PDN", attr::RES_PDN.into()),
        ("RDMA_NLDEV_ATTR_RES_MRN", attr::RES_MRN.into()),
        ("RDMA_NLDEV_ATTR_STAT_RES", attr::STAT_RES.into()),
        (
            "RDMA_NLDEV_ATTR_STAT_HWCOUNTERS",
            attr::STAT_HWCOUNTERS.into(),
        ),
        (
            "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY",
            attr::STAT_HWCOUNTER_ENTRY.into(),
        ),
        (
            "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME",
            attr::STAT_HWCOUNTER_ENTRY_NAME.into(),
        ),
        (
            "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE",
            attr::STAT_HWCOUNTER_ENTRY_VALUE.into(),
        ),
        (
            "RDMA_NLDEV_PRINT_TYPE_HEX",
            rdma::netlink::nldev::PRINT_TYPE_HEX.into(),
        ),
    ];
    let mut c =
        String::from("#include <stdio.h>\n#include <rdma/rdma_netlink.h>\nint main(void) {\n");
    for (name, _) in &ours {
        c.push_str(&format!("  printf(\"%d\\n\", (int)({name}));\n"));
    }
    c.push_str("  return 0;\n}\n");
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("netlink-h-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("n.c"), c).unwrap();
    let cc = Command::new("cc")
        .arg(dir.join("n.c"))
        .arg("-o")
        .arg(dir.join("n"))
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(dir.join("n")).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let header: Vec<u32> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let want: Vec<u32> = ours.iter().map(|(_, v)| *v).collect();
    let names: Vec<&str> = ours.iter().map(|(n, _)| *n).collect();
    assert_eq!((names.clone(), want), (names, header));
}

#[test]
fn the_real_socket_answers_or_says_why_not() {
    match RdmaNetlink::open(Duration::from_secs(2)) {
        Err(NetlinkError::NoRdmaNetlink { source }) => {
            // This machine's kernel has no InfiniBand: the protocol is refused.
            assert_eq!(source.raw_os_error(), Some(libc::EPROTONOSUPPORT));
        }
        Err(NetlinkError::PermissionDenied { request, .. }) => {
            assert!(request.contains("NETLINK_RDMA"), "{request}")
        }
        Err(e) => panic!("unexpected: {e}"),
        Ok(mut nl) => {
            // A kernel with RDMA: the dumps complete (possibly empty).
            let devices = nl.devices().unwrap();
            for d in &devices {
                nl.memory_regions(d).unwrap();
                nl.mr_statistics(d).unwrap();
            }
            nl.odp_regions().unwrap();
            // An index no device has is "gone".
            let ghost = Device {
                index: 1 << 30,
                name: "ghost".into(),
            };
            assert!(matches!(
                nl.memory_regions(&ghost),
                Err(NetlinkError::DeviceGone { .. })
            ));
        }
    }
}

fn arb_owner() -> impl Strategy<Value = Owner> {
    prop_oneof![
        any::<u32>().prop_map(Owner::Process),
        "[a-z_]{1,16}".prop_map(Owner::Kernel),
        Just(Owner::Hidden),
    ]
}

fn arb_driver() -> impl Strategy<Value = DriverAttr> {
    let value = prop_oneof![
        "[ -~]{0,20}".prop_map(DriverValue::Str),
        any::<u32>().prop_map(DriverValue::U32),
        any::<i32>().prop_map(DriverValue::S32),
        any::<u64>().prop_map(DriverValue::U64),
        any::<i64>().prop_map(DriverValue::S64),
    ];
    ("[a-z_]{1,12}", value, any::<bool>()).prop_map(|(name, value, hex)| DriverAttr {
        name,
        value,
        hex,
    })
}

fn arb_mr() -> impl Strategy<Value = MrEntry> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<Option<u32>>(),
        any::<Option<u64>>(),
        any::<Option<u32>>(),
        arb_owner(),
        prop::collection::vec(arb_driver(), 0..4),
    )
        .prop_map(|(mrn, length, key, iova, pdn, owner, driver)| MrEntry {
            device: mlx5_0(),
            mrn,
            length,
            rkey: key,
            lkey: key.map(|k| k ^ 1),
            iova,
            pdn,
            owner,
            driver,
        })
}

proptest! {
    #[test]
    fn generated_regions_round_trip(entries in prop::collection::vec(arb_mr(), 0..6)) {
        let bytes = emit_table(&mlx5_0(), &entries, MrEntry::emit);
        prop_assert_eq!(mrs(&bytes, "reply").unwrap(), entries);
    }

    #[test]
    fn generated_statistics_round_trip(
        entries in prop::collection::vec(
            (any::<u32>(), prop::collection::vec(("[a-z_]{1,20}", any::<u64>()), 0..5)),
            0..6,
        )
    ) {
        let entries: Vec<MrStats> = entries
            .into_iter()
            .map(|(mrn, counters)| MrStats { device: mlx5_0(), mrn, counters })
            .collect();
        let bytes = emit_table(&mlx5_0(), &entries, MrStats::emit);
        prop_assert_eq!(stats(&bytes, "reply").unwrap(), entries);
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut dump = Dump::new("garbage", 0);
        if let Err(e) = dump.absorb(&bytes, mrs) {
            prop_assert!(e.at().starts_with("garbage reply buffer 1"), "{}", e);
        }
        let _ = mrs(&bytes, "garbage");
        let _ = stats(&bytes, "garbage");
    }

    #[test]
    fn a_flipped_byte_of_a_real_reply_never_panics(at in 0usize..400, value: u8) {
        for fixture in ["mr-dump-mlx5_0.hex", "mr-stat-mlx5_0.hex", "dev-get.hex"] {
            let mut buf = buffers(fixture).concat();
            let i = at % buf.len();
            buf[i] = value;
            let mut dump = Dump::new("flipped", 2);
            let _ = dump.absorb(&buf, mrs);
            let mut dump = Dump::new("flipped", 3);
            let _ = dump.absorb(&buf, stats);
        }
    }
}
