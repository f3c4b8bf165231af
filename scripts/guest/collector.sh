# shellcheck shell=bash
# collector.sh: sourced by the guest scripts that need a fleet collector (mesh-agents.sh,
# job-agents.sh), after step.sh.
#
# start_collector NAME DIR PGPORT LISTEN [ARGS...]: PostgreSQL (the host's binaries, over 9p)
# in DIR/pgdata on 127.0.0.1:PGPORT, small (the guest has little memory) and as nobody
# (PostgreSQL refuses to run as root), then `hostping collector` on LISTEN with DIR/tokens
# and DIR/probe.tokens (and ARGS), its stderr in $out/NAME-collector.err; returns once it
# serves (60 s at most) and leaves its pid in $collector_pid. Both run in the network
# namespace named by $collector_netns when it is set (job-loop.sh: the switch's). Needs
# $hostping.
# stop_postgres DIR: stops that PostgreSQL (the caller stops the collector with its agents).
# agent_config NAME: writes $dir/NAME.toml, the configuration of an agent that judges its
# checks against $dir/NAME-baseline.json ($check_iterations, $abnormal_th) and checks on
# request only: no duty-cycle limit, whose 2 s burst a TCG check outlasts (the verdicts ask
# for every check), and no re-probes within a run, which under TCG take seconds.
# shellcheck disable=SC2154 # $out and $hostping are the sourcing script's
pg=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

# Sets $netns to the command prefix that runs in $collector_netns, or to none. `ip netns
# exec` execs its command, so `$!` of a prefixed command in the background is its own pid.
collector_netns_prefix() {
    netns=()
    [ -z "${collector_netns:-}" ] || netns=(ip netns exec "$collector_netns")
}
as_nobody() {
    collector_netns_prefix
    "${netns[@]}" runuser -u nobody -- "$@"
}

start_collector() {
    local name=$1 dir=$2 pgport=$3 listen=$4
    shift 4
    step "$name-initdb" as_nobody "$pg/initdb" --auth=trust --username=hostping \
        --encoding=UTF8 --no-sync -D "$dir/pgdata"
    step "$name-postgres" as_nobody "$pg/pg_ctl" -D "$dir/pgdata" -l "$dir/postgres.log" -w -o \
        "-c port=$pgport -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c fsync=off -c shared_buffers=16MB -c max_connections=40" \
        start
    collector_netns_prefix
    "${netns[@]}" "$hostping" collector \
        --database "postgres://hostping@127.0.0.1:$pgport/postgres" --listen "$listen" \
        --tokens "$dir/tokens" --probe-tokens "$dir/probe.tokens" "$@" \
        2>"$out/$name-collector.err" &
    collector_pid=$!
    for _ in $(seq 600); do
        grep -q 'serving' "$out/$name-collector.err" 2>/dev/null && break
        sleep 0.1
    done
}

stop_postgres() { as_nobody "$pg/pg_ctl" -D "$1/pgdata" -m fast stop >/dev/null; }

agent_config() {
    printf '[agent]\nbaseline = "%s"\n[probe]\niterations = %s\n[thresholds]\nabnormal_th = %s\nreprobe_rounds = 0\n[triggers]\nhost_status_every = "100h"\nsymptoms_every = "100h"\nmax_duty_cycle = 1.0\nburst = "1h"\n' \
        "$dir/$1-baseline.json" "$check_iterations" "$abnormal_th" >"$dir/$1.toml"
}
