//! Identity input the API refuses (issue 24): a duplicated IAP assertion header.

use axum::Router;
use axum::routing::get;
use kineticd::auth::{IAP_HEADER, IAP_ISSUER};
use kineticd::config::Identity;
use serde_json::{Value, json};

use crate::common::iap_keys::{AUD, TestKey, new_key, now, sign};
use crate::common::{Resp, TestApp, fresh_db};
use crate::support::{expect_error, message};

fn claims(email: &str) -> Value {
    let n = now();
    json!({"iss": IAP_ISSUER, "aud": AUD, "email": email, "sub": "accounts.google.com:1", "iat": n, "exp": n + 600})
}

/// The app in IAP mode with `keys` served by a local JWKS endpoint.
async fn iap_app(keys: &[&TestKey]) -> TestApp {
    let body = json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    let jwks = Router::new().route("/jwks", get(move || async move { axum::Json(body) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let jwks_url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, jwks).await.unwrap() });
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

/// `GET path` carrying each of `tokens` as its own assertion header.
async fn get_with(app: &TestApp, path: &str, tokens: &[&str]) -> Resp {
    let mut req = app.http.get(app.url_of(path));
    for t in tokens {
        req = req.header(IAP_HEADER, *t);
    }
    TestApp::read(req.send().await.expect("request")).await
}

/// Two assertion headers are refused, never resolved to the first or the last.
#[tokio::test]
async fn a_duplicated_assertion_header_is_refused() {
    let key = new_key("k1");
    let app = iap_app(&[&key]).await;
    let alice = sign(&key, &claims("alice@example.com"));
    let bob = sign(&key, &claims("bob@example.com"));
    assert_eq!(
        get_with(&app, "/v1/me", &[alice.as_str()]).await.body["email"],
        "alice@example.com"
    );
    for tokens in [[&alice, &bob], [&bob, &alice], [&alice, &alice]] {
        let r = get_with(&app, "/v1/me", &[tokens[0].as_str(), tokens[1].as_str()]).await;
        expect_error(&r, 401, "UNAUTHENTICATED", "TOKEN_DUPLICATED");
        assert!(message(&r).contains(IAP_HEADER), "{}", message(&r));
        assert!(
            !message(&r).contains(alice.as_str()),
            "message echoes a token"
        );
    }
    // Also when one of them is empty or garbage.
    for tokens in [[alice.as_str(), ""], ["garbage", alice.as_str()]] {
        let r = get_with(&app, "/v1/me", &tokens).await;
        expect_error(&r, 401, "UNAUTHENTICATED", "TOKEN_DUPLICATED");
    }
}
