//! The outbound HTTP of webhook deliveries: one POST to a team's URL, guarded against
//! SSRF.
//!
//! Invariants:
//! - Every address a delivery connects to passes `domain::webhooks::refusal` for the
//!   deployment's [`Allow`]: a literal host is checked before the request
//!   (`check_url`), a name through this client's DNS resolver, which drops refused
//!   addresses (so a name that resolves to the metadata server, or rebinds to it
//!   between create and delivery, is never reached).
//! - Redirects are never followed, a try is bounded by a short timeout, and at most
//!   [`MAX_RESPONSE_BYTES`] of the receiver's answer are read (and none of it kept).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::webhooks::{self, Allow};

/// How much of a receiver's answer is read at most (then the connection is dropped).
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// The webhook sender.
#[derive(Debug, Clone)]
pub struct WebhookClient {
    http: reqwest::Client,
    allow: Allow,
}

/// What one try came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Why there is no status (refused address, timeout, connection error), or none.
    pub error: Option<String>,
    pub duration: Duration,
}

impl Sent {
    /// A 2xx answer.
    pub fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Resolves names with the system resolver, keeping only addresses deliveries may reach.
struct Guarded(Allow);

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.0;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            if let Some(why) = webhooks::name_refusal(&host, allow) {
                return Err(format!("{host} is {why}").into());
            }
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| match webhooks::refusal(a.ip(), allow) {
                    Some(why) => {
                        refused = Some(why);
                        false
                    }
                    None => true,
                })
                .collect();
            if kept.is_empty() {
                let why = refused.unwrap_or("not resolvable");
                return Err(format!("every address of {host} is refused: {why}").into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

impl WebhookClient {
    /// A client for `allow`, giving up a try after `timeout`.
    pub fn new(allow: Allow, timeout: Duration) -> Result<WebhookClient, reqwest::Error> {
        crate::auth::install_tls_provider();
        let http = reqwest::Client::builder()
            .user_agent(concat!("kineticd-webhooks/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(Guarded(allow)))
            .build()?;
        Ok(WebhookClient { http, allow })
    }

    /// POST `body` (JSON) to `url` with `headers`.
    pub async fn post(&self, url: &str, headers: &[(&str, String)], body: Vec<u8>) -> Sent {
        let start = Instant::now();
        let done = |status: Option<u16>, error: Option<String>| Sent {
            status,
            error,
            duration: start.elapsed(),
        };
        if let Err(e) = webhooks::check_url(url, self.allow) {
            return done(None, Some(e.to_string()));
        }
        let mut req = self
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return done(None, Some(describe(&e))),
        };
        let status = resp.status().as_u16();
        // Read (and drop) a bounded part of the answer, so the connection can be reused.
        let mut read = 0usize;
        let mut resp = resp;
        while let Ok(Some(chunk)) = resp.chunk().await {
            read += chunk.len();
            if read >= MAX_RESPONSE_BYTES {
                break;
            }
        }
        done(Some(status), None)
    }
}

/// A transport error as one line, its causes included (never the URL's query).
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut out = kind.to_owned();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out.chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    async fn resolve(allow: Allow, host: &str) -> Result<Vec<SocketAddr>, String> {
        Guarded(allow)
            .resolve(Name::from_str(host).unwrap())
            .await
            .map(|a| a.collect())
            .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn the_resolver_drops_refused_addresses() {
        let none = Allow::default();
        let lo = Allow {
            loopback: true,
            private: false,
        };
        // What a name resolves to is judged, not the name: a name that resolves (or
        // rebinds) to loopback or the metadata server is refused.
        let e = resolve(none, "127.0.0.1").await.unwrap_err();
        assert!(e.contains("every address of 127.0.0.1 is refused"), "{e}");
        let e = resolve(lo, "169.254.169.254").await.unwrap_err();
        assert!(e.contains("metadata"), "{e}");
        assert!(resolve(none, "localhost").await.is_err());
        assert!(resolve(lo, "metadata.google.internal").await.is_err());
        let kept = resolve(lo, "localhost").await.unwrap();
        assert!(
            !kept.is_empty() && kept.iter().all(|a| a.ip().is_loopback()),
            "{kept:?}"
        );
    }
}
