#!/usr/bin/env bash
# Long form of the database-fault test (issue 15, hardening 2): the same test as
# `cargo test --test db_faults`, with a longer outage than the leases, more operations,
# and both ways of stopping PostgreSQL (fast shutdown, then an immediate one: a crash).
#
#   scripts/long-db-faults.sh
#   KINETIC_DB_FAULTS_OUTAGE_SECONDS=300 KINETIC_DB_FAULTS_OPERATIONS=60 scripts/long-db-faults.sh
set -euo pipefail
cd "$(dirname "$0")/.."

export KINETIC_DB_FAULTS_OUTAGE_SECONDS="${KINETIC_DB_FAULTS_OUTAGE_SECONDS:-90}"
export KINETIC_DB_FAULTS_OPERATIONS="${KINETIC_DB_FAULTS_OPERATIONS:-30}"
export KINETIC_REQUIRE_PG_SERVER=1

for halt in fast immediate; do
  echo "==> PostgreSQL stopped ($halt) for ${KINETIC_DB_FAULTS_OUTAGE_SECONDS}s under $KINETIC_DB_FAULTS_OPERATIONS operations"
  KINETIC_DB_FAULTS_HALT="$halt" cargo test --test db_faults -- --nocapture
done
