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
