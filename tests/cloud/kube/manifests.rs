//! Pinned manifests: fetched from the simulator, cached in PostgreSQL, checked.

use std::time::Duration;

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::kube::manifests::{LWS_DEPLOYMENT, LWS_NAMESPACE};
use kineticd::cloud::kube::{KubeError, WaitFor, WaitOptions};
use kineticd::ops::workflows::cluster::manifest_cache::{ManifestError, ManifestStore};
use kineticd::sim::Sim;
use kineticd::sim::faults::{FaultKind, FaultSpec};
use kineticd::sim::kube::manifests::{LWS_FILE, LWS_SHA256};
use tokio_util::sync::CancellationToken;

use super::sim_cluster;

fn downloads(sim: &Sim) -> u64 {
    sim.world()
        .kube
        .manifest_downloads
        .get(LWS_FILE)
        .copied()
        .unwrap_or(0)
}

fn break_download_site(sim: &Sim) {
    sim.faults().arm(FaultSpec {
        service: "manifests".into(),
        method: "*".into(),
        kind: FaultKind::Http503,
        count: None,
        probability: None,
    });
}

async fn store() -> ManifestStore {
    let (db, _) = crate::common::fresh_db().await;
    ManifestStore::new(db, kineticd::app::http_client().expect("http"))
}

#[tokio::test]
async fn first_fetch_is_cached_and_survives_a_broken_site() {
    let (sim, cluster) = sim_cluster().await;
    let store = store().await;
    let cfg = kineticd::sim::kube::manifests::config(&sim.url());

    let first = store.fetch(&cfg.lws).await.expect("download");
    assert!(!first.from_cache);
    assert_eq!(first.sha256, LWS_SHA256);
    assert_eq!(downloads(&sim), 1);

    break_download_site(&sim);
    let second = store.fetch(&cfg.lws).await.expect("from the cache");
    assert!(second.from_cache);
    assert_eq!(second.body, first.body);
    assert_eq!(downloads(&sim), 1, "the second fetch did not hit the URL");

    // The cached manifest installs the LWS controller.
    let applied = cluster.apply_yaml(&second.body).await.expect("apply");
    assert!(applied.iter().any(|a| a.name == LWS_DEPLOYMENT));
    let what = WaitFor::DeploymentAvailable {
        namespace: LWS_NAMESPACE.into(),
        name: LWS_DEPLOYMENT.into(),
    };
    let opts = WaitOptions {
        timeout: Duration::from_secs(120),
        poll: Duration::from_millis(20),
    };
    cluster
        .wait_for(&what, &opts, &CancellationToken::new(), |_| {})
        .await
        .expect("lws available");
}

#[tokio::test]
async fn checksum_mismatch_is_a_clear_terminal_error() {
    let (sim, _cluster) = sim_cluster().await;
    let store = store().await;
    let mut spec = kineticd::sim::kube::manifests::config(&sim.url()).lws;
    spec.sha256 = Some("0".repeat(64));
    let e = store.fetch(&spec).await.expect_err("mismatch");
    let ManifestError::Download(e) = e else {
        panic!("unexpected {e}");
    };
    match &e {
        KubeError::ChecksumMismatch {
            url,
            expected,
            actual,
        } => {
            assert!(url.ends_with(LWS_FILE));
            assert_eq!(*expected, "0".repeat(64));
            assert_eq!(actual, LWS_SHA256);
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(e.retry(), RetryClass::Terminal);
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    // Nothing was cached: the right digest downloads again.
    spec.sha256 = Some(LWS_SHA256.into());
    assert!(!store.fetch(&spec).await.expect("fetch").from_cache);
    assert_eq!(downloads(&sim), 2);
}

#[tokio::test]
async fn a_failed_download_is_retryable() {
    let (sim, _cluster) = sim_cluster().await;
    let store = store().await;
    break_download_site(&sim);
    let e = store
        .fetch(&kineticd::sim::kube::manifests::config(&sim.url()).lws)
        .await
        .expect_err("site down");
    let ManifestError::Download(e) = e else {
        panic!("unexpected {e}");
    };
    assert!(
        matches!(
            e,
            KubeError::Download {
                status: Some(503),
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.retry(), RetryClass::Retryable);
}

#[tokio::test]
async fn an_unpinned_manifest_is_pinned_by_its_first_fetch() {
    let (sim, _cluster) = sim_cluster().await;
    let store = store().await;
    let mut spec = kineticd::sim::kube::manifests::config(&sim.url()).lws;
    spec.sha256 = None;
    let first = store.fetch(&spec).await.expect("download");
    assert_eq!(first.sha256, LWS_SHA256);
    break_download_site(&sim);
    let again = store.fetch(&spec).await.expect("cached");
    assert!(again.from_cache);
    assert_eq!(downloads(&sim), 1);
}
