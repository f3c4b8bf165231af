/*!
The read API (DESIGN 4.5, issue 14): its answers and query parameters as types, spelled once
for every side of it, and the one implementation of the endpoints that the agent and the
collector both serve.

| path | answer | served by |
|---|---|---|
| `GET /api/hosts[?cause=C][&health=H]` ([`HostsQuery`]) | [`HostSummary`]s, by name | agent (its own host), collector |
| `GET /api/hosts/{host}/runs?limit=N` ([`RunsQuery`]) | [`HostRun`]s, newest first | agent, collector |
| `GET /api/hosts/{host}/timeline?rnic=R&endpoint=E[&since_unix_ms=T][&limit=N]` ([`TimelineQuery`]) | a [`Timeline`], oldest first | agent, collector |
| `GET /api/hosts/{host}/baseline` | a [`HostBaseline`] | collector |
| `GET /api/kinds/{kind}/baseline` | a [`KindBaseline`] | collector |
| `GET /api/fleet/slow-hosts?kind=K&limit=N` ([`SlowHostsQuery`]) | [`SlowHost`]s, worst first | collector |
| `GET /api/fleet/status` | a [`FleetStatus`] | collector |
| `GET /api/fleet/causes` | [`CauseHosts`], most hosts first | collector |
| any refusal | an [`ErrorBody`] with the status of its [`ReadError`] | both |

The collector builds its answers from these types, the agent too, and `hostping fleet`
reads them back into them: a field renamed here is a compile error on every side, and the
JSON (which the web UI's script and users' scripts read) stays DESIGN 4.5's. Fields may be
added, never renamed or dropped.

# The one implementation

[`routes`] serves the three shared endpoints over any [`ReadStore`]: query parsing (one
number parser, [`query::number`]), the 404 of an unknown host and the mapping of errors
to statuses live there once. The collector implements the trait over PostgreSQL, the agent
over its SQLite file.

The trait is async, its futures `Send`: the collector's driver is async, and a blocking
trait would cost it a `spawn_blocking` per request on its shared runtime. The agent's SQLite
reads are synchronous and short; its implementation answers inline, on the agent's own
HTTP thread (a current-thread runtime that serves nothing else and never holds up the probe
loop), exactly as the agent served these endpoints before, so it needs no blocking pool
either.

# Key order

Every object's keys are in alphabetical order, except the slow hosts' (served in the order
`analyze` declares them): the answers were first built as `serde_json::Value`s, whose maps
sort their keys, and users compare them byte for byte. The types here declare their fields
in that order, so that serialising them directly gives the same bytes; an embedded type
declared in another order goes through [`order::via_value`].
*/

pub mod error;
pub mod fleet;
pub mod hosts;
pub mod order;
pub mod query;
mod routes;
pub mod store;

pub use analyze::fleet::judge::{JudgedPath, Source, Verdict};
pub use analyze::fleet::slow::{Metric, SlowHost, SlowPath};
pub use analyze::fleet::Health;
pub use error::{ErrorBody, ReadError};
pub use fleet::{
    BaselineRun, CauseCount, CauseDiagnosis, CauseHost, CauseHosts, FleetStatus, HostBaseline,
    KindBaseline, KindBaselinePath, KindStatus,
};
pub use hosts::{HostRun, HostSummary, RunEnvelope, Timeline, TimelinePoint};
pub use query::{
    HostsFilter, HostsQuery, QueryError, RunsQuery, SlowHostsQuery, TimelineQuery, TimelineRequest,
    TRIGGERS,
};
pub use routes::routes;
pub use store::ReadStore;
