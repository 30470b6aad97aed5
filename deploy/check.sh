#!/usr/bin/env bash
# Validate everything under deploy/ without a cluster or a container engine:
#   1. the Dockerfile with hadolint, and its build context: the files .dockerignore lets
#      through are enough for `cargo build --release --locked` to resolve the workspace;
#   2. every overlay rendered with `kubectl kustomize`;
#   3. each rendered object against its schema: Kubernetes' own (kubernetes-validate,
#      strict, at KUBERNETES_VERSION, the version deploy/README.md names) or, for the
#      Gateway API and GKE policy kinds, deploy/schemas/crds.yaml; plus references
#      between objects (deploy/validate.py);
#   4. checkov's Kubernetes checks on the rendered objects; a finding fails unless the
#      object waives that check with a `checkov.io/skipN: CHECK=reason` annotation;
#   and deploy/kn.sh (docs/curl.md's helper) parses (`bash -n`, shellcheck if installed).
# The tools live in one venv outside the clone, built from deploy/requirements.txt
# and rebuilt only when that file changes.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VERSION=1.33.0
VENV="${KINETIC_DEPLOY_VENV:-/var/tmp/kineticd-deploy-venv}"

ensure_venv() {
  local want have=""
  want="$(sha256sum deploy/requirements.txt | cut -d' ' -f1)"
  [[ -f "$VENV/.requirements.sha256" ]] && have="$(cat "$VENV/.requirements.sha256")"
  if [[ "$want" != "$have" ]]; then
    echo "installing the pinned tools into $VENV (deploy/requirements.txt changed or is new)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r deploy/requirements.txt
    echo "$want" > "$VENV/.requirements.sha256"
  fi
}

command -v kubectl >/dev/null || { echo "kubectl is required (kubectl kustomize renders the overlays)" >&2; exit 1; }
ensure_venv

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "--- hadolint deploy/Dockerfile"
"$VENV/bin/hadolint" --config deploy/hadolint.yaml deploy/Dockerfile
echo "Dockerfile: no findings"

echo "--- image build context (.dockerignore) resolves with --locked"
mkdir -p "$work/context"
# The paths .dockerignore re-includes after excluding everything.
mapfile -t allowed < <(sed -n 's/^!\(.*\)$/\1/p' .dockerignore)
for p in "${allowed[@]}"; do cp -r "${p%/}" "$work/context/"; done
(cd "$work/context" && cargo metadata --locked --offline --format-version 1 --no-deps >/dev/null)
echo "context: ${allowed[*]}"

echo "--- deploy/kn.sh (bash -n; shellcheck where installed)"
bash -n deploy/kn.sh
if command -v shellcheck >/dev/null; then shellcheck deploy/kn.sh; else echo "shellcheck not installed: syntax only"; fi

echo "--- render overlays (kubectl kustomize)"
mkdir -p "$work/rendered"
while IFS= read -r k; do
  dir="$(dirname "$k")"
  # Components (shared settings) are not renderable alone; their overlays include them.
  grep -q '^kind: Component' "$k" && continue
  out="$work/rendered/$(echo "${dir#deploy/overlays/}" | tr / _).yaml"
  kubectl kustomize "$dir" > "$out"
  echo "$dir -> $(grep -c '^kind:' "$out") objects"
done < <(find deploy/overlays -name kustomization.yaml | sort)

echo "--- schemas (Kubernetes $KUBERNETES_VERSION strict; CRDs: deploy/schemas/crds.yaml)"
"$VENV/bin/python" deploy/validate.py "$KUBERNETES_VERSION" "$work"/rendered/*.yaml

echo "--- checkov (Kubernetes checks)"
"$VENV/bin/checkov" --directory "$work/rendered" --framework kubernetes \
  --compact --quiet --skip-download --output cli
echo "deploy checks passed"
