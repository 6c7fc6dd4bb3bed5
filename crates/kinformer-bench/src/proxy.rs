//! A TCP proxy in front of the real API server that can cut every connection at once: the
//! real tier's way to end every watch (W3, W5 faults). TLS passes through untouched, and the
//! proxy listens on the same loopback address, so the server certificate still matches.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A running proxy; stops accepting when dropped (open connections end with the runtime).
pub(crate) struct Proxy {
    addr: SocketAddr,
    generation: watch::Sender<u64>,
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
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut cut = tx.subscribe();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Ok(Self {
            addr,
            generation,
            accept,
        })
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
