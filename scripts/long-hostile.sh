#!/usr/bin/env bash
# Long form of the hostile-input tests (issue 15): the same properties as `cargo test`,
# with many more cases; every cargo-fuzz target (fuzz/) for a bounded time; then a longer
# schemathesis run against `serve --dev`.
#
#   scripts/long-hostile.sh                 # 100,000 cases per property, 60 s per fuzz
#                                           # target, 10 min of schemathesis
#   PROPTEST_CASES=1000000 KINETIC_CARGO_FUZZ_SECONDS=600 KINETIC_FUZZ_SECONDS=3600 \
#     scripts/long-hostile.sh
#
# The fuzz targets (fuzz/fuzz_targets/: the accelerator parser, each validated name, the
# operation and cluster-list filters, foreign and minted page tokens) check the oracles of
# the property tests on libFuzzer's inputs. cargo-fuzz is installed here if absent (pinned,
# from crates.io, into KINETIC_TOOLS_DIR outside the clone). It runs on the stable
# toolchain: RUSTC_BOOTSTRAP=1 lets it pass its -Z flags, and `--sanitizer none` needs no
# sanitizer runtime (the code under test is safe Rust: a panic is the crash libFuzzer
# reports). A crash stops the script with the input saved under fuzz/artifacts/TARGET/;
# reproduce it with `RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none TARGET FILE` and
# turn it into a unit test beside the code it broke.
#
# Variables: PROPTEST_CASES, KINETIC_CARGO_FUZZ_SECONDS (per target), KINETIC_FUZZ_TARGETS
# (space-separated; default every target), KINETIC_FUZZ_WORK (grown corpora, default
# /var/tmp/kineticd-fuzz), KINETIC_TOOLS_DIR (default /var/tmp/kineticd-tools),
# KINETIC_FUZZ_EXAMPLES / KINETIC_FUZZ_SECONDS / KINETIC_FUZZ_SEED (schemathesis).
set -euo pipefail
cd "$(dirname "$0")/.."

export PROPTEST_CASES="${PROPTEST_CASES:-100000}"
export KINETIC_FUZZ_EXAMPLES="${KINETIC_FUZZ_EXAMPLES:-200}"
export KINETIC_FUZZ_SECONDS="${KINETIC_FUZZ_SECONDS:-600}"
export KINETIC_FUZZ_SEED="${KINETIC_FUZZ_SEED:-$RANDOM}"
export KINETIC_REQUIRE_OPENAPI_TOOLS=1
CARGO_FUZZ_VERSION=0.13.2
FUZZ_SECONDS="${KINETIC_CARGO_FUZZ_SECONDS:-60}"
TOOLS="${KINETIC_TOOLS_DIR:-/var/tmp/kineticd-tools}"
WORK="${KINETIC_FUZZ_WORK:-/var/tmp/kineticd-fuzz}"

echo "==> property tests, $PROPTEST_CASES cases each (src/domain/hostile_props.rs, src/service/hostile_props.rs)"
cargo test --lib hostile_props -- --test-threads 2

echo "==> cargo-fuzz $CARGO_FUZZ_VERSION"
export PATH="$TOOLS/bin:$PATH"
if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  CARGO_INSTALL_ROOT="$TOOLS" CARGO_TARGET_DIR="$WORK/install-target" \
    cargo install --locked "cargo-fuzz@$CARGO_FUZZ_VERSION"
  rm -rf "$WORK/install-target"
fi
# Stable toolchain: cargo-fuzz's -Z flags need RUSTC_BOOTSTRAP (see the header).
fuzz=(env RUSTC_BOOTSTRAP=1 cargo fuzz)
fuzz_opts=(--sanitizer none --target-dir "$WORK/target")
targets="${KINETIC_FUZZ_TARGETS:-$("${fuzz[@]}" list)}"
echo "==> building the fuzz targets: $(echo $targets)"
"${fuzz[@]}" build "${fuzz_opts[@]}"
for t in $targets; do
  echo "==> cargo fuzz run $t for ${FUZZ_SECONDS}s (grown corpus in $WORK/corpus/$t)"
  mkdir -p "$WORK/corpus/$t" "fuzz/corpus/$t"
  # New inputs go to the first corpus directory (outside the clone); the committed seeds
  # in fuzz/corpus/ are only read. A crash, a timeout or an out-of-memory exits non-zero.
  set +e
  "${fuzz[@]}" run "${fuzz_opts[@]}" "$t" "$WORK/corpus/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    >"$WORK/$t.log" 2>&1
  rc=$?
  set -e
  grep -E '^(Done [0-9]+ runs|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb))' \
    "$WORK/$t.log" | awk '!seen[$0]++ { print "    " $0 }' || true
  if [ "$rc" != 0 ]; then
    tail -n 40 "$WORK/$t.log" >&2
    echo "FAILED: fuzz target $t exited $rc; the input is in fuzz/artifacts/$t/, the log in $WORK/$t.log" >&2
    exit 1
  fi
done

echo "==> schemathesis against serve --dev: $KINETIC_FUZZ_EXAMPLES examples per operation, ${KINETIC_FUZZ_SECONDS}s, seed $KINETIC_FUZZ_SEED"
cargo test --test openapi_fuzz -- --nocapture

echo "==> auth matrix (every documented route)"
cargo test --test api auth_matrix
