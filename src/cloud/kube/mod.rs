//! The Kubernetes layer: clients per GKE cluster, server-side apply of manifests, and
//! inventory of nodes and pods.
