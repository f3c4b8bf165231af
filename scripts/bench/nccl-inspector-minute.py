#!/usr/bin/env python3
# nccl-inspector-minute.py OUT: writes one minute of a 128-rank job's NCCL Inspector dump
# into OUT, the work of issue 39's reading target (BENCHMARKS.md, "Reading a job's NCCL
# Inspector records"): 16 hosts of 8 GPUs, one file per process, 4 communicators per rank
# (two across all ranks, one within the host, one across hosts for one GPU index), 4
# all-reduces a second each, pretty-printed v4.0 objects as the plugin writes them: about
# 69 MB and 122,880 records. Healthy: every rank's time is 20 ms plus a little noise.
import os, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
T0 = 1795000000000000
for host in range(16):
    for gpu in range(8):
        rank = host * 8 + gpu
        pid = 10000 + rank
        comms = [("0x5a0000000001", rank, 128, 16), ("0x5a0000000002", rank, 128, 16),
                 ("0x7a00000000%02d" % host, gpu, 8, 1), ("0x6b00000000%02d" % gpu, host, 16, 16)]
        parts = []
        for sn in range(240):
            for cid, r, n, nn in comms:
                ex = 20000 + (rank * 7 + sn) % 50
                alg = (256 << 20) / (ex * 1e-6) / 1e9
                bus = alg * 2 * (n - 1) / n
                ts = T0 + sn * 250000 + ex + 300
                parts.append('{\n  "header": {\n    "id": "%s",\n    "rank": %d,\n    "n_ranks": %d,\n    "nnodes": %d\n  },\n  "metadata": {\n    "inspector_output_format_version": "v4.0",\n    "git_rev": "",\n    "rec_mechanism": "profiler_plugin",\n    "dump_timestamp_us": %d,\n    "hostname": "node%03d",\n    "pid": %d\n  },\n  "coll_perf": {\n    "coll": "AllReduce",\n    "coll_sn": %d,\n    "coll_msg_size_bytes": %d,\n    "coll_exec_time_us": %d,\n    "coll_timing_source": "kernel_gpu",\n    "coll_algobw_gbs": %.6f,\n    "coll_busbw_gbs": %.6f\n  }\n}\n' % (cid, r, n, nn, ts, host + 1, pid, sn, 256 << 20, ex, alg, bus))
        with open(os.path.join(out, "node%03d-%d.log" % (host + 1, pid)), "w") as f:
            f.write("".join(parts))
