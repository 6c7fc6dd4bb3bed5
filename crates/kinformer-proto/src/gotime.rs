//! Go's text forms of `metav1.Time`, `metav1.MicroTime` and `metav1.Duration`.

use crate::ProtoError;

fn timestamp(seconds: i64, nanos: i32) -> Result<jiff::Timestamp, ProtoError> {
    jiff::Timestamp::new(seconds, nanos).map_err(|_| ProtoError::Malformed("time out of range"))
}

/// `metav1.Time` as JSON writes it: RFC 3339 in UTC, whole seconds.
pub(crate) fn format_time(seconds: i64) -> Result<String, ProtoError> {
    Ok(timestamp(seconds, 0)?
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string())
}

/// `metav1.MicroTime` as JSON writes it: RFC 3339 in UTC with six fractional digits.
pub(crate) fn format_micro_time(seconds: i64, nanos: i32) -> Result<String, ProtoError> {
    let micros = nanos.clamp(0, 999_999_999) / 1000;
    Ok(format!(
        "{}.{micros:06}Z",
        timestamp(seconds, 0)?.strftime("%Y-%m-%dT%H:%M:%S")
    ))
}

/// An RFC 3339 time as (seconds, nanos).
pub(crate) fn parse_time(s: &str) -> Result<(i64, i32), ProtoError> {
    let t: jiff::Timestamp = s
        .parse()
        .map_err(|_| ProtoError::Json(format!("not an RFC 3339 time: {s:?}")))?;
    Ok((t.as_second(), t.subsec_nanosecond()))
}

/// Go's `time.Duration.String()`.
pub(crate) fn format_duration(d: i64) -> String {
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".to_owned(),
            1..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        out.push_str(&frac(u, prec));
        out.push_str(unit);
    } else {
        let secs = frac(u % 60_000_000_000, 9);
        u /= 60_000_000_000;
        if u > 0 {
            let m = u % 60;
            u /= 60;
            if u > 0 {
                out.push_str(&format!("{u}h"));
            }
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&secs);
        out.push('s');
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// `v / 10^prec` with the fraction's trailing zeros (and a bare point) left out.
fn frac(v: u64, prec: u32) -> String {
    let p = 10u64.pow(prec);
    let (int, fr) = (v / p, v % p);
    if fr == 0 {
        return int.to_string();
    }
    let digits = format!("{fr:0width$}", width = prec as usize);
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`.
pub(crate) fn parse_duration(s: &str) -> Result<i64, ProtoError> {
    let bad = || ProtoError::Json(format!("not a Go duration: {s:?}"));
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let int: u128 = if int_end == 0 {
            0
        } else {
            rest[..int_end].parse().map_err(|_| bad())?
        };
        rest = &rest[int_end..];
        let mut frac_num: u128 = 0;
        let mut frac_den: u128 = 1;
        let mut had_frac = false;
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            for d in r[..end].bytes().take(18) {
                frac_num = frac_num * 10 + u128::from(d - b'0');
                frac_den *= 10;
            }
            had_frac = end > 0;
            rest = &r[end..];
        }
        if int_end == 0 && !had_frac {
            return Err(bad());
        }
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale: u128 = match &rest[..unit_end] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_end..];
        total = total
            .checked_add(int.checked_mul(scale).ok_or_else(bad)?)
            .and_then(|t| t.checked_add(frac_num * scale / frac_den))
            .ok_or_else(bad)?;
        if total > i64::MAX as u128 + u128::from(neg) {
            return Err(bad());
        }
    }
    let total = i128::try_from(total).map_err(|_| bad())?;
    i64::try_from(if neg { -total } else { total }).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_writes_them() {
        for (d, s) in [
            (0i64, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * 60_000_000_000 + 5_000_000_000, "4m5s"),
            (
                5 * 3_600_000_000_000 + 6 * 60_000_000_000 + 7_001_000_000,
                "5h6m7.001s",
            ),
            (3_600_000_000_000, "1h0m0s"),
            (-1_500_000_000, "-1.5s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(format_duration(d), s);
            assert_eq!(parse_duration(s).unwrap(), d, "{s}");
        }
        assert_eq!(parse_duration("1.5h").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration("300ms").unwrap(), 300_000_000);
        for bad in ["", "1", "h", "1x", ".s", "--1s", "9999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_as_go_writes_them() {
        assert_eq!(format_time(0).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_micro_time(1_700_000_000, 123_456_789).unwrap(),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20.5+01:00").unwrap(),
            (1_699_996_400, 500_000_000)
        );
        assert!(parse_time("yesterday").is_err());
    }
}
