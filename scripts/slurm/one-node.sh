#!/usr/bin/env bash
# one-node.sh start DIR | stop DIR: a throw-away one-node Slurm cluster on this machine, for
# trying the sweep of submit.sh without a cluster and for the test suite (check-sweep.sh).
#
#   start DIR  writes DIR/slurm.conf and starts a private munged, slurmctld and slurmd, all
#              on 127.0.0.1 with their state, logs and sockets in DIR; waits (bounded) until
#              the node is idle. Then `export SLURM_CONF=DIR/slurm.conf` points sbatch,
#              squeue and scontrol at it.
#   stop DIR   stops the three daemons (by the pids in DIR) and waits for them to exit.
#
# Nothing outside DIR is touched: its own munge key and socket (a munged already running
# for a real cluster is left alone), free TCP ports instead of 6817/6818, no cgroups
# (proctrack/linuxproc, task/none), no accounting database. Needs Debian's slurm-wlm and
# munge, and root: slurmd starts jobs as their submitting user.
# Logs: DIR/log/{munged,slurmctld,slurmd}.log.
set -euo pipefail

say() { echo "one-node: $*" >&2; }
die() { say "error: $*"; exit 2; }

[ $# -eq 2 ] || die "usage: $0 start|stop DIR"
action=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd -P)

# stop_daemons NAME...: TERM the daemons whose pids are in DIR/NAME.pid, all at once (each
# takes 1-2 s to exit), then wait up to 10 s for them and KILL what is left.
stop_daemons() {
    local name pid pids=() i
    for name in "$@"; do
        [ -s "$dir/$name.pid" ] || continue
        pid=$(<"$dir/$name.pid")
        kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
        rm -f "$dir/$name.pid"
    done
    # running PID...: true while one of them runs.
    running() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
    for ((i = 0; i < 100; i++)); do
        [ ${#pids[@]} -gt 0 ] && running "${pids[@]}" || return 0
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        kill -0 "$pid" 2>/dev/null || continue
        say "pid $pid did not stop on TERM; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    done
}

if [ "$action" = stop ]; then
    stop_daemons slurmd slurmctld munged
    exit 0
fi
[ "$action" = start ] || die "usage: $0 start|stop DIR"
[ "$(id -u)" -eq 0 ] || die "run as root (slurmd starts jobs as their submitting user)"
for tool in munged mungekey slurmctld slurmd scontrol; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found: install Debian's slurm-wlm and munge"
done

# free_port: a TCP port on 127.0.0.1 that nothing accepts on (bash's /dev/tcp, no extra tool),
# below the kernel's ephemeral range: a port of that range can be the local end of some
# client's connection, which nothing accepts on but which slurmctld then cannot bind
# ("Address already in use", seen once in a test run).
free_port() {
    local port i first
    read -r first _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || first=32768
    [ "$first" -gt 11000 ] || die "the ephemeral port range starts at $first: no room below it"
    for ((i = 0; i < 50; i++)); do
        port=$((10000 + RANDOM % (first - 10000)))
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return 0; }
    done
    die "no free TCP port found"
}

mkdir -p "$dir"/{log,state,spool}
# munged wants its socket folder searchable by all and writable by its owner only.
chmod 755 "$dir"

# -- munge: a private key and socket ------------------------------------------------------------
rm -f "$dir/munge.key"
mungekey --create --keyfile="$dir/munge.key"
munged --key-file="$dir/munge.key" --socket="$dir/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed" ||
    die "munged did not start (DIR and every folder above it must be searchable by all: chmod o+x)"

# -- slurm.conf ----------------------------------------------------------------------------------
node=$(hostname -s)
cpus=$(nproc)
# RealMemory in MiB, less a margin for the daemons, so that jobs asking for memory fit.
mem_mib=$(awk '$1 == "MemTotal:" { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
ctld_port=$(free_port)
slurmd_port=$(free_port)
[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$(free_port)
cat >"$dir/slurm.conf" <<CONF
# Written by scripts/slurm/one-node.sh: a one-node cluster living in $dir.
ClusterName=hostping-one-node
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups (containers and CI runners often cannot delegate them) and no accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
# Schedule every second, not every minute, and start batch jobs at once: array tasks and the
# dependent merge then start within a second of becoming eligible.
SchedulerParameters=sched_interval=1,batch_sched_delay=0
MailProg=/bin/true
ReturnToService=2
# Finished jobs stay visible to scontrol for 10 minutes (the test reads their states).
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mib State=UNKNOWN
PartitionName=one Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf

# -- the daemons -----------------------------------------------------------------------------------
# -i: ignore state left in DIR by an earlier cluster.
slurmctld -i -f "$dir/slurm.conf"
slurmd -f "$dir/slurm.conf" -N "$node"

# The node is usable once slurmctld has heard from slurmd: state IDLE.
state=""
for ((i = 0; i < 300; i++)); do # 30 s at most
    state=$(scontrol -o show node "$node" 2>/dev/null | sed -nE 's/.* State=([A-Z+_]+).*/\1/p')
    [ "$state" = IDLE ] && break
    sleep 0.1
done
if [ "$state" != IDLE ]; then
    say "the node $node is '${state:-not known}', not IDLE, after 30 s; logs:"
    for f in "$dir"/log/*.log; do
        echo "== $f" >&2
        tail -n 20 "$f" >&2
    done
    "$0" stop "$dir"
    exit 1
fi
say "up: node $node ($cpus CPUs, $mem_mib MiB), slurmctld on 127.0.0.1:$ctld_port; export SLURM_CONF=$dir/slurm.conf"
