//! Auth and isolation for every route, driven by the OpenAPI document (issue 15).
//!
//! Every (method, path) of `openapi/kineticd.json` must have a row in [`ROUTES`] saying
//! what it is scoped to and why; a route added to the document without a row (or a row
//! whose route is gone) fails the test. Each route is then called, with its path
//! parameters filled with real seeded resources, against the real app in IAP mode:
//! - with no identity: 401 UNAUTHENTICATED (only the probes answer without one);
//! - as a signed-in non-member: 404 for team-scoped routes, and nothing of the team in
//!   the answers of the global ones;
//! - as a VIEWER of the team: 403 PERMISSION_DENIED on mutations, access on reads.
//!
//! Setup goes through a second app in dev-identity mode on the same database.

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use kineticd::auth::IAP_ISSUER;
use kineticd::config::Identity;
use reqwest::Method;
use serde_json::{Value, json};

use crate::clusters::add_pool;
use crate::common::iap_keys::{AUD, TestKey, new_key, now, sign};
use crate::common::{OUTSIDER, OWNER, Resp, TestApp, VIEWER, fresh_db};
use crate::support::{expect_error, iap_request};

/// A second VIEWER: the target of member mutations (a VIEWER may remove only itself).
const TARGET: &str = "target@example.com";
const TEAM: &str = "acme";
/// The seeded webhook's id.
const WEBHOOK: &str = "wh-5eed0001";
const PROJECT: &str = "acme-project";
/// Strings of the seeded team that must never appear in a non-member's answer.
const SECRETS: [&str; 3] = ["acme-project", "teams/acme", "gpu-l4-ab12"];

/// Who may call a route, and so what each caller must get.
#[derive(Clone, Copy, Debug)]
enum Scope {
    /// Probes: answer without any identity (the load balancer's health checks).
    Public,
    /// Needs an identity but no team: a non-member and a VIEWER both get `status`, and
    /// the answer holds nothing of teams they are not in.
    Caller { outsider: u16, viewer: u16 },
    /// A team's resource: non-member 404, VIEWER 403 on a mutation and access on a read.
    Team { mutation: bool },
}
use Scope::{Caller, Public, Team};

const READ: Scope = Team { mutation: false };
const MUTATION: Scope = Team { mutation: true };
/// Any signed-in caller gets the route's own answer (200).
const ANY_CALLER: Scope = Caller {
    outsider: 200,
    viewer: 200,
};
/// Per caller: another's profile is not found (404).
const ANOTHERS: Scope = Caller {
    outsider: 404,
    viewer: 404,
};

struct Route {
    method: &'static str,
    path: &'static str,
    scope: Scope,
    /// Why the route has this scope (for exceptions to "team-scoped").
    why: &'static str,
}

const fn r(method: &'static str, path: &'static str, scope: Scope, why: &'static str) -> Route {
    Route {
        method,
        path,
        scope,
        why,
    }
}

const CL: &str = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}";

/// Every route of the document. Add a row when you add a route.
#[rustfmt::skip]
const ROUTES: &[Route] = &[
    r("GET", "/healthz", Public, "liveness probe, no identity by design"),
    r("GET", "/readyz", Public, "readiness probe, no identity by design"),
    r("GET", "/metrics", Public, "Prometheus scrape, no identity by design (no team data in labels)"),
    r("GET", "/v1/me", ANY_CALLER, "the caller's own identity"),
    r("GET", "/v1/accelerators", ANY_CALLER, "the public accelerator catalog"),
    r("GET", "/v1/accelerators/{spec}", ANY_CALLER, "one entry of the public catalog"),
    r("GET", "/v1/clusters", ANY_CALLER, "lists only the clusters of the caller's teams"),
    r("GET", "/v1/events", Caller { outsider: 403, viewer: 403 }, "every team's audit trail: service admins only"),
    r("GET", "/v1/operations", ANY_CALLER, "lists only the operations of the caller's teams"),
    r("GET", "/v1/operations/{operation}", READ, "an operation of the team"),
    r("POST", "/v1/operations/{operation}:cancel", MUTATION, "cancelling another's operation needs MEMBER"),
    r("POST", "/v1/operations/{operation}:approve", MUTATION, "deciding an approval needs ADMIN"),
    r("POST", "/v1/operations/{operation}:reject", MUTATION, "deciding an approval needs ADMIN"),
    r("POST", "/v1/operations/{operation}:wait", READ, "a read that blocks; POST per AIP-151"),
    r("GET", "/v1/operations/{operation}:watch", READ, "a streamed read"),
    r("GET", "/v1/profiles", ANY_CALLER, "profiles are per caller: lists the caller's own"),
    r("GET", "/v1/profiles/{profile}", ANOTHERS, "per caller: another's profile is not found"),
    r("PUT", "/v1/profiles/{profile}", ANY_CALLER, "per caller: creates the caller's own profile, stale when its cluster is not visible"),
    r("DELETE", "/v1/profiles/{profile}", ANOTHERS, "per caller: another's profile is not found"),
    r("POST", "/v1/profiles/{profile}:activate", ANOTHERS, "per caller: another's profile is not found"),
    r("GET", "/v1/projects/{project}/zones/{zone}/clusters", READ, "the project belongs to the team"),
    r("GET", CL, READ, "a cluster of the team"),
    r("PUT", CL, MUTATION, "up: needs MEMBER"),
    r("DELETE", CL, MUTATION, "down: needs MEMBER"),
    r("GET", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/accelerators", READ, "a cluster of the team"),
    r("GET", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/capacity", READ, "a cluster of the team"),
    r("GET", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/credentials", READ, "a kubeconfig for a cluster of the team"),
    r("GET", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools", READ, "a cluster of the team"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools", MUTATION, "add a pool: needs MEMBER"),
    r("GET", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}", READ, "a pool of the team"),
    r("DELETE", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}", MUTATION, "remove a pool: needs MEMBER"),
    r("PATCH", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}", MUTATION, "resize: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:drill", MUTATION, "failover drill: needs MEMBER"),
    r("GET", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/status", READ, "a cluster of the team"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:previewApply", MUTATION, "the plan of up: as up, needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:previewDelete", MUTATION, "the plan of down: as down, needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools:previewCreate", MUTATION, "the plan of pool add: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:previewDelete", MUTATION, "the plan of pool remove: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:previewUpdate", MUTATION, "the plan of a resize: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:previewDrill", MUTATION, "the plan of a drill: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:checkWorkload", READ, "a read-only check; POST for its body"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:diagnose", READ, "read-only checks; POST per AIP-136"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:syncAccess", MUTATION, "converge IAM and RBAC: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:snooze", MUTATION, "postpone idle rules and the TTL: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:snooze", MUTATION, "postpone a pool's idle rule: needs MEMBER"),
    r("POST", "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:import", MUTATION, "record an unrecorded GKE pool: needs MEMBER"),
    r("GET", "/v1/teams/{team}:discoverClusters", READ, "what the team's projects hold unrecorded: a read"),
    r("GET", "/v1/teams", ANY_CALLER, "lists only the caller's teams"),
    r("POST", "/v1/teams", Caller { outsider: 201, viewer: 201 }, "anyone signed in may found a team"),
    r("GET", "/v1/teams/{team}", READ, "the team"),
    r("DELETE", "/v1/teams/{team}", MUTATION, "needs OWNER"),
    r("PATCH", "/v1/teams/{team}", MUTATION, "needs ADMIN"),
    r("GET", "/v1/teams/{team}/members", READ, "the team's members"),
    r("GET", "/v1/teams/{team}/policy", READ, "the team's policy: every member reads it"),
    r("PATCH", "/v1/teams/{team}/policy", MUTATION, "needs ADMIN"),
    r("GET", "/v1/teams/{team}/policy:evaluate", READ, "usage against the policy: every member reads it"),
    r("GET", "/v1/teams/{team}/usage", READ, "measured usage: every member reads it"),
    r("POST", "/v1/teams/{team}/placements:search", READ, "placement advice changes nothing: every member asks"),
    r("GET", "/v1/teams/{team}/events", READ, "the team's audit trail, for every member"),
    r("POST", "/v1/teams/{team}/webhooks", MUTATION, "adding a webhook needs ADMIN"),
    r("GET", "/v1/teams/{team}/webhooks", READ, "the team's webhooks (no secrets): every member"),
    r("GET", "/v1/teams/{team}/webhooks/{webhook}", READ, "a webhook of the team (no secret)"),
    r("DELETE", "/v1/teams/{team}/webhooks/{webhook}", MUTATION, "deleting a webhook needs ADMIN"),
    r("GET", "/v1/teams/{team}/webhooks/{webhook}/deliveries", READ, "a webhook's delivery log: every member"),
    r("PUT", "/v1/teams/{team}/members/{email}", MUTATION, "needs ADMIN"),
    r("DELETE", "/v1/teams/{team}/members/{email}", MUTATION, "needs ADMIN (or the member itself)"),
    r("POST", "/v1/testing/noopOperations", MUTATION, "test-only route; creates an operation for the team, needs MEMBER"),
];

/// The seeded resources the path parameters are filled with.
fn fill(template: &str, op: &str) -> String {
    template
        .replace("{spec}", "gpu-l4")
        .replace("{operation}", op)
        .replace("{profile}", "kc")
        .replace("{project}", PROJECT)
        .replace("{zone}", "us-central1-a")
        .replace("{cluster}", "kc")
        .replace("{pool}", "gpu-l4-ab12")
        .replace("{team}", TEAM)
        .replace("{webhook}", WEBHOOK)
        .replace("{email}", TARGET)
        + if template.ends_with(":wait") {
            "?timeout=1s"
        } else {
            ""
        }
}

/// A well-formed body, so that only the caller decides the answer.
fn body(method: &str, template: &str, who: &str) -> Option<Value> {
    let cluster = format!("projects/{PROJECT}/zones/us-central1-a/clusters/kc");
    Some(match (method, template.rsplit('/').next().unwrap_or("")) {
        ("POST", "teams") => json!({"teamId": format!("new-{}", who.split('@').next().unwrap())}),
        ("PATCH", "{team}") => json!({"displayName": "Renamed"}),
        ("PUT", "{email}") => json!({"role": "ADMIN"}),
        ("PUT", "{profile}") => json!({"cluster": cluster}),
        ("PUT", "{cluster}") => json!({"accelerator": "gpu-l4"}),
        ("POST", "nodePools" | "nodePools:previewCreate") => json!({"accelerator": "gpu-t4"}),
        ("POST", "{cluster}:previewApply") => json!({"accelerator": "gpu-l4"}),
        ("POST", "{pool}:previewUpdate") => json!({"minNodes": 0, "maxNodes": 3}),
        ("PATCH", "{pool}") => json!({"minNodes": 0, "maxNodes": 3}),
        ("PATCH", "policy") => json!({"maxClusters": 3}),
        ("POST", "{operation}:approve" | "{operation}:reject") => json!({"comment": "ok"}),
        ("POST", "{pool}:drill" | "{pool}:previewDrill") => json!({}),
        ("POST", "{cluster}:snooze" | "{pool}:snooze") => json!({"duration": "3600s"}),
        ("POST", "{cluster}:checkWorkload") => {
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {"containers": []}})
        }
        ("POST", "placements:search") => json!({"accelerator": "gpu-l4", "count": 1}),
        ("POST", "noopOperations") => json!({"team": TEAM, "steps": 1}),
        ("POST", "webhooks") => {
            json!({"url": "https://hooks.example.com/k", "events": ["OPERATION_FINISHED"]})
        }
        _ => return None,
    })
}

fn claims(email: &str) -> Value {
    let n = now();
    json!({"iss": IAP_ISSUER, "aud": AUD, "email": email, "sub": format!("accounts.google.com:{email}"), "iat": n, "exp": n + 600})
}

async fn jwks_server(key: &TestKey) -> String {
    let body = json!({"keys": [key.jwk.clone()]});
    let app = Router::new().route("/jwks", get(move || async move { axum::Json(body) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/jwks")
}

/// `method path` with an optional IAP assertion. Streams (`:watch`) are read for at most
/// a second: their status and first bytes are what counts.
async fn call(
    app: &TestApp,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Resp {
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    // The dev header must be ignored in IAP mode.
    let req = iap_request(app, method, path, OWNER, token, body);
    let resp = req.send().await.expect("a reply");
    if path.ends_with(":watch") && resp.status() == 200 {
        let status = resp.status();
        let headers = resp.headers().clone();
        let mut resp = resp;
        let first = tokio::time::timeout(Duration::from_secs(1), resp.chunk())
            .await
            .ok()
            .and_then(|c| c.ok().flatten())
            .unwrap_or_default();
        return Resp {
            status,
            body: Value::String(String::from_utf8_lossy(&first).into_owned()),
            headers,
        };
    }
    TestApp::read(resp).await
}

/// The (METHOD, path) pairs the app routes and documents: the published document's and
/// the development-only ones it leaves out.
fn documented_routes() -> Vec<(String, String)> {
    let (_, doc) = kineticd::api::openapi::router().split_for_parts();
    let doc: Value = serde_json::to_value(&doc).unwrap();
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                routes.push((method.to_uppercase(), path.clone()));
            }
        }
    }
    routes
}

#[test]
fn every_documented_route_has_a_row() {
    let documented = documented_routes();
    let missing: Vec<_> = documented
        .iter()
        .filter(|(m, p)| !ROUTES.iter().any(|r| r.method == m && r.path == p))
        .collect();
    assert!(
        missing.is_empty(),
        "routes in openapi/kineticd.json without a row in ROUTES (tests/api/auth_matrix.rs): {missing:?}"
    );
    let stale: Vec<_> = ROUTES
        .iter()
        .filter(|r| !documented.iter().any(|(m, p)| r.method == m && r.path == p))
        .map(|r| (r.method, r.path))
        .collect();
    assert!(
        stale.is_empty(),
        "rows for routes no longer documented: {stale:?}"
    );
    for r in ROUTES {
        assert!(!r.why.is_empty(), "{} {}: say why", r.method, r.path);
    }
}

#[tokio::test]
async fn every_route_refuses_strangers_and_viewers() {
    let (db, url) = fresh_db().await;
    let dev = TestApp::spawn_with(db.clone(), url.clone(), |s| s).await;
    let key = new_key("k1");
    let jwks_url = jwks_server(&key).await;
    let iap = TestApp::spawn_with(db, url, move |mut s| {
        s.identity = Identity::Iap {
            jwks_url,
            audience: AUD.to_owned(),
        };
        s
    })
    .await;

    // A team with an owner, two viewers, a project, a cluster with a pool, an operation
    // (cancelled, so reads of it end at once) and the owner's profile of the cluster.
    dev.team(OWNER, TEAM, &[PROJECT]).await;
    dev.member(OWNER, TEAM, VIEWER, "VIEWER").await;
    dev.member(OWNER, TEAM, TARGET, "VIEWER").await;
    let c = dev.cluster(TEAM, PROJECT, "us-central1-a", "kc").await;
    add_pool(&dev, c.id, "gpu-l4-ab12").await;
    let op = dev.noop(OWNER, json!({"team": TEAM, "steps": 1})).await;
    let op_id = op["name"]
        .as_str()
        .unwrap()
        .strip_prefix("operations/")
        .unwrap()
        .to_owned();
    let r = dev
        .op_action(OWNER, &format!("operations/{op_id}"), "cancel")
        .await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    let r = dev
        .put(
            OWNER,
            "/v1/profiles/kc",
            json!({"cluster": format!("projects/{PROJECT}/zones/us-central1-a/clusters/kc")}),
        )
        .await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    kineticd::store::webhooks::insert(
        &dev.db,
        &kineticd::store::webhooks::NewWebhook {
            team_id: TEAM,
            id: WEBHOOK,
            url: "https://hooks.example.com/seed",
            events: &["OPERATION_FINISHED".to_owned()],
            format: "JSON",
            secret: "whsec_seed",
            created_by: OWNER,
        },
    )
    .await
    .expect("seed webhook");
    // The outsider has a team of its own.
    dev.team(OUTSIDER, "outsiders", &["outsider-project"]).await;

    let outsider = sign(&key, &claims(OUTSIDER));
    let viewer = sign(&key, &claims(VIEWER));
    let mut failures = Vec::new();
    let mut calls = 0;
    for route in ROUTES {
        let path = fill(route.path, &op_id);
        let (m, t) = (route.method, route.path);

        // 1. No identity.
        let r = call(&iap, m, &path, None, body(m, t, "nobody@example.com")).await;
        calls += 1;
        match route.scope {
            Public if r.status != 200 => failures.push(format!(
                "{m} {path} without identity: want 200, got {} {}",
                r.status, r.body
            )),
            Public => {}
            _ if r.status != 401 || r.reason() != "TOKEN_MISSING" => failures.push(format!(
                "{m} {path} without identity: want 401 TOKEN_MISSING, got {} {}",
                r.status, r.body
            )),
            _ => expect_error(&r, 401, "UNAUTHENTICATED", "TOKEN_MISSING"),
        }
        if matches!(route.scope, Public) {
            continue;
        }

        // 2. A signed-in non-member; 3. a VIEWER of the team.
        for (who, email, token) in [
            ("non-member", OUTSIDER, &outsider),
            ("VIEWER", VIEWER, &viewer),
        ] {
            let r = call(&iap, m, &path, Some(token), body(m, t, email)).await;
            calls += 1;
            let ok = match (route.scope, who) {
                (Caller { outsider, .. }, "non-member") => r.status.as_u16() == outsider,
                (Caller { viewer, .. }, _) => r.status.as_u16() == viewer,
                (Team { .. }, "non-member") => {
                    r.status == 404 && r.reason().ends_with("_NOT_FOUND")
                }
                (Team { mutation: true }, _) => {
                    r.status == 403 && r.reason() == "PERMISSION_DENIED"
                }
                // A read the VIEWER is let through: not refused, not a server error.
                (Team { mutation: false }, _) => {
                    // (503: the live cloud read behind it; this app has no cloud to reach.)
                    ![401, 403, 404, 500].contains(&r.status.as_u16())
                }
                (Public, _) => unreachable!(),
            };
            if !ok {
                failures.push(format!(
                    "{m} {path} as {who} ({:?}: {}): got {} {}",
                    route.scope, route.why, r.status, r.body
                ));
            }
            if r.status == 403 {
                expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
            }
            // What a global route answers a non-member holds nothing of the team (errors
            // may echo the names the caller sent; the 404 says no more than "not yours").
            let own_profile = m == "PUT" && t == "/v1/profiles/{profile}";
            if who == "non-member" && r.status.is_success() && !own_profile {
                let text = r.body.to_string();
                for s in SECRETS.iter().filter(|s| text.contains(**s)) {
                    failures.push(format!("{m} {path} as non-member leaks {s:?}: {text}"));
                }
            }
            if who == "non-member" && own_profile && r.body["stale"] != true {
                // The caller's own pointer at a cluster it cannot see.
                failures.push(format!(
                    "a non-member's profile of the team's cluster is not stale: {}",
                    r.body
                ));
            }
            // Undo what a global route created, so later rows see the same seed.
            if m == "PUT" && t == "/v1/profiles/{profile}" && r.status == 200 {
                let d = call(&iap, "DELETE", &path, Some(token), None).await;
                assert_eq!(d.status, 204, "{:#}", d.body);
            }
        }
    }
    // Nothing a refused call did changed the seed.
    let team = dev.get(OWNER, &format!("/v1/teams/{TEAM}")).await;
    assert_eq!(team.status, 200, "{:#}", team.body);
    let members = dev.get(OWNER, &format!("/v1/teams/{TEAM}/members")).await;
    assert_eq!(
        members.body["members"].as_array().map(Vec::len),
        Some(3),
        "{:#}",
        members.body
    );
    let pool = dev
        .get(OWNER, &fill(&format!("{CL}/nodePools/{{pool}}"), &op_id))
        .await;
    assert_eq!(pool.status, 200, "{:#}", pool.body);
    assert!(
        failures.is_empty(),
        "{} of {calls} calls wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
