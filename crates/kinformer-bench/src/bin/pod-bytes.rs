//! `pod-bytes [POD.json]`: where a cached pod's bytes go, as kinformer's default cache holds it
//! (a k8s-openapi `Pod`) and as a metadata-only informer holds it (`ObjectMeta`): heap bytes
//! per object, counted by a global allocator that rounds every request up to glibc's chunk
//! size (request + 8, rounded up to 16, at least 32), decoded the way the informer decodes it
//! (protobuf on the real server; JSON for comparison).
//!
//! The default pod is `data/pod-kube-apiserver-v1.36.3.json`: the benchmarks' realistic pod
//! (`kinformer_apiserver::seed::pod`) created on kube-apiserver v1.36.3 by one field manager and
//! given its status by a second (`kubelet`), read back with its managedFields. It answers
//! "what cannot move": how much of a pod is `managedFields`, and how much of that is the
//! B-tree nodes of `serde_json::Value` objects, whose size std fixes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;

/// glibc's footprint of a request of `size` bytes on 64-bit: an 8-byte header, 16-byte
/// alignment, 32 bytes at least.
fn chunk(size: usize) -> usize {
    ((size + 8 + 15) & !15).max(32)
}

/// Counts live heap bytes (as glibc chunks) and allocations.
struct Counting;
static BYTES: AtomicUsize = AtomicUsize::new(0);
static CHUNKS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// bookkeeping only. (A measuring binary of the bench crate, never linked into the library.)
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            BYTES.fetch_add(chunk(layout.size()), Relaxed);
            CHUNKS.fetch_add(1, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        BYTES.fetch_sub(chunk(layout.size()), Relaxed);
        CHUNKS.fetch_sub(1, Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Objects built per measurement.
const N: usize = 1_000;

/// Bytes (heap chunks plus the object's inline size) and heap allocations per object that
/// `make` returns, with the objects kept alive while counting.
fn per_object<T>(make: impl Fn() -> T) -> (usize, f64) {
    let mut kept = Vec::with_capacity(N);
    let (b0, c0) = (BYTES.load(Relaxed), CHUNKS.load(Relaxed));
    for _ in 0..N {
        kept.push(make());
    }
    let (b1, c1) = (BYTES.load(Relaxed), CHUNKS.load(Relaxed));
    drop(kept);
    (
        (b1 - b0) / N + std::mem::size_of::<T>(),
        (c1 - c0) as f64 / N as f64,
    )
}

/// Non-empty objects and keys in a JSON tree.
fn shape(v: &Value) -> (usize, usize) {
    let add = |(o, k): (usize, usize), (o2, k2): (usize, usize)| (o + o2, k + k2);
    match v {
        Value::Object(m) => m
            .values()
            .map(shape)
            .fold((usize::from(!m.is_empty()), m.len()), add),
        Value::Array(a) => a.iter().map(shape).fold((0, 0), add),
        _ => (0, 0),
    }
}

/// The heap bytes of a one-entry `serde_json::Map` (a B-tree leaf node; the empty key
/// allocates nothing).
fn btree_leaf_bytes() -> usize {
    let b0 = BYTES.load(Relaxed);
    let mut m = serde_json::Map::new();
    m.insert(String::new(), Value::Null);
    let used = BYTES.load(Relaxed) - b0;
    drop(m);
    used
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/pod-kube-apiserver-v1.36.3.json"
        )
        .to_string()
    });
    let json = std::fs::read(&path)?;
    let value: Value = serde_json::from_slice(&json)?;
    let body = kinformer_proto::object_from_json(&value)?;
    let envelope = kinformer_proto::Envelope::parse(&body)?;
    let (msg, proto) = (envelope.message()?, envelope.raw);
    // Decoding succeeded once above (object_from_json read the same JSON); the closures
    // below decode the same bytes again.
    Pod::deserialize(&mut kinformer_proto::MessageDeserializer::new(msg, proto))?;
    serde_json::from_slice::<Pod>(&json)?;
    let from_proto = |strip: bool| {
        let mut d = kinformer_proto::MessageDeserializer::new(msg, proto);
        if strip {
            d = d.without_managed_fields();
        }
        Pod::deserialize(&mut d).ok()
    };
    let meta = |strip: bool| from_proto(strip).map(|p| p.metadata);
    let fields: Vec<&Value> = value["metadata"]["managedFields"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e.get("fieldsV1")).collect())
        .unwrap_or_default();
    let (objects, keys) = fields
        .iter()
        .map(|v| shape(v))
        .fold((0, 0), |(o, k), (o2, k2)| (o + o2, k + k2));
    let node = btree_leaf_bytes();

    println!(
        "{path}: {} bytes of JSON, {} of protobuf\n",
        json.len(),
        proto.len()
    );
    println!("| held as | bytes per object | heap allocations |");
    println!("|---|---|---|");
    let rows: [(&str, (usize, f64)); 6] = [
        (
            "Pod, decoded from protobuf (the default cache)",
            per_object(|| from_proto(false)),
        ),
        (
            "Pod, decoded from JSON",
            per_object(|| serde_json::from_slice::<Pod>(&json).ok()),
        ),
        (
            "Pod, managedFields dropped (strip_managed_fields)",
            per_object(|| from_proto(true)),
        ),
        (
            "ObjectMeta (metadata-only informer)",
            per_object(|| meta(false)),
        ),
        (
            "ObjectMeta, managedFields dropped",
            per_object(|| meta(true)),
        ),
        (
            "managedFields alone",
            per_object(|| meta(false).and_then(|m: ObjectMeta| m.managed_fields)),
        ),
    ];
    for (label, (bytes, allocs)) in rows {
        println!("| {label} | {bytes} | {allocs:.0} |");
    }
    println!(
        "\nmanagedFields: {} entries; {objects} non-empty JSON objects in their fieldsV1, {keys} keys. \
         Each non-empty object is a B-tree leaf node of {node} bytes (std fixes a node's capacity \
         at 11 entries): {} bytes; each key is a String of its own.",
        fields.len(),
        objects * node
    );
    println!(
        "size_of: Pod {}, PodSpec {}, Container {}, ObjectMeta {}, serde_json::Value {}",
        std::mem::size_of::<Pod>(),
        std::mem::size_of::<k8s_openapi::api::core::v1::PodSpec>(),
        std::mem::size_of::<k8s_openapi::api::core::v1::Container>(),
        std::mem::size_of::<ObjectMeta>(),
        std::mem::size_of::<Value>()
    );
    Ok(())
}
