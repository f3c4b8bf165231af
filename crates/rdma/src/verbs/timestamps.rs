//! The device's own clock: `ibv_query_rt_values_ex` (the clock now) and completions stamped
//! by it (`ibv_create_cq_ex` with `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`). Both are `static
//! inline` in verbs.h, calling through the provider's `struct verbs_context`, and mirrored
//! here as [`super::query_device_ex_op`] is.
//!
//! Why: R-Pingmesh (SIGCOMM'24, section 4) takes host processing out of a probe's time with
//! the RNIC's timestamps; a WRITE's completion on an RC QP is made when the responder's
//! RNIC acknowledges it, so the device's clock from the post to that completion is the
//! network's round trip with neither host's software in it (`engine::pair`).

use super::ffi::{
    ibv_cq, ibv_cq_ex, ibv_cq_init_attr_ex, ibv_poll_cq_attr, ibv_values_ex, verbs_context_tail,
    CreateCqEx, QueryRtValues, IBV_VALUES_MASK_RAW_CLOCK, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
};
use super::{ctx_op, CompletionClock, Context, Cq, VerbsError};
use std::ffi::c_void;
use std::ptr::NonNull;

/// One completion of a stamped CQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StampedCompletion {
    /// The work request's id.
    pub wr_id: u64,
    /// `ibv_wc_status` (0: success).
    pub status: u32,
    /// When the device made the completion, in its cycles.
    pub timestamp: u64,
}

impl Context {
    /// The device's free-running clock now, in its cycles (`ibv_query_rt_values_ex` with
    /// `IBV_VALUES_MASK_RAW_CLOCK`). EOPNOTSUPP where the provider has no such query (rxe).
    pub fn raw_clock(&self) -> Result<u64, VerbsError> {
        let call = || format!("ibv_query_rt_values_ex({})", self.name);
        // SAFETY: ctx is open; the member is the provider's query_rt_values.
        let op = unsafe {
            ctx_op(
                self.raw(),
                std::mem::offset_of!(verbs_context_tail, query_rt_values),
            )
            .map(|op| std::mem::transmute::<*const c_void, QueryRtValues>(op))
        };
        let op = op.ok_or_else(|| VerbsError::code(call(), libc::EOPNOTSUPP))?;
        // SAFETY: plain data; zero is a valid bit pattern.
        let mut values: ibv_values_ex = unsafe { std::mem::zeroed() };
        values.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
        // SAFETY: ctx is open; values is an in/out parameter of the right type.
        let rc = unsafe { op(self.raw(), &mut values) };
        if rc != 0 {
            return Err(VerbsError::code(call(), rc));
        }
        if values.comp_mask & IBV_VALUES_MASK_RAW_CLOCK == 0 {
            return Err(VerbsError::code(call(), libc::EOPNOTSUPP));
        }
        // mlx4 and mlx5 put the cycles in tv_nsec, tv_sec 0.
        Ok(values.raw_clock.tv_nsec as u64)
    }

    /// `ibv_create_cq_ex` with `entries` entries whose completions carry the device's
    /// timestamp. It can be used as any [`Cq`] (`ibv_poll_cq` polls it too) and, in
    /// addition, by [`Cq::poll_stamped`]. EOPNOTSUPP (or the provider's refusal) where the
    /// device does not stamp completions (rxe).
    pub fn create_stamped_cq(&self, entries: u32) -> Result<Cq<'_>, VerbsError> {
        let call = format!("ibv_create_cq_ex({entries} entries, completion timestamps)");
        // SAFETY: ctx is open; the member is the provider's create_cq_ex.
        let op = unsafe {
            ctx_op(
                self.raw(),
                std::mem::offset_of!(verbs_context_tail, create_cq_ex),
            )
            .map(|op| std::mem::transmute::<*const c_void, CreateCqEx>(op))
        };
        let op = op.ok_or_else(|| VerbsError::code(call.clone(), libc::EOPNOTSUPP))?;
        let mut attr = ibv_cq_init_attr_ex {
            cqe: entries,
            cq_context: std::ptr::null_mut(),
            channel: std::ptr::null_mut(),
            comp_vector: 0,
            wc_flags: IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
            comp_mask: 0,
            flags: 0,
            parent_domain: std::ptr::null_mut(),
        };
        // SAFETY: ctx is open; attr is a valid init attribute with no optional parts.
        let cq = unsafe { op(self.raw(), &mut attr) };
        let cq = NonNull::new(cq).ok_or_else(|| VerbsError::last(call.clone()))?;
        // SAFETY: a fresh ibv_cq_ex: its polling functions are the provider's.
        let pollable = unsafe {
            let ex = cq.as_ref();
            ex.start_poll.is_some()
                && ex.next_poll.is_some()
                && ex.end_poll.is_some()
                && ex.read_completion_ts.is_some()
        };
        let cq = Cq {
            ctx: self,
            cq: cq.cast::<ibv_cq>(),
            stamped: true,
        };
        if !pollable {
            // Dropping `cq` destroys it.
            return Err(VerbsError::code(call, libc::EOPNOTSUPP));
        }
        Ok(cq)
    }
}

impl Cq<'_> {
    /// The next completion with its timestamp, or `None` when there is none; only for a CQ
    /// made by [`Context::create_stamped_cq`] (EINVAL otherwise). One poll session
    /// (`ibv_start_poll` .. `ibv_end_poll`) per call: one completion is read, and a second
    /// one already there waits for the next call.
    pub fn poll_stamped(&self) -> Result<Option<StampedCompletion>, VerbsError> {
        if !self.stamped {
            return Err(VerbsError::code(
                "ibv_start_poll (a plain CQ)",
                libc::EINVAL,
            ));
        }
        let ex = self.cq.as_ptr().cast::<ibv_cq_ex>();
        let mut attr = ibv_poll_cq_attr::default();
        // SAFETY: a stamped CQ is an ibv_cq_ex whose functions were checked at creation;
        // the fields of the current completion are read between start and end.
        unsafe {
            let start = (*ex).start_poll.expect("checked at creation");
            match start(ex, &mut attr) {
                0 => {}
                libc::ENOENT => return Ok(None),
                rc => return Err(VerbsError::code("ibv_start_poll", rc)),
            }
            let read_ts = (*ex).read_completion_ts.expect("checked at creation");
            let done = StampedCompletion {
                wr_id: (*ex).wr_id,
                status: (*ex).status,
                timestamp: read_ts(ex),
            };
            let end = (*ex).end_poll.expect("checked at creation");
            end(ex);
            Ok(Some(done))
        }
    }
}

impl CompletionClock {
    /// Nanoseconds from `from` to `to`, two readings of this clock (a completion's
    /// timestamp, [`Context::raw_clock`]).
    pub fn elapsed_ns(&self, from: u64, to: u64) -> f64 {
        cycles_to_ns(
            elapsed_cycles(from, to, self.timestamp_mask),
            self.core_clock_khz,
        )
    }
}

/// Cycles of a clock of `mask` valid bits from `from` to `to`, across one wrap.
fn elapsed_cycles(from: u64, to: u64, mask: u64) -> u64 {
    to.wrapping_sub(from) & mask
}

/// `cycles` of a clock of `khz` kHz (`hca_core_clock`) in nanoseconds.
fn cycles_to_ns(cycles: u64, khz: u64) -> f64 {
    cycles as f64 * 1e6 / khz as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_cycles_cross_one_wrap_of_the_valid_bits() {
        // A 48-bit clock (mlx5's completion_timestamp_mask) that wrapped between the two.
        let mask = (1u64 << 48) - 1;
        assert_eq!(elapsed_cycles(mask - 9, 20, mask), 30);
        assert_eq!(elapsed_cycles(1_000, 1_500, mask), 500);
        assert_eq!(elapsed_cycles(5, 5, mask), 0);
    }

    #[test]
    fn cycles_convert_at_the_core_clock() {
        // ConnectX-6's 1 GHz core clock (hca_core_clock 1,000,000 kHz): a cycle a ns;
        // ConnectX-4's 156.25 MHz: 6.4 ns a cycle.
        assert_eq!(cycles_to_ns(2_500, 1_000_000), 2_500.0);
        assert!((cycles_to_ns(500, 156_250) - 3_200.0).abs() < 1e-9);
    }
}
