/*!
The fabric layer: a packet-level fat-tree simulator with in-packet reservoir-sampling
telemetry, the congestion analysis that tells a bad communication pattern from a bad
mapping from background traffic, workloads and mappings (Taffet's thesis,
`../shared/papers/003_05906d5d480b1948.txt`, chapters 3 to 5).

It must not depend on the host layer (`model`, `probe`, `vhost`, `check`, ...), with one
exception: a real fabric's files are read with `rdma`'s readers of their formats (the
ibnetdiscover topology file, the routes dump), which also write them after a discovery, so
that one parser serves both (DESIGN 5 puts real fabric files here, below `rdma`). Every
number it produces comes from the simulator and is labelled so.

- `topology`: three-level fat trees (Table 3.1 and any size from parameters).
- `cabling`: a fabric as its cables: a tree written as an ibsim net file, a real fabric
  recognised as the fat tree it is.
- `real_fabric`: a real fabric's subnet (from its ibnetdiscover file) recognised as a fat
  tree or simulated as cabled, routed by its subnet manager's tables, at its links' rates.
- `topology_file`: what `--topology` names (a built-in tree, a TOML tree, an ibnetdiscover
  file) and a routes dump, read as the simulator's input.
- `sim`: the discrete-event engine (queues, credits, adaptive routing, ground truth).
- `telemetry`: algorithms 2 to 9 in the switches and receivers.
- `traffic`: workloads, mappings, their files, and mapping suggestions.
- `analysis`: congested fraction, bandwidth estimates, diagnosis, plots.
- `sampling`: switch-port sampling over MADs, the LDMS ibfabric study on the simulator.
- `cases`: the case studies of thesis chapter 4, checked against its figures.
- `peer`: the CODES peer benchmark's workloads and figures.
- `summary`: what `fabric sim` leaves in its output folder, as a contract that scripts
  read: `summary.json`, `ports.csv`, the file names, and the reader `merge` uses.
- `roots_study`: whether switch-port counters sampled at 1-10,000 Hz find the roots that
  reservoir sampling finds, on the case studies.
- `input`: the one-line error every input file reports.
- `limits`: the largest sizes a user may give (radix, nodes, ranks, messages, run length).
*/

#![deny(missing_docs)]

pub mod analysis;
pub mod cabling;
pub mod cases;
pub mod input;
pub mod limits;
pub mod peer;
pub mod real_fabric;
pub mod roots_study;
pub mod sampling;
pub mod sim;
pub mod summary;
pub mod telemetry;
pub mod topology;
pub mod topology_file;
pub mod traffic;
