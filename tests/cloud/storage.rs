//! Cloud Storage client against the simulator: buckets, objects with paging, the
//! non-empty-bucket refusal, bucket IAM with etags, faults, strict bodies, the journal.

pub mod simctl;

use std::collections::BTreeMap;

use kineticd::cloud::gcp::storage::{ListObjects, is_bucket_not_empty};
use kineticd::cloud::gcp::types::storage::{
    Bucket, BucketPolicy, IamConfiguration, Lifecycle, LifecycleRule, UniformBucketLevelAccess,
    Versioning,
};
use kineticd::cloud::gcp::{GcpClients, RetryClass};
use reqwest::Method;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::start_sim;
use simctl::{
    Want, arm, assert_not_found, assert_retried_once, assert_unknown_field, failed_with, journal,
    post_refused, quick_rmw, raw, service_account,
};

const PROJECT: &str = "demo-project";

/// Create bucket `name` in PROJECT with nothing but its name set.
async fn plain_bucket(gcp: &GcpClients, name: &str) {
    let bucket = Bucket {
        name: name.into(),
        ..Default::default()
    };
    gcp.storage
        .insert_bucket(PROJECT, &bucket)
        .await
        .expect("create bucket");
}

fn state_bucket(name: &str) -> Bucket {
    Bucket {
        name: name.into(),
        location: "US".into(),
        storage_class: "STANDARD".into(),
        lifecycle: Some(Lifecycle {
            rule: vec![LifecycleRule::delete_after_days(30)],
        }),
        iam_configuration: Some(IamConfiguration {
            uniform_bucket_level_access: Some(UniformBucketLevelAccess {
                enabled: true,
                ..Default::default()
            }),
            ..Default::default()
        }),
        versioning: Some(Versioning { enabled: true }),
        labels: BTreeMap::from([("kinetic".to_owned(), "true".to_owned())]),
        ..Default::default()
    }
}

#[tokio::test]
async fn bucket_insert_get_delete() {
    let (sim, gcp) = start_sim().await;
    let name = "demo-project-kinetic-state";
    let b = gcp
        .storage
        .insert_bucket(PROJECT, &state_bucket(name))
        .await
        .unwrap();
    assert_eq!(b.name, name);
    assert_eq!(b.kind, "storage#bucket");
    assert_eq!(b.location, "US");
    assert_eq!(b.location_type, "multi-region");
    assert_eq!(b.metageneration, Some(1));
    assert!(b.project_number.is_some_and(|n| n > 0));
    let ubla = b.iam_configuration.as_ref().unwrap();
    assert!(ubla.uniform_bucket_level_access.as_ref().unwrap().enabled);
    assert!(ubla.bucket_policy_only.as_ref().unwrap().enabled);
    assert_eq!(
        b.lifecycle.as_ref().unwrap().rule[0].condition.age,
        Some(30)
    );

    // The journal holds the request exactly as sent: only the fields we set.
    let sent = journal(&sim, "storage", "buckets.insert").await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["query"], "project=demo-project");
    assert_eq!(
        sent[0]["body"],
        json!({
            "name": name,
            "location": "US",
            "storageClass": "STANDARD",
            "lifecycle": {"rule": [{"action": {"type": "Delete"}, "condition": {"age": 30}}]},
            "iamConfiguration": {"uniformBucketLevelAccess": {"enabled": true}},
            "versioning": {"enabled": true},
            "labels": {"kinetic": "true"},
        })
    );

    let got = gcp.storage.get_bucket(name).await.unwrap();
    assert_eq!(got, b);
    gcp.storage.delete_bucket(name).await.unwrap();
    let e = gcp.storage.get_bucket(name).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(
        (e.status.as_str(), e.reason.as_str()),
        ("NOT_FOUND", "notFound")
    );
    assert_eq!(e.retry, RetryClass::Terminal);
    let e = gcp.storage.delete_bucket(name).await.unwrap_err();
    assert!(e.is_not_found());
}

#[tokio::test]
async fn duplicates_and_invalid_names() {
    let (_sim, gcp) = start_sim().await;
    let b = Bucket {
        name: "shared-bucket-name".into(),
        ..Default::default()
    };
    gcp.storage.insert_bucket(PROJECT, &b).await.unwrap();
    let e = gcp.storage.insert_bucket(PROJECT, &b).await.unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert_eq!((e.http_status, e.reason.as_str()), (409, "conflict"));
    assert!(e.message.contains("already own it"));
    // One namespace for every project.
    let e = gcp
        .storage
        .insert_bucket("other-project", &b)
        .await
        .unwrap_err();
    assert!(e.is_already_exists());
    assert!(e.message.contains("namespace is shared"), "{}", e.message);

    for bad in [
        "ab",
        "Upper-Case",
        "-dash-first",
        "dash-last-",
        "has space",
        "goog-x",
        "x.google.y",
    ] {
        let bucket = Bucket {
            name: bad.into(),
            ..Default::default()
        };
        let e = failed_with(
            gcp.storage.insert_bucket(PROJECT, &bucket).await,
            400,
            Want::Reason("invalid"),
            bad,
        );
        assert_eq!(e.retry, RetryClass::Terminal);
    }
    let on_mars = Bucket {
        name: "fine-name".into(),
        location: "MARS".into(),
        ..Default::default()
    };
    let e = gcp
        .storage
        .insert_bucket(PROJECT, &on_mars)
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 400, "{e}");
}

#[tokio::test]
async fn unknown_json_field_and_missing_project_are_400() {
    let (sim, _gcp) = start_sim().await;
    let body = assert_unknown_field(
        &sim,
        "/storage/v1/b?project=demo-project",
        json!({"name": "strict-bucket", "storageclass": "STANDARD"}),
        "storageclass",
    )
    .await;
    assert!(
        body["error"].get("status").is_none(),
        "Storage errors carry no status"
    );
    let body = post_refused(&sim, "/storage/v1/b", json!({"name": "no-project"})).await;
    assert_eq!(body["error"]["errors"][0]["reason"], "required");
}

#[tokio::test]
async fn non_empty_bucket_refused_until_emptied() {
    let (sim, gcp) = start_sim().await;
    let bucket = "demo-project-kn-c1-jobs";
    plain_bucket(&gcp, bucket).await;
    let names: Vec<String> = (0..7)
        .map(|i| format!("runs/job {i}/out.log"))
        .chain(["top.txt".to_owned()])
        .collect();
    for n in &names {
        let o = gcp
            .storage
            .upload_object(bucket, n, format!("data {n}").into_bytes(), "text/plain")
            .await
            .unwrap();
        assert_eq!(o.name, *n);
        assert_eq!(o.size, Some(format!("data {n}").len() as i64));
        assert_eq!(o.content_type, "text/plain");
    }
    let uploads = journal(&sim, "storage", "objects.insert").await;
    assert!(
        uploads[0]["path"]
            .as_str()
            .unwrap()
            .starts_with("/upload/storage/v1/b/")
    );
    assert!(
        uploads[0]["query"]
            .as_str()
            .unwrap()
            .contains("uploadType=media")
    );

    let e = gcp.storage.delete_bucket(bucket).await.unwrap_err();
    assert!(is_bucket_not_empty(&e), "{e}");
    assert_eq!(e.http_status, 409);
    assert!(e.message.contains("not empty"));
    assert!(!e.is_already_exists());
    assert_eq!(e.retry, RetryClass::Terminal);

    // Paging: 3 per page over 8 objects -> 3 pages, the last without a token.
    let first = gcp
        .storage
        .list_objects(
            bucket,
            &ListObjects {
                max_results: Some(3),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(first.items.len(), 3);
    let token = first.next_page_token.clone().expect("more pages");
    let second = gcp
        .storage
        .list_objects(
            bucket,
            &ListObjects {
                max_results: Some(3),
                page_token: Some(&token),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(second.items[0].name, names_sorted(&names)[3]);
    let all = gcp
        .storage
        .list_all_objects(bucket, None, Some(3))
        .await
        .unwrap();
    let listed: Vec<String> = all.iter().map(|o| o.name.clone()).collect();
    assert_eq!(listed, names_sorted(&names));
    let prefixed = gcp
        .storage
        .list_all_objects(bucket, Some("runs/"), Some(2))
        .await
        .unwrap();
    assert_eq!(prefixed.len(), 7);

    for o in &all {
        gcp.storage.delete_object(bucket, &o.name).await.unwrap();
    }
    // Object names travel percent-encoded as one segment, `/` included.
    let deletes = journal(&sim, "storage", "objects.delete").await;
    assert!(deletes.iter().any(|d| {
        d["path"]
            .as_str()
            .unwrap()
            .ends_with("/o/runs%2Fjob%200%2Fout.log")
    }));
    let e = gcp
        .storage
        .delete_object(bucket, "top.txt")
        .await
        .unwrap_err();
    assert!(e.is_not_found());
    gcp.storage.delete_bucket(bucket).await.unwrap();
}

fn names_sorted(names: &[String]) -> Vec<String> {
    let mut v = names.to_vec();
    v.sort();
    v
}

#[tokio::test]
async fn empty_list_omits_items_and_empty_bucket_helper() {
    let (sim, gcp) = start_sim().await;
    let bucket = "demo-project-kn-c1-builds";
    plain_bucket(&gcp, bucket).await;
    let (status, body) = raw(
        &sim,
        Method::GET,
        &format!("/storage/v1/b/{bucket}/o"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.get("items").is_none(), "{body}");
    assert!(
        gcp.storage
            .list_all_objects(bucket, None, None)
            .await
            .unwrap()
            .is_empty()
    );
    for i in 0..5 {
        gcp.storage
            .upload_object(
                bucket,
                &format!("o{i}"),
                vec![1, 2, 3],
                "application/octet-stream",
            )
            .await
            .unwrap();
    }
    assert_eq!(gcp.storage.empty_bucket(bucket).await.unwrap(), 5);
    gcp.storage.delete_bucket(bucket).await.unwrap();
    assert_not_found(
        gcp.storage
            .list_objects(bucket, &ListObjects::default())
            .await,
    );
}

#[tokio::test]
async fn retryable_fault_then_success() {
    let (sim, gcp) = start_sim().await;
    let bucket = "fault-bucket-1";
    plain_bucket(&gcp, bucket).await;
    arm(&sim, "storage", "buckets.get", "HTTP_503", 1).await;
    let e = gcp.storage.get_bucket(bucket).await.unwrap_err();
    assert_eq!((e.http_status, e.status.as_str()), (503, "UNAVAILABLE"));
    assert!(e.is_retryable());
    gcp.storage.get_bucket(bucket).await.unwrap();

    arm(&sim, "storage", "objects.list", "HTTP_429", 1).await;
    let e = gcp
        .storage
        .list_objects(bucket, &ListObjects::default())
        .await
        .unwrap_err();
    assert_eq!(
        (e.http_status, e.reason.as_str()),
        (429, "rateLimitExceeded")
    );
    assert!(e.is_retryable());
    gcp.storage
        .list_objects(bucket, &ListObjects::default())
        .await
        .unwrap();
    assert_retried_once(&sim, "storage", "buckets.get").await;
}

#[tokio::test]
async fn terminal_fault_changes_nothing() {
    let (sim, gcp) = start_sim().await;
    arm(&sim, "storage", "buckets.insert", "QUOTA_EXCEEDED", 1).await;
    let b = Bucket {
        name: "quota-bucket".into(),
        ..Default::default()
    };
    let e = gcp.storage.insert_bucket(PROJECT, &b).await.unwrap_err();
    assert_eq!((e.http_status, e.reason.as_str()), (403, "quotaExceeded"));
    assert_eq!(e.retry, RetryClass::Terminal);
    assert_not_found(gcp.storage.get_bucket("quota-bucket").await);
}

#[tokio::test]
async fn bucket_policy_etags_and_read_modify_write() {
    let (sim, gcp) = start_sim().await;
    let bucket = "policy-bucket";
    gcp.storage
        .insert_bucket(PROJECT, &state_bucket(bucket))
        .await
        .unwrap();
    let p = gcp.storage.get_bucket_iam_policy(bucket).await.unwrap();
    assert_eq!(p.kind, "storage#policy");
    assert_eq!(p.resource_id, format!("projects/_/buckets/{bucket}"));
    assert_eq!(p.etag, "CAE=");
    assert!(
        p.bindings
            .iter()
            .any(|b| b.role == "roles/storage.legacyBucketOwner")
    );
    assert_eq!(
        journal(&sim, "storage", "buckets.getIamPolicy").await[0]["query"],
        "optionsRequestedPolicyVersion=3"
    );

    // A concurrent writer changes the policy after our read: our write is refused.
    let mut theirs = p.clone();
    theirs
        .bindings
        .push(kineticd::cloud::gcp::types::storage::Binding {
            role: "roles/storage.objectViewer".into(),
            members: vec!["user:other@example.com".into()],
            condition: None,
        });
    let after = gcp
        .storage
        .set_bucket_iam_policy(bucket, &theirs)
        .await
        .unwrap();
    assert_ne!(after.etag, p.etag);
    let e = gcp
        .storage
        .set_bucket_iam_policy(
            bucket,
            &BucketPolicy {
                bindings: vec![],
                ..p.clone()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.http_status, e.status.as_str(), e.reason.as_str()),
        (412, "ABORTED", "conditionNotMet")
    );
    assert!(e.is_retryable());

    let member = "serviceAccount:kn-c1-nodes@demo-project.iam.gserviceaccount.com";
    let cancel = CancellationToken::new();
    let storage = gcp.storage.clone().with_rmw_policy(quick_rmw(3));
    let done = storage
        .add_bucket_bindings(
            bucket,
            &[
                ("roles/storage.objectAdmin", member),
                ("roles/storage.legacyBucketReader", member),
            ],
            &cancel,
        )
        .await
        .unwrap();
    assert!(done.has_binding("roles/storage.objectAdmin", member));
    assert!(done.has_binding("roles/storage.objectViewer", "user:other@example.com"));
    let now = gcp.storage.get_bucket_iam_policy(bucket).await.unwrap();
    assert_eq!(now.etag, done.etag);
    // Idempotent: a second grant writes nothing.
    let sets = journal(&sim, "storage", "buckets.setIamPolicy").await.len();
    storage
        .add_bucket_bindings(bucket, &[("roles/storage.objectAdmin", member)], &cancel)
        .await
        .unwrap();
    assert_eq!(
        journal(&sim, "storage", "buckets.setIamPolicy").await.len(),
        sets
    );
    let e = gcp
        .storage
        .get_bucket_iam_policy("no-such-bucket")
        .await
        .unwrap_err();
    assert!(e.is_not_found());
}

#[tokio::test]
async fn a_deleted_accounts_bucket_grants_stay_in_deleted_form() {
    let (_sim, gcp) = start_sim().await;
    let bucket = "deleted-member-bucket";
    plain_bucket(&gcp, bucket).await;
    let (sa, member) = service_account(&gcp, PROJECT, "kn-c2-nodes").await;
    let cancel = CancellationToken::new();
    let grant = [("roles/storage.objectAdmin", member.as_str())];
    let storage = gcp.storage.clone().with_rmw_policy(quick_rmw(3));
    storage
        .add_bucket_bindings(bucket, &grant, &cancel)
        .await
        .unwrap();
    gcp.iam
        .delete_service_account(PROJECT, &sa.email)
        .await
        .unwrap();
    let gone = format!("deleted:serviceAccount:{}?uid={}", sa.email, sa.unique_id);
    // The grant shows in the deleted form, and a read-modify-write keeps it.
    let other = [("roles/storage.objectViewer", "user:bob@example.com")];
    let after = storage
        .add_bucket_bindings(bucket, &other, &cancel)
        .await
        .unwrap();
    assert!(
        after.has_binding("roles/storage.objectAdmin", &gone),
        "{after:?}"
    );
    assert!(!after.has_binding("roles/storage.objectAdmin", &member));
    assert!(after.has_binding("roles/storage.objectViewer", "user:bob@example.com"));
}
