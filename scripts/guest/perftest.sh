#!/usr/bin/env bash
# perftest.sh [N]: runs perftest's ib_write_lat and ib_write_bw N times each (default 5) on
# the guest's rxe0, server in the background and client to the guest's own IPv4 address,
# and summarises them. Runs INSIDE the Soft-RoCE guest:
#   scripts/guest/run.sh --out DIR -- scripts/guest/perftest.sh 3
#
# Variants, interleaved within each round so host noise spreads over all of them:
#   write_lat_2      ib_write_lat -s 2 -n 1000          (2 bytes is ib_write_lat's default size)
#   write_lat_1      ib_write_lat -s 1 -n 1000
#   read_lat_1       ib_read_lat -s 1 -n 1000           (a full round trip: post to polled completion)
#   write_bw_64k     ib_write_bw -s 65536 -n ITERS      (default tx-depth, 128)
#   write_bw_64k_t1  ib_write_bw -s 65536 -n ITERS -t 1 (one outstanding write: tx-depth 1)
# $HOSTPING_PERFTEST_VARIANTS, when set, names the variants to run (space-separated; the
# READ pass mark runs read_lat_1 alone). ITERS is $HOSTPING_PERFTEST_BW_ITERS (default 1000; perftest's own default, 5000, takes
# ~8 s per run under TCG). ib_write_bw's -q is the number of QPs (default 1), so "-q 1"
# would repeat the default run; the second bandwidth variant varies the tx-depth instead.
# Every tool gets -d DEV (rxe0, or $HOSTPING_PERFTEST_DEV), -x GID (the port's RoCE v2
# IPv4-mapped GID, found in sysfs, or $HOSTPING_PERFTEST_GID) and its own TCP port (-p),
# so a lingering socket of one run never makes the next fail with "address in use".
#
# Output, in $HOSTPING_GUEST_OUT/perftest (else ${TMPDIR:-/tmp}/perftest):
#   VARIANT-RUN-server.txt, VARIANT-RUN-client.txt   raw outputs;
#   summary.json   per run: test, variant, size, iterations, ok, attempts, t_typical_us/t_avg_us
#                  (latency) or bw_avg_gbps (bandwidth); the medians per variant; which
#                  columns were taken. ib_write_lat's times are half the measured round trip
#                  (perftest's convention for ping-pong latency), taken from its
#                  t_typical[usec] and t_avg[usec] columns; ib_write_bw's figure is its
#                  "BW average[Gb/sec]" column (--report_gbits).
# A run whose only fault is perftest's clock check (see clock_check_failed) is repeated, at
# most 3 attempts; "attempts" in the summary says how many it took.
# Exit status 0 when every run succeeded, 1 otherwise (the summary is written either way).
set -euo pipefail

n=${1:-5}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N]   (N runs per variant, default 5)" >&2; exit 2; }
dev=${HOSTPING_PERFTEST_DEV:-rxe0}
bw_iters=${HOSTPING_PERFTEST_BW_ITERS:-1000}
out=${HOSTPING_GUEST_OUT:-${TMPDIR:-/tmp}}/perftest
run_timeout=120 # seconds, per server and per client
port=18515      # perftest's default; every run takes the next one
mkdir -p "$out"
say() { echo "perftest: $*" >&2; }

# -- the GID: RoCE v2 with an IPv4-mapped address (::ffff:a.b.c.d); its address is also the
#    one the client connects to. Builtins only (each process costs tens of ms under TCG).
portdir=/sys/class/infiniband/$dev/ports/1
gid=${HOSTPING_PERFTEST_GID:-}
ip=""
for i in {0..15}; do
    [ -r "$portdir/gids/$i" ] || continue
    read -r g <"$portdir/gids/$i" || true
    t=""
    { read -r t <"$portdir/gid_attrs/types/$i" || true; } 2>/dev/null
    if [[ "$g" == 0000:0000:0000:0000:0000:ffff:* && "$t" == "RoCE v2" ]]; then
        [ -n "$gid" ] || gid=$i
        if [ "$gid" = "$i" ]; then
            hex=${g#0000:0000:0000:0000:0000:ffff:} # e.g. 0a00:020f
            hex=${hex/:/}
            ip=$((16#${hex:0:2})).$((16#${hex:2:2})).$((16#${hex:4:2})).$((16#${hex:6:2}))
        fi
    fi
done
if [ -z "$gid" ] || [ -z "$ip" ]; then
    say "no RoCE v2 IPv4 GID on $dev port 1"
    exit 1
fi
say "device $dev, GID index $gid, address $ip, $n runs per variant, results in $out"

# wait_listen PORT: until a TCP socket listens on PORT (/proc/net/tcp{,6}, state 0A), at
# most ~10 s. perftest's client gives up at once when the server is not listening yet.
wait_listen() {
    local want tries=0 local_addr st rest
    printf -v want ':%04X' "$1"
    while [ $tries -lt 100 ]; do
        for f in /proc/net/tcp /proc/net/tcp6; do
            while read -r _ local_addr _ st rest; do
                [[ "$local_addr" == *"$want" && "$st" == 0A ]] && return 0
            done <"$f"
        done
        sleep 0.1
        tries=$((tries + 1))
    done
    return 1
}

# pair ATTEMPT_BASE TOOL ARGS...: one server/client pair; sets cst and sst (their statuses).
pair() {
    local base=$1 tool=$2 spid
    shift 2
    cst=0 sst=0
    port=$((port + 1))
    timeout "$run_timeout" "$tool" -d "$dev" -x "$gid" -p "$port" "$@" >"$base-server.txt" 2>&1 &
    spid=$!
    if wait_listen "$port"; then
        timeout "$run_timeout" "$tool" -d "$dev" -x "$gid" -p "$port" "$@" "$ip" \
            >"$base-client.txt" 2>&1 || cst=$?
    else
        echo "server did not listen on port $port" >"$base-client.txt"
        cst=1
    fi
    # A failed client leaves the server waiting for it: stop it rather than wait it out.
    [ "$cst" -eq 0 ] || kill "$spid" 2>/dev/null || true
    wait "$spid" || sst=$?
}

# clock_check_failed BASE: whether perftest gave up on its TSC calibration. perftest times
# with the TSC and checks it against gettimeofday over a few samples; under TCG on a busy
# host the fit is poor ("Correlation coefficient r^2: 0.47 < 0.9", "Can't produce a
# report"), and the run exits 1 after a good transfer. Such a run is repeated.
clock_check_failed() {
    local f text
    for f in "$1-client.txt" "$1-server.txt"; do
        text=""
        IFS= read -r -d '' text <"$f" || true
        [[ "$text" == *"Can't produce a report"* ]] && return 0
    done
    return 1
}

# run_one VARIANT RUN TOOL ARGS...: one measurement, up to 3 attempts when only the clock
# check failed (the failed attempts' outputs stay, as VARIANT-RUN-attemptK-*.txt).
# Appends a manifest line for the summary.
manifest=$out/.manifest
: >"$manifest"
failures=0
run_one() {
    local variant=$1 run=$2 tool=$3 attempt ok base
    shift 3
    base="$out/$variant-$run"
    for attempt in 1 2 3; do
        pair "$base" "$tool" "$@"
        ok=$((cst == 0 && sst == 0))
        if [ "$ok" -eq 1 ] || ! clock_check_failed "$base" || [ "$attempt" -eq 3 ]; then
            break
        fi
        mv -f "$base-client.txt" "$base-attempt$attempt-client.txt"
        mv -f "$base-server.txt" "$base-attempt$attempt-server.txt"
        say "$variant run $run: perftest's clock check failed (busy host); again"
    done
    if [ "$ok" -ne 1 ]; then
        failures=$((failures + 1))
        say "$variant run $run failed (client status $cst, server status $sst; see $base-*.txt)"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$variant" "$run" "$ok" "$base-client.txt" "$attempt" >>"$manifest"
}

# Whether variant $1 is to run.
wanted() { [[ -z "${HOSTPING_PERFTEST_VARIANTS:-}" || " $HOSTPING_PERFTEST_VARIANTS " == *" $1 "* ]]; }

start=${EPOCHREALTIME/./}
for ((run = 1; run <= n; run++)); do
    ! wanted write_lat_2 || run_one write_lat_2 "$run" ib_write_lat -s 2 -n 1000
    ! wanted write_lat_1 || run_one write_lat_1 "$run" ib_write_lat -s 1 -n 1000
    ! wanted read_lat_1 || run_one read_lat_1 "$run" ib_read_lat -s 1 -n 1000
    ! wanted write_bw_64k || run_one write_bw_64k "$run" ib_write_bw -s 65536 -n "$bw_iters" --report_gbits
    ! wanted write_bw_64k_t1 || run_one write_bw_64k_t1 "$run" ib_write_bw -s 65536 -n "$bw_iters" -t 1 --report_gbits
    say "round $run/$n done after $(((${EPOCHREALTIME/./} - start) / 1000000)) s"
done

# -- summary: one awk pass over the client outputs. Columns are found by name in the header
#    line ("#bytes ..."), after joining the names that contain a space.
read -r kernel </proc/sys/kernel/osrelease
version=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo unknown)
awk -F'\t' -v n="$n" -v dev="$dev" -v gid="$gid" -v ip="$ip" -v kernel="$kernel" \
    -v version="$version" -v bw_iters="$bw_iters" '
function col(file, name,    line, h, k, H, i, c, v) {
    c = 0
    while ((getline line < file) > 0) {
        if (line ~ /#bytes/) {
            h = line
            gsub(/BW peak/, "BW_peak", h); gsub(/BW average/, "BW_average", h)
            gsub(/% percentile/, "%_percentile", h)
            k = split(h, H, " ")
            for (i = 1; i <= k; i++) if (H[i] == name) c = i
            continue
        }
        if (c && split(line, v, " ") >= c && v[1] ~ /^[0-9]+$/) { close(file); return v[c] }
    }
    close(file)
    return ""
}
function num(x) { return (x ~ /^[0-9.]+$/) ? x + 0 : "null" }
function median(key,    m, i, j, t, a) {
    m = cnt[key]
    if (m == 0) return "null"
    for (i = 1; i <= m; i++) a[i] = vals[key, i]
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function add(key, x) { if (x != "null") vals[key, ++cnt[key]] = x }
{
    tool = $1; variant = $2; run = $3; ok = $4; file = $5; attempts = $6
    size = ""; iters = ""
    # size and iterations from the first data row
    size = col(file, "#bytes"); iters = col(file, "#iterations")
    if (!(variant in seen)) { seen[variant] = 1; order[++nv] = variant; vtool[variant] = tool; vsize[variant] = size }
    if (tool == "ib_write_lat" || tool == "ib_read_lat") {
        typ = num(col(file, "t_typical[usec]")); avg = num(col(file, "t_avg[usec]"))
        if (!ok) { typ = "null"; avg = "null" }
        add(variant SUBSEP "typ", typ); add(variant SUBSEP "avg", avg)
        fig = sprintf("\"t_typical_us\": %s, \"t_avg_us\": %s", typ, avg)
    } else {
        bw = num(col(file, "BW_average[Gb/sec]"))
        if (!ok) bw = "null"
        add(variant SUBSEP "bw", bw)
        fig = sprintf("\"bw_avg_gbps\": %s", bw)
    }
    runs[++nr] = sprintf("    {\"test\": \"%s\", \"variant\": \"%s\", \"run\": %d, \"size\": %s, \"iterations\": %s, \"ok\": %s, \"attempts\": %d, %s}",
        tool, variant, run, num(size), num(iters), ok ? "true" : "false", attempts, fig)
}
END {
    printf "{\n  \"device\": \"%s\", \"gid_index\": %s, \"address\": \"%s\", \"kernel\": \"%s\", \"perftest\": \"%s\",\n", dev, gid, ip, kernel, version
    printf "  \"runs_per_variant\": %d, \"bw_iterations\": %d,\n", n, bw_iters
    printf "  \"columns\": {\"ib_write_lat\": \"t_typical[usec] and t_avg[usec]; perftest reports half the measured round trip\", \"ib_read_lat\": \"t_typical[usec] and t_avg[usec]; the whole round trip, post to polled completion\", \"ib_write_bw\": \"BW average[Gb/sec] (--report_gbits)\"},\n"
    printf "  \"runs\": [\n"
    for (i = 1; i <= nr; i++) printf "%s%s\n", runs[i], (i < nr ? "," : "")
    printf "  ],\n  \"medians\": [\n"
    for (i = 1; i <= nv; i++) {
        v = order[i]
        if (vtool[v] ~ /_lat$/)
            fig = sprintf("\"t_typical_us\": %s, \"t_avg_us\": %s", median(v SUBSEP "typ"), median(v SUBSEP "avg"))
        else
            fig = sprintf("\"bw_avg_gbps\": %s", median(v SUBSEP "bw"))
        printf "    {\"test\": \"%s\", \"variant\": \"%s\", \"size\": %s, \"runs_ok\": %d, %s}%s\n",
            vtool[v], v, num(vsize[v]), (vtool[v] ~ /_lat$/ ? cnt[v SUBSEP "typ"] : cnt[v SUBSEP "bw"]) + 0, fig, (i < nv ? "," : "")
    }
    printf "  ]\n}\n"
}' "$manifest" >"$out/summary.json"
rm -f "$manifest"

# Medians, for the log.
sed -n '/"medians"/,$p' "$out/summary.json" | grep '"test"' | sed 's/^ */perftest: median /' >&2
[ "$failures" -eq 0 ] || { say "$failures runs failed"; exit 1; }
