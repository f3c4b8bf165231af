//! Workloads whose operations are fixed in advance (stencil, reductions, ring, file): op
//! number `index` of a rank is a pure function, so a program is just a cursor per rank and
//! the communication matrix is a walk over every rank's ops, with no simulation.

use rand::RngCore;

use super::{Op, Program};

/// Op `index` (0, 1, ...) of `rank`, or `None` once the rank is done.
pub(crate) trait Script: Send + 'static {
    fn ranks(&self) -> u32;
    fn op(&self, rank: u32, index: u64) -> Option<Op>;
}

/// Plays a [`Script`]: the engine asks for a rank's next op only when the previous one is
/// done (its send left the NIC, its wait was satisfied), so the cursor simply advances.
pub(crate) struct Scripted<S> {
    script: S,
    cursor: Vec<u64>,
}

impl<S: Script> Scripted<S> {
    pub fn new(script: S) -> Self {
        let cursor = vec![0; script.ranks() as usize];
        Scripted { script, cursor }
    }
}

impl<S: Script> Program for Scripted<S> {
    fn next_op(&mut self, rank: u32, _rng: &mut dyn RngCore) -> Option<Op> {
        let index = self.cursor.get_mut(rank as usize)?;
        let op = self.script.op(rank, *index)?;
        *index += 1;
        Some(op)
    }
}

/// Every send of every rank as (source, destination, bytes), in rank then program order.
pub(crate) fn sends<S: Script + ?Sized>(script: &S) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
    (0..script.ranks()).flat_map(move |rank| {
        (0..)
            .map_while(move |index| script.op(rank, index))
            .filter_map(move |op| match op {
                Op::Send { dst, bytes, .. } => Some((rank, dst, bytes)),
                Op::AwaitReceived { .. } => None,
            })
    })
}
