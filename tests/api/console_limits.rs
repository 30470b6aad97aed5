//! The console shares the API's per-caller limits (issue 24): one token bucket per
//! caller across both surfaces, and one count of open event streams (the API's `:watch`
//! and the console's live-event streams). A refusal on the console is an HTML error
//! page with the API's status, reason and `Retry-After`.

use std::time::{Duration, Instant};

use crate::common::checks::assert_content_type;
use crate::common::{BOB, TestApp};
use crate::support::{app_with_rate, cancel_frees_the_stream, expect_error, one_watch_app};

const ALICE: &str = "alice@example.com";

/// A console GET as `user` (the dev identity header, as the API's): status, headers, HTML.
async fn page(app: &TestApp, user: &str, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let r = app.stream_as(user, path).await.expect("console request");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.expect("body"))
}

#[tokio::test]
async fn console_pages_charge_the_callers_api_bucket_and_are_refused_with_a_429_page() {
    // One token every 100 s: nothing refills while the test runs.
    let app = app_with_rate(0.01, 3).await;
    // Two console pages and one API call empty the bucket of three...
    for _ in 0..2 {
        let (status, _, body) = page(&app, ALICE, "/console/teams").await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(app.get(ALICE, "/v1/teams").await.status, 200);
    // ...so the API refuses the next call: the console's loads were charged to it.
    let r = app.get(ALICE, "/v1/teams").await;
    expect_error(&r, 429, "RESOURCE_EXHAUSTED", "RATE_LIMITED");
    // The console refuses too, with an error page naming the reason and the wait.
    let (status, headers, body) = page(&app, ALICE, "/console/teams").await;
    assert_eq!(status, 429, "{body}");
    assert_content_type(&headers, "text/html");
    assert!(body.contains("RATE_LIMITED"), "{body}");
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(wait >= 1, "Retry-After {wait}");
    // The cluster page (live Google and Kubernetes reads) is refused before it reads.
    let (status, _, body) = page(
        &app,
        ALICE,
        "/console/clusters/acme-project/us-central1-a/kc",
    )
    .await;
    assert_eq!(status, 429, "{body}");
    // Another caller has a bucket of its own; assets and redirects are not charged.
    let (status, _, body) = page(&app, BOB, "/console/teams").await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = page(&app, ALICE, "/console/assets/console.css").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn console_event_streams_take_the_callers_watch_places() {
    let (app, name) = one_watch_app(ALICE, BOB).await;
    let id = name.strip_prefix("operations/").unwrap().to_owned();
    let events_path = format!("/console/operations/{id}/events");
    let console_events = |user: &'static str| app.stream_as(user, &events_path);
    let api_watch = |user: &'static str| app.stream_as(user, &format!("/v1/{name}:watch"));

    // An API :watch holds Alice's only place: the console's stream is refused.
    let watching = api_watch(ALICE).await.unwrap();
    assert_eq!(watching.status(), 200);
    let r = console_events(ALICE).await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");
    let body = r.text().await.unwrap();
    assert!(body.contains("TOO_MANY_WATCHES"), "{body}");
    drop(watching);

    // A console stream holds it: the API's :watch is refused.
    let deadline = Instant::now() + Duration::from_secs(10);
    let streaming = loop {
        let r = console_events(ALICE).await.unwrap();
        if r.status() == 200 {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "the API stream's place was never released"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let r = TestApp::read(api_watch(ALICE).await.unwrap()).await;
    expect_error(&r, 429, "RESOURCE_EXHAUSTED", "TOO_MANY_WATCHES");
    // Bob has places of his own.
    let bobs = console_events(BOB).await.unwrap();
    assert_eq!(bobs.status(), 200);

    // The operation ends: the console stream sends `done` and closes, freeing the place.
    drop(bobs);
    cancel_frees_the_stream(&app, ALICE, &name, streaming, || api_watch(ALICE)).await;
}
