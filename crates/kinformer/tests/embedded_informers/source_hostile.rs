//! What a user's informer (built by `SharedInformerFactory`, as the README builds it) does
//! against a server that misbehaves on the wire, over real HTTP: a small raw server on
//! 127.0.0.1 writes whatever each test scripts. Each case ends in a typed error and a re-watch
//! or relist after a backoff; memory stays bounded (shown through the size limit); nothing
//! already cached is lost; nothing panics. Also: a factory-built informer applies a list while
//! it downloads.
//!
//! Paused tokio time: the raw server runs on the test's runtime, so when both sides wait on
//! the network the clock jumps to the next timer (a read timeout, a backoff).

use crate::queue_mode;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::informer::{QueueMode, ResourceEventHandlerFuncs};
use kinformer::reflector::{
    InitialListMode, ListOptions, ListWatchError, ListerWatcher, ListerWatcherExt,
};
use kinformer::{
    InformerConfig, KubeListerWatcher, SharedIndexInformer, SharedInformerFactory,
    reflector::WatchEvent,
};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// One request as the server saw it.
struct Req {
    target: String,
    /// 1-based number among the requests of the same verb (list or watch).
    n: usize,
    sock: TcpStream,
}

impl Req {
    fn is_watch(&self) -> bool {
        self.target.contains("watch=true")
    }
}

type Handler = Arc<dyn Fn(Req) -> BoxFuture<'static, ()> + Send + Sync>;

/// Serves each request with `handler`, one request per connection; returns the base URL and
/// the request targets in arrival order.
async fn serve(handler: Handler) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let recorded = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (handler, recorded) = (handler.clone(), recorded.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                }
                let target = String::from_utf8_lossy(&head)
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .to_owned();
                let n = {
                    let mut r = recorded.lock();
                    r.push(target.clone());
                    let watch = target.contains("watch=true");
                    r.iter()
                        .filter(|t| t.contains("watch=true") == watch)
                        .count()
                };
                handler(Req { target, n, sock }).await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// A 200 whose body ends when the connection closes.
async fn ok_head(sock: &mut TcpStream) {
    let _ = sock
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n",
        )
        .await;
}

/// Writes `body` whole and closes.
async fn reply(mut sock: TcpStream, body: String) {
    ok_head(&mut sock).await;
    let _ = sock.write_all(body.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// Holds the connection open, sending nothing, until the client goes away.
async fn hold(mut sock: TcpStream) {
    let mut buf = [0u8; 64];
    while let Ok(n) = sock.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}

fn pod_json(name: &str, rv: u64) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}"#
    )
}

fn list_json(rv: u64, items: &[String]) -> String {
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{}]}}"#,
        items.join(",")
    )
}

/// The three pods every informer below lists first.
fn first_list() -> String {
    list_json(10, &["a", "b", "c"].map(|n| pod_json(n, 10)))
}

fn event(kind: &str, name: &str, rv: u64) -> String {
    format!(
        r#"{{"type":"{kind}","object":{{"kind":"Pod","apiVersion":"v1",{}}}"#,
        &pod_json(name, rv)[1..]
    )
}

async fn client(url: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().unwrap());
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// Sleeps in `step`s of paused time until `done`, failing after `limit`.
async fn wait_until(limit: Duration, step: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(step).await;
    }
}

type Seen = Arc<Mutex<Vec<String>>>;

/// The requests of one verb the server has seen: watches (`true`) or lists.
fn targets(seen: &Seen, watch: bool) -> Vec<String> {
    seen.lock()
        .iter()
        .filter(|t| t.contains("watch=true") == watch)
        .cloned()
        .collect()
}

fn names(informer: &SharedIndexInformer<Pod>) -> Vec<String> {
    let mut keys = informer.indexer().list_keys();
    keys.sort();
    keys
}

/// A factory informer over `url`, started; returns it with its factory. The scripted servers
/// below speak list+watch only, so the informer is told to list whatever the default (see the
/// streaming cases at the end).
async fn factory_pods(
    url: &str,
    max_object_size: usize,
) -> (SharedInformerFactory, SharedIndexInformer<Pod>) {
    let factory = SharedInformerFactory::builder(client(url).await)
        .defaults(
            queue_mode::config()
                .max_object_size(max_object_size)
                .initial_list(InitialListMode::ListThenWatch),
        )
        .build();
    let pods = factory.informer::<Pod>();
    factory.start();
    (factory, pods)
}

const LIMIT: usize = 256 << 10;

#[tokio::test(start_paused = true)]
async fn a_factory_informer_applies_the_list_while_it_downloads() {
    const ITEMS: usize = 2_000;
    let release = Arc::new(Notify::new());
    let released = release.clone();
    let (url, _) = serve(Arc::new(move |mut req: Req| {
        let release = released.clone();
        async move {
            if req.is_watch() {
                return hold(req.sock).await;
            }
            let items: Vec<String> = (0..ITEMS)
                .map(|i| pod_json(&format!("p-{i:04}"), 5))
                .collect();
            let body = list_json(5, &items);
            // the first half of the body, then wait for the test before sending the rest
            let half = body.len() / 2;
            ok_head(&mut req.sock).await;
            let _ = req.sock.write_all(&body.as_bytes()[..half]).await;
            let _ = req.sock.flush().await;
            release.notified().await;
            let _ = req.sock.write_all(&body.as_bytes()[half..]).await;
            let _ = req.sock.shutdown().await;
        }
        .boxed()
    }))
    .await;
    // DeltaFifo mode applies a list as it arrives. (The default, client-go 1.36's atomic
    // RealFifo, decodes the list as it arrives too, but applies it in one step at its end.)
    let factory = SharedInformerFactory::builder(client(&url).await)
        .defaults(
            InformerConfig::default()
                .queue_mode(QueueMode::DeltaFifo)
                .initial_list(InitialListMode::ListThenWatch),
        )
        .build();
    let pods = factory.informer::<Pod>();
    let handled = Arc::new(AtomicUsize::new(0));
    let live = Arc::new(AtomicUsize::new(0));
    let registration = pods
        .add_event_handler(ResourceEventHandlerFuncs::new().on_add({
            let (handled, live) = (handled.clone(), live.clone());
            move |_: &Arc<Pod>, initial| {
                let counter = if initial { &handled } else { &live };
                counter.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .unwrap();
    factory.start();

    // Half the body is on the wire and the rest is held back: the handler already has objects.
    wait_until(
        Duration::from_secs(30),
        Duration::from_millis(1),
        "first adds",
        || handled.load(Ordering::SeqCst) > 0,
    )
    .await;
    let early = handled.load(Ordering::SeqCst);
    assert!(
        early < ITEMS,
        "{early} of {ITEMS} before the body is complete"
    );
    assert!(!pods.has_synced(), "not synced before the list is complete");

    release.notify_one();
    wait_until(
        Duration::from_secs(30),
        Duration::from_millis(1),
        "sync",
        || registration.has_synced(),
    )
    .await;
    assert_eq!(handled.load(Ordering::SeqCst), ITEMS);
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "every add was an initial-list add"
    );
    assert_eq!(pods.indexer().len(), ITEMS);
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_endless_watch_line_ends_the_watch_at_the_limit() {
    // Written until the client hangs up, 64 MiB at most.
    async fn endless(mut sock: TcpStream) {
        ok_head(&mut sock).await;
        let _ = sock
            .write_all(br#"{"type":"ADDED","object":{"metadata":{"name":"x","annotations":{"a":""#)
            .await;
        let filler = vec![b'a'; 64 << 10];
        for _ in 0..1024 {
            if sock.write_all(&filler).await.is_err() {
                return;
            }
        }
    }
    let (url, seen) = serve(Arc::new(|req: Req| {
        async move {
            match (req.is_watch(), req.n) {
                (false, _) => reply(req.sock, first_list()).await,
                (true, 1) => endless(req.sock).await,
                (true, _) => hold(req.sock).await,
            }
        }
        .boxed()
    }))
    .await;

    // The source: a typed error at the limit, then the stream ends.
    let lw = KubeListerWatcher::<Pod>::new(
        client(&url).await,
        &InformerConfig::default().max_object_size(LIMIT),
    );
    let items: Vec<_> = lw
        .watch(&ListOptions::default())
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        items[0].as_ref().unwrap_err(),
        &ListWatchError::TooLarge {
            what: "a watch event",
            limit: LIMIT
        }
    );

    // A user's informer: watches again after a backoff, the cache keeps its three pods.
    seen.lock().clear();
    let (factory, pods) = factory_pods(&url, LIMIT).await;
    wait_until(
        Duration::from_secs(120),
        Duration::from_millis(10),
        "a second watch",
        || targets(&seen, true).len() >= 2,
    )
    .await;
    assert_eq!(names(&pods), ["ns/a", "ns/b", "ns/c"]);
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_oversized_list_item_fails_the_list_and_the_informer_relists_keeping_its_cache() {
    let big = || {
        let mut p = pod_json("huge", 20);
        p.insert_str(
            p.len() - 1,
            &format!(r#","status":{{"message":"{}"}}"#, "m".repeat(LIMIT)),
        );
        list_json(20, &[pod_json("a", 20), p])
    };
    let (url, seen) = serve(Arc::new(move |req: Req| {
        let big = big();
        async move {
            match (req.is_watch(), req.n) {
                (false, 1) => reply(req.sock, first_list()).await,
                (false, _) => reply(req.sock, big).await,
                // the first watch: its resource version is gone, so the informer relists
                (true, 1) => {
                    let mut sock = req.sock;
                    ok_head(&mut sock).await;
                    let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}}"#;
                    let _ = sock.write_all(format!("{gone}\n").as_bytes()).await;
                    let _ = sock.shutdown().await;
                }
                (true, _) => hold(req.sock).await,
            }
        }
        .boxed()
    }))
    .await;

    let lw = KubeListerWatcher::<Pod>::new(
        client(&url).await,
        &InformerConfig::default().max_object_size(LIMIT),
    );
    lw.list_page(&ListOptions::default()).await.unwrap(); // the first list
    let err = lw.list_page(&ListOptions::default()).await.unwrap_err();
    assert_eq!(
        err,
        ListWatchError::TooLarge {
            what: "a list item",
            limit: LIMIT
        }
    );

    seen.lock().clear();
    let (factory, pods) = factory_pods(&url, LIMIT).await;
    wait_until(
        Duration::from_secs(300),
        Duration::from_millis(10),
        "relists",
        || targets(&seen, false).len() >= 3,
    )
    .await;
    // a failed list deletes nothing; "a" was delivered before the oversized item and is newer
    assert_eq!(names(&pods), ["ns/a", "ns/b", "ns/c"]);
    let a = pods.indexer().get_by_key("ns/a").unwrap();
    assert!(
        ["10", "20"].contains(&a.metadata.resource_version.as_deref().unwrap()),
        "{a:?}"
    );
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_watch_body_cut_inside_an_event_is_an_incomplete_stream_and_the_informer_watches_again() {
    let (url, seen) = serve(Arc::new(|req: Req| {
        async move {
            match (req.is_watch(), req.n) {
                (false, _) => reply(req.sock, first_list()).await,
                (true, 1) => {
                    let full = event("ADDED", "d", 11);
                    let cut = &event("ADDED", "e", 12)[..40];
                    reply(req.sock, format!("{full}\n{cut}")).await
                }
                (true, _) => hold(req.sock).await,
            }
        }
        .boxed()
    }))
    .await;

    let lw = KubeListerWatcher::<Pod>::new(client(&url).await, &InformerConfig::default());
    let items: Vec<_> = lw
        .watch(&ListOptions::default())
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(
        matches!(&items[0], Ok(WatchEvent::Added(p)) if p.metadata.name.as_deref() == Some("d"))
    );
    assert!(
        matches!(
            &items[1],
            Err(ListWatchError::Transport {
                kind: kinformer::reflector::TransportErrorKind::Incomplete,
                ..
            })
        ),
        "{items:?}"
    );

    seen.lock().clear();
    let (factory, pods) = factory_pods(&url, LIMIT).await;
    wait_until(
        Duration::from_secs(120),
        Duration::from_millis(10),
        "a second watch",
        || targets(&seen, true).len() >= 2,
    )
    .await;
    let watches = targets(&seen, true);
    assert!(
        watches[1].contains("resourceVersion=11"),
        "watches again from the last complete event: {watches:?}"
    );
    assert_eq!(names(&pods), ["ns/a", "ns/b", "ns/c", "ns/d"]);
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_list_body_cut_inside_an_item_fails_the_list_and_the_informer_lists_again() {
    let (url, seen) = serve(Arc::new(|req: Req| {
        async move {
            match (req.is_watch(), req.n) {
                (false, 1) => {
                    let body = first_list();
                    reply(req.sock, body[..body.len() - 30].to_owned()).await
                }
                (false, _) => reply(req.sock, first_list()).await,
                (true, _) => hold(req.sock).await,
            }
        }
        .boxed()
    }))
    .await;
    let (factory, pods) = factory_pods(&url, LIMIT).await;
    wait_until(
        Duration::from_secs(120),
        Duration::from_millis(10),
        "sync",
        || pods.has_synced(),
    )
    .await;
    let lists = targets(&seen, false).len();
    assert_eq!(lists, 2, "the cut list failed and was listed again");
    assert_eq!(names(&pods), ["ns/a", "ns/b", "ns/c"]);
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_that_stalls_mid_line_is_dropped_and_watched_again() {
    let (url, seen) = serve(Arc::new(|req: Req| {
        async move {
            match (req.is_watch(), req.n) {
                (false, _) => reply(req.sock, first_list()).await,
                (true, 1) => {
                    let mut sock = req.sock;
                    ok_head(&mut sock).await;
                    let half = &event("ADDED", "d", 11)[..30];
                    let _ = sock.write_all(half.as_bytes()).await;
                    hold(sock).await
                }
                (true, _) => hold(req.sock).await,
            }
        }
        .boxed()
    }))
    .await;
    let (factory, pods) = factory_pods(&url, LIMIT).await;
    wait_until(
        Duration::from_secs(3600),
        Duration::from_secs(1),
        "a second watch",
        || targets(&seen, true).len() >= 2,
    )
    .await;
    assert_eq!(names(&pods), ["ns/a", "ns/b", "ns/c"]);
    factory.shutdown().await;
}

/// A paged list asks for the next page as soon as a page's metadata gives the continue token,
/// while the page's items still download (the server prepares the next page meanwhile), and
/// uses that response: two pages, two requests. The server here finishes page 1 only once
/// page 2 has been asked for (or after 30 s, which fails the test).
#[tokio::test(start_paused = true)]
async fn a_paged_list_asks_for_the_next_page_while_a_page_downloads() {
    let second_asked = Arc::new(Notify::new());
    let asked = second_asked.clone();
    let (url, seen) = serve(Arc::new(move |mut req: Req| {
        let asked = asked.clone();
        async move {
            if req.target.contains("continue=") {
                asked.notify_one();
                return reply(req.sock, list_json(5, &[pod_json("c", 5)])).await;
            }
            let head = format!(
                r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"5","continue":"page-2"}},"items":[{}"#,
                pod_json("a", 5)
            );
            ok_head(&mut req.sock).await;
            let _ = req.sock.write_all(head.as_bytes()).await;
            let _ = tokio::time::timeout(Duration::from_secs(30), asked.notified()).await;
            let _ = req
                .sock
                .write_all(format!(",{}]}}", pod_json("b", 5)).as_bytes())
                .await;
            let _ = req.sock.shutdown().await;
        }
        .boxed()
    }))
    .await;
    let lw = KubeListerWatcher::<Pod>::new(client(&url).await, &InformerConfig::default());
    let start = tokio::time::Instant::now();
    let list = kinformer::reflector::list_all(&lw, ListOptions::default(), Some(2))
        .await
        .unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(list.resource_version, "5");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "page 2 was asked for only after page 1 ended"
    );
    let lists = targets(&seen, false);
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert!(lists[1].contains("continue=page-2"), "{lists:?}");
}

fn is_streaming_list(target: &str) -> bool {
    target.contains("watch=true") && target.contains("sendInitialEvents=true")
}

/// The bookmark that ends a streaming list's initial events, at `rv`.
fn initial_events_end(rv: u64) -> String {
    format!(
        r#"{{"type":"BOOKMARK","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#
    )
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_skips_garbage_and_syncs_on_its_end_bookmark() {
    let (url, seen) = serve(Arc::new(|mut req: Req| {
        async move {
            if !(is_streaming_list(&req.target) && req.n == 1) {
                return hold(req.sock).await;
            }
            ok_head(&mut req.sock).await;
            let lines = [
                event("ADDED", "a", 5),
                "not json at all".to_owned(),
                r#"{"type":"ADDED","object":{"metadata":{"name":"bad"},"spec":"not a spec"}}"#
                    .to_owned(),
                event("ADDED", "b", 6),
                initial_events_end(10),
            ];
            for line in lines {
                let _ = req.sock.write_all(format!("{line}\n").as_bytes()).await;
            }
            hold(req.sock).await;
        }
        .boxed()
    }))
    .await;
    // the factory as the README builds it: a streaming list by default
    let factory = SharedInformerFactory::builder(client(&url).await)
        .defaults(queue_mode::config())
        .build();
    let pods = factory.informer::<Pod>();
    factory.start();
    wait_until(
        Duration::from_secs(30),
        Duration::from_millis(10),
        "sync",
        || pods.has_synced(),
    )
    .await;
    assert_eq!(names(&pods), ["ns/a", "ns/b"]);
    assert_eq!(pods.last_sync_resource_version(), "10");
    assert!(targets(&seen, false).is_empty(), "no list request");
    let watches = targets(&seen, true);
    assert_eq!(watches.len(), 1, "{watches:?}");
    assert!(is_streaming_list(&watches[0]), "{watches:?}");
    factory.shutdown().await;
}

/// A server that opens a streaming list as a plain watch that never sends the end bookmark
/// (`answers`), or never answers it at all: the default factory informer lists after the
/// end-bookmark wait either way.
async fn falls_back_after_the_end_bookmark_wait(answers: bool) {
    let (url, seen) = serve(Arc::new(move |mut req: Req| {
        async move {
            if req.is_watch() {
                if answers {
                    ok_head(&mut req.sock).await;
                }
                hold(req.sock).await
            } else {
                reply(req.sock, first_list()).await
            }
        }
        .boxed()
    }))
    .await;
    let start = tokio::time::Instant::now();
    let (factory, pods) = {
        let factory = SharedInformerFactory::builder(client(&url).await)
            .defaults(queue_mode::config())
            .build();
        let pods = factory.informer::<Pod>();
        factory.start();
        (factory, pods)
    };
    wait_until(
        Duration::from_secs(300),
        Duration::from_millis(100),
        "sync",
        || pods.has_synced(),
    )
    .await;
    let waited = start.elapsed();
    assert!(
        waited >= kinformer::reflector::DEFAULT_END_BOOKMARK_TIMEOUT,
        "fell back after {waited:?}"
    );
    assert_eq!(names(&pods), ["ns/a", "ns/b", "ns/c"]);
    let all = seen.lock().clone();
    assert!(is_streaming_list(&all[0]), "streaming list first: {all:?}");
    assert!(
        all[1..].iter().any(|t| !t.contains("watch=true")),
        "then a list: {all:?}"
    );
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_ignoring_streaming_lists_gets_list_and_watch_after_the_end_bookmark_wait() {
    falls_back_after_the_end_bookmark_wait(true).await;
}

#[tokio::test(start_paused = true)]
async fn a_server_not_answering_streaming_lists_gets_list_and_watch_after_the_end_bookmark_wait() {
    falls_back_after_the_end_bookmark_wait(false).await;
}
