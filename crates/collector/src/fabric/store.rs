//! Sweeps in PostgreSQL (schema migration 7): `fabric_sweeps` (one row a sweep, unique by
//! sampler, start and number, so a resent sweep is stored once), `fabric_port_last` (each
//! sampler's latest read of each port: the base of its next delta) and `fabric_port_deltas`
//! (a row per port per sweep after the first: the interval and the nine deltas). A sweep is
//! stored in one transaction; the deltas are computed in it against the reads it locks, so
//! two posts of one sampler cannot both take the same base.
//!
//! Retention: each stored sweep deletes the sweeps, deltas and last reads older than `keep`
//! before the collector's clock (by the samplers' timestamps, which the window query uses
//! too). A port not read for longer than `keep` starts over with a baseline.

use super::deltas::{step, Read, Step};
use super::ports::{PortName, PortSums, PortsQuery};
use super::upload::{checked_ports, SweepUpload};
use std::collections::HashMap;
use std::time::Duration;
use tokio_postgres::{Client, GenericClient};

/// The migration that creates the tables (schema.rs appends it).
pub const MIGRATION: &str = "CREATE TABLE fabric_sweeps (
        id BIGSERIAL PRIMARY KEY,
        sampler TEXT NOT NULL,
        sweep BIGINT NOT NULL,
        start_unix_ns BIGINT NOT NULL,
        spread_us DOUBLE PRECISION NOT NULL,
        ports INTEGER NOT NULL,
        answered INTEGER NOT NULL,
        received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (sampler, start_unix_ns, sweep)
    );
    CREATE INDEX fabric_sweeps_start ON fabric_sweeps (start_unix_ns);
    CREATE TABLE fabric_port_last (
        sampler TEXT NOT NULL,
        guid BIGINT NOT NULL,
        port SMALLINT NOT NULL,
        at_unix_ns BIGINT NOT NULL,
        -- the switch's totals, in DESIGN 4.4's order; u64 stored bit for bit
        counters BIGINT[] NOT NULL,
        -- its description as last sent: a query's `leaf2/9` resolved to GUIDs
        switch TEXT,
        PRIMARY KEY (sampler, guid, port)
    );
    CREATE INDEX fabric_port_last_at ON fabric_port_last (at_unix_ns);
    CREATE INDEX fabric_port_last_switch ON fabric_port_last (switch, port);
    CREATE TABLE fabric_port_deltas (
        sweep_id BIGINT NOT NULL,
        sampler TEXT NOT NULL,
        guid BIGINT NOT NULL,
        switch TEXT,
        port SMALLINT NOT NULL,
        -- the read that ends the interval, and the interval
        end_unix_ns BIGINT NOT NULL,
        interval_ns BIGINT NOT NULL,
        reset BOOLEAN NOT NULL,
        xmit_data_bytes BIGINT NOT NULL,
        rcv_data_bytes BIGINT NOT NULL,
        xmit_pkts BIGINT NOT NULL,
        rcv_pkts BIGINT NOT NULL,
        xmit_wait BIGINT NOT NULL,
        symbol_errors BIGINT NOT NULL,
        link_downed BIGINT NOT NULL,
        rcv_errors BIGINT NOT NULL,
        xmit_discards BIGINT NOT NULL
    );
    -- a job's window over all ports, and retention
    CREATE INDEX fabric_port_deltas_end ON fabric_port_deltas (end_unix_ns);
    -- a job's window over the ports of its routes
    CREATE INDEX fabric_port_deltas_port ON fabric_port_deltas (guid, port, end_unix_ns);";

/// What a stored sweep came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Its row in `fabric_sweeps`.
    pub id: i64,
    /// Whether it was stored before (a resend): nothing more was stored.
    pub duplicate: bool,
    /// Delta rows written.
    pub deltas: u64,
    /// Ports that answered for the first time from this sampler (no delta yet).
    pub first: u64,
}

/// Why a sweep was not stored; nothing of it was.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database.
    #[error(transparent)]
    Database(#[from] tokio_postgres::Error),
    /// A sweep that did not come through `upload::parse`.
    #[error(transparent)]
    Upload(#[from] super::upload::UploadError),
    /// A delta past BIGINT's range, which no real counter moves in an interval (2^63 bytes
    /// is 5 years at 400 Gb/s): refused rather than stored wrong.
    #[error("port {guid}[{port}]: {counter} moved by {delta} in one interval, past 2^63 - 1")]
    Delta {
        /// The switch.
        guid: String,
        /// The port.
        port: u8,
        /// The counter.
        counter: &'static str,
        /// The delta.
        delta: u64,
    },
}

/// u64 in a BIGINT, bit for bit (the last reads only; deltas are checked to fit).
fn bits(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

fn unbits(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

/// Stores `upload` (checked by `upload::parse`) in one transaction, and drops what is
/// older than `keep` before `now_unix_ns`.
pub async fn store_sweep(
    client: &mut Client,
    upload: &SweepUpload,
    keep: Duration,
    now_unix_ns: i64,
) -> Result<Stored, StoreError> {
    let ports = checked_ports(upload)?;
    let answered: Vec<_> = ports
        .iter()
        .filter_map(|p| p.port.counters.map(|c| (p, c.values())))
        .collect();
    let tx = client.transaction().await?;
    let inserted = tx
        .query_opt(
            "INSERT INTO fabric_sweeps (sampler, sweep, start_unix_ns, spread_us, ports, answered)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (sampler, start_unix_ns, sweep) DO NOTHING RETURNING id",
            &[
                &upload.sampler,
                &(upload.sweep as i64),
                &(upload.start_unix_ns as i64),
                &upload.spread_us,
                &(upload.ports.len() as i32),
                &(answered.len() as i32),
            ],
        )
        .await?;
    let Some(row) = inserted else {
        let id: i64 = tx
            .query_one(
                "SELECT id FROM fabric_sweeps WHERE sampler = $1 AND start_unix_ns = $2 AND sweep = $3",
                &[&upload.sampler, &(upload.start_unix_ns as i64), &(upload.sweep as i64)],
            )
            .await?
            .get(0);
        tx.commit().await?;
        return Ok(Stored {
            id,
            duplicate: true,
            deltas: 0,
            first: 0,
        });
    };
    let sweep_id: i64 = row.get(0);
    let guids: Vec<i64> = answered.iter().map(|(p, _)| bits(p.guid)).collect();
    let numbers: Vec<i16> = answered
        .iter()
        .map(|(p, _)| i16::from(p.port.port))
        .collect();
    let previous: HashMap<(i64, i16), Read> = tx
        .query(
            "SELECT l.guid, l.port, l.at_unix_ns, l.counters FROM fabric_port_last l
             JOIN unnest($2::int8[], $3::int2[]) AS p(guid, port)
               ON l.guid = p.guid AND l.port = p.port
             WHERE l.sampler = $1
             FOR UPDATE OF l",
            &[&upload.sampler, &guids, &numbers],
        )
        .await?
        .into_iter()
        .map(|r| {
            let counters: Vec<i64> = r.get(3);
            let mut c = [0u64; 9];
            for (to, from) in c.iter_mut().zip(counters) {
                *to = unbits(from);
            }
            let at: i64 = r.get(2);
            (
                (r.get(0), r.get(1)),
                Read {
                    at_unix_ns: at as u64,
                    counters: c,
                },
            )
        })
        .collect();
    let mut rows = DeltaRows::default();
    let mut last = LastRows::default();
    let mut first = 0;
    for ((p, values), (&guid, &number)) in answered.iter().zip(guids.iter().zip(&numbers)) {
        let now = Read {
            at_unix_ns: p.port.at_unix_ns,
            counters: *values,
        };
        match step(previous.get(&(guid, number)), &now) {
            Step::Stale => continue,
            Step::First => first += 1,
            Step::Delta {
                interval_ns,
                deltas,
                reset,
            } => rows.push(guid, p.port, interval_ns, deltas, reset)?,
        }
        last.guid.push(guid);
        last.switch.push(p.port.switch.clone());
        last.port.push(number);
        last.at.push(now.at_unix_ns as i64);
        last.counters.push(
            values
                .iter()
                .map(|&v| bits(v).to_string())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    let stored = rows.guid.len() as u64;
    rows.insert(&tx, sweep_id, &upload.sampler).await?;
    last.upsert(&tx, &upload.sampler).await?;
    let cutoff = now_unix_ns.saturating_sub(i64::try_from(keep.as_nanos()).unwrap_or(i64::MAX));
    tx.execute(
        "DELETE FROM fabric_port_deltas WHERE end_unix_ns < $1",
        &[&cutoff],
    )
    .await?;
    tx.execute(
        "DELETE FROM fabric_sweeps WHERE start_unix_ns < $1",
        &[&cutoff],
    )
    .await?;
    tx.execute(
        "DELETE FROM fabric_port_last WHERE at_unix_ns < $1",
        &[&cutoff],
    )
    .await?;
    tx.commit().await?;
    Ok(Stored {
        id: sweep_id,
        duplicate: false,
        deltas: stored,
        first,
    })
}

/// The delta rows of a sweep, as column arrays for one `INSERT ... SELECT unnest(...)`.
#[derive(Default)]
struct DeltaRows {
    guid: Vec<i64>,
    switch: Vec<Option<String>>,
    port: Vec<i16>,
    end: Vec<i64>,
    interval: Vec<i64>,
    reset: Vec<bool>,
    deltas: [Vec<i64>; 9],
}

impl DeltaRows {
    fn push(
        &mut self,
        guid: i64,
        port: &super::upload::PortUpload,
        interval_ns: u64,
        deltas: [u64; 9],
        reset: bool,
    ) -> Result<(), StoreError> {
        for ((column, delta), name) in self
            .deltas
            .iter_mut()
            .zip(deltas)
            .zip(model::switch_port::COUNTER_NAMES)
        {
            column.push(i64::try_from(delta).map_err(|_| StoreError::Delta {
                guid: port.guid.clone(),
                port: port.port,
                counter: name,
                delta,
            })?);
        }
        self.guid.push(guid);
        self.switch.push(port.switch.clone());
        self.port.push(i16::from(port.port));
        self.end.push(port.at_unix_ns as i64);
        self.interval.push(interval_ns as i64);
        self.reset.push(reset);
        Ok(())
    }

    async fn insert(
        &self,
        tx: &impl GenericClient,
        sweep_id: i64,
        sampler: &str,
    ) -> Result<(), tokio_postgres::Error> {
        if self.guid.is_empty() {
            return Ok(());
        }
        let d = &self.deltas;
        tx.execute(
            "INSERT INTO fabric_port_deltas (sweep_id, sampler, guid, switch, port, end_unix_ns,
                 interval_ns, reset, xmit_data_bytes, rcv_data_bytes, xmit_pkts, rcv_pkts,
                 xmit_wait, symbol_errors, link_downed, rcv_errors, xmit_discards)
             SELECT $1, $2, * FROM unnest($3::int8[], $4::text[], $5::int2[], $6::int8[],
                 $7::int8[], $8::bool[], $9::int8[], $10::int8[], $11::int8[], $12::int8[],
                 $13::int8[], $14::int8[], $15::int8[], $16::int8[], $17::int8[])",
            &[
                &sweep_id,
                &sampler,
                &self.guid,
                &self.switch,
                &self.port,
                &self.end,
                &self.interval,
                &self.reset,
                &d[0],
                &d[1],
                &d[2],
                &d[3],
                &d[4],
                &d[5],
                &d[6],
                &d[7],
                &d[8],
            ],
        )
        .await?;
        Ok(())
    }
}

/// The new last reads, as column arrays (the counters as `a,b,...` text, an array each:
/// unnest flattens a two-dimensional array, so each row's nine travel as one text).
#[derive(Default)]
struct LastRows {
    guid: Vec<i64>,
    switch: Vec<Option<String>>,
    port: Vec<i16>,
    at: Vec<i64>,
    counters: Vec<String>,
}

impl LastRows {
    async fn upsert(
        &self,
        tx: &impl GenericClient,
        sampler: &str,
    ) -> Result<(), tokio_postgres::Error> {
        if self.guid.is_empty() {
            return Ok(());
        }
        tx.execute(
            "INSERT INTO fabric_port_last (sampler, guid, port, at_unix_ns, counters, switch)
             SELECT $1, g, p, a, string_to_array(c, ',')::int8[], w
             FROM unnest($2::int8[], $3::int2[], $4::int8[], $5::text[], $6::text[])
                 AS u(g, p, a, c, w)
             ON CONFLICT (sampler, guid, port) DO UPDATE
                 SET at_unix_ns = EXCLUDED.at_unix_ns, counters = EXCLUDED.counters,
                     switch = EXCLUDED.switch
                 -- two first reads of a port racing: the newer stays the base
                 WHERE fabric_port_last.at_unix_ns < EXCLUDED.at_unix_ns",
            &[
                &sampler,
                &self.guid,
                &self.port,
                &self.at,
                &self.counters,
                &self.switch,
            ],
        )
        .await?;
        Ok(())
    }
}

/// Each port's sums over the query's window, one per port and sampler, in the order
/// switch, port, sampler.
pub async fn window(
    client: &impl GenericClient,
    query: &PortsQuery,
) -> Result<Vec<PortSums>, tokio_postgres::Error> {
    let since = query.since_unix_ms * 1_000_000;
    let until = query.until_unix_ms * 1_000_000;
    let (mut by_guid, mut by_guid_port) = (Vec::<i64>::new(), Vec::<i16>::new());
    let (mut by_switch, mut by_switch_port) = (Vec::<String>::new(), Vec::<i16>::new());
    for (_, name) in query.ports.iter().flatten() {
        match name {
            PortName::Guid { guid, port } => {
                by_guid.push(bits(*guid));
                by_guid_port.push(i16::from(*port));
            }
            PortName::Switch { switch, port } => {
                by_switch.push(switch.clone());
                by_switch_port.push(i16::from(*port));
            }
        }
    }
    // The sums, over every port or over the ports asked for: by GUID as given, by
    // description through the samplers' last reads (fabric_port_last.switch), then each
    // port's deltas by the (guid, port, end_unix_ns) index.
    let rows = match &query.ports {
        None => {
            client
                .query(
                    &format!(
                        "{SUMS} FROM fabric_port_deltas d
                         WHERE end_unix_ns > $1 AND end_unix_ns <= $2 {GROUP}"
                    ),
                    &[&since, &until],
                )
                .await?
        }
        Some(_) => {
            client
                .query(
                    &format!(
                        "WITH wanted AS (
                             SELECT * FROM unnest($3::int8[], $4::int2[]) AS w(guid, port)
                             UNION
                             SELECT DISTINCT l.guid, l.port
                             FROM unnest($5::text[], $6::int2[]) AS n(switch, port)
                             JOIN fabric_port_last l ON l.switch = n.switch AND l.port = n.port)
                         {SUMS} FROM wanted w JOIN LATERAL (
                             SELECT * FROM fabric_port_deltas d
                             WHERE d.guid = w.guid AND d.port = w.port
                               AND d.end_unix_ns > $1 AND d.end_unix_ns <= $2) d ON true
                         {GROUP}"
                    ),
                    &[
                        &since,
                        &until,
                        &by_guid,
                        &by_guid_port,
                        &by_switch,
                        &by_switch_port,
                    ],
                )
                .await?
        }
    };
    Ok(rows.iter().map(port_sums).collect())
}

/// The sums of a group of deltas `d` (one port of one sampler), as [`port_sums`] reads them.
const SUMS: &str = "SELECT d.sampler, d.guid, max(d.switch), d.port, count(*),
            sum(d.interval_ns)::int8, count(*) FILTER (WHERE d.reset),
            sum(d.xmit_data_bytes)::int8, sum(d.rcv_data_bytes)::int8,
            sum(d.xmit_pkts)::int8, sum(d.rcv_pkts)::int8, sum(d.xmit_wait)::int8,
            sum(d.symbol_errors)::int8, sum(d.link_downed)::int8, sum(d.rcv_errors)::int8,
            sum(d.xmit_discards)::int8";
const GROUP: &str = "GROUP BY d.sampler, d.guid, d.port
                     ORDER BY max(d.switch), d.guid, d.port, d.sampler";

fn port_sums(r: &tokio_postgres::Row) -> PortSums {
    let mut deltas = [0u64; 9];
    for (i, d) in deltas.iter_mut().enumerate() {
        *d = r.get::<_, i64>(7 + i) as u64;
    }
    let port: i16 = r.get(3);
    PortSums {
        sampler: r.get(0),
        guid: unbits(r.get(1)),
        switch: r.get(2),
        port: port as u8,
        intervals: r.get::<_, i64>(4) as u64,
        interval_ns: r.get::<_, i64>(5) as u64,
        resets: r.get::<_, i64>(6) as u64,
        deltas,
    }
}

/// The sampler that last read a switch port named by its switch's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The switch's description, as asked.
    pub switch: String,
    /// The port.
    pub port: u8,
    /// Who read it last: the Delegator gave it that port.
    pub sampler: String,
    /// The switch's node GUID, as that sampler sent it.
    pub guid: u64,
    /// When it last read the port, ns since the Unix epoch (its clock).
    pub at_unix_ns: i64,
}

/// For each `(switch, port)` of `names` that a sampler has read (and named by its switch's
/// description), the sampler that read it last; a port no sampler read is left out.
pub async fn owners(
    client: &impl GenericClient,
    names: &[(String, u8)],
) -> Result<Vec<Owner>, tokio_postgres::Error> {
    let switches: Vec<&str> = names.iter().map(|(s, _)| s.as_str()).collect();
    let ports: Vec<i16> = names.iter().map(|&(_, p)| i16::from(p)).collect();
    let rows = client
        .query(
            "SELECT DISTINCT ON (n.switch, n.port) n.switch, n.port, l.sampler, l.guid,
                 l.at_unix_ns
             FROM unnest($1::text[], $2::int2[]) AS n(switch, port)
             JOIN fabric_port_last l ON l.switch = n.switch AND l.port = n.port
             ORDER BY n.switch, n.port, l.at_unix_ns DESC",
            &[&switches, &ports],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Owner {
            switch: r.get(0),
            port: r.get::<_, i16>(1) as u8,
            sampler: r.get(2),
            guid: unbits(r.get(3)),
            at_unix_ns: r.get(4),
        })
        .collect())
}

/// Each of `samplers`' period: the time between its two newest sweeps of as many ports as
/// its largest sweep (a read the collector asked for covers fewer, and comes between);
/// a sampler with fewer than two such sweeps is left out.
pub async fn periods(
    client: &impl GenericClient,
    samplers: &[&str],
) -> Result<Vec<(String, std::time::Duration)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT s.name, (
                 SELECT max(t.start_unix_ns) - min(t.start_unix_ns) FROM (
                     SELECT f.start_unix_ns FROM fabric_sweeps f
                     WHERE f.sampler = s.name
                       AND f.ports = (SELECT max(g.ports) FROM fabric_sweeps g
                                      WHERE g.sampler = s.name)
                     ORDER BY f.start_unix_ns DESC LIMIT 2) t
                 HAVING count(*) = 2)
             FROM unnest($1::text[]) AS s(name)",
            &[&samplers],
        )
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let gap: Option<i64> = r.get(1);
            Some((
                r.get(0),
                std::time::Duration::from_nanos(gap?.max(0) as u64),
            ))
        })
        .collect())
}

/// Each port of `asked` (its sampler, GUID and number), summed over the deltas that
/// sampler read of it whose interval began at or after `since_unix_ns`: what it counted
/// since a request made then, and nothing from before. A port with none is left out.
pub async fn fresh(
    client: &impl GenericClient,
    asked: &[(String, u64, u8)],
    since_unix_ns: i64,
) -> Result<Vec<PortSums>, tokio_postgres::Error> {
    let samplers: Vec<&str> = asked.iter().map(|(s, _, _)| s.as_str()).collect();
    let guids: Vec<i64> = asked.iter().map(|&(_, g, _)| bits(g)).collect();
    let ports: Vec<i16> = asked.iter().map(|&(_, _, p)| i16::from(p)).collect();
    let rows = client
        .query(
            &format!(
                "{SUMS} FROM unnest($1::text[], $2::int8[], $3::int2[]) AS w(sampler, guid, port)
                 JOIN fabric_port_deltas d
                   ON d.guid = w.guid AND d.port = w.port AND d.sampler = w.sampler
                  AND d.end_unix_ns >= $4 AND d.end_unix_ns - d.interval_ns >= $4
                 {GROUP}"
            ),
            &[&samplers, &guids, &ports, &since_unix_ns],
        )
        .await?;
    Ok(rows.iter().map(port_sums).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_round_trips_through_bigint() {
        for v in [0, 1, i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX] {
            assert_eq!(unbits(bits(v)), v);
        }
    }
}
