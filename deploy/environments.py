"""Check that staging is an environment of its own, not production's with another name.

Each environment is two renders: its server (deploy/overlays/ENV) and its release Job
(deploy/overlays/ENV/migrate). Within an environment both must use the same namespace,
Cloud SQL instance, Google service account and image (the Job migrates the database
the server reads). Across environments each of these must differ: namespace, IAP
audience, Cloud SQL instance connection name, Google service account, global address,
certificate map and host names. A shared one means staging would verify production's
tokens, write production's database or act as production's service account.

usage: python environments.py PROD.yaml PROD_MIGRATE.yaml STAGING.yaml STAGING_MIGRATE.yaml
"""

import sys
from pathlib import Path

import yaml

# What must differ between environments.
SEPARATE = [
    "namespace",
    "iap-audience",
    "cloudsql-instance",
    "google-service-account",
    "address",
    "certificate-map",
    "hostnames",
]
# What the server and its release Job must share.
SHARED = ["namespace", "cloudsql-instance", "google-service-account", "image"]


def load(path):
    return [d for d in yaml.safe_load_all(Path(path).read_text()) if d]


def one(docs, kind, name_prefix, path):
    found = [
        d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name_prefix)
    ]
    if len(found) != 1:
        raise SystemExit(f"{path}: expected one {kind} {name_prefix}*, found {len(found)}")
    return found[0]


def facts(path, server):
    """The environment's values found in one render."""
    docs = load(path)
    config = one(docs, "ConfigMap", "kineticd-config", path)
    sa = one(docs, "ServiceAccount", "kineticd", path)
    workload = one(docs, "Deployment" if server else "Job", "kineticd", path)
    pod = workload["spec"]["template"]["spec"]
    images = {c["name"]: c["image"] for c in pod["containers"]}
    f = {
        "namespace": config["metadata"].get("namespace"),
        "cloudsql-instance": config["data"]["cloudsql-instance"],
        "google-service-account": sa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"],
        "image": images["kineticd"],
    }
    if server:
        gateway = one(docs, "Gateway", "kineticd", path)
        routes = [d for d in docs if d["kind"] == "HTTPRoute"]
        hostnames = {tuple(r["spec"]["hostnames"]) for r in routes}
        if len(hostnames) != 1:
            raise SystemExit(f"{path}: the HTTPRoutes disagree on host names: {hostnames}")
        f.update(
            {
                "iap-audience": config["data"]["iap-audience"],
                "address": [a["value"] for a in gateway["spec"]["addresses"]],
                "certificate-map": gateway["metadata"]["annotations"]["networking.gke.io/certmap"],
                "hostnames": list(hostnames.pop()),
            }
        )
    return f


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    prod = (facts(sys.argv[1], True), facts(sys.argv[2], False))
    staging = (facts(sys.argv[3], True), facts(sys.argv[4], False))
    problems = []
    for env, (server, job) in (("production", prod), ("staging", staging)):
        for key in SHARED:
            if server[key] != job[key]:
                problems.append(f"{env}: the server has {key} {server[key]!r}, its release Job {job[key]!r}")
    for key in SEPARATE:
        p, s = prod[0][key], staging[0][key]
        if p == s:
            problems.append(f"staging shares production's {key}: {p!r}")
        else:
            print(f"ok   {key}: production {p!r}, staging {s!r}")
    for p in problems:
        print(f"FAIL {p}")
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
