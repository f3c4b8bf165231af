//! Flags of `hostping pair serve|probe`: a real RNIC-to-RNIC probe between two hosts, split
//! into each host's own path and the network (DESIGN 4.6). Parsing only validates; `pair_cmd`
//! opens the device and the socket.

use super::{capped_u32, capped_u64, Format};
use clap::{Args, Subcommand, ValueEnum};
use model::limits;
use std::path::PathBuf;

/// The port `pair serve` listens on by default (beside the agent's 9469 and the collector's
/// 9470).
pub const DEFAULT_PORT: u16 = 9471;

use agent::pair::MAX_BW_BYTES;

/// `hostping pair ...`.
#[derive(Debug, Subcommand)]
pub enum PairCommand {
    /// Answer RNIC-to-RNIC probes on DEVICE: one TCP connection at a time, each an initiator's
    /// offer (one JSON line) answered with this side's (with its own loopback share), then
    /// the probe served on the device. Serves until killed.
    ///
    /// Before answering, it measures its own part: the loopback latency from DEVICE's port
    /// to its nearest memory node (as `hostping check` probes one path). Every read and
    /// write on the socket has a deadline; a connection that fails is reported on stderr
    /// and the next one is served.
    #[command(after_long_help = "\
Examples:
  hostping pair serve --device mlx5_0                    # on 0.0.0.0:9471
  hostping pair serve --device rxe_b --listen 0.0.0.0:0  # a free port, printed
  hostping pair serve --device mlx5_1 --listen 10.0.0.2:9500
Then, on the other host: hostping pair probe --device mlx5_0 --peer HOST:9471")]
    Serve(PairServeArgs),
    /// Probe RNIC to RNIC (RC, as ib_write_lat and ib_write_bw do) against a `pair serve`
    /// and split the latency into this host's own path, the peer's and the network.
    ///
    /// latency = half the round trip (p50), host A = half this host's loopback latency from
    /// DEVICE to its nearest memory node, host B = the same measured by the peer, network =
    /// latency - host A - host B (docs/cluster.md, "The split"). Bandwidth is a window of
    /// WRITEs; the peer checks the data. Nothing is judged (no baseline): `status` is
    /// `uncertain` for a finished probe, `failed` when the data did not verify (exit 1).
    ///
    /// Exit status: 0 measured, 1 the data did not verify, 2 usage or input error (no such
    /// device, peer unreachable or refusing, the probe stopped: the error names the phase
    /// and how many latency samples were kept).
    #[command(after_long_help = "\
Examples:
  hostping pair probe --device mlx5_0 --peer node009:9471
  hostping pair probe --device rxe_a --peer 192.168.77.2:9471 --format json | \\
      jq .network_us
  hostping pair probe --device mlx5_0 --peer node009:9471 --iterations 10000 \\
      --bw-iterations 0")]
    Probe(PairProbeArgs),
}

/// Flags both sides share: the device, the deadlines, the loopback that measures the host's
/// own part.
#[derive(Debug, Args)]
pub struct PairDeviceArgs {
    /// The RDMA device to probe from (as `ibv_devices` / `rdma link` name it: mlx5_0, rxe_a);
    /// its first ACTIVE port.
    #[arg(long, value_name = "NAME")]
    pub device: String,
    /// Where the host part's loopback puts its data: the memory node nearest DEVICE
    /// (perftest's default, and the only one so far).
    #[arg(long, value_enum, default_value_t = PairEndpoint::Memory)]
    pub endpoint: PairEndpoint,
    /// Timed iterations of the host part's loopback (the small message of `hostping check`).
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = capped_u32("loopback iterations", 1, limits::ITERATIONS))]
    pub loopback_iterations: u32,
    /// Longest wait for one work completion or one socket read or write, ms.
    #[arg(long, value_name = "MS", default_value_t = 2000, value_parser = capped_u64("timeout ms", 1, limits::TIMEOUT_MS))]
    pub timeout_ms: u64,
}

/// `hostping pair serve`.
#[derive(Debug, Args)]
pub struct PairServeArgs {
    #[command(flatten)]
    pub local: PairDeviceArgs,
    /// Address to listen on, ADDR:PORT as every other command's --listen; port 0 picks a
    /// free one (printed on the first line of stdout).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:9471", value_parser = listen)]
    pub listen: Listen,
    /// The port of a bare --listen ADDR: the first form of this flag, kept for the scripts
    /// that use it (DESIGN 4: flags are added, never renamed), hidden from --help.
    #[arg(long, value_name = "N", hide = true)]
    pub port: Option<u16>,
}

/// `pair serve --listen`: ADDR:PORT, or a bare ADDR (the first form, with `--port`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// ADDR:PORT.
    Socket(std::net::SocketAddr),
    /// ADDR alone.
    Address(std::net::IpAddr),
}

/// A port given both in `--listen ADDR:PORT` and in `--port`.
#[derive(Debug, thiserror::Error)]
#[error(
    "--listen {addr} already has a port: --port {port} goes only with a bare --listen ADDR \
     (prefer --listen ADDR:PORT)"
)]
pub struct PortTwice {
    /// The `--listen` given.
    pub addr: std::net::SocketAddr,
    /// The `--port` given.
    pub port: u16,
}

impl PairServeArgs {
    /// Where to listen: --listen ADDR:PORT, or --listen ADDR with --port (default
    /// [`DEFAULT_PORT`]); a port given both ways is refused.
    pub fn address(&self) -> Result<std::net::SocketAddr, PortTwice> {
        match (self.listen, self.port) {
            (Listen::Socket(addr), None) => Ok(addr),
            (Listen::Socket(addr), Some(port)) => Err(PortTwice { addr, port }),
            (Listen::Address(ip), port) => {
                Ok(std::net::SocketAddr::new(ip, port.unwrap_or(DEFAULT_PORT)))
            }
        }
    }
}

/// Parses `--listen`: ADDR:PORT (`10.0.0.2:9500`, `[::1]:0`) or a bare ADDR.
fn listen(text: &str) -> Result<Listen, String> {
    if let Ok(addr) = text.parse() {
        return Ok(Listen::Socket(addr));
    }
    text.parse()
        .map(Listen::Address)
        .map_err(|_| format!("`{text}` is not ADDR:PORT (10.0.0.2:9471, [::1]:9471, 0.0.0.0:0)"))
}

/// `hostping pair probe`.
#[derive(Debug, Args)]
pub struct PairProbeArgs {
    #[command(flatten)]
    pub local: PairDeviceArgs,
    /// The `pair serve` to probe: HOST:PORT (a name or an address).
    #[arg(long, value_name = "HOST:PORT")]
    pub peer: String,
    /// Timed ping-pong rounds of the latency phase (ib_write_lat -n).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = capped_u32("iterations", 1, limits::ITERATIONS))]
    pub iterations: u32,
    /// Bytes of a ping (ib_write_lat -s).
    #[arg(long, value_name = "BYTES", default_value_t = 2, value_parser = capped_u32("ping bytes", 1, 4096))]
    pub size: u32,
    /// WRITEs of the bandwidth phase (ib_write_bw -n); 0: no bandwidth phase.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = capped_u64("bandwidth iterations", 0, limits::ITERATIONS))]
    pub bw_iterations: u64,
    /// Bytes of a bandwidth message (ib_write_bw -s).
    #[arg(long, value_name = "BYTES", default_value_t = 65536, value_parser = capped_u32("bandwidth message bytes", 1, MAX_BW_BYTES))]
    pub bw_size: u32,
    /// WRITEs outstanding in the bandwidth phase (ib_write_bw -t).
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = capped_u32("depth", 1, limits::STREAM_DEPTH))]
    pub depth: u32,
    /// Judge the probe against a healthy one of the same pair: the JSON that
    /// `pair probe --format json` wrote then. Each part (host A, host B, the network)
    /// is normal or abnormal, and the pair abnormal (exit 1) when a part is.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the probe's report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `hostping pair --endpoint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PairEndpoint {
    /// The memory node nearest the RNIC (fewest links, at line rate where one is).
    Memory,
}
