//! The body of `POST /api/fabric/sweeps` and its checks: the contract's
//! (`fleet_api::sweep`), which samplers write without this crate.

pub use fleet_api::sweep::{
    checked_ports, parse, CheckedPort, PortUpload, SweepStored, SweepUpload, UploadError,
};
