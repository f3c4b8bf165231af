//! [`RdmaNetlink`]: the `NETLINK_RDMA` socket. It lists the RDMA devices, dumps each one's
//! memory regions and MR statistics, and returns typed values, or a [`NetlinkError`] that
//! says why not. Every request has a deadline.

use super::dump::{emit, Dump, Step};
use super::mr::{odp_regions, parse_device, parse_table, Device, MrEntry, MrStats, OdpRegion};
use super::nldev::{attr, cmd, message_type, AttrWriter, WireError, NETLINK_RDMA};
use netlink_packet_core::{NLM_F_DUMP, NLM_F_REQUEST};
use netlink_sys::{Socket, SocketAddr};
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Why RDMA netlink could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NetlinkError {
    /// The kernel has no RDMA netlink: `socket(AF_NETLINK, NETLINK_RDMA)` is refused.
    #[error(
        "no RDMA netlink: socket(AF_NETLINK, NETLINK_RDMA): {source} (ib_core is not \
         loaded, or the kernel has no InfiniBand support)"
    )]
    NoRdmaNetlink {
        /// The socket error.
        source: io::Error,
    },
    /// The kernel (or a sandbox) refused.
    #[error(
        "{request}: permission denied: {source} (RDMA netlink may be limited to \
         CAP_NET_ADMIN in this network namespace, or a seccomp profile forbids netlink)"
    )]
    PermissionDenied {
        /// The request.
        request: String,
        /// The error.
        source: io::Error,
    },
    /// The device named in the request no longer exists (the kernel answers `EINVAL` or
    /// `ENODEV` for an index it does not know).
    #[error("{request}: device {device} is gone ({source})")]
    DeviceGone {
        /// The request.
        request: String,
        /// The device, `index:name`.
        device: String,
        /// The kernel's answer.
        source: io::Error,
    },
    /// No complete answer before the deadline.
    #[error("{request}: no complete answer within {timeout:?}")]
    Timeout {
        /// The request.
        request: String,
        /// The deadline given.
        timeout: Duration,
    },
    /// The dump kept changing while it was read (`NLM_F_DUMP_INTR` every time).
    #[error("{request}: the dump changed while it was read, {tries} times")]
    Interrupted {
        /// The request.
        request: String,
        /// Attempts made.
        tries: u32,
    },
    /// Another error from the kernel or the socket.
    #[error("{request}: {source}")]
    Io {
        /// The request.
        request: String,
        /// The error.
        source: io::Error,
    },
    /// A reply that does not parse.
    #[error(transparent)]
    Wire(#[from] WireError),
}

/// How often a dump interrupted by a change is started again.
const DUMP_TRIES: u32 = 3;

/// An open `NETLINK_RDMA` socket.
#[derive(Debug)]
pub struct RdmaNetlink {
    socket: Socket,
    sequence: u32,
    timeout: Duration,
    /// Every receive buffer, kept while recording (for captured fixtures).
    recorded: Option<Vec<Vec<u8>>>,
}

/// One request: what it is called in errors, its operation and attributes, and the device
/// it names.
struct Request<'d> {
    name: String,
    op: u16,
    attrs: Vec<u8>,
    device: Option<&'d Device>,
}

impl RdmaNetlink {
    /// Opens the socket; each later request must be answered within `timeout`.
    pub fn open(timeout: Duration) -> Result<RdmaNetlink, NetlinkError> {
        let mut socket =
            Socket::new(NETLINK_RDMA).map_err(|source| match source.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => NetlinkError::PermissionDenied {
                    request: "socket(AF_NETLINK, NETLINK_RDMA)".into(),
                    source,
                },
                _ => NetlinkError::NoRdmaNetlink { source },
            })?;
        socket.bind_auto().map_err(|source| NetlinkError::Io {
            request: "bind(NETLINK_RDMA)".into(),
            source,
        })?;
        Ok(RdmaNetlink {
            socket,
            sequence: 0,
            timeout,
            recorded: None,
        })
    }

    /// Starts keeping every receive buffer, as the kernel sent it, until
    /// [`RdmaNetlink::take_recorded`]: how `testdata/netlink/*-rxe0.hex` were captured.
    pub fn record(&mut self) {
        self.recorded = Some(Vec::new());
    }

    /// The buffers received since [`RdmaNetlink::record`], in order; recording stops.
    pub fn take_recorded(&mut self) -> Vec<Vec<u8>> {
        self.recorded.take().unwrap_or_default()
    }

    /// The RDMA devices (`RDMA_NLDEV_CMD_GET` dump; `rdma dev`).
    pub fn devices(&mut self) -> Result<Vec<Device>, NetlinkError> {
        let request = Request {
            name: "RDMA_NLDEV_CMD_GET dump".into(),
            op: cmd::GET,
            attrs: Vec::new(),
            device: None,
        };
        self.dump(&request, |payload, at| Ok(vec![parse_device(payload, at)?]))
    }

    /// The memory regions of `device` (`rdma resource show mr dev <name> -dd`).
    pub fn memory_regions(&mut self, device: &Device) -> Result<Vec<MrEntry>, NetlinkError> {
        let mut w = AttrWriter::new();
        w.u32(attr::DEV_INDEX, device.index);
        let request = Request {
            name: format!("RDMA_NLDEV_CMD_RES_MR_GET dump of {}", device.name),
            op: cmd::RES_MR_GET,
            attrs: w.into_bytes(),
            device: Some(device),
        };
        self.dump(&request, |payload, at| {
            parse_table(payload, at, MrEntry::parse)
        })
    }

    /// The per-MR statistics of `device` (`rdma statistic mr show dev <name>`).
    pub fn mr_statistics(&mut self, device: &Device) -> Result<Vec<MrStats>, NetlinkError> {
        let mut w = AttrWriter::new();
        w.u32(attr::DEV_INDEX, device.index)
            .u32(attr::STAT_RES, u32::from(attr::RES_MR));
        let request = Request {
            name: format!("RDMA_NLDEV_CMD_STAT_GET (MR) dump of {}", device.name),
            op: cmd::STAT_GET,
            attrs: w.into_bytes(),
            device: Some(device),
        };
        self.dump(&request, |payload, at| {
            parse_table(payload, at, MrStats::parse)
        })
    }

    /// Every ODP memory region of every device, with its counters. A device that goes
    /// away between the listing and its dump is skipped (it has no MRs any more).
    pub fn odp_regions(&mut self) -> Result<Vec<OdpRegion>, NetlinkError> {
        let mut out = Vec::new();
        for device in self.devices()? {
            let (mrs, stats) = match self
                .memory_regions(&device)
                .and_then(|mrs| Ok((mrs, self.mr_statistics(&device)?)))
            {
                Ok(found) => found,
                Err(NetlinkError::DeviceGone { .. }) => continue,
                Err(e) => return Err(e),
            };
            out.extend(odp_regions(&mrs, &stats));
        }
        Ok(out)
    }

    /// Sends `request` as a dump and parses each data reply with `parse`, restarting when
    /// the kernel flags the dump as interrupted.
    fn dump<T>(
        &mut self,
        request: &Request,
        parse: impl Fn(&[u8], &str) -> Result<Vec<T>, WireError>,
    ) -> Result<Vec<T>, NetlinkError> {
        for _ in 0..DUMP_TRIES {
            if let Some(found) = self.dump_once(request, &parse)? {
                return Ok(found);
            }
        }
        Err(NetlinkError::Interrupted {
            request: request.name.clone(),
            tries: DUMP_TRIES,
        })
    }

    /// One attempt: `None` when the dump was interrupted.
    fn dump_once<T>(
        &mut self,
        request: &Request,
        parse: &impl Fn(&[u8], &str) -> Result<Vec<T>, WireError>,
    ) -> Result<Option<Vec<T>>, NetlinkError> {
        self.sequence = self.sequence.wrapping_add(1);
        let sequence = self.sequence;
        let message = emit(
            message_type(request.op),
            NLM_F_REQUEST | NLM_F_DUMP,
            sequence,
            &request.attrs,
        );
        let io_error = |source: io::Error| NetlinkError::Io {
            request: request.name.clone(),
            source,
        };
        self.socket
            .send_to(&message, &SocketAddr::new(0, 0), 0)
            .map_err(|e| self.refusal(request, e))?;
        let deadline = Instant::now() + self.timeout;
        let mut dump = Dump::new(&request.name, sequence);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.timed_out(request));
            }
            set_receive_timeout(&self.socket, left).map_err(io_error)?;
            let buffer = match self.socket.recv_from_full() {
                Ok((buffer, _)) => buffer,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(self.timed_out(request))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(e)),
            };
            if let Some(recorded) = &mut self.recorded {
                recorded.push(buffer.clone());
            }
            match dump.absorb(&buffer, parse)? {
                Step::More => {}
                Step::Complete { interrupted: true } => return Ok(None),
                Step::Complete { interrupted: false } => return Ok(Some(dump.into_found())),
                Step::Refused(errno) => {
                    return Err(self.refusal(request, io::Error::from_raw_os_error(errno)))
                }
            }
        }
    }

    fn timed_out(&self, request: &Request) -> NetlinkError {
        NetlinkError::Timeout {
            request: request.name.clone(),
            timeout: self.timeout,
        }
    }

    /// The error for a refusal `e` of `request`.
    fn refusal(&self, request: &Request, source: io::Error) -> NetlinkError {
        let name = request.name.clone();
        match (source.raw_os_error(), request.device) {
            (Some(libc::EPERM) | Some(libc::EACCES), _) => NetlinkError::PermissionDenied {
                request: name,
                source,
            },
            (Some(libc::EINVAL) | Some(libc::ENODEV), Some(device)) => NetlinkError::DeviceGone {
                request: name,
                device: format!("{}:{}", device.index, device.name),
                source,
            },
            _ => NetlinkError::Io {
                request: name,
                source,
            },
        }
    }
}

/// `SO_RCVTIMEO`: a blocking receive gives up after `timeout` (`EAGAIN`).
fn set_receive_timeout(socket: &Socket, timeout: Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        // At least 1 us: a zero timeval means "block forever".
        tv_usec: libc::suseconds_t::from(timeout.subsec_micros().max(1)),
    };
    // SAFETY: the fd is the open socket; tv is a timeval of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
