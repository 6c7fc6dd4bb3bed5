//! Watch framing: a watch response body is one JSON event per line. Lines are found by
//! scanning only the bytes that arrived since the last scan (memchr), and one line may be at
//! most the configured size: a server or proxy that sends an endless line costs one bounded
//! buffer and ends the watch with [`ListWatchError::TooLarge`].

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use kube::Resource;
use serde::de::DeserializeOwned;

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
                Ok((line, true)) => {
                    crate::memory::grow_heap_ahead();
                    decode_watch_line::<K>(&line, &kind)
                }
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
    let state = FrameReader {
        body: Some(Box::pin(body)),
        buf: BytesMut::new(),
        max_frame,
    };
    futures::stream::unfold(state, move |mut st| {
        let kind = kind.clone();
        async move {
            let item = match st.next_frame().await? {
                Ok(frame) => decode_watch_frame::<K>(&frame, &kind, items),
                Err(e) => Err(e),
            };
            Some((item, st))
        }
    })
    .boxed()
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
        let items = ProtoItems {
            msg: kinformer_proto::MessageRef::for_kind("v1", "Pod").unwrap(),
            drop_managed_fields: false,
            typed: None,
        };
        watch_frames::<Pod, _, _>(futures::stream::iter(chunks), "Pod".into(), items, max)
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
