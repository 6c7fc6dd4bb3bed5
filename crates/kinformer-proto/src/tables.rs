//! The schema tables, one per Kubernetes minor (`generated/v1_NN.rs`, written by
//! `gen/generate.sh`), and which of them the build uses.
//!
//! The application picks the Kubernetes version, as it does for k8s-openapi: exactly one of
//! k8s-openapi's `v1_NN` features is enabled in a build, and k8s-openapi's `k8s_if_1_NN!`
//! macros expand to their contents only for that one. So only that version's table is
//! compiled in, and it is [`CURRENT`]. With this crate's `every-version` feature (its own
//! tests) every table is compiled in, and [`CURRENT`] is still the selected one.

use crate::schema::MessageRef;

/// Declares the table of one Kubernetes minor, `$module` (`v1_35`, its file
/// `generated/v1_35.rs`), compiled in when k8s-openapi's `$when` macro keeps its contents or
/// with `every-version`, and makes it [`CURRENT`] when `$when` keeps its contents.
macro_rules! table {
    ($when:ident, $module:ident, $version:literal) => {
        #[cfg(feature = "every-version")]
        table!(@module $module, $version);
        #[cfg(not(feature = "every-version"))]
        k8s_openapi::$when! {
            table!(@module $module, $version);
        }
        k8s_openapi::$when! {
            /// The table of the Kubernetes version the build selected.
            pub(crate) use $module::TABLE as CURRENT;
        }
    };
    (@module $module:ident, $version:literal) => {
        #[doc = concat!("The table of Kubernetes ", $version, ".")]
        #[allow(clippy::all)]
        pub(crate) mod $module {
            include!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/generated/",
                stringify!($module),
                ".rs"
            ));

            /// This table.
            pub(crate) static TABLE: crate::schema::Table = crate::schema::Table {
                version: $version,
                messages: &MESSAGES,
                kinds: &KINDS,
            };
        }
    };
}

table!(k8s_if_1_33, v1_33, "1.33");
table!(k8s_if_1_34, v1_34, "1.34");
table!(k8s_if_1_35, v1_35, "1.35");
table!(k8s_if_1_36, v1_36, "1.36");
table!(k8s_if_1_37, v1_37, "1.37");

/// Every table, oldest first.
#[cfg(feature = "every-version")]
pub(crate) static ALL: [&crate::schema::Table; 5] = [
    &v1_33::TABLE,
    &v1_34::TABLE,
    &v1_35::TABLE,
    &v1_36::TABLE,
    &v1_37::TABLE,
];

/// The versions of [`ALL`].
#[cfg(feature = "every-version")]
pub(crate) const VERSIONS: [&str; 5] = ["1.33", "1.34", "1.35", "1.36", "1.37"];

// The lookups of a kind's message live with the tables (the schema types know no table).
impl MessageRef {
    /// The message of `kind` in `api_version` (`v1`, `apps/v1`), in the table of the
    /// Kubernetes version the build selected (see [`crate::kubernetes_version`]), for every
    /// kind the Go clients register (all built-in groups and versions,
    /// `apiextensions.k8s.io/v1`, and `meta.k8s.io/v1`'s `PartialObjectMetadata(List)`);
    /// `None` for anything else, such as a custom resource.
    pub fn for_kind(api_version: &str, kind: &str) -> Option<MessageRef> {
        CURRENT.for_kind(api_version, kind)
    }

    /// The message of `kind` in `api_version` in the table of Kubernetes
    /// `kubernetes_version` (`1.33` ... `1.37`, see [`crate::KUBERNETES_VERSIONS`]); `None`
    /// for an unknown kind or version. Only with the `every-version` feature, which compiles
    /// every table in (for tests).
    #[cfg(feature = "every-version")]
    pub fn for_kind_in(
        kubernetes_version: &str,
        api_version: &str,
        kind: &str,
    ) -> Option<MessageRef> {
        ALL.iter()
            .find(|t| t.version == kubernetes_version)?
            .for_kind(api_version, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Kind, Table};

    /// Every table file, whether compiled in or not: (file, its version).
    const FILES: [(&str, &str); 5] = [
        ("v1_33.rs", "1.33"),
        ("v1_34.rs", "1.34"),
        ("v1_35.rs", "1.35"),
        ("v1_36.rs", "1.36"),
        ("v1_37.rs", "1.37"),
    ];

    const HASH_LINE: &str = "// fnv1a64 of what follows this header: ";

    /// FNV-1a, 64 bits, as `gen/` computes it.
    fn fnv1a64(data: &[u8]) -> u64 {
        data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    #[test]
    fn fnv1a64_is_the_reference_function() {
        // the FNV reference test vectors
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// A table is as the generator wrote it: the hash in its header is that of what follows
    /// the header (which ends at the first empty line), and the header names its version.
    #[test]
    fn tables_are_not_edited_by_hand() {
        for (file, version) in FILES {
            let path = format!("{}/generated/{file}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let (header, body) = text
                .split_once("\n\n")
                .unwrap_or_else(|| panic!("{file}: no header"));
            assert!(
                header.starts_with(&format!(
                    "// @generated by crates/kinformer-proto/gen (generate.sh) for Kubernetes {version} from"
                )),
                "{file}: the header does not name Kubernetes {version}"
            );
            let want = header
                .lines()
                .find_map(|l| l.strip_prefix(HASH_LINE))
                .unwrap_or_else(|| panic!("{file}: no hash in the header"));
            let want = u64::from_str_radix(want, 16)
                .unwrap_or_else(|e| panic!("{file}: hash {want:?}: {e}"));
            assert_eq!(
                fnv1a64(body.as_bytes()),
                want,
                "{file} differs from what gen/ wrote: regenerate it (gen/generate.sh), do not edit it"
            );
        }
    }

    /// The tables compiled in.
    fn compiled() -> Vec<&'static Table> {
        #[cfg(feature = "every-version")]
        return ALL.to_vec();
        #[cfg(not(feature = "every-version"))]
        return vec![&CURRENT];
    }

    /// What the decoder and encoder rely on: every message index is in its table, and the
    /// kinds are sorted for binary search.
    #[test]
    fn tables_are_consistent() {
        for t in compiled() {
            let n = t.messages.len();
            let ok = |i: u16| usize::from(i) < n;
            fn indices(k: Kind, out: &mut Vec<u16>) {
                match k {
                    Kind::Msg(i)
                    | Kind::SchemaOrArray(i)
                    | Kind::SchemaOrBool(i)
                    | Kind::SchemaOrStringArray(i) => out.push(i),
                    Kind::Map(k) | Kind::Wrapper(k) => indices(*k, out),
                    _ => {}
                }
            }
            for m in t.messages {
                for f in m.fields {
                    let mut is = Vec::new();
                    indices(f.kind, &mut is);
                    assert!(
                        is.into_iter().all(ok),
                        "{} {}.{}",
                        t.version,
                        m.name,
                        f.json
                    );
                    if f.inline() {
                        assert!(matches!(f.kind, Kind::Msg(_)), "{} {}", t.version, m.name);
                    }
                }
            }
            assert!(t.kinds.iter().all(|k| ok(k.msg)), "{}", t.version);
            assert!(
                t.kinds.is_sorted_by(
                    |a, b| (a.group, a.version, a.kind) < (b.group, b.version, b.kind)
                ),
                "{}: kinds not sorted",
                t.version
            );
            assert!(t.for_kind("v1", "Pod").is_some(), "{}", t.version);
        }
    }

    #[cfg(feature = "every-version")]
    #[test]
    fn every_version_is_compiled_in_and_one_is_current() {
        assert_eq!(ALL.map(|t| t.version), VERSIONS);
        assert!(ALL.iter().any(|t| std::ptr::eq(*t, &CURRENT)));
    }
}
