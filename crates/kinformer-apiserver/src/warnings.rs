//! Warnings found while a request is served, wherever they are found (undeclared fields while
//! the body is decoded, a custom resource's ratcheted rules while the object is written), as
//! kube-apiserver's `warning.AddWarning(ctx, ...)` records them in the request's context: the
//! HTTP layer sends each as a `Warning` header, in the order recorded. Writes made outside a
//! request (the controllers') record nothing.

use std::cell::RefCell;

tokio::task_local! {
    static RECORDED: RefCell<Vec<String>>;
}

/// Records `warning` for the request being served, if any.
pub(crate) fn record(warning: String) {
    // outside a request there is nobody to tell
    let _ = RECORDED.try_with(|r| r.borrow_mut().push(warning));
}

/// Runs `serve` (one request), returning what it gives and the warnings recorded meanwhile.
pub(crate) async fn recording<F: Future>(serve: F) -> (F::Output, Vec<String>) {
    RECORDED
        .scope(RefCell::new(Vec::new()), async {
            let out = serve.await;
            (out, RECORDED.with(RefCell::take))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn warnings_are_kept_per_request_and_dropped_outside_one() {
        record("nobody hears this".into());
        let (out, warnings) = recording(async {
            record("a".into());
            tokio::task::yield_now().await;
            record("b".into());
            7
        })
        .await;
        assert_eq!((out, warnings), (7, vec!["a".to_string(), "b".to_string()]));
        let ((), other) = recording(async {}).await;
        assert!(other.is_empty());
    }
}
