//! The memory-lean cache mode: objects kept as compressed JSON, decoded on demand into `Arc`s
//! that every reader shares for as long as anyone holds one.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How an [`Indexer`](super::Indexer) (and so an informer's cache) holds its objects.
///
/// * [`CacheMode::Full`] (the default): every object is kept decoded, as an `Arc<K>`. Reads
///   clone a pointer. A Kubernetes object costs several times its JSON size in memory: the
///   k8s-openapi structs keep every optional field inline, and `managedFields` (`FieldsV1`, a
///   `serde_json::Value` tree) alone is most of a pod.
/// * [`CacheMode::Lean`]: every object is kept as its JSON, compressed with LZ4 against a
///   dictionary primed with one of the first objects the cache stored (objects of one informer share
///   most of their field names and many values, so each compresses to a fraction of its size).
///   Nothing is dropped: a read decodes exactly what was written. Index values are computed
///   once, when an object is written, as in the default mode.
///
/// # What reads cost in lean mode
///
/// A read that finds no live copy decodes the object (LZ4, then `serde_json`), so it costs
/// what decoding the object costs, per object returned. Measured by the `lean` criterion
/// benchmark (`--quick`, release profile, idle 2-core machine, 2026-11-26 18:02 UTC) on 10,000
/// realistic pods (3.8 KB of JSON each, with managedFields, stored in 258 bytes each) with two
/// indexes (full mode in brackets): `get_by_key` of a key spread over the cache (cold) 31 µs
/// (0.21 µs), of a recently written one (in the hot set) 0.09 µs (0.03 µs); `list` of all
/// 10,000 279 ms (0.52 ms); `by_index` returning the same 100 pods again and again 59–60 µs
/// (3.2 µs; a cold one costs what 100 cold `get_by_key` do); adding 10,000 pods 151 ms
/// (10.2 ms).
/// Decoded objects are shared: while anyone (a handler, a reader, the informer's queue, the
/// hot set) holds the `Arc` of an object's current version, every read returns that same `Arc`
/// without decoding. Decoding happens outside the cache's lock; a read of many objects
/// (`list`, `by_index`) decodes them on every core. Writes encode (`serde_json`, then LZ4)
/// before they take the lock. The cache remembers each shared object through a `Weak`, which
/// keeps the object's own allocation (2.4 KB for a `Pod`) until it is forgotten: writes forget
/// dead entries as the table grows, and an informer forgets them after it installs a list
/// (see [`crate::memory`]). The informer decodes the cached object an update replaces, to
/// give handlers the old state.
///
/// # The hot set
///
/// The cache keeps the most recently written or decoded objects decoded ([`DEFAULT_HOT_OBJECTS`]
/// by default; [`Indexer::new_lean_with_hot`](super::Indexer::new_lean_with_hot),
/// [`InformerConfig::lean_hot_objects`](crate::InformerConfig::lean_hot_objects)), oldest out
/// first. A reconciler that reads the object a handler was just told (the informer wrote it
/// first) reads it at full-mode cost; a read of any other object decodes. Each costs its
/// decoded size (about 10 KB for a pod with managedFields: 1.3 MB for the default 128; 49 KB
/// and 6 MB for the real server's pod of the benchmarks). An informer on the default queue
/// empties the hot set when its first list is in, before it reports synced: the list's last
/// objects are no likelier to be read than any other.
///
/// # In an informer
///
/// An informer on the default queue ([`QueueMode::RealFifo`](crate::informer::QueueMode::RealFifo)) in
/// lean mode never holds a list decoded. Its first list into an empty cache is cached and told
/// part by part as it downloads: each part is encoded and written, and the handlers are told
/// with the very objects the decoder made (nothing listed is decoded twice; the cache fills
/// before the informer has synced, as client-go's informers filled it object by object before
/// its RealFIFO). Before the informer reports synced, the decoded objects nobody holds are
/// forgotten, the hot set is emptied and freed memory goes back to the OS (with
/// [`InformerConfig::release_memory`](crate::InformerConfig::release_memory)), so memory read
/// at sync is what the cache keeps. Every later list (and a first one into a cache a snapshot
/// filled) is keyed, indexed and encoded part by part as it downloads (its decoded objects
/// dropped at once; an object whose bytes equal the cached ones keeps the cached bytes),
/// installed in one swap when it pops, and its objects are decoded a chunk at a time to notify
/// handlers. A handler slower than the informer still holds the decoded objects queued for it.
/// Measured (2026-11-27, real kube-apiserver v1.36.3, protobuf, the factory-built
/// informer, against client-go v0.37.2, medians of 5 rounds, `docs/benchmarks.md`): initial
/// sync 1,146 ms against client-go's 671 ms at 10,000 pods (1.71×; 1.35× in an earlier run
/// that day) and 5,277 against 4,492 ms at 50,000 (1.17×; 1.42×), using 118–125 µs of CPU a
/// pod against the full cache's 82–88 (encoding each pod after decoding it is most of the
/// difference); 2,506 and 1,265 bytes of memory per pod against client-go's 12.4k and 12.1k
/// (0.20×, 0.10×), the same when synced as 2 s later; peak RSS 68 against 176 MiB and 109
/// against 753. On
/// [`QueueMode::DeltaFifo`](crate::informer::QueueMode::DeltaFifo) the queue holds a list's objects
/// decoded until they are popped; the cache settles the same way before the informer reports
/// synced.
///
/// Lean mode pays off for large informers whose objects are read rarely compared with how
/// long they are cached (the common case: handlers get the objects they need, and reconcilers
/// read a few by key). An informer whose code lists everything often should stay `Full`.
///
/// An object that cannot be encoded is not written ([`StoreError::Codec`](super::StoreError::Codec),
/// the cache unchanged). One that cannot be decoded (a type whose `Serialize` and
/// `Deserialize` disagree) is logged and left out of the read; it stays cached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CacheMode {
    /// Objects kept decoded (`Arc<K>`): the fastest reads, the most memory.
    #[default]
    Full,
    /// Objects kept compressed and decoded on demand; see the type's docs.
    Lean,
}

/// One stored object: decoded (full mode) or encoded (lean mode).
pub(crate) enum Stored<K> {
    Full(Arc<K>),
    Lean(Arc<[u8]>),
}

impl<K> Clone for Stored<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Full(o) => Self::Full(o.clone()),
            Self::Lean(b) => Self::Lean(b.clone()),
        }
    }
}

impl<K> Stored<K> {
    /// The encoded size (lean mode), 0 for a decoded object.
    pub(super) fn encoded_len(&self) -> usize {
        match self {
            Self::Full(_) => 0,
            Self::Lean(b) => b.len(),
        }
    }
}

/// Why an object could not be encoded or decoded.
pub(super) type CodecError = String;

/// Parts smaller than this are encoded or decoded on the calling thread.
const PARALLEL_MIN: usize = 32;

/// `f` over `items` in order, on every core for a large slice (scoped threads, one chunk
/// each): how lean mode spreads the decoding of a relist's notifications, which otherwise
/// runs on one thread.
///
/// On a multi-threaded tokio runtime's worker (an informer's reflector and process loop) it
/// runs inside `block_in_place`: the worker hands its other tasks to another thread before it
/// spreads the work, so the runtime never stalls behind it. On a current-thread runtime, whose
/// one thread must not block, it runs there one item after another.
pub(crate) fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if cores < 2 || items.len() < PARALLEL_MIN {
        return items.iter().map(f).collect();
    }
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::CurrentThread) => items.iter().map(f).collect(),
        Ok(_) => tokio::task::block_in_place(|| spread(items, cores, &f)),
        Err(_) => spread(items, cores, &f),
    }
}

/// `f` over `items` in order on `cores` scoped threads (this one included).
fn spread<T: Sync, R: Send>(items: &[T], cores: usize, f: &(impl Fn(&T) -> R + Sync)) -> Vec<R> {
    let chunk = items.len().div_ceil(cores);
    std::thread::scope(|scope| {
        let mut chunks = items.chunks(chunk);
        // the first chunk on this thread, the rest on their own
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|c| scope.spawn(move || c.iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out: Vec<R> = first.iter().map(f).collect();
        for h in others {
            match h.join() {
                Ok(part) => out.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// `json` compressed against `dict`, its length first (4 bytes, little-endian): what
/// `lz4_flex::block::compress_prepend_size_with_dict` gives, written into this thread's scratch
/// buffer and copied once into the blob.
fn compress_prepend_size(json: &[u8], dict: &[u8]) -> Result<Arc<[u8]>, CodecError> {
    let size = u32::try_from(json.len())
        .map_err(|_| format!("the object's JSON is too long: {} bytes", json.len()))?;
    let mut out = scratch::take(&scratch::OUT);
    out.resize(4 + lz4_flex::block::get_maximum_output_size(json.len()), 0);
    out[..4].copy_from_slice(&size.to_le_bytes());
    let blob = lz4_flex::block::compress_into_with_dict(json, &mut out[4..], dict)
        .map(|len| Arc::from(&out[..4 + len]))
        .map_err(|e| format!("cannot compress the object: {e}"));
    scratch::give_back(&scratch::OUT, out);
    blob
}

/// Each thread's buffers for the JSON of the object it encodes or decodes and for its
/// compressed form, reused from one object to the next (allocating them anew for every object
/// was a good part of what encoding cost).
mod scratch {
    use std::cell::Cell;
    use std::thread::LocalKey;

    /// A buffer that grew past this is dropped after use rather than kept.
    const KEEP: usize = 256 * 1024;

    thread_local! {
        /// The JSON of an object being encoded or decoded.
        pub(super) static JSON: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
        /// The compressed form of an object being encoded.
        pub(super) static OUT: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    }

    /// The thread's buffer, empty (a new one if it is in use or the thread is ending).
    pub(super) fn take(key: &'static LocalKey<Cell<Vec<u8>>>) -> Vec<u8> {
        let mut buf = key.try_with(Cell::take).unwrap_or_default();
        buf.clear();
        buf
    }

    /// Returns a buffer taken with [`take`] to the thread, unless it grew too large.
    pub(super) fn give_back(key: &'static LocalKey<Cell<Vec<u8>>>, buf: Vec<u8>) {
        if buf.capacity() <= KEEP {
            let _ = key.try_with(|cell| cell.set(buf));
        }
    }
}

/// The dictionary is at most this long (LZ4 looks back at most 64 KiB).
const MAX_DICT: usize = 64 * 1024;

/// Dead entries the shared table may hold before it is pruned, at least.
const MIN_PRUNE_AT: usize = 256;

/// How many decoded objects a lean cache keeps alive by default, the most recently written or
/// decoded ones (see [`CacheMode`] and [`Indexer::new_lean_with_hot`](super::Indexer::new_lean_with_hot)).
pub const DEFAULT_HOT_OBJECTS: usize = 128;

/// Encodes and decodes one cache's objects, and remembers the decoded objects that are still
/// alive so readers share them.
pub(super) struct LeanCodec<K> {
    /// Writes the JSON of an object at the end of the buffer.
    to_json: fn(&K, &mut Vec<u8>) -> Result<(), serde_json::Error>,
    from_json: fn(&[u8]) -> Result<K, serde_json::Error>,
    /// The compression dictionary: the JSON of the first object encoded.
    dict: OnceLock<Box<[u8]>>,
    shared: Mutex<SharedTable<K>>,
    /// The objects most recently written or decoded, kept alive (so found in `shared`), oldest
    /// first: at most `hot_cap`.
    hot: Mutex<VecDeque<Arc<K>>>,
    hot_cap: usize,
}

/// Decoded objects still alive, by the address of their encoded form. Each entry holds the
/// encoded form, so the address cannot be reused while the entry exists. Entries whose object
/// died are pruned once the table has doubled since the last prune, so it stays within twice
/// the live objects (plus [`MIN_PRUNE_AT`]); a `Weak` keeps its allocation alive until then.
struct SharedTable<K> {
    map: HashMap<usize, (Arc<[u8]>, Weak<K>)>,
    prune_at: usize,
}

impl<K> fmt::Debug for LeanCodec<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeanCodec")
            .field("dict", &self.dict.get().map(|d| d.len()))
            .field("shared", &self.shared.lock().map.len())
            .finish()
    }
}

fn address(blob: &Arc<[u8]>) -> usize {
    Arc::as_ptr(blob) as *const u8 as usize
}

impl<K: Serialize + DeserializeOwned> LeanCodec<K> {
    /// A codec for `K` through its JSON form, keeping the [`DEFAULT_HOT_OBJECTS`] most recent
    /// objects alive.
    #[cfg(test)]
    pub(super) fn new() -> Self {
        Self::with_hot(DEFAULT_HOT_OBJECTS)
    }

    /// A codec for `K` through its JSON form, keeping the `hot` most recently written or
    /// decoded objects alive.
    pub(super) fn with_hot(hot: usize) -> Self {
        Self {
            to_json: |obj, buf| serde_json::to_writer(buf, obj),
            from_json: |bytes| serde_json::from_slice(bytes),
            dict: OnceLock::new(),
            shared: Mutex::new(SharedTable {
                map: HashMap::new(),
                prune_at: MIN_PRUNE_AT,
            }),
            hot: Mutex::new(VecDeque::with_capacity(hot)),
            hot_cap: hot,
        }
    }
}

impl<K> LeanCodec<K> {
    /// The encoded form of `obj`; `obj` itself is remembered as the decoded form, so readers
    /// share it while it lives.
    pub(super) fn encode(&self, obj: &Arc<K>) -> Result<Arc<[u8]>, CodecError> {
        let blob = self.compress(obj)?;
        self.remember(&blob, obj);
        Ok(blob)
    }

    /// Remembers `obj` as the decoded form of `blob` (its encoded form, just made by
    /// [`compress`](Self::compress)) and keeps it among the most recent objects, as
    /// [`encode`](Self::encode) does.
    pub(super) fn remember(&self, blob: &Arc<[u8]>, obj: &Arc<K>) {
        self.share(blob, obj);
        self.keep_hot(obj);
    }

    /// The encoded form of `obj` (its JSON, compressed against the dictionary, which the first
    /// object encoded sets), remembered nowhere. The same object encoded against the same
    /// dictionary gives the same bytes.
    pub(super) fn compress(&self, obj: &K) -> Result<Arc<[u8]>, CodecError> {
        let mut json = scratch::take(&scratch::JSON);
        let blob = match (self.to_json)(obj, &mut json) {
            Ok(()) => {
                let dict = self
                    .dict
                    .get_or_init(|| json[..json.len().min(MAX_DICT)].into());
                compress_prepend_size(&json, dict)
            }
            Err(e) => Err(format!("cannot encode the object: {e}")),
        };
        scratch::give_back(&scratch::JSON, json);
        blob
    }

    /// The compression dictionary, once the first object was encoded.
    pub(super) fn dict(&self) -> Option<&[u8]> {
        self.dict.get().map(|d| &d[..])
    }

    /// Sets the compression dictionary (a snapshot's): false if it was set already, to another.
    pub(super) fn set_dict(&self, dict: &[u8]) -> bool {
        let dict = &dict[..dict.len().min(MAX_DICT)];
        &**self.dict.get_or_init(|| dict.into()) == dict
    }

    /// Decodes `blob` without looking for a shared copy.
    pub(super) fn decode_fresh(&self, blob: &[u8]) -> Result<K, CodecError> {
        let dict = self.dict.get().map_or(&[][..], |d| &d[..]);
        let (size, body) = match blob.split_first_chunk::<4>() {
            Some((size, body)) => (u32::from_le_bytes(*size) as usize, body),
            None => return Err("the stored object is truncated".into()),
        };
        // LZ4 expands at most 255-fold: a larger size is corruption, not worth allocating.
        if size > body.len().saturating_mul(255) {
            return Err(format!(
                "the stored object claims {size} bytes from {} compressed",
                body.len()
            ));
        }
        let mut json = scratch::take(&scratch::JSON);
        json.resize(size, 0);
        let obj = lz4_flex::block::decompress_into_with_dict(body, &mut json, dict)
            .map_err(|e| format!("cannot decompress the stored object: {e}"))
            .and_then(|len| {
                (self.from_json)(&json[..len])
                    .map_err(|e| format!("cannot decode the stored object: {e}"))
            });
        scratch::give_back(&scratch::JSON, json);
        obj
    }

    /// The decoded object of `blob`: the live shared copy if there is one, else a fresh decode
    /// (then shared).
    pub(super) fn decode(&self, blob: &Arc<[u8]>) -> Result<Arc<K>, CodecError> {
        if let Some(obj) = self
            .shared
            .lock()
            .map
            .get(&address(blob))
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(obj);
        }
        let obj = Arc::new(self.decode_fresh(blob)?);
        let obj = self.share(blob, &obj);
        self.keep_hot(&obj);
        Ok(obj)
    }

    /// Keeps `obj` alive among the most recent objects, dropping the oldest past the bound.
    fn keep_hot(&self, obj: &Arc<K>) {
        if self.hot_cap == 0 {
            return;
        }
        let evicted = {
            let mut hot = self.hot.lock();
            let evicted = (hot.len() >= self.hot_cap).then(|| hot.pop_front());
            hot.push_back(obj.clone());
            evicted
        };
        // the evicted object (if its last holder) is freed outside the lock
        drop(evicted);
    }

    /// Empties the hot set (the objects are freed outside the lock, if it held the last
    /// reference).
    pub(super) fn forget_hot(&self) {
        let hot = std::mem::take(&mut *self.hot.lock());
        drop(hot);
    }

    /// How many objects the hot set keeps alive (at most its bound).
    pub(super) fn hot_len(&self) -> usize {
        self.hot.lock().len()
    }

    /// Remembers `obj` as the decoded form of `blob`, unless another live copy is remembered
    /// (a concurrent decode): returns the one readers share.
    fn share(&self, blob: &Arc<[u8]>, obj: &Arc<K>) -> Arc<K> {
        let mut table = self.shared.lock();
        let addr = address(blob);
        if let Some(live) = table.map.get(&addr).and_then(|(_, w)| w.upgrade()) {
            return live;
        }
        if table.map.len() >= table.prune_at {
            table.map.retain(|_, (_, w)| w.strong_count() > 0);
            table.prune_at = (table.map.len() * 2).max(MIN_PRUNE_AT);
        }
        table.map.insert(addr, (blob.clone(), Arc::downgrade(obj)));
        obj.clone()
    }

    /// Forgets the decoded objects nobody holds any more; returns how many are still held by
    /// someone other than the hot set.
    ///
    /// A forgotten entry's `Weak` kept the object's allocation (the struct itself, 2.4 KB for
    /// a k8s-openapi `Pod`) alive; after a list, every listed object has such an entry until
    /// the table is pruned. Writes prune as the table grows; the informer calls this after it
    /// installs a list, once the handlers are likely done with the listed objects.
    pub(super) fn prune(&self) -> usize {
        let mut table = self.shared.lock();
        table.map.retain(|_, (_, w)| w.strong_count() > 0);
        table.map.shrink_to_fit();
        table.prune_at = (table.map.len() * 2).max(MIN_PRUNE_AT);
        let held = table.map.len();
        drop(table);
        held.saturating_sub(self.hot_len())
    }

    /// How many decoded objects the shared table remembers (live or not yet pruned).
    #[cfg(test)]
    pub(super) fn shared_len(&self) -> usize {
        self.shared.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Obj {
        name: String,
        fields: Vec<String>,
    }

    fn obj(name: &str) -> Arc<Obj> {
        Arc::new(Obj {
            name: name.into(),
            fields: (0..20).map(|i| format!("field-{i}")).collect(),
        })
    }

    #[test]
    fn par_map_keeps_order_on_any_size() {
        for n in [0, 1, PARALLEL_MIN - 1, PARALLEL_MIN, 1_000, 1_001] {
            let items: Vec<usize> = (0..n).collect();
            let threads = Mutex::new(std::collections::HashSet::new());
            let out = par_map(&items, |i| {
                threads.lock().insert(std::thread::current().id());
                i * 2
            });
            assert_eq!(out, (0..n).map(|i| i * 2).collect::<Vec<_>>(), "n = {n}");
            let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
            if n >= PARALLEL_MIN && cores > 1 {
                assert!(threads.lock().len() > 1, "n = {n}: one thread only");
            }
        }
    }

    #[test]
    fn round_trips_and_compresses_against_the_first_object() {
        let codec = LeanCodec::<Obj>::new();
        let first = obj("first");
        let blob = codec.encode(&first).unwrap();
        let second = obj("second");
        let blob2 = codec.encode(&second).unwrap();
        let json = serde_json::to_vec(&*second).unwrap();
        assert!(
            blob2.len() * 4 < json.len(),
            "{} vs {}",
            blob2.len(),
            json.len()
        );
        let dict = serde_json::to_vec(&*first).unwrap();
        assert_eq!(codec.dict(), Some(&dict[..]));
        assert_eq!(
            &*blob2,
            lz4_flex::block::compress_prepend_size_with_dict(&json, &dict),
            "the bytes lz4_flex's own function gives"
        );
        assert_eq!(codec.decode_fresh(&blob).unwrap(), *first);
        assert_eq!(codec.decode_fresh(&blob2).unwrap(), *second);
    }

    #[test]
    fn a_live_decoded_object_is_shared_and_a_dead_one_decoded_again() {
        let codec = LeanCodec::<Obj>::new();
        let written = obj("a");
        let blob = codec.encode(&written).unwrap();
        assert!(Arc::ptr_eq(&codec.decode(&blob).unwrap(), &written));
        drop(written);
        let fresh = codec.decode(&blob).unwrap();
        assert_eq!(fresh.name, "a");
        assert!(Arc::ptr_eq(&codec.decode(&blob).unwrap(), &fresh));
    }

    #[test]
    fn the_shared_table_is_pruned_of_dead_objects() {
        let codec = LeanCodec::<Obj>::new();
        let blobs: Vec<Arc<[u8]>> = (0..MIN_PRUNE_AT * 4)
            .map(|i| codec.encode(&obj(&format!("o{i}"))).unwrap())
            .collect();
        assert!(codec.shared_len() <= MIN_PRUNE_AT, "{}", codec.shared_len());
        assert_eq!(blobs.len(), MIN_PRUNE_AT * 4);
    }

    #[test]
    fn the_hot_set_keeps_the_most_recent_objects_within_its_bound() {
        let codec = LeanCodec::<Obj>::with_hot(3);
        let mut weak = Vec::new();
        let mut blobs = Vec::new();
        for i in 0..5 {
            let o = obj(&format!("o{i}"));
            weak.push(Arc::downgrade(&o));
            blobs.push(codec.encode(&o).unwrap());
        }
        assert_eq!(codec.hot_len(), 3);
        let alive: Vec<bool> = weak.iter().map(|w| w.strong_count() > 0).collect();
        assert_eq!(
            alive,
            [false, false, true, true, true],
            "the last three written"
        );
        // a hot object is read back as the same Arc, without decoding
        let hot = codec.decode(&blobs[4]).unwrap();
        assert!(Arc::ptr_eq(&hot, &weak[4].upgrade().unwrap()));
        // a fresh decode joins the hot set and pushes the oldest out
        let cold = codec.decode(&blobs[0]).unwrap();
        assert_eq!(cold.name, "o0");
        assert_eq!(weak[2].strong_count(), 0, "o2 left the hot set");
        assert_eq!(codec.hot_len(), 3);
        // held only by the hot set: not counted as held by someone
        drop((hot, cold));
        assert_eq!(codec.prune(), 0);
        assert_eq!(codec.shared_len(), 3);
    }

    #[test]
    fn a_hot_set_of_zero_keeps_nothing() {
        let codec = LeanCodec::<Obj>::with_hot(0);
        let o = obj("a");
        let weak = Arc::downgrade(&o);
        let blob = codec.encode(&o).unwrap();
        drop(o);
        assert_eq!(weak.strong_count(), 0);
        assert_eq!(codec.hot_len(), 0);
        assert_eq!(codec.decode(&blob).unwrap().name, "a");
        assert_eq!(codec.prune(), 0);
    }

    #[test]
    fn corrupt_bytes_are_an_error_not_a_panic() {
        let codec = LeanCodec::<Obj>::new();
        codec.encode(&obj("a")).unwrap();
        for bad in [
            &b""[..],
            b"\x05\0\0\0",
            b"\xff\xff\xff\x7f\x10abc",
            b"\x03\0\0\0\x30abc",
        ] {
            let blob: Arc<[u8]> = bad.into();
            assert!(codec.decode(&blob).is_err(), "{bad:?}");
        }
    }
}
