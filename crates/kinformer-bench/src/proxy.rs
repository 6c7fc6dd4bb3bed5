//! A TCP proxy in front of the real API server that can cut every connection at once: the
//! real tier's way to end every watch (W3, W5 faults). TLS passes through untouched, and the
//! proxy listens on the same loopback address, so the server certificate still matches. It
//! also counts the bytes the server sends to the clients (the restart benchmark's "bytes
//! received"; TLS records included, as on the wire).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A running proxy; stops accepting when dropped (open connections end with the runtime).
pub(crate) struct Proxy {
    addr: SocketAddr,
    generation: watch::Sender<u64>,
    to_clients: Arc<AtomicU64>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Proxy {
    /// Listens on `127.0.0.1:0` and forwards every connection to `upstream`. Call from within
    /// a tokio runtime.
    ///
    /// # Errors
    /// The listener could not be bound.
    pub(crate) async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (generation, _) = watch::channel(0u64);
        let tx = generation.clone();
        let to_clients = Arc::new(AtomicU64::new(0));
        let counter = to_clients.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut cut = tx.subscribe();
                let counter = counter.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (mut cr, cw) = client.into_split();
                    let (mut sr, mut sw) = server.into_split();
                    let mut cw = Counting { inner: cw, counter };
                    // each direction passes the end of its stream on, as copy_bidirectional does
                    let up = async {
                        let _ = tokio::io::copy(&mut cr, &mut sw).await;
                        let _ = sw.shutdown().await;
                    };
                    let down = async {
                        let _ = tokio::io::copy(&mut sr, &mut cw).await;
                        let _ = cw.shutdown().await;
                    };
                    tokio::select! {
                        _ = futures::future::join(up, down) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Ok(Self {
            addr,
            generation,
            to_clients,
            accept,
        })
    }

    /// Bytes the server has sent to clients through the proxy so far.
    pub(crate) fn bytes_to_clients(&self) -> u64 {
        self.to_clients.load(Ordering::Relaxed)
    }

    /// The proxy's address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Cuts every open connection (new ones are accepted as usual).
    pub(crate) fn cut_all(&self) {
        self.generation.send_modify(|g| *g += 1);
    }
}

/// A writer that counts what it writes.
struct Counting<W> {
    inner: W,
    counter: Arc<AtomicU64>,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counting<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            this.counter.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn forwards_bytes_and_cuts_open_connections() {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_addr = upstream.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = upstream.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let proxy = Proxy::start(up_addr).await.unwrap();
        let mut c = TcpStream::connect(proxy.addr()).await.unwrap();
        c.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        assert_eq!(
            proxy.bytes_to_clients(),
            4,
            "what the server sent is counted"
        );
        proxy.cut_all();
        let mut rest = Vec::new();
        let n = c.read_to_end(&mut rest).await.unwrap_or(0);
        assert_eq!(n, 0, "the cut connection reaches end of stream");
        let mut c2 = TcpStream::connect(proxy.addr()).await.unwrap();
        c2.write_all(b"pong").await.unwrap();
        c2.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong", "new connections still pass");
    }
}
