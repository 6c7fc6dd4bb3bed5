//! Comparing resource versions: KEP-5504 (stable in Kubernetes 1.35), apimachinery's
//! `util/resourceversion.CompareResourceVersion`.
//!
//! A resource version is opaque in the API contract, but since KEP-5504 a client may compare
//! two versions *of the same resource on the same cluster*: both are decimal integers without
//! leading zeros (`"0"` excluded, it is a special value in list and watch requests), of any
//! length. The longer one is the greater; equal lengths compare lexically, which for such
//! strings is numeric order. Anything else (empty, `"0"`, a leading zero, a sign, a non-digit,
//! a version from a server whose versions are not integers) is not comparable: a typed
//! [`ResourceVersionError`], never a guess.

use std::cmp::Ordering;

/// Why two resource versions cannot be compared (apimachinery's `InvalidResourceVersion`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource version is not well formed: {0:?}")]
pub struct ResourceVersionError(pub String);

/// Whether `rv` is a resource version [`compare_resource_versions`] can compare: a non-empty
/// string of ASCII digits that does not start with `0`.
pub fn is_comparable_resource_version(rv: &str) -> bool {
    let bytes = rv.as_bytes();
    !bytes.is_empty() && bytes[0] != b'0' && bytes.iter().all(u8::is_ascii_digit)
}

/// Compares two resource versions of the same resource (apimachinery's
/// `CompareResourceVersion`, KEP-5504): `Less` when `a` is older than `b`.
///
/// Only meaningful for two versions of one resource from one cluster (and one storage
/// backend): comparing versions across clusters, or across an etcd restore, gives an answer
/// that means nothing.
///
/// ```
/// use std::cmp::Ordering;
/// use kinformer::object::compare_resource_versions;
///
/// assert_eq!(compare_resource_versions("9", "10"), Ok(Ordering::Less));
/// assert_eq!(compare_resource_versions("123", "123"), Ok(Ordering::Equal));
/// // Longer than any machine integer: still compared.
/// assert_eq!(
///     compare_resource_versions("100000000000000000000000000000001", "99"),
///     Ok(Ordering::Greater)
/// );
/// assert!(compare_resource_versions("010", "10").is_err());
/// assert!(compare_resource_versions("", "1").is_err());
/// ```
///
/// # Errors
/// [`ResourceVersionError`] naming the first argument (checked first, as apimachinery does)
/// that is not a comparable resource version.
pub fn compare_resource_versions(a: &str, b: &str) -> Result<Ordering, ResourceVersionError> {
    for rv in [a, b] {
        if !is_comparable_resource_version(rv) {
            return Err(ResourceVersionError(rv.to_owned()));
        }
    }
    Ok(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn well_formed_versions_compare_by_length_then_lexically() {
        let cases = [
            ("1", "1", Ordering::Equal),
            ("1", "2", Ordering::Less),
            ("2", "1", Ordering::Greater),
            ("9", "10", Ordering::Less),
            ("10", "9", Ordering::Greater),
            ("123", "124", Ordering::Less),
            (
                "999999999999999999999",
                "1000000000000000000000",
                Ordering::Less,
            ),
            (
                "340282366920938463463374607431768211456", // u128::MAX + 1
                "340282366920938463463374607431768211455",
                Ordering::Greater,
            ),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare_resource_versions(a, b), Ok(want), "{a} vs {b}");
        }
    }

    #[test]
    fn malformed_versions_are_a_typed_error_naming_the_culprit() {
        // apimachinery's test table: empty, zero, leading zeros, signs, non-digits.
        for bad in [
            "", "0", "00", "01", "-1", "+1", "1.0", "a", "1a", " 1", "1 ", "١",
        ] {
            assert_eq!(
                compare_resource_versions(bad, "5"),
                Err(ResourceVersionError(bad.to_owned())),
                "{bad:?} first"
            );
            assert_eq!(
                compare_resource_versions("5", bad),
                Err(ResourceVersionError(bad.to_owned())),
                "{bad:?} second"
            );
            assert!(!is_comparable_resource_version(bad));
        }
        // Both bad: the first is reported, as apimachinery does.
        assert_eq!(
            compare_resource_versions("x", "y"),
            Err(ResourceVersionError("x".into()))
        );
        assert_eq!(
            ResourceVersionError("01".into()).to_string(),
            "resource version is not well formed: \"01\""
        );
    }

    proptest! {
        /// For every pair of positive integers, the string comparison agrees with the numbers'.
        #[test]
        fn agrees_with_u128_order(a in 1u128.., b in 1u128..) {
            let (sa, sb) = (a.to_string(), b.to_string());
            prop_assert_eq!(compare_resource_versions(&sa, &sb), Ok(a.cmp(&b)));
        }

        /// Any string: comparable exactly when it parses as a positive u128 written without a
        /// leading zero or sign (for strings short enough to parse).
        #[test]
        fn comparable_exactly_when_canonical_positive_integer(s in "[0-9+a-]{0,38}") {
            let canonical = s.parse::<u128>().ok().filter(|n| *n > 0 && n.to_string() == s);
            prop_assert_eq!(is_comparable_resource_version(&s), canonical.is_some());
            match canonical {
                Some(n) => prop_assert_eq!(compare_resource_versions(&s, "7"), Ok(n.cmp(&7))),
                None => prop_assert!(compare_resource_versions(&s, "7").is_err()),
            }
        }
    }
}
