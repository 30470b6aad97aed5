//! Kubernetes resource quantities (`100m`, `2`, `16Gi`, `1.5G`, `1e3`) as exact
//! thousandths, so CPU millicores, bytes and device counts all add up without floats.
//!
//! Also the API server's canonical form of a quantity ([`canonical`]).
//!
//! Invariant: [`milli`] never rounds down: a fractional thousandth rounds up, as the
//! API server does when it canonicalises a quantity (it keeps billionths, [`parse`]);
//! [`canonical`] keeps the written format's family (decimal, binary, exponent).

/// How a quantity was written, which decides its canonical suffix (Kubernetes'
/// `resource.Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `""`, `m`, `k`, `M`, `G`, ...
    DecimalSi,
    /// `Ki`, `Mi`, `Gi`, ...
    BinarySi,
    /// `1e3`, `5E-1`.
    DecimalExponent,
}

/// Billionths per unit: the API server keeps quantities to nano precision.
const NANO: i128 = 1_000_000_000;

/// The quantity in billionths of a unit, rounded up to the nearest billionth (as the
/// API server does), and how it was written; `None` when it is not a quantity.
pub fn parse(q: &str) -> Option<(i128, Format)> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    if num.is_empty() {
        return None;
    }
    // (numerator, denominator) of the suffix's multiplier, in billionths.
    let (mul, div, format): (i128, i128, Format) = match suffix {
        "" => (NANO, 1, Format::DecimalSi),
        "n" => (1, 1, Format::DecimalSi),
        "u" => (1000, 1, Format::DecimalSi),
        "m" => (1_000_000, 1, Format::DecimalSi),
        "k" => (NANO * 1000, 1, Format::DecimalSi),
        "M" => (NANO * 1_000_000, 1, Format::DecimalSi),
        "G" => (NANO * 1_000_000_000, 1, Format::DecimalSi),
        "T" => (NANO * 1_000_000_000_000, 1, Format::DecimalSi),
        "P" => (NANO * 1_000_000_000_000_000, 1, Format::DecimalSi),
        "E" => (NANO * 1_000_000_000_000_000_000, 1, Format::DecimalSi),
        "Ki" => (NANO << 10, 1, Format::BinarySi),
        "Mi" => (NANO << 20, 1, Format::BinarySi),
        "Gi" => (NANO << 30, 1, Format::BinarySi),
        "Ti" => (NANO << 40, 1, Format::BinarySi),
        "Pi" => (NANO << 50, 1, Format::BinarySi),
        "Ei" => (NANO << 60, 1, Format::BinarySi),
        s if s.starts_with(['e', 'E']) => {
            let exp: i32 = s[1..].parse().ok()?;
            let p = 10_i128.checked_pow(exp.unsigned_abs())?;
            if exp >= 0 {
                (NANO.checked_mul(p)?, 1, Format::DecimalExponent)
            } else {
                (NANO, p, Format::DecimalExponent)
            }
        }
        _ => return None,
    };
    let (negative, digits) = match num.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, num.strip_prefix('+').unwrap_or(num)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let all = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if !all(int) || !all(frac) || frac.len() > 30 {
        return None;
    }
    let int_v: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac_scale = 10_i128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let frac_v: i128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let numer = int_v
        .checked_mul(frac_scale)?
        .checked_add(frac_v)?
        .checked_mul(mul)?;
    let denom = frac_scale.checked_mul(div)?;
    let v = (numer + denom - 1) / denom; // round up
    Some((if negative { -v } else { v }, format))
}

/// The quantity in thousandths of a unit (`"100m"` -> 100, `"2"` -> 2000,
/// `"1Ki"` -> 1_024_000), or `None` when it is not a quantity.
pub fn milli(q: &str) -> Option<i128> {
    let (n, _) = parse(q)?;
    let per = NANO / 1000;
    Some(if n >= 0 {
        (n + per - 1) / per
    } else {
        -((-n) / per)
    })
}

/// The API server's canonical string of a quantity (`"1000m"` -> `"1"`, `"0.5"` ->
/// `"500m"`, `"2048Mi"` -> `"2Gi"`, `"1536Mi"` stays): the written format is kept (a
/// binary quantity below 1Ki or not a whole number becomes decimal), and the largest
/// suffix that keeps the number whole is chosen. `None` when it is not a quantity.
pub fn canonical(q: &str) -> Option<String> {
    let (nanos, format) = parse(q)?;
    Some(format_nanos(nanos, format))
}

/// The canonical string of `nanos` billionths written in `format`.
pub fn format_nanos(nanos: i128, format: Format) -> String {
    if nanos == 0 {
        return "0".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let abs = nanos.unsigned_abs();
    let binary = format == Format::BinarySi
        && abs >= 1024 * NANO.unsigned_abs()
        && abs.is_multiple_of(NANO.unsigned_abs());
    if binary {
        let (mut n, mut i) = (abs / NANO.unsigned_abs(), 0);
        while n.is_multiple_of(1024) && i < 6 {
            n /= 1024;
            i += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][i];
        return format!("{sign}{n}{suffix}");
    }
    // Decimal: mantissa * 10^exp with exp a multiple of 3 from -9 up, as large as
    // keeps the mantissa whole.
    let (mut n, mut exp) = (abs, -9_i32);
    while n.is_multiple_of(1000) && exp < 18 {
        n /= 1000;
        exp += 3;
    }
    let suffix = match (format, exp) {
        (_, 0) => String::new(),
        (Format::DecimalExponent, e) => format!("e{e}"),
        (_, -9) => "n".into(),
        (_, -6) => "u".into(),
        (_, -3) => "m".into(),
        (_, 3) => "k".into(),
        (_, 6) => "M".into(),
        (_, 9) => "G".into(),
        (_, 12) => "T".into(),
        (_, 15) => "P".into(),
        _ => "E".into(),
    };
    format!("{sign}{n}{suffix}")
}

/// A quantity in an object as the API server reads it: a string, or a JSON number
/// (which the server reads as the number's text).
pub fn canonical_json(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => canonical(s),
        serde_json::Value::Number(n) => canonical(&n.to_string()),
        _ => None,
    }
}

/// Whole units, rounded up (`"1500m"` -> 2); 0 when unparseable or negative.
pub fn units(q: &str) -> u64 {
    milli(q).map_or(0, |m| u64::try_from((m + 999) / 1000).unwrap_or(0))
}

/// Millicores (or thousandths of any unit); 0 when unparseable or negative.
pub fn millis(q: &str) -> u64 {
    milli(q).map_or(0, |m| u64::try_from(m).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(milli("100m"), Some(100));
        assert_eq!(milli("2"), Some(2000));
        assert_eq!(milli("0.5"), Some(500));
        assert_eq!(milli("1Ki"), Some(1_024_000));
        assert_eq!(milli("16Gi"), Some(16 * (1 << 30) * 1000));
        assert_eq!(milli("1.5G"), Some(1_500_000_000_000));
        assert_eq!(milli("1e3"), Some(1_000_000));
        assert_eq!(milli("1m"), Some(1));
        assert_eq!(milli("0.0001"), Some(1)); // rounds up
        assert_eq!(milli("abc"), None);
        assert_eq!(milli("1Qi"), None);
        assert_eq!(units("1500m"), 2);
        assert_eq!(units("4"), 4);
        assert_eq!(millis("3900m"), 3900);
        assert_eq!(milli("-1500m"), Some(-1500));
    }

    #[test]
    fn canonical_forms_match_kubernetes() {
        for (given, want) in [
            ("1000m", "1"),
            ("0.5", "500m"),
            ("1536Mi", "1536Mi"),
            ("2048Mi", "2Gi"),
            ("1e3", "1e3"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1.5", "1500m"),
            ("100m", "100m"),
            ("0.0001", "100u"),
            ("512Ki", "512Ki"),
            ("0.5Gi", "512Mi"),
            ("1Ki", "1Ki"),
            ("1023Ki", "1023Ki"),
            ("100Mi", "100Mi"),
            ("1.5Ki", "1536"),
            ("0.5Ki", "512"),
            ("16Gi", "16Gi"),
            ("1G", "1G"),
            ("1000M", "1G"),
            ("0", "0"),
            ("0Gi", "0"),
            ("-1", "-1"),
            ("+2", "2"),
            ("2E3", "2e3"),
            ("5e-1", "500e-3"),
        ] {
            assert_eq!(canonical(given).as_deref(), Some(want), "{given}");
        }
        assert_eq!(canonical("abc"), None);
        assert_eq!(canonical("1 Gi"), None);
        assert_eq!(canonical_json(&serde_json::json!(1)).as_deref(), Some("1"));
        assert_eq!(
            canonical_json(&serde_json::json!(0.5)).as_deref(),
            Some("500m")
        );
        assert_eq!(canonical_json(&serde_json::json!(true)), None);
    }
}
