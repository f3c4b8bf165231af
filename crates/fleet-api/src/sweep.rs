//! The body of `POST /api/fabric/sweeps`: one sweep as `hostping fabric sample --format json`
//! prints it (DESIGN 4.4), with the sampler's name added (the tokens file's HOST, so the
//! token rules of runs apply unchanged) and, per port, the switch's description where the
//! sampler knows it (DESIGN 4.6 names a switch port `<switch>/<port>`). Fields may be added
//! later: unknown fields are ignored, never refused.

use model::switch_port::{guid_text, parse_guid, SwitchPortCounters};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

/// Between a sampler's two reads of the ports asked for ([`ReadNow`]): the second read's
/// delta is the ports' counters over this long, begun after the request. A second is the
/// shortest interval `hostping fabric sample` sweeps at by default (`--hz 1`), long enough
/// for a failing cable's symbol errors to show at `ibqueryerrors`' threshold of 10 in a
/// window (analyze::job::ports::ERRORS_TH) only when it errs at 10 a second or more. Both
/// sides read it here: the sampler waits it, the collector's verdict waits for it.
pub const READ_GAP: Duration = Duration::from_secs(1);

/// One port of a posted sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortUpload {
    /// The switch's node GUID, `0x` and 16 hex digits (DESIGN 4.4).
    pub guid: String,
    /// The switch's description, when the sampler knows it (it discovered the subnet or
    /// read a topology file; a port list alone names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// The switch's LID.
    pub lid: u16,
    /// The port number.
    pub port: u8,
    /// When its answer arrived, ns since the Unix epoch.
    pub at_unix_ns: u64,
    /// The switch's totals; `None` when the port did not answer.
    pub counters: Option<SwitchPortCounters>,
    /// Why there are no counters.
    #[serde(default)]
    pub error: Option<String>,
}

/// `POST /api/fabric/sweeps`'s body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepUpload {
    /// Who sampled: the HOST of its token's line in the collector's tokens file.
    pub sampler: String,
    /// The sweep's number in its sampler process, from 1.
    pub sweep: u64,
    /// When its first query left, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// From the first query's start to the last answer, us.
    pub spread_us: f64,
    /// Every port assigned to the sampler; for a read the collector asked for
    /// (the collector's board of reads, [`SweepStored::read_now`]), those ports only.
    pub ports: Vec<PortUpload>,
}

/// One port asked for, as `read_now` lists it in the sweep's answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReadNow {
    /// The switch's node GUID, `0x` and 16 hex digits (DESIGN 4.4).
    pub guid: String,
    /// The port number.
    pub port: u8,
}

/// The collector's answer to `POST /api/fabric/sweeps` (201 new, 200 a resend), its fields
/// in the order it has always written them (alphabetical: it was a `serde_json::Value`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepStored {
    /// Delta rows written.
    pub deltas: u64,
    /// Whether it was stored before (a resend).
    pub duplicate: bool,
    /// Ports that answered for the first time from this sampler (no delta yet).
    pub first: u64,
    /// The ports a job verdict asks the sampler to read now, twice a second apart.
    pub read_now: Vec<ReadNow>,
    /// The sampler.
    pub sampler: String,
    /// Its row in the collector's `fabric_sweeps`.
    pub stored: i64,
    /// The sweep's number, as sent.
    pub sweep: u64,
}

/// A body outside the contract (answered 400), naming what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UploadError(String);

/// A checked port: the GUID as a number.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedPort<'a> {
    /// The switch's node GUID.
    pub guid: u64,
    /// The port as posted.
    pub port: &'a PortUpload,
}

/// Parses and checks a body: JSON of [`SweepUpload`], a sampler named, GUIDs as DESIGN 4.4
/// writes them, every port once, times that fit PostgreSQL's BIGINT.
pub fn parse(body: &[u8]) -> Result<SweepUpload, UploadError> {
    let upload: SweepUpload = serde_json::from_slice(body)
        .map_err(|e| UploadError(format!("not a sweep (DESIGN 4.4 plus \"sampler\"): {e}")))?;
    check(&upload)?;
    Ok(upload)
}

/// The ports of a parsed upload with their GUIDs read ([`parse`] has checked them).
pub fn checked_ports(upload: &SweepUpload) -> Result<Vec<CheckedPort<'_>>, UploadError> {
    upload
        .ports
        .iter()
        .map(|p| {
            Ok(CheckedPort {
                guid: parse_guid(&p.guid).ok_or_else(|| {
                    UploadError(format!(
                        "port {}[{}]: guid `{}` is not 0x and 16 hex digits",
                        p.guid, p.port, p.guid
                    ))
                })?,
                port: p,
            })
        })
        .collect()
}

fn check(upload: &SweepUpload) -> Result<(), UploadError> {
    if upload.sampler.trim().is_empty() || upload.sampler.chars().any(char::is_whitespace) {
        return Err(UploadError(format!(
            "sampler `{}`: a host name of the tokens file, without spaces",
            upload.sampler
        )));
    }
    let fits = |ns: u64| i64::try_from(ns).is_ok();
    if !fits(upload.start_unix_ns) || i64::try_from(upload.sweep).is_err() {
        return Err(UploadError(format!(
            "sweep {}: start_unix_ns {} or the sweep number is past 2^63",
            upload.sweep, upload.start_unix_ns
        )));
    }
    let mut seen = HashSet::new();
    for p in checked_ports(upload)? {
        let name = format!("{}[{}]", guid_text(p.guid), p.port.port);
        if !seen.insert((p.guid, p.port.port)) {
            return Err(UploadError(format!(
                "port {name} appears twice in the sweep"
            )));
        }
        if !fits(p.port.at_unix_ns) {
            return Err(UploadError(format!(
                "port {name}: at_unix_ns {} is past 2^63",
                p.port.at_unix_ns
            )));
        }
        if p.port.switch.as_deref().is_some_and(str::is_empty) {
            return Err(UploadError(format!("port {name}: an empty switch name")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A sweep as `hostping fabric sample --format json` printed it on ibsim's two-switches
    /// net, with the sampler added: one port answered, one did not.
    const SWEEP: &str = r#"{"sampler": "node001", "sweep": 3, "start_unix_ns": 1764217000000000000,
        "spread_us": 812.5,
        "ports": [{"guid": "0x0000000000200001", "switch": "leaf-b", "lid": 3, "port": 2,
                   "at_unix_ns": 1764217000000400000,
                   "counters": {"xmit_data_bytes": 4096, "rcv_data_bytes": 8, "xmit_pkts": 2,
                                "rcv_pkts": 1, "xmit_wait": 4321, "symbol_errors": 0,
                                "link_downed": 0, "rcv_errors": 11, "xmit_discards": 5},
                   "error": null},
                  {"guid": "0x0000000000200000", "lid": 2, "port": 7,
                   "at_unix_ns": 1764217000000500000, "counters": null,
                   "error": "timed out after 3 tries"}]}"#;

    #[test]
    fn a_sweep_as_the_sampler_prints_it_parses() {
        let u = parse(SWEEP.as_bytes()).unwrap();
        assert_eq!(u.sampler, "node001");
        assert_eq!(u.sweep, 3);
        assert_eq!(u.start_unix_ns, 1_764_217_000_000_000_000);
        assert_eq!(u.spread_us, 812.5);
        assert_eq!(u.ports.len(), 2);
        let b2 = &u.ports[0];
        assert_eq!(b2.switch.as_deref(), Some("leaf-b"));
        assert_eq!(
            (b2.lid, b2.port, b2.at_unix_ns),
            (3, 2, 1_764_217_000_000_400_000)
        );
        let c = b2.counters.unwrap();
        assert_eq!(c.values(), [4096, 8, 2, 1, 4321, 0, 0, 11, 5]);
        assert_eq!(u.ports[1].counters, None);
        assert_eq!(u.ports[1].switch, None);
        assert_eq!(u.ports[1].error.as_deref(), Some("timed out after 3 tries"));
        let ports = checked_ports(&u).unwrap();
        assert_eq!(ports[0].guid, 0x200001);
        // Serialized back, it parses to itself (the sampler's side builds it so).
        assert_eq!(parse(&serde_json::to_vec(&u).unwrap()).unwrap(), u);
    }

    #[test]
    fn bodies_outside_the_contract_are_refused_naming_what() {
        let with = |from: &str, to: &str| SWEEP.replacen(from, to, 1);
        for (body, said) in [
            (with("\"node001\"", "\"\""), "sampler ``"),
            (with("\"node001\"", "\"node 1\""), "sampler `node 1`"),
            (with("0x0000000000200001", "0x200001"), "guid `0x200001`"),
            (
                with("0x0000000000200001", "0x000000000020000g"),
                "is not 0x and 16 hex",
            ),
            (
                with("0x0000000000200001", "0x0000000000200000").replacen(
                    "\"port\": 2",
                    "\"port\": 7",
                    1,
                ),
                "appears twice",
            ),
            (
                with("\"switch\": \"leaf-b\"", "\"switch\": \"\""),
                "empty switch name",
            ),
            (
                with("1764217000000400000", "9300000000000000000"),
                "past 2^63",
            ),
            (with("\"port\": 2", "\"port\": 300"), "not a sweep"),
            (
                with("\"xmit_wait\": 4321", "\"xmit_wait\": -1"),
                "not a sweep",
            ),
            ("[]".to_owned(), "not a sweep"),
        ] {
            let e = parse(body.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(said), "{said}: {e}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&body);
        }

        #[test]
        fn arbitrary_text_in_a_field_never_panics(s in ".{0,40}") {
            let _ = parse(SWEEP.replacen("0x0000000000200001", &s, 1).as_bytes());
            let _ = parse(SWEEP.replacen("node001", &s, 1).as_bytes());
        }
    }
}
