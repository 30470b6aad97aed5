//! The web console against the real app (real PostgreSQL, the simulator at speed 0,
//! workers in process), driven as a browser would: pages with their session and dev-user
//! cookies, forms posted with the token the page carries.
//!
//! Checks: each page renders for a member and is a 404 page for an outsider; a VIEWER's
//! mutation is a 403 page and changes nothing; a POST without a valid form token (or
//! marked cross-site) is refused and changes nothing; every console response carries the
//! CSP and security headers and the HTML has no inline script or style; assets have their
//! content types; `/` redirects; `up`, `pool add`, `pool remove` and `down` preview their
//! plan and cost and their confirm creates the operation the JSON API shows; every form
//! control has a label.

mod common;

use std::collections::BTreeMap;

use common::{OUTSIDER, OWNER, TestApp, VIEWER, test_worker_config};
use kineticd::ops::WorkerPool;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION};
use scraper::{Html, Selector};
use serde_json::{Value, json};

const PROJECT: &str = "ml-proj";
const ZONE: &str = "us-central1-a";
const TEAM: &str = "ml-team";

struct Env {
    app: TestApp,
    _sim: kineticd::sim::Sim,
    _workers: WorkerPool,
    /// Follows no redirects, so tests see them.
    http: reqwest::Client,
}

async fn env() -> Env {
    let (app, sim) = TestApp::spawn_sim().await;
    app.team(OWNER, TEAM, &[PROJECT]).await;
    app.member(OWNER, TEAM, VIEWER, "VIEWER").await;
    let workers = app.workers(test_worker_config(2));
    Env {
        app,
        _sim: sim,
        _workers: workers,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
    }
}

/// A response as a browser would see it.
#[derive(Debug)]
struct Page {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Page {
    fn html(&self) -> Html {
        Html::parse_document(&self.body)
    }

    /// The text of the first element matching `css` (panics if none).
    fn text(&self, css: &str) -> String {
        let sel = Selector::parse(css).unwrap();
        let doc = self.html();
        let el = doc
            .select(&sel)
            .next()
            .unwrap_or_else(|| panic!("no {css} in:\n{}", self.body));
        el.text().collect::<String>().trim().to_owned()
    }

    fn count(&self, css: &str) -> usize {
        self.html().select(&Selector::parse(css).unwrap()).count()
    }

    /// The fields of the form matching `css` (hidden ones included), as a browser posts them.
    fn form(&self, css: &str) -> (String, Vec<(String, String)>) {
        let doc = self.html();
        let form = doc
            .select(&Selector::parse(css).unwrap())
            .next()
            .unwrap_or_else(|| panic!("no form {css} in:\n{}", self.body));
        let action = form.value().attr("action").unwrap_or("").to_owned();
        let fields = form
            .select(&Selector::parse("input[name]").unwrap())
            .filter(|i| {
                i.value().attr("type") != Some("checkbox") || i.value().attr("checked").is_some()
            })
            .map(|i| {
                (
                    i.value().attr("name").unwrap().to_owned(),
                    i.value().attr("value").unwrap_or("on").to_owned(),
                )
            })
            .collect();
        (action, fields)
    }

    fn location(&self) -> String {
        self.headers
            .get(LOCATION)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    }

    #[track_caller]
    fn assert_status(&self, want: StatusCode) {
        assert_eq!(self.status, want, "{}", self.body);
    }
}

/// One browser: a session cookie and (dev mode) the acting user's cookie.
struct Browser<'a> {
    env: &'a Env,
    user: String,
    session: String,
}

impl<'a> Browser<'a> {
    fn new(env: &'a Env, user: &str) -> Browser<'a> {
        let bytes: [u8; 16] = rand::random();
        Browser {
            env,
            user: user.to_owned(),
            session: bytes.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    fn cookies(&self) -> String {
        format!(
            "kconsole_session={}; kconsole_dev_user={}",
            self.session, self.user
        )
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Page {
        let r = req.send().await.expect("request");
        Page {
            status: r.status(),
            headers: r.headers().clone(),
            body: r.text().await.expect("body"),
        }
    }

    async fn get(&self, path: &str) -> Page {
        let req = self
            .env
            .http
            .get(self.env.app.url_of(path))
            .header("cookie", self.cookies());
        self.send(req).await
    }

    /// GET `path`, asserting a 200.
    async fn get_ok(&self, path: &str) -> Page {
        let page = self.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}: {}", page.body);
        page
    }

    /// POST `fields` form-encoded (no token added: forms carry their own).
    async fn post_raw(
        &self,
        path: &str,
        fields: &[(String, String)],
        extra: &[(&str, &str)],
    ) -> Page {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let mut req = self
            .env
            .http
            .post(self.env.app.url_of(path))
            .header("cookie", self.cookies())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    /// This session's form token, read from a page as a browser would.
    async fn token(&self) -> String {
        let page = self.get_ok("/console/teams").await;
        let doc = page.html();
        let sel = Selector::parse("input[name=csrf]").unwrap();
        let token = doc.select(&sel).next().expect("a csrf field");
        token.value().attr("value").unwrap().to_owned()
    }

    /// POST `fields` plus this session's token.
    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut f: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        f.push(("csrf".into(), self.token().await));
        self.post_raw(path, &f, &[]).await
    }

    /// Submit the form matching `css` on `page`.
    async fn submit(&self, page: &Page, css: &str) -> Page {
        let (action, fields) = page.form(css);
        self.post_raw(&action, &fields, &[]).await
    }
}

fn cluster_page(name: &str) -> String {
    format!("/console/clusters/{PROJECT}/{ZONE}/{name}")
}

fn up_preview(name: &str, accelerator: &str, min_nodes: u32) -> String {
    format!(
        "/console/up?preview=1&project={PROJECT}&zone={ZONE}&cluster={name}&accelerator={accelerator}&minNodes={min_nodes}"
    )
}

/// The operation id a confirm redirected to.
fn operation_of(page: &Page) -> String {
    page.assert_status(StatusCode::SEE_OTHER);
    page.location()
        .strip_prefix("/console/operations/")
        .unwrap_or_else(|| panic!("not an operation: {}", page.location()))
        .to_owned()
}

/// The id of a finished operation (`name` without `operations/`).
fn op_id(done: &Value) -> String {
    let name = done["name"].as_str().expect("operation name");
    name.strip_prefix("operations/")
        .expect("operations/ prefix")
        .to_owned()
}

/// An [`env`] with cluster `kc` up through the console; the id of its `up` operation.
async fn env_kc_up() -> (Env, String) {
    let env = env().await;
    let done = console_up(&env, "kc").await;
    let id = op_id(&done);
    (env, id)
}

/// Cluster `kc` as the JSON API shows it to OWNER.
async fn kc_record(env: &Env) -> Value {
    let path = format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/kc");
    env.app.get(OWNER, &path).await.body
}

/// Preview and confirm an `up` as OWNER; the finished operation (JSON API).
async fn console_up(env: &Env, name: &str) -> Value {
    let b = Browser::new(env, OWNER);
    let preview = b.get_ok(&up_preview(name, "gpu-l4", 1)).await;
    let id = operation_of(&b.submit(&preview, "[data-testid=confirm-form]").await);
    let done = env.app.wait_done(OWNER, &format!("operations/{id}")).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    done
}

#[tokio::test]
async fn up_preview_shows_the_plan_and_cost_and_confirm_runs_it_with_its_request_id() {
    let env = env().await;
    let b = Browser::new(&env, OWNER);
    let preview = b.get_ok(&up_preview("kc", "gpu-l4", 1)).await;
    assert!(
        preview.count("[data-testid=plan-action]") > 3,
        "{}",
        preview.body
    );
    assert!(
        preview.count("[data-testid=plan-action][data-action=CREATE]") > 0,
        "{}",
        preview.body
    );
    let cost = preview.text("[data-testid=plan-cost]");
    assert!(
        cost.contains("/h") && cost.chars().any(|c| c.is_ascii_digit()),
        "{cost}"
    );
    // The preview changed nothing.
    let ops = env.app.get(OWNER, "/v1/operations").await.body;
    assert_eq!(ops["operations"], json!([]), "{ops}");
    let (action, fields) = preview.form("[data-testid=confirm-form]");
    assert_eq!(action, "/console/up");
    let request_id = fields
        .iter()
        .find(|(k, _)| k == "requestId")
        .unwrap()
        .1
        .clone();
    let id = operation_of(&b.post_raw(&action, &fields, &[]).await);
    let op = env.app.get(OWNER, &format!("/v1/operations/{id}")).await;
    assert_eq!(op.status, StatusCode::OK, "{}", op.body);
    assert_eq!(op.body["metadata"]["type"], "UP_CLUSTER");
    assert_eq!(op.body["metadata"]["requestId"], request_id.as_str());
    assert_eq!(
        op.body["metadata"]["target"],
        format!("projects/{PROJECT}/zones/{ZONE}/clusters/kc")
    );
    // Confirming twice (a double click) is the same operation.
    let again = operation_of(&b.post_raw(&action, &fields, &[]).await);
    assert_eq!(again, id);
    let done = env.app.wait_done(OWNER, &format!("operations/{id}")).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    // The operation page shows the state and one timeline bar per step.
    let page = b.get_ok(&format!("/console/operations/{id}")).await;
    assert_eq!(page.text("[data-testid=op-state]"), "SUCCEEDED");
    let steps = done["metadata"]["progress"]["steps"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(page.count("[data-testid=step-bar]"), steps);
    assert_eq!(page.count("[data-testid=cancel-button]"), 0);
    let live = b.get_ok(&format!("/console/operations/{id}/live")).await;
    assert_eq!(live.text("[data-testid=op-done]"), "true");
}

#[tokio::test]
async fn pages_render_for_members_with_their_content() {
    let (env, op_id) = env_kc_up().await;
    let cluster = kc_record(&env).await;
    let pool = cluster["nodePools"][0]["poolId"]
        .as_str()
        .unwrap()
        .to_owned();
    for user in [OWNER, VIEWER] {
        let b = Browser::new(&env, user);
        let home = b.get_ok("/console/").await;
        assert_eq!(home.text("[data-testid=current-user]"), user);
        let row = format!("[data-testid=cluster-row][data-cluster=\"{PROJECT}/{ZONE}/kc\"]");
        assert_eq!(home.count(&row), 1, "{}", home.body);
        assert!(home.text(&row).contains("gpu-l4"), "{}", home.text(&row));
        assert!(home.text(&row).contains("RUNNING"), "{}", home.text(&row));
        assert_eq!(home.count(&format!("[data-team={TEAM}]")), 1);

        let page = b.get_ok(&cluster_page("kc")).await;
        assert_eq!(page.text("[data-testid=cluster-state]"), "RUNNING");
        assert_eq!(
            page.count(&format!("[data-testid=pool-row][data-pool=\"{pool}\"]")),
            1
        );
        assert_eq!(page.count("[data-testid=capacity]"), 1);
        assert_eq!(
            page.count("[data-testid=capacity-error]"),
            0,
            "{}",
            page.body
        );
        assert_eq!(
            page.count(&format!(
                "[data-testid=capacity-pool][data-pool=\"{pool}\"]"
            )),
            1,
            "{}",
            page.body
        );
        assert_eq!(page.count("[data-testid=status-error]"), 0, "{}", page.body);
        // RUNNING: "Connect" shows the commands that write a kubeconfig.
        assert_eq!(
            page.count("details[data-testid=connect]"),
            1,
            "{}",
            page.body
        );
        assert_eq!(
            page.text("[data-testid=connect-gcloud]"),
            format!(
                "gcloud container clusters get-credentials kc --zone {ZONE} --project {PROJECT}"
            )
        );
        assert!(
            page.text("[data-testid=connect-kn]").starts_with(&format!(
                "kn kubeconfig projects/{PROJECT}/zones/{ZONE}/clusters/kc"
            )),
            "{}",
            page.body
        );
        assert!(
            page.text("[data-testid=connect-curl]").contains(&format!(
                "/v1/projects/{PROJECT}/zones/{ZONE}/clusters/kc/credentials"
            )),
            "{}",
            page.body
        );

        let op = b.get_ok(&format!("/console/operations/{op_id}")).await;
        assert_eq!(op.text("[data-testid=op-type]"), "UP_CLUSTER");

        let team = b.get_ok(&format!("/console/teams/{TEAM}")).await;
        assert_eq!(
            team.count(&format!(
                "[data-testid=member-row][data-email=\"{VIEWER}\"]"
            )),
            1
        );
        // Only ADMIN+ get the role forms.
        let forms = team.count("[data-testid=member-role-form]");
        assert_eq!(forms > 0, user == OWNER, "{user}: {forms} role forms");

        let teams = b.get_ok("/console/teams").await;
        assert_eq!(
            teams.count(&format!("[data-testid=team-row][data-team={TEAM}]")),
            1
        );

        let acc = b.get_ok("/console/accelerators").await;
        let l4 = acc.text("[data-testid=accelerator-row][data-accelerator=gpu-l4]");
        assert!(l4.contains("/h"), "{l4}");
    }
}

#[tokio::test]
async fn outsiders_get_404_pages_for_team_cluster_and_operation() {
    let (env, op_id) = env_kc_up().await;
    let b = Browser::new(&env, OUTSIDER);
    for path in [
        format!("/console/teams/{TEAM}"),
        cluster_page("kc"),
        format!("{}/pools/add", cluster_page("kc")),
        format!("{}/down", cluster_page("kc")),
        format!("/console/operations/{op_id}"),
        format!("/console/operations/{op_id}/live"),
        format!("/console/operations/{op_id}/events"),
        "/console/no-such-page".to_owned(),
    ] {
        let page = b.get(&path).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{path}: {}", page.body);
        let ctype = page.headers["content-type"].to_str().unwrap();
        assert!(ctype.starts_with("text/html"), "{path}: {ctype}");
        assert_eq!(page.count("[data-testid=error-page]"), 1, "{path}");
        assert!(!page.text("[data-testid=error-reason]").is_empty());
    }
    // Nothing of the team shows on the outsider's home.
    let home = b.get_ok("/console/").await;
    assert_eq!(home.count("[data-testid=cluster-row]"), 0);
    assert!(!home.body.contains(TEAM));
}

#[tokio::test]
async fn a_viewer_submitting_a_mutation_gets_a_403_page_and_nothing_changes() {
    let env = env().await;
    let b = Browser::new(&env, VIEWER);
    // The preview itself says 403 (validateOnly checks the role too).
    let preview = b.get(&up_preview("kv", "gpu-l4", 0)).await;
    preview.assert_status(StatusCode::FORBIDDEN);
    assert_eq!(
        preview.text("[data-testid=form-error-reason]"),
        "PERMISSION_DENIED"
    );
    let fields = [
        ("project", PROJECT),
        ("zone", ZONE),
        ("cluster", "kv"),
        ("accelerator", "gpu-l4"),
        ("requestId", "viewer-try-1"),
    ];
    let page = b.post("/console/up", &fields).await;
    page.assert_status(StatusCode::FORBIDDEN);
    assert_eq!(page.text("[data-testid=error-reason]"), "PERMISSION_DENIED");
    let page = b
        .post(
            &format!("/console/teams/{TEAM}/members"),
            &[("email", VIEWER), ("role", "OWNER")],
        )
        .await;
    page.assert_status(StatusCode::FORBIDDEN);
    let ops = env.app.get(OWNER, "/v1/operations").await.body;
    assert_eq!(ops["operations"], json!([]), "{ops}");
    let members = env
        .app
        .get(OWNER, &format!("/v1/teams/{TEAM}/members"))
        .await
        .body;
    let viewer = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == VIEWER)
        .unwrap();
    assert_eq!(viewer["role"], "VIEWER");
}

#[tokio::test]
async fn posts_without_the_session_token_are_refused_and_change_nothing() {
    let env = env().await;
    let b = Browser::new(&env, OWNER);
    let create = |id: &str| {
        vec![
            ("teamId".to_owned(), id.to_owned()),
            ("projects".to_owned(), String::new()),
        ]
    };
    // No token at all.
    let r = b.post_raw("/console/teams", &create("no-token"), &[]).await;
    r.assert_status(StatusCode::FORBIDDEN);
    assert_eq!(r.text("[data-testid=error-reason]"), "CSRF_CHECK_FAILED");
    // Another session's token (a page fetched by someone else, or earlier).
    let other = Browser::new(&env, OWNER).token().await;
    let mut f = create("other-session");
    f.push(("csrf".into(), other));
    b.post_raw("/console/teams", &f, &[])
        .await
        .assert_status(StatusCode::FORBIDDEN);
    // Another user's token in this session.
    let mut as_viewer = Browser::new(&env, VIEWER);
    as_viewer.session = b.session.clone();
    let mut f = create("other-user");
    f.push(("csrf".into(), as_viewer.token().await));
    b.post_raw("/console/teams", &f, &[])
        .await
        .assert_status(StatusCode::FORBIDDEN);
    // The right token, but the browser says the form came from another site.
    let token = b.token().await;
    let mut f = create("cross-site");
    f.push(("csrf".into(), token.clone()));
    b.post_raw("/console/teams", &f, &[("sec-fetch-site", "cross-site")])
        .await
        .assert_status(StatusCode::FORBIDDEN);
    b.post_raw("/console/teams", &f, &[("origin", "https://evil.example")])
        .await
        .assert_status(StatusCode::FORBIDDEN);
    // An opaque `Origin: null` is refused unless the browser itself says same-origin.
    b.post_raw("/console/teams", &f, &[("origin", "null")])
        .await
        .assert_status(StatusCode::FORBIDDEN);
    // No session cookie at all: the token cannot match.
    let r = env
        .http
        .post(env.app.url_of("/console/teams"))
        .header("cookie", format!("kconsole_dev_user={OWNER}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("teamId=no-cookie&csrf={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    for id in [
        "no-token",
        "other-session",
        "other-user",
        "cross-site",
        "no-cookie",
    ] {
        let r = env.app.get(ADMIN_USER, &format!("/v1/teams/{id}")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{id} was created");
    }
    // With its token the same form works, and GET never changes anything.
    let mut f = create("with-token");
    f.push(("csrf".into(), token));
    let r = b
        .post_raw("/console/teams", &f, &[("origin", &env.app.url_of(""))])
        .await;
    r.assert_status(StatusCode::SEE_OTHER);
    assert_eq!(r.location(), "/console/teams/with-token");
    // What Chromium sends for our own form under a strict referrer policy: accepted.
    let mut f = create("opaque-origin");
    f.push(("csrf".into(), b.token().await));
    let r = b
        .post_raw(
            "/console/teams",
            &f,
            &[("origin", "null"), ("sec-fetch-site", "same-origin")],
        )
        .await;
    r.assert_status(StatusCode::SEE_OTHER);
    let r = env.app.get(OWNER, "/v1/teams/with-token").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    b.get("/console/teams?teamId=by-get")
        .await
        .assert_status(StatusCode::OK);
    let r = env.app.get(ADMIN_USER, "/v1/teams/by-get").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

const ADMIN_USER: &str = common::ADMIN;

#[tokio::test]
async fn every_console_response_carries_the_csp_and_security_headers() {
    let (env, op) = env_kc_up().await;
    let b = Browser::new(&env, OWNER);
    let pool = kc_record(&env).await["nodePools"][0]["poolId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut pages = vec![
        b.get("/").await,
        b.get("/console").await,
        b.get("/console/").await,
        b.get("/console/teams").await,
        b.get(&format!("/console/teams/{TEAM}")).await,
        b.get("/console/accelerators").await,
        b.get("/console/up").await,
        b.get(&up_preview("k2", "gpu-l4", 0)).await,
        b.get(&cluster_page("kc")).await,
        b.get(&format!(
            "{}/pools/add?preview=1&accelerator=gpu-t4",
            cluster_page("kc")
        ))
        .await,
        b.get(&format!("{}/pools/{pool}/remove", cluster_page("kc")))
            .await,
        b.get(&format!("{}/down", cluster_page("kc"))).await,
        b.get(&format!("/console/operations/{op}")).await,
        b.get(&format!("/console/operations/{op}/live")).await,
        b.get("/console/assets/console.css").await,
        b.get("/console/assets/console.js").await,
        b.get("/console/nothing").await,
        b.get("/console/teams/nope").await,
        b.post_raw("/console/teams", &[], &[]).await,
    ];
    pages.push(b.post("/console/teams", &[("teamId", "hdr-team")]).await);
    for p in &pages {
        let h = |name: &str| {
            p.headers
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_else(|| panic!("no {name} on {} {:?}", p.status, p.headers))
        };
        let csp = h("content-security-policy");
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ] {
            assert!(csp.contains(directive), "{csp}");
        }
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(h("x-content-type-options"), "nosniff");
        assert_eq!(h("referrer-policy"), "same-origin");
        assert!(p.headers.get("access-control-allow-origin").is_none());
        // No inline script or style for the CSP to block.
        let doc = p.html();
        for s in doc.select(&Selector::parse("script").unwrap()) {
            assert!(
                s.value().attr("src").is_some(),
                "inline script in {}",
                p.body
            );
        }
        assert_eq!(p.count("style"), 0, "{}", p.body);
        assert_eq!(p.count("[style]"), 0, "{}", p.body);
        assert_eq!(p.count("[onclick], [onload], [onsubmit]"), 0, "{}", p.body);
    }
}

#[tokio::test]
async fn assets_are_served_with_their_content_types_and_root_redirects() {
    let env = env().await;
    let b = Browser::new(&env, OWNER);
    let css = b.get_ok("/console/assets/console.css").await;
    assert_eq!(css.headers["content-type"], "text/css; charset=utf-8");
    assert!(css.body.contains(":focus-visible"));
    assert!(
        css.headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age=")
    );
    let js = b.get_ok("/console/assets/console.js").await;
    assert_eq!(js.headers["content-type"], "text/javascript; charset=utf-8");
    assert!(js.body.contains("EventSource"));
    let missing = b.get("/console/assets/secrets.txt").await;
    missing.assert_status(StatusCode::NOT_FOUND);
    // Every page links exactly these assets.
    let home = b.get("/console/").await;
    assert_eq!(
        home.count("link[rel=stylesheet][href^=\"/console/assets/console.css\"]"),
        1
    );
    assert_eq!(home.count("script[src^=\"/console/assets/console.js\"]"), 1);
    assert_eq!(home.count("meta[name=viewport]"), 1);
    for from in ["/", "/console"] {
        let r = b.get(from).await;
        assert!(r.status.is_redirection(), "{from}: {}", r.status);
        assert_eq!(r.location(), "/console/", "{from}");
    }
    // The JSON API is untouched.
    let r = env.app.get(OWNER, "/v1/me").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["email"], OWNER);
}

#[tokio::test]
async fn the_dev_user_switcher_changes_who_acts() {
    let env = env().await;
    let b = Browser::new(&env, OWNER);
    let token = b.token().await;
    let fields = vec![
        ("csrf".to_owned(), token),
        ("user".to_owned(), VIEWER.to_owned()),
        ("back".to_owned(), "/console/teams".to_owned()),
    ];
    let r = b.post_raw("/console/dev/user", &fields, &[]).await;
    r.assert_status(StatusCode::SEE_OTHER);
    assert_eq!(r.location(), "/console/teams");
    let cookie = r.headers["set-cookie"].to_str().unwrap();
    assert!(
        cookie.starts_with(&format!("kconsole_dev_user={VIEWER};")),
        "{cookie}"
    );
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let as_viewer = Browser {
        env: &env,
        user: VIEWER.to_owned(),
        session: b.session.clone(),
    };
    let home = as_viewer.get("/console/").await;
    assert_eq!(home.text("[data-testid=current-user]"), VIEWER);
    // Not an open redirect, and not a way to smuggle a cookie.
    let mut f = fields.clone();
    f[2].1 = "https://evil.example/".into();
    let r = b.post_raw("/console/dev/user", &f, &[]).await;
    assert_eq!(r.location(), "/console/");
    let mut f = fields;
    f[1].1 = "a;b@x.io".into();
    b.post_raw("/console/dev/user", &f, &[])
        .await
        .assert_status(StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn pool_add_remove_and_down_preview_then_run_from_the_console() {
    let env = env().await;
    console_up(&env, "kc").await;
    let b = Browser::new(&env, OWNER);
    let base = cluster_page("kc");
    // Pool add: preview with plan and cost, then confirm.
    let preview = b
        .get(&format!(
            "{base}/pools/add?preview=1&accelerator=gpu-t4&minNodes=0"
        ))
        .await;
    preview.assert_status(StatusCode::OK);
    assert!(
        preview.count("[data-testid=plan-action][data-action=CREATE]") > 0,
        "{}",
        preview.body
    );
    assert!(preview.text("[data-testid=plan-cost]").contains("/h"));
    let id = operation_of(&b.submit(&preview, "[data-testid=confirm-form]").await);
    let done = env.app.wait_done(OWNER, &format!("operations/{id}")).await;
    assert_eq!(done["metadata"]["type"], "ADD_NODE_POOL");
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let cluster = kc_record(&env).await;
    let t4 = cluster["nodePools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["accelerator"] == "gpu-t4")
        .expect("the new pool")["poolId"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = b.get(&base).await;
    assert_eq!(
        page.count(&format!("[data-testid=pool-row][data-pool=\"{t4}\"]")),
        1
    );
    // Pool remove: confirm page with the plan, then run.
    let confirm = b.get_ok(&format!("{base}/pools/{t4}/remove")).await;
    assert!(
        confirm.count("[data-testid=plan-action][data-action=DELETE]") > 0,
        "{}",
        confirm.body
    );
    let id = operation_of(&b.submit(&confirm, "[data-testid=confirm-form]").await);
    let done = env.app.wait_done(OWNER, &format!("operations/{id}")).await;
    assert_eq!(done["metadata"]["type"], "REMOVE_NODE_POOL");
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    // Down.
    let confirm = b.get_ok(&format!("{base}/down")).await;
    assert!(confirm.count("[data-testid=plan-action][data-action=DELETE]") > 0);
    let id = operation_of(&b.submit(&confirm, "[data-testid=confirm-form]").await);
    let done = env.app.wait_done(OWNER, &format!("operations/{id}")).await;
    assert_eq!(done["metadata"]["type"], "DOWN_CLUSTER");
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    // A DELETED cluster has no credentials: no "Connect".
    let page = b.get_ok(&base).await;
    assert_eq!(page.text("[data-testid=cluster-state]"), "DELETED");
    assert_eq!(page.count("[data-testid=connect]"), 0, "{}", page.body);
}

/// Every input, select and textarea (hidden inputs aside) has a `<label for>`, a
/// wrapping label, or an `aria-label`; every button has text.
fn unlabelled(page: &Page) -> Vec<String> {
    let doc = page.html();
    let labels: BTreeMap<String, ()> = doc
        .select(&Selector::parse("label[for]").unwrap())
        .map(|l| (l.value().attr("for").unwrap().to_owned(), ()))
        .collect();
    let mut bad = Vec::new();
    for el in doc.select(&Selector::parse("input, select, textarea").unwrap()) {
        let v = el.value();
        if v.attr("type") == Some("hidden") {
            continue;
        }
        let by_for = v.attr("id").is_some_and(|id| labels.contains_key(id));
        let by_aria = v.attr("aria-label").is_some_and(|a| !a.trim().is_empty());
        let wrapped = el
            .ancestors()
            .any(|a| a.value().as_element().is_some_and(|e| e.name() == "label"));
        if !(by_for || by_aria || wrapped) {
            bad.push(el.html());
        }
    }
    for el in doc.select(&Selector::parse("button").unwrap()) {
        if el.text().collect::<String>().trim().is_empty()
            && el.value().attr("aria-label").is_none()
        {
            bad.push(el.html());
        }
    }
    bad
}

#[tokio::test]
async fn every_control_has_a_label() {
    let (env, op) = env_kc_up().await;
    let b = Browser::new(&env, OWNER);
    let paths = [
        "/console/".to_owned(),
        "/console/teams".to_owned(),
        format!("/console/teams/{TEAM}"),
        "/console/accelerators".to_owned(),
        "/console/up".to_owned(),
        up_preview("k2", "gpu-l4", 0),
        cluster_page("kc"),
        format!(
            "{}/pools/add?preview=1&accelerator=gpu-t4",
            cluster_page("kc")
        ),
        format!("{}/down", cluster_page("kc")),
        format!("/console/operations/{op}"),
    ];
    let mut controls = 0;
    for path in &paths {
        let page = b.get_ok(path).await;
        controls += page.count("input:not([type=hidden]), select, textarea");
        let bad = unlabelled(&page);
        assert!(bad.is_empty(), "{path}: controls without a label: {bad:#?}");
    }
    assert!(controls > 10, "only {controls} controls checked");
}

/// Issue 29: the team page shows the policy against the team's usage and the requests
/// waiting for approval, decided from its buttons; previews show the verdict.
#[tokio::test]
async fn the_team_page_shows_the_policy_and_approvals_decided_from_it() {
    let env = env().await;
    console_up(&env, "kc").await;
    let bob = "bob@example.com";
    env.app.member(OWNER, TEAM, bob, "MEMBER").await;
    let policy = json!({"maxAccelerators": {"gpu-t4": 4}, "approvalAboveHourlyCostUsd": 0.01});
    let r = env
        .app
        .patch(OWNER, "/v1/teams/ml-team/policy", policy)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let b = Browser::new(&env, bob);
    let base = cluster_page("kc");
    let add = format!("{base}/pools/add?preview=1&accelerator=gpu-t4&minNodes=0");
    let preview = b.get_ok(&add).await;
    assert_eq!(preview.text("[data-testid=plan-verdict]"), "NEEDS_APPROVAL");
    assert!(
        preview.count("[data-testid=plan-violations] li") > 0,
        "{}",
        preview.body
    );
    assert!(
        preview
            .text("[data-testid=plan-warnings]")
            .contains("lowered from 10 to 4")
    );
    let id = operation_of(&b.submit(&preview, "[data-testid=confirm-form]").await);

    // A webhook is listed read-only by its host: never its secret nor its URL's path.
    let hook = env
        .app
        .post(
            OWNER,
            "/v1/teams/ml-team/webhooks",
            json!({"url": "https://hooks.slack.example/services/T0/B0/sekret", "events": ["APPROVAL_NEEDED"], "format": "SLACK"}),
        )
        .await;
    assert_eq!(hook.status, StatusCode::CREATED, "{}", hook.body);

    let o = Browser::new(&env, OWNER);
    let team = o.get_ok(&format!("/console/teams/{TEAM}")).await;
    let cap = "[data-testid=policy-limit][data-rule=\"maxAccelerators.gpu-t4\"]";
    assert_eq!(team.count(cap), 1, "{}", team.body);
    assert_eq!(team.count("[data-testid=webhook-row]"), 1, "{}", team.body);
    assert!(team.body.contains("hooks.slack.example"));
    let secret = hook.body["secret"].as_str().unwrap();
    assert!(!team.body.contains("sekret") && !team.body.contains(secret));
    let row = format!("[data-testid=approval-row][data-operation=\"operations/{id}\"]");
    assert_eq!(team.count(&row), 1, "{}", team.body);
    // Bob (a MEMBER) sees it waiting, without the buttons.
    let seen = b.get_ok(&format!("/console/teams/{TEAM}")).await;
    assert_eq!(
        (seen.count(&row), seen.count("[data-testid=approve-form]")),
        (1, 0)
    );
    let approved = o.submit(&team, "[data-testid=approve-form]").await;
    assert_eq!(operation_of(&approved), id);
    let done = env.app.wait_done(OWNER, &format!("operations/{id}")).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let team = o.get_ok(&format!("/console/teams/{TEAM}")).await;
    assert_eq!(team.count("[data-testid=approval-row]"), 0, "{}", team.body);
}
