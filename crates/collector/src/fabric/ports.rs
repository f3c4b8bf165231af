//! `GET /api/fabric/ports?since=MS&until=MS&ports=a,b`: the query, the port names of
//! DESIGN 4.6 (`<switch>/<port>`, the switch by its description or its GUID), and the
//! answer's JSON (docs/fleet.md, "Switch-port counters").

use model::switch_port::guid_text;
use model::switch_port::parse_guid;
use model::switch_port::COUNTER_NAMES as NAMES;
use serde::Serialize;
use serde_json::{Map, Value};

/// A switch port as a query names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortName {
    /// `0x0002c90300000001/7`: by the switch's GUID.
    Guid {
        /// The switch's node GUID.
        guid: u64,
        /// The port.
        port: u8,
    },
    /// `leaf-b/2`: by the switch's description, as its samplers sent it.
    Switch {
        /// The description.
        switch: String,
        /// The port.
        port: u8,
    },
}

/// What a port name is expected to be, for its refusals.
const WANTED: &str = "expected <switch>/<port>, the switch by description or 0x GUID";

/// A port name that is not `<switch>/<port>`; each names the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortNameError {
    /// No `/`.
    #[error("port `{text}`: {WANTED}")]
    NoSlash {
        /// The name as given.
        text: String,
    },
    /// What follows the last `/` is not a port number.
    #[error("port `{text}`: `{port}` is not a port number 0-255")]
    Number {
        /// The name as given.
        text: String,
        /// Its port part.
        port: String,
        /// Why it does not read as a `u8`.
        source: std::num::ParseIntError,
    },
    /// Nothing before the last `/`.
    #[error("port `{text}`: no switch; {WANTED}")]
    NoSwitch {
        /// The name as given.
        text: String,
    },
}

impl PortName {
    /// Reads `<switch>/<port>`, split at the last `/` (a description may hold one); a
    /// switch of `0x` and 16 hex digits is a GUID.
    pub fn parse(text: &str) -> Result<PortName, PortNameError> {
        let (switch, port) = text
            .rsplit_once('/')
            .ok_or_else(|| PortNameError::NoSlash {
                text: text.to_owned(),
            })?;
        let port: u8 = port.parse().map_err(|source| PortNameError::Number {
            text: text.to_owned(),
            port: port.to_owned(),
            source,
        })?;
        if switch.is_empty() {
            return Err(PortNameError::NoSwitch {
                text: text.to_owned(),
            });
        }
        Ok(match parse_guid(switch) {
            Some(guid) => PortName::Guid { guid, port },
            None => PortName::Switch {
                switch: switch.to_owned(),
                port,
            },
        })
    }

    /// The port number.
    pub fn port(&self) -> u8 {
        match self {
            PortName::Guid { port, .. } | PortName::Switch { port, .. } => *port,
        }
    }
}

/// The query of `GET /api/fabric/ports`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortsQuery {
    /// The window's start, ms since the Unix epoch (exclusive).
    pub since_unix_ms: i64,
    /// Its end (inclusive).
    pub until_unix_ms: i64,
    /// The ports asked for, with the text each was asked by; every port when `None`.
    pub ports: Option<Vec<(String, PortName)>>,
}

/// A query of `GET /api/fabric/ports` that was refused (400), naming the parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortsQueryError {
    /// `since` or `until` is missing.
    #[error("{name}=MS is required (ms since the Unix epoch)")]
    Missing {
        /// `since` or `until`.
        name: &'static str,
    },
    /// `since` or `until` is not ms since the epoch.
    #[error("{name}={value}: wants ms since the Unix epoch")]
    Ms {
        /// `since` or `until`.
        name: &'static str,
        /// The value as given.
        value: String,
    },
    /// The window ends before it starts.
    #[error("until={until_unix_ms} is before since={since_unix_ms}")]
    Reversed {
        /// Its start.
        since_unix_ms: i64,
        /// Its end.
        until_unix_ms: i64,
    },
    /// A port of `ports` is not a port name.
    #[error(transparent)]
    Port(#[from] PortNameError),
}

impl PortsQuery {
    /// From the query string's `since`, `until` (both required, ms) and `ports`
    /// (comma-separated names).
    pub fn parse(
        since: Option<&str>,
        until: Option<&str>,
        ports: Option<&str>,
    ) -> Result<PortsQuery, PortsQueryError> {
        let ms = |name: &'static str, v: Option<&str>| -> Result<i64, PortsQueryError> {
            let v = v.ok_or(PortsQueryError::Missing { name })?;
            v.parse::<i64>()
                .ok()
                .filter(|&m| (0..=i64::MAX / 1_000_000).contains(&m))
                .ok_or_else(|| PortsQueryError::Ms {
                    name,
                    value: v.to_owned(),
                })
        };
        let since_unix_ms = ms("since", since)?;
        let until_unix_ms = ms("until", until)?;
        if until_unix_ms < since_unix_ms {
            return Err(PortsQueryError::Reversed {
                since_unix_ms,
                until_unix_ms,
            });
        }
        let ports = ports
            .map(|list| {
                list.split(',')
                    .filter(|p| !p.is_empty())
                    .map(|p| PortName::parse(p).map(|n| (p.to_owned(), n)))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        Ok(PortsQuery {
            since_unix_ms,
            until_unix_ms,
            ports,
        })
    }
}

/// One port's sums over the window, from one sampler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSums {
    /// Who sampled it.
    pub sampler: String,
    /// The switch's node GUID.
    pub guid: u64,
    /// The switch's description, when its sampler sent one.
    pub switch: Option<String>,
    /// The port.
    pub port: u8,
    /// Deltas in the window.
    pub intervals: u64,
    /// Their intervals added, ns.
    pub interval_ns: u64,
    /// Deltas with a counter reset in them.
    pub resets: u64,
    /// The deltas added, in `NAMES` order.
    pub deltas: [u64; 9],
}

/// One entry of the answer's `ports`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortAnswer {
    /// The name asked for, or `<switch>/<port>` (the description when known, else the GUID).
    pub port: String,
    /// The switch's GUID; `null` for a port asked for and never stored in the window.
    pub guid: Option<String>,
    /// The switch's description, when its sampler sent one.
    pub switch: Option<String>,
    /// The port number.
    pub number: u8,
    /// The sampler whose reads these are (a port two samplers read has an entry each).
    pub sampler: Option<String>,
    /// How many deltas the window holds.
    pub intervals: u64,
    /// The time they cover, s.
    pub seconds: f64,
    /// How many of them had a counter reset in them (counted from the reset).
    pub resets: u64,
    /// The deltas added, by DESIGN 4.4's counter names; `null` with no delta.
    pub deltas: Option<Map<String, Value>>,
    /// Each counter's sum over `seconds`, per second; `null` with no delta.
    pub rates: Option<Map<String, Value>>,
}

/// The answer of `GET /api/fabric/ports`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortsAnswer {
    /// The window's start, ms (exclusive: a delta counts when its read ends in the window).
    pub since_unix_ms: i64,
    /// Its end, ms (inclusive).
    pub until_unix_ms: i64,
    /// Each port found (asked for, or all), then each port asked for and not found.
    pub ports: Vec<PortAnswer>,
}

/// Whether `sums` is the port `name` names.
fn names(name: &PortName, sums: &PortSums) -> bool {
    match name {
        PortName::Guid { guid, port } => sums.guid == *guid && sums.port == *port,
        PortName::Switch { switch, port } => {
            sums.switch.as_deref() == Some(switch) && sums.port == *port
        }
    }
}

/// The answer: every port in `found` named as asked (or by `<switch>/<port>`), and an empty
/// entry for each port asked for that `found` lacks.
pub fn answer(query: &PortsQuery, found: Vec<PortSums>) -> PortsAnswer {
    let mut ports = Vec::with_capacity(found.len());
    for sums in &found {
        let asked = query
            .ports
            .iter()
            .flatten()
            .find(|(_, n)| names(n, sums))
            .map(|(text, _)| text.clone());
        let port = asked.unwrap_or_else(|| {
            let switch = sums.switch.clone().unwrap_or_else(|| guid_text(sums.guid));
            format!("{switch}/{}", sums.port)
        });
        let seconds = sums.interval_ns as f64 / 1e9;
        let deltas: Map<String, Value> = NAMES
            .iter()
            .zip(sums.deltas)
            .map(|(n, d)| ((*n).to_owned(), Value::from(d)))
            .collect();
        let rates: Map<String, Value> = NAMES
            .iter()
            .zip(sums.deltas)
            .map(|(n, d)| ((*n).to_owned(), Value::from(d as f64 / seconds)))
            .collect();
        ports.push(PortAnswer {
            port,
            guid: Some(guid_text(sums.guid)),
            switch: sums.switch.clone(),
            number: sums.port,
            sampler: Some(sums.sampler.clone()),
            intervals: sums.intervals,
            seconds,
            resets: sums.resets,
            deltas: Some(deltas),
            rates: (sums.interval_ns > 0).then_some(rates),
        });
    }
    for (text, name) in query.ports.iter().flatten() {
        if !found.iter().any(|s| names(name, s)) {
            let (guid, switch) = match name {
                PortName::Guid { guid, .. } => (Some(guid_text(*guid)), None),
                PortName::Switch { switch, .. } => (None, Some(switch.clone())),
            };
            ports.push(PortAnswer {
                port: text.clone(),
                guid,
                switch,
                number: name.port(),
                sampler: None,
                intervals: 0,
                seconds: 0.0,
                resets: 0,
                deltas: None,
                rates: None,
            });
        }
    }
    PortsAnswer {
        since_unix_ms: query.since_unix_ms,
        until_unix_ms: query.until_unix_ms,
        ports,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn port_names_are_switch_slash_port() {
        assert_eq!(
            PortName::parse("leaf2/9"),
            Ok(PortName::Switch {
                switch: "leaf2".into(),
                port: 9
            })
        );
        assert_eq!(
            PortName::parse("0x0002c90300000001/36"),
            Ok(PortName::Guid {
                guid: 0x0002_c903_0000_0001,
                port: 36
            })
        );
        // A description with a slash and spaces, as real switches have.
        assert_eq!(
            PortName::parse("MF0;sw-l1:MQM8700/U1/12"),
            Ok(PortName::Switch {
                switch: "MF0;sw-l1:MQM8700/U1".into(),
                port: 12
            })
        );
        for (bad, said) in [
            ("leaf2", "expected <switch>/<port>"),
            ("leaf2/x", "`x` is not a port number"),
            ("leaf2/256", "`256` is not a port number"),
            ("/3", "no switch"),
        ] {
            let e = PortName::parse(bad).unwrap_err().to_string();
            assert!(e.contains(said) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn the_query_wants_a_window() {
        let q = PortsQuery::parse(
            Some("1000"),
            Some("2000"),
            Some("leaf-b/2,,0x0000000000200000/7"),
        )
        .unwrap();
        assert_eq!((q.since_unix_ms, q.until_unix_ms), (1000, 2000));
        assert_eq!(q.ports.unwrap().len(), 2);
        assert_eq!(
            PortsQuery::parse(Some("0"), Some("0"), None).unwrap().ports,
            None
        );
        for (since, until, ports, said) in [
            (None, Some("1"), None, "since=MS is required"),
            (Some("1"), None, None, "until=MS is required"),
            (Some("x"), Some("1"), None, "since=x"),
            (Some("-1"), Some("1"), None, "since=-1"),
            (Some("2"), Some("1"), None, "before since=2"),
            (Some("1"), Some("2"), Some("leaf"), "port `leaf`"),
        ] {
            let e = PortsQuery::parse(since, until, ports)
                .unwrap_err()
                .to_string();
            assert!(e.contains(said), "{said}: {e}");
        }
    }

    #[test]
    fn the_answer_names_ports_as_asked_and_rates_per_second() {
        let q = PortsQuery::parse(Some("0"), Some("10000"), Some("leaf-b/2,leaf-a/1")).unwrap();
        let found = vec![PortSums {
            sampler: "s1".into(),
            guid: 0x200001,
            switch: Some("leaf-b".into()),
            port: 2,
            intervals: 2,
            interval_ns: 2_000_000_000,
            resets: 1,
            deltas: [4000, 0, 10, 0, 679, 0, 0, 0, 0],
        }];
        let json = serde_json::to_value(answer(&q, found)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"since_unix_ms": 0, "until_unix_ms": 10000, "ports": [
                {"port": "leaf-b/2", "guid": "0x0000000000200001", "switch": "leaf-b",
                 "number": 2, "sampler": "s1", "intervals": 2, "seconds": 2.0, "resets": 1,
                 "deltas": {"xmit_data_bytes": 4000, "rcv_data_bytes": 0, "xmit_pkts": 10,
                            "rcv_pkts": 0, "xmit_wait": 679, "symbol_errors": 0,
                            "link_downed": 0, "rcv_errors": 0, "xmit_discards": 0},
                 "rates": {"xmit_data_bytes": 2000.0, "rcv_data_bytes": 0.0, "xmit_pkts": 5.0,
                           "rcv_pkts": 0.0, "xmit_wait": 339.5, "symbol_errors": 0.0,
                           "link_downed": 0.0, "rcv_errors": 0.0, "xmit_discards": 0.0}},
                {"port": "leaf-a/1", "guid": null, "switch": "leaf-a", "number": 1,
                 "sampler": null, "intervals": 0, "seconds": 0.0, "resets": 0,
                 "deltas": null, "rates": null}]})
        );
    }

    proptest! {
        #[test]
        fn arbitrary_names_never_panic(s in ".{0,60}") {
            let _ = PortName::parse(&s);
            let _ = PortsQuery::parse(Some(&s), Some(&s), Some(&s));
        }
    }
}
