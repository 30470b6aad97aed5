//! The manifests the `up` steps apply (LeaderWorkerSet, NVIDIA driver installer), read
//! through a PostgreSQL cache: the workflow layer joins the store (the cache) and the
//! cloud (the download, checked against the pinned sha256).
//!
//! Invariant: a body is applied only if it hashes to the pinned digest (when one is
//! configured); once a body is cached, later fetches never touch the network, so a
//! flaky download site blocks provisioning at most once per database. Without a pinned
//! digest the first body fetched for a (url, version) is pinned by the cache.

use crate::cloud::kube::KubeError;
use crate::cloud::kube::manifests::{ManifestSpec, download, sha256_hex};
use crate::ops::steps::StepError;
use crate::store::{self, Db, StoreError};

use super::{kube_error, store_error};

/// A manifest body ready to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub url: String,
    pub version: String,
    pub sha256: String,
    pub body: String,
    /// True when the body came from PostgreSQL (no download).
    pub from_cache: bool,
}

/// Why a manifest could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The download failed or did not match the pinned digest.
    #[error(transparent)]
    Download(#[from] KubeError),
    /// The cache could not be read or written.
    #[error("manifest cache unavailable")]
    Cache(#[from] StoreError),
}

impl From<ManifestError> for StepError {
    fn from(e: ManifestError) -> StepError {
        match e {
            ManifestError::Download(e) => kube_error(e),
            ManifestError::Cache(e) => store_error(e),
        }
    }
}

/// Fetches manifests through the PostgreSQL cache; cheap to clone.
#[derive(Debug, Clone)]
pub struct ManifestStore {
    db: Db,
    http: reqwest::Client,
}

impl ManifestStore {
    pub fn new(db: Db, http: reqwest::Client) -> ManifestStore {
        ManifestStore { db, http }
    }

    /// The body of `spec`: from the cache, or downloaded, checked and cached.
    pub async fn fetch(&self, spec: &ManifestSpec) -> Result<Manifest, ManifestError> {
        if let Some(hit) = self.cached(spec).await? {
            return Ok(hit);
        }
        let got = download(&self.http, spec).await?;
        store::manifests::insert(&self.db, &spec.url, &spec.version, &got.sha256, &got.body)
            .await?;
        tracing::info!(url = %spec.url, sha256 = %got.sha256, "manifest downloaded and cached");
        Ok(Manifest {
            url: spec.url.clone(),
            version: spec.version.clone(),
            sha256: got.sha256,
            body: got.body,
            from_cache: false,
        })
    }

    /// The cached body of `spec`, if there is one that still hashes to its digest.
    async fn cached(&self, spec: &ManifestSpec) -> Result<Option<Manifest>, StoreError> {
        let cached = match &spec.sha256 {
            Some(sha) => store::manifests::get(&self.db, &spec.url, sha).await?,
            None => store::manifests::first_for_version(&self.db, &spec.url, &spec.version).await?,
        };
        let Some(rec) = cached else {
            return Ok(None);
        };
        if sha256_hex(rec.body.as_bytes()) != rec.sha256 {
            tracing::warn!(url = %spec.url, "cached manifest does not match its digest; downloading again");
            return Ok(None);
        }
        Ok(Some(Manifest {
            url: rec.url,
            version: rec.version,
            sha256: rec.sha256,
            body: rec.body,
            from_cache: true,
        }))
    }
}
