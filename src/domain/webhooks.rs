//! Webhooks' pure rules (issue 30 item 3): the event names a webhook subscribes to, its
//! body format, which addresses a delivery may reach (SSRF), the signature and the
//! retry schedule.
//!
//! Invariants:
//! - A link-local, metadata, unspecified, multicast or broadcast address is refused
//!   whatever the deployment allows; loopback and private addresses only where
//!   [`Allow`] says so ([`refusal`]). The same rule judges the URL's literal host at
//!   create time and every resolved address at delivery time.
//! - The signature is `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`
//!   over the exact bytes sent ([`signature`]).
//! - Retries back off exponentially from a base, capped, with jitter drawn by the caller
//!   (so this stays pure): [`backoff`].

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::states::UnknownState;

states!(
    /// What a webhook is told about (the `events` of a webhook; `X-Kinetic-Event`).
    WebhookEvent, "webhook event" {
        /// An operation ended: SUCCEEDED, FAILED or CANCELLED.
        OperationFinished = "OPERATION_FINISHED",
        /// A request waits for an ADMIN's approval (the team's policy asks for it).
        ApprovalNeeded = "APPROVAL_NEEDED",
        /// A waiting request was approved, rejected or expired.
        ApprovalDecided = "APPROVAL_DECIDED",
        /// An idle pool or cluster will be acted on soon.
        IdleWarning = "IDLE_WARNING",
        /// An idle rule acted (scale to zero, pool or cluster removed).
        IdleAction = "IDLE_ACTION",
        /// A cluster's TTL ends soon.
        TtlWarning = "TTL_WARNING",
        /// The month's spend crossed 50, 80 or 100% of the budget.
        BudgetThreshold = "BUDGET_THRESHOLD",
        /// Spot nodes were reclaimed.
        SpotReclaimed = "SPOT_RECLAIMED",
    }
);

states!(
    /// The body a webhook is sent: kineticd's JSON event, or a Slack incoming-webhook
    /// message.
    WebhookFormat, "webhook format" {
        /// `{id, type, time, team, target, actor, details}`.
        Json = "JSON",
        /// Slack's incoming-webhook body: `{text, blocks}`.
        Slack = "SLACK",
    }
);

states!(
    /// Where a delivery stands.
    DeliveryState, "delivery state" {
        /// Not yet delivered; tried again at `nextAttemptTime`.
        Pending = "PENDING",
        /// The receiver answered 2xx.
        Delivered = "DELIVERED",
        /// Never delivered within the retry period (24 hours).
        Failed = "FAILED",
    }
);

/// Webhooks a team may have at most.
pub const MAX_WEBHOOKS_PER_TEAM: i64 = 20;

/// How long a delivery is retried after it was created.
pub const RETRY_PERIOD: Duration = Duration::from_secs(24 * 3600);

/// Longest URL a webhook may have.
pub const MAX_URL_LEN: usize = 2048;

/// The extra kinds of address a deployment allows deliveries to reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allow {
    /// 127.0.0.0/8, ::1 (and `localhost`), and `http://` to them.
    pub loopback: bool,
    /// RFC 1918, 100.64.0.0/10 (shared), fc00::/7 (unique local), and `http://` to them.
    pub private: bool,
}

impl Allow {
    /// `loopback,private`, either, or empty (`none` too).
    pub fn parse(s: &str) -> Result<Allow, String> {
        let mut a = Allow::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.to_ascii_lowercase().as_str() {
                "loopback" => a.loopback = true,
                "private" => a.private = true,
                "none" => {}
                other => {
                    return Err(format!(
                        "{other:?} is not loopback, private or none (comma-separated)"
                    ));
                }
            }
        }
        Ok(a)
    }
}

/// Why an address may not be reached (`None`: it may).
pub fn refusal(ip: IpAddr, allow: Allow) -> Option<&'static str> {
    let ip = match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4, allow),
        IpAddr::V6(v6) => refusal_v6(v6, allow),
    }
}

fn refusal_v4(ip: Ipv4Addr, allow: Allow) -> Option<&'static str> {
    let o = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        return Some("the cloud metadata server");
    }
    if ip.is_link_local() {
        return Some("a link-local address (169.254.0.0/16)");
    }
    if ip.is_unspecified() || o[0] == 0 {
        return Some("an unspecified address (0.0.0.0/8)");
    }
    if ip.is_broadcast() {
        return Some("the broadcast address");
    }
    if ip.is_multicast() || o[0] >= 240 {
        return Some("a multicast or reserved address");
    }
    if ip.is_loopback() && !allow.loopback {
        return Some("a loopback address (this deployment does not allow loopback)");
    }
    let shared = o[0] == 100 && (o[1] & 0xc0) == 64;
    if (ip.is_private() || shared) && !allow.private {
        return Some("a private address (this deployment does not allow private addresses)");
    }
    None
}

fn refusal_v6(ip: Ipv6Addr, allow: Allow) -> Option<&'static str> {
    let s = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("the cloud metadata server");
    }
    if (s[0] & 0xffc0) == 0xfe80 {
        return Some("a link-local address (fe80::/10)");
    }
    if ip.is_unspecified() {
        return Some("the unspecified address (::)");
    }
    if ip.is_multicast() {
        return Some("a multicast address");
    }
    if ip.is_loopback() && !allow.loopback {
        return Some("a loopback address (this deployment does not allow loopback)");
    }
    if (s[0] & 0xfe00) == 0xfc00 && !allow.private {
        return Some("a unique local address (this deployment does not allow private addresses)");
    }
    None
}

/// Why a host name may not be reached before it is even resolved (`None`: resolve it).
pub fn name_refusal(host: &str, allow: Allow) -> Option<&'static str> {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    if h == "metadata.google.internal"
        || h == "metadata"
        || h.ends_with(".metadata.google.internal")
    {
        return Some("the cloud metadata server");
    }
    if (h == "localhost" || h.ends_with(".localhost")) && !allow.loopback {
        return Some("a loopback address (this deployment does not allow loopback)");
    }
    None
}

/// Why a webhook URL is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    /// Not a URL a webhook may have (scheme, credentials, length).
    #[error("{0}")]
    Invalid(String),
    /// Its host is an address deliveries may not reach (SSRF).
    #[error("{0}")]
    Refused(String),
}

/// A webhook URL checked: `https://` (or `http://` to a loopback or private host the
/// deployment allows), no credentials, and a literal host that [`refusal`] or
/// [`name_refusal`] accepts. A name is checked again, resolved, at every delivery.
pub fn check_url(text: &str, allow: Allow) -> Result<url::Url, UrlRefusal> {
    let bad = |m: &str| UrlRefusal::Invalid(m.to_owned());
    if text.len() > MAX_URL_LEN {
        return Err(bad("url is longer than 2048 characters"));
    }
    let url = url::Url::parse(text)
        .map_err(|e| UrlRefusal::Invalid(format!("url is not an absolute URL: {e}")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("url must not hold credentials (user:password@)"));
    }
    let host = url.host().ok_or_else(|| bad("url has no host"))?;
    let (why, local) = match host {
        url::Host::Ipv4(ip) => (refusal(ip.into(), allow), is_local(ip.into())),
        url::Host::Ipv6(ip) => (refusal(ip.into(), allow), is_local(ip.into())),
        url::Host::Domain(d) => (name_refusal(d, allow), d.eq_ignore_ascii_case("localhost")),
    };
    if let Some(why) = why {
        return Err(UrlRefusal::Refused(format!(
            "url's host {host} is {why}; webhooks never reach link-local or metadata addresses"
        )));
    }
    match url.scheme() {
        "https" => {}
        "http" if local => {}
        "http" => {
            return Err(bad(
                "url must be https:// (http:// only to a loopback or private address the deployment allows)",
            ));
        }
        other => {
            return Err(UrlRefusal::Invalid(format!(
                "url scheme {other:?} is not https"
            )));
        }
    }
    Ok(url)
}

/// Whether `ip` is a loopback or private address (where plain http may go, if allowed).
fn is_local(ip: IpAddr) -> bool {
    refusal(
        ip,
        Allow {
            loopback: false,
            private: false,
        },
    )
    .is_some()
        && refusal(
            ip,
            Allow {
                loopback: true,
                private: true,
            },
        )
        .is_none()
}

/// The `X-Kinetic-Signature` of `body` sent at `t` (unix seconds).
pub fn signature(secret: &str, t: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .expect("HMAC accepts any key length");
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("t={t},v1={}", hex(&mac.finalize().into_bytes()))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The delay before try `attempt + 1` after `attempt` failed tries (1 = the first):
/// `base * 2^(attempt-1)`, at most `cap`, times a `jitter` in [0.5, 1.0].
pub fn backoff(attempt: u32, base: Duration, cap: Duration, jitter: f64) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    exp.min(cap).mul_f64(jitter.clamp(0.5, 1.0))
}

/// The events of a webhook, checked: known names, at least one, none twice.
pub fn parse_events(names: &[String]) -> Result<Vec<WebhookEvent>, String> {
    if names.is_empty() {
        return Err(format!(
            "events must name at least one of {}",
            known_events()
        ));
    }
    let mut out: Vec<WebhookEvent> = Vec::with_capacity(names.len());
    for n in names {
        let e = WebhookEvent::parse(n).map_err(|UnknownState { value, known, .. }| {
            format!("events: {value:?} is not one of {known}")
        })?;
        if out.contains(&e) {
            return Err(format!("events names {e} twice"));
        }
        out.push(e);
    }
    Ok(out)
}

fn known_events() -> String {
    WebhookEvent::ALL
        .iter()
        .map(|e| e.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let none = Allow::default();
        let all = Allow {
            loopback: true,
            private: true,
        };
        for ip in [
            "169.254.169.254",
            "169.254.1.1",
            "fe80::1",
            "fd00:ec2::254",
            "0.0.0.0",
            "::",
            "224.0.0.1",
            "255.255.255.255",
            "ff02::1",
            "::ffff:169.254.169.254",
        ] {
            assert!(refusal(ip.parse().unwrap(), all).is_some(), "{ip}");
        }
        for ip in [
            "127.0.0.1",
            "::1",
            "10.0.0.1",
            "192.168.1.1",
            "172.16.0.1",
            "100.64.0.1",
            "fc00::1",
        ] {
            assert!(refusal(ip.parse().unwrap(), none).is_some(), "{ip}");
            assert!(refusal(ip.parse().unwrap(), all).is_none(), "{ip}");
        }
        assert!(refusal("8.8.8.8".parse().unwrap(), none).is_none());
        assert!(refusal("2001:4860::8888".parse().unwrap(), none).is_none());
        assert!(name_refusal("Metadata.Google.Internal.", all).is_some());
        assert!(name_refusal("localhost", none).is_some());
        assert!(name_refusal("localhost", all).is_none());
        assert!(name_refusal("hooks.example.com", none).is_none());
        assert_eq!(Allow::parse("loopback, private").unwrap(), all);
        assert!(Allow::parse("everything").is_err());
        let lo = Allow {
            loopback: true,
            private: false,
        };
        assert!(check_url("http://127.0.0.1:8080/h", lo).is_ok());
        assert!(check_url("https://hooks.example.com/x", none).is_ok());
        for (u, refused) in [
            ("http://hooks.example.com/x", false),
            ("ftp://hooks.example.com/x", false),
            ("https://u:p@hooks.example.com/x", false),
            ("not a url", false),
            ("http://169.254.169.254/latest", true),
            ("https://metadata.google.internal/", true),
            ("https://10.0.0.1/", true),
            ("https://[fe80::1]/", true),
            ("http://127.0.0.1/", true),
        ] {
            let allow = if u.contains("127.0.0.1") { none } else { lo };
            let e = check_url(u, allow).unwrap_err();
            assert_eq!(matches!(e, UrlRefusal::Refused(_)), refused, "{u}: {e}");
        }
    }

    #[test]
    fn signature_is_hmac_sha256_of_t_dot_body() {
        // RFC 4231 test case 2 shape: key "Jefe", data "what do ya want for nothing?".
        let s = signature("Jefe", 1, b"what do ya want for nothing?");
        assert!(s.starts_with("t=1,v1="), "{s}");
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"1.what do ya want for nothing?");
        assert_eq!(s, format!("t=1,v1={}", hex(&mac.finalize().into_bytes())));
    }

    #[test]
    fn backoff_doubles_to_its_cap() {
        let b = Duration::from_secs(10);
        let cap = Duration::from_secs(3600);
        assert_eq!(backoff(1, b, cap, 1.0), b);
        assert_eq!(backoff(3, b, cap, 1.0), Duration::from_secs(40));
        assert_eq!(backoff(30, b, cap, 1.0), cap);
        assert_eq!(backoff(2, b, cap, 0.5), b);
    }

    #[test]
    fn events_checked() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(parse_events(&[]).is_err());
        assert!(parse_events(&s(&["BOGUS"])).is_err());
        assert!(parse_events(&s(&["OPERATION_FINISHED", "OPERATION_FINISHED"])).is_err());
        assert_eq!(
            parse_events(&s(&["OPERATION_FINISHED", "SPOT_RECLAIMED"])).unwrap(),
            vec![WebhookEvent::OperationFinished, WebhookEvent::SpotReclaimed]
        );
    }
}
