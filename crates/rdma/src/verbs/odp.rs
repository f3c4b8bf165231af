//! On-demand paging capabilities of a device: `ibv_query_device_ex` -> `odp_caps`
//! (linux-counters.md 3; what `ibv_devinfo -v` prints as `general_odp_caps` and
//! `rc_odp_caps` ...). A device without ODP is a value ([`OdpCaps::supported`] false), not
//! an error.
//!
//! Why: ODP memory regions are where the two pitfalls of ISPASS'21
//! (`shared/papers/001_50e040594ebebbef.txt`, "packet damming", "packet flood") start; the
//! damming micro-benchmark needs ODP RDMA READ on RC at both ends.

use super::ffi::{ibv_odp_caps, IBV_ODP_SUPPORT, IBV_ODP_SUPPORT_IMPLICIT};
use std::fmt;

bitflags::bitflags! {
    /// `enum ibv_odp_transport_cap_bits`: the operations a transport may use on ODP
    /// memory. Bits a newer library defines (`FLUSH` 1 << 6, `ATOMIC_WRITE` 1 << 7) are
    /// kept.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct TransportOdp: u32 {
        /// `IBV_ODP_SUPPORT_SEND`.
        const SEND = 1 << 0;
        /// `IBV_ODP_SUPPORT_RECV`.
        const RECV = 1 << 1;
        /// `IBV_ODP_SUPPORT_WRITE`.
        const WRITE = 1 << 2;
        /// `IBV_ODP_SUPPORT_READ`.
        const READ = 1 << 3;
        /// `IBV_ODP_SUPPORT_ATOMIC`.
        const ATOMIC = 1 << 4;
        /// `IBV_ODP_SUPPORT_SRQ_RECV`.
        const SRQ_RECV = 1 << 5;
        const _ = !0;
    }
}

impl fmt::Display for TransportOdp {
    /// As `ibv_devinfo -v` prints it (rdma-core libibverbs/examples/devinfo.c):
    /// `SUPPORT_SEND SUPPORT_READ`, or `NO SUPPORT`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("NO SUPPORT");
        }
        let names = [
            (TransportOdp::SEND, "SUPPORT_SEND"),
            (TransportOdp::RECV, "SUPPORT_RECV"),
            (TransportOdp::WRITE, "SUPPORT_WRITE"),
            (TransportOdp::READ, "SUPPORT_READ"),
            (TransportOdp::ATOMIC, "SUPPORT_ATOMIC"),
            (TransportOdp::SRQ_RECV, "SUPPORT_SRQ"),
        ];
        let mut words: Vec<String> = names
            .iter()
            .filter(|(bit, _)| self.contains(*bit))
            .map(|(_, name)| name.to_string())
            .collect();
        // Bits beyond SRQ_RECV: FLUSH and ATOMIC_WRITE of newer libraries, or later ones.
        let unknown = self.bits() & !0x3f;
        if unknown != 0 {
            words.push(format!("unknown bits {unknown:#x}"));
        }
        f.write_str(&words.join(" "))
    }
}

/// Where the capabilities came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapsSource {
    /// The provider's `query_device_ex`.
    Extended,
    /// The provider has no `query_device_ex` (or answered EOPNOTSUPP/ENOSYS), so
    /// `ibv_query_device_ex` falls back to `ibv_query_device` and reports no ODP, as
    /// rdma-core's own inline does.
    Legacy,
}

/// The ODP capabilities of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OdpCaps {
    /// `odp_caps.general_caps`: `IBV_ODP_SUPPORT`, `IBV_ODP_SUPPORT_IMPLICIT`.
    pub general: u64,
    /// `odp_caps.per_transport_caps.rc_odp_caps`.
    pub rc: TransportOdp,
    /// `uc_odp_caps`.
    pub uc: TransportOdp,
    /// `ud_odp_caps`.
    pub ud: TransportOdp,
    /// `ibv_device_attr_ex.xrc_odp_caps`.
    pub xrc: TransportOdp,
    /// `orig_attr.max_mr_size`: the largest region, ODP or not (`ibv_odp_caps` has no
    /// size of its own).
    pub max_mr_size: u64,
    /// Extended query or legacy fallback.
    pub source: CapsSource,
}

impl OdpCaps {
    /// From the structs the query filled.
    pub fn from_raw(caps: ibv_odp_caps, xrc: u32, max_mr_size: u64, source: CapsSource) -> Self {
        OdpCaps {
            general: caps.general_caps,
            rc: TransportOdp::from_bits_retain(caps.rc_odp_caps),
            uc: TransportOdp::from_bits_retain(caps.uc_odp_caps),
            ud: TransportOdp::from_bits_retain(caps.ud_odp_caps),
            xrc: TransportOdp::from_bits_retain(xrc),
            max_mr_size,
            source,
        }
    }

    /// `IBV_ODP_SUPPORT`: the device can page on demand at all.
    pub fn supported(&self) -> bool {
        self.general & IBV_ODP_SUPPORT != 0
    }

    /// `IBV_ODP_SUPPORT_IMPLICIT`: whole-address-space (implicit) ODP MRs.
    pub fn implicit(&self) -> bool {
        self.general & IBV_ODP_SUPPORT_IMPLICIT != 0
    }

    /// RDMA READ targeting ODP memory over RC: what ISPASS'21's micro-benchmarks use.
    pub fn rc_read(&self) -> bool {
        self.supported() && self.rc.contains(TransportOdp::READ)
    }
}

impl fmt::Display for OdpCaps {
    /// `ibv_devinfo -v`'s lines, one per cap, joined by `; `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let general = match (self.supported(), self.implicit()) {
            (false, _) => "NO SUPPORT".to_string(),
            (true, false) => "ODP_SUPPORT".to_string(),
            (true, true) => "ODP_SUPPORT ODP_SUPPORT_IMPLICIT".to_string(),
        };
        write!(
            f,
            "general_odp_caps: {general}; rc_odp_caps: {}; uc_odp_caps: {}; ud_odp_caps: {}; \
             xrc_odp_caps: {}",
            self.rc, self.uc, self.ud, self.xrc
        )?;
        if self.source == CapsSource::Legacy {
            f.write_str(" (the provider has no extended query)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(general: u64, rc: u32, uc: u32, ud: u32, xrc: u32) -> OdpCaps {
        OdpCaps::from_raw(
            ibv_odp_caps {
                general_caps: general,
                rc_odp_caps: rc,
                uc_odp_caps: uc,
                ud_odp_caps: ud,
            },
            xrc,
            u64::MAX,
            CapsSource::Extended,
        )
    }

    #[test]
    fn a_connectx_with_odp_and_a_device_without() {
        // mlx5 (ConnectX-5/6) as `ibv_devinfo -v` shows it: RC send/recv/write/read/
        // atomic/srq, UD send/recv, XRC like RC.
        let cx = caps(0x3, 0x3f, 0, 0x3, 0x3f);
        assert!(cx.supported() && cx.implicit() && cx.rc_read());
        assert_eq!(
            cx.to_string(),
            "general_odp_caps: ODP_SUPPORT ODP_SUPPORT_IMPLICIT; rc_odp_caps: SUPPORT_SEND \
             SUPPORT_RECV SUPPORT_WRITE SUPPORT_READ SUPPORT_ATOMIC SUPPORT_SRQ; uc_odp_caps: \
             NO SUPPORT; ud_odp_caps: SUPPORT_SEND SUPPORT_RECV; xrc_odp_caps: SUPPORT_SEND \
             SUPPORT_RECV SUPPORT_WRITE SUPPORT_READ SUPPORT_ATOMIC SUPPORT_SRQ"
        );
        // rxe before Linux 6.14, or a provider without the extended query: all zero.
        let none = caps(0, 0, 0, 0, 0);
        assert!(!none.supported() && !none.implicit() && !none.rc_read());
        assert!(none
            .to_string()
            .starts_with("general_odp_caps: NO SUPPORT; rc_odp_caps: NO SUPPORT"));
        // Transport bits without the general bit are not ODP.
        assert!(!caps(0, 0x8, 0, 0, 0).rc_read());
        // Explicit only, and RC without READ.
        let explicit = caps(0x1, 0x7, 0, 0, 0);
        assert!(explicit.supported() && !explicit.implicit() && !explicit.rc_read());
    }

    #[test]
    fn newer_bits_are_kept_and_named_as_unknown() {
        let c = caps(0x1, 0x8 | 1 << 6 | 1 << 7, 0, 0, 0);
        assert_eq!(c.rc.bits(), 0xc8);
        assert_eq!(c.rc.to_string(), "SUPPORT_READ unknown bits 0xc0");
        let legacy = OdpCaps {
            source: CapsSource::Legacy,
            ..caps(0, 0, 0, 0, 0)
        };
        assert!(legacy
            .to_string()
            .ends_with("(the provider has no extended query)"));
    }
}
