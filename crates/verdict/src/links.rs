//! The fabric's link states: what can be wrong with a cable or the whole fabric
//! ([`FabricFault`], injected into a simulated cluster or found by a verdict), and the fabric
//! as they leave it ([`phases`]): down cables routed around, degraded and flapping ones at
//! their reduced rates. The simulated cluster probes that fabric; the what-if replays a
//! job's traffic on it, so both see one fabric for one set of link states.

use fabric::topology::{Peer, Topology, TopologyError};

use crate::spec::{Cable, Cluster};

/// A fault of the fabric.
#[derive(Clone, Debug, PartialEq)]
pub enum FabricFault {
    /// The cable keeps `fraction` of its rate, both ways.
    Degrade {
        /// The cable.
        cable: Cable,
        /// Share of its rate left, in (0, 1).
        fraction: f64,
    },
    /// The cable alternates between healthy and degraded to `fraction`.
    Flap {
        /// The cable.
        cable: Cable,
        /// Share of its rate left in the degraded phase, in (0, 1).
        fraction: f64,
    },
    /// The cable corrupts packets: `per_second` symbol errors, each one packet dropped at
    /// the receiver and retransmitted by the sender's RC transport.
    Errors {
        /// The cable.
        cable: Cable,
        /// Corruption events a second.
        per_second: f64,
    },
    /// The cable is down: the subnet manager routes around it (a host's cable: its RNIC is
    /// unreachable).
    Down {
        /// The cable.
        cable: Cable,
    },
    /// Other jobs' traffic at `load` of line rate from every host not probed, uniformly to
    /// one another (thesis 4.4's background).
    Background {
        /// Offered load, a share of line rate, in (0, 1].
        load: f64,
    },
}

impl FabricFault {
    /// The cable the fault is on, if it is on one.
    pub fn cable(&self) -> Option<Cable> {
        match *self {
            FabricFault::Degrade { cable, .. }
            | FabricFault::Flap { cable, .. }
            | FabricFault::Errors { cable, .. }
            | FabricFault::Down { cable } => Some(cable),
            FabricFault::Background { .. } => None,
        }
    }

    /// DESIGN 4.7's cause for this fault.
    pub fn cause(&self) -> &'static str {
        match self {
            FabricFault::Degrade { .. } => "link_degraded",
            FabricFault::Flap { .. } => "link_flapping",
            FabricFault::Errors { .. } => "link_errors",
            FabricFault::Down { .. } => "link_down",
            FabricFault::Background { .. } => "background_traffic",
        }
    }
}

/// Why the faults leave no fabric to simulate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultedFabricError {
    /// A switch cable down on a fabric routed by tables read with it up.
    #[error(
        "fabric:down on a fabric routed by its subnet manager's tables: its tables once the \
         cable is down are not known (dump them with the cable down, `fabric route --dump`)"
    )]
    DownUnderTables,
    /// The down cables cut the tree.
    #[error("the down cables leave no route: {0}")]
    NoRoute(#[source] TopologyError),
    /// The faulted rates do not fit the tree.
    #[error(transparent)]
    LinkRates(TopologyError),
}

/// The cluster's fabric as link states leave it, in the two phases of a flap.
pub struct Phases {
    /// The tree with down cables removed and degraded ones at their rate.
    pub healthy: Topology,
    /// The same with flapping cables degraded too; `None` without a flap.
    pub flapped: Option<Topology>,
}

/// The cluster's fabric with `faults` applied: switch cables that are down routed around
/// (a host's own down cable stays: its RNIC is cut off, which the caller decides on), the
/// rates of degraded and flapping cables reduced. Fails when the down cables cut the tree
/// (the simulator's message names the leaves left apart). Corrupting cables and other jobs'
/// traffic do not change the tree: the caller lays them over its runs.
pub fn phases(cluster: &Cluster, faults: &[FabricFault]) -> Result<Phases, FaultedFabricError> {
    let fabric = &cluster.fabric;
    let topology = &fabric.topology;
    let down_switch_ports: Vec<_> = faults
        .iter()
        .filter_map(|fault| match *fault {
            FabricFault::Down { cable } => Some(topology.port_ref(cable.0)),
            _ => None,
        })
        .filter(|&port| matches!(topology.peer(port), Peer::Switch { .. }))
        .collect();
    if topology.has_forwarding() && !down_switch_ports.is_empty() {
        return Err(FaultedFabricError::DownUnderTables);
    }
    // A real fabric's missing cables stay missing beside the down ones.
    let mut absent: Vec<_> = topology
        .absent_links()
        .into_iter()
        .map(|i| topology.port_ref(i))
        .collect();
    absent.extend(down_switch_ports);
    let routed = topology
        .clone()
        .without_links(&absent)
        .map_err(FaultedFabricError::NoRoute)?;
    let rates = |with_flaps: bool| {
        // A real fabric's links keep their own rates.
        let mut rates = topology.link_rates().map_or_else(
            || vec![fabric.link_gbps; topology.num_ports()],
            <[f64]>::to_vec,
        );
        for fault in faults {
            let (cable, fraction) = match *fault {
                FabricFault::Degrade { cable, fraction } => (cable, fraction),
                FabricFault::Flap { cable, fraction } if with_flaps => (cable, fraction),
                _ => continue,
            };
            for port in cluster.cable_ports(cable) {
                rates[port as usize] *= fraction;
            }
        }
        rates
    };
    let with_rates = |rates: Vec<f64>| {
        routed
            .clone()
            .with_link_rates(rates)
            .map_err(FaultedFabricError::LinkRates)
    };
    let flaps = faults.iter().any(|f| matches!(f, FabricFault::Flap { .. }));
    Ok(Phases {
        healthy: with_rates(rates(false))?,
        flapped: if flaps {
            Some(with_rates(rates(true))?)
        } else {
            None
        },
    })
}
