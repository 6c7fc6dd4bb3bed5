//! Property tests of the shard hash and range logic: `n` equal shards cover the 64-bit hash
//! space exactly once, the rendered selector's bounds are what the ranges hold, and a range's
//! numeric check agrees with kube-apiserver's comparison of hex strings (apimachinery's
//! `sharding.HexLess` over `"0x%016x"` of the hash).
//!
//! The number of cases comes from `PROPTEST_CASES` (256 when unset).

use kinformer::shard::{HASH_SPACE_END, Shard, ShardKey, ShardRange, fnv1a_64};
use kube::api::ObjectMeta;
use proptest::prelude::*;

/// apimachinery's `HexLess`: lengths first, then the digits.
fn hex_less(a: &str, b: &str) -> bool {
    if a.len() != b.len() {
        return a.len() < b.len();
    }
    a < b
}

/// The bounds in a rendered selector, in order: `[(start, end)]`.
fn bounds(selector: &str) -> Vec<(String, String)> {
    selector
        .split(" || ")
        .map(|part| {
            let quoted: Vec<&str> = part.split('\'').collect();
            assert_eq!(quoted.len(), 5, "{part}");
            (quoted[1].to_owned(), quoted[3].to_owned())
        })
        .collect()
}

fn parse_bound(s: &str) -> u128 {
    u128::from_str_radix(s.strip_prefix("0x").unwrap(), 16).unwrap()
}

/// Hashes that matter most: bounds of equal splits and their neighbours, and anything else.
fn hash() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (1u32..=64, any::<u32>()).prop_map(|(n, i)| {
            let i = i % n;
            (HASH_SPACE_END * u128::from(i) / u128::from(n)) as u64
        }),
        (1u32..=64, any::<u32>(), -2i64..=2).prop_map(|(n, i, d)| {
            let i = i % n;
            ((HASH_SPACE_END * u128::from(i) / u128::from(n)) as u64).wrapping_add_signed(d)
        }),
        Just(0),
        Just(u64::MAX),
    ]
}

proptest! {
    #[test]
    fn equal_shards_cover_the_hash_space_exactly_once(count in 1u32..=300, h in hash()) {
        let shards: Vec<Shard> = (0..count)
            .map(|i| Shard::nth(ShardKey::Uid, i, count).unwrap())
            .collect();
        let owners = shards
            .iter()
            .filter(|s| s.ranges().iter().any(|r| r.contains(h)))
            .count();
        prop_assert_eq!(owners, 1);
        // contiguous, from 0 to 2^64
        prop_assert_eq!(shards[0].ranges()[0].start(), 0);
        prop_assert_eq!(shards[count as usize - 1].ranges()[0].end(), HASH_SPACE_END);
        for w in shards.windows(2) {
            prop_assert_eq!(w[0].ranges()[0].end(), u128::from(w[1].ranges()[0].start()));
        }
    }

    #[test]
    fn numeric_ranges_agree_with_kubes_hex_string_comparison(
        ranges in prop::collection::vec((any::<u64>(), 1u128..=(1u128 << 64)), 1..4),
        h in hash(),
    ) {
        let ranges: Vec<ShardRange> = ranges
            .into_iter()
            .filter_map(|(start, len)| {
                let end = (u128::from(start) + len).min(HASH_SPACE_END);
                ShardRange::new(start, end).ok()
            })
            .collect();
        prop_assume!(!ranges.is_empty());
        let shard = Shard::from_ranges(ShardKey::Namespace, ranges.clone()).unwrap();
        let rendered = bounds(&shard.selector());
        prop_assert_eq!(rendered.len(), ranges.len());
        let hash = format!("0x{h:016x}");
        let mut kube_says = false;
        for ((start, end), r) in rendered.iter().zip(&ranges) {
            // 16 lowercase digits, or exactly 2^64 for an end
            prop_assert_eq!(start.len(), 18);
            prop_assert!(end.len() == 18 || end == "0x10000000000000000");
            prop_assert_eq!(start.to_lowercase(), start.clone());
            prop_assert_eq!(parse_bound(start), u128::from(r.start()));
            prop_assert_eq!(parse_bound(end), r.end());
            let in_range = !hex_less(&hash, start) && hex_less(&hash, end);
            prop_assert_eq!(in_range, r.contains(h));
            kube_says |= in_range;
        }
        prop_assert_eq!(kube_says, shard.ranges().iter().any(|r| r.contains(h)));
    }

    #[test]
    fn an_object_is_in_the_shard_its_key_hashes_to(uid in "[a-f0-9-]{0,40}", ns in "[a-z0-9-]{0,20}", count in 1u32..=16) {
        let meta = ObjectMeta { uid: Some(uid.clone()), namespace: Some(ns.clone()), ..Default::default() };
        for (key, value) in [(ShardKey::Uid, &uid), (ShardKey::Namespace, &ns)] {
            let h = fnv1a_64(value.as_bytes());
            let expected = ((u128::from(h) * u128::from(count)) >> 64) as u32;
            let owners: Vec<u32> = (0..count)
                .filter(|i| Shard::nth(key, *i, count).unwrap().contains_meta(&meta))
                .collect();
            // with exact splits (powers of two) the owner is the hash's top bits
            if count.is_power_of_two() {
                prop_assert_eq!(owners.clone(), vec![expected]);
            }
            prop_assert_eq!(owners.len(), 1);
        }
    }
}
