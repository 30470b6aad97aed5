//! Keyset lists read one index range per visible team and merge them (store::keyset):
//! the merged pages must be exactly the visible rows, in list order, once each, for a
//! member of several teams whose rows interleave with each other's and with rows they
//! may not see, for every filter that changes the statement, and for an admin.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use crate::common::{ADMIN, BOB, TestApp};
use crate::support::page_walk;

const ALICE: &str = "alice@example.com";
const MINE: [&str; 3] = ["team-a", "team-b", "team-c"];
const ALL: [&str; 4] = ["team-a", "team-b", "team-c", "team-z"];

/// Alice owns team-a..c, Bob owns team-z and team-bb (Alice is in neither).
async fn app() -> TestApp {
    let app = TestApp::spawn().await;
    for t in MINE {
        app.team(ALICE, t, &[]).await;
    }
    app.team(BOB, "team-z", &[]).await;
    app.team(BOB, "team-bb", &[]).await;
    app
}

/// Walk `path` with several page sizes; each walk must give `expect` exactly.
async fn walks(app: &TestApp, user: &str, path: &str, items: &str, expect: &[String]) {
    assert!(!expect.is_empty(), "{path}: nothing to list");
    for size in [1, 2, 3, 50] {
        let (_, keys) = page_walk(app, user, path, items, size, "name").await;
        assert_eq!(keys, expect, "{path} as {user}, pageSize {size}");
    }
}

struct Cluster {
    path: String,
    team: &'static str,
    deleted: bool,
}

#[tokio::test]
async fn cluster_pages_merge_the_teams_in_key_order() {
    let app = app().await;
    // Teams interleave inside each project and zone; every fifth record is DELETED
    //.
    let mut rows = Vec::new();
    for i in 0..36usize {
        let (project, zone) = (format!("p-{}", i % 3), ["zone-a", "zone-b"][i / 3 % 2]);
        rows.push(Cluster {
            path: format!("projects/{project}/zones/{zone}/clusters/c-{:02}", i % 13),
            team: ALL[i % 4],
            deleted: i % 5 == 0,
        });
    }
    for r in &rows {
        let p: Vec<&str> = r.path.split('/').collect();
        let state = if r.deleted { "DELETED" } else { "RUNNING" };
        sqlx::query(
            "INSERT INTO clusters (id, project_id, zone, name, team_id, state, created_by) \
             VALUES ($1, $2, $3, $4, $5, $6, 'x@example.com')",
        )
        .bind(Uuid::new_v4())
        .bind(p[1])
        .bind(p[3])
        .bind(p[5])
        .bind(r.team)
        .bind(state)
        .execute(&app.db)
        .await
        .expect("insert cluster");
    }
    let expect = |pick: &dyn Fn(&Cluster) -> bool| {
        let mut v: Vec<String> = rows
            .iter()
            .filter(|r| pick(r))
            .map(|r| r.path.clone())
            .collect();
        v.sort();
        v
    };
    let mine = |r: &Cluster| MINE.contains(&r.team);
    // Who lists, the list, and which clusters it holds.
    type Pick<'a> = &'a dyn Fn(&Cluster) -> bool;
    let cases: [(&str, &str, Pick); 6] = [
        (ALICE, "/v1/clusters", &|r| mine(r) && !r.deleted),
        (ALICE, "/v1/clusters?state=DELETED", &|r| {
            mine(r) && r.deleted
        }),
        (ALICE, "/v1/clusters?team=team-b&state=RUNNING", &|r| {
            r.team == "team-b" && !r.deleted
        }),
        (ADMIN, "/v1/clusters", &|r| !r.deleted),
        (ADMIN, "/v1/clusters?state=DELETED", &|r| r.deleted),
        (ADMIN, "/v1/clusters?team=team-z", &|r| {
            r.team == "team-z" && !r.deleted
        }),
    ];
    for (user, path, pick) in cases {
        walks(&app, user, path, "clusters", &expect(pick)).await;
    }
}

struct Op {
    id: Uuid,
    time: DateTime<Utc>,
    team: &'static str,
    done: bool,
    target: String,
}

#[tokio::test]
async fn operation_pages_merge_the_teams_newest_first() {
    let app = app().await;
    let base = Utc::now() - Duration::hours(1);
    // Pairs share a create_time (the id breaks the tie); teams interleave in time.
    let ops: Vec<Op> = (0..40i64)
        .map(|i| Op {
            id: Uuid::new_v4(),
            time: base - Duration::seconds(i / 2),
            team: ALL[(i % 4) as usize],
            done: i % 3 != 0,
            target: format!("projects/p/zones/z/clusters/c{}", i % 2),
        })
        .collect();
    for o in &ops {
        sqlx::query(
            "INSERT INTO operations (id, op_type, target, serial_key, team_id, created_by, \
                                     state, create_time, update_time, end_time) \
             VALUES ($1, 'NOOP', $2, $2, $3, 'x@example.com', $4, $5, $5, $6)",
        )
        .bind(o.id)
        .bind(&o.target)
        .bind(o.team)
        .bind(if o.done { "SUCCEEDED" } else { "QUEUED" })
        .bind(o.time)
        .bind(o.done.then_some(o.time))
        .execute(&app.db)
        .await
        .expect("insert operation");
    }
    let expect = |pick: &dyn Fn(&Op) -> bool| {
        let mut v: Vec<&Op> = ops.iter().filter(|o| pick(o)).collect();
        v.sort_by_key(|o| std::cmp::Reverse((o.time, o.id)));
        v.iter()
            .map(|o| format!("operations/{}", o.id))
            .collect::<Vec<_>>()
    };
    let mine = |o: &Op| MINE.contains(&o.team);
    let c1 = "projects/p/zones/z/clusters/c1";
    let cases: Vec<(&str, String, Vec<String>)> = vec![
        (ALICE, "/v1/operations".into(), expect(&|o| mine(o))),
        (
            ALICE,
            "/v1/operations?filter=done%3Dfalse".into(),
            expect(&|o| mine(o) && !o.done),
        ),
        (
            ALICE,
            "/v1/operations?filter=done%3Dtrue%20AND%20team%3Dteam-c".into(),
            expect(&|o| o.team == "team-c" && o.done),
        ),
        (
            ALICE,
            format!("/v1/operations?filter=target%3D%22{c1}%22"),
            expect(&|o| mine(o) && o.target == c1),
        ),
        (ADMIN, "/v1/operations".into(), expect(&|_| true)),
        (
            ADMIN,
            "/v1/operations?filter=done%3Dfalse".into(),
            expect(&|o| !o.done),
        ),
        (
            ADMIN,
            format!("/v1/operations?filter=target%3D%22{c1}%22"),
            expect(&|o| o.target == c1),
        ),
    ];
    for (user, path, want) in cases {
        walks(&app, user, &path, "operations", &want).await;
    }
}

#[tokio::test]
async fn team_pages_hold_the_callers_teams_only() {
    let app = app().await;
    let ids = |v: &[&str]| v.iter().map(|t| format!("teams/{t}")).collect::<Vec<_>>();
    walks(&app, ALICE, "/v1/teams", "teams", &ids(&MINE)).await;
    walks(
        &app,
        BOB,
        "/v1/teams",
        "teams",
        &ids(&["team-bb", "team-z"]),
    )
    .await;
    walks(
        &app,
        ADMIN,
        "/v1/teams",
        "teams",
        &ids(&["team-a", "team-b", "team-bb", "team-c", "team-z"]),
    )
    .await;
}
