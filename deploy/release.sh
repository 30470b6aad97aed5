#!/usr/bin/env bash
# Release one environment, every version including the first (deploy/README.md,
# "Releasing"): the migration Job, then the server.
#
#   deploy/release.sh production|staging
#
# The Job is waited for until it is Complete or Failed, whichever comes first (a plain
# `kubectl wait --for=condition=complete` sits out its whole timeout on a failed Job);
# a failed migration prints the Job's last log lines and stops before the server is
# touched. Needs kubectl with the cluster's credentials.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  production) ns=kineticd ;;
  staging) ns=kineticd-staging ;;
  *) echo "usage: deploy/release.sh production|staging" >&2; exit 2 ;;
esac
overlay="deploy/overlays/$1"
job=kineticd-migrate
# The Job's own limit (activeDeadlineSeconds, 900 s) plus room to start its pods.
wait_seconds=${KINETIC_RELEASE_WAIT_SECONDS:-1020}

echo "--- $1: migration Job ($ns/$job)"
# A Job's pod template cannot change: the previous release's Job goes first.
kubectl -n "$ns" delete job "$job" --ignore-not-found --wait=true
kubectl kustomize "$overlay/migrate" | kubectl apply -f -
deadline=$((SECONDS + wait_seconds))
while :; do
  conditions=$(kubectl -n "$ns" get job "$job" \
    -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
  case " $conditions " in
    *" Complete "*) echo "migrations applied"; break ;;
    *" Failed "*)
      echo "the migration Job failed; its last log lines:" >&2
      kubectl -n "$ns" logs "job/$job" -c kineticd --tail=40 >&2 || true
      exit 1 ;;
  esac
  if (( SECONDS >= deadline )); then
    echo "the migration Job is neither Complete nor Failed after ${wait_seconds} s:" >&2
    kubectl -n "$ns" describe job "$job" >&2 || true
    exit 1
  fi
  sleep 5
done

echo "--- $1: server (rolling update)"
kubectl kustomize "$overlay" | kubectl apply -f -
kubectl -n "$ns" rollout status deployment/kineticd --timeout=15m
