//! libibumad, loaded at run time (dlopen, as [`crate::verbs`] loads libibverbs): a port's
//! MAD interface (`/dev/infiniband/umadN`), the agents of the classes hostping speaks, and
//! one MAD sent or received at a time. [`rpc`] builds the request/response exchange on it,
//! with hostping's own deadlines and retries.
//!
//! Everything goes through the library, never through `std::fs`: ibsim's `libumad2sim`
//! (the simulated fabric the tests run against) intercepts the C library's `open`, `ioctl`,
//! `poll`, `read` and `write` that libibumad calls, and Rust's standard library opens files
//! with `open64`, which it would miss.

pub mod rpc;

use crate::mad::{MgmtClass, MAD_LEN};
use std::ffi::{c_char, c_int, c_long, c_void, CStr, CString};
use std::sync::Arc;
use std::time::Duration;

/// `UMAD_CA_NAME_LEN` of `<infiniband/umad.h>`.
const CA_NAME_LEN: usize = 20;
/// `UMAD_MAX_DEVICES`.
const MAX_DEVICES: usize = 32;

/// Why a umad call failed, naming the call and what it was given.
#[derive(Debug, thiserror::Error)]
pub enum UmadError {
    /// libibumad or one of its symbols is missing.
    #[error("{0}")]
    Unavailable(String),
    /// A channel adapter name that cannot be handed to C: it holds a NUL byte. Names come
    /// from the agent's TOML `[fabric]` table and from `--ca`, so this is input, not a bug.
    #[error("CA name {name:?}: holds a NUL byte, which no device name has")]
    CaName {
        /// The name as given.
        name: String,
    },
    /// A call failed.
    #[error("{call}: {source}")]
    Call {
        /// The call and its arguments (`umad_open_port(mlx5_0, 1)`).
        call: String,
        /// The errno it gave.
        #[source]
        source: std::io::Error,
    },
}

impl UmadError {
    /// A libibumad return value: a negative errno.
    fn rc(call: impl Into<String>, rc: c_int) -> UmadError {
        UmadError::Call {
            call: call.into(),
            source: std::io::Error::from_raw_os_error(rc.abs()),
        }
    }
}

/// Every libibumad entry point hostping calls, resolved once.
struct Symbols {
    init: Option<unsafe extern "C" fn() -> c_int>,
    get_cas_names: unsafe extern "C" fn(*mut [c_char; CA_NAME_LEN], c_int) -> c_int,
    open_port: unsafe extern "C" fn(*const c_char, c_int) -> c_int,
    close_port: unsafe extern "C" fn(c_int) -> c_int,
    register: unsafe extern "C" fn(c_int, c_int, c_int, u8, *mut c_long) -> c_int,
    send: unsafe extern "C" fn(c_int, c_int, *mut c_void, c_int, c_int, c_int) -> c_int,
    recv: unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, c_int) -> c_int,
    get_mad: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    size: unsafe extern "C" fn() -> usize,
    status: unsafe extern "C" fn(*mut c_void) -> c_int,
    set_addr: unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int, c_int) -> c_int,
}

/// The loaded library.
pub struct Umad {
    sym: Symbols,
    _lib: libloading::Library,
}

const LIBRARY_NAMES: [&str; 2] = ["libibumad.so.3", "libibumad.so"];

impl Umad {
    /// Loads libibumad and resolves its symbols.
    pub fn load() -> Result<Arc<Umad>, UmadError> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            // SAFETY: libibumad's constructors only set up its own state.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Self::resolve(lib, name).map(Arc::new),
                Err(e) => tried.push(format!("{name}: {e}")),
            }
        }
        Err(UmadError::Unavailable(format!(
            "libibumad is not installed (install rdma-core / libibumad3): {}",
            tried.join("; ")
        )))
    }

    fn resolve(lib: libloading::Library, name: &str) -> Result<Umad, UmadError> {
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the type on the left is the C prototype of this symbol in
                // <infiniband/umad.h>.
                *unsafe { lib.get(concat!($s, "\0").as_bytes()) }.map_err(|e| {
                    UmadError::Unavailable(format!("{name} has no symbol {}: {e}", $s))
                })?
            };
        }
        let sym = Symbols {
            // SAFETY: as above; deprecated (a no-op) in new libraries, absent is fine.
            init: unsafe { lib.get::<unsafe extern "C" fn() -> c_int>(b"umad_init\0") }
                .ok()
                .map(|s| *s),
            get_cas_names: sym!("umad_get_cas_names"),
            open_port: sym!("umad_open_port"),
            close_port: sym!("umad_close_port"),
            register: sym!("umad_register"),
            send: sym!("umad_send"),
            recv: sym!("umad_recv"),
            get_mad: sym!("umad_get_mad"),
            size: sym!("umad_size"),
            status: sym!("umad_status"),
            set_addr: sym!("umad_set_addr"),
        };
        if let Some(init) = sym.init {
            // SAFETY: no arguments; older libraries read sysfs here.
            unsafe { init() };
        }
        Ok(Umad { sym, _lib: lib })
    }

    /// The names of the channel adapters with a MAD interface.
    pub fn ca_names(&self) -> Result<Vec<String>, UmadError> {
        let mut names = [[0 as c_char; CA_NAME_LEN]; MAX_DEVICES];
        // SAFETY: the array has MAX_DEVICES rows of CA_NAME_LEN, as the prototype says.
        let n = unsafe { (self.sym.get_cas_names)(names.as_mut_ptr(), MAX_DEVICES as c_int) };
        if n < 0 {
            return Err(UmadError::rc("umad_get_cas_names", n));
        }
        names_of(&names, n)
    }
}

/// The first `n` rows of `umad_get_cas_names`' array as names. What the library returned
/// is not trusted to keep its promises: a count beyond the rows is an error, and a row
/// with no NUL (which `CStr::from_ptr` would read past) is cut at its end.
fn names_of(rows: &[[c_char; CA_NAME_LEN]], n: c_int) -> Result<Vec<String>, UmadError> {
    let taken = usize::try_from(n)
        .ok()
        .and_then(|n| rows.get(..n))
        .ok_or_else(|| UmadError::Call {
            call: "umad_get_cas_names".into(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("returned {n} names for {} rows", rows.len()),
            ),
        })?;
    Ok(taken
        .iter()
        .map(|row| {
            let bytes: Vec<u8> = row.iter().map(|&c| c as u8).collect();
            let name = CStr::from_bytes_until_nul(&bytes)
                .map_or_else(|_| String::from_utf8_lossy(&bytes), CStr::to_string_lossy);
            name.into_owned()
        })
        .collect())
}

/// A CA name as C takes it; a name holding a NUL byte is [`UmadError::CaName`] (before
/// this, `Port::open` panicked on it).
fn ca_name(ca: &str) -> Result<CString, UmadError> {
    CString::new(ca).map_err(|_| UmadError::CaName {
        name: ca.to_string(),
    })
}

/// Where a MAD goes: the fields of `umad_set_addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    /// Destination LID (the permissive LID 0xffff for a directed route).
    pub dlid: u16,
    /// Destination QP: 0 for SMPs, 1 for the general services (PerfMgt).
    pub dqp: u32,
    /// Service level.
    pub sl: u8,
    /// Q_Key: 0 for QP0, the well-known 0x80010000 for QP1.
    pub qkey: u32,
}

/// The well-known Q_Key of QP1 (IBA 13.5.1).
pub const QP1_QKEY: u32 = 0x8001_0000;

impl Address {
    /// A directed-route SMP: the route is in the MAD, the LID permissive.
    pub fn directed() -> Address {
        Address {
            dlid: crate::mad::smp::PERMISSIVE_LID,
            dqp: 0,
            sl: 0,
            qkey: 0,
        }
    }

    /// A LID-routed SMP to `lid`.
    pub fn smp(lid: u16) -> Address {
        Address {
            dlid: lid,
            dqp: 0,
            sl: 0,
            qkey: 0,
        }
    }

    /// A general-services MAD (PerfMgt) to `lid`'s QP1.
    pub fn gsi(lid: u16) -> Address {
        Address {
            dlid: lid,
            dqp: 1,
            sl: 0,
            qkey: QP1_QKEY,
        }
    }
}

/// A registered MAD agent: the id the kernel gave for one class on one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Agent(pub i32);

/// What `recv` got: a response, or one of our sends coming back with a status (the kernel
/// reports a send whose response never came with status ETIMEDOUT, 110).
#[derive(Debug, Clone)]
pub struct Received {
    /// The agent it arrived on.
    pub agent: Agent,
    /// 0 for a MAD received; an errno for a send that failed.
    pub status: i32,
    /// The MAD.
    pub mad: [u8; MAD_LEN],
}

/// One port's MAD interface, open; closed on drop.
pub struct Port {
    umad: Arc<Umad>,
    id: c_int,
    name: String,
    /// A `struct ib_user_mad` with a MAD after it, 8-byte aligned for its u32 fields.
    buffer: Vec<u64>,
}

impl Port {
    /// Opens port `port` of channel adapter `ca` (the first CA with a usable port when
    /// `None`; port 0: the first active port).
    pub fn open(umad: Arc<Umad>, ca: Option<&str>, port: u8) -> Result<Port, UmadError> {
        let name = format!("{}:{port}", ca.unwrap_or("(first CA)"));
        let ca_c = ca.map(ca_name).transpose()?;
        let ptr = ca_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: a NUL-terminated name or NULL, as the prototype allows.
        let id = unsafe { (umad.sym.open_port)(ptr, c_int::from(port)) };
        if id < 0 {
            return Err(UmadError::rc(format!("umad_open_port({name})"), id));
        }
        // SAFETY: no arguments.
        let words = (unsafe { (umad.sym.size)() } + MAD_LEN).div_ceil(8);
        Ok(Port {
            umad,
            id,
            name,
            buffer: vec![0u64; words],
        })
    }

    /// The port as opened (`mlx5_0:1`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers an agent for `class` (version 1, no RMPP) that receives responses to its
    /// own requests only (no method mask: hostping answers nothing).
    pub fn register(&mut self, class: MgmtClass) -> Result<Agent, UmadError> {
        let raw: u8 = class.into();
        // SAFETY: a NULL method mask is allowed.
        let rc = unsafe {
            (self.umad.sym.register)(self.id, c_int::from(raw), 1, 0, std::ptr::null_mut())
        };
        if rc < 0 {
            return Err(UmadError::rc(
                format!("umad_register({}, class 0x{raw:02x})", self.name),
                rc,
            ));
        }
        Ok(Agent(rc))
    }

    fn umad_ptr(&mut self) -> *mut c_void {
        self.buffer.as_mut_ptr().cast()
    }

    /// Sends `mad` to `to` on `agent`. The kernel tracks the response for `timeout`
    /// (a response to a send it no longer tracks is dropped), with no retries of its own.
    pub fn send(
        &mut self,
        agent: Agent,
        to: Address,
        mad: &[u8; MAD_LEN],
        timeout: Duration,
    ) -> Result<(), UmadError> {
        let umad = self.umad_ptr();
        let sym = &self.umad.sym;
        // SAFETY: the buffer holds umad_size() + MAD_LEN bytes; get_mad points inside it.
        unsafe {
            (sym.set_addr)(
                umad,
                c_int::from(to.dlid),
                to.dqp as c_int,
                c_int::from(to.sl),
                to.qkey as c_int,
            );
            std::ptr::copy_nonoverlapping(mad.as_ptr(), (sym.get_mad)(umad).cast(), MAD_LEN);
        }
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as c_int;
        // SAFETY: as above; length is the MAD's.
        let rc = unsafe { (sym.send)(self.id, agent.0, umad, MAD_LEN as c_int, ms, 0) };
        if rc < 0 {
            return Err(UmadError::rc(
                format!("umad_send({}, dlid {})", self.name, to.dlid),
                rc,
            ));
        }
        Ok(())
    }

    /// Waits up to `timeout` for one MAD; `None` when none came.
    pub fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, UmadError> {
        let umad = self.umad_ptr();
        let sym = &self.umad.sym;
        let mut length = MAD_LEN as c_int;
        let ms = timeout.as_millis().min(i32::MAX as u128) as c_int;
        // SAFETY: the buffer holds umad_size() + MAD_LEN bytes and `length` says so.
        let rc = unsafe { (sym.recv)(self.id, umad, &mut length, ms) };
        if rc == -libc::ETIMEDOUT || rc == -libc::EAGAIN {
            return Ok(None);
        }
        if rc < 0 {
            return Err(UmadError::rc(format!("umad_recv({})", self.name), rc));
        }
        let mut mad = [0u8; MAD_LEN];
        // SAFETY: as above; the MAD lies after the header.
        let status = unsafe {
            std::ptr::copy_nonoverlapping(
                (sym.get_mad)(umad).cast::<u8>(),
                mad.as_mut_ptr(),
                MAD_LEN,
            );
            (sym.status)(umad)
        };
        Ok(Some(Received {
            agent: Agent(rc),
            status,
            mad,
        }))
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: the id came from umad_open_port and is closed once.
        unsafe { (self.umad.sym.close_port)(self.id) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_name_with_a_nul_is_an_error_naming_it() {
        let err = ca_name("mlx5\0_0").unwrap_err();
        assert!(matches!(&err, UmadError::CaName { name } if name == "mlx5\0_0"));
        assert_eq!(
            err.to_string(),
            "CA name \"mlx5\\0_0\": holds a NUL byte, which no device name has"
        );
        assert_eq!(ca_name("mlx5_0").unwrap().as_bytes(), b"mlx5_0");
    }

    /// Where libibumad is installed (as on this project's build machines), the whole of
    /// `Port::open`: it refused the name before it panicked on it.
    #[test]
    fn opening_a_port_by_a_name_with_a_nul_fails_before_any_call() {
        let Ok(umad) = Umad::load() else {
            eprintln!("libibumad is not installed: only ca_name is tested");
            return;
        };
        let err = Port::open(umad, Some("mlx5_0\0"), 1)
            .err()
            .expect("refused");
        assert!(matches!(&err, UmadError::CaName { name } if name == "mlx5_0\0"));
    }

    fn rows(names: &[&str]) -> Vec<[c_char; CA_NAME_LEN]> {
        names
            .iter()
            .map(|n| {
                let mut row = [0 as c_char; CA_NAME_LEN];
                for (r, b) in row.iter_mut().zip(n.bytes()) {
                    *r = b as c_char;
                }
                row
            })
            .collect()
    }

    #[test]
    fn ca_names_take_the_rows_the_library_filled_and_no_more() {
        let r = rows(&["mlx5_0", "mlx5_1", ""]);
        assert_eq!(names_of(&r, 2).unwrap(), ["mlx5_0", "mlx5_1"]);
        assert_eq!(names_of(&r, 0).unwrap(), Vec::<String>::new());
        // A name filling its row with no NUL is cut at the row's end, not read past it.
        let full = rows(&["abcdefghijklmnopqrst"]);
        assert_eq!(names_of(&full, 1).unwrap(), ["abcdefghijklmnopqrst"]);
        let err = names_of(&r, 4).unwrap_err();
        assert_eq!(
            err.to_string(),
            "umad_get_cas_names: returned 4 names for 3 rows"
        );
    }
}
