//! Watch framing and decoding. A watch response body is one JSON event per line, or (protobuf)
//! one length-prefixed `WatchEvent` after another. Either way events are cut from the body as
//! they complete and decoded off the reading task, in batches on every core when a backlog
//! builds (a streaming list's initial events, a burst of changes), in the server's order.
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

use super::kube::{DECODE_BATCH, DECODE_JOBS};
use super::list_stream::ProtoItems;
use super::wire::{decode_watch_line, typed_event};
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
        jobs: VecDeque::new(),
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
type DecodeJob<K> = tokio::task::JoinHandle<Vec<Result<WatchEvent<K>, ListWatchError>>>;

/// A watch body's events, decoded off the reading task (as client-go's watch decodes on a
/// goroutine of its own) so the body keeps downloading meanwhile: events are cut as they
/// complete, what has already arrived is read without waiting, and events gather while earlier
/// ones decode; a batch goes to the blocking pool when it is full or when nothing else is
/// decoding, at most [`DECODE_JOBS`] at a time. A live watch's lone event is a batch of one; a
/// streaming list's initial events or a burst of changes fill batches and decode on every
/// core. (Decoding on the reading task until a backlog shows does not work: the client reads
/// the socket only when the body is polled, so a backlog waits in the kernel, not here, and
/// the reading task decoding batches of it inline made metadata-only informers about 10 %
/// slower to sync.) Events leave in the order the server sent them, and whatever ends the
/// stream comes after them. Memory stays bounded: one partial event, one batch being gathered
/// and the jobs' batches.
struct ParallelDecode<K, B> {
    reader: EventReader<B>,
    jobs: VecDeque<DecodeJob<K>>,
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
                && self.jobs.len() < DECODE_JOBS
                && (self.pending.len() >= DECODE_BATCH
                    || self.jobs.is_empty()
                    || self.end.is_some())
            {
                let batch = std::mem::take(&mut self.pending);
                let (kind, format) = (self.kind.clone(), self.reader.format);
                self.jobs.push_back(tokio::task::spawn_blocking(move || {
                    batch
                        .iter()
                        .map(|cut| cut.decode::<K>(&kind, format))
                        .collect()
                }));
                continue;
            }
            if let Some(end) = &mut self.end
                && self.pending.is_empty()
            {
                if let Some(job) = self.jobs.pop_front() {
                    self.ready.extend(joined(job.await));
                    continue;
                }
                // the body's end, once: afterwards the stream is over
                return end.take().map(Err);
            }
            // wait for the oldest job, reading on meanwhile unless a full batch is waiting
            let may_read = self.end.is_none() && self.pending.len() < DECODE_BATCH;
            let Some(job) = self.jobs.front_mut() else {
                // nothing being decoded and nothing cut: only more bytes can help
                if let Some(end) = self.reader.fill().await {
                    self.end = Some(end);
                }
                continue;
            };
            if !may_read {
                let done = job.await;
                self.jobs.pop_front();
                self.ready.extend(joined(done));
                continue;
            }
            tokio::select! {
                biased;
                done = job => {
                    self.jobs.pop_front();
                    self.ready.extend(joined(done));
                }
                read = self.reader.fill() => {
                    if let Some(end) = read {
                        self.end = Some(end);
                    }
                }
            }
        }
    }
}

/// A decoding job's events; a job that panicked is one decode error in their place.
fn joined<K>(
    r: Result<Vec<Result<WatchEvent<K>, ListWatchError>>, tokio::task::JoinError>,
) -> Vec<Result<WatchEvent<K>, ListWatchError>> {
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
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn frame(ty: &str, name: &str) -> Vec<u8> {
        let pod =
            serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}});
        kinformer_proto::watch_frame(ty, &kinformer_proto::object_from_json(&pod).unwrap())
    }

    /// A response body arriving in these chunks.
    fn body_of(
        chunks: Vec<Vec<u8>>,
    ) -> impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static {
        futures::stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c))))
    }

    async fn events(
        body: Vec<Vec<u8>>,
        max: usize,
    ) -> Vec<Result<crate::reflector::WatchEvent<Pod>, ListWatchError>> {
        let items = ProtoItems {
            msg: kinformer_proto::MessageRef::for_kind("v1", "Pod").unwrap(),
            drop_managed_fields: false,
            typed: None,
        };
        watch_frames::<Pod, _, _>(body_of(body), "Pod".into(), items, max)
            .collect()
            .await
    }

    #[tokio::test]
    async fn frames_split_anywhere_decode_in_order() {
        let all = [
            frame("ADDED", "a"),
            frame("MODIFIED", "a"),
            frame("DELETED", "a"),
        ]
        .concat();
        for size in [1, 3, 50, all.len()] {
            let evs = events(all.chunks(size).map(<[u8]>::to_vec).collect(), 1 << 20).await;
            assert_eq!(evs.len(), 3, "chunks of {size}");
            assert!(matches!(evs[0], Ok(crate::reflector::WatchEvent::Added(_))));
            assert!(matches!(
                evs[2],
                Ok(crate::reflector::WatchEvent::Deleted(_))
            ));
        }
    }

    fn added_names(evs: &[Result<WatchEvent<Pod>, ListWatchError>]) -> Vec<String> {
        evs.iter()
            .map(|e| match e {
                Ok(WatchEvent::Added(p)) => p.metadata.name.clone().unwrap(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// `n` events, then the error that ended the stream, then nothing.
    fn assert_events_then(
        evs: &[Result<WatchEvent<Pod>, ListWatchError>],
        n: usize,
        end: fn(&ListWatchError) -> bool,
    ) {
        assert_eq!(evs.len(), n + 1);
        assert!(evs[..n].iter().all(Result::is_ok));
        assert!(evs[n].as_ref().is_err_and(end), "{:?}", evs[n]);
    }

    fn incomplete(e: &ListWatchError) -> bool {
        matches!(
            e,
            ListWatchError::Transport {
                kind: TransportErrorKind::Incomplete,
                ..
            }
        )
    }

    fn too_large(e: &ListWatchError) -> bool {
        matches!(e, ListWatchError::TooLarge { .. })
    }

    /// A backlog (hundreds of frames in one chunk, then more split across chunks) is decoded
    /// in batches off the reading task; the events still come out in the server's order, and
    /// what ends the stream comes after every event before it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backlog_decodes_in_batches_in_order_and_the_end_comes_last() {
        let names: Vec<String> = (0..700).map(|i| format!("p{i:03}")).collect();
        let all: Vec<u8> = names.iter().flat_map(|n| frame("ADDED", n)).collect();
        let cut = all.len() * 2 / 3;
        let (head, tail) = all.split_at(cut);
        let mut body = vec![head.to_vec()];
        body.extend(tail.chunks(97).map(<[u8]>::to_vec));
        assert_eq!(added_names(&events(body.clone(), 1 << 20).await), names);

        // the body ends inside a frame: every whole event first, then Incomplete, then nothing
        body.push(frame("ADDED", "cut")[..10].to_vec());
        assert_events_then(&events(body, 1 << 20).await, 700, incomplete);

        // a frame over the limit behind a backlog: the events before it, then TooLarge
        let mut big = names[..100]
            .iter()
            .flat_map(|n| frame("ADDED", n))
            .collect::<Vec<u8>>();
        big.extend_from_slice(&(1u32 << 30).to_be_bytes());
        big.extend_from_slice(&[0; 64]);
        assert_events_then(&events(vec![big], 1 << 20).await, 100, too_large);
    }

    fn line(ty: &str, name: &str) -> Vec<u8> {
        let mut l = serde_json::to_vec(&serde_json::json!({"type": ty,
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}}))
        .unwrap();
        l.push(b'\n');
        l
    }

    async fn json_events(
        body: Vec<Vec<u8>>,
        max: usize,
    ) -> Vec<Result<crate::reflector::WatchEvent<Pod>, ListWatchError>> {
        watch_lines::<Pod, _, _>(body_of(body), "Pod".into(), max)
            .collect()
            .await
    }

    /// JSON watch lines are decoded in batches off the reading task as protobuf frames are:
    /// a backlog (with blank lines, split anywhere) keeps the server's order, a line that does
    /// not decode is one error in its place, and what ends the stream comes after every
    /// event before it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_json_backlog_decodes_in_batches_in_order_and_the_end_comes_last() {
        let names: Vec<String> = (0..700).map(|i| format!("p{i:03}")).collect();
        let mut all: Vec<u8> = Vec::new();
        for (i, n) in names.iter().enumerate() {
            all.extend(line("ADDED", n));
            if i % 50 == 0 {
                all.extend_from_slice(b"  \r\n\n");
            }
        }
        let cut = all.len() * 2 / 3;
        let (head, tail) = all.split_at(cut);
        let mut body = vec![head.to_vec()];
        body.extend(tail.chunks(97).map(<[u8]>::to_vec));
        assert_eq!(
            added_names(&json_events(body.clone(), 1 << 20).await),
            names
        );

        // a last line without its newline still counts when it decodes
        let mut last = line("ADDED", "last");
        last.pop();
        let mut with_last = body.clone();
        with_last.push(last.clone());
        let evs = json_events(with_last, 1 << 20).await;
        assert_eq!(evs.len(), 701);
        assert!(
            matches!(&evs[700], Ok(WatchEvent::Added(p)) if p.metadata.name.as_deref() == Some("last"))
        );

        // the body ends inside an event: every whole event first, then Incomplete
        let mut cut_off = body.clone();
        cut_off.push(last[..20].to_vec());
        assert_events_then(&json_events(cut_off, 1 << 20).await, 700, incomplete);

        // garbage in the middle of a backlog: one decode error in its place, then the rest
        let mut garbled: Vec<u8> = names[..300].iter().flat_map(|n| line("ADDED", n)).collect();
        garbled.extend_from_slice(b"{not json\n");
        garbled.extend(names[300..].iter().flat_map(|n| line("ADDED", n)));
        let evs = json_events(vec![garbled], 1 << 20).await;
        assert_eq!(evs.len(), 701);
        let mut around = evs;
        assert!(around.remove(300).unwrap_err().is_decode());
        assert_eq!(added_names(&around), names);

        // a line over the limit behind a backlog (no newline in sight): the events before
        // it, then TooLarge, then nothing
        let mut big: Vec<u8> = names[..100].iter().flat_map(|n| line("ADDED", n)).collect();
        big.extend(std::iter::repeat_n(b'x', 4096));
        let evs = json_events(vec![big, line("ADDED", "after")], 1024).await;
        assert_events_then(&evs, 100, too_large);
    }

    fn rich_pod() -> serde_json::Value {
        let containers: Vec<_> = (0..3)
            .map(|i| serde_json::json!({"name": format!("c{i}"), "image": "i", "args": ["a", "b", "c"],
                "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81, "protocol": "UDP"}]}))
            .collect();
        serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", "labels": {"app": "x"},
                "creationTimestamp": "2026-11-24T10:00:00Z",
                "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-11-24T10:00:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]},
            "spec": {"containers": containers, "securityContext": {"supplementalGroups": [1, 300000]}},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}})
    }

    /// An object event is decoded from its message straight into `K`: the same object as the
    /// JSON watch line of the same event gives (what the protobuf watch decoded to before),
    /// with every list at its final length.
    #[tokio::test]
    async fn object_events_decode_like_their_json_lines_without_spare_capacity() {
        let pod = rich_pod();
        let proto = kinformer_proto::object_from_json(&pod).unwrap();
        for ty in ["ADDED", "MODIFIED", "DELETED"] {
            let evs = events(vec![kinformer_proto::watch_frame(ty, &proto)], 1 << 20).await;
            // the JSON a Go server writes for the same object (empty structs included)
            let json: serde_json::Value =
                serde_json::from_slice(&kinformer_proto::object_to_json(&proto).unwrap()).unwrap();
            let line =
                serde_json::to_vec(&serde_json::json!({"type": ty, "object": json})).unwrap();
            let want = decode_watch_line::<Pod>(&line, "Pod").unwrap();
            let got = evs.into_iter().next().unwrap().unwrap();
            assert_eq!(got, want, "{ty}");
            let (WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)) =
                got
            else {
                panic!("{ty}: not an object event");
            };
            let spec = obj.spec.unwrap();
            assert_eq!(spec.containers.capacity(), 3);
            for c in &spec.containers {
                assert_eq!(c.ports.as_ref().unwrap().capacity(), 2);
                assert_eq!(c.args.as_ref().unwrap().capacity(), 3);
            }
            assert!(obj.metadata.managed_fields.is_some());
        }
    }

    #[tokio::test]
    async fn managed_fields_are_left_out_of_watched_objects_when_asked() {
        let proto = kinformer_proto::object_from_json(&rich_pod()).unwrap();
        let body = kinformer_proto::watch_frame("MODIFIED", &proto);
        let items = ProtoItems {
            msg: kinformer_proto::MessageRef::for_kind("v1", "Pod").unwrap(),
            drop_managed_fields: true,
            typed: None,
        };
        let chunks = futures::stream::iter([Ok::<_, std::convert::Infallible>(Bytes::from(body))]);
        let evs: Vec<_> = watch_frames::<Pod, _, _>(chunks, "Pod".into(), items, 1 << 20)
            .collect()
            .await;
        let Ok(WatchEvent::Modified(pod)) = &evs[0] else {
            panic!("{evs:?}");
        };
        assert!(pod.metadata.managed_fields.is_none());
        assert_eq!(pod.metadata.labels.as_ref().unwrap()["app"], "x");
    }

    /// Another kind's object is a decode error (as in a JSON watch) and the stream goes on;
    /// BOOKMARK and ERROR events give what their JSON lines give.
    #[tokio::test]
    async fn another_kind_bookmarks_and_errors() {
        let cm =
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let other =
            kinformer_proto::watch_frame("ADDED", &kinformer_proto::object_from_json(&cm).unwrap());
        let bookmark_pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"resourceVersion": "99", "annotations": {"k8s.io/initial-events-end": "true"}}});
        let bookmark = kinformer_proto::watch_frame(
            "BOOKMARK",
            &kinformer_proto::object_from_json(&bookmark_pod).unwrap(),
        );
        let status = serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
            "code": 410, "reason": "Expired", "message": "too old resource version"});
        let error = kinformer_proto::watch_frame(
            "ERROR",
            &kinformer_proto::object_from_json(&status).unwrap(),
        );
        let evs = events(vec![other, frame("ADDED", "a"), bookmark, error], 1 << 20).await;
        let e = evs[0].as_ref().unwrap_err();
        assert!(e.is_decode(), "{e}");
        assert!(e.to_string().contains("ConfigMap"), "{e}");
        assert!(
            matches!(&evs[1], Ok(WatchEvent::Added(p)) if p.metadata.name.as_deref() == Some("a"))
        );
        let Ok(WatchEvent::Bookmark {
            resource_version,
            annotations,
        }) = &evs[2]
        else {
            panic!("{:?}", evs[2]);
        };
        assert_eq!(resource_version, "99");
        assert_eq!(annotations["k8s.io/initial-events-end"], "true");
        let Ok(WatchEvent::Error(st)) = &evs[3] else {
            panic!("{:?}", evs[3]);
        };
        assert_eq!((st.code, st.reason.as_str()), (410, "Expired"));
    }

    #[tokio::test]
    async fn a_cut_an_oversized_and_a_garbled_frame() {
        let f = frame("ADDED", "a");
        let evs = events(vec![f[..f.len() - 2].to_vec()], 1 << 20).await;
        assert!(matches!(
            &evs[..],
            [Err(ListWatchError::Transport {
                kind: TransportErrorKind::Incomplete,
                ..
            })]
        ));
        let evs = events(vec![f.clone()], 8).await;
        assert!(matches!(&evs[..], [Err(ListWatchError::TooLarge { .. })]));
        let mut garbled = vec![0, 0, 0, 3, 1, 2, 3];
        garbled.extend_from_slice(&f);
        let evs = events(vec![garbled], 1 << 20).await;
        assert!(evs[0].as_ref().unwrap_err().is_decode());
        assert!(matches!(evs[1], Ok(crate::reflector::WatchEvent::Added(_))));
    }
}
