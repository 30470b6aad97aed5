//! Compute client against the simulator: networks, routers with NAT, regions (quotas),
//! accelerator types (paging), operations (faults, cancellation, failed operations),
//! requestId deduplication, and the journal.

use std::time::Duration;

use kineticd::cloud::gcp::types::compute::{Network, Operation, Router, RouterNat};
use kineticd::cloud::gcp::{GcpClients, GcpError, RetryClass};
use kineticd::sim::SimConfig;
use kineticd::sim::clock::ClockMode;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::container::{P, raw_post};
use crate::common::{get_json, sim_admin, start_sim, start_sim_with};
use crate::storage::simctl::{
    Want, advance, arm, assert_not_found, assert_unknown_field, cancel_after_first_poll,
    failed_with, journal, until_journal,
};

const R: &str = "us-central1";

fn network(name: &str) -> Network {
    Network {
        name: name.into(),
        auto_create_subnetworks: Some(true),
        ..Network::default()
    }
}

fn router(name: &str, net: &str) -> Router {
    Router {
        name: name.into(),
        network: format!("projects/{P}/global/networks/{net}"),
        nats: vec![RouterNat {
            name: format!("{net}-nat"),
            nat_ip_allocate_option: "AUTO_ONLY".into(),
            source_subnetwork_ip_ranges_to_nat: "ALL_SUBNETWORKS_ALL_IP_RANGES".into(),
            ..RouterNat::default()
        }],
        ..Router::default()
    }
}

async fn wait(gcp: &GcpClients, op: &Operation) -> Result<Operation, GcpError> {
    gcp.compute
        .wait_operation(op, &CancellationToken::new(), Duration::from_secs(120))
        .await
}

async fn network_ready(gcp: &GcpClients, name: &str) {
    let op = gcp
        .compute
        .insert_network(P, &network(name), Uuid::new_v4())
        .await
        .unwrap();
    wait(gcp, &op).await.unwrap();
}

#[tokio::test]
async fn network_and_router_lifecycle() {
    let (sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let rid = Uuid::new_v4();
    let op = c.insert_network(P, &network("kn-one"), rid).await.unwrap();
    assert_eq!(op.operation_type, "insert");
    assert!(op.id.as_deref().is_some_and(|id| id.parse::<u64>().is_ok()));
    let done = wait(&gcp, &op).await.unwrap();
    assert!(done.is_done() && done.error.is_none());
    let n = c.get_network(P, "kn-one").await.unwrap();
    assert_eq!(n.auto_create_subnetworks, Some(true));
    assert_eq!(n.self_link, done.target_link);

    let j = journal(&sim, "compute", "networks.insert").await;
    assert_eq!(
        j[0]["body"],
        json!({"name": "kn-one", "autoCreateSubnetworks": true})
    );
    assert_eq!(j[0]["query"], format!("requestId={rid}"));
    let polls = journal(&sim, "compute", "globalOperations.get").await;
    assert_eq!(polls.len(), 1);

    let want = router("kn-one-router", "kn-one");
    let op = c.insert_router(P, R, &want, Uuid::new_v4()).await.unwrap();
    assert!(
        op.region
            .as_deref()
            .is_some_and(|r| r.ends_with("/regions/us-central1"))
    );
    wait(&gcp, &op).await.unwrap();
    let j = journal(&sim, "compute", "routers.insert").await;
    assert_eq!(j[0]["body"], serde_json::to_value(&want).unwrap());
    assert_eq!(
        j[0]["body"]["nats"][0],
        json!({"name": "kn-one-nat", "natIpAllocateOption": "AUTO_ONLY",
               "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"})
    );
    assert_eq!(
        journal(&sim, "compute", "regionOperations.get").await.len(),
        1
    );
    let r = c.get_router(P, R, "kn-one-router").await.unwrap();
    assert_eq!(r.nats, want.nats);
    assert!(
        r.network
            .ends_with(&format!("projects/{P}/global/networks/kn-one"))
    );

    // The network is in use while the router exists.
    let in_use = c.delete_network(P, "kn-one", Uuid::new_v4()).await;
    let e = failed_with(
        in_use,
        400,
        Want::Reason("resourceInUseByAnotherResource"),
        "delete",
    );
    assert_eq!(e.retry, RetryClass::Terminal);

    let rid = Uuid::new_v4();
    let op = c.delete_router(P, R, "kn-one-router", rid).await.unwrap();
    wait(&gcp, &op).await.unwrap();
    let j = journal(&sim, "compute", "routers.delete").await;
    assert_eq!(j[0]["query"], format!("requestId={rid}"));
    assert_eq!(j[0]["httpMethod"], "DELETE");
    assert_not_found(c.get_router(P, R, "kn-one-router").await);
    let op = c.delete_network(P, "kn-one", Uuid::new_v4()).await.unwrap();
    wait(&gcp, &op).await.unwrap();
    assert!(c.get_network(P, "kn-one").await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn not_found_conflict_and_invalid() {
    let (sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    network_ready(&gcp, "kn-two").await;
    let e = c
        .insert_network(P, &network("kn-two"), Uuid::new_v4())
        .await
        .unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert_eq!(
        (e.reason.as_str(), e.retry),
        ("alreadyExists", RetryClass::Terminal)
    );
    assert!(c.get_network(P, "nope").await.unwrap_err().is_not_found());
    assert_not_found(c.delete_network(P, "nope", Uuid::new_v4()).await);
    assert!(c.get_router(P, R, "nope").await.unwrap_err().is_not_found());
    assert_not_found(c.delete_router(P, R, "nope", Uuid::new_v4()).await);
    assert_not_found(c.get_region_operation(P, R, "operation-x").await);
    assert_not_found(c.get_global_operation(P, "operation-x").await);
    assert_not_found(c.get_region(P, "moon-base1x").await);
    // A router needs an existing network.
    assert_not_found(
        c.insert_router(P, R, &router("r", "kn-missing"), Uuid::new_v4())
            .await,
    );
    let op = c
        .insert_router(P, R, &router("r", "kn-two"), Uuid::new_v4())
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    let e = c
        .insert_router(P, R, &router("r", "kn-two"), Uuid::new_v4())
        .await
        .unwrap_err();
    assert!(e.is_already_exists(), "{e}");

    let e = c
        .insert_network(P, &network("Bad_Name"), Uuid::new_v4())
        .await
        .unwrap_err();
    assert_eq!((e.http_status, e.retry), (400, RetryClass::Terminal), "{e}");
    let mut bad_nat = router("r2", "kn-two");
    bad_nat.nats[0].nat_ip_allocate_option = "AUTO".into();
    let e = c
        .insert_router(P, R, &bad_nat, Uuid::new_v4())
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 400, "{e}");

    // Unknown fields and malformed requestIds are refused.
    let path = format!("/compute/v1/projects/{P}/global/networks");
    let body = json!({"name": "kn-x", "autoSubnets": true});
    let body = assert_unknown_field(&sim, &path, body, "autoSubnets").await;
    assert_eq!(body["error"]["errors"][0]["reason"], "invalid");
    let (status, _) = raw_post(
        &sim,
        &format!("{path}?requestId=nope"),
        json!({"name": "kn-x"}),
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn request_id_makes_retries_idempotent() {
    let (_sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let rid = Uuid::new_v4();
    let first = c
        .insert_network(P, &network("kn-three"), rid)
        .await
        .unwrap();
    let again = c
        .insert_network(P, &network("kn-three"), rid)
        .await
        .unwrap();
    assert_eq!(first.name, again.name, "same requestId, same operation");
    assert!(
        c.insert_network(P, &network("kn-three"), Uuid::new_v4())
            .await
            .unwrap_err()
            .is_already_exists()
    );
    let rid = Uuid::new_v4();
    let del = c.delete_network(P, "kn-three", rid).await.unwrap();
    wait(&gcp, &del).await.unwrap();
    // The network is gone, yet replaying the delete answers with the same operation.
    assert_eq!(
        c.delete_network(P, "kn-three", rid).await.unwrap().name,
        del.name
    );
}

#[tokio::test]
async fn every_call_survives_one_503_and_reports_terminal_faults() {
    let (sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let net_rid = Uuid::new_v4();
    arm(&sim, "compute", "networks.insert", "HTTP_503", 1).await;
    let e = c
        .insert_network(P, &network("kn-four"), net_rid)
        .await
        .unwrap_err();
    assert_eq!(
        (e.http_status, e.retry),
        (503, RetryClass::Retryable),
        "{e}"
    );
    let op = c
        .insert_network(P, &network("kn-four"), net_rid)
        .await
        .unwrap();
    arm(&sim, "compute", "globalOperations.get", "HTTP_503", 1).await;
    assert!(
        c.get_global_operation(P, &op.name)
            .await
            .unwrap_err()
            .is_retryable()
    );
    assert!(c.get_global_operation(P, &op.name).await.unwrap().is_done());

    let rrid = Uuid::new_v4();
    let methods = [
        "networks.get",
        "routers.insert",
        "routers.get",
        "regionOperations.get",
        "regions.get",
        "acceleratorTypes.list",
        "routers.delete",
        "networks.delete",
    ];
    let mut router_op = None;
    for method in methods {
        for (kind, http, retry) in [
            ("HTTP_503", 503, true),
            ("HTTP_500", 500, true),
            ("HTTP_429", 429, true),
            ("QUOTA_EXCEEDED", 403, false),
        ] {
            if kind == "QUOTA_EXCEEDED" && method == "routers.insert" {
                continue; // reported through the operation (see below)
            }
            arm(&sim, "compute", method, kind, 1).await;
            let r = call(&gcp, method, rrid, router_op.as_ref()).await;
            let e = r.expect_err(method);
            assert_eq!(e.http_status, http, "{method}: {e}");
            assert_eq!(e.is_retryable(), retry, "{method}: {e}");
        }
        let op = call(&gcp, method, rrid, router_op.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{method} after faults: {e}"));
        if method == "routers.insert" {
            router_op = op;
        }
    }
    assert_not_found(c.get_network(P, "kn-four").await);
}

/// One call by method name; returns the operation for inserts.
async fn call(
    gcp: &GcpClients,
    method: &str,
    rid: Uuid,
    op: Option<&Operation>,
) -> Result<Option<Operation>, GcpError> {
    let c = &gcp.compute;
    match method {
        "networks.get" => c.get_network(P, "kn-four").await.map(|_| None),
        "routers.insert" => c
            .insert_router(P, R, &router("kn-four-router", "kn-four"), rid)
            .await
            .map(Some),
        "routers.get" => c.get_router(P, R, "kn-four-router").await.map(|_| None),
        "regionOperations.get" => {
            let name = op.map(|o| o.name.clone()).unwrap_or_default();
            c.get_region_operation(P, R, &name).await.map(|_| None)
        }
        "regions.get" => c.get_region(P, R).await.map(|_| None),
        "acceleratorTypes.list" => c
            .list_accelerator_types(P, "us-central1-a")
            .await
            .map(|_| None),
        "routers.delete" => {
            let op = c
                .delete_router(P, R, "kn-four-router", Uuid::new_v4())
                .await?;
            wait(gcp, &op).await.map(|_| None)
        }
        _ => {
            let op = c.delete_network(P, "kn-four", Uuid::new_v4()).await?;
            wait(gcp, &op).await.map(|_| None)
        }
    }
}

#[tokio::test]
async fn failed_operation_is_an_error_with_its_http_status() {
    let (sim, gcp) = start_sim().await;
    network_ready(&gcp, "kn-five").await;
    arm(&sim, "compute", "routers.insert", "QUOTA_EXCEEDED", 1).await;
    let op = gcp
        .compute
        .insert_router(P, R, &router("rq", "kn-five"), Uuid::new_v4())
        .await
        .unwrap();
    let e = wait(&gcp, &op).await.unwrap_err();
    assert_eq!(
        (e.http_status, e.reason.as_str()),
        (403, "QUOTA_EXCEEDED"),
        "{e}"
    );
    assert!(e.message.contains("Quota 'ROUTERS' exceeded"), "{e}");
    assert_eq!(
        (e.method, e.retry),
        ("routers.insert", RetryClass::Terminal)
    );
    let raw = gcp
        .compute
        .get_region_operation(P, R, &op.name)
        .await
        .unwrap();
    assert_eq!(raw.http_error_status_code, Some(403));
    assert_not_found(gcp.compute.get_router(P, R, "rq").await);
}

#[tokio::test]
async fn operations_follow_the_clock_and_waits_cancel() {
    let cfg = SimConfig {
        clock: ClockMode::Explicit,
        ..SimConfig::default()
    };
    let (sim, gcp) = start_sim_with(cfg).await;
    let c = &gcp.compute;
    let op = c
        .insert_network(P, &network("kn-six"), Uuid::new_v4())
        .await
        .unwrap();
    assert_eq!(op.status, "PENDING");
    assert!(
        c.get_network(P, "kn-six").await.unwrap_err().is_not_found(),
        "visible only when DONE"
    );
    // A second insert of the same name while the first runs is a conflict.
    assert!(
        c.insert_network(P, &network("kn-six"), Uuid::new_v4())
            .await
            .unwrap_err()
            .is_already_exists()
    );
    advance(&sim, 1.0).await;
    assert_eq!(
        c.get_global_operation(P, &op.name).await.unwrap().status,
        "RUNNING"
    );

    // Cancelled once it has polled and sleeps (next poll in 0.5 s, deadline in 10 min).
    let (g, o) = (gcp.clone(), op.clone());
    cancel_after_first_poll(
        &sim,
        "compute",
        "globalOperations.get",
        |cancel| async move {
            g.compute
                .wait_operation(&o, &cancel, Duration::from_secs(600))
                .await
        },
    )
    .await;
    // The clock does not move: the deadline passes (after at least one poll, whatever
    // the load), and the wait says so.
    let e = c
        .wait_operation(&op, &CancellationToken::new(), Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(e.reason, "LRO_DEADLINE_EXCEEDED", "{e}");

    // Polling errors while waiting are ridden out; the wait ends when the clock moves.
    arm(&sim, "compute", "globalOperations.get", "HTTP_503", 2).await;
    let waiting = {
        let (gcp, op) = (gcp.clone(), op.clone());
        tokio::spawn(async move {
            gcp.compute
                .wait_operation(&op, &CancellationToken::new(), Duration::from_secs(120))
                .await
        })
    };
    until_journal(&sim, "compute", "globalOperations.get", Some(503), 2).await;
    advance(&sim, 19.0).await;
    let done = waiting.await.unwrap().unwrap();
    assert_eq!((done.status.as_str(), done.progress), ("DONE", Some(100)));
    assert!(c.get_network(P, "kn-six").await.is_ok());
}

#[tokio::test]
async fn region_quotas_and_overrides() {
    let (sim, gcp) = start_sim().await;
    let r = gcp.compute.get_region(P, R).await.unwrap();
    assert_eq!(r.name, R);
    assert_eq!(r.status.as_deref(), Some("UP"));
    let zones: Vec<_> = r
        .zones
        .iter()
        .map(|z| z.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        zones,
        [
            "us-central1-a",
            "us-central1-b",
            "us-central1-c",
            "us-central1-f"
        ]
    );
    let q = r.quota("NVIDIA_L4_GPUS").unwrap();
    assert_eq!((q.limit, q.usage), (32.0, 0.0));
    let body = json!({"region": R, "metric": "NVIDIA_H100_GPUS", "limit": 2.5});
    sim_admin(&sim, reqwest::Method::POST, "/sim/v1/quotas", Some(body)).await;
    let r = gcp.compute.get_region(P, R).await.unwrap();
    assert_eq!(r.quota("NVIDIA_H100_GPUS").unwrap().limit, 2.5);
    let other = gcp.compute.get_region(P, "europe-west4").await.unwrap();
    assert!(
        other.quota("NVIDIA_H100_GPUS").is_none(),
        "overrides are per region"
    );
    // Quotas are doubles on the wire.
    let http = kineticd::app::http_client().unwrap();
    let raw = get_json(
        &http,
        &format!("{}/compute/v1/projects/{P}/regions/{R}", sim.url()),
    )
    .await;
    assert!(raw["quotas"][0]["limit"].is_f64(), "{}", raw["quotas"][0]);
}

#[tokio::test]
async fn accelerator_types_are_paged() {
    let (_sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let all = c.list_accelerator_types(P, "us-central1-a").await.unwrap();
    assert!(all.len() > 5, "{all:?}");
    let l4 = all.iter().find(|a| a.name == "nvidia-l4").unwrap();
    assert_eq!(l4.maximum_cards_per_instance, Some(8));
    assert!(
        l4.zone
            .as_deref()
            .unwrap()
            .ends_with("/zones/us-central1-a")
    );

    let mut paged = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = c
            .list_accelerator_types_page(P, "us-central1-a", Some(2), token.as_deref())
            .await
            .unwrap();
        assert!(page.items.len() <= 2);
        pages += 1;
        paged.extend(page.items);
        match page.next_page_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    assert_eq!(pages, all.len().div_ceil(2));
    assert_eq!(paged, all);

    let fewer = c.list_accelerator_types(P, "us-central1-f").await.unwrap();
    assert!(fewer.len() < all.len() && fewer.iter().any(|a| a.name == "nvidia-l4"));
    assert_not_found(c.list_accelerator_types(P, "us-central1-q").await);
    let e = c
        .list_accelerator_types_page(P, "us-central1-a", None, Some("garbage!"))
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 400);
}

#[tokio::test]
async fn zones_get_and_list_answer_like_compute() {
    let (sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let z = c.get_zone(P, "us-central1-f").await.unwrap();
    assert_eq!(z.name, "us-central1-f");
    assert_eq!(z.status.as_deref(), Some("UP"));
    assert_eq!(z.region_name(), Some(R));
    assert!(
        z.region
            .as_deref()
            .unwrap()
            .ends_with("/regions/us-central1")
    );
    for missing in ["us-central1-z", "xx-fake9-a", "us-east1-a"] {
        let e = c.get_zone(P, missing).await.unwrap_err();
        assert!(e.is_not_found(), "{missing}: {e}");
        assert_eq!(e.method, "zones.get");
    }
    let all = c.list_zones(P).await.unwrap();
    assert!(all.len() > 30, "{}", all.len());
    let east1: Vec<&str> = all
        .iter()
        .filter(|z| z.region_name() == Some("us-east1"))
        .map(|z| z.name.as_str())
        .collect();
    assert_eq!(east1, ["us-east1-b", "us-east1-c", "us-east1-d"]);
    // Paged: every zone once, in order.
    let mut paged = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = c
            .list_zones_page(P, Some(7), token.as_deref())
            .await
            .unwrap();
        assert!(page.items.len() <= 7);
        paged.extend(page.items);
        match page.next_page_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    assert_eq!(paged, all);
    // The wire shape: uint64 id as a string, kind, selfLink.
    let http = kineticd::app::http_client().unwrap();
    let raw = get_json(
        &http,
        &format!("{}/compute/v1/projects/{P}/zones/us-central1-a", sim.url()),
    )
    .await;
    assert!(raw["id"].is_string(), "{raw}");
    assert_eq!(raw["kind"], "compute#zone");
    assert!(
        raw["selfLink"]
            .as_str()
            .unwrap()
            .ends_with("/zones/us-central1-a")
    );
}

#[tokio::test]
async fn accelerator_and_machine_types_are_offered_per_zone() {
    let (_sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let l4 = c
        .get_accelerator_type(P, "us-central1-f", "nvidia-l4")
        .await
        .unwrap();
    assert_eq!(l4.name, "nvidia-l4");
    assert_eq!(l4.maximum_cards_per_instance, Some(8));
    // H100s are scarce: not in zone f.
    let e = c
        .get_accelerator_type(P, "us-central1-f", "nvidia-h100-80gb")
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(e.method, "acceleratorTypes.get");
    assert!(
        c.get_accelerator_type(P, "us-central1-a", "nvidia-h100-80gb")
            .await
            .is_ok()
    );
    // TPU machine types only where the TPUs are.
    let v5e = c
        .get_machine_type(P, "us-central1-a", "ct5lp-hightpu-4t")
        .await
        .unwrap();
    assert_eq!(v5e.guest_cpus, Some(112));
    assert_eq!(v5e.zone.as_deref(), Some("us-central1-a"));
    for (zone, machine) in [
        ("us-central1-f", "ct5lp-hightpu-4t"),
        ("us-central1-a", "ct4p-hightpu-4t"),
        ("us-central1-a", "zz-standard-4"),
    ] {
        let e = c.get_machine_type(P, zone, machine).await.unwrap_err();
        assert!(e.is_not_found(), "{zone} {machine}: {e}");
    }
    let g2 = c
        .get_machine_type(P, "us-central1-b", "g2-standard-24")
        .await
        .unwrap();
    assert_eq!(g2.accelerators[0].guest_accelerator_type, "nvidia-l4");
    assert_eq!(g2.accelerators[0].guest_accelerator_count, 2);
}
