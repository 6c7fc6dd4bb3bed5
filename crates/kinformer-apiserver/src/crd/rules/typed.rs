//! Strings as Kubernetes' CEL environment types them by their schema's `format`.

use std::sync::Arc;

use cel::Value as Cel;
use serde_json::Value;

/// A string as CEL sees it in Kubernetes: by its schema's `format`, a `duration` (`1h30m`,
/// `1.5s`, `2d`), a `timestamp` (`date-time`, `date` at midnight UTC) or `bytes` (`byte`,
/// base64); else, and when it does not parse, a string.
pub(super) fn string(schema: Option<&Value>, s: &str) -> Cel {
    let format = schema
        .and_then(|sch| sch.get("format"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let typed = match format {
        "duration" => go_duration(s).map(Cel::Duration),
        "date-time" => s
            .parse::<jiff::Timestamp>()
            .ok()
            .and_then(timestamp)
            .map(Cel::Timestamp),
        "date" => s
            .parse::<jiff::civil::Date>()
            .ok()
            .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC).ok())
            .and_then(|z| timestamp(z.timestamp()))
            .map(Cel::Timestamp),
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .ok()
                .map(|b| Cel::Bytes(Arc::new(b)))
        }
        _ => None,
    };
    typed.unwrap_or_else(|| Cel::String(Arc::new(s.to_string())))
}

fn timestamp(t: jiff::Timestamp) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::from_timestamp(t.as_second(), t.subsec_nanosecond().try_into().ok()?)
        .map(|t| t.fixed_offset())
}

/// A duration as the schema's `duration` format reads it (go-openapi's `ParseDuration`: Go's
/// units and `d`, `w`, each number possibly with a fraction, an optional sign).
pub(super) fn go_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    match rest {
        "0" => return Some(chrono::Duration::zero()),
        "" => return None,
        _ => {}
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&n| n > 0)?;
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3_600e9,
            "d" => 86_400e9,
            "w" => 604_800e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        nanos += number * unit;
    }
    // what a Go `time.Duration` (int64 nanoseconds) holds
    if !nanos.is_finite() || nanos >= 9.2e18 {
        return None;
    }
    let d = chrono::Duration::nanoseconds(nanos.round() as i64);
    Some(if negative { -d } else { d })
}
