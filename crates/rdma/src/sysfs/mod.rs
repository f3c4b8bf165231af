/*!
Topology discovery from sysfs: RDMA ports, NUMA nodes, GPUs and the PCIe tree above them,
turned into the same [`model::HostTopology`] the virtual host uses (DESIGN 1, "discover").

Every path is built under a [`SysRoot`]: `/` on a real host, a fixture folder in tests
(`testdata/hosts/<host>/`, holding `sys/` and optionally `proc/`). One module per source:

| module | source | kernel reference |
|---|---|---|
| [`ib`] | `sys/class/infiniband/<dev>/ports/<p>/...` | `Documentation/ABI/stable/sysfs-class-infiniband`, `drivers/infiniband/core/sysfs.c` |
| [`pci`] | `sys/bus/pci/devices/<addr>` and the `sys/devices/pci<dom>:<bus>/...` tree | `Documentation/ABI/testing/sysfs-bus-pci`, `drivers/pci/pci-sysfs.c` |
| [`numa`] | `sys/devices/system/node/node<N>/` | `Documentation/ABI/stable/sysfs-devices-node` |
| [`cpu`] | `sys/devices/system/cpu/cpu<C>/topology/`, `proc/cpuinfo` | `Documentation/ABI/stable/sysfs-devices-system-cpu` |
| [`sockets`] | none: sockets, memory nodes and inter-socket links from the facts of `numa` | ACPI 6.5 5.2.17 (SLIT) |
| [`gpu`] | PCI functions of class 0x03 from NVIDIA or AMD | `include/linux/pci_ids.h` |
| `topology` | none: maps the facts above into a host model | DESIGN 4.1, `docs/host-model.md` |

# Absent is not zero

Each module lists its files as *required* (missing or malformed: a [`DiscoverError`] naming
the file) or *optional* (missing: `None`; malformed: an error too, since a value we cannot
read is not a value we may guess). Reading an optional file also gives `None` when the kernel
answers `EINVAL`, `EOPNOTSUPP` or `ENODATA`: that is how sysfs says "no value now" (a port
`rate` with no active width, a GID's `ndevs` entry with no netdev). Files of this module:

| path | policy |
|---|---|
| `<root>` and `<root>/sys` | required: a root that cannot be read is an error |
| `proc/sys/kernel/hostname` | optional |

A host without `sys/class/infiniband` is not an error: it has no RDMA ports, no host model,
and a note says so. One device that is not what its folder promises (a Xeon Phi's `scif0`
in `sys/class/infiniband` without `ports/`, a PCI function without `vendor`) is skipped
with a note naming it, and the rest is discovered. Whatever discovery assumes or skips is
said in [`Discovery::notes`], which `hostping topology` prints.
*/

pub mod cpu;
pub mod gpu;
pub mod ib;
pub mod numa;
pub mod pci;
pub mod sockets;
mod topology;

pub use gpu::GpuDevice;
pub use ib::{GidEntry, GidKind, LinkLayer, LinkRate, PortState, RdmaPort};
pub use numa::NumaNode;
pub use pci::{PciAddr, PcieLink};
pub use sockets::{Socket, SocketLayout};
pub use topology::{Bindings, RnicBinding, SwitchPorts, INTER_SOCKET_GBPS, MEMORY_CHANNEL_GBPS};

use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};

/// The folder that stands for `/`: every sysfs and procfs path is read below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl SysRoot {
    /// A root folder: `/` on a real host, a fixture folder (holding `sys/`) in tests.
    pub fn new(root: impl Into<PathBuf>) -> SysRoot {
        SysRoot { root: root.into() }
    }

    /// The running system's root, `/`.
    pub fn system() -> SysRoot {
        SysRoot::new("/")
    }

    /// The root folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A path below the root; `rel` is written without a leading `/` (`sys/class/infiniband`).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// A required text file, trimmed: missing or unreadable is an error naming it.
    pub(crate) fn read_required(&self, path: &Path) -> Result<String, DiscoverError> {
        match self.read_optional(path)? {
            Some(text) => Ok(text),
            None => Err(DiscoverError::Malformed {
                path: path.to_path_buf(),
                reason: "required file is missing or has no value".into(),
            }),
        }
    }

    /// An optional text file, trimmed: `None` when missing or when the kernel has no value
    /// (see the module doc); any other read error names the file.
    pub(crate) fn read_optional(&self, path: &Path) -> Result<Option<String>, DiscoverError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(text.trim().to_string())),
            Err(e) if means_no_value(&e) => Ok(None),
            Err(e) => Err(DiscoverError::unreadable(path, &e)),
        }
    }

    /// A required file through a parser: the error names the file.
    pub(crate) fn parse_required<T>(
        &self,
        path: &Path,
        parse: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Result<T, DiscoverError> {
        let text = self.read_required(path)?;
        parse(&text).map_err(|e| DiscoverError::malformed(path, e))
    }

    /// An optional file through a parser: `None` when absent, an error naming the file
    /// when present but malformed.
    pub(crate) fn parse_optional<T>(
        &self,
        path: &Path,
        parse: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Result<Option<T>, DiscoverError> {
        match self.read_optional(path)? {
            Some(text) => parse(&text)
                .map(Some)
                .map_err(|e| DiscoverError::malformed(path, e)),
            None => Ok(None),
        }
    }

    /// The entries of a folder, sorted by name; `None` when the folder does not exist.
    pub(crate) fn list_dir(&self, path: &Path) -> Result<Option<Vec<String>>, DiscoverError> {
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(DiscoverError::unreadable(path, &e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| DiscoverError::unreadable(path, &e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(Some(names))
    }

    /// Where a symlink finally points, as a path below the root with `..` resolved;
    /// `None` when the link does not exist.
    pub(crate) fn resolve(&self, path: &Path) -> Result<Option<PathBuf>, DiscoverError> {
        match std::fs::canonicalize(path) {
            Ok(real) => Ok(Some(real)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DiscoverError::unreadable(path, &e)),
        }
    }

    /// The components of a resolved path below the root (`["sys", "devices", ...]`).
    pub(crate) fn components_below_root<'a>(&self, real: &'a Path) -> Vec<&'a str> {
        real.strip_prefix(&self.root)
            .unwrap_or(real)
            .components()
            .filter_map(|c| c.as_os_str().to_str())
            .collect()
    }
}

/// `EINVAL`, `EOPNOTSUPP`, `ENODATA` and a missing file: sysfs has no value to give.
pub(crate) fn means_no_value(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || matches!(
            e.raw_os_error(),
            Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) | Some(libc::ENODATA)
        )
}

/// A sysfs value that a parser cannot read: the value and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not {expected}")]
pub struct ParseError {
    /// The text as read (trimmed).
    pub value: String,
    /// What the parser expected, in words (`a PCI address like 0000:3b:00.0`).
    pub expected: &'static str,
}

impl ParseError {
    pub(crate) fn new(value: &str, expected: &'static str) -> ParseError {
        ParseError {
            value: value.to_string(),
            expected,
        }
    }
}

/// Why discovery could not run. Each message is one line naming the file and the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiscoverError {
    /// A file or folder that exists (or must exist) could not be read.
    #[error("cannot read {}: {reason}", path.display())]
    Unreadable {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error, in words.
        reason: String,
    },
    /// A file holds something its parser does not accept, or a required file is missing.
    #[error("{}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The discovered tree does not make a valid host model (a bug in the mapping, or a
    /// tree shape it does not handle).
    #[error("{}: the discovered host is not a valid model: {reason}", root.display())]
    Model {
        /// The root that was discovered.
        root: PathBuf,
        /// The model's complaint.
        reason: String,
    },
}

impl DiscoverError {
    pub(crate) fn unreadable(path: &Path, e: &io::Error) -> DiscoverError {
        DiscoverError::Unreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }

    pub(crate) fn malformed(path: &Path, e: ParseError) -> DiscoverError {
        DiscoverError::Malformed {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }

    /// The file or folder at fault.
    pub fn path(&self) -> &Path {
        match self {
            DiscoverError::Unreadable { path, .. } | DiscoverError::Malformed { path, .. } => path,
            DiscoverError::Model { root, .. } => root,
        }
    }
}

/// Everything discovery found, and the host model built from it.
#[derive(Debug, Clone, Serialize)]
pub struct Discovery {
    /// From `proc/sys/kernel/hostname`, if present.
    pub hostname: Option<String>,
    /// NUMA nodes, sorted by id (one node 0 on a kernel without NUMA).
    pub numa_nodes: Vec<NumaNode>,
    /// The sockets those nodes make, with their memory nodes and inter-socket links.
    pub sockets: SocketLayout,
    /// `proc/cpuinfo` says this host is a virtual machine: its PCIe bridges are emulated.
    pub virtual_machine: bool,
    /// Every RDMA port, in any state, sorted by (device name in natural order, port).
    pub rdma_ports: Vec<RdmaPort>,
    /// GPUs, sorted by PCI address.
    pub gpus: Vec<GpuDevice>,
    /// The host model; `None` when no usable (ACTIVE, with a rate) RDMA port exists.
    pub host: Option<model::HostTopology>,
    /// Model id to device, for every RNIC, memory node and GPU of `host`.
    pub bindings: Bindings,
    /// Assumptions and skipped items, in plain words.
    pub notes: Vec<String>,
}

/// Discovers the host below `root`.
///
/// ```
/// use rdma::sysfs::{discover, SysRoot};
/// let root = SysRoot::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/hosts/dgx-a100"));
/// let found = discover(&root).unwrap();
/// assert!(found.host.unwrap().name.starts_with("2s-4rnic200-8gpu-"));
/// let rnic1 = found.bindings.rnic(&"rnic1".into()).unwrap();
/// assert_eq!((rnic1.device.as_str(), rnic1.gid_index), ("mlx5_1", Some(3)));
/// ```
pub fn discover(root: &SysRoot) -> Result<Discovery, DiscoverError> {
    // Symlinks resolve to absolute paths; resolve the root once so they share its prefix.
    let real_root = std::fs::canonicalize(root.root())
        .map_err(|e| DiscoverError::unreadable(root.root(), &e))?;
    let root = SysRoot::new(real_root);
    let sys = root.path("sys");
    std::fs::read_dir(&sys).map_err(|e| DiscoverError::unreadable(&sys, &e))?;

    let mut notes = Vec::new();
    let hostname = root
        .read_optional(&root.path("proc/sys/kernel/hostname"))?
        .filter(|h| !h.is_empty());
    let numa_nodes = numa::read_nodes(&root, &mut notes)?;
    let sockets = sockets::layout(&numa_nodes, &mut notes);
    let virtual_machine = cpu::is_virtual_machine(&root)?;
    let rdma_ports = ib::read_ports(&root, &mut notes)?;
    let gpus = gpu::scan(&root, &mut notes)?;

    let usable = topology::usable_ports(&rdma_ports, &mut notes);
    let (host, bindings) = if usable.is_empty() {
        if !rdma_ports.is_empty() {
            notes.push("no RDMA port is usable: no host model".to_string());
        }
        (None, Bindings::default())
    } else {
        let mut facts = topology::Facts {
            hostname: hostname.as_deref(),
            sockets: &sockets,
            virtual_machine,
            rnics: Vec::new(),
            gpus: Vec::new(),
        };
        for port in usable {
            let chain = match port.pci {
                Some(addr) => pci::chain(&root, addr)?,
                None => Vec::new(),
            };
            facts.rnics.push((port, chain));
        }
        for gpu in &gpus {
            facts.gpus.push((gpu, pci::chain(&root, gpu.pci)?));
        }
        let (host, bindings) =
            topology::build(&facts, &mut notes).map_err(|e| DiscoverError::Model {
                root: root.root().to_path_buf(),
                reason: e.to_string(),
            })?;
        (Some(host), bindings)
    };
    Ok(Discovery {
        hostname,
        numa_nodes,
        sockets,
        virtual_machine,
        rdma_ports,
        gpus,
        host,
        bindings,
        notes,
    })
}
