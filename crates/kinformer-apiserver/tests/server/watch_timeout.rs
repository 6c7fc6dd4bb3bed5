//! A watch that sets no `timeoutSeconds` ends anyway, as kube-apiserver ends it: at a random
//! moment between `--min-request-timeout` (1800 s) and twice that, with the deadline's
//! bookmark 2 s before. Paused time: the server's timers fire in order as the clock advances.

use crate::common;

use std::time::Duration;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn a_watch_without_a_timeout_ends_between_the_min_request_timeout_and_twice_it() {
    // no periodic bookmark within the two hours
    let s = start(ServerConfig::default().bookmark_interval(Duration::from_secs(7200)))
        .await
        .unwrap();
    let a = s.addr();
    let rv = s.revision();
    let base = "/api/v1/namespaces/default/pods?watch=true&allowWatchBookmarks=true";
    let mut ends = Vec::new();
    // timeoutSeconds=0 is no timeout to kube-apiserver either
    for timeout in ["", "&timeoutSeconds=0", "", "&timeoutSeconds=0"] {
        let opened = Instant::now();
        let mut w = watch(a, &format!("{base}&resourceVersion={rv}{timeout}")).await;
        let b = w.next().await.expect("the deadline's bookmark");
        assert_eq!(b["type"], "BOOKMARK");
        let bookmark = opened.elapsed();
        assert!(w.next().await.is_none(), "the watch ends after it");
        let end = opened.elapsed();
        assert!(
            end >= Duration::from_secs(1800) && end <= Duration::from_secs(3601),
            "ended after {end:?}"
        );
        let before = end - bookmark;
        assert!(
            before >= Duration::from_secs(2) && before < Duration::from_secs(3),
            "bookmark {before:?} before the end"
        );
        ends.push(end);
    }
    ends.sort();
    ends.dedup();
    assert!(ends.len() > 1, "a random moment, not a fixed one: {ends:?}");
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn with_no_min_request_timeout_such_a_watch_lasts_and_timeout_seconds_still_ends_one() {
    let s = start(ServerConfig::default().min_request_timeout(Duration::ZERO))
        .await
        .unwrap();
    let a = s.addr();
    let rv = s.revision();
    let base = "/api/v1/namespaces/default/pods?watch=true";
    let mut w = watch(a, &format!("{base}&resourceVersion={rv}")).await;
    let waited = tokio::time::timeout(Duration::from_secs(10_000), w.next()).await;
    assert!(waited.is_err(), "still open after 10,000 s: {waited:?}");
    let opened = Instant::now();
    let mut w = watch(a, &format!("{base}&resourceVersion={rv}&timeoutSeconds=5")).await;
    assert!(w.next().await.is_none());
    let end = opened.elapsed();
    assert!(
        end >= Duration::from_secs(5) && end < Duration::from_secs(6),
        "{end:?}"
    );
    s.shutdown().await;
}
