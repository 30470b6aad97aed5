//! Google's rate limits ridden out (issue 27): with 30% of Compute's and GKE's answers a
//! 429 in Google's own shapes (GKE: `RESOURCE_EXHAUSTED` with an ErrorInfo
//! `RATE_LIMIT_EXCEEDED`; Compute: `errors[].reason` `rateLimitExceeded`), concurrent
//! `up`s of one project are all accepted (the checks made while accepting send each
//! read again within the request's budget instead of answering 503) and all succeed;
//! the retries are counted in `/metrics`, the project's adaptive rates are there too,
//! and `:diagnose` tells them. The 40-`up` figure is the `rate_limits` benchmark's.

#[path = "common/mod.rs"]
mod common;

use kineticd::sim::faults::{FaultKind, FaultSpec};
use reqwest::StatusCode;
use serde_json::{Value, json};

use common::{TestApp, entry, test_worker_config};

const OWNER: &str = "owner@example.com";
const PROJECT: &str = "busy-proj";
const ZONE: &str = "us-central1-a";
const UPS: usize = 8;

fn rate_limit(service: &str) -> FaultSpec {
    FaultSpec {
        service: service.into(),
        method: "*".into(),
        kind: FaultKind::Http429,
        count: None,
        probability: Some(0.3),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ups_ride_out_thirty_percent_429s() {
    let (app, sim) = TestApp::spawn_sim().await;
    let _workers = app.workers(test_worker_config(UPS));
    app.team(OWNER, "busy", &[PROJECT]).await;
    sim.faults().arm(rate_limit("compute"));
    sim.faults().arm(rate_limit("container"));

    let accepts = (0..UPS).map(|i| {
        let app = &app;
        async move {
            let path = format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/kc{i}");
            app.put(OWNER, &path, json!({"accelerator": "gpu-l4"}))
                .await
        }
    });
    let accepted = futures::future::join_all(accepts).await;
    for r in &accepted {
        assert_eq!(
            r.status,
            StatusCode::ACCEPTED,
            "refused at accept: {}",
            r.body
        );
    }
    for r in &accepted {
        let name = r.body["name"].as_str().expect("operation name");
        let done = app.wait_done(OWNER, name).await;
        assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    }

    // Google did refuse: the journal holds 429s of both services, which were sent again.
    let journal = sim.journal().entries();
    for service in ["compute", "container"] {
        let refused = journal
            .iter()
            .filter(|e| e.service == service && e.status == 429)
            .count();
        assert!(refused > 0, "no 429 from {service}");
    }
    sim.faults().disarm(None);

    // Counted in /metrics, by reason, with the project's adaptive rates.
    let metrics = app
        .http
        .get(app.url_of("/metrics"))
        .send()
        .await
        .expect("/metrics")
        .text()
        .await
        .expect("metrics text");
    for service in ["compute", "container"] {
        assert!(
            metrics.lines().any(|l| {
                l.starts_with("kineticd_cloud_call_retries_total{")
                    && l.contains(&format!("service=\"{service}\""))
                    && l.contains("reason=\"RATE_LIMITED\"")
            }),
            "no RATE_LIMITED retries of {service}:\n{metrics}"
        );
        assert!(
            metrics.lines().any(|l| {
                l.starts_with("kineticd_cloud_rate_limit{")
                    && l.contains(&format!("project=\"{PROJECT}\""))
                    && l.contains(&format!("api=\"{service}\""))
            }),
            "no rate of {service}:\n{metrics}"
        );
    }

    // :diagnose tells the rate of the project's APIs in its `apis` check.
    let r = app
        .post(
            OWNER,
            &format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/kc0:diagnose"),
            Value::Null,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let apis = entry(&r.body, "checks", "id", "apis");
    assert!(
        apis["message"]
            .as_str()
            .is_some_and(|m| m.contains("requests/s")),
        "{apis}"
    );
}
