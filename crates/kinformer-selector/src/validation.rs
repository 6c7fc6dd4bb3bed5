//! Label key and value syntax (apimachinery's `IsQualifiedName` and `IsValidLabelValue`).

/// The longest label value, and the longest name part of a key.
const MAX_NAME_LEN: usize = 63;
/// The longest key prefix (a DNS subdomain).
const MAX_PREFIX_LEN: usize = 253;

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: starts and ends alphanumeric, with `-`, `_`,
/// `.` allowed inside.
fn is_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// An RFC 1123 subdomain: dot-separated labels of lowercase alphanumerics and `-`, each starting
/// and ending alphanumeric.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_PREFIX_LEN
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(first), Some(last)) => {
                    let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
                    lower_alnum(first)
                        && lower_alnum(last)
                        && b.iter().all(|c| lower_alnum(c) || *c == b'-')
                }
                _ => false,
            }
        })
}

/// Why `key` is not a valid label key, or `None` when it is: an optional DNS-subdomain prefix and
/// `/`, then a name of at most 63 characters.
pub(super) fn label_key_problem(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Some("prefix part must be non-empty");
        }
        if !is_dns_subdomain(prefix) {
            return Some(
                "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters",
            );
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty");
    }
    if name.len() > MAX_NAME_LEN {
        return Some("name part must be no more than 63 characters");
    }
    if !is_name_part(name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        );
    }
    None
}

/// Why `value` is not a valid label value, or `None` when it is: empty, or at most 63
/// characters starting and ending alphanumeric with `-`, `_`, `.` inside.
pub(super) fn label_value_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return None;
    }
    if value.len() > MAX_NAME_LEN {
        return Some("must be no more than 63 characters");
    }
    if !is_name_part(value) {
        return Some(
            "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        );
    }
    None
}
