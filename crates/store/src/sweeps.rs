//! Sweeps of switch-port counters in the run database (tables `fabric_sweeps` and
//! `fabric_ports`, schema v3; see the crate doc), and the plain values they are made of.
//!
//! The values mirror `hostping fabric sample --format json` (DESIGN 4.4) but are defined
//! here, so that the store never depends on the umad sampler that produces them: the
//! agent converts its sweeps into a [`FabricSweep`].

use crate::db::{Context, Store, StoreError};
use rusqlite::{params, Row, TransactionBehavior};
use serde::{Serialize, Serializer};
use std::time::Duration;

use model::switch_port::parse_guid;
pub use model::switch_port::{guid_text, SwitchPortCounters};

/// One switch port in one sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchPortSample {
    /// The switch's node GUID (JSON: `0x` and 16 lower-case hex digits).
    #[serde(serialize_with = "guid_json")]
    pub guid: u64,
    /// The switch's LID.
    pub lid: u16,
    /// The port number.
    pub port: u8,
    /// When its answer arrived, ns since the Unix epoch (0 when nothing arrived).
    pub at_unix_ns: u64,
    /// The counters; `None` when the port did not answer.
    pub counters: Option<SwitchPortCounters>,
    /// Why there are no counters.
    pub error: Option<String>,
}

/// One sweep over a sampler's switch ports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FabricSweep {
    /// The sampler's own count of its sweeps, from 1 (restarts with the agent).
    pub sweep: u64,
    /// When the first query left, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// From the first query's start to the last answer, us (the LDMS paper's spread).
    pub spread_us: f64,
    /// Who sampled: the agent's host name, or `fabric.sampler`.
    pub sampler: String,
    /// Every port, in the sampler's order.
    pub ports: Vec<SwitchPortSample>,
}

impl FabricSweep {
    /// Ports without counters in this sweep.
    pub fn ports_in_error(&self) -> usize {
        self.ports.iter().filter(|p| p.counters.is_none()).count()
    }
}

/// A sweep as it was stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredSweep {
    /// Row id (never reused).
    pub id: i64,
    /// The sweep.
    #[serde(flatten)]
    pub sweep: FabricSweep,
}

fn guid_json<S: Serializer>(guid: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&guid_text(*guid))
}

/// Columns of `fabric_ports` read back, in [`port_from_row`]'s order.
const PORT_COLUMNS: &str = "guid, lid, port, at_unix_ns, xmit_data_bytes, rcv_data_bytes, \
    xmit_pkts, rcv_pkts, xmit_wait, symbol_errors, link_downed, rcv_errors, xmit_discards, error";

fn bad_column(index: usize, why: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, why.into())
}

fn port_from_row(row: &Row<'_>) -> rusqlite::Result<SwitchPortSample> {
    let text: String = row.get(0)?;
    let guid =
        parse_guid(&text).ok_or_else(|| bad_column(0, format!("guid `{text}` is not 0x%016x")))?;
    let mut values = [None::<u64>; 9];
    for (i, v) in values.iter_mut().enumerate() {
        *v = row.get(4 + i)?;
    }
    let counters = if values.iter().all(Option::is_none) {
        None
    } else if values.iter().all(Option::is_some) {
        Some(SwitchPortCounters::from_values(
            values.map(Option::unwrap_or_default),
        ))
    } else {
        return Err(bad_column(
            4,
            format!("port {text}: some counters are NULL and some are not"),
        ));
    };
    Ok(SwitchPortSample {
        guid,
        lid: row.get(1)?,
        port: row.get(2)?,
        at_unix_ns: row.get(3)?,
        counters,
        error: row.get(13)?,
    })
}

impl Store {
    fn sweep_int(&self, what: impl FnOnce() -> String, value: u64) -> Result<i64, StoreError> {
        i64::try_from(value).map_err(|_| StoreError::SweepOutOfRange {
            path: self.path.clone(),
            what: what(),
            value,
        })
    }

    /// Stores one sweep and its ports in one transaction, and in the same transaction
    /// drops the sweeps that started more than `keep` before this one (the retention
    /// bound: the port rows go with their sweep). Returns the sweep's row id.
    pub fn insert_sweep(&mut self, sweep: &FabricSweep, keep: Duration) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let start = self.sweep_int(|| "start_unix_ns".into(), sweep.start_unix_ns)?;
        let number = self.sweep_int(|| "sweep".into(), sweep.sweep)?;
        // Every value is checked before the transaction starts: a sweep is stored whole or
        // not at all, and the error names the port.
        let mut rows = Vec::with_capacity(sweep.ports.len());
        for p in &sweep.ports {
            let at = self.sweep_int(
                || format!("{}[{}] at_unix_ns", guid_text(p.guid), p.port),
                p.at_unix_ns,
            )?;
            let mut counters = [None::<i64>; 9];
            if let Some(c) = &p.counters {
                for (slot, (field, value)) in counters.iter_mut().zip(c.fields()) {
                    *slot = Some(self.sweep_int(
                        || format!("{}[{}] {field}", guid_text(p.guid), p.port),
                        value,
                    )?);
                }
            }
            rows.push((p, at, counters));
        }
        let horizon = start.saturating_sub(i64::try_from(keep.as_nanos()).unwrap_or(i64::MAX));

        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx(&path, "insert sweep: begin")?;
        tx.execute(
            "INSERT INTO fabric_sweeps (sweep, start_unix_ns, spread_us, sampler) \
             VALUES (?1, ?2, ?3, ?4)",
            params![number, start, sweep.spread_us, sweep.sampler],
        )
        .ctx(&path, "insert sweep")?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO fabric_ports (sweep_id, idx, guid, lid, port, at_unix_ns, \
                     xmit_data_bytes, rcv_data_bytes, xmit_pkts, rcv_pkts, xmit_wait, \
                     symbol_errors, link_downed, rcv_errors, xmit_discards, error) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                )
                .ctx(&path, "insert sweep: ports")?;
            for (idx, (p, at, c)) in rows.iter().enumerate() {
                insert
                    .execute(params![
                        id,
                        idx as i64,
                        guid_text(p.guid),
                        p.lid,
                        p.port,
                        at,
                        c[0],
                        c[1],
                        c[2],
                        c[3],
                        c[4],
                        c[5],
                        c[6],
                        c[7],
                        c[8],
                        p.error,
                    ])
                    .ctx(
                        &path,
                        format!("insert sweep: port {}[{}]", guid_text(p.guid), p.port),
                    )?;
            }
        }
        tx.execute(
            "DELETE FROM fabric_sweeps WHERE start_unix_ns < ?1",
            [horizon],
        )
        .ctx(&path, "insert sweep: drop sweeps past the retention")?;
        tx.commit().ctx(&path, "insert sweep: commit")?;
        Ok(id)
    }

    /// Sweeps, newest first: at most `limit`, with a row id below `before`, each with its
    /// ports in the sampler's order.
    pub fn sweeps(&self, limit: u32, before: Option<i64>) -> Result<Vec<StoredSweep>, StoreError> {
        let what = "list fabric sweeps";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, sweep, start_unix_ns, spread_us, sampler FROM fabric_sweeps \
                 WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
            )
            .ctx(&self.path, what)?;
        let heads = stmt
            .query_map(params![before.unwrap_or(i64::MAX), limit], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    FabricSweep {
                        sweep: row.get(1)?,
                        start_unix_ns: row.get(2)?,
                        spread_us: row.get(3)?,
                        sampler: row.get(4)?,
                        ports: Vec::new(),
                    },
                ))
            })
            .ctx(&self.path, what)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx(&self.path, what)?;
        let mut ports = self
            .conn
            .prepare_cached(&format!(
                "SELECT {PORT_COLUMNS} FROM fabric_ports WHERE sweep_id = ?1 ORDER BY idx"
            ))
            .ctx(&self.path, what)?;
        heads
            .into_iter()
            .map(|(id, mut sweep)| {
                sweep.ports = ports
                    .query_map([id], port_from_row)
                    .and_then(|rows| rows.collect())
                    .ctx(&self.path, format!("read fabric sweep {id}"))?;
                Ok(StoredSweep { id, sweep })
            })
            .collect()
    }

    /// How many sweeps the database holds.
    pub fn sweep_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM fabric_sweeps", [], |row| row.get(0))
            .ctx(&self.path, "count fabric sweeps")
    }
}
