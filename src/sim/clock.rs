//! The simulator's clock. Virtual time runs `speed` times faster than real time (speed 0:
//! everything is instantly due), or only moves when a test advances it (Explicit).
//!
//! Invariant: virtual time never goes backwards; `is_due` is the only question the state
//! machines ask, so every mode drives them the same way. Virtual time maps to one
//! calendar ([`Clock::wall`]: the wall-clock time the simulator started, plus virtual
//! time), so every timestamp the simulator writes and the time it tells kineticd
//! (`GET /sim/v1/clock`, the cloud's clock in `--dev`) agree.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockMode {
    /// Virtual time = real time x speed; speed 0 means every duration has elapsed.
    Auto { speed: f64 },
    /// Virtual time moves only through [`Clock::advance`].
    Explicit,
}

#[derive(Debug)]
pub struct Clock {
    mode: ClockMode,
    start: Instant,
    /// The calendar time of virtual time zero.
    epoch: chrono::DateTime<chrono::Utc>,
    /// How far [`Clock::advance`] moved virtual time, in nanoseconds, `u64::MAX` standing
    /// for `Duration::MAX` (an atomic: every state machine asks the time, many times a
    /// call).
    offset_nanos: AtomicU64,
}

/// A point in virtual time (since the simulator started).
pub type SimTime = Duration;

impl Clock {
    pub fn new(mode: ClockMode) -> Clock {
        Clock {
            mode,
            start: Instant::now(),
            epoch: chrono::Utc::now(),
            offset_nanos: AtomicU64::new(0),
        }
    }

    pub fn mode(&self) -> ClockMode {
        self.mode
    }

    fn offset(&self) -> Duration {
        match self.offset_nanos.load(Ordering::Acquire) {
            u64::MAX => Duration::MAX,
            n => Duration::from_nanos(n),
        }
    }

    /// Current virtual time.
    pub fn now(&self) -> SimTime {
        match self.mode {
            ClockMode::Auto { speed } if speed > 0.0 => {
                let run = Duration::try_from_secs_f64(self.start.elapsed().as_secs_f64() * speed)
                    .unwrap_or(Duration::MAX);
                run.saturating_add(self.offset())
            }
            ClockMode::Auto { .. } => self.offset(),
            ClockMode::Explicit => self.offset(),
        }
    }

    /// The calendar time of virtual time `t`.
    pub fn wall(&self, t: SimTime) -> chrono::DateTime<chrono::Utc> {
        self.epoch + chrono::Duration::from_std(t).unwrap_or(chrono::Duration::MAX)
    }

    /// The calendar time now (virtual).
    pub fn wall_now(&self) -> chrono::DateTime<chrono::Utc> {
        self.wall(self.now())
    }

    /// Whether virtual time `t` has been reached.
    pub fn is_due(&self, t: SimTime) -> bool {
        matches!(self.mode, ClockMode::Auto { speed } if speed == 0.0) || self.now() >= t
    }

    /// Move virtual time forward (any mode); saturates instead of overflowing (past about
    /// 584 years of advances, virtual time is `Duration::MAX`).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .offset_nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(by))
            });
    }

    /// Real time until virtual time `t` (zero when due; `None` in Explicit mode).
    pub fn real_until(&self, t: SimTime) -> Option<Duration> {
        match self.mode {
            ClockMode::Auto { speed } if speed > 0.0 => {
                let left = t.saturating_sub(self.now()).as_secs_f64() / speed;
                Some(Duration::try_from_secs_f64(left).unwrap_or(Duration::MAX))
            }
            ClockMode::Auto { .. } => Some(Duration::ZERO),
            ClockMode::Explicit => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        let c = Clock::new(ClockMode::Auto { speed: 0.0 });
        assert!(c.is_due(Duration::from_secs(3600)));
        let c = Clock::new(ClockMode::Explicit);
        assert!(!c.is_due(Duration::from_secs(10)));
        c.advance(Duration::from_secs(10));
        assert!(c.is_due(Duration::from_secs(10)));
        let c = Clock::new(ClockMode::Auto { speed: 1000.0 });
        assert!(c.real_until(Duration::from_secs(100)).unwrap() <= Duration::from_millis(100));
        // Huge advances saturate instead of panicking.
        let c = Clock::new(ClockMode::Explicit);
        c.advance(Duration::MAX);
        c.advance(Duration::MAX);
        assert_eq!(c.now(), Duration::MAX);
    }
}
