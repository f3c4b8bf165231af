//! What the 64-bit payload of an event ([`super::events::Event`]) says. Four kinds of event
//! exist: a packet reaching the head-of-line logic of a switch input (its arrival plus the
//! switch latency; `link << 32 | packet`), a packet delivered to its node
//! (`DELIVER | packet`), a wake-up of a link's sender (`WAKE | link`): a free link, returned
//! credits, a NIC's next message coming due; and the rare management events
//! (`MGMT | kind | index`: a counter snapshot, and the MAD service model's). An arrival names
//! its link as well as its packet so that the link's lines can be prefetched without waiting
//! for the packet's.
//!
//! Apart from the engine, so that the logic that schedules events (`switch`, `nic`,
//! `mad_events`) and the loop that decodes them share it without using each other.

/// Payload bit of a wake-up event; the low 31 bits are the link.
pub(crate) const WAKE: u64 = 1 << 31;
/// Payload bit of a delivery; the low 30 bits are the packet.
pub(crate) const DELIVER: u64 = 1 << 30;
/// The low 30 bits of a packet event's payload.
pub(crate) const PACKET: u64 = DELIVER - 1;
/// Packets are numbered below this, so that the payload bits stay free.
pub(crate) const MAX_PACKETS: u32 = DELIVER as u32;
/// Payload bit of a management event (links are below 2^31, so an arrival never has it);
/// bits 32 to 39 say which kind, the low 30 bits the index it applies to.
pub(crate) const MGMT: u64 = 1 << 63;
pub(crate) const MGMT_KIND_SHIFT: u32 = 32;
/// Management event: take a counter snapshot.
pub(crate) const SNAPSHOT: u64 = 1;
/// Management event: a switch's processor has answered a query (index: the switch).
pub(crate) const SERVICE_DONE: u64 = 2;
/// Management event: a sampler's sweep is due (index: the sampler).
pub(crate) const SWEEP_DUE: u64 = 3;

/// The payload of a management event of `kind` about `index`.
#[inline]
pub(crate) fn management(kind: u64, index: u32) -> u64 {
    debug_assert!(u64::from(index) < DELIVER);
    MGMT | kind << MGMT_KIND_SHIFT | u64::from(index)
}
