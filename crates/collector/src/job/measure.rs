//! What the collector can measure for a job's verdict (`verdict::pipeline::Measure`): the
//! window's evidence from PostgreSQL ([`super::evidence`]), the separating pairs and the
//! suspected hosts' rechecks through the agents ([`super::follow_up`]), switch ports read now through the samplers
//! ([`super::port_reads`]) and the what-if on its fabric ([`super::what_if`]). The sequence
//! is the verdict crate's, the same as a simulated job's.

use super::evidence::{self, Gathered};
use super::query::VerdictQuery;
use super::routes::JobRoutes;
use super::{follow_up, port_reads, what_if};
use crate::mesh::{Access, Refusal};
use model::job::{FollowUp, JobEvidence, JobReport};
use std::sync::Arc;
use verdict::follow_up::PortRead;
use verdict::pipeline::{self, Measure, PairsMeasured, Replay, Step};
use verdict::{Cluster, RnicPort};

/// One verdict's measurements on real hosts.
pub struct Fleet<'a> {
    access: &'a Access,
    query: &'a VerdictQuery,
    /// The caller's probe token: given with `probe=1` only.
    token: Option<String>,
    /// The job's routes, once gathered, when the fabric placed it.
    routes: Option<Arc<JobRoutes>>,
}

impl<'a> Fleet<'a> {
    /// The verdict of `query`, probing with `token` when given.
    pub fn new(access: &'a Access, query: &'a VerdictQuery, token: Option<String>) -> Self {
        Fleet {
            access,
            query,
            token,
            routes: None,
        }
    }
}

impl Measure for Fleet<'_> {
    type Error = Refusal;

    fn gather(&mut self) -> Step<'_, Result<pipeline::Gathered, Refusal>> {
        Box::pin(async move {
            let Gathered {
                evidence,
                follow_ups,
                routes,
            } = evidence::gather(self.access, self.query, self.token.clone()).await?;
            self.routes = routes.map(Arc::new);
            Ok(pipeline::Gathered {
                evidence,
                follow_ups,
            })
        })
    }

    fn placed(&self) -> Result<&Cluster, String> {
        match &self.routes {
            Some(routes) => Ok(routes.placed()),
            None => Err(what_if::not_placed(self.access.fabric.is_some())),
        }
    }

    fn measure_pairs(
        &mut self,
        pairs: Vec<(RnicPort, RnicPort)>,
    ) -> Step<'_, Result<PairsMeasured, Refusal>> {
        Box::pin(async move {
            let (Some(routes), Some(token)) = (&self.routes, &self.token) else {
                return Ok(PairsMeasured::NotRun(
                    "the verdict was not asked with probe=1 on a placed fabric".to_string(),
                ));
            };
            Ok(follow_up::separate(self.access, routes, &pairs, token.clone()).await)
        })
    }

    fn read_ports<'a>(
        &'a mut self,
        reads: &'a [PortRead],
        evidence: &'a mut JobEvidence,
    ) -> Step<'a, Option<Vec<FollowUp>>> {
        Box::pin(async move {
            let routes = self.routes.as_ref()?;
            Some(port_reads::read_ports(self.access, routes, reads, evidence).await)
        })
    }

    fn recheck<'a>(&'a mut self, hosts: &'a [String]) -> Step<'a, Vec<String>> {
        Box::pin(async move {
            match &self.token {
                Some(token) => follow_up::recheck(self.access, hosts, token).await,
                None => hosts
                    .iter()
                    .map(|_| "not run: the verdict was not asked with probe=1".to_string())
                    .collect(),
            }
        })
    }

    fn replay(&mut self, replay: Replay) -> Step<'_, Result<(JobReport, JobEvidence), String>> {
        let routes = self.routes.clone();
        Box::pin(async move {
            match routes {
                Some(routes) => what_if::replay(routes, replay).await,
                None => Err(what_if::not_placed(self.access.fabric.is_some())),
            }
        })
    }
}
