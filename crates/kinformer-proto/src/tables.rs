//! The schema tables, one per Kubernetes minor (`generated/v1_NN.rs`, written by
//! `gen/generate.sh`), and which of them the build uses.
//!
//! The application picks the Kubernetes version, as it does for k8s-openapi: exactly one of
//! k8s-openapi's `v1_NN` features is enabled in a build, and k8s-openapi's `k8s_if_1_NN!`
//! macros expand to their contents only for that one. So only that version's table is
//! compiled in, and it is [`CURRENT`]. With this crate's `every-version` feature (its own
//! tests) every table is compiled in, and [`CURRENT`] is still the selected one.

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
