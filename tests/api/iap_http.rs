//! IAP identity end to end: the real app in IAP mode, ES256 tokens minted here, keys
//! served by a local JWKS endpoint.

use axum::Router;
use axum::routing::get;
use kineticd::auth::{IAP_HEADER, IAP_ISSUER};
use kineticd::config::Identity;
use serde_json::{Value, json};

use crate::common::iap_keys::{AUD, TestKey, new_key, now, sign, unreachable_port};
use crate::common::{ADMIN, Resp, TestApp, fresh_db};
use crate::support::{expect_error, expect_not_found, iap_request, message};

/// Claims IAP would sign for `email`, valid for ten minutes.
pub fn claims(email: &str) -> Value {
    let n = now();
    json!({"iss": IAP_ISSUER, "aud": AUD, "email": email, "sub": "accounts.google.com:1", "iat": n, "exp": n + 600})
}

/// Serve `keys` as a JWKS; returns its URL.
pub async fn jwks_server(keys: &[&TestKey]) -> String {
    let body = json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    let app = Router::new().route("/jwks", get(move || async move { axum::Json(body) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/jwks")
}

/// The app in IAP mode with its keys at `jwks_url`.
pub async fn iap_app(jwks_url: String) -> TestApp {
    let (db, url) = fresh_db().await;
    TestApp::spawn_with(db, url, move |mut s| {
        s.identity = Identity::Iap {
            jwks_url,
            audience: AUD.to_owned(),
        };
        s
    })
    .await
}

/// `method path` with an optional IAP assertion (and a dev header that must be ignored).
async fn call(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Resp {
    let req = iap_request(app, method, path, "mallory@example.com", token, body);
    TestApp::read(req.send().await.expect("request")).await
}

async fn get_as(app: &TestApp, path: &str, token: Option<&str>) -> Resp {
    call(app, reqwest::Method::GET, path, token, None).await
}

#[tokio::test]
async fn valid_tokens_identify_the_caller() {
    let key = new_key("k1");
    let app = iap_app(jwks_server(&[&key]).await).await;
    let alice = sign(&key, &claims("Alice@Example.COM"));
    let r = get_as(&app, "/v1/me", Some(&alice)).await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_eq!(
        r.body["email"], "alice@example.com",
        "identity is the token's email, not the dev header"
    );
    assert_eq!(r.body["admin"], false);

    // The identity carries through to authorization.
    let t = call(
        &app,
        reqwest::Method::POST,
        "/v1/teams",
        Some(&alice),
        Some(json!({"teamId": "acme"})),
    )
    .await;
    assert_eq!(t.status, 201, "{:#}", t.body);
    let members = get_as(&app, "/v1/teams/acme/members", Some(&alice)).await;
    assert_eq!(members.body["members"][0]["email"], "alice@example.com");
    let bob = sign(&key, &claims("bob@example.com"));
    let r = get_as(&app, "/v1/teams/acme", Some(&bob)).await;
    expect_not_found(&r, "TEAM_NOT_FOUND");

    // Service admins are recognised from the token too.
    let admin = sign(&key, &claims(ADMIN));
    let r = get_as(&app, "/v1/me", Some(&admin)).await;
    assert_eq!(r.body["admin"], true);
    assert_eq!(
        get_as(&app, "/v1/teams/acme", Some(&admin)).await.status,
        200
    );
}

#[tokio::test]
async fn bad_or_missing_tokens_get_401() {
    let key = new_key("k1");
    let stranger = new_key("k1");
    let app = iap_app(jwks_server(&[&key]).await).await;
    let n = now();
    let mut expired = claims("alice@example.com");
    expired["iat"] = json!(n - 1200);
    expired["exp"] = json!(n - 600);
    let mut wrong_aud = claims("alice@example.com");
    wrong_aud["aud"] = json!("/projects/123/global/backendServices/999");
    let mut wrong_iss = claims("alice@example.com");
    wrong_iss["iss"] = json!("https://accounts.google.com");
    let cases: Vec<(Option<String>, &str)> = vec![
        (None, "TOKEN_MISSING"),
        (Some(String::new()), "TOKEN_MISSING"),
        (Some(sign(&key, &expired)), "TOKEN_EXPIRED"),
        (Some(sign(&key, &wrong_aud)), "TOKEN_BAD_AUDIENCE"),
        (Some(sign(&key, &wrong_iss)), "TOKEN_BAD_ISSUER"),
        (
            Some(sign(&stranger, &claims("alice@example.com"))),
            "TOKEN_BAD_SIGNATURE",
        ),
        (Some("not.a.jwt".into()), "TOKEN_MALFORMED"),
    ];
    for (token, reason) in cases {
        for path in ["/v1/me", "/v1/teams", "/v1/teams/acme", "/v1/clusters"] {
            let r = get_as(&app, path, token.as_deref()).await;
            expect_error(&r, 401, "UNAUTHENTICATED", reason);
            if let Some(t) = token.as_deref().filter(|t| t.len() > 20) {
                assert!(!message(&r).contains(t), "message echoes the token");
            }
        }
    }
    let r = get_as(&app, "/v1/me", None).await;
    assert!(message(&r).contains(IAP_HEADER), "{}", message(&r));
    // Refused requests never reach the handlers: nothing was created.
    let r = call(
        &app,
        reqwest::Method::POST,
        "/v1/teams",
        None,
        Some(json!({"teamId": "acme"})),
    )
    .await;
    expect_error(&r, 401, "UNAUTHENTICATED", "TOKEN_MISSING");
    let admin = sign(&key, &claims(ADMIN));
    assert_eq!(
        get_as(&app, "/v1/teams", Some(&admin)).await.body["teams"],
        json!([])
    );
}

#[tokio::test]
async fn unreachable_keys_give_503_without_internals() {
    let key = new_key("k1");
    let port = unreachable_port();
    let app = iap_app(format!("http://127.0.0.1:{port}/jwks")).await;
    let token = sign(&key, &claims("alice@example.com"));
    for _ in 0..2 {
        let r = get_as(&app, "/v1/me", Some(&token)).await;
        expect_error(&r, 503, "UNAVAILABLE", "KEYS_UNAVAILABLE");
        assert!(!message(&r).contains(&port.to_string()), "{}", message(&r));
    }
    // Unauthenticated endpoints keep working.
    assert_eq!(get_as(&app, "/healthz", None).await.status, 200);
}

#[tokio::test]
async fn service_endpoints_need_no_token() {
    let key = new_key("k1");
    let app = iap_app(jwks_server(&[&key]).await).await;
    for path in ["/healthz", "/readyz", "/openapi.json"] {
        let r = get_as(&app, path, None).await;
        assert_eq!(r.status, 200, "{path}: {:#}", r.body);
        assert!(r.body.is_object(), "{path}");
    }
    for path in ["/metrics", "/docs/"] {
        let resp = app.http.get(app.url_of(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert!(!resp.text().await.unwrap().is_empty(), "{path}");
    }
    // Unknown routes answer 404 (not 401) without a token.
    let r = get_as(&app, "/v1/nothing-here", None).await;
    expect_not_found(&r, "ROUTE_NOT_FOUND");
}
