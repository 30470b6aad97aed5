//! Cross-site requests (issue 24): a page on another site can make a browser POST a form
//! (or a `no-cors` fetch) to the API with the user's IAP session, and a POST that takes
//! no JSON body (`:cancel`, `:activate`, `:diagnose`, `:wait`) would run it. Such
//! requests are refused with 403 CROSS_SITE_REQUEST before any handler runs; curl and
//! generated clients (no `Origin`, no `Sec-Fetch-Site`, no form content type) and the
//! same-origin docs page keep working.

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{Resp, TestApp};
use crate::support::{
    acme_app, acme_cluster, expect_error_saying, expect_json_only, queued_noop, work_profile,
};

const ALICE: &str = "alice@example.com";

/// `method path` as ALICE with extra `headers` and an optional raw `body`.
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Resp {
    let mut req = app.request_as(ALICE, method, path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(b.to_owned());
    }
    TestApp::read(req.send().await.expect("request")).await
}

/// Extra headers, a raw body, and what the refusal's message says (who sends it, of a
/// request that passes).
type Attack<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);

#[track_caller]
fn expect_cross_site(r: &Resp, what: &str) {
    expect_error_saying(r, 403, "PERMISSION_DENIED", "CROSS_SITE_REQUEST", what);
}

#[tokio::test]
async fn bodyless_posts_from_another_site_are_refused_and_change_nothing() {
    let app = acme_app(ALICE).await;
    acme_cluster(&app).await;
    let r = work_profile(&app, ALICE).await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    let name = queued_noop(&app, ALICE).await;
    let host = app.addr.to_string();
    let cancel = format!("/v1/{name}:cancel");
    let paths = [
        cancel.as_str(),
        "/v1/profiles/work:activate",
        "/v1/projects/acme-project/zones/us-central1-a/clusters/kc:diagnose",
    ];
    let form = ("content-type", "application/x-www-form-urlencoded");
    let attacks: [Attack; 7] = [
        // What browsers mark: another site, or a sibling subdomain.
        (&[("sec-fetch-site", "cross-site")], None, "another site"),
        (&[("sec-fetch-site", "same-site")], None, "another site"),
        // A foreign Origin, an opaque one (a sandboxed frame's), a same-host one that
        // a browser calls cross-site anyway.
        (&[("origin", "https://evil.example")], None, "origin"),
        (&[("origin", "null")], None, "origin"),
        (
            &[
                ("origin", "https://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
            None,
            "another site",
        ),
        // An old browser that sends neither header: a form's content type gives it away.
        (&[form], Some("x=1"), "takes no body"),
        (&[("content-type", "text/plain")], Some(""), "takes no body"),
    ];
    for path in paths {
        for (headers, body, what) in &attacks {
            let r = send(&app, Method::POST, path, headers, *body).await;
            expect_cross_site(&r, what);
        }
    }
    // Nothing happened: the operation was not cancelled.
    let r = app.get(ALICE, &format!("/v1/{name}")).await;
    assert_eq!(r.body["metadata"]["cancelRequested"], false, "{:#}", r.body);
    assert_eq!(r.body["metadata"]["state"], "QUEUED", "{:#}", r.body);

    // The same page's own requests (Swagger UI at /docs) and the browser's own
    // navigation pass.
    let same_origin = format!("http://{host}");
    let same_page = [
        ("origin", same_origin.as_str()),
        ("sec-fetch-site", "same-origin"),
    ];
    // Extra headers, a body, and who sends them.
    let passing: [Attack; 3] = [
        (&same_page, None, "the same page"),
        (
            &[("sec-fetch-site", "none")],
            None,
            "the browser's navigation",
        ),
        // curl and generated clients: no Origin, no Sec-Fetch-Site; no body or a JSON one.
        (&[("content-type", "application/json")], Some("{}"), "curl"),
    ];
    for (headers, body, who) in passing {
        let activate = "/v1/profiles/work:activate";
        let r = send(&app, Method::POST, activate, headers, body).await;
        assert_eq!(r.status, 200, "{who}: {:#}", r.body);
    }
    let r = app.post(ALICE, &cancel, Value::Null).await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_eq!(r.body["metadata"]["cancelRequested"], true, "{:#}", r.body);
}

#[tokio::test]
async fn other_mutations_from_another_site_are_refused_and_json_routes_keep_their_415() {
    let app = acme_app(ALICE).await;
    let patch = json!({"displayName": "Evil"}).to_string();
    let json_ct = ("content-type", "application/json");
    for (method, path, body) in [
        (Method::PATCH, "/v1/teams/acme", Some(patch.as_str())),
        (Method::DELETE, "/v1/teams/acme", None),
        (Method::POST, "/v1/teams", Some(r#"{"teamId":"evil-team"}"#)),
    ] {
        for (header, what) in [
            (("sec-fetch-site", "cross-site"), "another site"),
            (("origin", "https://evil.example"), "origin"),
        ] {
            let r = send(&app, method.clone(), path, &[json_ct, header], body).await;
            expect_cross_site(&r, what);
        }
    }
    let r = app.get(ALICE, "/v1/teams/acme").await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_ne!(r.body["displayName"], "Evil", "{:#}", r.body);
    // A route that takes a JSON body still answers a form with 415, as before.
    let r = send(
        &app,
        Method::POST,
        "/v1/teams",
        &[("content-type", "application/x-www-form-urlencoded")],
        Some("teamId=x"),
    )
    .await;
    expect_json_only(&r);
    // Reads are not refused (nothing changes, and no CORS lets another site read them).
    let r = send(
        &app,
        Method::GET,
        "/v1/teams/acme",
        &[("sec-fetch-site", "cross-site")],
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:#}", r.body);
}
