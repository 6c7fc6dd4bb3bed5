//! Go's text forms of `metav1.Time`, `metav1.MicroTime` and `metav1.Duration`.

use crate::ProtoError;

fn timestamp(seconds: i64, nanos: i32) -> Result<jiff::Timestamp, ProtoError> {
    jiff::Timestamp::new(seconds, nanos).map_err(|_| ProtoError::Malformed("time out of range"))
}

/// A time's text, kept on the stack: the decoder hands it to the visitor as a `&str`
/// (k8s-openapi parses it straight back into a `jiff::Timestamp`, so it is never kept).
pub(crate) struct TimeText {
    buf: [u8; 32],
    len: usize,
}

impl TimeText {
    pub(crate) fn as_str(&self) -> &str {
        // only ASCII digits and punctuation are ever written
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    fn push(&mut self, b: &[u8]) {
        let end = (self.len + b.len()).min(self.buf.len());
        self.buf[self.len..end].copy_from_slice(&b[..end - self.len]);
        self.len = end;
    }

    /// `v` as `width` digits, zero-padded.
    fn digits(&mut self, v: u32, width: usize) {
        let mut d = [b'0'; 10];
        let mut v = v;
        for i in (0..width.min(10)).rev() {
            d[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.push(&d[..width.min(10)]);
    }
}

/// The seconds the fast path writes: from the first of the year 0000 to the last that jiff
/// (k8s-openapi's time type) holds, late on 9999-12-30; jiff writes, or refuses, the rest.
const FAST: std::ops::RangeInclusive<i64> = -62_167_219_200..=253_402_207_200;

/// `seconds` since the epoch as `YYYY-MM-DDTHH:MM:SS` (UTC), for years 0000 to 9999.
fn date_time(seconds: i64, out: &mut TimeText) {
    let (days, secs) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // days to the civil date (proleptic Gregorian), by eras of 400 years from 0000-03-01
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    out.digits(year as u32, 4);
    out.push(b"-");
    out.digits(month as u32, 2);
    out.push(b"-");
    out.digits(day as u32, 2);
    out.push(b"T");
    out.digits((secs / 3_600) as u32, 2);
    out.push(b":");
    out.digits((secs / 60 % 60) as u32, 2);
    out.push(b":");
    out.digits((secs % 60) as u32, 2);
}

/// `seconds` as `YYYY-MM-DDTHH:MM:SS` (UTC), by the fast path or by jiff.
fn whole_seconds(seconds: i64) -> Result<TimeText, ProtoError> {
    let mut out = TimeText {
        buf: [0; 32],
        len: 0,
    };
    if FAST.contains(&seconds) {
        date_time(seconds, &mut out);
    } else {
        out.push(
            timestamp(seconds, 0)?
                .strftime("%Y-%m-%dT%H:%M:%S")
                .to_string()
                .as_bytes(),
        );
    }
    Ok(out)
}

/// `metav1.Time` as JSON writes it: RFC 3339 in UTC, whole seconds.
pub(crate) fn format_time(seconds: i64) -> Result<TimeText, ProtoError> {
    let mut out = whole_seconds(seconds)?;
    out.push(b"Z");
    Ok(out)
}

/// `metav1.MicroTime` as JSON writes it: RFC 3339 in UTC with six fractional digits.
pub(crate) fn format_micro_time(seconds: i64, nanos: i32) -> Result<TimeText, ProtoError> {
    let mut out = whole_seconds(seconds)?;
    out.push(b".");
    out.digits((nanos.clamp(0, 999_999_999) / 1000) as u32, 6);
    out.push(b"Z");
    Ok(out)
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

    /// What jiff writes (the fast path's reference).
    fn reference(seconds: i64, nanos: Option<i32>) -> Result<String, ProtoError> {
        let t = timestamp(seconds, 0)?.strftime("%Y-%m-%dT%H:%M:%S");
        Ok(match nanos {
            None => format!("{t}Z"),
            Some(n) => format!("{t}.{:06}Z", n.clamp(0, 999_999_999) / 1000),
        })
    }

    #[test]
    fn the_fast_time_text_is_jiffs_for_every_second_it_writes() {
        let mut seconds: Vec<i64> = vec![
            *FAST.start(),
            *FAST.start() + 1,
            *FAST.end(),
            *FAST.end() - 1,
            -1,
            0,
            1,
            951_782_400,    // 2000-02-29
            4_107_542_400,  // 2100-03-01
            -2_203_891_200, // 1900-02-28
        ];
        // a linear congruential walk over the whole range, and every day of 1999 to 2001
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let span = (FAST.end() - FAST.start()) as u64;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            seconds.push(FAST.start() + ((x >> 11) % span) as i64);
        }
        seconds.extend((0..3 * 366).map(|d| 915_148_800 + d * 86_400 + d * 37 % 86_400));
        for s in seconds {
            assert_eq!(
                format_time(s).unwrap().as_str(),
                reference(s, None).unwrap(),
                "{s}"
            );
            let n = (s % 1_000_000_000).abs() as i32;
            assert_eq!(
                format_micro_time(s, n).unwrap().as_str(),
                reference(s, Some(n)).unwrap(),
                "{s} {n}"
            );
        }
        // outside the fast path: jiff's text, or its range error
        for s in [*FAST.start() - 1, *FAST.end() + 1, i64::MIN, i64::MAX] {
            match reference(s, None) {
                Ok(want) => assert_eq!(format_time(s).unwrap().as_str(), want),
                Err(_) => assert!(format_time(s).is_err()),
            }
        }
    }

    #[test]
    fn times_as_go_writes_them() {
        assert_eq!(format_time(0).unwrap().as_str(), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_micro_time(1_700_000_000, 123_456_789)
                .unwrap()
                .as_str(),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20.5+01:00").unwrap(),
            (1_699_996_400, 500_000_000)
        );
        assert!(parse_time("yesterday").is_err());
    }
}
