//! Protobuf on the wire, as client-go asks for built-in kinds (and as `KubeListerWatcher` does
//! by default): 10,000 pods over real HTTP from the embedded server, listed whole and in pages,
//! then watched through creates, updates and deletes, give exactly the objects and events the
//! JSON wire format gives; a factory informer over protobuf syncs to the server's state.

use crate::queue_mode;

use crate::embedded_support;

use std::time::Duration;

use embedded_support::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{ListOptions, ListerWatcher, ListerWatcherExt, WatchEvent};
use kinformer::source::{KubeListerWatcher, PROTOBUF_ACCEPT, WireFormat};
use kinformer::{InformerConfig, SharedInformerFactory};
use kinformer_apiserver::{RunningServer, ServerConfig};
use tokio_util::sync::CancellationToken;

const PODS: usize = 10_000;

async fn seeded() -> RunningServer {
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .unwrap();
    server
        .seed(
            "pods",
            (0..PODS).map(|i| {
                kinformer_apiserver::seed::pod(&format!("ns-{}", i % 10), &format!("pod-{i:05}"), i)
            }),
        )
        .unwrap();
    server
}

fn sources(server: &RunningServer) -> (KubeListerWatcher<Pod>, KubeListerWatcher<Pod>) {
    let pb = KubeListerWatcher::<Pod>::new(server.client(), &InformerConfig::default());
    let json = KubeListerWatcher::<Pod>::new(
        server.client(),
        &InformerConfig::default().wire_format(WireFormat::Json),
    );
    assert!(pb.asks_protobuf() && !json.asks_protobuf());
    (pb, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_kinformers_accept_header_with_protobuf() {
    let server = seeded().await;
    let req = http::Request::get("/api/v1/pods?limit=1")
        .header(http::header::ACCEPT, PROTOBUF_ACCEPT)
        .body(Vec::new())
        .unwrap();
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(
        resp.headers()[http::header::CONTENT_TYPE],
        "application/vnd.kubernetes.protobuf"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_pods_list_the_same_in_protobuf_and_json() {
    let server = seeded().await;
    let (pb, json) = sources(&server);
    let whole = ListOptions::default();
    let a = pb.list_page(&whole).await.unwrap();
    let b = json.list_page(&whole).await.unwrap();
    assert_eq!(a.items.len(), PODS);
    assert_eq!(a.resource_version, b.resource_version);
    assert!(a.items == b.items, "protobuf and JSON lists differ");

    // in pages of 500, with continue tokens
    let mut paged = Vec::new();
    let mut opts = ListOptions {
        limit: Some(500),
        ..ListOptions::default()
    };
    loop {
        let page = pb.list_page(&opts).await.unwrap();
        assert!(page.items.len() <= 500);
        paged.extend(page.items);
        match page.continue_token {
            Some(c) => opts.continue_token = Some(c),
            None => break,
        }
    }
    assert!(paged == b.items, "paged protobuf list differs");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_are_the_same_in_protobuf_and_json() {
    let server = seeded().await;
    let (pb, json) = sources(&server);
    let rv = json
        .list_page(&ListOptions {
            limit: Some(1),
            ..ListOptions::default()
        })
        .await
        .unwrap()
        .resource_version;
    let opts = ListOptions {
        resource_version: rv,
        allow_watch_bookmarks: true,
        ..ListOptions::default()
    };
    let mut wa = pb.watch(&opts).await.unwrap();
    let mut wb = json.watch(&opts).await.unwrap();
    let created = server
        .create_value(
            "pods",
            Some("ns-1"),
            kinformer_apiserver::seed::pod("ns-1", "new", 7),
        )
        .unwrap();
    let mut changed = created.clone();
    changed["metadata"]["labels"]["changed"] = "yes".into();
    server.update_value("pods", Some("ns-1"), changed).unwrap();
    server.delete::<Pod>(Some("ns-1"), "pod-00001").unwrap();
    let mut got = (Vec::new(), Vec::new());
    for (stream, out) in [(&mut wa, &mut got.0), (&mut wb, &mut got.1)] {
        while out.len() < 3 {
            let ev = tokio::time::timeout(Duration::from_secs(20), stream.next())
                .await
                .expect("a watch event")
                .expect("the watch is open")
                .expect("the event decodes");
            if !matches!(ev, WatchEvent::Bookmark { .. }) {
                out.push(ev);
            }
        }
    }
    assert!(matches!(&got.0[0], WatchEvent::Added(p) if p.metadata.name.as_deref() == Some("new")));
    assert!(
        matches!(&got.0[1], WatchEvent::Modified(p) if p.metadata.labels.as_ref().unwrap()["changed"] == "yes")
    );
    assert!(
        matches!(&got.0[2], WatchEvent::Deleted(p) if p.metadata.name.as_deref() == Some("pod-00001"))
    );
    assert!(got.0 == got.1, "protobuf and JSON watch events differ");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_factory_informer_over_protobuf_syncs_ten_thousand_pods() {
    let server = seeded().await;
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config())
        .build();
    let pods = factory.informer::<Pod>();
    factory.start();
    let cancel = CancellationToken::new();
    tokio::time::timeout(
        Duration::from_secs(120),
        factory.wait_for_cache_sync(&cancel),
    )
    .await
    .expect("synced");
    let want = server_view(&server, "pods");
    assert_eq!(want.len(), PODS);
    let got = cache_view(&pods.indexer());
    assert!(want == got, "{}", diff(&want, &got));
    factory.shutdown().await;
    server.shutdown().await;
}
