//! Host models read from other tools' topology files (issue 38, section 4): the real files
//! of `testdata/hosts` (provenance in its README), the variants the issue names, and
//! arbitrary input.

use model::builtin::{parse_file, resolve, Format};
use model::{ComponentClass, ComponentId, HostTopology, LinkId, LinkKind};
use proptest::prelude::*;

const WHOLEIO: &str = include_str!("../testdata/hosts/hwloc-32em64t-2n8c2t-pci-wholeio.xml");
const MLX4: &str = include_str!("../testdata/hosts/hwloc-24em64t-2n6c2t-pci.xml");
const DGX2: &str = include_str!("../testdata/hosts/hwloc-nvidia-dgx2.xml");
const NDV4: &str = include_str!("../testdata/hosts/nccl-azure-ndv4-topo.xml");
const NDV5: &str = include_str!("../testdata/hosts/nccl-azure-ndv5-topo.xml");
const NDV4_2021: &str = include_str!("../testdata/hosts/nccl-azure-ndv4-2021-onecpu-topo.xml");
const NDV5_2023: &str = include_str!("../testdata/hosts/nccl-azure-ndv5-2023-topo.xml");
const IBM: &str = include_str!("../testdata/hosts/nccl-ibm-h100-vsi-topo.xml");

fn read(name: &str, text: &str) -> HostTopology {
    parse_file(name, text).unwrap_or_else(|e| panic!("{e}"))
}

fn count(h: &HostTopology, class: ComponentClass) -> usize {
    h.components().iter().filter(|c| c.class() == class).count()
}

/// (NUMA nodes, GPUs, RNICs, PCIe switches, sockets).
fn counts(h: &HostTopology) -> (usize, usize, usize, usize, usize) {
    use ComponentClass as C;
    (
        count(h, C::Memory),
        count(h, C::Gpu),
        count(h, C::Rnic),
        count(h, C::PcieSwitch),
        count(h, C::Cpu),
    )
}

/// Where a component hangs: the upper end of its one upstream link.
fn above(h: &HostTopology, id: &str) -> String {
    let l = h.links_to_cpu(&ComponentId::from(id));
    h.link(&l[0]).unwrap().up.to_string()
}

fn link<'a>(h: &'a HostTopology, id: &str) -> &'a model::Link {
    h.link(&LinkId::from(id))
        .unwrap_or_else(|| panic!("no link {id} in {:?}", h.links()))
}

fn rate(h: &HostTopology, rnic: &str) -> f64 {
    h.component(&rnic.into())
        .unwrap()
        .rnic()
        .unwrap()
        .line_rate_gbps
}

/// Everything a model says, to compare a variant with its file.
fn summary(h: &HostTopology) -> String {
    format!(
        "{} {:?} {:?}",
        h.description,
        h.components(),
        h.links()
            .iter()
            .map(|l| (l.id.to_string(), l.capacity_gbps, l.capacity_known))
            .collect::<Vec<_>>()
    )
}

#[test]
fn the_format_is_told_by_the_first_element_not_the_name() {
    assert_eq!(Format::of("a.xml", WHOLEIO).unwrap(), Format::HwlocXml);
    assert_eq!(Format::of("a.toml", NDV4).unwrap(), Format::NcclTopo);
    let toml = model::builtin::source("dgx-a100").unwrap();
    assert_eq!(Format::of("a.xml", toml).unwrap(), Format::Toml);
    let e = Format::of("svg.xml", "<?xml version=\"1.0\"?>\n<!-- x -->\n<svg/>").unwrap_err();
    assert_eq!(e.source_name, "svg.xml");
    assert!(e.reason.starts_with("the first element is <svg>"), "{e}");
}

#[test]
fn hwloc_wholeio_reads_two_sockets_three_nvidia_gpus_and_the_infiniband_connectx4() {
    let h = read("wholeio.xml", WHOLEIO);
    assert_eq!(h.name, "wholeio");
    // AMD and Matrox displays are no GPUs, Intel I350 Ethernet is no RNIC.
    assert_eq!(counts(&h), (2, 3, 1, 0, 2));
    assert!(h.description.contains("rnic0 mlx5_0"), "{}", h.description);
    // Every GPU and the RNIC sit right below a root port: they hang from their socket.
    assert_eq!(above(&h, "gpu0"), "cpu0");
    assert_eq!(above(&h, "gpu1"), "cpu1");
    assert_eq!(above(&h, "gpu2"), "cpu1");
    assert_eq!(above(&h, "rnic0"), "cpu1");
    // pci_link_speed="0.000000" is no speed: Gen4 x16 is assumed, and the RNIC's rate is it.
    let assumed = model::hostfile::pcie_capacity_gbps("gen4x16").unwrap();
    assert_eq!(link(&h, "rnic0--cpu1").capacity_gbps, assumed);
    assert_eq!(rate(&h, "rnic0"), assumed);
    // NUMALatency 10/20: the two sockets are joined.
    assert_eq!(link(&h, "cpu0--cpu1").kind, LinkKind::InterSocket);
    assert_eq!(
        link(&h, "mem1--cpu1").capacity_gbps,
        model::hostfile::defaults::MEMORY_CHANNEL_GBPS
    );
    let rnic0 = ComponentId::from("rnic0");
    let aff: Vec<&str> = h.affinitive_endpoints(&rnic0).map(|e| e.as_str()).collect();
    assert_eq!(aff, ["mem0", "mem1"]);
}

#[test]
fn hwloc_reads_a_connectx2_by_its_openfabrics_device_whatever_its_class() {
    // mlx4_0 is on a function of class 0x0c06 (InfiniBand serial bus), not 0x02xx.
    let h = read("mlx4.xml", MLX4);
    assert_eq!(counts(&h), (2, 3, 1, 0, 2));
    assert!(h.description.contains("rnic0 mlx4_0"), "{}", h.description);
    assert_eq!(above(&h, "rnic0"), "cpu0");
    // pci_link_speed is GB/s: 2.0 GB/s is 16 Gb/s, 4.0 is 32.
    assert_eq!(link(&h, "rnic0--cpu0").capacity_gbps, 16.0);
    assert_eq!(rate(&h, "rnic0"), 16.0);
    assert_eq!(link(&h, "gpu0--cpu0").capacity_gbps, 32.0);
}

#[test]
fn hwloc_dgx2_without_a_network_device_is_refused_naming_the_file_and_why() {
    let e = parse_file("dgx2.xml", DGX2).unwrap_err();
    assert_eq!(e.source_name, "dgx2.xml");
    assert_eq!(e.field, "rnic");
    assert!(e.reason.contains("names no RDMA NIC"), "{e}");
}

/// Each GPU and RNIC named hangs from `switch`, and each RNIC's loopback to each GPU
/// turns around there, on the GPUs' side of the socket.
fn share_a_switch(h: &HostTopology, switch: &str, gpus: &[&str], rnics: &[&str]) {
    for id in gpus.iter().chain(rnics) {
        assert_eq!(above(h, id), switch, "{id}");
    }
    for rnic in rnics {
        for gpu in gpus {
            let p = h.path(&(*rnic).into(), &(*gpu).into()).unwrap();
            assert_eq!(p.turnaround, model::Turnaround::Switch(switch.into()));
            assert!(p.affinitive, "{rnic} {gpu}");
        }
    }
}

#[test]
fn azure_ndv4_reads_each_virtual_bridge_as_the_switch_its_gpus_and_nics_share() {
    let h = read("ndv4-topo.xml", NDV4);
    // 4 NUMA nodes (AMD NPS), each its own socket; each ffff:ff:0N.0 bridge is the PCIe
    // switch of its two GPUs and two InfiniBand functions, as NCCL reads it.
    assert_eq!(counts(&h), (4, 8, 8, 4, 4));
    // Class 0x020700 without a vendor is an RNIC; named by PCI address, ordered by it.
    assert!(
        h.description.contains("rnic0 0101:00:00.0"),
        "{}",
        h.description
    );
    // Switches in file order: ffff:ff:01.0 (cpu0) over 0003, 0103, 0004, 0104.
    share_a_switch(&h, "sw0", &["gpu2", "gpu3"], &["rnic2", "rnic3"]);
    share_a_switch(&h, "sw1", &["gpu0", "gpu1"], &["rnic0", "rnic1"]);
    share_a_switch(&h, "sw2", &["gpu6", "gpu7"], &["rnic6", "rnic7"]);
    share_a_switch(&h, "sw3", &["gpu4", "gpu5"], &["rnic4", "rnic5"]);
    assert_eq!(link(&h, "sw1--cpu1").kind, LinkKind::RootPort);
    // A GPU of another switch is reached through the sockets.
    let p = h.path(&"rnic0".into(), &"gpu2".into()).unwrap();
    assert!(
        matches!(p.turnaround, model::Turnaround::RootComplex(_)),
        "{p:?}"
    );
    // NCCL joins every pair of <cpu>: 6 inter-socket links among 4.
    let inter = h.links().iter().filter(|l| l.kind == LinkKind::InterSocket);
    assert_eq!(inter.count(), 6);
    let gen4 = model::hostfile::pcie_capacity_gbps("gen4x16").unwrap();
    assert_eq!(link(&h, "rnic0--sw1").capacity_gbps, gen4);
    // The bridge's 16 GT/s x16 is the switch's uplink.
    assert_eq!(link(&h, "sw1--cpu1").capacity_gbps, gen4);
    assert!(h.links().iter().all(|l| l.capacity_known));
}

#[test]
fn azure_ndv4_of_2021_puts_four_switches_under_one_cpu_and_keeps_them_apart() {
    // The first NDv4 file Azure shipped: every bridge under one <cpu>. Looked through, the
    // eight GPUs and eight RNICs would all hang from cpu0, each RNIC as near every GPU.
    let h = read("ndv4-2021.xml", NDV4_2021);
    assert_eq!(counts(&h), (1, 8, 8, 4, 1));
    share_a_switch(&h, "sw0", &["gpu0", "gpu1"], &["rnic0", "rnic1"]);
    share_a_switch(&h, "sw1", &["gpu2", "gpu3"], &["rnic2", "rnic3"]);
    share_a_switch(&h, "sw2", &["gpu4", "gpu5"], &["rnic4", "rnic5"]);
    share_a_switch(&h, "sw3", &["gpu6", "gpu7"], &["rnic6", "rnic7"]);
    let p = h.path(&"rnic0".into(), &"gpu2".into()).unwrap();
    assert_eq!(p.turnaround, model::Turnaround::RootComplex("cpu0".into()));
}

#[test]
fn azure_ndv5_pairs_each_gpu_with_its_rnic_behind_a_gen5_switch() {
    let h = read("ndv5-topo.xml", NDV5);
    assert_eq!(counts(&h), (2, 8, 8, 8, 2));
    let gen5 = model::hostfile::pcie_capacity_gbps("gen5x16").unwrap();
    assert_eq!(rate(&h, "rnic7"), gen5);
    // One bridge per GPU and RNIC, in PCI order: gpuN and rnicN share swN.
    for n in 0..8 {
        share_a_switch(
            &h,
            &format!("sw{n}"),
            &[&format!("gpu{n}")],
            &[&format!("rnic{n}")],
        );
    }
    assert_eq!(above(&h, "sw7"), "cpu1");
    assert_eq!(link(&h, "sw7--cpu1").capacity_gbps, gen5);
    assert!(h.links().iter().all(|l| l.capacity_known));
}

#[test]
fn azure_ndv5_of_2023_with_zero_vendor_bridges_reads_as_the_current_file() {
    // The NDv5 file of April 2023: numaid 1 first, each bridge with vendor="0x0000" and
    // device ids 0. The same machine as the current file, the <cpu>s in the other order.
    let h = read("ndv5-2023.xml", NDV5_2023);
    assert_eq!(counts(&h), (2, 8, 8, 8, 2));
    for n in 0..8 {
        share_a_switch(
            &h,
            &format!("sw{n}"),
            &[&format!("gpu{n}")],
            &[&format!("rnic{n}")],
        );
    }
    assert_eq!(above(&h, "sw0"), "cpu1");
    assert_eq!(above(&h, "sw7"), "cpu0");
}

#[test]
fn hwloc_reads_a_virtual_bridge_as_the_switch_it_stands_for() {
    // Written in this test, not a capture: no public hwloc XML with an ffff:ff bridge was
    // found (hwloc's own host bridges carry no PCI address). The shape is NDv4's NCCL file
    // in hwloc's words: a bridge at ffff:ff:01.0 on a root bus, over a GPU and a ConnectX-6.
    let text = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0">
    <object type="Package" os_index="0">
      <object type="NUMANode" os_index="0"/>
      <object type="Bridge" bridge_type="1-1" depth="0" pci_busid="ffff:ff:01.0" pci_type="0604 [0000:0000] [0000:0000] 00 00" pci_link_speed="31.507692">
        <object type="PCIDev" pci_busid="0001:00:00.0" pci_type="0302 [10de:20b0] [10de:134f] a1 00" pci_link_speed="31.507692"/>
        <object type="PCIDev" pci_busid="0101:00:00.0" pci_type="0207 [15b3:101c] [15b3:0007] 00 00" pci_link_speed="31.507692">
          <object type="OSDev" name="mlx5_0" osdev_type="3"/>
        </object>
      </object>
      <object type="Bridge" bridge_type="0-1" depth="0">
        <object type="Bridge" bridge_type="1-1" depth="1" pci_busid="ffff:ff:02.0">
          <object type="PCIDev" pci_busid="0002:00:00.0" pci_type="0302 [10de:20b0] [10de:134f] a1 00"/>
        </object>
      </object>
    </object>
  </object>
</topology>"#;
    let h = read("virtual.xml", text);
    assert_eq!(counts(&h), (1, 2, 1, 2, 1));
    share_a_switch(&h, "sw0", &["gpu0"], &["rnic0"]);
    assert_eq!(above(&h, "gpu1"), "sw1");
    // 31.5 GB/s, Gen4 x16, on the bridge and below it.
    assert_eq!(link(&h, "sw0--cpu0").capacity_gbps, 31.507692 * 8.0);
    assert_eq!(link(&h, "sw1--cpu0").kind, LinkKind::RootPort);
}

#[test]
fn ibm_h100_vm_pairs_each_connectx7_with_one_gpu_behind_an_emulated_switch() {
    let h = read("ibm.xml", IBM);
    assert_eq!(counts(&h), (2, 8, 8, 8, 2));
    // The file lists mlx5_7 first; RNICs are numbered by device name.
    assert!(h.description.contains("rnic0 mlx5_0"), "{}", h.description);
    assert_eq!(rate(&h, "rnic0"), 200.0);
    // mlx5_0 shares sw7 with the GPU at ea:00.0 (gpu7), mlx5_7 sw0 with gpu0.
    assert_eq!(above(&h, "rnic0"), "sw7");
    assert_eq!(above(&h, "gpu7"), "sw7");
    assert_eq!(above(&h, "rnic7"), "sw0");
    assert_eq!(above(&h, "gpu0"), "sw0");
    let p = h.path(&"rnic0".into(), &"gpu7".into()).unwrap();
    assert_eq!(p.turnaround, model::Turnaround::Switch("sw7".into()));
    assert!(p.affinitive);
    // Devices report width 0 (passed through to a VM): the bridges' 2.5 GT/s x1 is QEMU's,
    // so switch links, and device links without a width, are of unknown capacity.
    assert_eq!(link(&h, "sw7--cpu1").kind, LinkKind::RootPort);
    assert!(!link(&h, "sw7--cpu1").capacity_known);
    assert!(!link(&h, "gpu7--sw7").capacity_known);
    assert!(
        !h.path(&"rnic0".into(), &"mem0".into())
            .unwrap()
            .capacity_known
    );
}

#[test]
fn a_leading_blank_line_reads_as_the_file_does() {
    // Derived: each real file with blank lines added above its first line.
    for (name, text) in [
        ("wholeio.xml", WHOLEIO),
        ("ibm.xml", IBM),
        ("ndv4.xml", NDV4),
    ] {
        let blank = format!("\n  \n{text}");
        assert_eq!(
            summary(&read(name, &blank)),
            summary(&read(name, text)),
            "{name}"
        );
    }
}

#[test]
fn cpusets_and_affinity_masks_cut_short_change_nothing() {
    // Derived: every hwloc cpuset and NCCL affinity cut to its last word.
    let cut = |text: &str, attr: &str| {
        let mut out = String::new();
        let mut rest = text;
        let key = format!("{attr}=\"");
        while let Some(i) = rest.find(&key) {
            let start = i + key.len();
            let end = start + rest[start..].find('"').unwrap();
            let value = &rest[start..end];
            out.push_str(&rest[..start]);
            out.push_str(value.rsplit(',').next().unwrap().get(..4).unwrap_or(value));
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    };
    let hwloc = cut(&cut(WHOLEIO, "cpuset"), "complete_cpuset");
    assert_ne!(hwloc, WHOLEIO);
    assert_eq!(
        summary(&read("w.xml", &hwloc)),
        summary(&read("w.xml", WHOLEIO))
    );
    for nccl in [IBM, NDV4] {
        let cut_short = cut(nccl, "affinity");
        assert_ne!(cut_short, nccl);
        assert_eq!(
            summary(&read("i.xml", &cut_short)),
            summary(&read("i.xml", nccl))
        );
    }
}

#[test]
fn an_infiniband_function_without_its_rdma_device_is_still_an_rnic() {
    // Derived: the wholeio file with the OpenFabrics OS device of the ConnectX-4 removed;
    // class 0x0207 alone makes it an RNIC (named by its PCI address).
    let start = WHOLEIO
        .find("<object type=\"OSDev\" gp_index=\"142\"")
        .unwrap();
    let end = start + WHOLEIO[start..].find("</object>").unwrap() + "</object>".len();
    let text = format!("{}{}", &WHOLEIO[..start], &WHOLEIO[end..]);
    let h = read("w.xml", &text);
    assert_eq!(counts(&h), (2, 3, 1, 0, 2));
    assert!(
        h.description.contains("rnic0 0000:04:00.0"),
        "{}",
        h.description
    );
}

/// A synthetic GB300-like shape after issue 38's words (no public dump of one was found):
/// a ConnectX-8 reports class 0x0801 behind its own PCIe switch, below the switch of the
/// GPU it serves. One with a `<nic>`, one by class alone.
const CX8: &str = r#"<system version="1">
  <cpu numaid="0" affinity="ffffffff" arch="arm64">
    <pci busid="0000:00:00.0" class="0x060400" vendor="0x15b3" device="0x197b" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:03:00.0" class="0x060400" vendor="0x15b3" device="0x197b" link_speed="32.0 GT/s PCIe" link_width="16">
        <pci busid="0000:05:00.0" class="0x080100" vendor="0x15b3" device="0x1023" link_speed="32.0 GT/s PCIe" link_width="16">
          <nic>
            <net name="mlx5_0" dev="0" speed="800000" port="1" gdr="1"/>
          </nic>
        </pci>
      </pci>
      <pci busid="0000:07:00.0" class="0x060400" vendor="0x15b3" device="0x197b" link_speed="32.0 GT/s PCIe" link_width="16">
        <pci busid="0000:08:00.0" class="0x080100" vendor="0x15b3" device="0x1023" link_speed="32.0 GT/s PCIe" link_width="16"/>
      </pci>
      <pci busid="0000:09:00.0" class="0x030200" vendor="0x10de" device="0x2941" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="103" rank="0" gdr="1"/>
      </pci>
    </pci>
  </cpu>
</system>
"#;

#[test]
fn a_connectx8_of_class_0801_behind_its_own_switch_is_an_rnic() {
    let h = read("gb300.xml", CX8);
    assert_eq!(counts(&h), (1, 1, 2, 3, 1));
    assert_eq!(rate(&h, "rnic0"), 800.0);
    assert_eq!(above(&h, "rnic0"), "sw1");
    assert_eq!(above(&h, "rnic1"), "sw2");
    assert_eq!(above(&h, "sw1"), "sw0");
    assert_eq!(above(&h, "gpu0"), "sw0");
    assert_eq!(link(&h, "sw1--sw0").kind, LinkKind::SwitchUplink);
    let p = h.path(&"rnic0".into(), &"gpu0".into()).unwrap();
    assert_eq!(p.turnaround, model::Turnaround::Switch("sw0".into()));
}

#[test]
fn resolve_loads_an_xml_file_by_its_content() {
    let h = resolve("/lab/ndv5.toml", |_| Ok(NDV5.to_string())).unwrap();
    assert_eq!(h.name, "ndv5.toml");
    let e = resolve("/lab/dgx2.xml", |_| Ok(DGX2.to_string())).unwrap_err();
    assert!(e.to_string().starts_with("/lab/dgx2.xml: rnic: "), "{e}");
}

#[test]
fn malformed_xml_is_refused_naming_the_file_and_line() {
    let e = parse_file("cut.xml", &IBM[..IBM.len() / 2]).unwrap_err();
    assert_eq!(e.source_name, "cut.xml");
    assert!(e.field.starts_with("line "), "{e}");
    let e = parse_file(
        "deep.xml",
        &format!(
            "<system><cpu>{}</cpu></system>",
            "<pci class=\"0x060400\">".repeat(100) + &"</pci>".repeat(100)
        ),
    )
    .unwrap_err();
    assert!(e.reason.contains("nest deeper"), "{e}");
}

fn fixtures() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(WHOLEIO),
        Just(MLX4),
        Just(NDV4),
        Just(NDV5),
        Just(NDV4_2021),
        Just(NDV5_2023),
        Just(IBM),
        Just(CX8)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any text, and any real file cut or changed at any byte, reads or is refused with an
    /// error that names the file; nothing panics.
    #[test]
    fn arbitrary_input_never_panics_and_errors_name_the_file(
        text in "(<|>|/|\"|=| |\n|[a-z]{1,8}|0x[0-9a-f]{1,6}|<system>|<topology>|<cpu>|<pci |class=|busid=|ffff:ff)*"
    ) {
        if let Err(e) = parse_file("fuzz.xml", &text) {
            prop_assert!(e.to_string().starts_with("fuzz.xml: "), "{}", e);
        }
    }

    #[test]
    fn real_files_cut_or_altered_never_panic(
        file in fixtures(),
        cut in 0.0f64..1.0,
        at in 0.0f64..1.0,
        insert in "[<>\"=/ a-z0-9:.]{0,6}",
    ) {
        let mut end = (file.len() as f64 * cut) as usize;
        while !file.is_char_boundary(end) { end -= 1; }
        let mut text = file[..end].to_string();
        let mut pos = (text.len() as f64 * at) as usize;
        while !text.is_char_boundary(pos) { pos -= 1; }
        text.insert_str(pos, &insert);
        if let Err(e) = parse_file("real.xml", &text) {
            prop_assert!(e.to_string().starts_with("real.xml: "), "{}", e);
        }
    }
}
