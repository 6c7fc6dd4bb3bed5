//! The snapshot file format: a header, the objects, a checksum over everything.
//!
//! ```text
//! "KINFSNAP"                      8 bytes, magic
//! format version                  u32 LE (FORMAT_VERSION)
//! header length                   u32 LE (at most MAX_HEADER)
//! header                          JSON (SnapshotHeader)
//! lean only: dictionary length    u32 LE, then the lean cache's LZ4 dictionary
//! object_count records:
//!   full: u32 LE length, the object's JSON
//!   lean: u32 LE length, the key; u32 LE length, the object as the lean cache stores it
//! checksum                        u64 LE, xxHash64 (seed 0) of every byte before it
//! "KINFEND!"                      8 bytes, end magic
//! ```
//!
//! Everything read is untrusted: lengths are checked against what is left before anything is
//! allocated, and every failure is a [`FormatError`], never a panic.

use serde::{Deserialize, Serialize};

use super::checksum::xxh64;

/// The first bytes of every snapshot file.
pub(crate) const MAGIC: &[u8; 8] = b"KINFSNAP";
/// The last bytes of every complete snapshot file.
pub(crate) const END_MAGIC: &[u8; 8] = b"KINFEND!";
/// The format this crate writes and reads; a file of any other version is refused.
pub const FORMAT_VERSION: u32 = 1;
/// The largest header accepted.
const MAX_HEADER: usize = 64 * 1024;
/// The smallest file: magic, version, header length, checksum, end magic.
const MIN_LEN: usize = 8 + 4 + 4 + 8 + 8;

/// What a snapshot holds objects of: the resource and whether only metadata is cached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeIdentity {
    /// API group (`""` for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// Whether the informer caches only metadata (`PartialObjectMeta`).
    pub metadata_only: bool,
}

/// Which objects of the type the informer lists: a snapshot of one scope never loads into an
/// informer of another.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListScope {
    /// The namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// The label selector.
    pub label_selector: Option<String>,
    /// The field selector.
    pub field_selector: Option<String>,
    /// The shard selector.
    pub shard: Option<String>,
    /// The namespaces of the informer's [`NamespaceSet`](crate::NamespaceSet) when the
    /// snapshot was written (`None`: no set; left out of the file then). A snapshot loads only
    /// into an informer whose set holds the same namespaces when it starts, and such an
    /// informer always lists (diffed against the snapshot) rather than resumes: see
    /// [`NamespaceSetListerWatcher`](crate::NamespaceSetListerWatcher).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
}

/// How the objects are stored in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoredAs {
    /// Each object's JSON.
    Full,
    /// Each object as a lean cache holds it (LZ4 against the file's dictionary).
    Lean,
}

/// The header of a snapshot file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotHeader {
    /// The objects' type.
    pub type_identity: TypeIdentity,
    /// The informer's list scope.
    pub scope: ListScope,
    /// The cluster's identity ([`cluster_id`](super::cluster_id)).
    pub cluster_id: String,
    /// The resourceVersion the cache was at.
    pub resource_version: String,
    /// How many objects follow.
    pub object_count: u64,
    /// How they are stored.
    pub stored_as: StoredAs,
}

/// The body of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    /// Each object's JSON.
    Full(Vec<Vec<u8>>),
    /// The lean dictionary, then each object's key and stored bytes.
    Lean {
        dict: Vec<u8>,
        entries: Vec<(String, Vec<u8>)>,
    },
}

impl Body {
    fn len(&self) -> usize {
        match self {
            Body::Full(objects) => objects.len(),
            Body::Lean { entries, .. } => entries.len(),
        }
    }
}

/// Why bytes are not a snapshot this crate can load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The file does not start with the snapshot magic.
    #[error("not a snapshot file (bad magic)")]
    BadMagic,
    /// The file was written in another format version.
    #[error("snapshot format version {found}, this build reads {FORMAT_VERSION}")]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
    },
    /// The file ends early (a crash or copy cut it short).
    #[error("the snapshot is truncated: {0}")]
    Truncated(&'static str),
    /// The checksum does not match the contents.
    #[error("the snapshot's checksum does not match its contents")]
    ChecksumMismatch,
    /// The contents are not what the format says (bad lengths, counts, header).
    #[error("the snapshot is malformed: {0}")]
    Malformed(String),
}

/// Encodes a snapshot.
pub(crate) fn encode(header: &SnapshotHeader, body: &Body) -> Result<Vec<u8>, FormatError> {
    let header_json =
        serde_json::to_vec(header).map_err(|e| FormatError::Malformed(e.to_string()))?;
    if header_json.len() > MAX_HEADER {
        return Err(FormatError::Malformed("header too large".into()));
    }
    let body_len = match body {
        Body::Full(objects) => objects.iter().map(|o| o.len() + 4).sum::<usize>(),
        Body::Lean { dict, entries } => {
            dict.len()
                + 4
                + entries
                    .iter()
                    .map(|(k, b)| k.len() + b.len() + 8)
                    .sum::<usize>()
        }
    };
    let mut out = Vec::with_capacity(MIN_LEN + header_json.len() + body_len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    push_bytes(&mut out, &header_json)?;
    match body {
        Body::Full(objects) => {
            for o in objects {
                push_bytes(&mut out, o)?;
            }
        }
        Body::Lean { dict, entries } => {
            push_bytes(&mut out, dict)?;
            for (key, blob) in entries {
                push_bytes(&mut out, key.as_bytes())?;
                push_bytes(&mut out, blob)?;
            }
        }
    }
    let sum = xxh64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out.extend_from_slice(END_MAGIC);
    Ok(out)
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), FormatError> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| FormatError::Malformed("a record over 4 GiB".into()))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

/// Reads only the header (after checking magic, version, end and checksum).
pub(crate) fn decode_header(bytes: &[u8]) -> Result<(SnapshotHeader, Reader<'_>), FormatError> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(if MAGIC.starts_with(bytes) {
            FormatError::Truncated("shorter than the magic")
        } else {
            FormatError::BadMagic
        });
    }
    if bytes.len() < MIN_LEN {
        return Err(FormatError::Truncated("shorter than the smallest snapshot"));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
    if version != FORMAT_VERSION {
        return Err(FormatError::UnsupportedVersion { found: version });
    }
    let (content, trailer) = bytes.split_at(bytes.len() - 16);
    if &trailer[8..] != END_MAGIC {
        return Err(FormatError::Truncated("no end marker"));
    }
    let sum = u64::from_le_bytes(trailer[..8].try_into().unwrap_or_default());
    if xxh64(content) != sum {
        return Err(FormatError::ChecksumMismatch);
    }
    let mut reader = Reader {
        rest: &content[12..],
    };
    let header_json = reader.bytes(MAX_HEADER)?;
    let header: SnapshotHeader = serde_json::from_slice(header_json)
        .map_err(|e| FormatError::Malformed(format!("header: {e}")))?;
    // every record takes at least 4 bytes (8 in lean mode): a count past that is a lie
    let min_record = match header.stored_as {
        StoredAs::Full => 4,
        StoredAs::Lean => 8,
    };
    if header.object_count > (reader.rest.len() / min_record) as u64 {
        return Err(FormatError::Malformed(format!(
            "{} objects cannot fit in {} bytes",
            header.object_count,
            reader.rest.len()
        )));
    }
    Ok((header, reader))
}

/// Decodes a whole snapshot.
pub(crate) fn decode(bytes: &[u8]) -> Result<(SnapshotHeader, Body), FormatError> {
    let (header, mut reader) = decode_header(bytes)?;
    let count = usize::try_from(header.object_count)
        .map_err(|_| FormatError::Malformed("object count".into()))?;
    let body = match header.stored_as {
        StoredAs::Full => {
            let mut objects = Vec::with_capacity(count);
            for _ in 0..count {
                objects.push(reader.bytes(usize::MAX)?.to_vec());
            }
            Body::Full(objects)
        }
        StoredAs::Lean => {
            let dict = reader.bytes(usize::MAX)?.to_vec();
            let mut entries = Vec::with_capacity(count);
            for _ in 0..count {
                let key = std::str::from_utf8(reader.bytes(usize::MAX)?)
                    .map_err(|_| FormatError::Malformed("a key is not UTF-8".into()))?
                    .to_owned();
                if key.is_empty() {
                    return Err(FormatError::Malformed("an empty key".into()));
                }
                entries.push((key, reader.bytes(usize::MAX)?.to_vec()));
            }
            Body::Lean { dict, entries }
        }
    };
    if !reader.rest.is_empty() {
        return Err(FormatError::Malformed(format!(
            "{} bytes after the last object",
            reader.rest.len()
        )));
    }
    debug_assert_eq!(body.len(), count);
    Ok((header, body))
}

/// Reads length-prefixed records.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, max: usize) -> Result<&'a [u8], FormatError> {
        let Some((len, rest)) = self.rest.split_first_chunk::<4>() else {
            return Err(FormatError::Malformed("a record length is cut".into()));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > rest.len() || len > max {
            return Err(FormatError::Malformed(format!(
                "a record of {len} bytes with {} left",
                rest.len()
            )));
        }
        let (record, rest) = rest.split_at(len);
        self.rest = rest;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn header(stored_as: StoredAs, count: u64) -> SnapshotHeader {
        SnapshotHeader {
            type_identity: TypeIdentity {
                group: String::new(),
                version: "v1".into(),
                kind: "Pod".into(),
                plural: "pods".into(),
                metadata_only: false,
            },
            scope: ListScope {
                namespace: Some("default".into()),
                ..Default::default()
            },
            cluster_id: "uid-1".into(),
            resource_version: "42".into(),
            object_count: count,
            stored_as,
        }
    }

    fn full() -> (SnapshotHeader, Body) {
        let objects: Vec<Vec<u8>> = (0..5)
            .map(|i| format!(r#"{{"metadata":{{"name":"p{i}"}}}}"#).into_bytes())
            .collect();
        (header(StoredAs::Full, 5), Body::Full(objects))
    }

    fn lean() -> (SnapshotHeader, Body) {
        let entries = (0..4)
            .map(|i| (format!("default/p{i}"), vec![i as u8; 10 + i]))
            .collect();
        (
            header(StoredAs::Lean, 4),
            Body::Lean {
                dict: b"dictionary".to_vec(),
                entries,
            },
        )
    }

    #[test]
    fn round_trips_full_and_lean() {
        for (h, b) in [full(), lean()] {
            let bytes = encode(&h, &b).unwrap();
            assert_eq!(decode(&bytes).unwrap(), (h, b));
        }
    }

    #[test]
    fn another_format_version_is_refused() {
        let (h, b) = full();
        let mut bytes = encode(&h, &b).unwrap();
        bytes[8] = 2;
        assert_eq!(
            decode(&bytes).unwrap_err(),
            FormatError::UnsupportedVersion { found: 2 }
        );
    }

    #[test]
    fn a_count_larger_than_the_file_is_malformed_even_with_a_good_checksum() {
        let (mut h, b) = full();
        h.object_count = 1 << 40;
        let bytes = encode(&h, &b).unwrap();
        assert!(matches!(decode(&bytes), Err(FormatError::Malformed(_))));
        h.object_count = 6;
        let bytes = encode(&h, &b).unwrap();
        assert!(matches!(decode(&bytes), Err(FormatError::Malformed(_))));
    }

    #[test]
    fn checksum_detects_a_flipped_bit_and_truncation_is_named() {
        let (h, b) = lean();
        let bytes = encode(&h, &b).unwrap();
        let mut flipped = bytes.clone();
        flipped[40] ^= 0x10;
        assert_eq!(decode(&flipped).unwrap_err(), FormatError::ChecksumMismatch);
        let cut = &bytes[..bytes.len() - 3];
        assert!(matches!(decode(cut), Err(FormatError::Truncated(_))));
        assert!(matches!(
            decode(&bytes[..4]),
            Err(FormatError::Truncated(_))
        ));
        assert_eq!(
            decode(b"not a snapshot at all, no").unwrap_err(),
            FormatError::BadMagic
        );
    }

    proptest! {
        /// Any truncation of a valid file is an error, never a panic.
        #[test]
        fn any_truncation_is_an_error(cut in 0usize..400, lean_mode: bool) {
            let (h, b) = if lean_mode { lean() } else { full() };
            let bytes = encode(&h, &b).unwrap();
            let cut = cut.min(bytes.len() - 1);
            prop_assert!(decode(&bytes[..cut]).is_err());
        }

        /// Any corrupted byte is detected (a checksum, magic or version error), never a panic.
        #[test]
        fn flipped_bits_are_an_error(at in 0usize..400, mask in 1u8..=255, lean_mode: bool) {
            let (h, b) = if lean_mode { lean() } else { full() };
            let mut bytes = encode(&h, &b).unwrap();
            let at = at % bytes.len();
            bytes[at] ^= mask;
            prop_assert!(decode(&bytes).is_err());
        }

        /// Arbitrary bytes after a valid prefix never panic the decoder.
        #[test]
        fn garbage_never_panics(garbage in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
            bytes.extend_from_slice(&garbage);
            let _ = decode(&bytes);
            // with a matching checksum the structure itself is checked
            let sum = xxh64(&bytes);
            bytes.extend_from_slice(&sum.to_le_bytes());
            bytes.extend_from_slice(END_MAGIC);
            let _ = decode(&bytes);
        }
    }
}
