//! `rdma::counters::uncore` against fixture PMU trees (`testdata/counters/pmu/<tree>/`:
//! a two-socket Ice Lake-SP, a two-socket AMD Zen 4, a VM with core PMUs only), and the
//! real `perf_event_open` path on this machine's `software` PMU.

use proptest::prelude::*;
use rdma::counters::uncore::{
    open_failure, parse_cpulist, parse_terms, plan, pmu_names, rates, BusFamily, BusMetric,
    BusRate, BusReading, ConfigWord, Counter, CounterValue, EventAlias, EventConfig, FormatField,
    Gap, Pmu, RootBus, SampledCounter, Term, UncoreMonitor, UncoreSample,
};
use rdma::sysfs::SysRoot;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> SysRoot {
    SysRoot::new(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/counters/pmu")
            .join(name),
    )
}

fn load(tree: &str, pmu: &str) -> Pmu {
    Pmu::load(&fixture(tree), pmu).unwrap_or_else(|e| panic!("{tree}/{pmu}: {e}"))
}

fn bus(s: &str) -> RootBus {
    s.parse().unwrap()
}

fn field(s: &str) -> FormatField {
    s.parse().unwrap()
}

fn cfg(config: u64, config1: u64) -> EventConfig {
    EventConfig {
        config,
        config1,
        config2: 0,
    }
}

/// A copy of a fixture tree (plain files only) in a folder of its own.
fn copy_of(tree: &str, test: &str) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("uncore-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy(fixture(tree).root(), &dir);
    dir
}

const CORE_PMUS: [&str; 7] = [
    "breakpoint",
    "cpu",
    "kprobe",
    "msr",
    "software",
    "tracepoint",
    "uprobe",
];

// ---------------------------------------------------------------------------------------
// The VM tree

#[test]
fn a_vm_has_core_pmus_only_and_no_bus_counters() {
    let root = fixture("vm");
    assert_eq!(pmu_names(&root).unwrap(), CORE_PMUS);
    assert_eq!(
        plan(&root).unwrap_err().to_string(),
        "unavailable: no uncore PMU for memory, inter-socket or root-port traffic (a virtual \
         machine, or a kernel without uncore drivers); PMUs here: breakpoint, cpu, kprobe, \
         msr, software, tracepoint, uprobe"
    );
    assert_eq!(
        UncoreMonitor::open(&root).unwrap_err(),
        plan(&root).unwrap_err()
    );
}

#[test]
fn core_pmus_of_the_vm_load_and_build_configs() {
    let cpu = load("vm", "cpu");
    assert_eq!((cpu.type_id, cpu.cpus.as_slice()), (4, &[][..]));
    assert_eq!(cpu.formats["ldlat"], field("config1:0-15"));
    assert_eq!(cpu.formats["edge"].mask, 1 << 18);
    // An alias with a config1 term, and an alias plus extra terms.
    assert_eq!(cpu.config("mem-loads").unwrap(), cfg(0x1cd, 3));
    assert_eq!(
        cpu.config("cpu-cycles,edge,cmask=2").unwrap(),
        cfg(0x3c | 1 << 18 | 2 << 24, 0)
    );
    // A later term replaces the field an alias set.
    assert_eq!(cpu.config("ref-cycles,umask=0x1").unwrap(), cfg(0x100, 0));

    assert_eq!(load("vm", "msr").config("aperf").unwrap(), cfg(1, 0));
    assert_eq!(
        load("vm", "uprobe")
            .config("retprobe,ref_ctr_offset=0x10")
            .unwrap(),
        cfg(1 | 0x10 << 32, 0)
    );
    let software = load("vm", "software");
    assert!(software.formats.is_empty() && software.events.is_empty());
    assert_eq!(software.config("config=0x9").unwrap(), cfg(9, 0));
    assert_eq!(
        software.config("event=1").unwrap_err().to_string(),
        "software: `event=0x1`: no such field (format/ has: nothing)"
    );
}

#[test]
fn permission_errors_name_perf_event_paranoid() {
    let denied = std::io::Error::from_raw_os_error(libc::EACCES);
    let reason = open_failure(
        &fixture("vm"),
        "uncore_imc_0/cas_count_read/ on CPU 0",
        &denied,
    )
    .reason;
    assert!(
        reason.starts_with("perf_event_open(uncore_imc_0/cas_count_read/ on CPU 0): "),
        "{reason}"
    );
    assert!(
        reason.contains("/proc/sys/kernel/perf_event_paranoid <= 0 (it is 2) or CAP_PERFMON"),
        "{reason}"
    );
    let missing = std::io::Error::from_raw_os_error(libc::ENOENT);
    assert!(open_failure(&fixture("vm"), "x", &missing)
        .reason
        .ends_with("the kernel has no such PMU type or event"));
}

// ---------------------------------------------------------------------------------------
// Ice Lake-SP

#[test]
fn icx_pmus_are_read_whole() {
    let imc = load("icx-2s", "uncore_imc_0");
    let cas = |umask: &str| EventAlias {
        terms: format!("event=0x04,umask={umask}"),
        scale: Some(6.103515625e-5),
        unit: Some("MiB".into()),
    };
    assert_eq!(
        imc,
        Pmu {
            name: "uncore_imc_0".into(),
            type_id: 20,
            cpus: vec![0, 64],
            formats: [
                ("edge", "config:18"),
                ("event", "config:0-7"),
                ("inv", "config:23"),
                ("thresh", "config:24-31"),
                ("umask", "config:8-15"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), field(v)))
            .collect(),
            events: BTreeMap::from([
                ("cas_count_read".into(), cas("0x0f")),
                ("cas_count_write".into(), cas("0x30")),
            ]),
            die_buses: BTreeMap::new(),
        }
    );
    assert_eq!(imc.events["cas_count_read"].bytes_per_count(), Some(64.0));

    let iio = load("icx-2s", "uncore_iio_1");
    assert_eq!(
        iio.die_buses,
        BTreeMap::from([(0, bus("0000:16")), (1, bus("0000:97"))])
    );
    assert!(load("icx-2s", "uncore_iio_5").die_buses.is_empty());
    let free = load("icx-2s", "uncore_iio_free_running_1");
    assert_eq!(free.events.len(), 9, "ioclk and bw_in_port0..7");
    assert_eq!(free.events["bw_in_port3"].terms, "event=0xff,umask=0x23");
    assert_eq!(free.events["bw_in_port3"].bytes_per_count(), Some(32.0));
    assert_eq!(free.events["ioclk"].bytes_per_count(), None);
}

#[test]
fn icx_config_words_follow_the_format_bits() {
    let iio = load("icx-2s", "uncore_iio_2");
    // IIO inbound write, part 0, all fc classes: ch_mask and fc_mask sit high in config.
    assert_eq!(
        iio.config("event=0x83,umask=0x01,ch_mask=0x1,fc_mask=0x7")
            .unwrap(),
        cfg(0x83 | 0x01 << 8 | 1 << 36 | 7 << 48, 0)
    );
    // A 12-bit field refuses a 13-bit value, naming the PMU, the term and the bits.
    assert_eq!(
        iio.config("event=0x83,ch_mask=0x1000")
            .unwrap_err()
            .to_string(),
        "uncore_iio_2: `ch_mask=0x1000`: 0x1000 does not fit in the 12 bits of config:36-47"
    );
    assert_eq!(
        iio.config("event=0x83,part=1").unwrap_err().to_string(),
        "uncore_iio_2: `part=0x1`: no such field (format/ has: ch_mask, edge, event, fc_mask, \
         inv, thresh, umask)"
    );
    assert_eq!(
        iio.config("event=0x83,umask=?").unwrap_err().to_string(),
        "uncore_iio_2: `event=0x83,umask=?`: `event=0x83,umask=?` is not an event string \
         like event=0x04,umask=0x03"
    );
    // UPI's umask spans two ranges: value bits 8.. land at config bit 32.
    let upi = load("icx-2s", "uncore_upi_0");
    assert_eq!(upi.formats["umask"], field("config:8-15,32-55"));
    assert_eq!(
        upi.config("event=0x02,umask=0x30f").unwrap(),
        cfg(0x02 | 0x0f << 8 | 0x3 << 32, 0)
    );
}

#[test]
fn icx_plan_counts_memory_upi_and_inbound_root_ports() {
    let plan = plan(&fixture("icx-2s")).unwrap();
    assert_eq!(plan.pmus.len(), 26);
    let count = |family| {
        plan.counters
            .iter()
            .filter(|c| c.metric.family() == family)
            .count()
    };
    // 4 IMCs x 2 events x 2 sockets; 3 links x 2 sockets; 5 mapped stacks x 2 dies x 8 ports.
    assert_eq!(count(BusFamily::Memory), 16);
    assert_eq!(count(BusFamily::InterSocket), 6);
    assert_eq!(count(BusFamily::RootPortIn), 80);
    assert_eq!(
        plan.gaps,
        vec![Gap {
            family: BusFamily::RootPortOut,
            reason: "no bw_out_port<k> event on uncore_iio_free_running_<n> (Ice Lake-SP \
                     counts inbound only)"
                .into()
        }]
    );
    assert_eq!(
        plan.notes,
        [0, 1].map(|die| format!(
            "uncore_iio_free_running_5: no root bus for die {die} (no uncore_iio_5/die{die}: \
             a stack without PCIe, or a kernel before 5.10): not counted"
        ))
    );

    let find = |pmu: &str, event: &str, cpu: u32| {
        plan.counters
            .iter()
            .find(|c| c.pmu == pmu && c.event == event && c.cpu == cpu)
            .unwrap_or_else(|| panic!("no {pmu}/{event}/ on CPU {cpu}"))
    };
    let imc = find("uncore_imc_3", "cas_count_write", 64);
    assert_eq!(imc.metric, BusMetric::MemoryWrite { socket: 1 });
    assert_eq!((imc.pmu_type, imc.config), (23, cfg(0x3004, 0)));
    assert_eq!(imc.bytes_per_count, 64.0);
    assert_eq!(imc.to_string(), "uncore_imc_3/cas_count_write/ on CPU 64");

    let upi = find("uncore_upi_1", "event=0x02,umask=0x0f", 0);
    assert_eq!(
        upi.metric,
        BusMetric::InterSocketTx {
            socket: 0,
            pmu: "uncore_upi_1".into()
        }
    );
    assert_eq!(upi.config, cfg(0x0f02, 0));
    assert!((upi.bytes_per_count - 64.0 / 9.0).abs() < 1e-12);

    // Stack 1 on die 1 (CPU 64) is root bus 0000:97, from uncore_iio_1/die1.
    let port = find("uncore_iio_free_running_1", "bw_in_port7", 64);
    assert_eq!(
        port.metric,
        BusMetric::RootPortIn {
            root_bus: bus("0000:97")
        }
    );
    assert_eq!((port.config, port.bytes_per_count), (cfg(0x27ff, 0), 32.0));

    let buses: BTreeSet<String> = plan
        .counters
        .iter()
        .filter_map(|c| match &c.metric {
            BusMetric::RootPortIn { root_bus } => Some(root_bus.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        buses.into_iter().collect::<Vec<_>>(),
        [
            "0000:00", "0000:16", "0000:30", "0000:4a", "0000:64", "0000:80", "0000:97", "0000:b0",
            "0000:c9", "0000:e2"
        ]
    );
}

#[test]
fn free_running_pmus_may_carry_their_own_die_files() {
    let dir = copy_of("icx-2s", "own-die");
    let devices = dir.join("sys/bus/event_source/devices");
    std::fs::write(devices.join("uncore_iio_free_running_5/die0"), "0000:7e\n").unwrap();
    let plan = plan(&SysRoot::new(&dir)).unwrap();
    assert!(plan
        .counters
        .iter()
        .any(|c| c.pmu == "uncore_iio_free_running_5"
            && c.metric
                == BusMetric::RootPortIn {
                    root_bus: bus("0000:7e")
                }));
    // Its own files replace uncore_iio_5's (none): die 1 stays unmapped.
    assert_eq!(plan.notes.len(), 1, "{:?}", plan.notes);
}

#[test]
fn a_malformed_file_is_a_gap_naming_it() {
    let dir = copy_of("icx-2s", "malformed");
    let umask = dir.join("sys/bus/event_source/devices/uncore_imc_2/format/umask");
    std::fs::write(&umask, "config:15-8\n").unwrap();
    let root = SysRoot::new(&dir);
    let err = Pmu::load(&root, "uncore_imc_2").unwrap_err();
    assert_eq!(err.path(), umask);
    let plan = plan(&root).unwrap();
    assert_eq!(plan.gaps[0].family, BusFamily::Memory);
    assert_eq!(
        plan.gaps[0].reason,
        format!(
            "{}: `config:15-8` is not a perf format like config:0-7 or config1:8-15,24-27",
            umask.display()
        )
    );
    assert!(plan
        .counters
        .iter()
        .all(|c| c.metric.family() != BusFamily::Memory));
}

// ---------------------------------------------------------------------------------------
// AMD Zen 4

#[test]
fn zen4_counts_memory_through_umc_only() {
    let plan = plan(&fixture("zen4-2s")).unwrap();
    assert_eq!(plan.counters.len(), 16, "8 UMCs x read/write, one CPU each");
    let umc5 = plan
        .counters
        .iter()
        .filter(|c| c.pmu == "amd_umc_5")
        .map(|c| {
            (
                c.metric.clone(),
                c.cpu,
                c.pmu_type,
                c.config,
                c.bytes_per_count,
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(
        umc5,
        vec![
            (
                BusMetric::MemoryRead { socket: 1 },
                96,
                18,
                cfg(0x10a, 0),
                64.0
            ),
            (
                BusMetric::MemoryWrite { socket: 1 },
                96,
                18,
                cfg(0x20a, 0),
                64.0
            ),
        ]
    );
    let families: Vec<BusFamily> = plan.gaps.iter().map(|g| g.family).collect();
    assert_eq!(
        families,
        [
            BusFamily::InterSocket,
            BusFamily::RootPortIn,
            BusFamily::RootPortOut
        ]
    );
    assert_eq!(
        plan.gaps[1].to_string(),
        "root ports inbound: unavailable: no uncore_iio_free_running_<n> PMU (AMD has no perf \
         PMU for root ports)"
    );
}

#[test]
fn zen4_data_fabric_formats_span_two_ranges() {
    let df = load("zen4-2s", "amd_df");
    assert_eq!(df.cpus, [0, 96]);
    assert_eq!(
        df.config("event=0x3ff,umask=0xfff").unwrap(),
        cfg(0xff | 0x3 << 32 | 0xff << 8 | 0xf << 24, 0)
    );
    let l3 = load("zen4-2s", "amd_l3");
    assert_eq!(l3.cpus.len(), 24);
    assert_eq!(
        l3.config("event=0x04,umask=0xff,enallcores,enallslices,threadmask=0x3")
            .unwrap(),
        EventConfig {
            config: 0xff04,
            config1: 0,
            config2: 1 << 47 | 1 << 46 | 0x3 << 56
        }
    );
    assert_eq!(l3.formats["threadmask"].word, ConfigWord::Config2);
}

#[test]
fn zen4_without_umc_says_which_kernel_is_needed() {
    let dir = copy_of("zen4-2s", "no-umc");
    for n in 0..8 {
        std::fs::remove_dir_all(dir.join(format!("sys/bus/event_source/devices/amd_umc_{n}")))
            .unwrap();
    }
    let reason = plan(&SysRoot::new(&dir)).unwrap_err().reason;
    assert!(
        reason.starts_with(
            "memory channels: unavailable: amd_df is present, but DRAM channel counts need \
             amd_umc_<n> PMUs (Linux 6.8+ on Zen 4 and later); inter-socket links: unavailable:"
        ),
        "{reason}"
    );
    assert!(
        reason.ends_with(
            "PMUs here: amd_df, amd_l3, breakpoint, cpu, kprobe, msr, software, tracepoint, uprobe"
        ),
        "{reason}"
    );
}

// ---------------------------------------------------------------------------------------
// Samples and rates

fn counter(
    metric: &BusMetric,
    bytes_per_count: f64,
    count: u64,
    enabled: u64,
    running: u64,
) -> SampledCounter {
    SampledCounter {
        metric: metric.clone(),
        bytes_per_count,
        value: CounterValue {
            count,
            time_enabled_ns: enabled,
            time_running_ns: running,
        },
    }
}

#[test]
fn readings_sum_each_metric_scaled_for_multiplexing() {
    let read0 = BusMetric::MemoryRead { socket: 0 };
    let port = BusMetric::RootPortIn {
        root_bus: bus("0000:16"),
    };
    let sample = UncoreSample {
        counters: vec![
            counter(&read0, 64.0, 10, 100, 100),
            counter(&port, 32.0, 3, 100, 100),
            // Ran half the time: counts twice what it saw.
            counter(&read0, 64.0, 5, 100, 50),
        ],
    };
    assert_eq!(
        sample.readings(),
        vec![
            BusReading {
                metric: read0,
                bytes: 64 * 20
            },
            BusReading {
                metric: port,
                bytes: 96
            },
        ]
    );
}

#[test]
fn rates_wrap_at_48_bits_and_say_when_a_counter_never_ran() {
    let upi = BusMetric::InterSocketTx {
        socket: 0,
        pmu: "uncore_upi_0".into(),
    };
    let write = BusMetric::MemoryWrite { socket: 1 };
    let top = (1u64 << 48) - 100;
    let prev = UncoreSample {
        counters: vec![
            counter(&upi, 9.0, top, 0, 0),
            counter(&write, 64.0, 7, 1_000, 1_000),
        ],
    };
    let cur = UncoreSample {
        counters: vec![
            // Wrapped: 100 to the top, 900 after it.
            counter(&upi, 9.0, 900, 2_000_000_000, 2_000_000_000),
            // Not scheduled in the interval.
            counter(&write, 64.0, 7, 2_000, 1_000),
        ],
    };
    assert_eq!(
        rates(&prev, &cur, 2.0),
        vec![
            BusRate {
                metric: write,
                bytes_per_s: None
            },
            BusRate {
                metric: upi,
                bytes_per_s: Some(1000.0 * 9.0 / 2.0)
            },
        ]
    );
    assert!(rates(&prev, &cur, 0.0)
        .iter()
        .all(|r| r.bytes_per_s.is_none()));
}

// ---------------------------------------------------------------------------------------
// This machine

/// The real syscall: the `software` PMU's cpu-clock (`config=0`, PERF_COUNT_SW_CPU_CLOCK,
/// nanoseconds) on CPU 0 through `Counter`, read twice.
#[test]
fn software_cpu_clock_counts_through_perf_event_open() {
    let root = SysRoot::system();
    let software = Pmu::load(&root, "software").unwrap();
    assert_eq!(software.type_id, 1, "PERF_TYPE_SOFTWARE");
    let config = software.config("config=0").unwrap();
    let counter = match Counter::open(software.type_id, config, 0) {
        Ok(counter) => counter,
        Err(e) => {
            let errno = e.raw_os_error();
            assert!(
                matches!(
                    errno,
                    Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::ENOENT)
                ),
                "unexpected perf_event_open error {e}"
            );
            let reason = open_failure(&root, "software/config=0/ on CPU 0", &e).reason;
            eprintln!("perf_event_open is refused here: {reason}");
            if errno != Some(libc::ENOENT) {
                assert!(reason.contains("perf_event_paranoid"), "{reason}");
            }
            return;
        }
    };
    let metric = BusMetric::MemoryRead { socket: 0 };
    let sample = |c: &Counter| UncoreSample {
        counters: vec![SampledCounter {
            metric: metric.clone(),
            bytes_per_count: 1.0,
            value: c.read().unwrap(),
        }],
    };
    let (a, t0) = (sample(&counter), Instant::now());
    std::thread::sleep(Duration::from_millis(100));
    let (b, t1) = (sample(&counter), Instant::now());
    let (va, vb) = (a.counters[0].value, b.counters[0].value);
    assert!(vb.count > va.count, "{va:?} -> {vb:?}");
    assert!(vb.time_enabled_ns > va.time_enabled_ns && vb.time_running_ns > 0);
    // cpu-clock counts nanoseconds: about 1e9 per second of wall time.
    let rate = rates(&a, &b, (t1 - t0).as_secs_f64())[0]
        .bytes_per_s
        .unwrap();
    assert!((0.5e9..2e9).contains(&rate), "cpu-clock ran at {rate} ns/s");
}

/// The whole monitor on the real kernel: a tree whose `uncore_imc_0` is really the
/// `software` PMU (type 1) with a cpu-clock "CAS" alias of 1 byte per nanosecond, and whose
/// `uncore_upi_0` has a type no kernel registers. Memory opens and counts; the inter-socket
/// metrics become gaps naming the refusal.
#[test]
fn the_monitor_opens_reads_and_reports_what_failed() {
    let dir = std::fs::canonicalize(copy_of("vm", "monitor")).unwrap();
    let w = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{text}\n")).unwrap();
    };
    let imc = "sys/bus/event_source/devices/uncore_imc_0";
    w(&format!("{imc}/type"), "1");
    w(&format!("{imc}/cpumask"), "0");
    for event in ["cas_count_read", "cas_count_write"] {
        w(&format!("{imc}/events/{event}"), "config=0");
        w(&format!("{imc}/events/{event}.unit"), "B");
    }
    let upi = "sys/bus/event_source/devices/uncore_upi_0";
    w(&format!("{upi}/type"), "2147483647");
    w(&format!("{upi}/cpumask"), "0");
    w(&format!("{upi}/format/event"), "config:0-7");
    w(&format!("{upi}/format/umask"), "config:8-15");
    let root = SysRoot::new(&dir);

    let monitor = match UncoreMonitor::open(&root) {
        Ok(monitor) => monitor,
        Err(e) => {
            // A sandbox that refuses perf_event_open: the reason says so.
            assert!(e.reason.contains("perf_event_open(uncore_imc_0/"), "{e}");
            return;
        }
    };
    let opened: Vec<String> = monitor.counters().map(|c| c.to_string()).collect();
    assert_eq!(
        opened,
        [
            "uncore_imc_0/cas_count_read/ on CPU 0",
            "uncore_imc_0/cas_count_write/ on CPU 0"
        ]
    );
    let gaps: Vec<String> = monitor.gaps().iter().map(Gap::to_string).collect();
    assert_eq!(gaps.len(), 3, "{gaps:?}");
    assert!(
        gaps[2].starts_with(
            "inter-socket links: unavailable: inter-socket tx, socket 0, uncore_upi_0: \
             perf_event_open(uncore_upi_0/event=0x02,umask=0x0f/ on CPU 0): "
        ),
        "{gaps:?}"
    );
    let (a, t0) = (monitor.read().unwrap(), Instant::now());
    std::thread::sleep(Duration::from_millis(100));
    let (b, t1) = (monitor.read().unwrap(), Instant::now());
    let metrics: Vec<BusMetric> = b.readings().into_iter().map(|r| r.metric).collect();
    assert_eq!(
        metrics,
        [
            BusMetric::MemoryRead { socket: 0 },
            BusMetric::MemoryWrite { socket: 0 }
        ]
    );
    for rate in rates(&a, &b, (t1 - t0).as_secs_f64()) {
        let r = rate.bytes_per_s.unwrap();
        assert!((0.5e9..2e9).contains(&r), "{rate:?}");
    }
}

#[test]
fn this_machine_has_no_uncore_pmus_and_says_which_it_has() {
    let root = SysRoot::system();
    let names = pmu_names(&root).unwrap();
    let uncore = names
        .iter()
        .any(|n| n.starts_with("uncore_") || n.starts_with("amd_"));
    match UncoreMonitor::open(&root) {
        Err(e) => {
            eprintln!("{e}");
            assert!(
                e.reason
                    .ends_with(&format!("PMUs here: {}", names.join(", "))),
                "{e}"
            );
        }
        Ok(monitor) => {
            assert!(uncore, "opened without uncore PMUs");
            monitor.read().unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Parsers

#[test]
fn parsers_accept_kernel_forms_and_refuse_others() {
    assert_eq!(field("config:8-15,24-27").to_string(), "config:8-15,24-27");
    assert_eq!(field("config:0-7,4-9,18").to_string(), "config:0-9,18");
    for bad in [
        "",
        "config",
        "config:",
        "config:8-",
        "config:64",
        "config3:0-7",
        "config:7-0",
    ] {
        assert!(bad.parse::<FormatField>().is_err(), "{bad:?}");
    }
    assert_eq!(
        parse_terms("event=0x04, umask=3,edge").unwrap(),
        vec![
            Term {
                name: "event".into(),
                value: Some(4)
            },
            Term {
                name: "umask".into(),
                value: Some(3)
            },
            Term {
                name: "edge".into(),
                value: None
            },
        ]
    );
    for bad in [
        "",
        "event=",
        "=4",
        "event=0x",
        "event=0xg",
        "a,,b",
        "chip=?",
    ] {
        assert!(parse_terms(bad).is_err(), "{bad:?}");
    }
    assert_eq!(parse_cpulist("0,64").unwrap(), [0, 64]);
    assert_eq!(parse_cpulist("0-3,8-9\n").unwrap(), [0, 1, 2, 3, 8, 9]);
    assert_eq!(parse_cpulist("").unwrap(), [0u32; 0]);
    for bad in ["0-", "3-1", "a", "0,,1", "0-99999999"] {
        assert!(parse_cpulist(bad).is_err(), "{bad:?}");
    }
    assert_eq!(bus("0000:B1").to_string(), "0000:b1");
    assert!("0000:1".parse::<RootBus>().is_err());
}

fn word() -> impl Strategy<Value = ConfigWord> {
    prop_oneof![
        Just(ConfigWord::Config),
        Just(ConfigWord::Config1),
        Just(ConfigWord::Config2)
    ]
}

/// Field value bits read back out of the config word: the inverse of deposit.
fn extract(mask: u64, word: u64) -> u64 {
    (0..64)
        .filter(|b| mask >> b & 1 == 1)
        .enumerate()
        .fold(0, |value, (i, bit)| value | (word >> bit & 1) << i)
}

proptest! {
    #[test]
    fn parsers_never_panic(s in "\\PC{0,40}") {
        let _ = s.parse::<FormatField>();
        let _ = parse_terms(&s);
        let _ = parse_cpulist(&s);
        let _ = s.parse::<RootBus>();
    }

    #[test]
    fn near_valid_formats_never_panic(s in "config[12]?:[0-9,-]{0,12}") {
        let _ = s.parse::<FormatField>();
    }

    #[test]
    fn formats_round_trip(word in word(), mask in 1u64..) {
        let f = FormatField { word, mask };
        prop_assert_eq!(f.to_string().parse::<FormatField>().unwrap(), f);
    }

    #[test]
    fn terms_round_trip(terms in prop::collection::vec(("[a-z_][a-z0-9_.-]{0,10}", prop::option::of(any::<u64>())), 1..6)) {
        let terms: Vec<Term> = terms.into_iter().map(|(name, value)| Term { name, value }).collect();
        let text = terms.iter().map(Term::to_string).collect::<Vec<_>>().join(",");
        prop_assert_eq!(parse_terms(&text).unwrap(), terms);
    }

    #[test]
    fn cpulists_round_trip(cpus in prop::collection::btree_set(0u32..4096, 0..40)) {
        let text = cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        prop_assert_eq!(parse_cpulist(&text).unwrap(), cpus.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn cpu_ranges_expand(lo in 0u32..2000, len in 0u32..100) {
        let text = format!("{lo}-{}", lo + len);
        prop_assert_eq!(parse_cpulist(&text).unwrap(), (lo..=lo + len).collect::<Vec<_>>());
    }

    #[test]
    fn root_buses_round_trip(domain in 0u32..=0xffff_ffff, b in any::<u8>()) {
        let rb = RootBus { domain, bus: b };
        prop_assert_eq!(rb.to_string().parse::<RootBus>().unwrap(), rb);
    }

    /// A value that fits lands in exactly the field's bits and reads back; one bit more
    /// is refused.
    #[test]
    fn config_values_land_in_their_bits(word in word(), mask in 1u64.., value in any::<u64>()) {
        let f = FormatField { word, mask };
        let width = mask.count_ones();
        let value = if width == 64 { value } else { value & ((1 << width) - 1) };
        let pmu = Pmu {
            name: "p".into(),
            type_id: 99,
            cpus: vec![],
            formats: BTreeMap::from([("f".to_string(), f)]),
            events: BTreeMap::new(),
            die_buses: BTreeMap::new(),
        };
        let c = pmu.config(&format!("f={value:#x}")).unwrap();
        let got = match word {
            ConfigWord::Config => c.config,
            ConfigWord::Config1 => c.config1,
            ConfigWord::Config2 => c.config2,
        };
        prop_assert_eq!(got & !mask, 0);
        prop_assert_eq!(extract(mask, got), value);
        if width < 64 {
            let too_wide = format!("f={:#x}", 1u64 << width);
            prop_assert!(pmu.config(&too_wide).is_err());
        }
    }

    #[test]
    fn counter_differences_are_modulo_2_48(start in 0u64..1 << 48, delta in 0u64..1 << 48) {
        let m = BusMetric::MemoryRead { socket: 0 };
        let at = |count| UncoreSample { counters: vec![counter(&m, 1.0, count, 5, 5)] };
        let end = (start + delta) & ((1 << 48) - 1);
        let prev = UncoreSample { counters: vec![counter(&m, 1.0, start, 0, 0)] };
        prop_assert_eq!(rates(&prev, &at(end), 1.0)[0].bytes_per_s, Some(delta as f64));
    }
}
