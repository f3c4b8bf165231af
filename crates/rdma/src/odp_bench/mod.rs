//! ISPASS'21's ODP micro-benchmarks (`shared/papers/001_50e040594ebebbef.txt`): damming,
//! two 100 B READs at a swept interval, and flood, 8192 100 B READs over 1..N QPs, with ODP
//! memory on both sides. Both need RDMA READ on RC over ODP memory; this module holds the
//! gate that says, naming the device, what a device lacks.

use crate::verbs::OdpCaps;

/// A device that cannot run the micro-benchmarks: it lacks ODP, or ODP READ on RC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{device} has no {missing} ({caps}): ISPASS'21's ODP micro-benchmarks need ODP memory as the target of RDMA READ over RC")]
pub struct NoOdp {
    /// The device.
    pub device: String,
    /// What it lacks, in words.
    pub missing: &'static str,
    /// Its capabilities as `ibv_devinfo -v` prints them.
    pub caps: String,
}

/// Checks that `device`, with capabilities `caps`, can run the micro-benchmarks.
pub fn require_rc_read(device: &str, caps: &OdpCaps) -> Result<(), NoOdp> {
    let missing = if !caps.supported() {
        "on-demand paging (general_odp_caps lacks ODP_SUPPORT)"
    } else if !caps.rc_read() {
        "ODP RDMA READ over RC (rc_odp_caps lacks SUPPORT_READ)"
    } else {
        return Ok(());
    };
    Err(NoOdp {
        device: device.to_string(),
        missing,
        caps: caps.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::ffi::{ibv_odp_caps, IBV_ODP_SUPPORT};
    use crate::verbs::CapsSource;

    fn caps(general: u64, rc: u32, source: CapsSource) -> OdpCaps {
        let raw = ibv_odp_caps {
            general_caps: general,
            rc_odp_caps: rc,
            uc_odp_caps: 0,
            ud_odp_caps: 0,
        };
        OdpCaps::from_raw(raw, 0, u64::MAX, source)
    }

    #[test]
    fn rxe_of_linux_6_1_has_no_odp() {
        // rxe before 6.14 answers query_device_ex with zeroed odp_caps.
        let e = require_rc_read("rxe0", &caps(0, 0, CapsSource::Extended)).unwrap_err();
        assert_eq!(e.device, "rxe0");
        let text = e.to_string();
        assert!(text.starts_with("rxe0 has no on-demand paging"), "{text}");
        assert!(text.contains("general_odp_caps: NO SUPPORT"), "{text}");
    }

    #[test]
    fn odp_without_rc_read_names_the_missing_operation() {
        let e = require_rc_read(
            "mlx5_0",
            &caps(IBV_ODP_SUPPORT, 0b101, CapsSource::Extended),
        )
        .unwrap_err();
        assert!(e.to_string().contains("ODP RDMA READ over RC"), "{e}");
        assert!(e.to_string().contains("SUPPORT_SEND SUPPORT_WRITE"), "{e}");
    }

    #[test]
    fn a_connectx_with_rc_read_passes() {
        let rc = 0b1111;
        assert!(
            require_rc_read("mlx5_0", &caps(IBV_ODP_SUPPORT, rc, CapsSource::Extended)).is_ok()
        );
    }
}
