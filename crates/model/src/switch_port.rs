//! Switch-port counters as a sampler reads them (DESIGN 4.4): the values the umad sampler
//! produces (`rdma::subnet::sample`), the agent stores (`store`) and serves, one type for all.

use serde::{Deserialize, Serialize};

/// A switch port's counters as one sweep read them: the switch's own totals (not deltas),
/// data in bytes (the MADs count 4-byte words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SwitchPortCounters {
    /// PortXmitData, bytes.
    pub xmit_data_bytes: u64,
    /// PortRcvData, bytes.
    pub rcv_data_bytes: u64,
    /// PortXmitPkts.
    pub xmit_pkts: u64,
    /// PortRcvPkts.
    pub rcv_pkts: u64,
    /// PortXmitWait (ticks in which the port had data to send and no credits).
    pub xmit_wait: u64,
    /// SymbolErrorCounter.
    pub symbol_errors: u64,
    /// LinkDownedCounter.
    pub link_downed: u64,
    /// PortRcvErrors.
    pub rcv_errors: u64,
    /// PortXmitDiscards.
    pub xmit_discards: u64,
}

/// The counters' JSON (and database column) names, in DESIGN 4.4's order: the order of
/// [`SwitchPortCounters::values`].
pub const COUNTER_NAMES: [&str; 9] = [
    "xmit_data_bytes",
    "rcv_data_bytes",
    "xmit_pkts",
    "rcv_pkts",
    "xmit_wait",
    "symbol_errors",
    "link_downed",
    "rcv_errors",
    "xmit_discards",
];

impl SwitchPortCounters {
    /// The values in [`COUNTER_NAMES`]' order.
    pub fn values(&self) -> [u64; 9] {
        [
            self.xmit_data_bytes,
            self.rcv_data_bytes,
            self.xmit_pkts,
            self.rcv_pkts,
            self.xmit_wait,
            self.symbol_errors,
            self.link_downed,
            self.rcv_errors,
            self.xmit_discards,
        ]
    }

    /// The counters from their values in [`COUNTER_NAMES`]' order (the inverse of
    /// [`SwitchPortCounters::values`]).
    pub fn from_values(values: [u64; 9]) -> Self {
        let [xmit_data_bytes, rcv_data_bytes, xmit_pkts, rcv_pkts, xmit_wait, symbol_errors, link_downed, rcv_errors, xmit_discards] =
            values;
        SwitchPortCounters {
            xmit_data_bytes,
            rcv_data_bytes,
            xmit_pkts,
            rcv_pkts,
            xmit_wait,
            symbol_errors,
            link_downed,
            rcv_errors,
            xmit_discards,
        }
    }

    /// The error counters in words, as a verdict's evidence cites them: `3 symbol errors,
    /// 0 receive errors, 0 discards`, with `, LinkDowned +N` when the link went down.
    pub fn error_words(&self) -> String {
        let mut words = format!(
            "{} symbol errors, {} receive errors, {} discards",
            self.symbol_errors, self.rcv_errors, self.xmit_discards
        );
        if self.link_downed > 0 {
            words.push_str(&format!(", LinkDowned +{}", self.link_downed));
        }
        words
    }

    /// Each counter with its JSON (and database column) name, in DESIGN 4.4's order.
    pub fn fields(&self) -> [(&'static str, u64); 9] {
        let values = self.values();
        std::array::from_fn(|i| (COUNTER_NAMES[i], values[i]))
    }
}

/// Deltas over two windows add up (saturating: a counter never wraps into a small number).
impl std::ops::AddAssign for SwitchPortCounters {
    fn add_assign(&mut self, other: Self) {
        let (mine, theirs) = (self.values(), other.values());
        *self = Self::from_values(std::array::from_fn(|i| mine[i].saturating_add(theirs[i])));
    }
}

/// A GUID as DESIGN 4.4 writes it: `0x` and 16 lower-case hex digits.
pub fn guid_text(guid: u64) -> String {
    format!("0x{guid:016x}")
}

/// A GUID as DESIGN 4.4 writes it (what [`guid_text`] writes): `0x` and 16 hex digits,
/// either case.
pub fn parse_guid(text: &str) -> Option<u64> {
    let hex = text.strip_prefix("0x")?;
    (hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_are_0x_and_16_hex_digits() {
        assert_eq!(
            parse_guid("0x0002c90300000001"),
            Some(0x0002_c903_0000_0001)
        );
        assert_eq!(parse_guid("0xFFFFFFFFFFFFFFFF"), Some(u64::MAX));
        for bad in [
            "",
            "0x",
            "0002c90300000001",
            "0x0002c9030000001",
            "0x+002c90300000001",
        ] {
            assert_eq!(parse_guid(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_guid_reads_back_as_written() {
        for guid in [0, 1, 0x0002_c903_0000_0001, u64::MAX] {
            assert_eq!(parse_guid(&guid_text(guid)), Some(guid));
        }
    }

    #[test]
    fn fields_follow_the_json_names() {
        let c = SwitchPortCounters {
            xmit_data_bytes: 1,
            xmit_discards: 9,
            ..Default::default()
        };
        let json = serde_json::to_value(c).unwrap();
        for (name, value) in c.fields() {
            assert_eq!(json[name], value, "{name}");
        }
        assert_eq!(json.as_object().unwrap().len(), 9);
        assert_eq!(guid_text(0x200000), "0x0000000000200000");
    }
}
