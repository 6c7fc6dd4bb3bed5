//! Unit tests of the streaming list decoder.

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;

use super::*;

fn streamed(body: &[u8], chunk: usize) -> Result<ListPage<Arc<ConfigMap>>, ListWatchError> {
    let mut d =
        ListStreamDecoder::<ConfigMap>::new("ConfigMap", crate::source::DEFAULT_MAX_OBJECT_SIZE);
    for c in body.chunks(chunk.max(1)) {
        d.push(c);
    }
    d.finish()
}

fn names(page: &ListPage<Arc<ConfigMap>>) -> Vec<String> {
    page.items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap_or_default())
        .collect()
}

const TRICKY: &str = r#" {"kind":"ConfigMapList","apiVersion":"v1",
    "metadata":{"resourceVersion":"12","continue":"tok","remainingItemCount":4,
                "x":{"items":[1,2]},"y":"\"items\":["},
    "items" : [ {"metadata":{"name":"a\"}]{["},"data":{"k":"\\","q":"\u0022}"}} ,
                {"metadata":{"name":"b"},"data":{"nested":"[[{{"}}],
    "trailer":{"items":"no"} } "#;

#[test]
fn every_chunking_of_a_tricky_body_decodes_like_the_whole_body() {
    let whole = super::super::json::decode_list::<ConfigMap>(TRICKY.as_bytes(), "ConfigMap");
    // unknown envelope fields ("trailer", metadata "x"/"y") are ignored, as by serde
    let whole = whole.unwrap();
    assert_eq!(whole.items.len(), 2);
    for chunk in [1, 2, 3, 7, 64, TRICKY.len()] {
        let page = streamed(TRICKY.as_bytes(), chunk).unwrap();
        assert_eq!(names(&page), ["a\"}]{[", "b"], "chunk {chunk}");
        assert_eq!(page.items[0].data.as_ref().unwrap()["k"], "\\");
        assert_eq!(page.items[0].data.as_ref().unwrap()["q"], "\"}");
        assert_eq!(page.resource_version, "12");
        assert_eq!(page.continue_token.as_deref(), Some("tok"));
        assert_eq!(page.remaining_item_count, Some(4));
        let whole_items: Vec<_> = whole.items.iter().cloned().map(Arc::new).collect();
        assert_eq!(page.items, whole_items);
    }
}

#[test]
fn items_are_decoded_as_their_bytes_arrive() {
    let body = br#"{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;
    let mut d =
        ListStreamDecoder::<ConfigMap>::new("ConfigMap", crate::source::DEFAULT_MAX_OBJECT_SIZE);
    let first_end = body.windows(3).position(|w| w == b"}},").unwrap() + 2;
    d.push(&body[..first_end - 1]);
    assert_eq!(d.decoded(), 0, "the first item is not complete yet");
    d.push(&body[first_end - 1..first_end]);
    assert_eq!(d.decoded(), 1, "decoded on its closing brace");
    d.push(&body[first_end..]);
    assert_eq!(names(&d.finish().unwrap()), ["a", "b"]);
}

#[test]
fn batches_leave_early_only_once_the_list_kind_is_known() {
    let body = br#"{"kind":"ConfigMapList","metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}"#;
    let mut d =
        ListStreamDecoder::<ConfigMap>::new("ConfigMap", crate::source::DEFAULT_MAX_OBJECT_SIZE);
    let mut batches = Vec::new();
    for c in body.chunks(9) {
        d.push(c);
        if let Some(b) = d.take_batch(2) {
            batches.push(b.len());
        }
    }
    let rest = d.finish().unwrap();
    assert_eq!(batches, [2], "two items left early, in one batch");
    assert_eq!(names(&rest), ["c"]);

    // kind after items, or no kind: nothing leaves before the end
    for body in [
        &br#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"kind":"ConfigMapList"}"#[..],
        br#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
    ] {
        let mut d = ListStreamDecoder::<ConfigMap>::new("ConfigMap", crate::source::DEFAULT_MAX_OBJECT_SIZE);
        d.push(body);
        assert!(d.take_batch(1).is_none());
        assert_eq!(names(&d.finish().unwrap()), ["a", "b"]);
    }

    // a list of another kind fails before any item is decoded
    let mut d =
        ListStreamDecoder::<ConfigMap>::new("ConfigMap", crate::source::DEFAULT_MAX_OBJECT_SIZE);
    d.push(br#"{"kind":"PodList","items":[{"metadata":{"name":"a"}}"#);
    assert_eq!(d.decoded(), 0);
    assert!(d.take_batch(1).is_none());
    assert!(d.finish().unwrap_err().to_string().contains("PodList"));
}

#[test]
fn malformed_bodies_fail_with_a_decode_error() {
    for body in [
        &br#"{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"}}"#[..],
        br#"{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"}}]"#,
        br#"{"kind":"ConfigMapList","items":[1]}"#,
        br#"{"kind":"ConfigMapList","items":[{},,{}]}"#,
        br#"{"kind":"ConfigMapList","items":[{},]}"#,
        br#"{"kind":"ConfigMapList","items":[,{}]}"#,
        br#"{"kind":"ConfigMapList","items":[{}{}]}"#,
        br#"{"kind":"ConfigMapList","items":[{"metadata":"x"}]}"#,
        br#"{"kind":"ConfigMapList","items":[{"a":1]]}"#,
        br#"{"kind":"PodList","items":[{}]}"#,
        br#"{"kind":"ConfigMapList","items":[{}],"items":[{}]}"#,
        br#"{"kind":"ConfigMapList","items":[{}]} trailing"#,
        br#"[{"items":[{}]}]"#,
        b"",
        b"garbage",
    ] {
        for chunk in [1, 5, body.len().max(1)] {
            let err = streamed(body, chunk).unwrap_err();
            assert!(
                err.is_decode(),
                "{} chunk {chunk}: {err}",
                String::from_utf8_lossy(body)
            );
        }
    }
}

#[test]
fn an_items_key_written_with_escapes_still_decodes() {
    let body = br#"{"kind":"ConfigMapList","\u0069tems":[{"metadata":{"name":"a"}}]}"#;
    assert_eq!(names(&streamed(body, 3).unwrap()), ["a"]);
    let empty = streamed(br#"{"kind":"ConfigMapList","items":null}"#, 4).unwrap();
    assert!(empty.items.is_empty());
    let none = streamed(br#"{"kind":"ConfigMapList","metadata":{}}"#, 4).unwrap();
    assert!(none.items.is_empty());
}

fn arb_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('"'),
            Just('\\'),
            Just('{'),
            Just('}'),
            Just('['),
            Just(']'),
            Just(','),
            Just(':'),
            Just('é'),
            Just('\n'),
            prop::char::range('a', 'z'),
        ],
        0..12,
    )
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    /// Any chunking of any list decodes to the listed objects, exactly as the whole body.
    #[test]
    fn any_chunking_decodes_the_listed_objects(
        maps in prop::collection::vec(
            prop::collection::btree_map(arb_string(), arb_string(), 0..4), 0..6),
        pretty in any::<bool>(),
        cuts in prop::collection::vec(0usize..2000, 0..12),
    ) {
        let items: Vec<ConfigMap> = maps
            .into_iter()
            .enumerate()
            .map(|(i, data)| ConfigMap {
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: Some(format!("cm-{i}")),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            })
            .collect();
        let list = serde_json::json!({
            "kind": "ConfigMapList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "9"},
            "items": items,
        });
        let body = if pretty {
            serde_json::to_vec_pretty(&list).unwrap()
        } else {
            serde_json::to_vec(&list).unwrap()
        };
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (body.len() + 1)).collect();
        cuts.sort_unstable();
        let mut d = ListStreamDecoder::<ConfigMap>::new("ConfigMap", crate::source::DEFAULT_MAX_OBJECT_SIZE);
        let mut at = 0;
        for c in cuts.into_iter().chain([body.len()]) {
            d.push(&body[at..c]);
            at = c;
        }
        let page = d.finish().unwrap();
        let got: Vec<ConfigMap> = page.items.iter().map(|c| (**c).clone()).collect();
        prop_assert_eq!(&got, &items);
        prop_assert_eq!(page.resource_version, "9");
        let whole = super::super::json::decode_list::<ConfigMap>(&body, "ConfigMap").unwrap();
        prop_assert_eq!(whole.items, items);
    }
}
