#!/usr/bin/env python3
"""Writes the counter fixture trees beside this script (see README.md): one folder per
host, each holding a sys/ tree. Run it again after editing: it deletes and rewrites them.

Hand-built, not captured: file formats follow drivers/infiniband/core/sysfs.c, the PMA
tables and the mlx5 / rxe hw_counters lists as summarised in
shared/reference/linux-counters.md sections 1.1 to 1.5.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS = ("mlx5-roce", "mlx5-ib-saturated", "mlx4-ib-legacy", "cxgb4-no-pma")

# PortCounters (0x12) files, in pma_attrs order; the extended table adds the unicast and
# multicast packet counters (section 1.3).
BASE = ["symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
        "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
        "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped",
        "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
        "port_xmit_wait", "port_xmit_data", "port_rcv_data", "port_xmit_packets",
        "port_rcv_packets"]
EXT_ONLY = ["unicast_rcv_packets", "unicast_xmit_packets", "multicast_rcv_packets",
            "multicast_xmit_packets"]
# Kernels before ~4.5: 64-bit data counters in counters_ext/.
LEGACY_EXT = ["port_xmit_data_64", "port_rcv_data_64", "port_xmit_packets_64",
              "port_rcv_packets_64", "port_unicast_xmit_packets", "port_unicast_rcv_packets",
              "port_multicast_xmit_packets", "port_multicast_rcv_packets"]
# mlx5 hw_counters of a ConnectX-6 in RoCE mode (section 1.4, the realistic listing).
MLX5_ROCE_HW = ["duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err",
                "np_cnp_sent", "np_ecn_marked_roce_packets", "out_of_buffer",
                "out_of_sequence", "packet_seq_err", "req_cqe_error", "req_cqe_flush_error",
                "req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
                "resp_cqe_flush_error", "resp_local_length_error",
                "resp_remote_access_errors", "rnr_nak_retry_err", "roce_adp_retrans",
                "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
                "roce_slow_restart_trans", "rp_cnp_handled", "rp_cnp_ignored",
                "rx_atomic_requests", "rx_dct_connect", "rx_icrc_encapsulated",
                "rx_read_requests", "rx_write_requests"]
# In InfiniBand mode: no roce_accl, congestion or ICRC groups.
MLX5_IB_HW = [n for n in MLX5_ROCE_HW
              if not n.startswith(("roce_", "rp_", "np_", "rx_icrc"))]


def write(host, rel, text):
    path = os.path.join(HERE, host, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def link(host, rel, target_rel, raw=None):
    """A relative symlink at rel to target_rel (both below the host folder), or with the
    literal target raw, as the kernel writes some of them."""
    base = os.path.join(HERE, host)
    path = os.path.join(base, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    target = raw or os.path.relpath(os.path.join(base, target_rel), os.path.dirname(path))
    assert os.path.realpath(os.path.join(os.path.dirname(path), target)) == \
        os.path.realpath(os.path.join(base, target_rel))
    os.symlink(target, path)


def pci_function(host, path, cls, vendor, device):
    dev = "sys/devices/" + path
    write(host, dev + "/class", "0x%06x" % cls)
    write(host, dev + "/vendor", "0x%04x" % vendor)
    write(host, dev + "/device", "0x%04x" % device)
    write(host, dev + "/numa_node", "0")
    link(host, "sys/bus/pci/devices/" + path.rsplit("/", 1)[1], dev)
    return dev


def rdma_device(host, fn, name, attrs, netdevs):
    """sys/devices/<fn>/infiniband/<name> with its class link, device link and netdevs;
    returns its folder."""
    d = fn + "/infiniband/" + name
    link(host, "sys/class/infiniband/" + name, d)
    bdf = fn.rsplit("/", 1)[1]
    link(host, d + "/device", fn, raw="../../../" + bdf)
    for key, value in attrs.items():
        write(host, d + "/" + key, value)
    for netdev in netdevs:
        n = fn + "/net/" + netdev
        write(host, n + "/operstate", "up")
        link(host, n + "/device", fn, raw="../../../" + bdf)
        link(host, "sys/class/net/" + netdev, n)
    return d


def port(host, d, p, state, phys, rate, link_layer, counters=None, hw=None, extra=()):
    """ports/<p> with its attributes, counters/ and hw_counters/ (each a dict or None)."""
    pd = "%s/ports/%d" % (d, p)
    write(host, pd + "/state", state)
    write(host, pd + "/phys_state", phys)
    write(host, pd + "/rate", rate)
    write(host, pd + "/link_layer", link_layer)
    for key, value in extra:
        write(host, pd + "/" + key, value)
    for folder, values in (("counters", counters), ("hw_counters", hw)):
        for key, value in (values or {}).items():
            write(host, "%s/%s/%s" % (pd, folder, key), str(value))


def mlx5_roce():
    """ConnectX-6 in RoCE mode, kernel 5.15: extended PMA table (64-bit data counters),
    port and device hw_counters. The counter values match the ethtool fixture: port_rcv_data
    x 4 = rx_vport_rdma_unicast_bytes of ../ethtool/mlx5-pfc3-t0.txt."""
    host = "mlx5-roce"
    pci_function(host, "pci0000:00/0000:00:01.0", 0x060400, 0x8086, 0x347A)
    fn = pci_function(host, "pci0000:00/0000:00:01.0/0000:01:00.0", 0x020000, 0x15B3, 0x101B)
    d = rdma_device(host, fn, "mlx5_0", {
        "node_type": "1: CA", "node_guid": "0c42:a103:00a5:2f10", "fw_ver": "20.35.1012",
        "hca_type": "MT4123", "board_id": "MT_0000000222", "hw_rev": "0",
    }, ["ens1f0np0"])
    counters = {n: 0 for n in BASE + EXT_ONLY}
    counters.update({
        "port_xmit_wait": 918274112,
        "port_xmit_data": 780192975556, "port_rcv_data": 22884280112028,
        "port_xmit_packets": 2901887441, "port_rcv_packets": 22347930773,
        "unicast_xmit_packets": 2901887441, "unicast_rcv_packets": 22347930773,
    })
    hw = {n: 0 for n in MLX5_ROCE_HW}
    hw.update({
        "duplicate_request": 16, "implied_nak_seq_err": 2, "local_ack_timeout_err": 3,
        "np_cnp_sent": 88102, "np_ecn_marked_roce_packets": 91554, "out_of_sequence": 412,
        "packet_seq_err": 37, "roce_adp_retrans": 5, "rp_cnp_handled": 120447,
        "rx_read_requests": 1022871, "rx_write_requests": 4418220931,
    })
    port(host, d, 1, "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)", "Ethernet",
         counters, dict(hw, lifespan=10), extra=[
             ("lid", "0x0"),
             ("gids/0", "fe80:0000:0000:0000:0e42:a1ff:fea5:2f10"),
             ("gid_attrs/types/0", "IB/RoCE v1"),
             ("gid_attrs/ndevs/0", "ens1f0np0"),
         ])
    # Device scope: the same Q and congestion counters (mlx5 alloc_hw_device_stats uses
    # port[0]'s counter set), with their own cache.
    for key, value in dict(hw, lifespan=10).items():
        write(host, d + "/hw_counters/" + key, str(value))


def mlx5_ib_saturated():
    """ConnectX-6 on InfiniBand whose PMA does not advertise IsExtendedWidthSupported: the
    32-bit base table, with counters stuck at their maxima (data 0xFFFFFFFF, symbol_error
    0xFFFF, link_downed 0xFF, local_link_integrity_errors 0xF)."""
    host = "mlx5-ib-saturated"
    pci_function(host, "pci0000:00/0000:00:02.0", 0x060400, 0x8086, 0x347A)
    fn = pci_function(host, "pci0000:00/0000:00:02.0/0000:3b:00.0", 0x020700, 0x15B3, 0x101B)
    d = rdma_device(host, fn, "mlx5_0", {
        "node_type": "1: CA", "node_guid": "b859:9f03:00c4:1a20", "fw_ver": "20.31.1014",
        "hca_type": "MT4123", "board_id": "MT_0000000223", "hw_rev": "0",
    }, ["ibp59s0"])
    counters = {n: 0 for n in BASE}
    counters.update({
        "symbol_error": 0xFFFF, "link_error_recovery": 12, "link_downed": 0xFF,
        "port_rcv_errors": 17, "local_link_integrity_errors": 0xF,
        "port_xmit_discards": 2, "port_xmit_wait": 3500142887,
        "port_xmit_data": 0xFFFFFFFF, "port_rcv_data": 0xFFFFFFFF,
        "port_xmit_packets": 1873002114, "port_rcv_packets": 2011946330,
    })
    hw = {n: 0 for n in MLX5_IB_HW}
    hw.update({"rx_write_requests": 3006410227, "rx_read_requests": 88120,
               "out_of_sequence": 9, "lifespan": 10})
    # IB GID entries have no netdev: gid_attrs/ndevs/<i> fails with EINVAL (left out).
    port(host, d, 1, "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand",
         counters, hw, extra=[("lid", "0x2a"),
                              ("gids/0", "fe80:0000:0000:0000:b859:9f03:00c4:1a20")])


def mlx4_ib_legacy():
    """ConnectX-3 on kernel 4.4: two IB ports, the 32-bit counters/ table next to the old
    counters_ext/ folder of 64-bit data counters, no hw_counters, and two IPoIB netdevs on
    the one PCI function (so a port's netdev cannot be told from device/net/)."""
    host = "mlx4-ib-legacy"
    pci_function(host, "pci0000:80/0000:80:03.0", 0x060400, 0x8086, 0x6F08)
    fn = pci_function(host, "pci0000:80/0000:80:03.0/0000:81:00.0", 0x028000, 0x15B3, 0x1003)
    d = rdma_device(host, fn, "mlx4_0", {
        "node_type": "1: CA", "node_guid": "e41d:2d03:0061:b5a0", "fw_ver": "2.42.5000",
        "hca_type": "MT4099", "board_id": "MT_1090120019", "hw_rev": "1",
    }, ["ib0", "ib1"])
    counters = {n: 0 for n in BASE}
    counters.update({
        "port_xmit_data": 0xFFFFFFFF, "port_rcv_data": 0xFFFFFFFF,
        "port_xmit_packets": 2740163005, "port_rcv_packets": 0xFFFFFFFF,
        "port_xmit_wait": 118220,
    })
    ext = {
        "port_xmit_data_64": 1630115220188, "port_rcv_data_64": 2211009783412,
        "port_xmit_packets_64": 2740163005, "port_rcv_packets_64": 4421934118,
        "port_unicast_xmit_packets": 2740160911, "port_unicast_rcv_packets": 4421931290,
        "port_multicast_xmit_packets": 2094, "port_multicast_rcv_packets": 2828,
    }
    port(host, d, 1, "4: ACTIVE", "5: LinkUp", "56 Gb/sec (4X FDR)", "InfiniBand", counters,
         extra=[("lid", "0x7")] + [("counters_ext/" + k, str(v)) for k, v in ext.items()])
    idle = {n: 0 for n in BASE}
    port(host, d, 2, "1: DOWN", "2: Polling", "10 Gb/sec (4X)", "InfiniBand", idle,
         extra=[("lid", "0x0")] + [("counters_ext/" + k, "0") for k in LEGACY_EXT])


def cxgb4_no_pma():
    """A Chelsio T6 iWARP port on an old kernel: counters/ exists, but each file says
    N/A (no PMA); no hw_counters."""
    host = "cxgb4-no-pma"
    pci_function(host, "pci0000:00/0000:00:03.0", 0x060400, 0x8086, 0x2F08)
    fn = pci_function(host, "pci0000:00/0000:00:03.0/0000:02:00.4", 0x020000, 0x1425, 0x6408)
    d = rdma_device(host, fn, "cxgb4_0", {
        "node_type": "4: RNIC", "node_guid": "0007:4340:6b40:0000", "fw_ver": "1.25.6.0",
        "hca_type": "0x6408", "board_id": "1425.6408", "hw_rev": "0",
    }, ["enp2s0f4"])
    port(host, d, 1, "4: ACTIVE", "5: LinkUp", "20 Gb/sec (4X DDR)", "Ethernet",
         {n: "N/A (no PMA)" for n in BASE})


def main():
    for host in HOSTS:
        shutil.rmtree(os.path.join(HERE, host), ignore_errors=True)
    mlx5_roce()
    mlx5_ib_saturated()
    mlx4_ib_legacy()
    cxgb4_no_pma()


if __name__ == "__main__":
    main()
