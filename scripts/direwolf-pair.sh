#!/usr/bin/env bash
# Runs the Dire Wolf acceptance tests (crates/cli/tests/e2e/direwolf.rs): two real Dire Wolf
# modems on a virtual audio cable, each under a real skywave daemon on its KISS port,
# syncing 20+20 bundles of 100 B in real time, and prints the figures.
#
#   scripts/direwolf-pair.sh            # 1200 and 9600 baud once each (about 5 minutes)
#   scripts/direwolf-pair.sh figures    # three runs at each rate: min/median/max
#   scripts/direwolf-pair.sh two-radios # one Dire Wolf, two channels on one KISS connection
#   KEEP=/tmp/dw scripts/direwolf-pair.sh   # keep the Dire Wolf and daemon logs there
#
# Needs direwolf, gcc and libasound2-dev (Debian: apt-get install -y direwolf
# libasound2-dev gcc); the tests print why they were skipped when one is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [[ -n ${KEEP:-} ]]; then
    export SKYWAVE_DIREWOLF_KEEP=$KEEP
fi
if [[ ${1:-} == two-radios ]]; then
    cargo test --release -p skywave --test e2e -- --ignored --nocapture \
        direwolf::one_direwolf_carries_two_radio_channels 2>&1 | grep -E "bundles over|skipped|test result"
elif [[ ${1:-} == figures ]]; then
    cargo test --release -p skywave --test e2e -- --ignored --nocapture \
        direwolf::direwolf_figures_over_three_runs 2>&1 | grep -E "baud|skipped|FIGURES|test result"
else
    cargo test --release -p skywave --test e2e -- --include-ignored --nocapture \
        direwolf::two_direwolf_modems 2>&1 | grep -E "baud|skipped|test result"
fi
