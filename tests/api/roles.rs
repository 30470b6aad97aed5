//! The role matrix: every team-scoped endpoint against every kind of caller.
//!
//! Each (endpoint, caller) pair runs against a fresh team so mutations cannot leak into
//! other rows; a refused request must leave the team and its members unchanged.

use reqwest::Method;
use serde_json::{Value, json};

use crate::clusters::add_pool;
use crate::common::{ADMIN, TestApp};
use crate::support::{expect_error, expect_not_found, meta};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Viewer,
    Member,
    Admin,
    Owner,
    Outsider,
    ServiceAdmin,
}

const CALLERS: [Who; 6] = [
    Who::Viewer,
    Who::Member,
    Who::Admin,
    Who::Owner,
    Who::Outsider,
    Who::ServiceAdmin,
];
const TARGET: &str = "target@example.com";
const NEWBIE: &str = "newbie@example.com";

impl Who {
    fn email(self) -> &'static str {
        match self {
            Who::Viewer => "viewer@example.com",
            Who::Member => "member@example.com",
            Who::Admin => "admin-role@example.com",
            Who::Owner => "owner@example.com",
            Who::Outsider => "outsider@example.com",
            Who::ServiceAdmin => ADMIN,
        }
    }

    fn role(self) -> &'static str {
        match self {
            Who::Viewer => "VIEWER",
            Who::Member => "MEMBER",
            Who::Admin => "ADMIN",
            Who::Owner => "OWNER",
            Who::Outsider | Who::ServiceAdmin => "",
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Exp {
    /// Success with this status.
    S(u16),
    /// An error: HTTP code, canonical status, reason.
    E(u16, &'static str, &'static str),
}
use Exp::{E, S};

const OK: Exp = S(200);
const GONE: Exp = S(204);
const DENIED: Exp = E(403, "PERMISSION_DENIED", "PERMISSION_DENIED");
const NO_TEAM: Exp = E(404, "NOT_FOUND", "TEAM_NOT_FOUND");
const NO_PROJECT: Exp = E(404, "NOT_FOUND", "PROJECT_NOT_FOUND");
const NO_MEMBER: Exp = E(404, "NOT_FOUND", "MEMBER_NOT_FOUND");
const LAST_OWNER: Exp = E(409, "FAILED_PRECONDITION", "LAST_OWNER");

/// One team with a viewer, member, admin, owner and a spare VIEWER (`TARGET`), a
/// project, a cluster and a pool.
struct Fixture {
    team: String,
    project: String,
}

impl Fixture {
    fn cluster(&self) -> String {
        format!(
            "/v1/projects/{}/zones/us-central1-a/clusters/kc",
            self.project
        )
    }
}

async fn fixture(app: &TestApp, n: usize) -> Fixture {
    let team = format!("team-{n}");
    let project = format!("project-{n:04}");
    app.team(Who::Owner.email(), &team, &[&project]).await;
    for who in [Who::Viewer, Who::Member, Who::Admin] {
        app.member(Who::Owner.email(), &team, who.email(), who.role())
            .await;
    }
    app.member(Who::Owner.email(), &team, TARGET, "VIEWER")
        .await;
    let c = app.cluster(&team, &project, "us-central1-a", "kc").await;
    add_pool(app, c.id, "gpu-l4-ab12").await;
    Fixture { team, project }
}

type Req = fn(&Fixture, &str) -> (Method, String, Option<Value>);

struct Case {
    name: &'static str,
    req: Req,
    /// Expected outcome for each of [`CALLERS`], in order.
    expect: [Exp; 6],
}

/// What a refused request must not change: the team and its member list.
async fn snapshot(app: &TestApp, f: &Fixture) -> (Value, Value) {
    let t = app.get(ADMIN, &format!("/v1/teams/{}", f.team)).await;
    let m = app
        .get(ADMIN, &format!("/v1/teams/{}/members", f.team))
        .await;
    (t.body, m.body)
}

async fn run(cases: &[Case]) {
    let app = TestApp::spawn().await;
    // The outsider is a member of a team of their own, just not of these.
    app.team(Who::Outsider.email(), "outsiders", &["outsider-project"])
        .await;
    let mut n = 0;
    let mut failures = Vec::new();
    for case in cases {
        for (who, want) in CALLERS.iter().zip(case.expect) {
            n += 1;
            let f = fixture(&app, n).await;
            let (method, path, body) = (case.req)(&f, who.email());
            let before = snapshot(&app, &f).await;
            let r = app.call(who.email(), method.clone(), &path, body).await;
            let got = match want {
                S(code) => r.status.as_u16() == code,
                E(code, _, reason) => r.status.as_u16() == code && r.reason() == reason,
            };
            if !got {
                failures.push(format!(
                    "{} as {who:?}: want {want:?}, got {} {}",
                    case.name, r.status, r.body
                ));
                continue;
            }
            if let E(code, status, reason) = want {
                expect_error(&r, code, status, reason);
                assert_eq!(
                    snapshot(&app, &f).await,
                    before,
                    "{} as {who:?} changed state",
                    case.name
                );
                if code == 403 {
                    assert_eq!(meta(&r, "role"), who.role(), "{} as {who:?}", case.name);
                    assert!(!meta(&r, "requiredRole").is_empty());
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "role matrix mismatches:\n{}",
        failures.join("\n")
    );
}

fn get(path: String) -> (Method, String, Option<Value>) {
    (Method::GET, path, None)
}

#[tokio::test]
async fn team_endpoints() {
    #[rustfmt::skip]
    let cases = [
        //                                                     VIEWER   MEMBER  ADMIN   OWNER   outsider  service admin
        Case { name: "get team", req: |f, _| get(format!("/v1/teams/{}", f.team)),
               expect: [OK,     OK,     OK,     OK,     NO_TEAM, OK] },
        Case { name: "rename team", req: |f, _| (Method::PATCH, format!("/v1/teams/{}", f.team), Some(json!({"displayName": "Renamed"}))),
               expect: [DENIED, DENIED, OK,     OK,     NO_TEAM, OK] },
        Case { name: "add project", req: |f, _| (Method::PATCH, format!("/v1/teams/{}", f.team), Some(json!({"projects": [f.project, format!("{}-x", f.project)]}))),
               expect: [DENIED, DENIED, OK,     OK,     NO_TEAM, OK] },
        Case { name: "delete team (has a cluster)", req: |f, _| (Method::DELETE, format!("/v1/teams/{}", f.team), None),
               expect: [DENIED, DENIED, DENIED, E(409, "FAILED_PRECONDITION", "TEAM_HAS_CLUSTERS"), NO_TEAM, E(409, "FAILED_PRECONDITION", "TEAM_HAS_CLUSTERS")] },
        Case { name: "delete unknown team", req: |_, _| (Method::DELETE, "/v1/teams/no-such-team".into(), None),
               expect: [NO_TEAM, NO_TEAM, NO_TEAM, NO_TEAM, NO_TEAM, NO_TEAM] },
    ];
    run(&cases).await;
}

#[tokio::test]
async fn delete_team_needs_owner() {
    // Same matrix on a team without clusters: only OWNER (and service admins) delete.
    let app = TestApp::spawn().await;
    app.team(Who::Outsider.email(), "outsiders", &[]).await;
    let want = [DENIED, DENIED, DENIED, GONE, NO_TEAM, GONE];
    for (i, (who, want)) in CALLERS.iter().zip(want).enumerate() {
        let team = format!("bare-{i}");
        app.team(Who::Owner.email(), &team, &[]).await;
        for w in [Who::Viewer, Who::Member, Who::Admin] {
            app.member(Who::Owner.email(), &team, w.email(), w.role())
                .await;
        }
        let r = app.delete(who.email(), &format!("/v1/teams/{team}")).await;
        match want {
            S(code) => {
                assert_eq!(r.status.as_u16(), code, "{who:?}: {:#}", r.body);
                let gone = app.get(ADMIN, &format!("/v1/teams/{team}")).await;
                expect_not_found(&gone, "TEAM_NOT_FOUND");
            }
            E(code, status, reason) => {
                expect_error(&r, code, status, reason);
                assert_eq!(
                    app.get(ADMIN, &format!("/v1/teams/{team}")).await.status,
                    200
                );
            }
        }
    }
}

#[tokio::test]
async fn member_endpoints() {
    #[rustfmt::skip]
    let cases = [
        //                                                     VIEWER   MEMBER  ADMIN   OWNER       outsider  service admin
        Case { name: "list members", req: |f, _| get(format!("/v1/teams/{}/members", f.team)),
               expect: [OK,     OK,     OK,     OK,         NO_TEAM, OK] },
        Case { name: "add a VIEWER", req: |f, _| (Method::PUT, format!("/v1/teams/{}/members/{NEWBIE}", f.team), Some(json!({"role": "VIEWER"}))),
               expect: [DENIED, DENIED, OK,     OK,         NO_TEAM, OK] },
        Case { name: "promote to ADMIN", req: |f, _| (Method::PUT, format!("/v1/teams/{}/members/{TARGET}", f.team), Some(json!({"role": "ADMIN"}))),
               expect: [DENIED, DENIED, OK,     OK,         NO_TEAM, OK] },
        Case { name: "promote self to ADMIN", req: |f, me| (Method::PUT, format!("/v1/teams/{}/members/{me}", f.team), Some(json!({"role": "ADMIN"}))),
               expect: [DENIED, DENIED, OK,     LAST_OWNER, NO_TEAM, OK] },
        Case { name: "grant OWNER", req: |f, _| (Method::PUT, format!("/v1/teams/{}/members/{NEWBIE}", f.team), Some(json!({"role": "OWNER"}))),
               expect: [DENIED, DENIED, DENIED, OK,         NO_TEAM, OK] },
        Case { name: "demote the only OWNER", req: |f, _| (Method::PUT, format!("/v1/teams/{}/members/owner@example.com", f.team), Some(json!({"role": "ADMIN"}))),
               expect: [DENIED, DENIED, DENIED, LAST_OWNER, NO_TEAM, LAST_OWNER] },
        Case { name: "remove a member", req: |f, _| (Method::DELETE, format!("/v1/teams/{}/members/{TARGET}", f.team), None),
               expect: [DENIED, DENIED, GONE,   GONE,       NO_TEAM, GONE] },
        Case { name: "remove self", req: |f, me| (Method::DELETE, format!("/v1/teams/{}/members/{me}", f.team), None),
               expect: [GONE,   GONE,   GONE,   LAST_OWNER, NO_TEAM, NO_MEMBER] },
        Case { name: "remove the only OWNER", req: |f, _| (Method::DELETE, format!("/v1/teams/{}/members/owner@example.com", f.team), None),
               expect: [DENIED, DENIED, DENIED, LAST_OWNER, NO_TEAM, LAST_OWNER] },
        Case { name: "remove a non-member", req: |f, _| (Method::DELETE, format!("/v1/teams/{}/members/{NEWBIE}", f.team), None),
               expect: [DENIED, DENIED, NO_MEMBER, NO_MEMBER, NO_TEAM, NO_MEMBER] },
    ];
    run(&cases).await;
}

#[tokio::test]
async fn cluster_endpoints() {
    #[rustfmt::skip]
    let cases = [
        //                                                     VIEWER MEMBER ADMIN OWNER outsider    service admin
        Case { name: "get cluster", req: |f, _| get(f.cluster()),
               expect: [OK, OK, OK, OK, NO_PROJECT, OK] },
        Case { name: "list project clusters", req: |f, _| get(format!("/v1/projects/{}/zones/-/clusters", f.project)),
               expect: [OK, OK, OK, OK, NO_PROJECT, OK] },
        Case { name: "list zone clusters", req: |f, _| get(format!("/v1/projects/{}/zones/us-central1-a/clusters", f.project)),
               expect: [OK, OK, OK, OK, NO_PROJECT, OK] },
        Case { name: "list team clusters", req: |f, _| get(format!("/v1/clusters?team={}", f.team)),
               expect: [OK, OK, OK, OK, NO_TEAM, OK] },
        Case { name: "list node pools", req: |f, _| get(format!("{}/nodePools", f.cluster())),
               expect: [OK, OK, OK, OK, NO_PROJECT, OK] },
        Case { name: "get node pool", req: |f, _| get(format!("{}/nodePools/gpu-l4-ab12", f.cluster())),
               expect: [OK, OK, OK, OK, NO_PROJECT, OK] },
    ];
    run(&cases).await;
}

#[tokio::test]
async fn reads_return_the_teams_resources() {
    // The 200s of the matrix carry the right data, whoever the reader is.
    let app = TestApp::spawn().await;
    let f = fixture(&app, 1).await;
    for who in [
        Who::Viewer,
        Who::Member,
        Who::Admin,
        Who::Owner,
        Who::ServiceAdmin,
    ] {
        let c = app.get(who.email(), &f.cluster()).await;
        assert_eq!(c.body["team"], "teams/team-1", "{who:?}");
        assert_eq!(c.body["nodePools"][0]["poolId"], "gpu-l4-ab12", "{who:?}");
        let list = app.get(who.email(), "/v1/clusters").await;
        assert_eq!(
            list.body["clusters"].as_array().unwrap().len(),
            1,
            "{who:?}"
        );
        let members = app.get(who.email(), "/v1/teams/team-1/members").await;
        assert_eq!(
            members.body["members"].as_array().unwrap().len(),
            5,
            "{who:?}"
        );
    }
    let list = app.get(Who::Outsider.email(), "/v1/clusters").await;
    assert_eq!(list.body["clusters"], json!([]));
}
