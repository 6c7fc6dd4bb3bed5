//! The string formats kube-apiserver checks in a custom resource (strfmt's registry, as its
//! schema validator uses it): a value that does not parse is `must be of type <format>`.

use serde_json::Value;

use super::{Cause, go_value};

/// A string's `format`, checked after its length and pattern: `must be of type <format>`.
pub(super) fn check_format(format: &str, s: &str, path: &str, causes: &mut Vec<Cause>) {
    if !format_ok(format, s) {
        let quoted = go_value(&Value::String(s.to_string()));
        causes.push((
            path.to_string(),
            "FieldValueTypeInvalid".into(),
            format!("Invalid value: {quoted}: {path} in body must be of type {format}: {quoted}"),
        ));
    }
}

/// Whether `s` is a string of the `format` kube-apiserver checks (strfmt's registry, the
/// formats a CRD's authors use: dates and times, UUIDs, IP addresses and CIDRs); unknown formats
/// pass, as they do on kube-apiserver.
pub(super) fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "date" => is_date(s),
        "date-time" | "datetime" => is_date_time(s),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(format, s),
        "ipv4" => ip_sloppy(s).is_some() && s.contains('.'),
        "ipv6" => ip_sloppy(s).is_some() && s.contains(':'),
        "cidr" => is_cidr(s),
        _ => true,
    }
}

/// `2006-01-02`, a day that exists.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i32> {
        s.get(r.clone())
            .filter(|p| p.bytes().all(|c| c.is_ascii_digit()))?
            .parse()
            .ok()
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let (Ok(y), Ok(m), Ok(d)) = (i16::try_from(y), i8::try_from(m), i8::try_from(d)) else {
        return false;
    };
    jiff::civil::Date::new(y, m, d).is_ok()
}

/// strfmt's `IsDateTime`: a date, `t` (either case), then `hh:mm:ss[.frac]` and `z` or an
/// offset.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let Ok(re) = super::values::pattern(
        r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$",
    ) else {
        return false;
    };
    re.captures(time).is_some_and(|c| {
        let at = |i| c.get(i).map_or("", |m| m.as_str());
        at(1) <= "23" && at(2) <= "59" && at(3) <= "59"
    })
}

fn is_uuid(format: &str, s: &str) -> bool {
    let version = match format {
        "uuid3" => "3[0-9a-f]{3}",
        "uuid4" => "4[0-9a-f]{3}",
        "uuid5" => "5[0-9a-f]{3}",
        _ => "[0-9a-f]{4}",
    };
    let variant = if format == "uuid" {
        "[0-9a-f]"
    } else {
        "[89ab]"
    };
    super::values::pattern(&format!(
        "(?i)^[0-9a-f]{{8}}-?[0-9a-f]{{4}}-?{version}-?{variant}[0-9a-f]{{3}}-?[0-9a-f]{{12}}$"
    ))
    .is_ok_and(|re| re.is_match(s))
}

/// An IP address, leading zeros in IPv4 parts tolerated (Kubernetes' "sloppy" parsing).
fn ip_sloppy(s: &str) -> Option<std::net::IpAddr> {
    if let Ok(ip) = s.parse() {
        return Some(ip);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 || parts.iter().any(|p| p.is_empty() || p.len() > 3) {
        return None;
    }
    let trimmed: Vec<&str> = parts
        .iter()
        .map(|p| match p.trim_start_matches('0') {
            "" => "0",
            t => t,
        })
        .collect();
    trimmed.join(".").parse().ok()
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let max = match ip_sloppy(ip) {
        Some(_) if ip.contains(':') => 128,
        Some(_) => 32,
        None => return false,
    };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|c| c.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_strfmt_checks_them() {
        for (format, good, bad) in [
            ("date", "2024-02-29", "2023-02-29"),
            ("date-time", "2024-01-01T00:00:00Z", "yesterday"),
            (
                "date-time",
                "2024-01-01t23:59:59.5+01:00",
                "2024-01-01T24:00:00Z",
            ),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "nope"),
            (
                "uuid4",
                "123e4567-e89b-42d3-a456-426614174000",
                "123e4567-e89b-12d3-a456-426614174000",
            ),
            ("ipv4", "010.1.2.3", "::1"),
            ("ipv6", "::1", "1.2.3.4"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("no-such-format", "anything", ""),
        ] {
            assert!(format_ok(format, good), "{format} {good}");
            if !bad.is_empty() {
                assert!(!format_ok(format, bad), "{format} {bad}");
            }
        }
    }
}
