#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, one after the other, one
# libFuzzer job at a time, and prints per target: executions, exec/s, crashes.
#
#   scripts/fuzz.sh SECONDS [TARGET...]
#   FUZZ_MERGE=1 scripts/fuzz.sh 600      # also merge new coverage into fuzz/corpus
#
# A target also stops after FUZZ_RUNS executions (default 10^7, the aim in docs/fuzzing.md:
# 10^7 executions or 30 minutes), so the fast parsers do not spend the whole SECONDS.
#
# Each run reads fuzz/corpus/<target> and writes new inputs to a temporary directory,
# so the committed corpus changes only when FUZZ_MERGE=1 (libFuzzer -merge=1 keeps just
# the inputs that add coverage). A crash lands in fuzz/artifacts/<target>/. Needs the
# nightly toolchain and cargo-fuzz. Exits 1 if any target crashed.
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS [TARGET...]" >&2
    exit 2
fi
secs=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/fuzz"

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# Per-target libFuzzer options: the session input is an operation list whose useful
# length is bounded; the HTTP target reads a request, not a stream.
# The session and handshake inputs are bounded runs (at most 2,000 operations, then 15
# virtual minutes of clean link) whose heaviest take 15 s under ASan on a quiet core and
# over 30 s beside other work: their timeout is set for a hang, not for a slow input.
extra_args() {
    case $1 in
    session) echo "-max_len=600 -timeout=180" ;;
    handshake) echo "-max_len=1200 -timeout=180" ;;
    http) echo "-max_len=2048" ;;
    *) echo "-max_len=4096" ;;
    esac
}

# Built once up front, then the binaries run directly: editing the sources meanwhile
# cannot change a target half way through the list.
cargo +nightly fuzz build -O >&2
bin=target/x86_64-unknown-linux-gnu/release

# SQLite (bundled by rusqlite) defines a global that ASan's ODR check sees twice in the
# targets that link the store; it is one definition, not a bug.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_odr_violation=0}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
printf '%-14s %14s %10s %9s %8s\n' target executions exec/s seconds crashes
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "$work/$t" "artifacts/$t"
    log="$work/$t.log"
    start=$(date +%s)
    # shellcheck disable=SC2046
    if "$bin/$t" -artifact_prefix="artifacts/$t/" "$work/$t" "corpus/$t" \
        -max_total_time="$secs" -runs="${FUZZ_RUNS:-10000000}" -print_final_stats=1 -timeout=30 \
        $(extra_args "$t") >"$log" 2>&1; then
        crashes=0
    else
        crashes=1
        failed=1
    fi
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    printf '%-14s %14s %10s %9s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$took" "$crashes"
    if [[ $crashes -ne 0 ]]; then
        grep -E 'panicked|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -5 >&2 || true
        cp "$log" "$root/fuzz/artifacts/$t.log" 2>/dev/null || true
    fi
    if [[ ${FUZZ_MERGE:-0} == 1 ]]; then
        "$bin/$t" -merge=1 "corpus/$t" "$work/$t" \
            $(extra_args "$t") >"$work/$t.merge.log" 2>&1 || true
    fi
done
exit "$failed"
