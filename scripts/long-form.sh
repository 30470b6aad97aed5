#!/usr/bin/env bash
# The long form of issue 15's proofs, as one command: every hardening test at full size,
# then every benchmark. The short forms of the hardening tests run in `cargo test` (CI).
#
#   scripts/long-form.sh                 # everything (hours on a 2-core machine)
#   KINETIC_LONG_SKIP_BENCHES=1 scripts/long-form.sh
#
# Each part is also its own command (see each script's header and BENCHMARKS.md); the
# knobs of each (seeds, sizes, durations) pass through from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n######## %s\n' "$*"; }

step "hostile input: proptest at length, schemathesis, cargo fuzz (scripts/long-hostile.sh)"
scripts/long-hostile.sh
step "crash soak under cloud faults (scripts/long-soak.sh)"
scripts/long-soak.sh
step "PostgreSQL stopped while operations run (scripts/long-db-faults.sh)"
scripts/long-db-faults.sh

if [ "${KINETIC_LONG_SKIP_BENCHES:-0}" != 1 ]; then
  for bench in api_reads scale waiters console engine provision capacity; do
    step "cargo bench --bench $bench"
    cargo bench --locked --bench "$bench"
  done
  step "API reads with the server in its own process (KBENCH_OUTSIDE=1)"
  KBENCH_OUTSIDE=1 cargo bench --locked --bench api_reads
fi
echo "long form: all parts passed"
