//! Untrusted input never panics (property tests over the request decoders, below the HTTP
//! layer): arbitrary selectors, continue tokens, paths, query strings and
//! bodies are either accepted or rejected with a 4xx `Status`.

use crate::api::Registry;
use crate::http::parse_path;
use crate::list::decode_continue;
use crate::objects::{decode_body, prepare_create};
use crate::options::{ListOptions, parse_query};
use crate::patch::{PatchType, apply_patch};
use crate::resource::builtin_resources;
use crate::selector::{FieldSelector, LabelSelector};
use proptest::prelude::*;

proptest! {
    #[test]
    fn selectors_parse_or_fail_cleanly(s in ".{0,64}") {
        let _ = LabelSelector::parse(&s);
        let _ = FieldSelector::parse(&s);
    }

    #[test]
    fn selector_like_text_parses_or_fails_cleanly(s in "[a-z!=(), ]{0,40}") {
        if let Ok(sel) = LabelSelector::parse(&s) {
            let _ = sel.matches(&Default::default());
        }
    }

    #[test]
    fn continue_tokens_are_4xx_or_valid(s in ".{0,80}") {
        if let Err(e) = decode_continue(&s) {
            prop_assert_eq!(e.code, 400);
        }
    }

    #[test]
    fn query_strings_validate_to_4xx_or_options(q in "[a-zA-Z=&%0-9+.()!,]{0,80}") {
        if let Err(e) = ListOptions::from_query(&parse_query(Some(&q))) {
            prop_assert!(e.code == 400 || e.code == 422, "{}", e.code);
        }
    }

    #[test]
    fn paths_resolve_without_panicking(p in "(/[a-z0-9.%-]{0,12}){0,8}") {
        let _ = parse_path(&Registry::new(), &p);
    }

    #[test]
    fn bodies_are_rejected_with_4xx(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let res = builtin_resources().remove(0);
        match decode_body(&res, &body) {
            Ok(obj) => {
                if let Err(e) = prepare_create(&res, "default", obj, 2) {
                    prop_assert!(e.code == 400 || e.code == 422);
                }
            }
            Err(e) => prop_assert_eq!(e.code, 400),
        }
    }

    #[test]
    fn json_bodies_are_rejected_with_4xx(v in arb_json()) {
        let res = builtin_resources().remove(0);
        let body = serde_json::to_vec(&v).unwrap();
        match decode_body(&res, &body) {
            Ok(obj) => {
                if let Err(e) = prepare_create(&res, "default", obj, 2) {
                    prop_assert!(e.code == 400 || e.code == 422);
                }
            }
            Err(e) => prop_assert_eq!(e.code, 400),
        }
    }

    #[test]
    fn server_side_applies_succeed_or_fail_cleanly(
        live in arb_json(),
        config in arb_json(),
        bytes in proptest::collection::vec(any::<u8>(), 0..100),
        force in any::<bool>(),
    ) {
        let res = builtin_resources()
            .into_iter()
            .find(|r| r.plural == "pods")
            .unwrap();
        let w = crate::objects::Writer { manager: "m".into(), subresource: None };
        // Arbitrary bytes: decoded (JSON or YAML) or refused with 400.
        if let Err(e) = crate::objects::apply::decode_config(&bytes) {
            prop_assert_eq!(e.code, 400);
        }
        // Arbitrary live objects and configurations: merged, or 409/500 as kube-apiserver.
        if let (serde_json::Value::Object(l), serde_json::Value::Object(c)) = (&live, &config)
            && let Err(e) = crate::objects::apply::apply(&res, Some(l), c, &w, force)
        {
            prop_assert!(e.code == 409 || e.code == 500);
        }
    }

    #[test]
    fn patches_apply_or_fail_with_4xx(doc in arb_json(), patch in proptest::collection::vec(any::<u8>(), 0..100)) {
        let res = builtin_resources().remove(0);
        for pt in [PatchType::Merge, PatchType::Json, PatchType::StrategicMerge] {
            let mut d = doc.clone();
            if let Err(e) = apply_patch(&res, &mut d, pt, &patch) {
                prop_assert!(e.code == 400 || e.code == 422);
            }
        }
    }
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z]{0,6}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("metadata".to_string()),
                    Just("name".to_string()),
                    Just("labels".to_string()),
                    Just("kind".to_string()),
                    "[a-z]{1,5}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}
