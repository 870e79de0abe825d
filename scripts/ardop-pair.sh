#!/usr/bin/env bash
# Runs the ardopcf acceptance tests (crates/cli/tests/e2e/ardop.rs): two real ardopcf modems
# (built from third_party/ardop) on a virtual audio cable, each under a real skywave
# daemon with an `ardop` link in ARQ mode, in real time, and prints the figures.
#
#   scripts/ardop-pair.sh            # 10+10 bundles of 100 B, a 20 KB bundle, the raw
#                                    # ARQ byte-stream baseline (about 12 minutes)
#   scripts/ardop-pair.sh figures    # three runs of each: min/median/max (about 35 min)
#   KEEP=/tmp/ardop scripts/ardop-pair.sh   # keep the modem and daemon logs there
#
# Needs make, gcc and libasound2-dev (Debian: apt-get install -y make gcc
# libasound2-dev); the tests print why they were skipped when one is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [[ -n ${KEEP:-} ]]; then
    export SKYWAVE_ARDOP_KEEP=$KEEP
fi
if [[ ${1:-} == figures ]]; then
    cargo test --release -p skywave --test e2e -- --ignored --nocapture \
        ardop::ardop_figures_over_three_runs 2>&1 | grep -E "^ardop:|^run |skipped|FIGURES|test result"
else
    cargo test --release -p skywave --test e2e ardop:: -- --include-ignored --nocapture \
        --test-threads 1 --skip ardop_figures 2>&1 | grep -E "^ardop:|^raw ARQ|skipped|test result"
fi
