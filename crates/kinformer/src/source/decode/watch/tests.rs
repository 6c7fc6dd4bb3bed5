//! The watch framer and decoder against hand-made bodies: lines and frames split anywhere,
//! backlogs, garbage, oversized and cut-off events.
use super::*;
use k8s_openapi::api::core::v1::Pod;

fn frame(ty: &str, name: &str) -> Vec<u8> {
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}});
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
        let line = serde_json::to_vec(&serde_json::json!({"type": ty, "object": json})).unwrap();
        let want = decode_watch_line::<Pod>(&line, "Pod").unwrap();
        let got = evs.into_iter().next().unwrap().unwrap();
        assert_eq!(got, want, "{ty}");
        let (WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)) = got
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
    assert!(matches!(&evs[1], Ok(WatchEvent::Added(p)) if p.metadata.name.as_deref() == Some("a")));
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

/// A live watch's lone event is decoded on the reading task, not on the blocking pool: it
/// comes through while the pool's only thread is busy (see `ParallelDecode`).
#[test]
fn a_lone_event_is_decoded_on_the_reading_task() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let busy = tokio::task::spawn_blocking(move || {
            let _ = wait.recv();
        });
        let decoded = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            events(vec![frame("ADDED", "a")], 1 << 20),
        )
        .await;
        release.send(()).unwrap();
        busy.await.unwrap();
        let evs = decoded.expect("decoded while the blocking pool was busy");
        assert_eq!(added_names(&evs), ["a"]);
    });
}
