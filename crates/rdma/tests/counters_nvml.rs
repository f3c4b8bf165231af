//! `rdma::counters::nvml` without a GPU: `testdata/counters/nvml/fake_nvml.c` implements
//! the NVML functions hostping calls (names, prototypes and layouts of nvml.h) and is
//! compiled with `cc -shared -fPIC` at test time, one library per test so that the fake's
//! call counters are not shared. Also: `Nvml::load` on this machine, and the bus-id parser.

use proptest::prelude::*;
use rdma::counters::nvml::{
    parse_bus_id, GpuReading, Nvml, NvmlUnavailable, Throughput, TopologyLevel,
};
use rdma::sysfs::PciAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/counters/nvml/fake_nvml.c"
);

/// Compiles the fake with extra `-D` flags into its own library; `None` (the test is
/// skipped, saying so) only when there is no C compiler.
fn build(tag: &str, defines: &[&str]) -> Option<PathBuf> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fake_nvml-{tag}-{}.so", std::process::id()));
    let result = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .args(defines)
        .arg(SOURCE)
        .output();
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: no C compiler (`cc`) to build {SOURCE}");
            None
        }
        Err(e) => panic!("cannot run cc: {e}"),
        Ok(o) => {
            assert!(
                o.status.success(),
                "cc failed on {SOURCE}:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(out)
        }
    }
}

/// The fake's call counters, read through a handle of our own (dlopen of the same file
/// returns the same instance, and keeps it loaded after `Nvml` drops its handle).
struct FakeCounters(libloading::Library);

impl FakeCounters {
    fn open(path: &Path) -> FakeCounters {
        // SAFETY: the fake has no constructors.
        FakeCounters(unsafe { libloading::Library::new(path) }.unwrap())
    }

    fn calls(&self, what: &str) -> i32 {
        let name = std::ffi::CString::new(what).unwrap();
        // SAFETY: `int fake_nvml_calls(const char *)` in fake_nvml.c.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(*const std::ffi::c_char) -> i32> =
                self.0.get(b"fake_nvml_calls\0").unwrap();
            f(name.as_ptr())
        }
    }
}

fn addr(s: &str) -> PciAddr {
    s.parse().unwrap()
}

fn gpu0() -> GpuReading {
    GpuReading {
        bus_id: addr("0000:3b:00.0"),
        name: Some("NVIDIA A100-SXM4-80GB".into()),
        utilisation_gpu_pct: Some(37),
        utilisation_memory_pct: Some(12),
        // NOT_SUPPORTED: no value, and no error either.
        pcie_tx_kbps: None,
        pcie_rx_kbps: None,
        link_gen_current: Some(4),
        link_gen_max: Some(4),
        link_width_current: Some(16),
        link_width_max: Some(16),
        replay_counter: Some(3),
        error: None,
    }
}

fn gpu1(throughput: Throughput) -> GpuReading {
    let measured = throughput == Throughput::Measure;
    GpuReading {
        bus_id: addr("0000:b1:00.0"),
        name: Some("NVIDIA A100-SXM4-80GB".into()),
        utilisation_gpu_pct: None,
        utilisation_memory_pct: None,
        pcie_tx_kbps: measured.then_some(123_456),
        pcie_rx_kbps: measured.then_some(654_321),
        link_gen_current: Some(3),
        link_gen_max: Some(4),
        link_width_current: Some(8),
        link_width_max: Some(16),
        replay_counter: Some(0),
        error: Some(
            "nvmlDeviceGetUtilizationRates: device fell off the bus or has otherwise become \
             inacessible"
                .into(),
        ),
    }
}

#[test]
fn reads_both_gpus_and_a_lost_counter_hides_nothing_else() {
    let Some(lib) = build("read", &[]) else {
        return;
    };
    let nvml = Nvml::load_from(&lib).unwrap();
    assert_eq!(nvml.device_count().unwrap(), 2);
    let all = nvml.read_all(Throughput::Measure).unwrap();
    assert_eq!(all, vec![Ok(gpu0()), Ok(gpu1(Throughput::Measure))]);
}

#[test]
fn pcie_throughput_is_measured_only_when_asked() {
    let Some(lib) = build("throughput", &[]) else {
        return;
    };
    let fake = FakeCounters::open(&lib);
    let nvml = Nvml::load_from(&lib).unwrap();
    let all = nvml.read_all(Throughput::Skip).unwrap();
    assert_eq!(all, vec![Ok(gpu0()), Ok(gpu1(Throughput::Skip))]);
    assert_eq!(fake.calls("throughput"), 0);
    nvml.read_index(1, Throughput::Measure).unwrap();
    assert_eq!(fake.calls("throughput"), 2, "one call per direction");
}

#[test]
fn shutdown_runs_once_on_drop() {
    let Some(lib) = build("shutdown", &[]) else {
        return;
    };
    let fake = FakeCounters::open(&lib);
    let nvml = Nvml::load_from(&lib).unwrap();
    assert_eq!((fake.calls("init"), fake.calls("shutdown")), (1, 0));
    drop(nvml);
    assert_eq!((fake.calls("init"), fake.calls("shutdown")), (1, 1));
}

#[test]
fn gpus_are_found_by_sysfs_address_and_placed_in_the_tree() {
    let Some(lib) = build("busid", &[]) else {
        return;
    };
    let nvml = Nvml::load_from(&lib).unwrap();
    let (a, b) = (addr("0000:3b:00.0"), addr("0000:b1:00.0"));
    assert_eq!(nvml.read_bus_id(a, Throughput::Skip).unwrap(), gpu0());
    assert_eq!(nvml.common_ancestor(a, b).unwrap(), TopologyLevel::System);
    assert_eq!(nvml.common_ancestor(b, b).unwrap(), TopologyLevel::Internal);
    let err = nvml
        .read_bus_id(addr("0000:17:00.0"), Throughput::Skip)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "nvmlDeviceGetHandleByPciBusId_v2(0000:17:00.0): a query to find an object was unsuccessful"
    );
    assert_eq!(err.code, 6);
    let err = nvml.read_index(2, Throughput::Skip).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nvmlDeviceGetHandleByIndex_v2(2): a supplied argument was invalid"
    );
}

#[test]
fn readings_serialise_with_the_sysfs_bus_id() {
    let json = serde_json::to_value(gpu1(Throughput::Skip)).unwrap();
    assert_eq!(json["bus_id"], "0000:b1:00.0");
    assert_eq!(json["utilisation_gpu_pct"], serde_json::Value::Null);
    assert_eq!(json["link_width_current"], 8);
    assert_eq!(
        serde_json::to_value(TopologyLevel::HostBridge).unwrap(),
        "host_bridge"
    );
}

#[test]
fn driver_not_loaded_is_unavailable_not_an_error() {
    let Some(lib) = build("noinit", &["-DFAKE_INIT_RC=9"]) else {
        return;
    };
    let fake = FakeCounters::open(&lib);
    let err = Nvml::load_from(&lib).err().unwrap();
    assert_eq!(
        err.to_string(),
        "no GPUs (NVML: the NVIDIA kernel driver is not loaded (nvmlInit_v2: NVIDIA driver is not loaded))"
    );
    assert_eq!(fake.calls("shutdown"), 0, "no shutdown without an init");
}

#[test]
fn a_missing_symbol_is_named() {
    let Some(lib) = build("nosym", &["-DFAKE_OMIT_REPLAY"]) else {
        return;
    };
    let NvmlUnavailable { reason } = Nvml::load_from(&lib).err().unwrap();
    assert!(
        reason.contains("has no symbol nvmlDeviceGetPcieReplayCounter"),
        "{reason}"
    );
}

#[test]
fn a_missing_file_is_unavailable() {
    let NvmlUnavailable { reason } = Nvml::load_from("/nonexistent/libnvidia-ml.so.1")
        .err()
        .unwrap();
    assert!(
        reason.starts_with("cannot open /nonexistent/libnvidia-ml.so.1"),
        "{reason}"
    );
}

/// This machine has no NVIDIA driver: `load` says so. On a GPU host it must read.
#[test]
fn load_on_this_machine() {
    match Nvml::load() {
        Err(e) => {
            let text = e.to_string();
            eprintln!("{text}");
            assert!(text.starts_with("no GPUs (NVML: "), "{text}");
            assert!(text.contains("libnvidia-ml.so"), "{text}");
        }
        Ok(nvml) => {
            for gpu in nvml.read_all(Throughput::Skip).unwrap() {
                let gpu = gpu.unwrap();
                eprintln!("{}: {:?}", gpu.bus_id, gpu.name);
            }
        }
    }
}

#[test]
fn bus_ids_normalise_to_sysfs_form() {
    assert_eq!(
        parse_bus_id("00000000:3B:00.0").unwrap().to_string(),
        "0000:3b:00.0"
    );
    assert_eq!(
        parse_bus_id("00010000:B1:1F.7").unwrap().to_string(),
        "10000:b1:1f.7"
    );
    for bad in [
        "",
        "3B:00.0",
        "00000000:3B:00",
        "000000000:3B:00.0",
        "0000:3B:20.0",
    ] {
        assert!(parse_bus_id(bad).is_err(), "{bad:?}");
    }
}

proptest! {
    #[test]
    fn bus_id_parser_never_panics(s in "\\PC{0,24}") {
        let _ = parse_bus_id(&s);
    }

    #[test]
    fn nvml_bus_ids_round_trip(domain in any::<u32>(), bus in any::<u8>(), dev in 0u8..32, func in 0u8..8) {
        let nvml_form = format!("{domain:08X}:{bus:02X}:{dev:02X}.{func:X}");
        let parsed = parse_bus_id(&nvml_form).unwrap();
        prop_assert_eq!(parsed, PciAddr { domain, bus, dev, func });
        prop_assert_eq!(parse_bus_id(&parsed.to_string()).unwrap(), parsed);
    }
}
