//! Team isolation and roles on provisioning: another team's cluster does not exist for
//! you (404); a VIEWER reads but cannot change.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn teams_cannot_see_or_touch_each_others_clusters_and_viewers_cannot_change() {
    let env = env().await;
    env.up_ok("ka", json!({"accelerator": "gpu-l4"})).await;
    let other = "bob@other.example";
    env.app.team(other, "other-team", &["other-proj"]).await;
    let path = cluster_path("ka");
    let pools = format!("{path}/nodePools");
    for r in [
        env.app.get(other, &path).await,
        env.app
            .put(other, &path, json!({"accelerator": "gpu-l4"}))
            .await,
        env.app.delete(other, &path).await,
        env.app.get(other, &format!("{path}/status")).await,
        env.app
            .post(other, &pools, json!({"accelerator": "l4"}))
            .await,
        env.app.get(other, &pools).await,
    ] {
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
        assert_eq!(r.reason(), "PROJECT_NOT_FOUND");
    }
    let list = env.app.get(other, "/v1/clusters").await.body;
    assert_eq!(list["clusters"], json!([]));
    let ops = env.app.get(other, "/v1/operations").await.body;
    assert_eq!(ops["operations"], json!([]));

    let viewer = "vera@example.com";
    env.app.member(OWNER, "ml-team", viewer, "VIEWER").await;
    assert_eq!(env.app.get(viewer, &path).await.status, StatusCode::OK);
    assert_eq!(
        env.app.get(viewer, &format!("{path}/status")).await.status,
        StatusCode::OK
    );
    for r in [
        env.app.put(viewer, &path, json!({})).await,
        env.app
            .put(
                viewer,
                &cluster_path("new-one"),
                json!({"accelerator": "cpu"}),
            )
            .await,
        env.app.delete(viewer, &path).await,
        env.app
            .post(viewer, &pools, json!({"accelerator": "l4"}))
            .await,
    ] {
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    }
    // A MEMBER can.
    let member = "max@example.com";
    env.app.member(OWNER, "ml-team", member, "MEMBER").await;
    let r = env
        .app
        .post(member, &pools, json!({"accelerator": "l4"}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["metadata"]["createdBy"], member);
}
