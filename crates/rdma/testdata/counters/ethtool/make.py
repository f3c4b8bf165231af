#!/usr/bin/env python3
"""Writes the `ethtool -S` snapshots beside this script (see README.md).

Hand-built, not captured: names and their order follow mlx5's en_stats.c (group order
sw, qcnt, vnic_env, vport, 802_3, 2863, 2819, phy, eth_ext, pcie, per_prio, pme,
channels, per_port_buff_congest) as summarised in shared/reference/linux-counters.md
section 2. The text format is ethtool's: "NIC statistics:" then "     %.*s: %llu" lines.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PFC_PRIO = 3  # PFC enabled on priority 3 only (RoCE traffic class)


def snapshot(t):
    """Counter values at t seconds (0 or 1): a ConnectX-6 Dx port receiving ~145 Gb/s of
    RoCE on priority 3 while the host cannot keep up, so the NIC sends PFC pauses."""
    rdma_rx_bytes = 91_537_120_448_112 + t * 18_125_000_000
    rdma_rx_pkts = 22_347_930_773 + t * 4_424_560
    rdma_tx_bytes = 3_120_771_902_226 + t * 310_000_000
    rdma_tx_pkts = 2_901_887_441 + t * 1_210_937
    eth_rx_bytes = 48_210_336_118 + t * 1_250_117
    eth_rx_pkts = 61_220_847 + t * 1_871
    eth_tx_bytes = 39_774_011_203 + t * 981_220
    eth_tx_pkts = 55_031_912 + t * 1_544
    discards = 10_577 + t * 131
    tx_pause = 38_444_164 + t * 1_470
    s = []
    add = lambda name, v: s.append((name, v))
    # sw (CONFIG_MLX5_EN_TLS off; rx_xsk_*/tx_xsk_* left out)
    for name, v in [
        ("rx_packets", eth_rx_pkts), ("rx_bytes", eth_rx_bytes),
        ("tx_packets", eth_tx_pkts), ("tx_bytes", eth_tx_bytes),
        ("tx_tso_packets", 1_208_334), ("tx_tso_bytes", 17_422_170_334),
        ("tx_tso_inner_packets", 0), ("tx_tso_inner_bytes", 0),
        ("tx_added_vlan_packets", 0), ("tx_nop", 0), ("tx_mpwqe_blks", 0), ("tx_mpwqe_pkts", 0),
        ("rx_lro_packets", 0), ("rx_lro_bytes", 0), ("rx_gro_packets", 9_811_302),
        ("rx_gro_bytes", 13_004_227_981), ("rx_gro_skbs", 1_022_918),
        ("rx_gro_match_packets", 0), ("rx_gro_large_hds", 0), ("rx_ecn_mark", 0),
        ("rx_removed_vlan_packets", 0), ("rx_csum_unnecessary", 58_112_400),
        ("rx_csum_none", 3_108_447), ("rx_csum_complete", 0),
        ("rx_csum_complete_tail", 0), ("rx_csum_complete_tail_slow", 0),
        ("rx_csum_unnecessary_inner", 0), ("rx_xdp_drop", 0), ("rx_xdp_redirect", 0),
        ("tx_csum_none", 2_091_338), ("tx_csum_partial", 52_940_574),
        ("tx_csum_partial_inner", 0), ("tx_queue_stopped", 0), ("tx_queue_dropped", 0),
        ("tx_xmit_more", 1_417), ("tx_recover", 0), ("tx_cqes", eth_tx_pkts - 1_417),
        ("tx_queue_wake", 0), ("tx_cqe_err", 0), ("rx_wqe_err", 0),
        ("rx_mpwqe_filler_cqes", 0), ("rx_mpwqe_filler_strides", 0),
        ("rx_oversize_pkts_sw_drop", 0), ("rx_buff_alloc_err", 0),
        ("rx_cqe_compress_blks", 0), ("rx_cqe_compress_pkts", 0),
        ("rx_congst_umr", 0), ("rx_arfs_err", 0), ("rx_recover", 0),
        ("ch_events", 70_118_402 + t * 3_301), ("ch_poll", 71_300_219 + t * 3_400),
        ("ch_arm", 70_004_118 + t * 3_288), ("ch_aff_change", 0), ("ch_force_irq", 0),
        ("ch_eq_rearm", 0),
    ]:
        add(name, v)
    # qcnt, vnic_env
    add("rx_out_of_buffer", 0)
    add("rx_if_down_packets", 112)
    add("rx_steer_missed_packets", 3_004)
    # vport
    vport = [
        ("rx_vport_unicast_packets", eth_rx_pkts - 40_114), ("rx_vport_unicast_bytes", eth_rx_bytes - 4_011_400),
        ("tx_vport_unicast_packets", eth_tx_pkts - 2_210), ("tx_vport_unicast_bytes", eth_tx_bytes - 221_000),
        ("rx_vport_multicast_packets", 38_870), ("rx_vport_multicast_bytes", 3_887_000),
        ("tx_vport_multicast_packets", 2_104), ("tx_vport_multicast_bytes", 210_400),
        ("rx_vport_broadcast_packets", 1_244), ("rx_vport_broadcast_bytes", 124_400),
        ("tx_vport_broadcast_packets", 106), ("tx_vport_broadcast_bytes", 10_600),
        ("rx_vport_rdma_unicast_packets", rdma_rx_pkts), ("rx_vport_rdma_unicast_bytes", rdma_rx_bytes),
        ("tx_vport_rdma_unicast_packets", rdma_tx_pkts), ("tx_vport_rdma_unicast_bytes", rdma_tx_bytes),
        ("rx_vport_rdma_multicast_packets", 0), ("rx_vport_rdma_multicast_bytes", 0),
        ("tx_vport_rdma_multicast_packets", 0), ("tx_vport_rdma_multicast_bytes", 0),
    ]
    s.extend(vport)
    # 802_3: the PHY sees RDMA and Ethernet, plus pause frames.
    phy_rx_pkts = rdma_rx_pkts + eth_rx_pkts + discards
    phy_tx_pkts = rdma_tx_pkts + eth_tx_pkts + tx_pause
    for name, v in [
        ("tx_packets_phy", phy_tx_pkts), ("rx_packets_phy", phy_rx_pkts),
        ("rx_crc_errors_phy", 0),
        ("tx_bytes_phy", rdma_tx_bytes + eth_tx_bytes + 64 * tx_pause + 4 * phy_tx_pkts),
        ("rx_bytes_phy", rdma_rx_bytes + eth_rx_bytes + 4 * phy_rx_pkts),
        ("tx_multicast_phy", 2_104), ("tx_broadcast_phy", 106),
        ("rx_multicast_phy", 38_870), ("rx_broadcast_phy", 1_244),
        ("rx_in_range_len_errors_phy", 0), ("rx_out_of_range_len_phy", 0),
        ("rx_oversize_pkts_phy", 0), ("rx_symbol_err_phy", 0),
        ("tx_mac_control_phy", tx_pause), ("rx_mac_control_phy", 437_594),
        ("rx_unsupported_op_phy", 0),
        ("rx_pause_ctrl_phy", 437_594), ("tx_pause_ctrl_phy", tx_pause),
    ]:
        add(name, v)
    # 2863
    add("rx_discards_phy", discards)
    add("tx_discards_phy", 0)
    add("tx_errors_phy", 0)
    # 2819
    for name, v in [
        ("rx_undersize_pkts_phy", 0), ("rx_fragments_phy", 0), ("rx_jabbers_phy", 0),
        ("rx_64_bytes_phy", 1_884_201 + t * 30), ("rx_65_to_127_bytes_phy", 2_901_332 + t * 118),
        ("rx_128_to_255_bytes_phy", 733_450), ("rx_256_to_511_bytes_phy", 411_209),
        ("rx_512_to_1023_bytes_phy", 300_188), ("rx_1024_to_1518_bytes_phy", 5_120_997),
        ("rx_1519_to_2047_bytes_phy", 0),
        ("rx_2048_to_4095_bytes_phy", phy_rx_pkts - 11_351_377 - t * 148),
        ("rx_4096_to_8191_bytes_phy", 0), ("rx_8192_to_10239_bytes_phy", 0),
    ]:
        add(name, v)
    # phy, eth_ext
    add("link_down_events_phy", 1)
    add("rx_pcs_symbol_err_phy", 0)
    add("rx_corrected_bits_phy", 1_730 + t * 2)
    add("rx_buffer_passed_thres_phy", 4_112_003 + t * 9_874)
    # pcie
    add("rx_pci_signal_integrity", 0)
    add("tx_pci_signal_integrity", 0)
    add("outbound_pci_buffer_overflow", t * 7)
    add("outbound_pci_stalled_rd", 0)
    add("outbound_pci_stalled_wr", 37 if t else 2)
    add("outbound_pci_stalled_rd_events", 0)
    add("outbound_pci_stalled_wr_events", 212 + t)
    # per_prio: traffic of every priority, then PFC of the enabled ones, then stall counters.
    for p in range(8):
        roce = p == PFC_PRIO
        add("rx_prio%d_bytes" % p, rdma_rx_bytes if roce else (eth_rx_bytes if p == 0 else 0))
        add("rx_prio%d_packets" % p, rdma_rx_pkts if roce else (eth_rx_pkts if p == 0 else 0))
        add("rx_prio%d_discards" % p, discards if roce else 0)
        add("tx_prio%d_bytes" % p, rdma_tx_bytes if roce else (eth_tx_bytes if p == 0 else 0))
        add("tx_prio%d_packets" % p, rdma_tx_pkts if roce else (eth_tx_pkts if p == 0 else 0))
    p = PFC_PRIO
    add("rx_prio%d_pause" % p, 437_594)
    add("rx_prio%d_pause_duration" % p, 21_004_512)
    add("tx_prio%d_pause" % p, tx_pause)
    add("tx_prio%d_pause_duration" % p, 1_845_220_117 + t * 45_000)
    add("rx_prio%d_pause_transition" % p, 218_797)
    add("tx_pause_storm_warning_events", 0)
    add("tx_pause_storm_error_events", 0)
    # pme
    for name in ("module_unplug", "module_bus_stuck", "module_high_temp", "module_bad_shorted"):
        add(name, 0)
    # channels (two of them; the xdpsq/xskrq groups left out)
    for c in range(2):
        add("ch%d_events" % c, 35_059_201 + t * 1_650)
        add("ch%d_poll" % c, 35_650_109 + t * 1_700)
        add("ch%d_arm" % c, 35_002_059 + t * 1_644)
        add("ch%d_aff_change" % c, 0)
        add("ch%d_force_irq" % c, 0)
        add("ch%d_eq_rearm" % c, 0)
    for c in range(2):
        add("rx%d_packets" % c, eth_rx_pkts // 2 + (eth_rx_pkts % 2 if c == 0 else 0))
        add("rx%d_bytes" % c, eth_rx_bytes // 2 + (eth_rx_bytes % 2 if c == 0 else 0))
        add("rx%d_csum_complete" % c, 0)
        add("rx%d_csum_unnecessary" % c, 29_056_200)
        add("rx%d_buff_alloc_err" % c, 0)
    for c in range(2):
        add("tx%d_packets" % c, eth_tx_pkts // 2)
        add("tx%d_bytes" % c, eth_tx_bytes // 2 + (eth_tx_bytes % 2 if c == 0 else 0))
        add("tx%d_tso_packets" % c, 604_167)
        add("tx%d_queue_dropped" % c, 0)
    # per_port_buff_congest
    for p in range(8):
        add("rx_prio%d_buf_discard" % p, 0)
        add("rx_prio%d_cong_discard" % p, 0)
        add("rx_prio%d_marked" % p, 20_114 + t * 51 if p == PFC_PRIO else 0)
    return s


def main():
    for t in (0, 1):
        lines = ["NIC statistics:"] + ["     %s: %d" % kv for kv in snapshot(t)]
        with open(os.path.join(HERE, "mlx5-pfc3-t%d.txt" % t), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
