-- Kubernetes manifests kineticd applies to clusters (LeaderWorkerSet, the NVIDIA driver
-- installer), cached after the first download so that a flaky download site cannot
-- block provisioning twice. A row is keyed by its URL and the sha256 of its body: the
-- body never changes under a key, and a pinned digest selects exactly one row.
CREATE TABLE manifests (
    url        text NOT NULL,
    version    text NOT NULL,
    sha256     text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    body       text NOT NULL,
    fetch_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (url, sha256)
);
-- Unpinned look-ups (no configured digest) take the first body fetched for a version.
CREATE INDEX manifests_by_version ON manifests (url, version, fetch_time);
