//! The Reflector's tests in one binary (one link instead of six): the list+watch and
//! streaming-list protocols ported from client-go's `reflector_test.go` and
//! `reflector_watchlist_test.go` as tables, `run`'s backoff and relists, incremental lists,
//! and `KubeListerWatcher` against raw bytes.

mod backoff;
mod incremental;
mod kube_source;
mod list_watch;
mod run;
mod streaming_fallback;
mod support;
mod watchlist;
