#!/usr/bin/env bash
# Long form of the hostile-input tests (issue 15): the same properties as `cargo test`,
# with many more cases, then a longer schemathesis run against `serve --dev`.
#
#   scripts/long-hostile.sh                 # 100,000 cases per property, 10 min of fuzzing
#   PROPTEST_CASES=1000000 KINETIC_FUZZ_SECONDS=3600 scripts/long-hostile.sh
#
# These stand in for cargo-fuzz targets: cargo-fuzz needs a nightly toolchain (libFuzzer
# instrumentation, -Z flags) and this project builds on stable only. The properties are
# the fuzz targets' oracles (no panic; round trips; INVALID_PAGE_TOKEN for every foreign
# token), driven by proptest's generators instead of libFuzzer's mutator.
set -euo pipefail
cd "$(dirname "$0")/.."

export PROPTEST_CASES="${PROPTEST_CASES:-100000}"
export KINETIC_FUZZ_EXAMPLES="${KINETIC_FUZZ_EXAMPLES:-200}"
export KINETIC_FUZZ_SECONDS="${KINETIC_FUZZ_SECONDS:-600}"
export KINETIC_FUZZ_SEED="${KINETIC_FUZZ_SEED:-$RANDOM}"
export KINETIC_REQUIRE_OPENAPI_TOOLS=1

echo "==> property tests, $PROPTEST_CASES cases each (src/domain/hostile_props.rs, src/service/hostile_props.rs)"
cargo test --lib hostile_props -- --test-threads 2

echo "==> schemathesis against serve --dev: $KINETIC_FUZZ_EXAMPLES examples per operation, ${KINETIC_FUZZ_SECONDS}s, seed $KINETIC_FUZZ_SEED"
cargo test --test openapi_fuzz -- --nocapture

echo "==> auth matrix (every documented route)"
cargo test --test api auth_matrix
