/*!
PCIe link state, AER counters and the config-space capabilities (PCI Express, ACS, ATS) of
one PCI function, or of every function from its root port down (linux-counters.md 4.1 to
4.3).

These are the link failures and misconfigurations that need no probe to see (Hostping,
`shared/papers/000_e45f64ac996c38a3.txt`): a link trained below what it supports (section
2.1 and section 6 #1 to #5, "link failures"; section 7: some are there from the factory,
and settings are lost at each reboot, so check before running applications), AER
errors counted at either end of a link, ACS redirecting peer-to-peer traffic up to the root
complex (#7) and ATS disabled on an RNIC (#8).

| file (below `sys/bus/pci/devices/<addr>/`) | policy |
|---|---|
| the folder itself | required: a missing function is an error naming it |
| `class` | required: `0x%06x` ([`pci::parse_class`]) |
| `current_link_speed`, `current_link_width`, `max_link_speed`, `max_link_width` | optional (PCIe functions only): absent, `Unknown` or width `0` give no link; malformed is an error ([`pci::parse_link_speed`], [`pci::parse_link_width`]) |
| `aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal` | optional (`CONFIG_PCIEAER` and an AER capability): `<name> <count>` lines, then `TOTAL_ERR_COR`, `TOTAL_ERR_NONFATAL` or `TOTAL_ERR_FATAL`; malformed is an error |
| `aer_rootport_total_err_{cor,nonfatal,fatal}` | optional (root ports): `%llu`; all three or none |
| `config` (binary) | optional: missing leaves every capability unknown; fewer than 64 bytes is an error; 64 bytes (a reader without `CAP_SYS_ADMIN`) leaves the capabilities unknown, not absent |

# Modules

- [`view`]: the config-space bytes as a typed view (`ConfigSpace<T>`, a `field` module of
  offsets, capability ids with `Unknown(raw)`, register views of the PCI Express, ACS, ATS
  and AER capabilities). No I/O.
- [`repr`]: those capabilities parsed into small values ([`parse_config`] never panics,
  whatever the bytes).
- [`sysfs`]: reading a function (or the path from its root port down) below a
  [`SysRoot`](crate::sysfs::SysRoot).
- [`aer`]: the `aer_*` statistics files.

Whether an ACS setting or a disabled ATS is a problem is `analyze::lint`'s judgement: this
module gives the register values.
*/

pub mod aer;
pub mod repr;
pub mod sysfs;
pub mod view;

pub use aer::{parse_aer_counts, parse_count, Aer, AerCounts, RootPortTotals};
pub use repr::{
    parse_config, AcsControl, AerRegisters, AtsControl, Capability, ConfigSummary, ExpressCap,
};
pub use sysfs::{link_state, read_function, read_path, PcieFunction};
pub use view::{AcsFlags, CapabilityId, ConfigSpace, ExtCapabilityId, PortType, WalkError};
