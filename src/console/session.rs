//! The console's browser session and its form token (CSRF protection).
//!
//! A session is a random 128-bit id in a cookie (`HttpOnly`, `SameSite=Strict`,
//! `Path=/console`, `Secure` outside dev mode), set on the first response that finds
//! none; nothing is stored server-side. A form token is
//! `HMAC-SHA256(key, session id, caller email)`, base64url: pages put it in a hidden
//! field of every POST form, and a POST must send it with the cookie it was made for.
//!
//! Invariant: a cross-site page can neither read the token (same-origin policy, no CORS)
//! nor make the browser send the cookie on a cross-site POST (`SameSite=Strict`), and a
//! token made for one session or user never verifies for another.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::ConsoleState;

pub const SESSION_COOKIE: &str = "kconsole_session";

/// The request's session id (the cookie's, or a new one the response sets).
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
}

/// The value of cookie `name` in `headers`, if any.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

pub async fn middleware(State(s): State<ConsoleState>, mut req: Request, next: Next) -> Response {
    let existing = cookie(req.headers(), SESSION_COOKIE)
        .filter(|id| valid_id(id))
        .map(str::to_owned);
    let fresh = existing.is_none();
    let id = existing.unwrap_or_else(|| {
        let bytes: [u8; 16] = rand::random();
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    });
    req.extensions_mut().insert(Session { id: id.clone() });
    let mut resp = next.run(req).await;
    if fresh {
        let secure = if s.identity.is_dev() { "" } else { "; Secure" };
        let c = format!("{SESSION_COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict{secure}");
        if let Ok(v) = HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}

fn mac(key: &[u8], session: &str, email: &str) -> Hmac<Sha256> {
    let mut m =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(session.as_bytes());
    m.update(b"\n");
    m.update(email.as_bytes());
    m
}

/// The form token for `email` in `session`.
pub fn token(key: &[u8], session: &str, email: &str) -> String {
    URL_SAFE_NO_PAD.encode(mac(key, session, email).finalize().into_bytes())
}

/// Whether `token` was made for `email` in `session` (constant-time comparison).
pub fn verify(key: &[u8], session: &str, email: &str, token: &str) -> bool {
    match URL_SAFE_NO_PAD.decode(token) {
        Ok(tag) => mac(key, session, email).verify_slice(&tag).is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_verifies_only_for_its_session_and_user() {
        let t = token(b"k", "s1", "a@x.io");
        assert!(verify(b"k", "s1", "a@x.io", &t));
        assert!(!verify(b"k", "s2", "a@x.io", &t));
        assert!(!verify(b"k", "s1", "b@x.io", &t));
        assert!(!verify(b"other", "s1", "a@x.io", &t));
        assert!(!verify(b"k", "s1", "a@x.io", ""));
    }

    #[test]
    fn cookies_are_found_by_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; kconsole_session=ab; b=2"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("ab"));
        assert_eq!(cookie(&h, "c"), None);
    }
}
