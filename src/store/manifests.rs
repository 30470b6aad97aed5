//! Cached Kubernetes manifests (to be filled in).
