//! The simulator's list calls (the ones gcloud makes; kineticd's own clients make few of
//! them) over plain HTTP, on state made through the production clients: pages in key
//! order that resume after their token's key, forged tokens refused, Service Usage's
//! `state:` filter applied, aggregated lists grouped by scope.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::start_sim;

const PROJECT: &str = "list-proj";

async fn get(sim: &kineticd::sim::Sim, path: &str) -> (reqwest::StatusCode, Value) {
    let http = kineticd::app::http_client().unwrap();
    let r = http
        .get(format!("{}{path}", sim.url()))
        .send()
        .await
        .unwrap();
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

/// Every page of `path` (`size` items each): the `collection` items in order.
async fn all_pages(
    sim: &kineticd::sim::Sim,
    path: &str,
    size: &str,
    collection: &str,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut token = String::new();
    for _ in 0..100 {
        let (status, page) = get(sim, &format!("{path}{size}&pageToken={token}")).await;
        assert_eq!(status, 200, "{page}");
        items.extend(page[collection].as_array().cloned().unwrap_or_default());
        match page["nextPageToken"].as_str() {
            Some(t) => token = t.to_owned(),
            None => return items,
        }
    }
    panic!("{path}: more than 100 pages");
}

#[tokio::test]
async fn service_accounts_page_by_email_once_each() {
    let (sim, gcp) = start_sim().await;
    for id in ["kn-c-nodes", "kn-a-nodes", "kn-b-nodes"] {
        gcp.iam
            .create_service_account(PROJECT, id, "", "")
            .await
            .unwrap();
    }
    gcp.iam
        .create_service_account("other-proj", "kn-x-nodes", "", "")
        .await
        .unwrap();
    let path = format!("/iam/v1/projects/{PROJECT}/serviceAccounts?");
    let listed = all_pages(&sim, &path, "pageSize=1", "accounts").await;
    let emails: Vec<&str> = listed.iter().filter_map(|a| a["email"].as_str()).collect();
    let want: Vec<String> = ["kn-a-nodes", "kn-b-nodes", "kn-c-nodes"]
        .iter()
        .map(|id| format!("{id}@{PROJECT}.iam.gserviceaccount.com"))
        .collect();
    assert_eq!(emails, want);

    let (status, body) = get(&sim, &format!("{path}pageToken=forged")).await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn enabled_services_are_filtered_by_the_server() {
    let (sim, gcp) = start_sim().await;
    gcp.service_usage
        .batch_enable(PROJECT, &["container.googleapis.com"])
        .await
        .unwrap();
    let path = format!("/serviceusage/v1/projects/{PROJECT}/services?");
    let enabled = all_pages(&sim, &path, "filter=state:ENABLED&pageSize=2", "services").await;
    assert!(
        enabled.iter().all(|s| s["state"] == "ENABLED"),
        "{enabled:?}"
    );
    let names: Vec<&str> = enabled
        .iter()
        .filter_map(|s| s["config"]["name"].as_str())
        .collect();
    assert!(names.contains(&"container.googleapis.com"), "{names:?}");
    let disabled = all_pages(&sim, &path, "filter=state:DISABLED", "services").await;
    assert!(!disabled.is_empty());
    assert!(
        disabled.iter().all(|s| s["state"] == "DISABLED"),
        "{disabled:?}"
    );

    let (status, body) = get(&sim, &format!("{path}filter=name:compute")).await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn aggregated_accelerator_types_are_the_zones_lists_grouped_by_scope() {
    let (sim, _gcp) = start_sim().await;
    let base = format!("/compute/v1/projects/{PROJECT}");
    let mut seen = BTreeSet::new();
    let mut token = String::new();
    loop {
        let path = format!("{base}/aggregated/acceleratorTypes?maxResults=100&pageToken={token}");
        let (status, page) = get(&sim, &path).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["kind"], "compute#acceleratorTypeAggregatedList");
        for (scope, scoped) in page["items"].as_object().expect("items by scope") {
            for t in scoped["acceleratorTypes"]
                .as_array()
                .expect("acceleratorTypes")
            {
                let zone = t["zone"].as_str().and_then(|z| z.rsplit('/').next());
                assert_eq!(Some(scope.trim_start_matches("zones/")), zone, "{t}");
                let name = t["name"].as_str().unwrap_or_default();
                assert!(
                    seen.insert(format!("{scope}/{name}")),
                    "{scope}/{name} twice"
                );
            }
        }
        match page["nextPageToken"].as_str() {
            Some(t) => token = t.to_owned(),
            None => break,
        }
    }
    let (status, zone) = get(
        &sim,
        &format!("{base}/zones/us-central1-a/acceleratorTypes"),
    )
    .await;
    assert_eq!(status, 200, "{zone}");
    let in_zone: BTreeSet<String> = zone["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .map(|n| format!("zones/us-central1-a/{n}"))
        .collect();
    assert!(!in_zone.is_empty());
    assert!(in_zone.is_subset(&seen), "{in_zone:?}");
}
