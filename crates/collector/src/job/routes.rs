//! The job's routes on the fabric the collector was started with (`--fabric FILE
//! [--routes FILE]`): its nodes placed by the devices their agents registered, as
//! `POST /api/mesh` places them ([`crate::mesh::place_on_fabric`]), and the cables the
//! routes between their RNICs cross as the simulated job counts them
//! ([`verdict::job::job_cables`]: every two RNICs of one rail, both ways), each named by its
//! lower end as pairs name them (DESIGN 4.6); without a fabric, each RNIC's own cable.

use crate::mesh::{self, Access, MeshError};
use std::collections::BTreeSet;
use verdict::Cluster;

/// Why the job's routes are not known.
#[derive(Debug, thiserror::Error)]
pub enum RoutesError {
    /// The collector was started without `--fabric`.
    #[error("the collector knows no fabric for these hosts (start it with --fabric FILE [--routes FILE])")]
    NoFabric,
    /// The nodes could not be read.
    #[error("database: {0}")]
    Database(#[source] MeshError),
    /// Nodes the collector knows nothing of.
    #[error(
        "not placed on {file}: the collector knows no agent nor run of {}",
        .unknown.join(", ")
    )]
    UnknownNodes {
        /// The fabric's file.
        file: String,
        /// The nodes.
        unknown: Vec<String>,
    },
    /// The fabric could not place the nodes.
    #[error("not placed on {file}: {source}")]
    NotPlaced {
        /// The fabric's file.
        file: String,
        /// Why.
        source: MeshError,
    },
}

/// The cables of the routes between the job's RNICs, on the fabric placed.
pub struct JobRoutes {
    cluster: Cluster,
    cables: BTreeSet<String>,
}

/// The job's routes, or why they are not known (no fabric, a node the collector or the
/// fabric does not know, the database).
pub async fn job_routes(access: &Access, nodes: &[String]) -> Result<JobRoutes, RoutesError> {
    let fabric = access.fabric.as_ref().ok_or(RoutesError::NoFabric)?;
    let found = mesh::find_nodes(&access.pool, nodes)
        .await
        .map_err(RoutesError::Database)?
        .map_err(|unknown| RoutesError::UnknownNodes {
            file: fabric.file.clone(),
            unknown,
        })?;
    let cluster =
        mesh::place_on_fabric(fabric, &found).map_err(|source| RoutesError::NotPlaced {
            file: fabric.file.clone(),
            source,
        })?;
    let all: Vec<usize> = (0..cluster.hosts.len()).collect();
    let cables = verdict::job::job_cables(&cluster, &all)
        .into_iter()
        .map(|c| cluster.cable_label(c))
        .collect();
    Ok(JobRoutes { cluster, cables })
}

impl JobRoutes {
    /// Whether a route between two of the job's RNICs crosses the cable at the switch port
    /// `port` (either end of it).
    pub fn on_route(&self, port: &str) -> bool {
        self.cables.contains(&self.cable_of(port))
    }

    /// The cable at the switch port `port` (`leaf2/9`), named by its lower end; the port's
    /// own name when the fabric has no cable there.
    pub fn cable_of(&self, port: &str) -> String {
        match self.cluster.parse_port(port) {
            Ok(at) => self.cluster.cable_label(self.cluster.cable_at(at)),
            Err(_) => port.to_string(),
        }
    }

    /// The cables the ports of a route cross, each once, in route order.
    pub fn cables_along<'a>(&self, route: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut cables: Vec<String> = Vec::new();
        for port in route {
            let cable = self.cable_of(port);
            if !cables.contains(&cable) {
                cables.push(cable);
            }
        }
        cables
    }

    /// The job's nodes placed on the fabric.
    pub fn placed(&self) -> &Cluster {
        &self.cluster
    }

    /// Every cable the job's routes cross, sorted.
    pub fn cables(&self) -> Vec<String> {
        self.cables.iter().cloned().collect()
    }
}

/// Without a fabric: each RNIC of the job's nodes by its own cable, named by its host end
/// ([`crate::mesh::rnic_cable`]), sorted; or why the nodes could not be read. None when a
/// node is one the collector does not know (the verdict already says it has no run).
pub async fn rnic_cables(access: &Access, nodes: &[String]) -> Result<Vec<String>, MeshError> {
    let found = mesh::find_nodes(&access.pool, nodes)
        .await?
        .unwrap_or_default();
    let mut cables: Vec<String> = found.iter().flat_map(mesh::node_cables).collect();
    cables.sort();
    Ok(cables)
}
