/*!
The HTTP contract of hostping's fleet (DESIGN 4.5), in one place for every side of it: the
agent that sends its runs and serves its own read API, the collector that stores them and
serves the fleet's, and `hostping fleet` and the web UI that read them.

- [`upload`]: the body of `POST /api/runs`, as the agent writes it and the collector checks
  it.
- [`read`]: the read API's answers and query parameters as types, and the one
  implementation of the endpoints the agent and the collector both serve, over a
  [`read::ReadStore`] each of them implements.
- [`pair`]: DESIGN 4.6's pair object as an agent measures it and the collector passes it
  on, and the request that asks an agent for one.
- [`collectives`]: a job's NCCL collectives as agents post them (`POST /api/collectives`),
  and the jobs list (`GET /api/jobs`).
- [`job_series`]: a job's bus bandwidth over time (`GET /api/jobs/{job}/busbw`), for the
  job page's plot.
- [`client`]: one blocking client of the collector (its read API, the mesh, the job
  verdict) for the CLI.
- [`job`]: DESIGN 4.7's query of the job verdict, written by the CLI and read by the
  collector.
- [`mesh`]: a real mesh through the collector: its request, budget and answer.
- [`post`]: one post of a run or a sweep to the collector, and what became of it (stored,
  refused for good, try again).
- [`register`]: an agent's registration with the collector, and the agents listed.
- [`status`]: the collector's readiness and an agent's answer to a probe asked of it.
- [`sweep`]: the body of `POST /api/fabric/sweeps` (a switch-port sampler's sweep) and
  the collector's answer, with the ports it asks to be read now.
- [`sweep_client`]: a sampler's side of it: a bounded queue of sweeps posted in order, with
  retries, handing over the ports the collector asks to be read now.
- [`tokens`]: the tokens files (`NAME TOKEN` lines), kept as SHA-256 digests and compared in
  constant time: the collector's agent tokens and the agent's probe tokens.
- [`tls`]: rustls for the collector and the client configuration of its clients.
- [`ui`]: the web UI's pages and assets, compiled in, served by collector and agent alike.

It holds no storage and no judgement: the collector and the agent bring their stores, and
`analyze` decides (its judged paths and slow hosts are served as they are).
*/
#![deny(missing_docs)]

pub mod actions;
pub mod client;
pub mod collectives;
pub mod job;
pub mod job_series;
pub mod mesh;
pub mod pair;
pub mod post;
pub mod read;
pub mod register;
pub mod status;
pub mod sweep;
pub mod sweep_client;
pub mod tls;
pub mod tokens;
pub mod ui;
pub mod upload;
