//! A cluster's TTL as `up` asks for it: `ttl` (a duration from now on the cloud's clock)
//! or `expireTime` (an instant), never both.
//!
//! Invariant: an expiry is at least a minute and at most [`MAX_TTL`] away when it is
//! set, and is read on the cloud's clock (the simulator's in `--dev`), so the TTL sweep,
//! which reads the same clock, brings the cluster down when the cloud's time says so.

use chrono::{DateTime, Utc};

use crate::cloud::Cloud;
use crate::domain::duration;

use super::super::{Error, Result};

/// The longest TTL (a year).
pub const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(365 * 86_400);
/// The shortest TTL.
pub const MIN_TTL: std::time::Duration = std::time::Duration::from_secs(60);

fn bad(field: &str, message: String) -> Error {
    Error::invalid("INVALID_TTL", message).with("field", field)
}

/// The cloud's time now (503 CLOUD_UNAVAILABLE when its clock cannot be read).
pub async fn cloud_now(cloud: &Cloud) -> Result<DateTime<Utc>> {
    cloud.clock.now().await.map_err(|e| {
        tracing::warn!(error = %e, "cloud clock unreadable");
        Error::unavailable("CLOUD_UNAVAILABLE", e.to_string(), 5)
    })
}

/// The expiry `ttl` or `expire_time` ask for, if either; checked before anything is
/// written.
pub async fn expiry(
    cloud: &Cloud,
    ttl: Option<&str>,
    expire_time: Option<&str>,
) -> Result<Option<DateTime<Utc>>> {
    let within = |field: &str, at: DateTime<Utc>, now: DateTime<Utc>| {
        let min = now + chrono::Duration::from_std(MIN_TTL).unwrap_or_default();
        let max = now + chrono::Duration::from_std(MAX_TTL).unwrap_or_default();
        if at < min || at > max {
            return Err(bad(
                field,
                format!(
                    "{field} must be between {}s and {}s from now (the cloud's clock: {})",
                    MIN_TTL.as_secs(),
                    MAX_TTL.as_secs(),
                    now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            ));
        }
        Ok(Some(at))
    };
    match (ttl, expire_time) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(bad("ttl", "give ttl or expireTime, not both".to_owned())),
        (Some(t), None) => {
            let d = duration::parse_json(t, MAX_TTL).map_err(|_| {
                bad(
                    "ttl",
                    format!(
                        "ttl {t:?} is not a duration in seconds like \"86400s\" of at most {}s",
                        MAX_TTL.as_secs()
                    ),
                )
            })?;
            let now = cloud_now(cloud).await?;
            within(
                "ttl",
                now + chrono::Duration::from_std(d).unwrap_or_default(),
                now,
            )
        }
        (None, Some(e)) => {
            let at = DateTime::parse_from_rfc3339(e)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| {
                    bad(
                        "expireTime",
                        format!(
                            "expireTime {e:?} is not an RFC 3339 time like 2026-12-24T18:00:00Z"
                        ),
                    )
                })?;
            within("expireTime", at, cloud_now(cloud).await?)
        }
    }
}
