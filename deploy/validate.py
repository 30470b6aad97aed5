"""Validate rendered manifests (one multi-document YAML file per overlay).

Built-in kinds: kubernetes-validate's bundled OpenAPI schemas of the Kubernetes version
given, strict (unknown fields fail). Custom resources (Gateway API, GKE policies):
deploy/schemas/crds.yaml. A kind covered by neither fails: nothing is skipped silently.
Then references between objects: every policy target, route parent and backend, and
every ConfigMap/Secret/ServiceAccount a pod uses that the render itself defines or that
deploy/README.md tells the operator to create.

usage: python validate.py KUBERNETES_VERSION RENDERED.yaml...
"""

import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

HERE = Path(__file__).resolve().parent
CRDS = yaml.safe_load((HERE / "schemas" / "crds.yaml").read_text())
# Created by the operator (deploy/README.md), never rendered: they hold secrets.
EXTERNAL = {("Secret", "kineticd-database"), ("Secret", "kineticd-iap-oauth")}


def crd_validator(key):
    schema = {k: v for k, v in CRDS.items() if k != "kinds"}
    schema.update(CRDS["kinds"][key])
    return jsonschema.Draft202012Validator(schema)


def check_schema(doc, version):
    key = f"{doc.get('apiVersion')}/{doc.get('kind')}"
    if key in CRDS["kinds"]:
        errors = sorted(crd_validator(key).iter_errors(doc), key=lambda e: list(e.path))
        return [f"{'/'.join(map(str, e.path)) or '.'}: {e.message}" for e in errors], "schemas/crds.yaml"
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{'/'.join(map(str, e.path)) or '.'}: {e.message}"], f"kubernetes {version}"
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {key}: add it to deploy/schemas/crds.yaml"], "none"
    return [], f"kubernetes {version} strict"


def pod_refs(spec):
    """(kind, name) of every ConfigMap, Secret and ServiceAccount a pod spec uses."""
    refs = set()
    if spec.get("serviceAccountName"):
        refs.add(("ServiceAccount", spec["serviceAccountName"]))
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        for env in c.get("env", []):
            src = env.get("valueFrom", {})
            if "configMapKeyRef" in src:
                refs.add(("ConfigMap", src["configMapKeyRef"]["name"]))
            if "secretKeyRef" in src:
                refs.add(("Secret", src["secretKeyRef"]["name"]))
    return refs


def check_refs(docs):
    defined = {(d["kind"], d["metadata"]["name"]) for d in docs} | EXTERNAL
    problems = []
    for d in docs:
        spec = d.get("spec", {})
        wanted = set()
        if "targetRef" in spec:
            wanted.add((spec["targetRef"]["kind"], spec["targetRef"]["name"]))
        for p in spec.get("parentRefs", []):
            wanted.add((p.get("kind", "Gateway"), p["name"]))
        for r in spec.get("rules", []):
            for b in r.get("backendRefs", []):
                wanted.add((b.get("kind", "Service"), b["name"]))
        if "template" in spec:
            wanted |= pod_refs(spec["template"]["spec"])
        iap = spec.get("default", {}).get("iap", {})
        if "oauth2ClientSecret" in iap:
            wanted.add(("Secret", iap["oauth2ClientSecret"]["name"]))
        for kind, name in sorted(wanted - defined):
            problems.append(f"{d['kind']}/{d['metadata']['name']} refers to {kind}/{name}, which is not defined")
    return problems


def main():
    version, files = sys.argv[1], sys.argv[2:]
    failed = 0
    for f in files:
        docs = [d for d in yaml.safe_load_all(Path(f).read_text()) if d]
        for d in docs:
            errors, by = check_schema(d, version)
            what = f"{f}: {d.get('kind')}/{d.get('metadata', {}).get('name')}"
            if errors:
                failed += len(errors)
                for e in errors:
                    print(f"FAIL {what}: {e}")
            else:
                print(f"ok   {what} ({by})")
        for p in check_refs(docs):
            failed += 1
            print(f"FAIL {f}: {p}")
    print(f"{failed} problem(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
