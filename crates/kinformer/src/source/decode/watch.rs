//! Watch framing and decoding. A watch response body is one JSON event per line, or (protobuf)
//! one length-prefixed `WatchEvent` after another. Either way events are cut from the body as
//! they complete and decoded off the reading task, in batches on every core when a backlog
//! builds (a streaming list's initial events, a burst of changes), in the server's order;
//! a lone event (a live watch's usual) is decoded on the reading task.
//! Lines are found by scanning only the bytes that arrived since the last scan (memchr), and
//! one event may be at most the configured size: a server or proxy that sends an endless line
//! or announces a huge frame costs one bounded buffer and ends the watch with
//! [`ListWatchError::TooLarge`].

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use kube::Resource;
use serde::de::DeserializeOwned;

use super::json::{decode_watch_line, typed_event};
use super::ordered::{Ordered, Step};
use super::{DECODE_BATCH, ProtoItems};
use crate::reflector::{ListWatchError, TransportErrorKind, WatchEvent, WatchStream};

/// Splits a watch body into lines of at most `max_line` bytes and decodes each into an event
/// of `kind`. The stream ends after the body ends or after the first error that ends it: a
/// line over the limit ([`ListWatchError::TooLarge`]), a broken body
/// ([`TransportErrorKind::Other`]), or a body that ends inside an event
/// ([`TransportErrorKind::Incomplete`]). A line that is complete but does not decode is a
/// [`ListWatchError::Decode`] item, and the stream goes on.
pub(crate) fn watch_lines<K, B, E>(body: B, kind: String, max_line: usize) -> WatchStream<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    B: futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    watch_events(body, kind, Format::JsonLines, max_line)
}

/// Splits a protobuf watch body (`application/vnd.kubernetes.protobuf;stream=watch`: each
/// event a 4-byte big-endian length, then a `WatchEvent` in the `k8s\0` envelope) into events
/// of `kind`, each decoded by [`decode_watch_frame`]. Limits and endings are those of
/// [`watch_lines`]: a frame over `max_frame` ends the stream with
/// [`ListWatchError::TooLarge`], a body that ends inside a frame with
/// [`TransportErrorKind::Incomplete`]; a frame that does not decode is a
/// [`ListWatchError::Decode`] item and the stream goes on.
pub(crate) fn watch_frames<K, B, E>(
    body: B,
    kind: String,
    items: ProtoItems,
    max_frame: usize,
) -> WatchStream<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    B: futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    watch_events(body, kind, Format::Protobuf(items), max_frame)
}

fn watch_events<K, B, E>(body: B, kind: String, format: Format, max: usize) -> WatchStream<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    B: futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    let state = ParallelDecode {
        reader: EventReader {
            body: Some(Box::pin(body)),
            buf: BytesMut::new(),
            scanned: 0,
            max,
            format,
        },
        jobs: Ordered::new(),
        ready: VecDeque::new(),
        pending: Vec::new(),
        end: None,
        kind: Arc::from(kind),
    };
    futures::stream::unfold(state, |mut st| async move {
        let item = st.next().await?;
        Some((item, st))
    })
    .boxed()
}

/// How a watch body is cut into events, and how each is decoded.
#[derive(Clone, Copy)]
enum Format {
    /// One JSON event per line (`application/json;stream=watch`).
    JsonLines,
    /// Length-prefixed protobuf `WatchEvent`s, their objects decoded as the items say.
    Protobuf(ProtoItems),
}

/// One event's bytes as cut from the body (without its newline or length), copied out of the
/// read buffer: a view into it would keep the buffer shared while the event waits or
/// decodes, and a shared buffer cannot take the next chunk into the room already read, so
/// every chunk would cost a new buffer (fresh pages) instead of an event-sized copy.
struct Cut {
    bytes: Vec<u8>,
    /// False for a last line that the body ended without a newline after: it still counts if
    /// it decodes, else it is an event cut off by the connection.
    whole: bool,
}

impl Cut {
    fn decode<K>(&self, kind: &str, format: Format) -> Result<WatchEvent<K>, ListWatchError>
    where
        K: Resource + DeserializeOwned + 'static,
    {
        match format {
            Format::Protobuf(items) => decode_watch_frame(&self.bytes, kind, items),
            Format::JsonLines if self.whole => {
                crate::memory::grow_heap_ahead();
                decode_watch_line(&self.bytes, kind)
            }
            Format::JsonLines => {
                decode_watch_line(&self.bytes, kind).map_err(|e| ListWatchError::Transport {
                    kind: TransportErrorKind::Incomplete,
                    message: format!(
                        "the watch stream ended inside an event ({} bytes): {e}",
                        self.bytes.len()
                    ),
                })
            }
        }
    }
}

/// Events decoded together on the blocking pool, in order.
type Decoded<K> = Vec<Result<WatchEvent<K>, ListWatchError>>;

/// A watch body's events, decoded off the reading task (as client-go's watch decodes on a
/// goroutine of its own) so the body keeps downloading meanwhile: events are cut as they
/// complete, what has already arrived is read without waiting, and events gather while earlier
/// ones decode; a batch goes to the blocking pool when it is full or when nothing else is
/// decoding, at most [`DECODE_JOBS`](super::DECODE_JOBS) at a time (the [`Ordered`] pipeline
/// lists use too). A streaming list's initial events or a burst of changes fill batches and
/// decode on every core. A live watch's lone event, with nothing else decoding, is decoded on
/// the reading task (about 30 µs for a pod; client-go's watch decodes on its own goroutine):
/// handed to the blocking pool, each event would run on whichever of its threads is free, and
/// the objects the cache keeps would come from many threads' glibc heaps (arenas), each
/// keeping the memory freed into it when the objects are replaced (the real tier's soak, see
/// [`crate::memory`]). (Decoding on the reading task until a backlog shows does not work: the client reads
/// the socket only when the body is polled, so a backlog waits in the kernel, not here, and
/// the reading task decoding batches of it inline made metadata-only informers about 10 %
/// slower to sync.) Events leave in the order the server sent them, and whatever ends the
/// stream comes after them. Memory stays bounded: one partial event, one batch being gathered
/// and the jobs' batches.
struct ParallelDecode<K, B> {
    reader: EventReader<B>,
    jobs: Ordered<Decoded<K>>,
    /// Decoded events not yet handed on (one job's at most).
    ready: VecDeque<Result<WatchEvent<K>, ListWatchError>>,
    /// Events cut from the body and not yet given to a job (a batch at most).
    pending: Vec<Cut>,
    /// Set once the body ended (`Some(None)`) or failed (`Some(Some(e))`): what comes after
    /// the events still being decoded.
    end: Option<Option<ListWatchError>>,
    kind: Arc<str>,
}

impl<K, B, E> ParallelDecode<K, B>
where
    K: Resource + DeserializeOwned + Send + 'static,
    B: futures::Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    /// Every complete event buffered, up to a batch (or the error that ends the stream).
    fn cut_buffered(&mut self) {
        while self.end.is_none() && self.pending.len() < DECODE_BATCH {
            match self.reader.take_event() {
                Some(Ok(cut)) => self.pending.push(cut),
                Some(Err(e)) => self.end = Some(Some(e)),
                None => break,
            }
        }
    }

    async fn next(&mut self) -> Option<Result<WatchEvent<K>, ListWatchError>> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            self.cut_buffered();
            // and what else has arrived already, without waiting: a backlog shows as many
            // events at once
            while self.end.is_none() && self.pending.len() < DECODE_BATCH {
                match self.reader.fill().now_or_never() {
                    None => break,
                    Some(None) => self.cut_buffered(),
                    Some(Some(end)) => self.end = Some(end),
                }
            }
            // a new job for a full batch, or for what there is when nothing is being decoded
            // (or nothing more will come); otherwise events gather while the jobs run
            if !self.pending.is_empty()
                && self.jobs.has_room()
                && (self.pending.len() >= DECODE_BATCH
                    || self.jobs.is_empty()
                    || self.end.is_some())
            {
                let batch = std::mem::take(&mut self.pending);
                let (kind, format) = (self.kind.clone(), self.reader.format);
                if batch.len() == 1 && self.jobs.is_empty() {
                    // a lone event (a live watch): decoded here, see the type's docs
                    self.ready
                        .extend(batch.iter().map(|cut| cut.decode::<K>(&kind, format)));
                    continue;
                }
                self.jobs.spawn(move || {
                    batch
                        .iter()
                        .map(|cut| cut.decode::<K>(&kind, format))
                        .collect()
                });
                continue;
            }
            if let Some(end) = &mut self.end
                && self.pending.is_empty()
            {
                if let Some(done) = self.jobs.oldest().await {
                    self.ready.extend(joined(done));
                    continue;
                }
                // the body's end, once: afterwards the stream is over
                return end.take().map(Err);
            }
            // wait for the oldest job, reading on meanwhile unless a full batch is waiting;
            // with nothing being decoded and nothing cut, only more bytes can help
            let may_read = self.end.is_none() && self.pending.len() < DECODE_BATCH;
            match self.jobs.next(may_read, self.reader.fill()).await {
                Step::Decoded(done) => self.ready.extend(joined(done)),
                Step::Read(Some(end)) => self.end = Some(end),
                Step::Read(None) => {}
            }
        }
    }
}

/// A decoding job's events; a job that panicked is one decode error in their place.
fn joined<K>(r: Result<Decoded<K>, tokio::task::JoinError>) -> Decoded<K> {
    r.unwrap_or_else(|e| {
        vec![Err(ListWatchError::Decode(format!(
            "decoding watch events failed: {e}"
        )))]
    })
}

fn bad_frame(e: kinformer_proto::ProtoError) -> ListWatchError {
    ListWatchError::Decode(format!("cannot decode a protobuf watch event: {e}"))
}

/// One protobuf watch frame as an event of `kind`. An object event's object is decoded from
/// its message straight into `K`, as a protobuf list's items are (no JSON in between; every
/// list in it allocated at its final length; `managedFields` left out when `items` says so),
/// after the same kind check as a JSON event; BOOKMARK and ERROR events, small and rare, are
/// decoded from the JSON event line they stand for by the JSON watch's own code
/// ([`decode_watch_line`]), so both wire formats give the same events and the same errors.
fn decode_watch_frame<K>(
    frame: &[u8],
    kind: &str,
    items: ProtoItems,
) -> Result<WatchEvent<K>, ListWatchError>
where
    K: Resource + DeserializeOwned + 'static,
{
    let ev = kinformer_proto::WatchEvent::parse(frame).map_err(bad_frame)?;
    if !matches!(ev.event_type, "ADDED" | "MODIFIED" | "DELETED") {
        return frame_as_line(ev).and_then(|line| decode_watch_line::<K>(&line, kind));
    }
    if ev.object.is_empty() {
        return Err(ListWatchError::Decode(format!(
            "{} event has no object",
            ev.event_type
        )));
    }
    let env = kinformer_proto::Envelope::parse(ev.object).map_err(bad_frame)?;
    if !env.kind.is_empty() && env.kind != kind {
        return Err(ListWatchError::Decode(format!(
            "unexpected object kind {:?}, expected {kind:?}",
            env.kind
        )));
    }
    // the type the server wrote, as a JSON event carries it (a typed decoder checks it)
    let type_meta = (!env.kind.is_empty() && !env.api_version.is_empty())
        .then_some((env.api_version, env.kind));
    crate::memory::grow_heap_ahead();
    let obj = K::deserialize(&mut items.deserializer(env.raw, type_meta))
        .map_err(|e| ListWatchError::Decode(format!("cannot decode {kind}: {e}")))?;
    typed_event(ev.event_type, obj)
}

/// A protobuf watch event as the JSON watch line it stands for.
fn frame_as_line(ev: kinformer_proto::WatchEvent<'_>) -> Result<Vec<u8>, ListWatchError> {
    let object = kinformer_proto::object_to_json(ev.object).map_err(bad_frame)?;
    let mut line = Vec::with_capacity(object.len() + 32);
    line.extend_from_slice(b"{\"type\":");
    let _ = serde_json::to_writer(&mut line, ev.event_type);
    line.extend_from_slice(b",\"object\":");
    line.extend_from_slice(&object);
    line.push(b'}');
    Ok(line)
}

/// Cuts a watch body into events as its bytes arrive.
struct EventReader<B> {
    /// `None` once the body ended or the stream was ended by an error.
    body: Option<std::pin::Pin<Box<B>>>,
    buf: BytesMut,
    /// JSON lines: how many bytes at the start of `buf` are known to hold no newline.
    scanned: usize,
    /// The largest event, in bytes.
    max: usize,
    format: Format,
}

fn blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

impl<B, E> EventReader<B>
where
    B: futures::Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    /// The next complete event buffered, if there is one, or the error that ends the stream
    /// (an event over the limit: [`ListWatchError::TooLarge`]).
    fn take_event(&mut self) -> Option<Result<Cut, ListWatchError>> {
        match self.format {
            Format::JsonLines => self.take_line(),
            Format::Protobuf(_) => self.take_frame(),
        }
    }

    /// The next non-blank line (without its newline); after the body's end, what is left
    /// without a newline.
    fn take_line(&mut self) -> Option<Result<Cut, ListWatchError>> {
        loop {
            if let Some(offset) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + offset;
                self.scanned = 0;
                if end > self.max {
                    return Some(Err(self.too_large()));
                }
                let line = (!blank(&self.buf[..end])).then(|| self.buf[..end].to_vec());
                self.buf.advance(end + 1);
                let Some(line) = line else {
                    continue;
                };
                return Some(Ok(Cut {
                    bytes: line,
                    whole: true,
                }));
            }
            self.scanned = self.buf.len();
            if self.buf.len() > self.max {
                return Some(Err(self.too_large()));
            }
            if self.body.is_none() && !blank(&self.buf) {
                self.scanned = 0;
                let rest = self.buf.to_vec();
                self.buf.clear();
                return Some(Ok(Cut {
                    bytes: rest,
                    whole: false,
                }));
            }
            return None;
        }
    }

    /// The next complete length-prefixed frame (without its length).
    fn take_frame(&mut self) -> Option<Result<Cut, ListWatchError>> {
        if self.buf.len() < 4 {
            return None;
        }
        let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if len > self.max {
            return Some(Err(self.too_large()));
        }
        if self.buf.len() < 4 + len {
            return None;
        }
        let frame = self.buf[4..4 + len].to_vec();
        self.buf.advance(4 + len);
        Some(Ok(Cut {
            bytes: frame,
            whole: true,
        }))
    }

    /// Ends the stream with [`ListWatchError::TooLarge`]: the body is dropped (closing the
    /// watch) and the buffer freed.
    fn too_large(&mut self) -> ListWatchError {
        self.body = None;
        self.buf = BytesMut::new();
        self.scanned = 0;
        ListWatchError::TooLarge {
            what: "a watch event",
            limit: self.max,
        }
    }

    /// Reads one more chunk of the body into the buffer. `None` while the body goes on (or a
    /// last line without a newline is still to be cut); `Some(end)` once it is over: `None`
    /// for a clean end after whole events, else the error (a broken body, or one that ended
    /// inside a frame).
    async fn fill(&mut self) -> Option<Option<ListWatchError>> {
        let Some(body) = self.body.as_mut() else {
            return self.ended();
        };
        match body.next().await {
            Some(Ok(chunk)) => {
                self.buf.extend_from_slice(&chunk);
                None
            }
            Some(Err(e)) => {
                self.body = None;
                self.buf = BytesMut::new();
                Some(Some(ListWatchError::Transport {
                    kind: TransportErrorKind::Other,
                    message: format!("reading the watch stream: {e}"),
                }))
            }
            None => {
                self.body = None;
                self.ended()
            }
        }
    }

    /// After the body's end: a JSON line left without a newline is cut first (it may still
    /// decode); bytes left of a protobuf frame are an event cut off.
    fn ended(&mut self) -> Option<Option<ListWatchError>> {
        match self.format {
            Format::JsonLines if !blank(&self.buf) => None,
            Format::Protobuf(_) if !self.buf.is_empty() => {
                let n = self.buf.len();
                self.buf = BytesMut::new();
                Some(Some(ListWatchError::Transport {
                    kind: TransportErrorKind::Incomplete,
                    message: format!("the watch stream ended inside an event ({n} bytes)"),
                }))
            }
            _ => {
                self.buf = BytesMut::new();
                Some(None)
            }
        }
    }
}

#[cfg(test)]
mod tests;
