#!/usr/bin/env bash
# Print the IAP audience of one environment's backend service,
#   /projects/PROJECT_NUMBER/global/backendServices/ID
# for `iap-audience=` in deploy/overlays/ENV/config/kustomization.yaml.
#
#   deploy/iap-audience.sh production|staging PROJECT_ID
#
# The backend service is found from the environment's own Service, not by a name
# pattern (`name~kineticd` also matches kineticd-staging's): GKE's NEG controller
# records the Service's network endpoint group in its cloud.google.com/neg-status
# annotation, and exactly one global backend service has that group as a backend.
# Needs kubectl (with the cluster's credentials), gcloud and jq.
set -euo pipefail

case "${1:-}" in
  production) ns=kineticd ;;
  staging) ns=kineticd-staging ;;
  *) echo "usage: deploy/iap-audience.sh production|staging PROJECT_ID" >&2; exit 2 ;;
esac
project=${2:?usage: deploy/iap-audience.sh production|staging PROJECT_ID}

status=$(kubectl -n "$ns" get service kineticd \
  -o jsonpath='{.metadata.annotations.cloud\.google\.com/neg-status}')
if [[ -z "$status" ]]; then
  echo "service $ns/kineticd has no network endpoint group yet: apply the overlay and wait for the Gateway" >&2
  exit 1
fi
neg=$(jq -r '.network_endpoint_groups["80"] // empty' <<<"$status")
[[ -n "$neg" ]] || { echo "no endpoint group for port 80 in $status" >&2; exit 1; }

mapfile -t backends < <(gcloud compute backend-services list --global --project "$project" \
  --filter="backends.group ~ /networkEndpointGroups/${neg}\$" --format='value(id)')
if [[ ${#backends[@]} -ne 1 ]]; then
  echo "expected one global backend service with endpoint group $neg, found ${#backends[@]}:" \
    "the Gateway may still be reconciling (kubectl -n $ns describe gateway kineticd)" >&2
  exit 1
fi
number=$(gcloud projects describe "$project" --format='value(projectNumber)')
echo "/projects/$number/global/backendServices/${backends[0]}"
