//! RNIC counters (`rdma::counters::rnic`) against whole fixture trees
//! (`testdata/counters/rnic/<host>/sys`, `testdata/hosts/<host>/sys`), compared as whole
//! values; the ethtool reader against this machine's interfaces; and both against this
//! machine's `/sys`.

mod common;

use common::TempTree;
use rdma::counters::ethtool::{read_stats, EthtoolError};
use rdma::counters::rnic::{
    counter_delta, drops_delta, rcv_gbps, read_ports, read_ports_lenient, xmit_gbps, Counter,
    PmaTable, PortCounters,
};
use rdma::sysfs::{DiscoverError, LinkLayer, PortState, SysRoot};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn counters_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/counters/rnic")
        .join(name)
}

fn host_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/hosts")
        .join(name)
}

fn read(root: &Path) -> Vec<PortCounters> {
    read_ports(&SysRoot::new(root)).unwrap_or_else(|e| panic!("{}: {e}", root.display()))
}

/// A copy of a fixture, symlinks kept, in a folder removed on drop.
impl TempTree {
    fn port_file(&self, rel: &str) -> PathBuf {
        self.0.join("sys/class/infiniband/mlx5_0/ports/1").join(rel)
    }

    fn set(&self, rel: &str, value: u64) {
        fs::write(self.port_file(rel), format!("{value}\n")).unwrap();
    }

    /// Puts a folder where the file `rel` was: reading it fails with EISDIR, for root too
    /// (mode 000 would not stop root, which these tests run as).
    fn make_unreadable(&self, rel: &str) -> PathBuf {
        let path = self.port_file(rel);
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        path
    }

    fn read(&self) -> Vec<PortCounters> {
        read(&self.0)
    }
}

fn hw(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

fn pma(pairs: &[(&str, u64, u8, bool)]) -> BTreeMap<String, Counter> {
    pairs
        .iter()
        .map(|(n, value, bits, saturated)| {
            let c = Counter {
                value: *value,
                bits: Some(*bits),
                saturated: *saturated,
            };
            (n.to_string(), c)
        })
        .collect()
}

const MLX5_ROCE_HW: [(&str, u64); 29] = [
    ("duplicate_request", 16),
    ("implied_nak_seq_err", 2),
    ("local_ack_timeout_err", 3),
    ("np_cnp_sent", 88_102),
    ("np_ecn_marked_roce_packets", 91_554),
    ("out_of_buffer", 0),
    ("out_of_sequence", 412),
    ("packet_seq_err", 37),
    ("req_cqe_error", 0),
    ("req_cqe_flush_error", 0),
    ("req_remote_access_errors", 0),
    ("req_remote_invalid_request", 0),
    ("resp_cqe_error", 0),
    ("resp_cqe_flush_error", 0),
    ("resp_local_length_error", 0),
    ("resp_remote_access_errors", 0),
    ("rnr_nak_retry_err", 0),
    ("roce_adp_retrans", 5),
    ("roce_adp_retrans_to", 0),
    ("roce_slow_restart", 0),
    ("roce_slow_restart_cnps", 0),
    ("roce_slow_restart_trans", 0),
    ("rp_cnp_handled", 120_447),
    ("rp_cnp_ignored", 0),
    ("rx_atomic_requests", 0),
    ("rx_dct_connect", 0),
    ("rx_icrc_encapsulated", 0),
    ("rx_read_requests", 1_022_871),
    ("rx_write_requests", 4_418_220_931),
];

fn mlx5_roce_port() -> PortCounters {
    PortCounters {
        device: "mlx5_0".into(),
        port: 1,
        state: PortState::Active,
        phys_state: Some("5: LinkUp".into()),
        rate_gbps: Some(200.0),
        link_layer: LinkLayer::Ethernet,
        pci: Some("0000:01:00.0".parse().unwrap()),
        netdev: Some("ens1f0np0".into()),
        pma: PmaTable::Extended,
        counters: pma(&[
            ("VL15_dropped", 0, 16, false),
            ("excessive_buffer_overrun_errors", 0, 4, false),
            ("link_downed", 0, 8, false),
            ("link_error_recovery", 0, 8, false),
            ("local_link_integrity_errors", 0, 4, false),
            ("multicast_rcv_packets", 0, 64, false),
            ("multicast_xmit_packets", 0, 64, false),
            ("port_rcv_constraint_errors", 0, 8, false),
            ("port_rcv_data", 22_884_280_112_028, 64, false),
            ("port_rcv_errors", 0, 16, false),
            ("port_rcv_packets", 22_347_930_773, 64, false),
            ("port_rcv_remote_physical_errors", 0, 16, false),
            ("port_rcv_switch_relay_errors", 0, 16, false),
            ("port_xmit_constraint_errors", 0, 8, false),
            ("port_xmit_data", 780_192_975_556, 64, false),
            ("port_xmit_discards", 0, 16, false),
            ("port_xmit_packets", 2_901_887_441, 64, false),
            ("port_xmit_wait", 918_274_112, 32, false),
            ("symbol_error", 0, 16, false),
            ("unicast_rcv_packets", 22_347_930_773, 64, false),
            ("unicast_xmit_packets", 2_901_887_441, 64, false),
        ]),
        hw_counters: hw(&MLX5_ROCE_HW),
        device_hw_counters: hw(&MLX5_ROCE_HW),
        lifespan_ms: Some(10),
    }
}

#[test]
fn an_mlx5_roce_port_is_read_whole() {
    let ports = read(&counters_fixture("mlx5-roce"));
    assert_eq!(ports, vec![mlx5_roce_port()]);
    let port = &ports[0];
    // The same bytes as rx_vport_rdma_unicast_bytes of the ethtool fixture.
    assert_eq!(port.rcv_bytes(), Some(91_537_120_448_112));
    assert_eq!(port.xmit_bytes(), Some(3_120_771_902_224));
    assert_eq!(
        port.drop_counters(),
        BTreeMap::from([
            ("excessive_buffer_overrun_errors", 0),
            ("out_of_buffer", 0),
            ("out_of_sequence", 412),
            ("port_rcv_errors", 0),
            ("port_xmit_discards", 0),
        ])
    );
}

#[test]
fn a_32_bit_table_flags_every_counter_stuck_at_its_maximum() {
    let ports = read(&counters_fixture("mlx5-ib-saturated"));
    let [port] = &ports[..] else {
        panic!("{ports:?}")
    };
    assert_eq!(port.pma, PmaTable::Base);
    assert_eq!(port.link_layer, LinkLayer::InfiniBand);
    assert_eq!(port.netdev.as_deref(), Some("ibp59s0"), "from device/net/");
    assert_eq!(port.pci, Some("0000:3b:00.0".parse().unwrap()));
    let saturated: Vec<(&str, Option<u8>)> = port
        .counters
        .iter()
        .filter(|(_, c)| c.saturated)
        .map(|(n, c)| (n.as_str(), c.bits))
        .collect();
    assert_eq!(
        saturated,
        [
            ("link_downed", Some(8)),
            ("local_link_integrity_errors", Some(4)),
            ("port_rcv_data", Some(32)),
            ("port_xmit_data", Some(32)),
            ("symbol_error", Some(16)),
        ]
    );
    assert_eq!(port.counters["port_xmit_wait"].bits, Some(32));
    assert_eq!(port.counters["port_rcv_packets"].bits, Some(32));
    // A stuck data counter gives no byte count and no throughput, even against itself.
    assert_eq!((port.rcv_bytes(), port.xmit_bytes()), (None, None));
    assert_eq!(rcv_gbps(port, port, 1.0), None);
    assert_eq!(counter_delta(port, port, "symbol_error"), None);
    assert_eq!(counter_delta(port, port, "port_rcv_errors"), Some(0));
    assert_eq!(
        port.hw_counters
            .keys()
            .filter(|n| n.starts_with("roce_"))
            .count(),
        0
    );
    assert!(port.device_hw_counters.is_empty());
    assert_eq!(port.lifespan_ms, Some(10));
}

#[test]
fn an_old_kernel_s_counters_ext_supplies_the_64_bit_data_counters() {
    let ports = read(&counters_fixture("mlx4-ib-legacy"));
    assert_eq!(
        ports
            .iter()
            .map(|p| (p.device.as_str(), p.port, p.state.clone(), p.rate_gbps))
            .collect::<Vec<_>>(),
        [
            ("mlx4_0", 1, PortState::Active, Some(56.0)),
            ("mlx4_0", 2, PortState::Down, Some(10.0)),
        ]
    );
    let up = &ports[0];
    assert_eq!(up.pma, PmaTable::Base);
    assert!(up.counters["port_rcv_data"].saturated);
    assert_eq!(
        up.counters["port_rcv_data_64"],
        Counter {
            value: 2_211_009_783_412,
            bits: Some(64),
            saturated: false
        }
    );
    assert_eq!(up.counters["port_multicast_rcv_packets"].bits, Some(64));
    assert_eq!(up.rcv_bytes(), Some(4 * 2_211_009_783_412));
    assert_eq!(up.xmit_bytes(), Some(4 * 1_630_115_220_188));
    // Two IPoIB netdevs on one function: which is whose is not in device/net/.
    assert_eq!(
        (up.netdev.as_deref(), ports[1].netdev.as_deref()),
        (None, None)
    );
    assert!(up.hw_counters.is_empty() && up.lifespan_ms.is_none());
}

#[test]
fn no_pma_is_unsupported_not_an_error() {
    let ports = read(&counters_fixture("cxgb4-no-pma"));
    let [port] = &ports[..] else {
        panic!("{ports:?}")
    };
    assert_eq!(
        (port.device.as_str(), port.pma, port.counters.len()),
        ("cxgb4_0", PmaTable::Unsupported, 0)
    );
    assert_eq!(port.netdev.as_deref(), Some("enp2s0f4"));
    assert_eq!((port.rcv_bytes(), drops_delta(port, port)), (None, None));
}

#[test]
fn the_rxe_guest_has_hw_counters_but_no_pma() {
    let ports = read(&host_fixture("rxe-guest"));
    let names = [
        "ack_deferred",
        "completer_retry_err",
        "duplicate_request",
        "link_downed",
        "out_of_seq_request",
        "rcvd_pkts",
        "rcvd_rnr_err",
        "rcvd_seq_err",
        "rdma_recvs",
        "rdma_sends",
        "retry_exceeded_err",
        "retry_rnr_exceeded_err",
        "send_err",
        "send_rnr_err",
        "sent_pkts",
    ];
    let expected = PortCounters {
        device: "rxe0".into(),
        port: 1,
        state: PortState::Active,
        phys_state: Some("5: LinkUp".into()),
        rate_gbps: Some(2.5),
        link_layer: LinkLayer::Ethernet,
        pci: None,
        netdev: Some("eth0".into()),
        pma: PmaTable::Absent,
        counters: BTreeMap::new(),
        hw_counters: names.iter().map(|n| (n.to_string(), 0)).collect(),
        device_hw_counters: BTreeMap::new(),
        lifespan_ms: Some(12),
    };
    assert_eq!(ports, vec![expected]);
    let port = &ports[0];
    assert_eq!(
        port.drop_counters(),
        BTreeMap::from([("out_of_seq_request", 0)])
    );
    assert_eq!(drops_delta(port, port), Some(0));
    assert_eq!((port.rcv_bytes(), rcv_gbps(port, port, 1.0)), (None, None));
}

#[test]
fn a_host_without_rdma_has_no_ports() {
    assert_eq!(read(&host_fixture("no-rdma")), vec![]);
    let bare = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("counters-bare-{}", std::process::id()));
    fs::create_dir_all(bare.join("sys/class/infiniband")).unwrap();
    assert_eq!(read(&bare), vec![], "an empty class folder");
    fs::remove_dir_all(&bare).unwrap();
    let (ports, errors) = read_ports_lenient(&SysRoot::new(host_fixture("no-rdma")));
    assert!(ports.is_empty() && errors.is_empty());
}

#[test]
fn every_dgx_a100_port_has_extended_counters_and_device_hw_counters() {
    let ports = read(&host_fixture("dgx-a100"));
    assert_eq!(
        ports
            .iter()
            .map(|p| (p.device.as_str(), p.netdev.as_deref().unwrap(), p.pma))
            .collect::<Vec<_>>(),
        [
            ("mlx5_0", "ibp21s0", PmaTable::Extended),
            ("mlx5_1", "enp53s0np0", PmaTable::Extended),
            ("mlx5_2", "ibp149s0", PmaTable::Extended),
            ("mlx5_3", "enp181s0np0", PmaTable::Extended),
            ("mlx5_4", "enp209s0np0", PmaTable::Extended),
        ]
    );
    for p in &ports[..4] {
        assert_eq!(p.counters.len(), 21, "{}", p.device);
        assert!(p.rcv_bytes().unwrap() > 1 << 32, "{}", p.device);
        assert_eq!(p.device_hw_counters, p.hw_counters, "{}", p.device);
        let roce = p.link_layer == LinkLayer::Ethernet;
        assert_eq!(p.hw_counters.contains_key("rp_cnp_handled"), roce);
        assert_eq!(p.lifespan_ms, Some(10));
    }
    // The DOWN port has moved nothing; its unicast_* files still show the extended table.
    assert_eq!(ports[4].state, PortState::Down);
    assert_eq!(ports[4].rcv_bytes(), Some(0));
}

#[test]
fn deltas_give_throughput_and_refuse_saturated_or_backward_counters() {
    let tree = TempTree::copy_of(&counters_fixture("mlx5-roce"), "rnic-deltas");
    let t0 = tree.read();
    // One second later: 145 Gb/s received, 2.5 Gb/s sent, 3 packets out of sequence.
    tree.set("counters/port_rcv_data", 22_884_280_112_028 + 4_531_250_000);
    tree.set("counters/port_xmit_data", 780_192_975_556 + 78_125_000);
    tree.set("hw_counters/out_of_sequence", 415);
    let t1 = tree.read();
    let (p0, p1) = (&t0[0], &t1[0]);
    assert_eq!(rcv_gbps(p0, p1, 1.0), Some(145.0));
    assert_eq!(xmit_gbps(p0, p1, 1.0), Some(2.5));
    assert_eq!(rcv_gbps(p0, p1, 0.0), None);
    assert_eq!(counter_delta(p0, p1, "port_rcv_data"), Some(4_531_250_000));
    assert_eq!(drops_delta(p0, p1), Some(3));
    assert_eq!(counter_delta(p0, p1, "no_such_counter"), None);

    // A reset (perfquery -R) makes every counter go backwards.
    assert_eq!(rcv_gbps(p1, p0, 1.0), None);
    assert_eq!(drops_delta(p1, p0), None);

    // A 16-bit error counter that saturated hides any later drop.
    tree.set("counters/port_rcv_errors", 0xFFFF);
    let t2 = tree.read();
    assert!(t2[0].counters["port_rcv_errors"].saturated);
    assert_eq!(drops_delta(p1, &t2[0]), None);
    assert_eq!(rcv_gbps(p1, &t2[0], 1.0), Some(0.0));
}

#[test]
fn an_unreadable_counter_is_an_error_naming_it_and_a_lenient_read_keeps_the_rest() {
    let tree = TempTree::copy_of(&counters_fixture("mlx5-roce"), "rnic-unreadable");
    let bad = tree.make_unreadable("counters/port_rcv_errors");
    let err = read_ports(&SysRoot::new(&tree.0)).unwrap_err();
    assert!(matches!(err, DiscoverError::Unreadable { .. }), "{err}");
    assert_eq!(err.path(), bad);
    assert!(
        err.to_string().contains("counters/port_rcv_errors"),
        "{err}"
    );

    let (ports, errors) = read_ports_lenient(&SysRoot::new(&tree.0));
    assert_eq!(errors, vec![err]);
    let mut expected = mlx5_roce_port();
    expected.counters.remove("port_rcv_errors");
    assert_eq!(ports, vec![expected]);
}

#[test]
fn a_malformed_counter_is_an_error_naming_it() {
    let tree = TempTree::copy_of(&counters_fixture("mlx5-roce"), "rnic-malformed");
    let path = tree.port_file("hw_counters/out_of_buffer");
    fs::write(&path, "12abc\n").unwrap();
    let err = read_ports(&SysRoot::new(&tree.0)).unwrap_err();
    assert_eq!(
        err,
        DiscoverError::Malformed {
            path: path.clone(),
            reason: "`12abc` is not a counter of decimal digits".into()
        }
    );
    let (ports, errors) = read_ports_lenient(&SysRoot::new(&tree.0));
    assert_eq!(errors, vec![err]);
    assert!(!ports[0].hw_counters.contains_key("out_of_buffer"));
    assert_eq!(ports[0].hw_counters.len(), MLX5_ROCE_HW.len() - 1);
}

#[test]
fn a_lenient_read_leaves_out_a_port_whose_state_cannot_be_read() {
    let tree = TempTree::copy_of(&counters_fixture("mlx5-roce"), "rnic-state");
    let bad = tree.make_unreadable("state");
    let err = read_ports(&SysRoot::new(&tree.0)).unwrap_err();
    assert_eq!(err.path(), bad);
    let (ports, errors) = read_ports_lenient(&SysRoot::new(&tree.0));
    assert_eq!((ports, errors), (vec![], vec![err]));
}

#[test]
fn the_json_view_writes_the_pci_address_as_sysfs_does() {
    let v = serde_json::to_value(mlx5_roce_port()).unwrap();
    assert_eq!(v["pci"], "0000:01:00.0");
    assert_eq!(v["pma"], "extended");
    assert_eq!(
        v["counters"]["port_rcv_data"],
        serde_json::json!({"value": 22_884_280_112_028u64, "bits": 64, "saturated": false})
    );
}

#[test]
fn this_machine_s_sys_is_read() {
    // No RDMA here (checked, not assumed): then no ports; with RDMA, ports and no error.
    let ports = read_ports(&SysRoot::system()).expect("reading /sys");
    if !Path::new("/sys/class/infiniband").exists() {
        assert_eq!(ports, vec![]);
    }
}

#[test]
fn ethtool_on_loopback_has_no_statistics_and_a_missing_interface_is_enodev() {
    assert_eq!(
        read_stats("lo"),
        Err(EthtoolError::NoStatistics {
            ifname: "lo".into()
        })
    );
    let err = read_stats("hostping-none0").unwrap_err();
    assert_eq!(
        err,
        EthtoolError::NoSuchInterface {
            ifname: "hostping-none0".into()
        }
    );
    assert_eq!(err.errno(), Some(libc::ENODEV));
    assert!(err.to_string().contains("hostping-none0") && err.to_string().contains("ENODEV"));
}

#[test]
fn ethtool_reads_the_real_interfaces_of_this_machine() {
    let Ok(entries) = fs::read_dir("/sys/class/net") else {
        eprintln!("no /sys/class/net: nothing to read");
        return;
    };
    for entry in entries {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        match read_stats(&name) {
            Ok(stats) => {
                assert!(!stats.is_empty(), "{name}");
                for (stat, _) in &stats {
                    assert!(
                        !stat.is_empty() && !stat.ends_with(' ') && !stat.contains('\0'),
                        "{name}: {stat:?}"
                    );
                }
                // Twice in a row: the same names (a driver reconfigured in between would
                // be a reason to differ, not expected here).
                let again = read_stats(&name).unwrap();
                let names =
                    |s: &[(String, u64)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
                assert_eq!(names(&stats), names(&again), "{name}");
            }
            Err(EthtoolError::NoStatistics { .. } | EthtoolError::PermissionDenied { .. }) => {}
            Err(e) => panic!("{name}: {e}"),
        }
    }
}
