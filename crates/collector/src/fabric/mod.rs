//! Switch-port counters at the collector (issue 27 section 5): samplers (`hostping fabric
//! sample --collector URL`, one per share of the Delegator's split) post each sweep of
//! DESIGN 4.4 to `POST /api/fabric/sweeps`; the collector stores, per port, the counter
//! deltas against the previous sweep of the same port from the same sampler, and
//! `GET /api/fabric/ports?since=&until=&ports=` sums them over a job's window, from any host
//! (docs/fleet.md, "Switch-port counters").
//!
//! The samplers' client is the contract's (`fleet_api::sweep_client`), so that a sampler
//! posts without this crate.
//!
//! | module | job |
//! |---|---|
//! | [`upload`] | the body a sampler posts, checked |
//! | [`deltas`] | a delta between two reads of a counter (resets, stale reads): pure |
//! | [`store`] | one sweep in one transaction, retention, the window's sums |
//! | [`ports`] | the `ports=` names and the answer of `GET /api/fabric/ports` |
//! | [`board`] | the ports a job verdict asks samplers to read now, a table every collector on the database shares, handed over in a sweep's answer |
//! | [`bench`] | `hostping bench sweeps`: ingest at a fabric's scale |

pub mod bench;
pub mod board;
pub mod deltas;
pub mod ports;
pub mod store;
pub mod upload;
