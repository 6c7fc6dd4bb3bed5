//! Request bodies that kube's retry layer cannot copy, so it never retries our requests.
//!
//! kube 5's default client (`Config::default_retry`, on unless turned off) wraps every request
//! in a tower retry layer that resends 429, 503 and 504 responses itself, up to 15 times over
//! minutes. A Reflector must see those statuses at once (client-go's clients do not retry
//! them for a reflector, which backs off and relists as each status requires). The layer
//! retries only a request whose body it can copy (`kube::client::Body::try_clone`), and a body
//! that wraps another body cannot be copied. kube makes such bodies only for responses, so an
//! in-process service that answers every request with an empty body hands out empty,
//! uncopyable bodies: the requests that carry them reach the server exactly as an empty body
//! does (no content, end of stream at once), and the retry layer lets them through once.
//!
//! So a [`KubeListerWatcher`](super::KubeListerWatcher) behaves the same over a default
//! client and over one built with `default_retry = false`: tested over HTTP with kube's
//! default client (`tests/embedded_informers/factory.rs`,
//! `a_factory_over_kubes_default_client_sees_429_and_503_itself`, which fails with plain
//! bodies: kube retries both failures and the Reflector sees neither).

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Empty;
use kube::client::Body;
use parking_lot::Mutex;

/// The source of uncopyable empty bodies: a `kube::Client` over an in-process service,
/// made on first use (it needs a tokio runtime), shared by a source's clones.
#[derive(Clone, Default)]
pub(super) struct UncopiedBodies {
    client: Arc<Mutex<Option<kube::Client>>>,
}

impl UncopiedBodies {
    /// An empty request body kube's retry layer cannot copy. Falls back to a plain empty body
    /// (which it can) only if the in-process service is gone, which cannot happen while the
    /// runtime that made it runs; the client is then made again for the next request.
    pub(super) async fn next(&self) -> Body {
        let client = self
            .client
            .lock()
            .get_or_insert_with(|| kube::Client::new(EmptyResponses, "default"))
            .clone();
        match client.send(http::Request::new(Body::empty())).await {
            Ok(response) => response.into_body(),
            Err(e) => {
                tracing::debug!(error = %e, "no uncopyable request body; sending a plain one");
                *self.client.lock() = None;
                Body::empty()
            }
        }
    }
}

/// Answers every request at once with an empty body.
#[derive(Clone, Copy)]
struct EmptyResponses;

impl tower_service::Service<http::Request<Body>> for EmptyResponses {
    type Response = http::Response<Empty<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: http::Request<Body>) -> Self::Future {
        ready(Ok(http::Response::new(Empty::new())))
    }
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;

    use super::*;

    #[tokio::test]
    async fn the_bodies_are_empty_and_cannot_be_copied() {
        let bodies = UncopiedBodies::default();
        for _ in 0..3 {
            let body = bodies.next().await;
            assert!(
                body.try_clone().is_none(),
                "kube's retry layer could copy it"
            );
            assert!(body.is_end_stream());
            assert_eq!(body.size_hint().exact(), Some(0));
        }
        // the plain empty body kube makes can be copied, and so retried
        assert!(Body::empty().try_clone().is_some());
    }
}
