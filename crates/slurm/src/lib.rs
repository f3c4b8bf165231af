/*!
The Slurm adapter: what hostping asks of Slurm and how it reads the answers.

This crate **owns** running Slurm's client tools (within [`job::TOOL_WAIT`], with
`SLURM_TIME_FORMAT=%s` so that times come as Unix seconds rather than in the local time of
whoever runs them) and reading what they print: a job's nodes and window from `scontrol
show job -o` or, once slurmctld forgot the job, from `sacct` ([`job`]). Actions on Slurm
(draining a node and resuming it, [`node`]) belong here too, beside the reads. (The times of a window given by hand
are read by `model::time::unix_seconds`, the one reader the collector's queries use too.)

It **must not** judge or decide: whether a job's nodes are healthy is `analyze`'s word, read
from the collector; this crate only says which nodes and when. It talks to no collector,
stores nothing and prints nothing; its errors name the flag the value came from
(`--slurm`, `--since`), since hostping's commands are its only callers.
*/
#![deny(missing_docs)]

pub mod job;
pub mod node;

pub use job::{RunError, SlurmError, SlurmJob};
pub use node::{NodeError, SlurmNode};
