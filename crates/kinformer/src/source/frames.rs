//! Watch framing: a watch response body is one JSON event per line. Lines are found by
//! scanning only the bytes that arrived since the last scan (memchr), and one line may be at
//! most the configured size: a server or proxy that sends an endless line costs one bounded
//! buffer and ends the watch with [`ListWatchError::TooLarge`].

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use kube::Resource;
use serde::de::DeserializeOwned;

use super::wire::decode_watch_line;
use crate::reflector::{ListWatchError, TransportErrorKind, WatchStream};

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
    let state = Framer {
        body: Some(Box::pin(body)),
        buf: BytesMut::new(),
        scanned: 0,
        max_line,
    };
    futures::stream::unfold(state, move |mut st| {
        let kind = kind.clone();
        async move {
            let item = match st.next_line().await? {
                Ok((line, true)) => decode_watch_line::<K>(&line, &kind),
                // The body ended without a newline: a last line that decodes still counts;
                // one that does not is an event cut off by the connection.
                Ok((line, false)) => {
                    decode_watch_line::<K>(&line, &kind).map_err(|e| ListWatchError::Transport {
                        kind: TransportErrorKind::Incomplete,
                        message: format!(
                            "the watch stream ended inside an event ({} bytes): {e}",
                            line.len()
                        ),
                    })
                }
                Err(e) => Err(e),
            };
            Some((item, st))
        }
    })
    .boxed()
}

struct Framer<B> {
    /// `None` once the body ended or the stream was ended by an error.
    body: Option<std::pin::Pin<Box<B>>>,
    buf: BytesMut,
    /// How many bytes at the start of `buf` are known to hold no newline.
    scanned: usize,
    max_line: usize,
}

impl<B, E> Framer<B>
where
    B: futures::Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    /// The next non-blank line (without its newline) and whether a newline ended it, or the
    /// error that ends the stream.
    async fn next_line(&mut self) -> Option<Result<(BytesMut, bool), ListWatchError>> {
        loop {
            if let Some(offset) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + offset;
                let mut line = self.buf.split_to(end + 1);
                line.truncate(end);
                self.scanned = 0;
                if line.len() > self.max_line {
                    return self.end_with(self.too_large());
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(Ok((line, true)));
            }
            self.scanned = self.buf.len();
            if self.buf.len() > self.max_line {
                return self.end_with(self.too_large());
            }
            let Some(body) = self.body.as_mut() else {
                // The body ended: a last line without a newline still counts if it decodes.
                if self.buf.iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
                self.scanned = 0;
                return Some(Ok((self.buf.split(), false)));
            };
            match body.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    return self.end_with(ListWatchError::Transport {
                        kind: TransportErrorKind::Other,
                        message: format!("reading the watch stream: {e}"),
                    });
                }
                None => self.body = None,
            }
        }
    }

    fn too_large(&self) -> ListWatchError {
        ListWatchError::TooLarge {
            what: "a watch event",
            limit: self.max_line,
        }
    }

    /// Ends the stream with `e`: the body is dropped (closing the watch) and the buffer freed.
    fn end_with(&mut self, e: ListWatchError) -> Option<Result<(BytesMut, bool), ListWatchError>> {
        self.body = None;
        self.buf = BytesMut::new();
        self.scanned = 0;
        Some(Err(e))
    }
}

/// Splits a protobuf watch body (`application/vnd.kubernetes.protobuf;stream=watch`: each
/// event a 4-byte big-endian length, then a `WatchEvent` in the `k8s\0` envelope) into events
/// of `kind`. Each event is transcoded to the JSON event line it stands for and decoded by the
/// same code as a JSON watch ([`decode_watch_line`]), so both wire formats give the same
/// events and the same errors. Limits and endings are those of [`watch_lines`]: a frame over
/// `max_frame` ends the stream with [`ListWatchError::TooLarge`], a body that ends inside a
/// frame with [`TransportErrorKind::Incomplete`]; a frame that does not decode is a
/// [`ListWatchError::Decode`] item and the stream goes on.
pub(crate) fn watch_frames<K, B, E>(body: B, kind: String, max_frame: usize) -> WatchStream<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    B: futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    let state = FrameReader {
        body: Some(Box::pin(body)),
        buf: BytesMut::new(),
        max_frame,
    };
    futures::stream::unfold(state, move |mut st| {
        let kind = kind.clone();
        async move {
            let item = match st.next_frame().await? {
                Ok(frame) => {
                    frame_as_line(&frame).and_then(|line| decode_watch_line::<K>(&line, &kind))
                }
                Err(e) => Err(e),
            };
            Some((item, st))
        }
    })
    .boxed()
}

/// A protobuf watch frame as the JSON watch line it stands for.
fn frame_as_line(frame: &[u8]) -> Result<Vec<u8>, ListWatchError> {
    let bad = |e: kinformer_proto::ProtoError| {
        ListWatchError::Decode(format!("cannot decode a protobuf watch event: {e}"))
    };
    let ev = kinformer_proto::WatchEvent::parse(frame).map_err(bad)?;
    let object = kinformer_proto::object_to_json(ev.object).map_err(bad)?;
    let mut line = Vec::with_capacity(object.len() + 32);
    line.extend_from_slice(b"{\"type\":");
    let _ = serde_json::to_writer(&mut line, ev.event_type);
    line.extend_from_slice(b",\"object\":");
    line.extend_from_slice(&object);
    line.push(b'}');
    Ok(line)
}

struct FrameReader<B> {
    body: Option<std::pin::Pin<Box<B>>>,
    buf: BytesMut,
    max_frame: usize,
}

impl<B, E> FrameReader<B>
where
    B: futures::Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    async fn next_frame(&mut self) -> Option<Result<BytesMut, ListWatchError>> {
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize;
                if len > self.max_frame {
                    self.body = None;
                    self.buf = BytesMut::new();
                    return Some(Err(ListWatchError::TooLarge {
                        what: "a watch event",
                        limit: self.max_frame,
                    }));
                }
                if self.buf.len() >= 4 + len {
                    let mut frame = self.buf.split_to(4 + len);
                    let _ = frame.split_to(4);
                    return Some(Ok(frame));
                }
            }
            let Some(body) = self.body.as_mut() else {
                if self.buf.is_empty() {
                    return None;
                }
                let n = self.buf.len();
                self.buf = BytesMut::new();
                return Some(Err(ListWatchError::Transport {
                    kind: TransportErrorKind::Incomplete,
                    message: format!("the watch stream ended inside an event ({n} bytes)"),
                }));
            };
            match body.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    self.body = None;
                    self.buf = BytesMut::new();
                    return Some(Err(ListWatchError::Transport {
                        kind: TransportErrorKind::Other,
                        message: format!("reading the watch stream: {e}"),
                    }));
                }
                None => self.body = None,
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

    async fn events(
        body: Vec<Vec<u8>>,
        max: usize,
    ) -> Vec<Result<crate::reflector::WatchEvent<Pod>, ListWatchError>> {
        let chunks = body
            .into_iter()
            .map(|c| Ok::<_, std::convert::Infallible>(Bytes::from(c)));
        watch_frames::<Pod, _, _>(futures::stream::iter(chunks), "Pod".into(), max)
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
