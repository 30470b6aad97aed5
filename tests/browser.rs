//! The web console in a real browser (issue 16): Debian's headless Chromium, driven
//! through chromedriver, against the `kineticd serve --dev` binary (built-in simulator,
//! a fresh database on the test server). It creates a team, previews `up` and sees the
//! plan and its cost, confirms, watches the operation page reach SUCCEEDED, finds the
//! cluster's pool and capacity bars, adds a pool (preview, confirm) and removes one, and
//! runs `down`. Along the way it saves a full-page screenshot of every page at 1280 px
//! (home and cluster also at 390 px) to KINETIC_ARTIFACTS_DIR (default
//! `<target>/tmp/console-screenshots`), checks that no page scrolls sideways at either
//! width, that keyboard focus is visible, and that every control has an accessible name.
//!
//! Skipped with a message where chromium or chromedriver is missing, unless
//! KINETIC_REQUIRE_CHROMIUM is set (by .ci/run).

mod common;

#[path = "browser/chrome.rs"]
mod chrome;
#[path = "browser/page.rs"]
mod page;

use std::path::PathBuf;

use chrome::{Binaries, Chrome};
use common::dev_server::DevServer;
use serde_json::Value;
use thirtyfour::{By, WebDriver};

/// Screenshots of every page at 1280 px; these also at 390 px.
const WIDE: u32 = 1280;
const NARROW: u32 = 390;

/// Everything one run holds: the server, the browser, where screenshots go.
struct Run {
    server: DevServer,
    chrome: Chrome,
    shots: PathBuf,
}

impl Run {
    fn d(&self) -> &WebDriver {
        &self.chrome.driver
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.api)
    }

    /// Screenshots of the current page (at 1280 px, and 390 px when `narrow`), each
    /// checked not to scroll sideways; the focus and label checks on it.
    async fn page_checks(&self, name: &str, narrow: bool) {
        let widths: &[u32] = if narrow { &[WIDE, NARROW] } else { &[WIDE] };
        for &w in widths {
            let (path, sideways) = page::screenshot(self.d(), &self.shots, name, w).await;
            println!("screenshot: {}", path.display());
            assert!(
                !sideways,
                "{name} scrolls sideways at {w} px ({})",
                path.display()
            );
        }
        let unlabelled = page::unlabelled_controls(self.d()).await;
        assert!(
            unlabelled.is_empty(),
            "{name}: controls without an accessible name: {unlabelled:#?}"
        );
        let (what, visible) = page::tab_focus(self.d(), 1).await;
        assert!(visible, "{name}: keyboard focus is not visible on {what}");
    }
}

const PROJECT: &str = "console-proj";
const ZONE: &str = "us-central1-a";
const CLUSTER: &str = "web";

/// `[data-testid='id']`: the console's stable hooks (documented in src/console/mod.rs).
fn t(id: &str) -> String {
    format!("[data-testid='{id}']")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_in_headless_chromium() {
    let Some(bins) = Binaries::find("console_in_headless_chromium") else {
        return;
    };
    kineticd::auth::install_tls_provider();
    let (db, url) = common::fresh_db().await;
    db.close().await;
    let server = DevServer::start("browser", |cmd| {
        cmd.env("DATABASE_URL", &url)
            .env("KINETIC_SIM_SPEED", "100");
    });
    let chrome = Chrome::start(&bins, WIDE, 900).await;
    let shots = page::artifacts_dir();
    println!("console screenshots: {}", shots.display());
    let run = Run {
        server,
        chrome,
        shots,
    };
    let d = run.d();

    // `GET /` leads to the console's home page.
    d.goto(run.url("/")).await.expect("open /");
    page::wait_url(d, "/console/").await;

    create_team(&run).await;
    up(&run).await;
    cluster_page(&run).await;
    home_page(&run).await;
    let pool = pool_add(&run).await;
    pool_remove(&run, &pool).await;
    accelerators_page(&run).await;
    down(&run).await;

    let Run { chrome, .. } = run;
    chrome.quit().await;
}

/// The teams page: a new team owning PROJECT, listed once created.
async fn create_team(run: &Run) {
    let d = run.d();
    d.goto(run.url("/console/teams")).await.expect("teams page");
    page::fill(d, &t("team-id-input"), "web-team").await;
    page::fill(d, &t("team-name-input"), "Web team").await;
    page::fill(d, &t("team-projects-input"), PROJECT).await;
    page::click(d, &t("team-create-submit")).await;
    // The new team's page, with its owner (us) among the members.
    page::wait_url(d, "/console/teams/web-team").await;
    let me = page::find(d, &t("current-user"))
        .await
        .text()
        .await
        .expect("user");
    page::find(
        d,
        &format!("{}[data-email='{}']", t("member-row"), me.trim()),
    )
    .await;
    run.page_checks("team", false).await;
    d.goto(run.url("/console/teams")).await.expect("teams page");
    page::find(d, &format!("{}[data-team='web-team']", t("team-row"))).await;
    run.page_checks("teams", false).await;
}

/// `up`: the preview shows the plan and its cost, nothing runs until confirmed; the
/// confirm leads to the operation page, which reaches SUCCEEDED by itself.
async fn up(run: &Run) {
    let d = run.d();
    d.goto(run.url("/console/up")).await.expect("up page");
    page::fill(d, &t("up-project"), PROJECT).await;
    page::fill(d, &t("up-zone"), ZONE).await;
    page::fill(d, &t("up-cluster"), CLUSTER).await;
    page::fill(d, &t("up-accelerator"), "gpu-l4").await;
    page::fill(d, &t("up-min-nodes"), "2").await;
    page::click(d, &t("up-preview")).await;
    let actions = preview(run, "preview", true).await;
    assert!(
        actions
            .iter()
            .any(|(id, a)| id == "cluster" && a == "CREATE"),
        "the up preview creates the cluster: {actions:?}"
    );
    confirm_and_watch(run, "operation").await;
}

/// The plan preview on the current page: its cost shown (in dollars when the plan
/// creates something: a removal's plan carries no estimate), its actions as (id, action).
async fn preview(run: &Run, shot: &str, creates: bool) -> Vec<(String, String)> {
    let d = run.d();
    page::find(d, &t("plan-preview")).await;
    let cost = page::find(d, &t("plan-cost"))
        .await
        .text()
        .await
        .expect("cost");
    let dollars =
        (cost.contains("USD") || cost.contains('$')) && cost.chars().any(|c| c.is_ascii_digit());
    assert!(
        dollars || (!creates && cost == "no estimate"),
        "the plan's cost is shown in dollars: {cost:?}"
    );
    let mut actions = Vec::new();
    for row in d.find_all(By::Css(t("plan-action"))).await.expect("rows") {
        let id = attr(&row, "data-step").await;
        let action = attr(&row, "data-action").await;
        actions.push((id, action));
    }
    assert!(!actions.is_empty(), "the preview lists the plan's actions");
    run.page_checks(shot, false).await;
    actions
}

/// The `{name}-preview` plan (see [`preview`]), which must have a `{action}` action,
/// then confirmed and watched to its end as `{name}-operation`.
async fn preview_and_confirm(run: &Run, name: &str, creates: bool, action: &str) {
    let actions = preview(run, &format!("{name}-preview"), creates).await;
    assert!(
        actions.iter().any(|(_, a)| a == action),
        "the {name} preview has a {action}: {actions:?}"
    );
    confirm_and_watch(run, &format!("{name}-operation")).await;
}

/// Clicks the confirm button of a preview; on the operation page it leads to, waits
/// for SUCCEEDED without reloading (the page updates itself) and checks the timeline.
async fn confirm_and_watch(run: &Run, shot: &str) -> String {
    let d = run.d();
    page::click(d, &t("confirm-button")).await;
    let url = page::wait_url(d, "/console/operations/").await;
    // A mark only this page load carries: still there at the end = no reload.
    d.execute("window.__kineticMark = 1;", vec![])
        .await
        .expect("mark");
    let first = page::find(d, &t("op-state"))
        .await
        .text()
        .await
        .unwrap_or_default();
    page::wait_text(d, &t("op-state"), "SUCCEEDED").await;
    let mark = d
        .execute("return window.__kineticMark === 1;", vec![])
        .await
        .expect("read mark");
    assert_eq!(
        mark.json(),
        &Value::Bool(true),
        "the operation page reloaded instead of updating itself (first state {first})"
    );
    println!("operation page: {first} -> SUCCEEDED in place");
    let done = page::find(d, &t("op-done")).await;
    let done = done.prop("textContent").await.expect("op-done");
    assert_eq!(done.as_deref().map(str::trim), Some("true"), "op-done");
    let bars = d.find_all(By::Css(t("step-bar"))).await.expect("bars");
    assert!(!bars.is_empty(), "the timeline has a bar per step");
    for bar in &bars {
        let state = attr(bar, "data-state").await;
        let step = attr(bar, "data-step").await;
        assert!(
            state == "DONE" || state == "SKIPPED",
            "step {step} is {state} in a SUCCEEDED operation"
        );
    }
    run.page_checks(shot, false).await;
    url
}

fn cluster_path() -> String {
    format!("/console/clusters/{PROJECT}/{ZONE}/{CLUSTER}")
}

/// Open the cluster page.
async fn goto_cluster_page(run: &Run) {
    run.d()
        .goto(run.url(&cluster_path()))
        .await
        .expect("cluster page");
}

/// The pools the cluster page lists, once it lists one.
async fn listed_pools(run: &Run) -> Vec<String> {
    goto_cluster_page(run).await;
    page::find(run.d(), &t("pool-row")).await;
    pool_ids(run.d()).await
}

/// The cluster page: RUNNING, its GPU pool, and the capacity picture with one bar per
/// node of that pool.
async fn cluster_page(run: &Run) {
    let d = run.d();
    goto_cluster_page(run).await;
    page::wait_text(d, &t("cluster-state"), "RUNNING").await;
    let pools = pool_ids(d).await;
    assert!(!pools.is_empty(), "the cluster page lists the pools");
    let group = page::find(d, &t("capacity-pool")).await;
    let pool = attr(&group, "data-pool").await;
    assert!(
        pools.contains(&pool),
        "capacity group {pool} is a listed pool {pools:?}"
    );
    let bars = d.find_all(By::Css(t("capacity-bar"))).await.expect("bars");
    assert!(
        bars.len() >= 2,
        "one capacity bar per node of the 2-node pool, found {}",
        bars.len()
    );
    for bar in &bars {
        let used: u64 = num_attr(bar, "data-used").await;
        let free: u64 = num_attr(bar, "data-free").await;
        assert!(used + free >= 1, "a GPU node's bar counts its accelerators");
    }
    run.page_checks("cluster", true).await;
}

/// The value of attribute `name` of `e` ("" when it has none).
async fn attr(e: &thirtyfour::WebElement, name: &str) -> String {
    e.attr(name).await.expect("attr").unwrap_or_default()
}

async fn num_attr(e: &thirtyfour::WebElement, name: &str) -> u64 {
    let v = attr(e, name).await;
    v.parse()
        .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
}

/// The `data-pool` of every pool row on the cluster page.
async fn pool_ids(d: &WebDriver) -> Vec<String> {
    let mut ids = Vec::new();
    for row in d.find_all(By::Css(t("pool-row"))).await.expect("pool rows") {
        ids.push(attr(&row, "data-pool").await);
    }
    ids
}

/// Home: the new cluster's row, which links to its page.
async fn home_page(run: &Run) {
    let d = run.d();
    d.goto(run.url("/console/")).await.expect("home");
    let key = format!("{PROJECT}/{ZONE}/{CLUSTER}");
    let row = page::find(d, &format!("{}[data-cluster='{key}']", t("cluster-row"))).await;
    let link = row
        .find(By::Css(t("cluster-link")))
        .await
        .expect("cluster link");
    let href = attr(&link, "href").await;
    assert!(href.ends_with(&cluster_path()), "cluster link {href}");
    run.page_checks("home", true).await;
}

/// Pool add from the cluster page: preview, confirm, the new pool listed.
async fn pool_add(run: &Run) -> String {
    let d = run.d();
    goto_cluster_page(run).await;
    let before = pool_ids(d).await;
    page::click(d, &t("pool-add")).await;
    page::fill(d, &t("pool-accelerator"), "gpu-t4").await;
    page::click(d, &t("pool-add-preview")).await;
    preview_and_confirm(run, "pool-add", true, "CREATE").await;
    let after = listed_pools(run).await;
    let added: Vec<&String> = after.iter().filter(|p| !before.contains(p)).collect();
    assert_eq!(
        added.len(),
        1,
        "one new pool: before {before:?}, after {after:?}"
    );
    added[0].clone()
}

/// Pool remove from the pool's row: preview, confirm, the pool gone from the page.
async fn pool_remove(run: &Run, pool: &str) {
    let d = run.d();
    goto_cluster_page(run).await;
    let row = page::find(d, &format!("{}[data-pool='{pool}']", t("pool-row"))).await;
    let link = row
        .find(By::Css(t("pool-remove")))
        .await
        .expect("remove link");
    link.click().await.expect("click remove");
    preview_and_confirm(run, "pool-remove", false, "DELETE").await;
    let left = listed_pools(run).await;
    assert!(
        !left.iter().any(|p| p == pool),
        "{pool} still listed: {left:?}"
    );
}

/// The accelerator catalog with prices.
async fn accelerators_page(run: &Run) {
    let d = run.d();
    d.goto(run.url("/console/accelerators"))
        .await
        .expect("accelerators");
    let text = page::find(d, "main").await.text().await.expect("text");
    assert!(
        text.contains("gpu-l4") && (text.contains("USD") || text.contains('$')),
        "catalog with prices: {text}"
    );
    run.page_checks("accelerators", false).await;
}

/// `down` from the cluster page: preview, confirm, the cluster DELETED.
async fn down(run: &Run) {
    let d = run.d();
    goto_cluster_page(run).await;
    page::click(d, &t("cluster-down")).await;
    preview_and_confirm(run, "down", false, "DELETE").await;
    goto_cluster_page(run).await;
    page::wait_text(d, &t("cluster-state"), "DELETED").await;
}
