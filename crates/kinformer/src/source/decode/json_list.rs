//! Decoding a list response while it arrives: each item of `items` is decoded into `K` as
//! soon as its last byte is in, and its bytes are dropped.
//!
//! A list body is one JSON object whose `items` array holds nearly every byte. Buffering the
//! whole body before decoding it holds the body and the decoded objects at once (for 100,000
//! pods, about 400 MB of JSON on top of the objects), and leaves the CPU idle while the body is
//! on the wire. [`ListStreamDecoder`] scans the bytes as they come with a small state machine
//! (string and escape state and nesting depth only; it never recurses, so deep nesting cannot
//! exhaust the stack), hands each complete item to serde_json, and keeps only the envelope (the
//! list's `kind` and `metadata`, a few hundred bytes) and the item in progress.
//!
//! The envelope is parsed by the same code as a whole body ([`decode_list`]) with an empty
//! `items`, so a streamed body and a buffered one are held to the same rules: invalid JSON
//! anywhere, a list of another kind, or an item that does not decode fails the whole list.
//!
//! [`decode_list`]: super::json::decode_list

use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::json::{decode_list, is_list_of};
use super::{ListBody, RawItems};
use crate::reflector::{ListPage, ListWatchError};

/// Where the scanner is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the `items` array: bytes go to the envelope.
    Head,
    /// Inside the `items` array, between items.
    Between,
    /// Inside an item.
    Item,
    /// After the `items` array: bytes go to the envelope.
    Tail,
}

/// An incremental decoder of one list response body (see the module docs).
///
/// Feed the body's chunks in order with [`push`](Self::push), then call
/// [`finish`](Self::finish). Any chunking gives the same result as decoding the whole body
/// with [`decode_list`](super::decode_list).
pub(crate) struct ListStreamDecoder<K> {
    kind: String,
    /// The most bytes one item, or the envelope, may have.
    max_object: usize,
    phase: Phase,
    /// Envelope bytes (everything outside the `items` array, which is replaced by `[]`).
    envelope: Vec<u8>,
    /// The item in progress (from its first byte).
    item: Vec<u8>,
    /// Complete items not decoded yet.
    raw: RawItems,
    /// Items completed so far.
    count: usize,
    _k: std::marker::PhantomData<fn() -> K>,
    /// Nesting depth of the scanner, counting the body's outer object as 1.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Head phase, depth 1: the bytes of the last complete string, and whether it is still
    /// the candidate key `items` (it must be followed by `:` then `[`).
    key_start: Option<usize>,
    last_string_is_items: bool,
    saw_colon_after_items: bool,
    /// Whether the list's `kind` was read before `items` and is the expected one: only then
    /// may decoded items leave before the body is complete.
    kind_verified: bool,
    /// Between items: an item was just closed (a `,` or `]` must follow).
    after_item: bool,
    /// Between items: a `,` was just read (an item must follow).
    after_comma: bool,
    /// The first error; later bytes are ignored.
    error: Option<ListWatchError>,
    /// `metadata.continue` as read from the envelope before `items`.
    early_continue: Option<String>,
}

impl<K: DeserializeOwned + Clone> ListStreamDecoder<K> {
    /// A decoder for a list of `kind` (e.g. `Pod`; the list is `PodList`) whose items, and
    /// whose envelope, may be at most `max_object` bytes each (past it the list fails with
    /// [`ListWatchError::TooLarge`] and the bytes are dropped).
    pub(crate) fn new(kind: &str, max_object: usize) -> Self {
        Self {
            kind: kind.to_owned(),
            max_object,
            phase: Phase::Head,
            envelope: Vec::new(),
            item: Vec::new(),
            raw: RawItems::starting_at(0, None),
            count: 0,
            _k: std::marker::PhantomData,
            depth: 0,
            in_string: false,
            escaped: false,
            key_start: None,
            last_string_is_items: false,
            saw_colon_after_items: false,
            after_item: false,
            after_comma: false,
            kind_verified: false,
            error: None,
            early_continue: None,
        }
    }

    /// Items completed so far (decoded or not).
    #[cfg(test)]
    pub(crate) fn decoded(&self) -> usize {
        self.count
    }

    /// Whether the list's `kind` came before `items` and is the expected one: only then may
    /// items leave before the body is complete.
    pub(crate) fn kind_verified(&self) -> bool {
        self.kind_verified && self.error.is_none()
    }

    /// The error that has failed the list so far, if any (the caller may stop reading).
    pub(crate) fn error(&self) -> Option<ListWatchError> {
        self.error.clone()
    }

    /// Takes the complete items not decoded yet, if there are at least `min`, to be decoded
    /// elsewhere ([`RawItems::decode`]; in parallel, by `KubeListerWatcher`). Their order
    /// relative to other batches is the caller's to keep.
    pub(crate) fn take_raw(&mut self, min: usize) -> Option<RawItems> {
        (self.error.is_none() && !self.raw.is_empty() && self.raw.len() >= min)
            .then(|| std::mem::replace(&mut self.raw, RawItems::starting_at(self.count, None)))
    }

    /// Decodes and takes the complete items, if there are at least `min` and the list is
    /// known to be of the expected kind ([`kind_verified`](Self::kind_verified)); otherwise
    /// they stay for [`finish`](Self::finish). A decode error is kept for `finish`.
    #[cfg(test)]
    pub(crate) fn take_batch(&mut self, min: usize) -> Option<Vec<Arc<K>>> {
        if !self.kind_verified() {
            return None;
        }
        let raw = self.take_raw(min)?;
        match raw.decode::<K>(&self.kind) {
            Ok(items) => Some(items),
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }

    /// At the `[` of `items`: reads the list's `kind` from the envelope so far (complete up to
    /// here once closed with `}`). A wrong kind is an error at once; a missing one means items
    /// are held until the end.
    fn check_kind_early(&mut self) {
        #[derive(serde::Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: Option<String>,
            #[serde(default)]
            metadata: Option<Meta>,
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            #[serde(default, rename = "continue")]
            continue_token: Option<String>,
        }
        let mut head = self.envelope.clone();
        head.push(b'}');
        match serde_json::from_slice::<Kind>(&head) {
            Ok(Kind {
                kind: Some(k),
                metadata,
            }) if is_list_of(&k, &self.kind) => {
                self.kind_verified = true;
                self.early_continue = metadata
                    .and_then(|m| m.continue_token)
                    .filter(|c| !c.is_empty());
            }
            Ok(Kind { kind: Some(k), .. }) => {
                self.error = Some(ListWatchError::Decode(format!(
                    "unexpected list kind {k:?}, expected \"{}List\"",
                    self.kind
                )));
            }
            // no kind yet, or a head that is not JSON: the envelope check at the end decides
            Ok(Kind { kind: None, .. }) | Err(_) => {}
        }
    }

    /// Feeds the next chunk of the body.
    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() && self.error.is_none() {
            let used = match self.phase {
                Phase::Head => self.scan_head(chunk),
                Phase::Between => self.scan_between(chunk),
                Phase::Item => self.scan_item(chunk),
                Phase::Tail => {
                    self.envelope.extend_from_slice(chunk);
                    chunk.len()
                }
            };
            chunk = &chunk[used..];
            self.check_sizes();
        }
    }

    /// Fails the list once the item in progress or the envelope is over the limit, and frees
    /// their bytes: memory stays bounded whatever the server sends.
    fn check_sizes(&mut self) {
        let what = if self.item.len() > self.max_object {
            "a list item"
        } else if self.envelope.len() > self.max_object {
            "a list's metadata"
        } else {
            return;
        };
        if self.error.is_none() {
            self.error = Some(ListWatchError::TooLarge {
                what,
                limit: self.max_object,
            });
        }
        self.item = Vec::new();
        self.envelope = Vec::new();
        self.raw = RawItems::starting_at(self.count, None);
    }

    /// Ends the body: parses the envelope and returns the page.
    ///
    /// # Errors
    /// [`ListWatchError::Decode`] when the body was not a well-formed list of this kind.
    pub(crate) fn finish(mut self) -> Result<ListPage<Arc<K>>, ListWatchError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.phase {
            Phase::Head | Phase::Tail => {}
            Phase::Between | Phase::Item => {
                return Err(ListWatchError::Decode(format!(
                    "cannot decode {}List: the body ends inside items",
                    self.kind
                )));
            }
        }
        let page = decode_list::<K>(&self.envelope, &self.kind)?.map_items(Arc::new);
        let streamed = self.raw.decode::<K>(&self.kind)?;
        // `items` the scanner did not recognise (a key written with escapes) were decoded
        // with the envelope; a second `items` field fails the envelope as a duplicate.
        if page.items.is_empty() {
            Ok(ListPage {
                items: streamed,
                ..page
            })
        } else {
            Ok(page)
        }
    }

    /// Before `items`: copies bytes to the envelope while tracking depth-1 keys. Returns how
    /// many bytes it used; stops right after the `[` that opens `items`.
    fn scan_head(&mut self, chunk: &[u8]) -> usize {
        for (i, &b) in chunk.iter().enumerate() {
            if self.in_string {
                self.envelope.push(b);
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if let Some(start) = self.key_start.take() {
                        // the string's bytes without its quotes
                        let end = self.envelope.len() - 1;
                        self.last_string_is_items = &self.envelope[start..end] == b"items";
                    }
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.saw_colon_after_items = false;
                    self.key_start = (self.depth == 1).then_some(self.envelope.len() + 1);
                    self.last_string_is_items = false;
                }
                b':' if self.depth == 1 && self.last_string_is_items => {
                    self.saw_colon_after_items = true;
                }
                b'[' if self.depth == 1 && self.saw_colon_after_items => {
                    // `"items": [` — the array's bytes stay out of the envelope
                    self.envelope.extend_from_slice(b"[]");
                    self.check_kind_early();
                    self.depth = 2;
                    self.phase = Phase::Between;
                    self.last_string_is_items = false;
                    self.saw_colon_after_items = false;
                    return i + 1;
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.last_string_is_items = false;
                    self.saw_colon_after_items = false;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.last_string_is_items = false;
                    self.saw_colon_after_items = false;
                }
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => {
                    if b != b':' {
                        self.last_string_is_items = false;
                        self.saw_colon_after_items = false;
                    }
                }
            }
            self.envelope.push(b);
        }
        chunk.len()
    }

    /// Between items: skips whitespace and one comma, starts the next item, or ends the
    /// array. Anything else (a scalar item, a missing or doubled comma) is an error.
    fn scan_between(&mut self, chunk: &[u8]) -> usize {
        for (i, &b) in chunk.iter().enumerate() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b',' if self.after_item => {
                    self.after_item = false;
                    self.after_comma = true;
                }
                b'{' if !self.after_item => {
                    self.item.clear();
                    self.item.push(b);
                    self.depth = 3;
                    self.after_comma = false;
                    self.phase = Phase::Item;
                    return i + 1;
                }
                b']' if !self.after_comma => {
                    self.depth = 1;
                    self.phase = Phase::Tail;
                    return i + 1;
                }
                other => {
                    self.error = Some(ListWatchError::Decode(format!(
                        "cannot decode {}List: unexpected {:?} in items (every item must be a \
                         JSON object, separated by commas)",
                        self.kind,
                        char::from(other)
                    )));
                    return chunk.len();
                }
            }
        }
        chunk.len()
    }

    /// Inside an item: copies bytes until the item's closing brace, then decodes it.
    fn scan_item(&mut self, chunk: &[u8]) -> usize {
        let mut i = 0;
        while i < chunk.len() {
            if self.in_string && self.escaped {
                // the byte after a backslash that ended the previous chunk
                self.escaped = false;
                self.item.push(chunk[i]);
                i += 1;
                continue;
            }
            if self.in_string {
                // jump to the next quote or backslash
                match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                    None => {
                        self.item.extend_from_slice(&chunk[i..]);
                        return chunk.len();
                    }
                    Some(off) => {
                        let at = i + off;
                        self.item.extend_from_slice(&chunk[i..=at]);
                        if chunk[at] == b'\\' {
                            if at + 1 < chunk.len() {
                                self.item.push(chunk[at + 1]);
                                i = at + 2;
                            } else {
                                self.escaped = true;
                                i = at + 1;
                            }
                        } else {
                            self.in_string = false;
                            i = at + 1;
                        }
                        continue;
                    }
                }
            }
            let b = chunk[i];
            self.item.push(b);
            i += 1;
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 2 {
                        self.complete_item();
                        self.after_item = true;
                        self.phase = Phase::Between;
                        return i;
                    }
                }
                _ => {}
            }
        }
        chunk.len()
    }

    /// The item in progress is complete: it joins the raw items to decode (unless it is over
    /// the size limit, which fails the list).
    fn complete_item(&mut self) {
        if self.item.len() > self.max_object {
            return self.check_sizes();
        }
        self.raw.push(&self.item);
        self.count += 1;
        // keep the buffer's capacity for the next item, but not a huge one
        self.item.clear();
        if self.item.capacity() > 1 << 20 {
            self.item.shrink_to(64 << 10);
        }
    }
}

impl<K: DeserializeOwned + Clone + Send + 'static> ListBody<K> for ListStreamDecoder<K> {
    fn push(&mut self, chunk: &[u8]) {
        ListStreamDecoder::push(self, chunk);
    }

    fn kind_verified(&self) -> bool {
        ListStreamDecoder::kind_verified(self)
    }

    fn error(&self) -> Option<ListWatchError> {
        ListStreamDecoder::error(self)
    }

    fn take_raw(&mut self, min: usize) -> Option<RawItems> {
        ListStreamDecoder::take_raw(self, min)
    }

    fn early_continue(&self) -> Option<&str> {
        self.early_continue
            .as_deref()
            .filter(|_| self.kind_verified())
    }

    fn finish(self: Box<Self>) -> Result<ListPage<Arc<K>>, ListWatchError> {
        ListStreamDecoder::finish(*self)
    }
}

#[cfg(test)]
mod tests;
