//! Traffic programs for the simulator tests: each rank runs a fixed list of ops.
#![allow(dead_code)] // each test binary uses its own part of this module

use std::collections::VecDeque;

use fabric::topology::{FatTreeParams, Topology};
use fabric::traffic::{Op, Program};
use rand::RngCore;

/// Each rank runs a fixed list of ops.
pub struct Script(pub Vec<VecDeque<Op>>);

impl Program for Script {
    fn next_op(&mut self, rank: u32, _rng: &mut dyn RngCore) -> Option<Op> {
        self.0[rank as usize].pop_front()
    }
}

/// A send of `bytes` to rank `dst`, as soon as the rank gets to it.
pub fn send(dst: u32, bytes: u64) -> Op {
    Op::Send {
        dst,
        bytes,
        not_before_ps: 0,
    }
}

/// Radix 8: 4 nodes per leaf, 4 leaves per pod, 8 pods, 128 nodes.
pub fn radix8() -> Topology {
    Topology::new(FatTreeParams::radix8()).unwrap()
}
