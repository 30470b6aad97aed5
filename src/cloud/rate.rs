//! An adaptive request rate per Google project and API (`compute`, `container`, ...):
//! additive increase, multiplicative decrease (AIMD), fed by Google's answers. All of
//! this process's calls to one project's API share one token bucket; a 429 (or a rate-limit
//! reason) cuts that bucket's rate to [`DECREASE`] of what was being sent, at most once a
//! [`COOLDOWN`] (the 429s of requests already in flight are one signal, not many), and
//! every success adds back a little, so the rate climbs by a tenth of the ceiling per
//! second of traffic. So a burst does not hammer a team's quota with every worker
//! retrying on its own: they all queue behind the same, slower bucket.
//!
//! Invariant: the rate stays between the floor and the ceiling; an untouched bucket is
//! at the ceiling with a burst of one second, so a project that Google never refuses is
//! never slowed; a caller is never made to wait past its own deadline (it is told how
//! long it would have had to wait instead). The current rate of each bucket is the gauge
//! `kineticd_cloud_rate_limit{project,api}` (requests per second).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// The factor a 429 applies to the rate being sent.
pub const DECREASE: f64 = 0.7;
/// At most one decrease per this long.
pub const COOLDOWN: Duration = Duration::from_secs(1);
/// The default ceiling (requests per second per project and API).
pub const DEFAULT_CEILING: f64 = 100.0;
/// The lowest rate a bucket is cut to (requests per second).
pub const FLOOR: f64 = 1.0;

/// One project's API.
#[derive(Debug)]
struct Bucket {
    /// Requests per second allowed now.
    rate: f64,
    /// The theoretical arrival time of the next request (GCRA): a request may go at
    /// `tat - burst`, which is the past while the bucket holds tokens.
    tat: Instant,
    last_cut: Option<Instant>,
    /// Requests sent in the current one-second window, and the rate of the last one.
    window_start: Instant,
    window_sent: u32,
    sent_rate: Option<f64>,
    gauge: metrics::Gauge,
}

impl Bucket {
    fn new(ceiling: f64, now: Instant, gauge: metrics::Gauge) -> Bucket {
        gauge.set(ceiling);
        Bucket {
            rate: ceiling,
            tat: now,
            last_cut: None,
            window_start: now,
            window_sent: 0,
            sent_rate: None,
            gauge,
        }
    }

    /// The rate being sent: the last full window's, or the current one's when there is
    /// none yet.
    fn sending(&self, now: Instant) -> f64 {
        self.sent_rate.unwrap_or_else(|| {
            let secs = now.duration_since(self.window_start).as_secs_f64().max(0.1);
            f64::from(self.window_sent) / secs
        })
    }

    fn count_send(&mut self, now: Instant) {
        let elapsed = now.duration_since(self.window_start);
        if elapsed >= Duration::from_secs(1) {
            self.sent_rate = Some(f64::from(self.window_sent) / elapsed.as_secs_f64());
            self.window_start = now;
            self.window_sent = 0;
        }
        self.window_sent += 1;
    }
}

/// The buckets of every project and API this process calls; cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct AdaptiveRates {
    ceiling: f64,
    buckets: Arc<Mutex<HashMap<(String, &'static str), Bucket>>>,
}

/// One API's rate, as `diagnose` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRate {
    pub api: &'static str,
    /// Requests per second allowed now.
    pub rate: f64,
    pub ceiling: f64,
}

impl AdaptiveRates {
    /// Buckets that start at `ceiling` requests per second (at least [`FLOOR`]).
    pub fn new(ceiling: f64) -> AdaptiveRates {
        AdaptiveRates {
            ceiling: ceiling.max(FLOOR),
            buckets: Arc::default(),
        }
    }

    fn with_bucket<T>(
        &self,
        project: &str,
        api: &'static str,
        f: impl FnOnce(&mut Bucket, Instant) -> T,
    ) -> T {
        let now = Instant::now();
        let mut g = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let key = (project.to_owned(), api);
        let b = g.entry(key).or_insert_with(|| {
            let gauge = metrics::gauge!("kineticd_cloud_rate_limit",
                "project" => project.to_owned(), "api" => api);
            Bucket::new(self.ceiling, now, gauge)
        });
        f(b, now)
    }

    /// Wait for a slot to send one request to `project`'s `api`; `Err(wait)` when the slot
    /// would come after `deadline` (nothing is taken then).
    pub async fn acquire(
        &self,
        project: &str,
        api: &'static str,
        deadline: Instant,
    ) -> Result<(), Duration> {
        let at = self.with_bucket(project, api, |b, now| {
            let interval = Duration::from_secs_f64(1.0 / b.rate);
            // A burst of one second's worth of requests.
            let burst = Duration::from_secs_f64(1.0);
            let tat = b.tat.max(now);
            let at = tat.checked_sub(burst).unwrap_or(now).max(now);
            if at > deadline {
                return Err(at - now);
            }
            b.tat = tat + interval;
            b.count_send(at);
            Ok(at)
        })?;
        tokio::time::sleep_until(at).await;
        Ok(())
    }

    /// Feed an answer of `project`'s `api` back: `throttled` for a 429 or a rate-limit
    /// reason, otherwise any answer (even an error) that was not a refusal to serve.
    pub fn answered(&self, project: &str, api: &'static str, throttled: bool) {
        let ceiling = self.ceiling;
        self.with_bucket(project, api, |b, now| {
            let before = b.rate;
            if throttled {
                if b.last_cut.is_some_and(|t| now.duration_since(t) < COOLDOWN) {
                    return;
                }
                b.last_cut = Some(now);
                let sending = b.sending(now).max(FLOOR);
                b.rate = (b.rate.min(sending) * DECREASE).max(FLOOR);
                tracing::info!(
                    project,
                    api,
                    from = before,
                    to = b.rate,
                    "Google answered 429: sending less to this project's API"
                );
            } else if b.rate < ceiling {
                // A tenth of the ceiling per second of traffic at this rate.
                b.rate = (b.rate + ceiling / 10.0 / b.rate).min(ceiling);
            } else {
                return;
            }
            // The next slot follows the new interval.
            b.gauge.set(b.rate);
        });
    }

    /// The current rate of every API of `project` this process has called.
    pub fn of_project(&self, project: &str) -> Vec<ApiRate> {
        let g = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<ApiRate> = g
            .iter()
            .filter(|((p, _), _)| p == project)
            .map(|((_, api), b)| ApiRate {
                api,
                rate: b.rate,
                ceiling: self.ceiling,
            })
            .collect();
        out.sort_by_key(|r| r.api);
        out
    }
}

/// The project a Google API path names (`projects/{p}/...`, `projects/{p}:getIamPolicy`,
/// or an absolute URL holding such a path); `None` when it names none (Storage's
/// `b/{bucket}`).
pub fn project_of(path: &str) -> Option<&str> {
    let start = path.find("projects/")? + "projects/".len();
    let rest = &path[start..];
    let end = rest.find(['/', ':', '?']).unwrap_or(rest.len());
    let p = &rest[..end];
    (!p.is_empty()).then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_of_paths() {
        assert_eq!(project_of("projects/p1/zones/z/clusters"), Some("p1"));
        assert_eq!(project_of("projects/p2:getIamPolicy"), Some("p2"));
        assert_eq!(
            project_of("http://127.0.0.1:1/compute/v1/projects/p3/zones/z/operations/o"),
            Some("p3")
        );
        assert_eq!(project_of("b/bucket/o"), None);
        assert_eq!(project_of("projects/"), None);
    }

    #[tokio::test]
    async fn a_429_cuts_the_rate_and_successes_restore_it() {
        let rates = AdaptiveRates::new(100.0);
        let far = Instant::now() + Duration::from_secs(3600);
        for _ in 0..20 {
            rates.acquire("p", "compute", far).await.unwrap();
        }
        assert_eq!(
            rates.of_project("p")[0].rate,
            100.0,
            "untouched: the ceiling"
        );
        rates.answered("p", "compute", true);
        let cut = rates.of_project("p")[0].rate;
        assert!((FLOOR..100.0).contains(&cut), "{cut}");
        // A second 429 within the cooldown is the same signal.
        rates.answered("p", "compute", true);
        assert_eq!(rates.of_project("p")[0].rate, cut);
        for _ in 0..10_000 {
            rates.answered("p", "compute", false);
        }
        assert_eq!(rates.of_project("p")[0].rate, 100.0);
        assert!(rates.of_project("other").is_empty());
    }

    #[tokio::test]
    async fn a_slow_bucket_spaces_requests_and_respects_deadlines() {
        let rates = AdaptiveRates::new(20.0);
        let start = Instant::now();
        let far = start + Duration::from_secs(3600);
        // The burst (one second's worth: 20) goes at once, then one every 50 ms.
        for _ in 0..25 {
            rates.acquire("p", "container", far).await.unwrap();
        }
        let took = Instant::now() - start;
        assert!(
            took >= Duration::from_millis(150) && took < Duration::from_millis(1000),
            "{took:?}"
        );
        let soon = Instant::now() + Duration::from_millis(1);
        let wait = rates.acquire("p", "container", soon).await.unwrap_err();
        assert!(wait > Duration::from_millis(1), "{wait:?}");
    }
}
