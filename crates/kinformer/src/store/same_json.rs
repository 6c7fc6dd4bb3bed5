//! Whether two objects serialize to the same JSON, without keeping either's: what a full-mode
//! cache asks before it keeps the object it holds for a listed one of the same uid and
//! resourceVersion (see `staged.rs`). The same version of an object can be shown differently:
//! kube-apiserver decodes stored objects through the current schema on every read, so a CRD
//! that adds a default or stops declaring a field changes every object without a new
//! resourceVersion (and restarts its watches, so informers list again).

use std::cell::RefCell;

use serde::Serialize;

/// Past this capacity a thread's buffer is given back after use (one very large object does
/// not keep its size for the thread's life).
const KEEP_CAPACITY: usize = 256 * 1024;

thread_local! {
    static FIRST: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A writer that accepts exactly the bytes of `rest`, in order, and fails at the first other.
struct Compare<'a> {
    rest: &'a [u8],
}

impl std::io::Write for Compare<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.rest.strip_prefix(buf) {
            Some(rest) => {
                self.rest = rest;
                Ok(buf.len())
            }
            None => Err(std::io::Error::other("differs")),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether `a` and `b` serialize to the same JSON (false if either cannot be serialized).
/// `b` is compared as it is written, so a difference stops it early.
pub(crate) fn same_json<K: Serialize>(a: &K, b: &K) -> bool {
    FIRST.with(|first| {
        // never re-entered: only this function borrows it, and serializing calls nothing here
        let mut first = first.borrow_mut();
        first.clear();
        let same = serde_json::to_writer(&mut *first, a).is_ok() && compare(&first, b);
        if first.capacity() > KEEP_CAPACITY {
            *first = Vec::new();
        }
        same
    })
}

fn compare<K: Serialize>(expected: &[u8], b: &K) -> bool {
    let mut w = Compare { rest: expected };
    serde_json::to_writer(&mut w, b).is_ok() && w.rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_are_the_same_and_any_difference_is_not() {
        let a = json!({"spec": {"size": 3}, "metadata": {"resourceVersion": "7"}});
        assert!(same_json(&a, &a.clone()));
        let defaulted =
            json!({"spec": {"size": 3, "mode": "fast"}, "metadata": {"resourceVersion": "7"}});
        assert!(!same_json(&a, &defaulted), "b longer");
        assert!(!same_json(&defaulted, &a), "b shorter");
        let other = json!({"spec": {"size": 4}, "metadata": {"resourceVersion": "7"}});
        assert!(!same_json(&a, &other), "same length, other bytes");
    }

    #[test]
    fn a_large_object_does_not_keep_its_buffer() {
        let big = json!({"data": "x".repeat(KEEP_CAPACITY * 2)});
        assert!(same_json(&big, &big.clone()));
        FIRST.with(|f| assert!(f.borrow().capacity() <= KEEP_CAPACITY));
    }
}
