#!/usr/bin/env bash
# Daemon benchmarks over UDP loopback (issue 5's "Measured" figures):
#
#   1. one SIZE MiB bundle between two daemons: goodput, each daemon's CPU and peak RSS,
#      then quinn (crates/baseline/examples/quinn_loopback.rs) for the same size, side by side,
#      and quinn again with UDP segmentation offload off (one sendmsg per datagram);
#   2. 10,000 small bundles (100 B) between two fresh daemons: time until B holds them all;
#   3. daemon RSS idle (empty store), and holding 100,000 bundles.
#
# Usage: scripts/bench-daemon.sh [SIZE_MIB]      (default 1024)
#   Env: RUNS=1 (part 1 repetitions), SKIP_NO_GSO=1 (skip quinn with GSO off),
#        SKIP_QUINN=1 (skip quinn altogether), PLAINTEXT=1 (part 1's daemons with
#        `plaintext = true`: the same run without the Noise channel, to compare), SMALL=10000 (part 2 count), MANY=100000 (part 3 count), SKIP_SMALL=1, SKIP_RSS=1,
#        KEEP=1 (keep the work directory), SKYWAVE=path (default target/release/skywave),
#        MTU=N (parts 1 and 2: `--mtu N` on both daemons), SHOW_DROPS=1 (part 1: print
#        B's drop counters by reason, to stderr), SKIP_LARGE=1 (skip part 1), SMALL_FROM=DIR (part 2 copies this store, filled
#        beforehand with SMALL bundles by the filler below, instead of filling one: a
#        million take minutes to fill). Part 2 gives up after max(300 s, 1 ms per bundle).
#        LATENCY=1: during part 2, `GET /v1/status` on each daemon every 0.2 s, timed;
#        median / p99 / max of each printed (the API must answer while they sync).
#
# Builds nothing of skywave itself: run `cargo build --release` first. The quinn example and
# the store filler (crates/daemon/examples/fill_store.rs) go through `cargo run --release`.
# Node directories live under /dev/shm when it exists (so the disk is not what is measured),
# else under ${TMPDIR:-/tmp}. Needs jq and curl.
#
# What is measured, part 1: from the moment B is launched (B starts, binds, greets A,
# reconciles, then receives) to the `at_ms` of B's `bundle` event for the received bundle,
# i.e. the bundle committed in B's store after its hash was verified. quinn's figure is from
# stream open (handshake done) to the receiver reading the last byte, so skywave's includes
# more (process start, session set-up, hashing and storing). CPU seconds are utime + stime
# of each daemon process over its whole life (from /proc/PID/stat, read just before it is
# stopped); peak RSS is VmHWM from /proc/PID/status.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZE=${1:-1024}
SMALL=${SMALL:-10000}
MANY=${MANY:-100000}
SKYWAVE=${SKYWAVE:-$ROOT/target/release/skywave}
RUNS=${RUNS:-1}
JSON=()
for n in "$SIZE" "$RUNS" "$SMALL" "$MANY"; do
    case $n in '' | *[!0-9]* | 0)
        echo "usage: [RUNS=N] [SMALL=N] [MANY=N] $0 [SIZE_MIB]  (positive whole numbers)" >&2
        exit 2
        ;;
    esac
done
for tool in jq curl; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done
[ -x "$SKYWAVE" ] || { echo "$0: no $SKYWAVE; run cargo build --release first" >&2; exit 2; }

if [ -d /dev/shm ] && [ -w /dev/shm ]; then BASE=/dev/shm; else BASE=${TMPDIR:-/tmp}; fi
WORK=$(mktemp -d "$BASE/skywave-bench.XXXXXX")
PIDS=()

cleanup() {
    local p
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do
        wait "$p" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
CLK_TCK=$(getconf CLK_TCK)

# CPU seconds (user + system) of a live process.
cpu_seconds() {
    local stat
    stat=$(cat "/proc/$1/stat")
    stat=${stat##*) } # fields after the command name; utime and stime are fields 14, 15
    awk -v t="$CLK_TCK" '{ printf "%.2f", ($12 + $13) / t }' <<<"$stat"
}
# A /proc/PID/status field in KiB (VmRSS, VmHWM).
mem_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# start_daemon NAME DIR ARGS...: launches a daemon, waits for DIR/daemon.json; sets $PID.
start_daemon() {
    local name=$1 dir=$2
    shift 2
    rm -f "$dir/daemon.json"
    "$SKYWAVE" daemon --dir "$dir" --http 127.0.0.1:0 "$@" >"$WORK/$name.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    local i
    for i in $(seq 1 200); do
        if [ -s "$dir/daemon.json" ] && jq -e .http "$dir/daemon.json" >/dev/null 2>&1; then
            return 0
        fi
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "$0: daemon $name did not start; its log:" >&2
    cat "$WORK/$name.log" >&2
    exit 1
}
stop_daemon() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    local keep=() p
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]+"${keep[@]}"}")
}
udp_addr() { jq -r '.udp[0]' "$1/daemon.json"; }
http_addr() { jq -r '.http' "$1/daemon.json"; }
auth() { echo "Authorization: Bearer $(cat "$1/http-token")"; }
bundles_held() { curl -sf -H "$(auth "$1")" "http://$(http_addr "$1")/v1/status" | jq -r '.store.bundles' 2>/dev/null || echo 0; }
# Times `GET /v1/status` on daemon dir $1 every 0.2 s, appending each call's seconds to
# file $2 (a call that fails or passes 10 s counts as 10 s), until killed.
poll_latency() {
    local r
    while sleep 0.2; do
        r=$(curl -s -m 10 -o /dev/null -H "$(auth "$1")" -w '%{http_code} %{time_total}' "http://$(http_addr "$1")/v1/status" 2>/dev/null) || true
        case $r in
            "200 "*) echo "${r#200 }" >>"$2" ;;
            *) echo 10 >>"$2" ;;
        esac
    done
}
# "median / p99 / max ms over N calls" of a file of seconds (nearest rank).
latencies() {
    sort -g "$1" | awk '{ a[NR] = $1 * 1000 }
        END { p = int(NR * 0.99 + 0.999); if (p < 1) p = 1
              printf "%.0f / %.0f / %.0f ms over %d calls", a[int((NR + 1) / 2)], a[p], a[NR], NR }'
}
# One /metrics value of a node (the sum of a family's samples with `sum`), 0 if absent.
metric() {
    curl -sf -H "$(auth "$1")" "http://$(http_addr "$1")/metrics" 2>/dev/null |
        awk -v m="$2" -v all="${3:-}" '
            all != "" && index($1, m) == 1 && $1 !~ /^#/ { t += $2; next }
            $1 == m { t += $2 }
            END { printf "%d", t }'
}
fill() { (cd "$ROOT" && cargo run --release -q -p skywave-daemon --example fill_store -- "$@"); }

echo "skywave daemon benchmark: $(nproc) cores, $(uname -r), work dir $WORK"
echo "binary $SKYWAVE ($("$SKYWAVE" --version), built $(date -r "$SKYWAVE" '+%F %T'))"
echo "tree $ROOT at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
echo

# ---- 1. one SIZE MiB bundle -------------------------------------------------------------
BYTES=$((SIZE << 20))
head -c "$BYTES" /dev/urandom >"$WORK/payload"
one_run() {
    local A=$WORK/a B=$WORK/b BUNDLE PID_A PID_B EV T0 T1 deadline
    "$SKYWAVE" init --dir "$A" >/dev/null
    "$SKYWAVE" init --dir "$B" >/dev/null
    BUNDLE=$("$SKYWAVE" add --dir "$A" "$WORK/payload")

    if [ "${PLAINTEXT:-0}" = 1 ]; then
        printf '[[link]]\ntype = "udp"\nbind = "127.0.0.1:0"\nplaintext = true\n' >"$WORK/a.toml"
        start_daemon a "$A" --config "$WORK/a.toml" ${MTU:+--mtu "$MTU"}
    else
        start_daemon a "$A" --listen udp://127.0.0.1:0 ${MTU:+--mtu "$MTU"}
    fi
    PID_A=$PID
    LOAD1=$(load)
    T0=$(now_ms)
    if [ "${PLAINTEXT:-0}" = 1 ]; then
        printf '[[link]]\ntype = "udp"\nbind = "127.0.0.1:0"\npeers = ["%s"]\nplaintext = true\n' \
            "$(udp_addr "$A")" >"$WORK/b.toml"
        start_daemon b "$B" --config "$WORK/b.toml" ${MTU:+--mtu "$MTU"}
    else
        start_daemon b "$B" --listen udp://127.0.0.1:0 --peer "udp://$(udp_addr "$A")" ${MTU:+--mtu "$MTU"}
    fi
    PID_B=$PID
    "$SKYWAVE" events --dir "$B" --since 0 --json >"$WORK/b-events.jsonl" 2>/dev/null &
    EV=$!
    PIDS+=("$EV")
    T1=
    deadline=$(($(now_ms) + 600000))
    while [ -z "$T1" ]; do
        T1=$(jq -r --arg id "$BUNDLE" 'select(.kind == "bundle" and .data.id == $id) | .at_ms' \
            "$WORK/b-events.jsonl" 2>/dev/null | head -n1)
        if [ -z "$T1" ]; then
            if [ "$(now_ms)" -gt "$deadline" ] || ! kill -0 "$PID_B" 2>/dev/null; then
                echo "$0: B did not receive the bundle; logs:" >&2
                tail -n 20 "$WORK/a.log" "$WORK/b.log" >&2
                exit 1
            fi
            sleep 0.05
        fi
    done
    CPU_A=$(cpu_seconds "$PID_A") CPU_B=$(cpu_seconds "$PID_B")
    HWM_A=$(mem_kib "$PID_A" VmHWM) HWM_B=$(mem_kib "$PID_B" VmHWM)
    # What A resent and B dropped: a run slowed by losses differs from one slowed by CPU.
    RESENT=$(metric "$A" 'skywave_piece_bytes_total{kind="resent"}')
    DROPPED=$(metric "$B" 'skywave_frames_dropped_total' sum)
    [ -z "${SHOW_DROPS:-}" ] || curl -sf -H "$(auth "$B")" "http://$(http_addr "$B")/metrics" | grep -i drop >&2
    FRAMES_OUT=$(metric "$A" 'skywave_link_frames_total{link="0",kind="udp",direction="out"}')
    FRAMES_IN=$(metric "$A" 'skywave_link_frames_total{link="0",kind="udp",direction="in"}')
    stop_daemon "$EV"
    stop_daemon "$PID_B"
    stop_daemon "$PID_A"
    SECS=$(awk -v d=$((T1 - T0)) 'BEGIN { printf "%.3f", d / 1000 }')
    GBPS=$(awk -v b="$BYTES" -v d=$((T1 - T0)) 'BEGIN { printf "%.3f", b * 8 / (d / 1000) / 1e9 }')
    rm -rf "$A" "$B"

    QUINN= NOGSO=
    [ "${SKIP_QUINN:-0}" != 1 ] || return 0
    LOAD2=$(load)
    QUINN=$(cd "$ROOT" && cargo run --release -q -p skywave-baseline --example quinn_loopback -- "$SIZE")
    Q_SECS=$(jq -r .seconds <<<"$QUINN") Q_GBPS=$(jq -r .gbit_per_s <<<"$QUINN")
    Q_CPU=$(jq -r .cpu_seconds <<<"$QUINN") Q_RSS=$(jq -r .max_rss_kib <<<"$QUINN")
    if [ "${SKIP_NO_GSO:-0}" != 1 ]; then
        LOAD3=$(load)
        NOGSO=$(cd "$ROOT" && cargo run --release -q -p skywave-baseline --example quinn_loopback -- "$SIZE" --no-gso)
    fi
}

echo "== 1. one $SIZE MiB bundle over UDP loopback ($RUNS run(s), skywave then quinn each) =="
printf '%-22s %9s %10s %26s %24s %s\n' impl seconds Gbit/s "CPU s" "peak RSS MiB" "load (1/5/15 min)"
LABEL="skywave (encrypted)"
[ "${PLAINTEXT:-0}" != 1 ] || LABEL="skywave (plaintext)"
for run in $(seq 1 "$RUNS"); do
    [ "${SKIP_LARGE:-0}" != 1 ] || break
    one_run
    printf '%-22s %9s %10s %26s %24s %s\n' "$LABEL" "$SECS" "$GBPS" \
        "A $CPU_A + B $CPU_B" "A $(mib "$HWM_A"), B $(mib "$HWM_B")" "$LOAD1"
    echo "  A sent $FRAMES_OUT frames and resent $RESENT B of pieces; B answered $FRAMES_IN frames and dropped $DROPPED"
    [ -z "$QUINN" ] || printf '%-22s %9s %10s %26s %24s %s\n' "quinn (1 process)" "$Q_SECS" "$Q_GBPS" \
        "$Q_CPU" "$(mib "$Q_RSS")" "$LOAD2"
    if [ -n "$NOGSO" ]; then
        printf '%-22s %9s %10s %26s %24s %s\n' "quinn, GSO off" "$(jq -r .seconds <<<"$NOGSO")" \
            "$(jq -r .gbit_per_s <<<"$NOGSO")" "$(jq -r .cpu_seconds <<<"$NOGSO")" \
            "$(mib "$(jq -r .max_rss_kib <<<"$NOGSO")")" "$LOAD3"
    fi
    JSON+=("{\"impl\":\"skywave\",\"run\":$run,\"bytes\":$BYTES,\"seconds\":$SECS,\"gbit_per_s\":$GBPS,\"cpu_seconds_a\":$CPU_A,\"cpu_seconds_b\":$CPU_B,\"max_rss_kib_a\":$HWM_A,\"max_rss_kib_b\":$HWM_B,\"resent_bytes\":$RESENT,\"dropped_frames_b\":$DROPPED,\"frames_a_out\":$FRAMES_OUT,\"frames_a_in\":$FRAMES_IN,\"load\":\"$LOAD1\"}")
    [ -z "$QUINN" ] || JSON+=("$QUINN")
    [ -z "$NOGSO" ] || JSON+=("$NOGSO")
done
rm -f "$WORK/payload"
printf 'json: %s\n' "${JSON[@]}"
echo

# ---- 2. SMALL small bundles between two fresh daemons -----------------------------------
if [ "${SKIP_SMALL:-0}" != 1 ]; then
    A=$WORK/sa B=$WORK/sb
    "$SKYWAVE" init --dir "$B" >/dev/null
    if [ -n "${SMALL_FROM:-}" ]; then
        cp -a "$SMALL_FROM" "$A"
        rm -f "$A/daemon.json"
    else
        "$SKYWAVE" init --dir "$A" >/dev/null
        fill "$A" "$SMALL" 100 >/dev/null
    fi
    start_daemon sa "$A" --listen udp://127.0.0.1:0 ${MTU:+--mtu "$MTU"}
    PID_A=$PID
    LOAD4=$(load)
    T0=$(now_ms)
    start_daemon sb "$B" --listen udp://127.0.0.1:0 --peer "udp://$(udp_addr "$A")" ${MTU:+--mtu "$MTU"}
    PID_B=$PID
    POLLERS=()
    if [ "${LATENCY:-0}" = 1 ]; then
        poll_latency "$A" "$WORK/latency_a" &
        POLLERS+=($!)
        poll_latency "$B" "$WORK/latency_b" &
        POLLERS+=($!)
        PIDS+=("${POLLERS[@]}")
    fi
    HELD=0
    deadline=$(($(now_ms) + (SMALL > 300000 ? SMALL : 300000)))
    while [ "$HELD" -lt "$SMALL" ]; do
        if [ "$(now_ms)" -gt "$deadline" ] || ! kill -0 "$PID_B" 2>/dev/null; then
            echo "$0: B holds $HELD of $SMALL bundles; giving up; logs:" >&2
            tail -n 20 "$WORK/sa.log" "$WORK/sb.log" >&2
            exit 1
        fi
        sleep 0.05
        HELD=$(bundles_held "$B")
    done
    T1=$(now_ms)
    for p in "${POLLERS[@]+"${POLLERS[@]}"}"; do
        kill "$p" 2>/dev/null || true
    done
    CPU_A=$(cpu_seconds "$PID_A") CPU_B=$(cpu_seconds "$PID_B")
    HWM_A=$(mem_kib "$PID_A" VmHWM) HWM_B=$(mem_kib "$PID_B" VmHWM)
    stop_daemon "$PID_B"
    stop_daemon "$PID_A"
    rm -rf "$A" "$B"
    echo "== 2. $SMALL bundles of 100 B between two fresh daemons over UDP loopback =="
    echo "B launched to B holding all $SMALL: $(awk -v d=$((T1 - T0)) 'BEGIN { printf "%.2f", d / 1000 }') s (polled every 50 ms)"
    echo "CPU s: A $CPU_A, B $CPU_B; peak RSS: A $(mib "$HWM_A") MiB, B $(mib "$HWM_B") MiB; load $LOAD4"
    if [ "${LATENCY:-0}" = 1 ]; then
        echo "GET /v1/status median / p99 / max: A (sender) $(latencies "$WORK/latency_a"); B (receiver) $(latencies "$WORK/latency_b")"
    fi
    echo
fi

# ---- 3. RSS idle and holding MANY bundles ------------------------------------------------
# Waits until VmRSS has not changed by more than 1% over 3 s (at most 30 s).
settle() {
    local pid=$1 prev=0 cur stable=0 i
    for i in $(seq 1 30); do
        sleep 1
        cur=$(mem_kib "$pid" VmRSS)
        if [ $((cur > prev ? cur - prev : prev - cur)) -le $((cur / 100)) ]; then
            stable=$((stable + 1))
            [ "$stable" -ge 3 ] && break
        else
            stable=0
        fi
        prev=$cur
    done
}
if [ "${SKIP_RSS:-0}" != 1 ]; then
    echo "== 3. daemon memory =="
    C=$WORK/idle
    "$SKYWAVE" init --dir "$C" >/dev/null
    start_daemon idle "$C" --listen udp://127.0.0.1:0
    settle "$PID"
    curl -sf -H "$(auth "$C")" "http://$(http_addr "$C")/v1/status" >/dev/null
    settle "$PID"
    echo "idle, empty store: VmRSS $(mib "$(mem_kib "$PID" VmRSS)") MiB, VmHWM $(mib "$(mem_kib "$PID" VmHWM)") MiB; load $(load)"
    stop_daemon "$PID"
    rm -rf "$C"

    D=$WORK/many
    "$SKYWAVE" init --dir "$D" >/dev/null
    fill "$D" "$MANY" 100 >/dev/null
    start_daemon many "$D" --listen udp://127.0.0.1:0
    settle "$PID"
    HELD=$(bundles_held "$D")
    settle "$PID"
    echo "holding $HELD bundles of 100 B: VmRSS $(mib "$(mem_kib "$PID" VmRSS)") MiB, VmHWM $(mib "$(mem_kib "$PID" VmHWM)") MiB; load $(load)"
    stop_daemon "$PID"
fi
