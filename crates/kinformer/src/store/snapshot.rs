//! What a snapshot needs of the cache: a consistent view of it (cheap: pointers, taken under
//! the read lock), and loading a lean snapshot's encoded objects without re-encoding them.

use std::sync::Arc;

use super::cache_state::{all_index_values, from_stored};
use super::error::StoreError;
use super::indexer::Indexer;
use super::lean::Stored;
use super::staged::StagedReplace;
use crate::object::Object;

/// The cache's contents at one moment: every object's key and stored form, the resource
/// version, and (lean mode) the compression dictionary. Holding it costs pointers only.
pub(crate) struct CacheView<K> {
    pub(crate) resource_version: Option<String>,
    pub(crate) entries: Vec<(Arc<str>, Stored<K>)>,
    pub(crate) dict: Option<Vec<u8>>,
}

impl<K: Object> Indexer<K> {
    /// Takes a [`CacheView`] under the read lock.
    pub(crate) fn snapshot_view(&self) -> CacheView<K> {
        let dict = self.codec().and_then(|c| c.dict()).map(<[u8]>::to_vec);
        self.with_state(|state| CacheView {
            resource_version: state.resource_version.clone(),
            entries: state
                .entries
                .values()
                .map(|e| (e.key.clone(), e.obj.clone()))
                .collect(),
            dict,
        })
    }

    /// Stages a lean snapshot's objects (key and encoded bytes) for
    /// [`install_staged`](Self::install_staged): the bytes are stored as they are, decoded only
    /// if an index needs the object. The cache must be a lean one whose dictionary is unset or
    /// equal to `dict`.
    ///
    /// # Errors
    /// [`StoreError::Codec`] for a full cache, a dictionary mismatch, or an object an index
    /// needs that does not decode; [`StoreError::IndexFunc`] when an index function fails.
    pub(crate) fn stage_encoded(
        &self,
        dict: &[u8],
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<StagedReplace<K>, StoreError> {
        let codec_error = |key: Option<&str>, message: &str| StoreError::Codec {
            key: key.map(str::to_owned),
            message: message.to_owned(),
        };
        let Some(codec) = self.codec() else {
            return Err(codec_error(
                None,
                "a lean snapshot cannot load into a full cache",
            ));
        };
        if !entries.is_empty() && !codec.set_dict(dict) {
            return Err(codec_error(
                None,
                "the cache's dictionary differs from the snapshot's",
            ));
        }
        let funcs = self.index_funcs();
        let mut items = Vec::with_capacity(entries.len());
        for (key, bytes) in entries {
            let stored = Stored::Lean(Arc::from(bytes));
            let values = if funcs.is_empty() {
                Vec::new()
            } else {
                let obj = from_stored(Some(codec), &stored, &key)?;
                all_index_values(funcs.iter().map(|(n, f)| (n.as_str(), f)), &obj, &key)?
            };
            items.push((key, values, stored));
        }
        Ok(StagedReplace::from_encoded(funcs, items))
    }
}
