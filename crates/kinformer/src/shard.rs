//! Sharded informers (KEP-5866, Kubernetes 1.36 alpha, API server feature gate
//! `ShardedListAndWatch`): a [`Shard`] names one part of a resource's objects, by a 64-bit
//! FNV-1a hash of their `metadata.uid` or `metadata.namespace`, so that `n` replicas of a
//! controller can each cache and reconcile `1/n` of the objects.
//!
//! An informer given a shard ([`InformerConfig::shard`](crate::InformerConfig::shard)) sends
//! it as the `shardSelector` of every list (every page), streaming list and watch, in
//! kube-apiserver's grammar:
//!
//! ```text
//! shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//! ```
//!
//! ranges joined with ` || `, each `[start, end)` over the hash space
//! `[0x0000000000000000, 0x10000000000000000)`. A server with the gate echoes the selector in
//! the list's `metadata.shardInfo`; one without it (Kubernetes ≤ 1.35, or 1.36 with the alpha
//! gate off) ignores the parameter and sends everything. Either way the informer also checks
//! every object and watch event itself with the same hash, so its cache never holds an object
//! outside the shard; it logs once per informer whether the server honoured the selector.
//!
//! Only list responses carry `shardInfo` (kube-apiserver 1.36 sets it on typed lists; not on
//! custom resources' or metadata-only lists, and not on a streaming list's initial-events-end
//! bookmark), so an informer on streaming lists, or of a custom resource, never learns whether
//! the server filtered: it filters regardless, which costs one hash per object.
//!
//! Because `uid` and `namespace` are immutable, an object never moves between shards: a
//! `MODIFIED` event for an object outside the shard is for an object the cache never held, and
//! is dropped like an `ADDED` one. An object deleted and created again under the same name
//! gets a new uid and may land in another shard: the old one's `DELETED` reaches its shard, the
//! new one's `ADDED` the other.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kinformer::shard::{Shard, ShardKey};
//! let shard = Shard::nth(ShardKey::Uid, 1, 2).unwrap();
//! assert_eq!(
//!     shard.selector(),
//!     "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
//! );
//! let mut pod = Pod::default();
//! pod.metadata.uid = Some("1b4e28ba-2fa1-11d2-883f-0016d3cca427".into());
//! let owner = (0..2).filter(|i| Shard::nth(ShardKey::Uid, *i, 2).unwrap().contains(&pod)).count();
//! assert_eq!(owner, 1, "every object is in exactly one of the n shards");
//! ```

use std::fmt;

use kube::Resource;
use kube::api::ObjectMeta;

/// The end of the hash space, exclusive: 2^64 (`0x10000000000000000` on the wire).
pub const HASH_SPACE_END: u128 = 1 << 64;

/// 64-bit FNV-1a of `data` (Go's `hash/fnv.New64a`, what kube-apiserver hashes a shard key
/// with).
///
/// ```
/// assert_eq!(kinformer::shard::fnv1a_64(b""), 0xcbf29ce484222325);
/// assert_eq!(kinformer::shard::fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
/// ```
pub fn fnv1a_64(data: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    data.iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// What an object is hashed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardKey {
    /// `metadata.uid` (`object.metadata.uid`): spreads objects evenly.
    Uid,
    /// `metadata.namespace` (`object.metadata.namespace`): a namespace's objects stay
    /// together; cluster-scoped objects (namespace `""`) all hash alike.
    Namespace,
}

impl ShardKey {
    /// The field path in a `shardSelector`: `object.metadata.uid` or
    /// `object.metadata.namespace`.
    pub fn field_path(self) -> &'static str {
        match self {
            Self::Uid => "object.metadata.uid",
            Self::Namespace => "object.metadata.namespace",
        }
    }

    /// The value of this key in `meta` (`""` when unset, as Go reads it).
    pub fn value_of(self, meta: &ObjectMeta) -> &str {
        match self {
            Self::Uid => meta.uid.as_deref(),
            Self::Namespace => meta.namespace.as_deref(),
        }
        .unwrap_or("")
    }
}

/// Why a [`Shard`] or [`ShardRange`] cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// Shard `index` of `0` shards.
    #[error("the number of shards must be at least 1")]
    NoShards,
    /// `index` is not below `count`.
    #[error("shard index {index} is out of range for {count} shards")]
    IndexOutOfRange {
        /// The index asked for.
        index: u32,
        /// The number of shards.
        count: u32,
    },
    /// A shard with no range at all (the server would read an empty selector as "everything").
    #[error("a shard needs at least one range")]
    NoRanges,
    /// `start >= end`: the range is empty (kube-apiserver: "shard range start … must be less
    /// than end …").
    #[error("shard range start {start:#x} must be less than end {end:#x}")]
    EmptyRange {
        /// The range's start.
        start: u128,
        /// The range's end.
        end: u128,
    },
    /// An end above 2^64 (the hash space ends there).
    #[error("shard range end {end:#x} is beyond the hash space (at most 0x10000000000000000)")]
    BeyondHashSpace {
        /// The range's end.
        end: u128,
    },
}

/// One hash range `[start, end)`; `end` may be 2^64 ([`HASH_SPACE_END`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardRange {
    start: u64,
    end: u128,
}

impl ShardRange {
    /// `[start, end)`.
    ///
    /// # Errors
    /// [`ShardError::EmptyRange`] unless `start < end`; [`ShardError::BeyondHashSpace`] when
    /// `end > 2^64`.
    pub fn new(start: u64, end: u128) -> Result<Self, ShardError> {
        if end > HASH_SPACE_END {
            return Err(ShardError::BeyondHashSpace { end });
        }
        if u128::from(start) >= end {
            return Err(ShardError::EmptyRange {
                start: start.into(),
                end,
            });
        }
        Ok(Self { start, end })
    }

    /// The first hash in the range.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The first hash after the range (2^64 for the last range).
    pub fn end(&self) -> u128 {
        self.end
    }

    /// Whether `hash` is in `[start, end)`.
    pub fn contains(&self, hash: u64) -> bool {
        hash >= self.start && u128::from(hash) < self.end
    }
}

/// One shard: a key and one or more hash ranges (an object is in the shard when the hash of
/// its key falls in any of them). See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shard {
    key: ShardKey,
    ranges: Vec<ShardRange>,
}

impl Shard {
    /// Shard `index` of `count` equal shards by `key`: the hash space cut into `count` ranges
    /// of (nearly) equal size, `[index × 2^64 / count, (index + 1) × 2^64 / count)` rounded
    /// down, the last ending at 2^64. Every hash is in exactly one of the `count` shards.
    ///
    /// # Errors
    /// [`ShardError::NoShards`] for `count == 0`, [`ShardError::IndexOutOfRange`] for
    /// `index >= count`.
    pub fn nth(key: ShardKey, index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if index >= count {
            return Err(ShardError::IndexOutOfRange { index, count });
        }
        let bound = |i: u32| HASH_SPACE_END * u128::from(i) / u128::from(count);
        // bound(index) < 2^64 since index < count; the range is never empty since 2^64 >= count
        let start = u64::try_from(bound(index)).map_err(|_| ShardError::NoShards)?;
        let range = ShardRange::new(start, bound(index + 1))?;
        Ok(Self {
            key,
            ranges: vec![range],
        })
    }

    /// A shard of explicit ranges by `key` (overlapping ranges are allowed, as kube-apiserver
    /// allows them).
    ///
    /// # Errors
    /// [`ShardError::NoRanges`] when `ranges` is empty.
    pub fn from_ranges(
        key: ShardKey,
        ranges: impl IntoIterator<Item = ShardRange>,
    ) -> Result<Self, ShardError> {
        let ranges: Vec<ShardRange> = ranges.into_iter().collect();
        if ranges.is_empty() {
            return Err(ShardError::NoRanges);
        }
        Ok(Self { key, ranges })
    }

    /// What objects are hashed by.
    pub fn key(&self) -> ShardKey {
        self.key
    }

    /// The ranges, in the order given.
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// The `shardSelector` string, exactly as kube-apiserver writes it back in
    /// `metadata.shardInfo.selector` (16 lowercase hex digits per bound, 2^64 as
    /// `0x10000000000000000`, ranges joined with ` || `).
    pub fn selector(&self) -> String {
        let mut out = String::new();
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                out.push_str(" || ");
            }
            out.push_str(&format!(
                "shardRange({}, '{}', '{}')",
                self.key.field_path(),
                hex_bound(r.start.into()),
                hex_bound(r.end)
            ));
        }
        out
    }

    /// The hash of `meta`'s key ([`fnv1a_64`] of its uid or namespace).
    pub fn hash_of(&self, meta: &ObjectMeta) -> u64 {
        fnv1a_64(self.key.value_of(meta).as_bytes())
    }

    /// Whether an object with metadata `meta` is in this shard.
    pub fn contains_meta(&self, meta: &ObjectMeta) -> bool {
        let hash = self.hash_of(meta);
        self.ranges.iter().any(|r| r.contains(hash))
    }

    /// Whether `obj` is in this shard: what the informer checks for every object it receives,
    /// and what a controller can check for an object it reads elsewhere.
    pub fn contains<K: Resource>(&self, obj: &K) -> bool {
        self.contains_meta(obj.meta())
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.selector())
    }
}

/// A range bound as kube writes it: `0x` and 16 lowercase hex digits, or
/// `0x10000000000000000` for 2^64.
fn hex_bound(v: u128) -> String {
    if v >= HASH_SPACE_END {
        "0x10000000000000000".to_owned()
    } else {
        format!("0x{v:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_gos_hash_fnv() {
        // vectors of the FNV reference (also Go's hash/fnv tests)
        assert_eq!(fnv1a_64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a_64(b"ab"), 0x089c4407b545986a);
        assert_eq!(fnv1a_64(b"abc"), 0xe71fa2190541574b);
        assert_eq!(fnv1a_64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn four_shards_render_as_kubes_documented_example() {
        let sel: Vec<String> = (0..4)
            .map(|i| Shard::nth(ShardKey::Uid, i, 4).unwrap().selector())
            .collect();
        assert_eq!(
            sel,
            [
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
                "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')",
                "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
                "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
            ]
        );
    }

    #[test]
    fn explicit_ranges_join_with_or_and_bad_input_is_typed() {
        let s = Shard::from_ranges(
            ShardKey::Namespace,
            [
                ShardRange::new(0, 0x10).unwrap(),
                ShardRange::new(0xff00_0000_0000_0000, HASH_SPACE_END).unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(
            s.to_string(),
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0000000000000010') || shardRange(object.metadata.namespace, '0xff00000000000000', '0x10000000000000000')"
        );
        assert_eq!(Shard::nth(ShardKey::Uid, 0, 0), Err(ShardError::NoShards));
        assert_eq!(
            Shard::nth(ShardKey::Uid, 3, 3),
            Err(ShardError::IndexOutOfRange { index: 3, count: 3 })
        );
        assert_eq!(
            Shard::from_ranges(ShardKey::Uid, []),
            Err(ShardError::NoRanges)
        );
        assert_eq!(
            ShardRange::new(5, 5),
            Err(ShardError::EmptyRange { start: 5, end: 5 })
        );
        assert_eq!(
            ShardRange::new(0, HASH_SPACE_END + 1),
            Err(ShardError::BeyondHashSpace {
                end: HASH_SPACE_END + 1
            })
        );
    }

    #[test]
    fn namespace_shards_keep_a_namespace_together() {
        let shard = Shard::nth(ShardKey::Namespace, 0, 2).unwrap();
        let meta = |ns: &str, uid: &str| ObjectMeta {
            namespace: Some(ns.into()),
            uid: Some(uid.into()),
            ..Default::default()
        };
        for ns in ["a", "b", "kube-system", ""] {
            let first = shard.contains_meta(&meta(ns, "u1"));
            assert!((0..50).all(|i| shard.contains_meta(&meta(ns, &format!("u{i}"))) == first));
            assert_eq!(first, fnv1a_64(ns.as_bytes()) < 1 << 63);
        }
    }
}
