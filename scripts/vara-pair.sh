#!/usr/bin/env bash
# Runs the VARA end-to-end tests (crates/cli/tests/e2e/vara.rs): two real skywave daemons,
# each on a `vara` link to one of a pair of fake VARA modems (600 B/s, half duplex),
# syncing 10+10 bundles of 100 B in real time, and prints the time against the floor.
#
#   scripts/vara-pair.sh            # once (about 20 s)
#   scripts/vara-pair.sh figures    # three runs: min/median/max
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [[ ${1:-} == figures ]]; then
    cargo test --release -p skywave --test e2e -- --ignored --nocapture \
        vara::vara_figures_over_three_runs 2>&1 | grep -E "^vara|FIGURES|test result"
else
    cargo test --release -p skywave --test e2e vara:: -- --nocapture 2>&1 |
        grep -E "^vara|test result"
fi
