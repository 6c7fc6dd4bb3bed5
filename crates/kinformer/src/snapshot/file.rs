//! Snapshot files: their names, reading them bounded, writing them atomically.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::SnapshotError;
use super::checksum::xxh64;
use super::format::{Body, ListScope, SnapshotHeader, TypeIdentity, decode, decode_header};

/// The suffix of a temporary file being written; such files are never read.
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

/// The file name of the snapshot of `identity` in `scope`: readable parts (group, version,
/// plural, `meta` for metadata-only) and a hash of the whole scope, so two informers of
/// different types or scopes never share a file.
///
/// ```
/// use kinformer::snapshot::{ListScope, TypeIdentity, snapshot_file_name};
/// let pods = TypeIdentity { group: "".into(), version: "v1".into(), kind: "Pod".into(),
///     plural: "pods".into(), metadata_only: false };
/// let all = snapshot_file_name(&pods, &ListScope::default());
/// let prod = snapshot_file_name(&pods, &ListScope { namespace: Some("prod".into()), ..Default::default() });
/// assert!(all.starts_with("core.v1.pods.") && all.ends_with(".snap"));
/// assert_ne!(all, prod);
/// ```
pub fn snapshot_file_name(identity: &TypeIdentity, scope: &ListScope) -> String {
    let group = if identity.group.is_empty() {
        "core"
    } else {
        &identity.group
    };
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let whole = serde_json::to_vec(&(identity, scope)).unwrap_or_default();
    format!(
        "{}.{}.{}{}.{:016x}.snap",
        clean(group),
        clean(&identity.version),
        clean(&identity.plural),
        if identity.metadata_only { ".meta" } else { "" },
        xxh64(&whole)
    )
}

fn io_error(path: &Path, source: std::io::Error) -> SnapshotError {
    SnapshotError::Io {
        path: path.to_owned(),
        source: Arc::new(source),
    }
}

/// Reads a file of at most `max` bytes; `Ok(None)` when it does not exist.
fn read_bounded(path: &Path, max: u64) -> Result<Option<Vec<u8>>, SnapshotError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, e)),
    };
    if meta.len() > max {
        return Err(SnapshotError::TooLarge {
            size: meta.len(),
            limit: max,
        });
    }
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    if bytes.len() as u64 > max {
        return Err(SnapshotError::TooLarge {
            size: bytes.len() as u64,
            limit: max,
        });
    }
    Ok(Some(bytes))
}

/// Reads and checks the header of the snapshot at `path` (magic, format version, checksum over
/// the whole file), refusing files over `max_bytes`: for tools and tests that inspect
/// snapshots. `Ok(None)` when there is no file.
///
/// # Errors
/// [`SnapshotError::Io`], [`SnapshotError::TooLarge`] or [`SnapshotError::Format`].
pub fn read_snapshot(path: &Path, max_bytes: u64) -> Result<Option<SnapshotHeader>, SnapshotError> {
    let Some(bytes) = read_bounded(path, max_bytes)? else {
        return Ok(None);
    };
    Ok(Some(decode_header(&bytes)?.0))
}

/// Reads and decodes the whole snapshot at `path`; `Ok(None)` when there is no file.
pub(crate) fn read_whole(
    path: &Path,
    max_bytes: u64,
) -> Result<Option<(SnapshotHeader, Body)>, SnapshotError> {
    let Some(bytes) = read_bounded(path, max_bytes)? else {
        return Ok(None);
    };
    Ok(Some(decode(&bytes)?))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced,
/// renamed over `path`, then the directory synced. A crash at any point leaves either the
/// previous file or the new one, never a mix; a leftover temporary file is never read (and is
/// overwritten by the next write). The directory is created if it does not exist.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SnapshotError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    let mut temp: PathBuf = path.to_owned();
    temp.as_mut_os_string().push(TEMP_SUFFIX);
    let result = (|| {
        let mut f = std::fs::File::create(&temp).map_err(|e| io_error(&temp, e))?;
        f.write_all(bytes).map_err(|e| io_error(&temp, e))?;
        f.sync_all().map_err(|e| io_error(&temp, e))?;
        drop(f);
        std::fs::rename(&temp, path).map_err(|e| io_error(path, e))?;
        // the rename is durable once the directory is synced
        let d = std::fs::File::open(dir).map_err(|e| io_error(dir, e))?;
        d.sync_all().map_err(|e| io_error(dir, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::format::{StoredAs, encode};

    fn header() -> SnapshotHeader {
        SnapshotHeader {
            type_identity: TypeIdentity {
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                plural: "deployments".into(),
                metadata_only: false,
            },
            scope: ListScope::default(),
            cluster_id: "c".into(),
            resource_version: "7".into(),
            object_count: 1,
            stored_as: StoredAs::Full,
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "kinformer-snapshot-{name}-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn atomic_write_replaces_and_a_leftover_temp_file_is_ignored() {
        let dir = temp_dir("atomic");
        let path = dir.join("x.snap");
        let first = encode(&header(), &Body::Full(vec![b"{}".to_vec()])).unwrap();
        write_atomic(&path, &first).unwrap();
        // a crash mid-write leaves a partial temp file next to the good snapshot
        let mut temp = path.clone().into_os_string();
        temp.push(TEMP_SUFFIX);
        std::fs::write(&temp, &first[..first.len() / 2]).unwrap();
        let (h, _) = read_whole(&path, u64::MAX).unwrap().unwrap();
        assert_eq!(h, header());
        // a directory that does not exist yet is created
        let nested = dir.join("not").join("yet");
        write_atomic(&nested.join("x.snap"), &first).unwrap();
        assert!(
            read_snapshot(&nested.join("x.snap"), u64::MAX)
                .unwrap()
                .is_some()
        );
        // the next write overwrites the leftover and the snapshot
        let mut second_header = header();
        second_header.resource_version = "8".into();
        let second = encode(&second_header, &Body::Full(vec![b"{}".to_vec()])).unwrap();
        write_atomic(&path, &second).unwrap();
        assert!(!Path::new(&temp).exists());
        assert_eq!(
            read_snapshot(&path, u64::MAX).unwrap().unwrap(),
            second_header
        );
        assert!(
            read_snapshot(&dir.join("none.snap"), u64::MAX)
                .unwrap()
                .is_none()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_over_the_limit_is_refused_unread() {
        let dir = temp_dir("limit");
        let path = dir.join("x.snap");
        std::fs::write(&path, vec![0u8; 100]).unwrap();
        assert!(matches!(
            read_whole(&path, 99),
            Err(SnapshotError::TooLarge {
                size: 100,
                limit: 99
            })
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn names_differ_per_type_scope_and_metadata_only() {
        let h = header();
        let mut meta = h.type_identity.clone();
        meta.metadata_only = true;
        let labelled = ListScope {
            label_selector: Some("app=web".into()),
            ..Default::default()
        };
        let names = [
            snapshot_file_name(&h.type_identity, &h.scope),
            snapshot_file_name(&meta, &h.scope),
            snapshot_file_name(&h.type_identity, &labelled),
        ];
        assert_ne!(names[0], names[1]);
        assert_ne!(names[0], names[2]);
        assert!(names[0].starts_with("apps.v1.deployments."), "{}", names[0]);
        assert!(
            names[1].starts_with("apps.v1.deployments.meta."),
            "{}",
            names[1]
        );
    }
}
