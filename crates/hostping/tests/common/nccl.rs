//! NCCL Inspector dump directories as the plugin writes them (one file per process, v4.0
//! objects pretty-printed one after another), for the tests of `job --nccl` and of the
//! agent's `--nccl-dir`: a 16-rank job on 4 hosts, healthy or with a rank that arrives late.

use model::inspector::CollectiveRecord;
use std::path::{Path, PathBuf};

/// Hosts of the written job, and GPUs (ranks) on each.
pub const HOSTS: [&str; 4] = ["node001", "node002", "node003", "node004"];
pub const GPUS: u32 = 4;
/// The world communicator and each host's own (rank `g` of host `h`'s is its GPU `g`).
pub const WORLD: &str = "0x5a0000000004";
/// One all-reduce a second for two minutes, 256 MiB, 20 ms when healthy.
pub const COLLECTIVES: u64 = 120;
pub const BYTES: u64 = 256 << 20;
pub const HEALTHY_US: f64 = 20_000.0;
pub const START_US: u64 = 1_795_000_000_000_000;

/// How the written job behaves: a rank that arrives `late_us` late at every world
/// collective from the `from`-th on.
#[derive(Clone, Copy)]
pub struct Late {
    pub rank: u32,
    pub from: u64,
    pub late_us: f64,
}

/// Writes one file per process into `dir`, as the plugin does, the job's collectives one a
/// second from `start_us` (Unix us); `extra` goes at the end of rank 0's file. Returns
/// `dir`.
pub fn write_job(dir: &Path, start_us: u64, late: Option<Late>, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for (rank, file, mut text) in steps(start_us, 0..COLLECTIVES, late) {
        if rank == 0 {
            text.push_str(extra);
        }
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir.to_path_buf()
}

/// Appends collectives `sns` of the job to its files in `dir` (made when missing), as the
/// plugin's dump thread does while the job runs: collective `sn` starts at
/// `start_us + sn` seconds.
pub fn append_steps(dir: &Path, start_us: u64, sns: std::ops::Range<u64>, late: Option<Late>) {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).unwrap();
    for (_, file, text) in steps(start_us, sns, late) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(file))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }
}

/// Each process's rank, file name and the records of collectives `sns` it writes.
fn steps(
    start_us: u64,
    sns: std::ops::Range<u64>,
    late: Option<Late>,
) -> Vec<(u32, String, String)> {
    let mut files = Vec::new();
    for (h, host) in HOSTS.iter().enumerate() {
        for gpu in 0..GPUS {
            let rank = h as u32 * GPUS + gpu;
            let pid = 1000 + rank;
            let mut text = String::new();
            for sn in sns.clone() {
                let late_here = late.filter(|l| sn >= l.from);
                // The late rank's own kernel runs only the transfer; the others wait for it.
                let exec_us = match late_here {
                    Some(l) if l.rank == rank => HEALTHY_US,
                    Some(l) => HEALTHY_US + l.late_us,
                    None => HEALTHY_US,
                } + f64::from((rank * 7 + sn as u32) % 5) * 20.0;
                let n = HOSTS.len() as u32 * GPUS;
                record(
                    &mut text,
                    (WORLD, rank, n, 4),
                    host,
                    pid,
                    start_us,
                    sn,
                    exec_us,
                );
                // The host's own communicator: rank = the GPU, always healthy (NVLink).
                let local = format!("0x7a00000000{h:02}");
                record(
                    &mut text,
                    (&local, gpu, GPUS, 1),
                    host,
                    pid,
                    start_us,
                    sn,
                    2_000.0,
                );
            }
            files.push((rank, format!("{host}-{pid}.log"), text));
        }
    }
    files
}

/// One v4.0 record of communicator `(id, rank, n_ranks, nnodes)`, pretty-printed as the
/// plugin writes it (`model::inspector::record_json`): its kernel ran at `start_us + sn`
/// seconds (and 300 us) for `exec_us`.
fn record(
    out: &mut String,
    (comm, rank, n_ranks, nnodes): (&str, u32, u32, u32),
    host: &str,
    pid: u32,
    start_us: u64,
    sn: u64,
    exec_us: f64,
) {
    let exec_us = exec_us.round();
    let algobw_gbs = BYTES as f64 / (exec_us * 1e-6) / 1e9;
    out.push_str(&model::inspector::record_json(&CollectiveRecord {
        communicator: comm.to_string(),
        rank,
        n_ranks,
        n_nodes: nnodes,
        hostname: host.to_string(),
        pid: Some(u64::from(pid)),
        gpu: None,
        collective: "AllReduce".to_string(),
        seq: sn,
        bytes: BYTES,
        exec_us,
        algobw_gbs,
        busbw_gbs: algobw_gbs * 2.0 * f64::from(n_ranks - 1) / f64::from(n_ranks),
        kernel_start_us: None,
        at_us: (start_us + sn * 1_000_000 + 300) as f64,
        job: None,
    }));
}
