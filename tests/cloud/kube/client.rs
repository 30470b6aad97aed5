//! Clients: token refresh, cache invalidation, TLS with a real CA, unknown clusters.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use chrono::{Duration, Utc};
use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::kube::client::build_client;
use kineticd::cloud::kube::{AccessToken, ClusterAccess, KubeClients, KubeError};

use super::{TokenFuture, access, no_auth_clients, sim_cluster};

#[derive(Clone, Default)]
struct FakeTokens {
    asked: Arc<AtomicU32>,
    current: Arc<Mutex<(String, i64)>>, // (token, minutes until expiry)
}

impl FakeTokens {
    fn set(&self, token: &str, minutes: i64) {
        *self.current.lock().unwrap() = (token.to_owned(), minutes);
    }

    fn clients(&self) -> KubeClients {
        let me = self.clone();
        KubeClients::new(move || -> TokenFuture {
            me.asked.fetch_add(1, Ordering::SeqCst);
            let (token, minutes) = me.current.lock().unwrap().clone();
            Box::pin(async move {
                Ok(Some(AccessToken {
                    token,
                    expires_at: Some(Utc::now() + Duration::minutes(minutes)),
                }))
            })
        })
    }

    fn asked(&self) -> u32 {
        self.asked.load(Ordering::SeqCst)
    }
}

fn last_authorization(sim: &kineticd::sim::Sim) -> String {
    sim.world().kube.clusters["k1"]
        .last_authorization()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_client_is_rebuilt_when_the_token_changes() {
    let (sim, _) = sim_cluster().await;
    let tokens = FakeTokens::default();
    tokens.set("t1", 2); // inside the refresh margin: asked again on every call
    let clients = tokens.clients();
    let cluster = clients.cluster(access(&sim, "k1"));

    cluster.version().await.expect("version");
    assert_eq!(last_authorization(&sim), "Bearer t1");
    assert_eq!((tokens.asked(), clients.builds()), (1, 1));

    cluster.version().await.expect("version");
    assert_eq!(
        (tokens.asked(), clients.builds()),
        (2, 1),
        "same token: same client"
    );

    tokens.set("t2", 60);
    cluster.version().await.expect("version");
    assert_eq!(
        (tokens.asked(), clients.builds()),
        (3, 2),
        "new token: new client"
    );
    assert_eq!(last_authorization(&sim), "Bearer t2");

    // t2 is far from expiry: the source is not asked again.
    cluster.version().await.expect("version");
    cluster.nodes().await.expect("nodes");
    assert_eq!((tokens.asked(), clients.builds()), (3, 2));
    let seen = sim.world().kube.clusters["k1"].authorizations.clone();
    assert_eq!(seen, ["Bearer t1", "Bearer t2"]);
}

#[tokio::test]
async fn an_endpoint_change_rebuilds_the_client() {
    let (sim, _) = sim_cluster().await;
    sim.world().kube.add_cluster("k2");
    let clients = no_auth_clients();
    let mut a = access(&sim, "k1");
    clients.cluster(a.clone()).version().await.expect("k1");
    a.endpoint = format!("{}/kube/k2", sim.url());
    clients.cluster(a.clone()).version().await.expect("k2");
    clients.cluster(a).version().await.expect("k2 again");
    assert_eq!(clients.builds(), 2);
    assert_eq!(
        sim.world().kube.clusters["k2"].last_authorization(),
        Some(""),
        "no token without authentication"
    );
}

#[tokio::test]
async fn https_with_the_cluster_ca_needs_no_process_setup() {
    // A bare endpoint (https) with a CA from GKE's base64 PEM: building the client and
    // starting a TLS handshake must not panic over the rustls provider. The simulator
    // speaks plain HTTP, so the handshake fails: a transport error.
    let (sim, _) = sim_cluster().await;
    let access = ClusterAccess {
        key: "tls".into(),
        endpoint: sim.url().trim_start_matches("http://").to_owned(),
        ca_certificate: Some(
            base64::engine::general_purpose::STANDARD.encode(kineticd::sim::kube::CA_PEM),
        ),
    };
    build_client(&access, Some("token"), std::time::Duration::from_secs(5)).expect("client");
    let e = no_auth_clients()
        .cluster(access)
        .version()
        .await
        .expect_err("no TLS there");
    assert!(matches!(e, KubeError::Transport { .. }), "{e}");
    assert_eq!(e.retry(), RetryClass::Retryable);

    let bad = ClusterAccess {
        key: "bad".into(),
        endpoint: "127.0.0.1:9".into(),
        ca_certificate: Some("not base64!".into()),
    };
    let e = no_auth_clients()
        .cluster(bad)
        .version()
        .await
        .expect_err("bad CA");
    assert!(matches!(e, KubeError::Config(_)), "{e}");
    assert_eq!(e.retry(), RetryClass::Terminal);
}

#[tokio::test]
async fn an_unknown_cluster_is_not_found() {
    let (sim, _) = sim_cluster().await;
    let e = no_auth_clients()
        .cluster(access(&sim, "nope"))
        .version()
        .await
        .expect_err("unknown");
    assert!(e.is_not_found(), "{e}");
}

#[tokio::test]
async fn a_401_drops_the_client_and_asks_for_a_new_token() {
    use kineticd::sim::faults::{FaultKind, FaultSpec};
    let (sim, _) = sim_cluster().await;
    let tokens = FakeTokens::default();
    tokens.set("t1", 60);
    let clients = tokens.clients();
    let cluster = clients.cluster(access(&sim, "k1"));
    cluster.version().await.expect("version");
    assert_eq!((tokens.asked(), clients.builds()), (1, 1));
    sim.faults().arm(FaultSpec {
        service: "kube".into(),
        method: "kube.version".into(),
        kind: FaultKind::Http401,
        count: Some(1),
        probability: None,
    });
    let e = cluster.version().await.expect_err("401");
    assert_eq!(e.http_status(), Some(401), "{e}");
    assert_eq!(e.retry(), RetryClass::Retryable);
    tokens.set("t2", 60);
    cluster.version().await.expect("version");
    assert_eq!((tokens.asked(), clients.builds()), (2, 2));
    assert_eq!(last_authorization(&sim), "Bearer t2");
}
