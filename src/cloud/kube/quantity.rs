//! Kubernetes resource quantities (`100m`, `2`, `16Gi`, `1.5G`, `1e3`) as exact
//! thousandths, so CPU millicores, bytes and device counts all add up without floats.
//!
//! Invariant: [`milli`] never rounds down: a fractional thousandth rounds up, as the
//! API server does when it canonicalises a quantity.

/// The quantity in thousandths of a unit (`"100m"` -> 100, `"2"` -> 2000,
/// `"1Ki"` -> 1_024_000), or `None` when it is not a quantity.
pub fn milli(q: &str) -> Option<i128> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    if num.is_empty() {
        return None;
    }
    // (numerator, denominator) of the suffix's multiplier, times 1000 for milli-units.
    let (mul, div): (i128, i128) = match suffix {
        "" => (1000, 1),
        "m" => (1, 1),
        "k" => (1_000_000, 1),
        "M" => (1_000_000_000, 1),
        "G" => (1_000_000_000_000, 1),
        "T" => (1_000_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000_000, 1),
        "Ki" => (1000 << 10, 1),
        "Mi" => (1000 << 20, 1),
        "Gi" => (1000 << 30, 1),
        "Ti" => (1000 << 40, 1),
        "Pi" => (1000 << 50, 1),
        "Ei" => (1000 << 60, 1),
        s if s.starts_with(['e', 'E']) => {
            let exp: i32 = s[1..].parse().ok()?;
            if exp >= 0 {
                (1000 * 10_i128.checked_pow(u32::try_from(exp).ok()?)?, 1)
            } else {
                (1000, 10_i128.checked_pow(u32::try_from(-exp).ok()?)?)
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
    Some(if negative { -v } else { v })
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
    }
}
