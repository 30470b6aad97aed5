//! Durations typed by callers (`30s`, `500ms`, `1.5`), parsed within a bound.
//!
//! Invariant: a [`Duration`] returned here is finite, non-negative and at most the bound
//! the caller passed, so no later arithmetic on it (deadlines, `Instant + d`) can overflow
//! or panic, whatever the input was (`1e20`, `NaN`, `inf`, `-1`).

use std::time::Duration;

/// Why a duration was refused; the message names the limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    #[error("{0:?} is not a duration like 30s, 1.5s or 500ms")]
    Malformed(String),
    #[error("{0:?} is not a finite number")]
    NotFinite(String),
    #[error("{0:?} is negative; a duration must be 0 or more")]
    Negative(String),
    #[error("{text:?} is longer than the limit of {}s", max.as_secs_f64())]
    TooLong { text: String, max: Duration },
}

/// `seconds` as a duration in `0..=max`.
pub fn from_seconds(seconds: f64, max: Duration, text: &str) -> Result<Duration, DurationError> {
    if !seconds.is_finite() {
        return Err(DurationError::NotFinite(text.to_owned()));
    }
    if seconds < 0.0 {
        return Err(DurationError::Negative(text.to_owned()));
    }
    if seconds > max.as_secs_f64() {
        return Err(DurationError::TooLong {
            text: text.to_owned(),
            max,
        });
    }
    // Within `max`, so the conversion cannot fail; stay total anyway.
    Duration::try_from_secs_f64(seconds).map_err(|_| DurationError::NotFinite(text.to_owned()))
}

/// Parse `30s`, `1.5s`, `500ms` or a bare number of seconds, at most `max`.
pub fn parse(text: &str, max: Duration) -> Result<Duration, DurationError> {
    let s = text.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| DurationError::Malformed(text.chars().take(40).collect()))?;
    from_seconds(v * scale, max, &text.chars().take(40).collect::<String>())
}

/// Parse a Google JSON duration (`"7200s"`, `"1.5s"`: seconds with an `s`), at most
/// `max`; `500ms`, `2h` and bare numbers are refused.
pub fn parse_json(text: &str, max: Duration) -> Result<Duration, DurationError> {
    match text.trim().strip_suffix('s') {
        Some(n) if !n.ends_with('m') => parse(text, max),
        _ => Err(DurationError::Malformed(text.chars().take(40).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: Duration = Duration::from_secs(60);

    #[test]
    fn accepted_spellings() {
        assert_eq!(parse("500ms", MAX).unwrap(), Duration::from_millis(500));
        assert_eq!(parse("1.5s", MAX).unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("2", MAX).unwrap(), Duration::from_secs(2));
        assert_eq!(parse("60s", MAX).unwrap(), MAX);
        assert_eq!(parse("0", MAX).unwrap(), Duration::ZERO);
    }

    #[test]
    fn hostile_values_are_errors_not_panics() {
        for (text, want) in [
            ("1e20", "limit of 60s"),
            ("1e300s", "limit of 60s"),
            ("61s", "limit of 60s"),
            ("NaN", "not a finite"),
            ("inf", "not a finite"),
            ("-inf", "not a finite"),
            ("-1s", "negative"),
            ("soon", "not a duration"),
            ("", "not a duration"),
        ] {
            let e = parse(text, MAX).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(from_seconds(f64::MAX, Duration::MAX, "x").is_err());
    }
}
