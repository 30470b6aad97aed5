//! Identity input the API refuses (issue 24): a duplicated IAP assertion header, and
//! addresses that are not printable ASCII, in tokens, dev headers and member paths alike.

use kineticd::auth::IAP_HEADER;
use serde_json::json;

use crate::common::iap_keys::{TestKey, new_key, sign};
use crate::common::{Resp, TestApp};
use crate::iap_http::{claims, jwks_server};
use crate::support::{expect_error, message, meta, ok};

/// The app in IAP mode with `keys` served by a local JWKS endpoint.
async fn iap_app(keys: &[&TestKey]) -> TestApp {
    crate::iap_http::iap_app(jwks_server(keys).await).await
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

/// A token whose email is not printable ASCII is refused: no Unicode case folding (the
/// Kelvin sign U+212A acted as `k`), no invisible, right-to-left or look-alike characters.
#[tokio::test]
async fn token_emails_must_be_printable_ascii() {
    let key = new_key("k1");
    let app = iap_app(&[&key]).await;
    let kevin = sign(&key, &claims("kevin@example.com"));
    assert_eq!(
        get_with(&app, "/v1/me", &[kevin.as_str()]).await.body["email"],
        "kevin@example.com"
    );
    for email in [
        "\u{212A}evin@example.com",
        "ke\u{200B}vin@example.com",
        "kevin@\u{202E}moc.elpmaxe",
        "k\u{0435}vin@example.com",
    ] {
        let t = sign(&key, &claims(email));
        let r = get_with(&app, "/v1/me", &[t.as_str()]).await;
        expect_error(&r, 401, "UNAUTHENTICATED", "TOKEN_BAD_EMAIL");
        assert!(message(&r).contains("ASCII"), "{}", message(&r));
    }
}

/// `PUT /v1/teams/{team}/members/{email}` refuses an address that is not printable ASCII
/// with 400 INVALID_NAME (field `email`) and changes nothing; so does DELETE.
#[tokio::test]
async fn member_emails_must_be_printable_ascii() {
    const ALICE: &str = "alice@example.com";
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    let members =
        || async { ok(app.get(ALICE, "/v1/teams/acme/members").await)["members"].clone() };
    let before = members().await;
    for email in [
        "%E2%84%AAevin@example.com", // Kelvin sign
        "%E2%80%8Bbob@example.com",  // zero-width space
        "bob%E2%80%8D@example.com",  // zero-width joiner
        "bob@%E2%80%AEmoc.elpmaxe",  // right-to-left override
        "%E2%81%A7bob@example.com",  // right-to-left isolate
        "b%D0%BEb@example.com",      // Cyrillic o
        "bob%EF%BC%A0example.com",   // fullwidth @
        "bob%C2%A0@example.com",     // no-break space
    ] {
        let path = format!("/v1/teams/acme/members/{email}");
        let r = app.put(ALICE, &path, json!({"role": "OWNER"})).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
        assert_eq!(meta(&r, "field"), "email");
        assert!(message(&r).contains("ASCII"), "{}", message(&r));
        let r = app.delete(ALICE, &path).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
    }
    assert_eq!(members().await, before, "nothing changed");
}

/// The dev identity header follows the same rule.
#[tokio::test]
async fn dev_users_must_be_printable_ascii() {
    let app = TestApp::spawn().await;
    for user in [
        "\u{212A}evin@example.com",
        "ke\u{200B}vin@example.com",
        "k\u{0435}vin@example.com",
    ] {
        let value = reqwest::header::HeaderValue::from_bytes(user.as_bytes()).unwrap();
        let r = app
            .http
            .get(app.url_of("/v1/me"))
            .header("x-kinetic-user", value)
            .send()
            .await
            .expect("request");
        let r = TestApp::read(r).await;
        expect_error(&r, 401, "UNAUTHENTICATED", "BAD_DEV_USER");
    }
    assert_eq!(
        app.get("KEVIN@example.com", "/v1/me").await.body["email"],
        "kevin@example.com"
    );
}
