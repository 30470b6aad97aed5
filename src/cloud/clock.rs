//! The cloud's clock: the time usage, idle rules and TTLs are measured on. Against
//! Google it is this machine's wall clock (NTP keeps it within milliseconds of
//! Google's); against the simulator it is the simulator's virtual clock, read from
//! `GET /sim/v1/clock`, so `POST /sim/v1/clock:advance` moves usage, idle rules and TTLs
//! forward and tests never sleep for hours.
//!
//! Invariant: every reading of "now" for usage, idle and TTL decisions goes through a
//! [`CloudClock`]; an unreadable simulator clock is an error, never a silent fall back
//! to the wall clock (that would book hours of virtual time as seconds).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use url::Url;

#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    #[error("the simulator's clock at {url} could not be read: {message}")]
    Unreadable { url: String, message: String },
}

/// Where "now" comes from.
#[derive(Debug, Clone)]
pub enum CloudClock {
    /// This machine's wall clock.
    Wall,
    /// A simulator's virtual clock (`GET {url}` answers `{"time": RFC 3339}`).
    Sim { url: Url, http: reqwest::Client },
}

#[derive(Deserialize)]
struct SimClock {
    time: DateTime<Utc>,
}

impl CloudClock {
    pub fn new(url: Option<Url>, http: reqwest::Client) -> CloudClock {
        match url {
            None => CloudClock::Wall,
            Some(url) => CloudClock::Sim { url, http },
        }
    }

    /// The cloud's time now.
    pub async fn now(&self) -> Result<DateTime<Utc>, ClockError> {
        match self {
            CloudClock::Wall => Ok(Utc::now()),
            CloudClock::Sim { url, http } => {
                let unreadable = |message: String| ClockError::Unreadable {
                    url: url.to_string(),
                    message,
                };
                let reply = http
                    .get(url.clone())
                    .timeout(std::time::Duration::from_secs(10))
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .map_err(|e| unreadable(e.to_string()))?;
                let c: SimClock = reply.json().await.map_err(|e| unreadable(e.to_string()))?;
                Ok(c.time)
            }
        }
    }
}
