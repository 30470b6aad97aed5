#!/usr/bin/env bash
# Long form of the crash soak under cloud faults (issue 15, hardening 1): the same test
# as `cargo test --test soak`, with 10 clusters x 5 rounds = 50 operations of every
# mutating type (up, pool add, resize, drill, pool remove, down; plus a last up, pool
# add and resize on every other cluster) and 60 SIGKILLs, against a simulator answering
# 429/503 to 20% of calls and hanging 5% of them.
#
#   scripts/long-soak.sh                          # a fresh seed (printed first)
#   KINETIC_SOAK_SEED=1234 scripts/long-soak.sh   # replay a schedule
#   KINETIC_SOAK_ROUNDS=10 KINETIC_SOAK_KILLS=150 scripts/long-soak.sh
#
# The seed fixes the scripts and the kill schedule; the simulator's faults are rolled
# afresh each run.
set -euo pipefail
cd "$(dirname "$0")/.."

export KINETIC_SOAK_CLUSTERS="${KINETIC_SOAK_CLUSTERS:-10}"
export KINETIC_SOAK_ROUNDS="${KINETIC_SOAK_ROUNDS:-5}"
export KINETIC_SOAK_KILLS="${KINETIC_SOAK_KILLS:-60}"
export KINETIC_SOAK_DEADLINE_SECONDS="${KINETIC_SOAK_DEADLINE_SECONDS:-3600}"

echo "==> crash soak: $KINETIC_SOAK_CLUSTERS clusters x $KINETIC_SOAK_ROUNDS rounds, $KINETIC_SOAK_KILLS SIGKILLs"
cargo test --test soak -- --nocapture
