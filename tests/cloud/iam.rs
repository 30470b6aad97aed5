//! IAM client against the simulator: service accounts and their IAM policies.

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::gcp::iam::service_account_email;
use kineticd::cloud::gcp::types::iam::{Binding, Policy};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::start_sim;
use crate::storage::simctl::{
    Want, arm, assert_first_grant, assert_not_found, assert_retried_once, assert_unknown_field,
    failed_with, journal, post_refused, quick_rmw, service_account,
};

const PROJECT: &str = "demo-project";

#[tokio::test]
async fn create_get_delete() {
    let (sim, gcp) = start_sim().await;
    let sa = gcp
        .iam
        .create_service_account(
            PROJECT,
            "kn-c1-nodes",
            "Kinetic c1 nodes",
            "Node pools of c1",
        )
        .await
        .unwrap();
    let email = "kn-c1-nodes@demo-project.iam.gserviceaccount.com";
    assert_eq!(sa.email, email);
    assert_eq!(service_account_email("kn-c1-nodes", PROJECT), email);
    assert_eq!(
        sa.name,
        format!("projects/{PROJECT}/serviceAccounts/{email}")
    );
    assert_eq!(sa.project_id, PROJECT);
    assert_eq!(sa.unique_id.len(), 21);
    assert_eq!(sa.display_name, "Kinetic c1 nodes");
    assert_eq!(sa.description, "Node pools of c1");
    let sent = journal(&sim, "iam", "serviceAccounts.create").await;
    assert_eq!(
        sent[0]["path"],
        "/iam/v1/projects/demo-project/serviceAccounts"
    );
    assert_eq!(
        sent[0]["body"],
        json!({"accountId": "kn-c1-nodes",
               "serviceAccount": {"displayName": "Kinetic c1 nodes", "description": "Node pools of c1"}})
    );

    assert_eq!(
        gcp.iam.get_service_account(PROJECT, email).await.unwrap(),
        sa
    );
    // By unique ID, and with the `-` project wildcard.
    assert_eq!(
        gcp.iam
            .get_service_account("-", &sa.unique_id)
            .await
            .unwrap(),
        sa
    );

    gcp.iam
        .delete_service_account(PROJECT, email)
        .await
        .unwrap();
    let e = gcp
        .iam
        .get_service_account(PROJECT, email)
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(e.status, "NOT_FOUND");
    assert_eq!(e.retry, RetryClass::Terminal);
    assert_not_found(gcp.iam.delete_service_account(PROJECT, email).await);
    // The account ID is free again.
    gcp.iam
        .create_service_account(PROJECT, "kn-c1-nodes", "", "")
        .await
        .unwrap();
}

#[tokio::test]
async fn duplicate_is_409_and_invalid_ids_are_400() {
    let (sim, gcp) = start_sim().await;
    gcp.iam
        .create_service_account(PROJECT, "kn-c1-builds", "b", "")
        .await
        .unwrap();
    let e = gcp
        .iam
        .create_service_account(PROJECT, "kn-c1-builds", "b", "")
        .await
        .unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert_eq!(e.status, "ALREADY_EXISTS");
    assert_eq!(e.retry, RetryClass::Terminal);
    // Another project may use the same account ID.
    gcp.iam
        .create_service_account("other-project", "kn-c1-builds", "b", "")
        .await
        .unwrap();

    // Checked by the client before any request...
    let before = journal(&sim, "iam", "serviceAccounts.create").await.len();
    for bad in [
        "short",
        "1starts-with-digit",
        "ends-with-dash-",
        "Upper-case-id",
        "x".repeat(31).as_str(),
    ] {
        let r = gcp.iam.create_service_account(PROJECT, bad, "", "").await;
        failed_with(r, 400, Want::Status("INVALID_ARGUMENT"), bad);
    }
    assert_eq!(
        journal(&sim, "iam", "serviceAccounts.create").await.len(),
        before
    );
    // ...and by the simulator, as IAM does.
    let body = post_refused(
        &sim,
        "/iam/v1/projects/demo-project/serviceAccounts",
        json!({"accountId": "bad_id!"}),
    )
    .await;
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
}

#[tokio::test]
async fn unknown_json_field_is_400() {
    let (sim, _gcp) = start_sim().await;
    assert_unknown_field(
        &sim,
        "/iam/v1/projects/demo-project/serviceAccounts",
        json!({"accountId": "kn-strict-sa", "serviceAccount": {"displayname": "x"}}),
        "displayname",
    )
    .await;
}

#[tokio::test]
async fn retryable_then_terminal_faults() {
    let (sim, gcp) = start_sim().await;
    let (sa, _) = service_account(&gcp, PROJECT, "kn-faulty-sa").await;
    arm(&sim, "iam", "serviceAccounts.get", "HTTP_503", 1).await;
    let e = gcp
        .iam
        .get_service_account(PROJECT, &sa.email)
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 503);
    assert!(e.is_retryable());
    gcp.iam
        .get_service_account(PROJECT, &sa.email)
        .await
        .unwrap();
    assert_retried_once(&sim, "iam", "serviceAccounts.get").await;

    arm(&sim, "iam", "serviceAccounts.create", "QUOTA_EXCEEDED", 1).await;
    let e = gcp
        .iam
        .create_service_account(PROJECT, "kn-quota-sa", "", "")
        .await
        .unwrap_err();
    assert_eq!((e.http_status, e.reason.as_str()), (403, "quotaExceeded"));
    assert_eq!(e.retry, RetryClass::Terminal);
    assert_not_found(
        gcp.iam
            .get_service_account(PROJECT, "kn-quota-sa@demo-project.iam.gserviceaccount.com")
            .await,
    );
}

#[tokio::test]
async fn service_account_policy_etags_and_bindings() {
    let (sim, gcp) = start_sim().await;
    let (sa, _) = service_account(&gcp, PROJECT, "kn-c1-nodes").await;
    let p = gcp
        .iam
        .get_service_account_iam_policy(PROJECT, &sa.email)
        .await
        .unwrap();
    assert_eq!(p.etag, "ACAB");
    assert!(p.bindings.is_empty());
    let got = journal(&sim, "iam", "serviceAccounts.getIamPolicy").await;
    assert_eq!(got[0]["query"], "options.requestedPolicyVersion=3");
    assert!(got[0]["path"].as_str().unwrap().ends_with(":getIamPolicy"));

    let wi = "serviceAccount:demo-project.svc.id.goog[default/kinetic]";
    let cancel = CancellationToken::new();
    let iam = gcp.iam.clone().with_rmw_policy(quick_rmw(3));
    let after = iam
        .add_service_account_bindings(
            PROJECT,
            &sa.email,
            &[("roles/iam.workloadIdentityUser", wi)],
            &cancel,
        )
        .await
        .unwrap();
    assert!(after.has_binding("roles/iam.workloadIdentityUser", wi));
    assert_eq!(after.version, Some(3));
    let (svc, set) = ("iam", "serviceAccounts.setIamPolicy");
    assert_first_grant(&sim, svc, set, "roles/iam.workloadIdentityUser", wi).await;

    // A stale etag is an etag conflict: 409 ABORTED, retryable, not "already exists".
    let e = gcp
        .iam
        .set_service_account_iam_policy(
            PROJECT,
            &sa.email,
            &Policy {
                etag: "ACAB".into(),
                ..Policy::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!((e.http_status, e.status.as_str()), (409, "ABORTED"));
    assert!(e.is_retryable());
    assert!(!e.is_already_exists());

    // Invalid policies are refused.
    let bad = Policy {
        bindings: vec![Binding {
            role: "owner".into(),
            members: vec![wi.into()],
            condition: None,
        }],
        ..Policy::default()
    };
    let e = gcp
        .iam
        .set_service_account_iam_policy(PROJECT, &sa.email, &bad)
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 400);

    let e = gcp
        .iam
        .get_service_account_iam_policy(PROJECT, "nobody-here@demo-project.iam.gserviceaccount.com")
        .await
        .unwrap_err();
    assert!(e.is_not_found());
}
