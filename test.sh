#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every unit, property, integration and
# scenario test of the workspace, a fabric sweep on a one-node Slurm, and the Soft-RoCE
# (rdma_rxe) QEMU guest test of the real backends. Installs what it needs first (Debian
# packages, a Rust toolchain, a guest kernel). Works from any folder the checkout lies in.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
# One clean build, never rebuilt in part: incremental state would double the build's size on disk.
export CARGO_INCREMENTAL=0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
# apt_install PACKAGE...: installs the Debian packages, updating the lists only if needed.
apt_install() {
    echo "test: installing $* (Debian packages)" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
        || { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null; }
}
if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all -- --check
fi
if cargo clippy --version >/dev/null 2>&1; then
    cargo clippy --workspace --all-targets --locked --quiet -- -D warnings
fi
# The Soft-RoCE guest's packages and kernels (cached): the release's 6.1, whose rxe has no
# ODP, and trixie-backports' newest, whose rxe has ODP; and libibverbs-dev for the test that
# checks the hand-written verbs ABI against the real header.
scripts/guest/setup.sh
scripts/guest/setup.sh --kernel odp
# A real Prometheus server (Debian's package) scrapes the agent in
# crates/hostping/tests/prometheus.rs (the test starts its own server on a free port) and runs
# every query of the Grafana dashboard (packaging/grafana/; its switch-port row runs on ibsim
# in agent_fabric.rs). The Kubernetes and container files are checked by deploy_manifests.rs.
command -v prometheus >/dev/null 2>&1 || apt_install prometheus
# A real Alertmanager (Debian's package) receives the collector's alerts and their
# resolutions in crates/hostping/tests/actions.rs (the test starts its own on a free port).
command -v prometheus-alertmanager >/dev/null 2>&1 || apt_install prometheus-alertmanager
# node_exporter (Debian's package) serves NCCL Inspector's textfile mode to that Prometheus
# in crates/hostping/tests/collector_prometheus.rs, which starts its own on a free port (the
# package's own service, where its postinst starts one on :9100, is neither used nor touched).
[ -x /usr/bin/prometheus-node-exporter ] || apt_install prometheus-node-exporter
# PostgreSQL's server binaries for crates/hostping/tests/collector.rs (each test initdb's a
# throw-away cluster in a temporary folder, as `nobody` when run as root, on a free port).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_install postgresql
# A real headless browser for the web UI's tests (crates/hostping/tests/ui.rs drives
# chromium through chromedriver over WebDriver; screenshots go to target/test-artifacts/ui/).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    apt_install chromium chromium-driver
fi
# An InfiniBand management stack on a simulated fabric for the umad test below and for
# crates/hostping/tests/fabric_switches.rs and agent_fabric.rs (in the workspace tests,
# required by HOSTPING_REQUIRE_IBSIM): ibsim, libibumad redirected to it (libumad2sim),
# opensm, and infiniband-diags beside them.
if ! command -v ibsim >/dev/null 2>&1 || ! command -v opensm >/dev/null 2>&1 ||
    [ ! -e /usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so ] || ! command -v perfquery >/dev/null 2>&1; then
    apt_install ibsim-utils libumad2sim0 opensm infiniband-diags
fi
# Slurm for the sweep test below.
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 ||
    ! command -v munged >/dev/null 2>&1; then
    apt_install slurm-wlm munge
fi
export HOSTPING_REQUIRE_VERBS_HEADERS=1 HOSTPING_REQUIRE_PROMETHEUS=1 HOSTPING_REQUIRE_IBSIM=1
export HOSTPING_REQUIRE_ALERTMANAGER=1 HOSTPING_REQUIRE_NODE_EXPORTER=1
# Slurm's scontrol is the reference for hostlist expansion (crates/model/tests/hostlist_scontrol.rs);
# a one-node Slurm is drained and resumed for real by crates/slurm/tests/node_scontrol.rs and
# by the collector's actions in crates/hostping/tests/actions.rs (both need root).
export HOSTPING_REQUIRE_SLURM=1
export HOSTPING_REQUIRE_POSTGRES=1 HOSTPING_REQUIRE_CHROMIUM=1
cargo test --workspace --locked
# A fabric sweep on a real one-node Slurm: a job array of `hostping fabric sim` runs and the
# dependent merge job (scripts/slurm/, about 10 s). The daemons run as root.
# (`cargo test` built the binary for the integration tests.)
hostping_bin=$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd -P)/hostping
$sudo scripts/slurm/check-sweep.sh "$hostping_bin"
# `hostping job --slurm`: a running job's node and window from the one-node Slurm's
# scontrol, asked of a collector on a throw-away PostgreSQL; then a job writing NCCL
# Inspector records (a simulated job's, replayed by `hostping nccl replay`) that a real
# agent tails, judged by the collector without asking (about a minute).
$sudo scripts/slurm/check-job.sh "$hostping_bin"
# The tests below need real devices and are ignored in the run above. One cargo run builds
# nothing new (the same workspace features), then runs:
# - rdma's ibsim: MADs through the real libibumad to ibsim's fabric, LIDs from a real opensm
#   (about 1 s);
# - rdma's guest: RDMA netlink, ODP capabilities and a virtual IOMMU's groups on the Soft-RoCE
#   guest kernel;
# - hostping's softroce: the real backends on a real verbs device, rdma_rxe in a QEMU guest
#   (scripts/guest/), from this checkout and from a clone of it under /tmp;
# - hostping's odp_guest: ISPASS'21's ODP micro-benchmarks measured for real on the guest
#   kernel whose rxe has ODP (one boot, one short sweep of each);
# - hostping's job_loop_guest: four Soft-RoCE hosts in network namespaces of that kernel's
#   guest, an agent each and the collector on PostgreSQL; a job's replayed records slow
#   from an onset, netem slows one host's cable from then, and the collector finds the job
#   slow and names that cable by itself (a few minutes).
cargo test --workspace --locked --test ibsim --test guest --test softroce --test odp_guest \
    --test job_loop_guest -- --ignored --nocapture
