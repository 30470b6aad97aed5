//! Resource Manager client against the simulator: projects, project IAM policies,
//! etag conflicts and the read-modify-write helpers.

use std::sync::atomic::{AtomicU32, Ordering};

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::gcp::types::iam::Binding;
use kineticd::sim::gcp::resource_manager::OWNER;
use reqwest::Method;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::start_sim;
use crate::storage::simctl::{
    Want, arm, assert_retried_once, assert_statuses, assert_unknown_field, failed_with, journal,
    post_refused, quick_rmw, raw, service_account, statuses,
};

const PROJECT: &str = "demo-project";
const LOG_WRITER: &str = "roles/logging.logWriter";
/// The service and method the journal records a project policy write under.
const CRM: &str = "cloudresourcemanager";
const SET_POLICY: &str = "projects.setIamPolicy";

#[tokio::test]
async fn project_get_and_missing_projects() {
    let (_sim, gcp) = start_sim().await;
    let p = gcp.resource_manager.get_project(PROJECT).await.unwrap();
    assert_eq!(p.project_id, PROJECT);
    assert_eq!(p.state, "ACTIVE");
    let number = p.number().expect("projects/{number}");
    assert_eq!(number.to_string().len(), 12);
    // By number, once known.
    let again = gcp
        .resource_manager
        .get_project(&number.to_string())
        .await
        .unwrap();
    assert_eq!(again.project_id, PROJECT);
    // Google answers 403 "(or it may not exist)" for a project one cannot see.
    for missing in ["nope", "123456789"] {
        let e = gcp.resource_manager.get_project(missing).await.unwrap_err();
        assert_eq!(
            (e.http_status, e.status.as_str()),
            (403, "PERMISSION_DENIED"),
            "{e}"
        );
        assert!(e.message.contains("or it may not exist"));
        assert_eq!(e.retry, RetryClass::Terminal);
    }
    let e = gcp
        .resource_manager
        .get_iam_policy("nope")
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 403);
}

#[tokio::test]
async fn policy_read_and_stale_etag_conflict() {
    let (sim, gcp) = start_sim().await;
    let p = gcp.resource_manager.get_iam_policy(PROJECT).await.unwrap();
    assert!(p.has_binding("roles/owner", OWNER));
    assert!(!p.etag.is_empty());
    let sent = journal(&sim, "cloudresourcemanager", "projects.getIamPolicy").await;
    assert_eq!(sent[0]["httpMethod"], "POST");
    assert_eq!(
        sent[0]["path"],
        "/cloudresourcemanager/v3/projects/demo-project:getIamPolicy"
    );
    assert_eq!(
        sent[0]["body"],
        json!({"options": {"requestedPolicyVersion": 3}})
    );

    // A concurrent writer gets in first...
    let mut theirs = p.clone();
    theirs.add_binding(LOG_WRITER, "user:them@example.com");
    let rm = &gcp.resource_manager;
    let after = rm.set_iam_policy(PROJECT, &theirs).await.unwrap();
    assert_ne!(after.etag, p.etag);
    // ...so our write with the etag we read is refused.
    let mut ours = p.clone();
    ours.add_binding(LOG_WRITER, "user:us@example.com");
    let stale = rm.set_iam_policy(PROJECT, &ours).await;
    let e = failed_with(stale, 409, Want::Status("ABORTED"), "stale etag");
    assert!(e.message.contains("concurrent policy changes"));
    assert!(e.is_retryable());
    assert!(!e.is_already_exists());
    let sets = journal(&sim, CRM, SET_POLICY).await;
    assert_eq!(sets[1]["body"]["policy"]["etag"], json!(p.etag));
    assert_eq!(sets[1]["body"]["policy"]["version"], 3);

    // Redoing read-modify-write succeeds and keeps the other writer's grant.
    let cancel = CancellationToken::new();
    let done = gcp
        .resource_manager
        .add_bindings(PROJECT, &[(LOG_WRITER, "user:us@example.com")], &cancel)
        .await
        .unwrap();
    assert!(done.has_binding(LOG_WRITER, "user:us@example.com"));
    assert!(done.has_binding(LOG_WRITER, "user:them@example.com"));
    assert_eq!(done.version, Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_modify_write_survives_a_concurrent_writer() {
    let (sim, gcp) = start_sim().await;
    let rm = gcp.resource_manager.clone().with_rmw_policy(quick_rmw(5));
    let other = gcp.resource_manager.clone();
    let attempts = AtomicU32::new(0);
    let cancel = CancellationToken::new();
    let handle = tokio::runtime::Handle::current();
    let done = rm
        .modify_iam_policy(PROJECT, &cancel, |p| {
            // Between our read and our write, someone else changes the policy (once).
            if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                tokio::task::block_in_place(|| {
                    handle.block_on(async {
                        let mut q = other.get_iam_policy(PROJECT).await.unwrap();
                        q.add_binding("roles/viewer", "user:racer@example.com");
                        other.set_iam_policy(PROJECT, &q).await.unwrap();
                    })
                });
            }
            p.add_binding("roles/container.admin", "user:us@example.com")
        })
        .await
        .unwrap();
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert!(done.has_binding("roles/container.admin", "user:us@example.com"));
    assert!(done.has_binding("roles/viewer", "user:racer@example.com"));
    assert_statuses(&sim, CRM, SET_POLICY, &[200, 409, 200]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_grants_all_land() {
    let (sim, gcp) = start_sim().await;
    let rm = gcp.resource_manager.clone().with_rmw_policy(quick_rmw(30));
    let mut tasks = Vec::new();
    for i in 0..12 {
        let rm = rm.clone();
        tasks.push(tokio::spawn(async move {
            let member = format!("user:u{i}@example.com");
            rm.add_bindings(
                PROJECT,
                &[(LOG_WRITER, member.as_str())],
                &CancellationToken::new(),
            )
            .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let p = gcp.resource_manager.get_iam_policy(PROJECT).await.unwrap();
    for i in 0..12 {
        assert!(
            p.has_binding(LOG_WRITER, &format!("user:u{i}@example.com")),
            "u{i} lost"
        );
    }
    let st = statuses(&sim, CRM, SET_POLICY).await;
    assert_eq!(st.iter().filter(|s| **s == 200).count(), 12);
}

#[tokio::test]
async fn idempotent_grants_remove_and_deleted_accounts() {
    let (sim, gcp) = start_sim().await;
    let cancel = CancellationToken::new();
    let (sa, member) = service_account(&gcp, PROJECT, "kn-c1-nodes").await;
    let grants = [
        ("roles/logging.logWriter", member.as_str()),
        ("roles/monitoring.metricWriter", member.as_str()),
    ];
    gcp.resource_manager
        .add_bindings(PROJECT, &grants, &cancel)
        .await
        .unwrap();
    let sets = journal(&sim, CRM, SET_POLICY).await.len();
    let p = gcp
        .resource_manager
        .add_bindings(PROJECT, &grants, &cancel)
        .await
        .unwrap();
    assert_eq!(
        journal(&sim, CRM, SET_POLICY).await.len(),
        sets,
        "nothing to change: no write"
    );
    assert!(p.has_binding("roles/monitoring.metricWriter", &member));

    let p = gcp
        .resource_manager
        .remove_bindings(PROJECT, &grants[..1], &cancel)
        .await
        .unwrap();
    assert!(!p.has_binding("roles/logging.logWriter", &member));
    assert!(p.has_binding("roles/monitoring.metricWriter", &member));

    // Deleting the account leaves its grants in Google's `deleted:` form.
    gcp.iam
        .delete_service_account(PROJECT, &sa.email)
        .await
        .unwrap();
    let p = gcp.resource_manager.get_iam_policy(PROJECT).await.unwrap();
    let gone = format!("deleted:serviceAccount:{}?uid={}", sa.email, sa.unique_id);
    assert!(
        p.has_binding("roles/monitoring.metricWriter", &gone),
        "{p:?}"
    );
}

#[tokio::test]
async fn unknown_service_account_member_is_refused() {
    let (sim, gcp) = start_sim().await;
    let rm = gcp.resource_manager.clone().with_rmw_policy(quick_rmw(2));
    let ghost = "serviceAccount:ghost-account@demo-project.iam.gserviceaccount.com";
    let e = rm
        .add_bindings(PROJECT, &[(LOG_WRITER, ghost)], &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 400);
    assert!(e.message.contains("does not exist"), "{e}");
    // Retried briefly (IAM is eventually consistent), then given up.
    assert_statuses(&sim, CRM, SET_POLICY, &[400, 400]).await;
    // Conditions need version 3: the simulator refuses version 1, the client always
    // writes version 3.
    let mut p = gcp.resource_manager.get_iam_policy(PROJECT).await.unwrap();
    p.bindings.push(Binding {
        role: "roles/viewer".into(),
        members: vec!["user:a@example.com".into()],
        condition: Some(kineticd::cloud::gcp::types::iam::Expr {
            expression: "request.time < timestamp('2030-01-01T00:00:00Z')".into(),
            title: "expires".into(),
            ..Default::default()
        }),
    });
    p.version = Some(1);
    let (status, body) = raw(
        &sim,
        Method::POST,
        "/cloudresourcemanager/v3/projects/demo-project:setIamPolicy",
        Some(json!({ "policy": p })),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    let ok = gcp
        .resource_manager
        .set_iam_policy(PROJECT, &p)
        .await
        .unwrap();
    assert_eq!(ok.version, Some(3));
    assert_eq!(
        ok.bindings.iter().filter(|b| b.condition.is_some()).count(),
        1
    );
}

#[tokio::test]
async fn faults_retried_by_the_helper_or_terminal() {
    let (sim, gcp) = start_sim().await;
    let rm = gcp.resource_manager.clone().with_rmw_policy(quick_rmw(3));
    let cancel = CancellationToken::new();
    arm(&sim, CRM, SET_POLICY, "HTTP_503", 1).await;
    rm.add_bindings(PROJECT, &[(LOG_WRITER, "user:a@example.com")], &cancel)
        .await
        .unwrap();
    assert_retried_once(&sim, CRM, SET_POLICY).await;

    arm(&sim, "cloudresourcemanager", "projects.get", "HTTP_503", 1).await;
    let e = gcp.resource_manager.get_project(PROJECT).await.unwrap_err();
    assert!(e.is_retryable());
    gcp.resource_manager.get_project(PROJECT).await.unwrap();

    arm(
        &sim,
        "cloudresourcemanager",
        "projects.getIamPolicy",
        "QUOTA_EXCEEDED",
        1,
    )
    .await;
    let e = rm
        .add_bindings(PROJECT, &[(LOG_WRITER, "user:b@example.com")], &cancel)
        .await
        .unwrap_err();
    assert_eq!((e.http_status, e.reason.as_str()), (403, "quotaExceeded"));
    assert_eq!(e.retry, RetryClass::Terminal);

    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let e = rm
        .add_bindings(PROJECT, &[(LOG_WRITER, "user:c@example.com")], &cancelled)
        .await
        .unwrap_err();
    assert_eq!(e.status, "CANCELLED");
}

#[tokio::test]
async fn unknown_json_field_is_400() {
    let (sim, _gcp) = start_sim().await;
    assert_unknown_field(
        &sim,
        "/cloudresourcemanager/v3/projects/demo-project:setIamPolicy",
        json!({"policy": {"bindings": [], "etags": "x"}}),
        "etags",
    )
    .await;
    post_refused(
        &sim,
        "/cloudresourcemanager/v3/projects/demo-project:getIamPolicy",
        json!({"options": {"requestedPolicyVersion": 3, "x": 1}}),
    )
    .await;
}
