#!/usr/bin/env bash
# Validate everything under deploy/ without a cluster or a container engine:
#   1. the Dockerfile with hadolint, and its build context: the files .dockerignore lets
#      through are enough for `cargo build --release --locked` to resolve the workspace;
#   2. every overlay rendered with `kubectl kustomize`;
#   3. each rendered object against its schema: Kubernetes' own (kubernetes-validate,
#      strict, at KUBERNETES_VERSION, the version deploy/README.md names) or, for the
#      Gateway API and GKE policy kinds, deploy/schemas/crds.yaml; plus references
#      between objects (deploy/validate.py);
#   4. staging is an environment of its own: its IAP audience, Cloud SQL instance,
#      Google service account, address, certificate map, host and namespace all differ
#      from production's, and each environment's server and release Job agree
#      (deploy/environments.py; it must also refuse production compared with itself);
#   5. the team-project custom role (deploy/iam/team-project-role.yaml) has the form of
#      a `gcloud iam roles create --file` role file, each permission once, sorted;
#   6. checkov's Kubernetes checks on the rendered objects; a finding fails unless the
#      object waives that check with a `checkov.io/skipN: CHECK=reason` annotation;
#   and the shell scripts deploy/kn.sh (docs/curl.md's helper), deploy/release.sh and
#   deploy/iap-audience.sh parse (`bash -n`, shellcheck if installed).
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

echo "--- deploy/kn.sh, deploy/release.sh, deploy/iap-audience.sh (bash -n; shellcheck where installed)"
for script in deploy/kn.sh deploy/release.sh deploy/iap-audience.sh; do
  bash -n "$script"
  if command -v shellcheck >/dev/null; then shellcheck "$script"; else echo "$script: shellcheck not installed, syntax only"; fi
done

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

echo "--- staging is its own environment (deploy/environments.py)"
r="$work/rendered"
"$VENV/bin/python" deploy/environments.py \
  "$r/production.yaml" "$r/production_migrate.yaml" "$r/staging.yaml" "$r/staging_migrate.yaml"
# The check has teeth: production compared with itself must fail.
if "$VENV/bin/python" deploy/environments.py \
  "$r/production.yaml" "$r/production_migrate.yaml" "$r/production.yaml" "$r/production_migrate.yaml" >/dev/null; then
  echo "deploy/environments.py accepted production as its own staging" >&2
  exit 1
fi

echo "--- team-project custom role (deploy/iam/team-project-role.yaml)"
"$VENV/bin/python" - deploy/iam/team-project-role.yaml <<'PY'
import re, sys, yaml
path = sys.argv[1]
role = yaml.safe_load(open(path))
allowed = {"title", "description", "stage", "includedPermissions"}
assert set(role) <= allowed, f"{path}: unknown keys {set(role) - allowed}"
assert role.get("stage") in {"ALPHA", "BETA", "GA", "DEPRECATED", "DISABLED", "EAP"}, "stage"
assert 0 < len(role["title"]) <= 100, "title: 1 to 100 characters"
assert len(role.get("description", "")) <= 300, "description: at most 300 characters"
perms = role["includedPermissions"]
assert len(perms) == len(set(perms)), "a permission is listed twice"
assert perms == sorted(perms), "keep includedPermissions sorted"
bad = [p for p in perms if not re.fullmatch(r"[a-z]+\.[A-Za-z0-9]+\.[A-Za-z0-9]+", p)]
assert not bad, f"not service.resource.verb: {bad}"
print(f"{path}: {len(perms)} permissions")
PY

echo "--- checkov (Kubernetes checks)"
"$VENV/bin/checkov" --directory "$work/rendered" --framework kubernetes \
  --compact --quiet --skip-download --output cli
echo "deploy checks passed"
