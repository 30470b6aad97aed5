//! Everything that talks to the outside: Google Cloud REST APIs ([`gcp`]) and the
//! clusters' Kubernetes APIs ([`kube`]). Nothing outside this module makes a cloud call.

pub mod gcp;
pub mod kube;
