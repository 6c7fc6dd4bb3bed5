//! The bench server's control port: one text line per TCP connection, one line back.
//!
//! Commands (the same for every peer, so the Go peer speaks it too):
//!
//! * `relist` — pauses watch delivery, touches every pod (sets `kinformer.bench/ts`; the watchers
//!   never see these events), compacts the history up to the current revision, drops every
//!   watch and resumes delivery: each informer's re-watch from its last resourceVersion gets
//!   410 Gone and relists, and the relist brings N changed objects, so every informer (client-go
//!   included, which hides unchanged objects of a relist from handlers) delivers N updates.
//!   Replies `ok` once the watches are dropped.
//! * `update COUNT` — starts COUNT pod updates, round-robin over the seeded pods, written as
//!   fast as the storage takes them on a background thread. Each update sets the annotation
//!   `kinformer.bench/ts` to the wall-clock write time in nanoseconds since the Unix epoch. The
//!   writes go in at the storage layer ([`RunningServer::put_encoded`], as a write straight
//!   into etcd would), from JSON pre-serialized per pod with only the resourceVersion and the
//!   timestamp spliced in: the API server's update handler (parse, merge, checks) would
//!   otherwise cap the rate below what the informers can take, and W2 would measure the
//!   server. Watchers see ordinary `MODIFIED` events. Replies `ok` once started (not when
//!   done).
//!
//! * `drop` — drops every watch (each informer re-watches from its last resourceVersion).
//! * `compact` — compacts the history up to the current revision and drops every watch: a
//!   forced 410 and relist of unchanged objects.
//! * `fail CODE COUNT` — the next COUNT list and watch requests for pods fail with HTTP CODE.
//!
//! Anything else replies `error: ...`. The real tier serves the same port from the
//! orchestrator with its own commands (`real.rs`).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kinformer_apiserver::RunningServer;
use kinformer_apiserver::{FailureRule, Verb};
use serde_json::Value;

/// Annotation carrying the server's write time (ns since the Unix epoch) in W2 updates.
pub(crate) const TS_ANNOTATION: &str = "kinformer.bench/ts";

/// Nanoseconds since the Unix epoch, now.
pub(crate) fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Sends one command to the control port at `addr` and returns the reply line (trimmed).
///
/// # Errors
/// Connection or I/O errors.
pub(crate) fn send(addr: &str, command: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr)?;
    stream.write_all(command.as_bytes())?;
    stream.write_all(b"\n")?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply)?;
    Ok(reply.trim().to_string())
}

/// Serves the control port on `listener` for the embedded `server` until the listener fails.
/// Blocking: run it on its own thread.
pub fn serve(listener: TcpListener, server: Arc<RunningServer>) {
    serve_with(listener, move |command| handle(command, &server));
}

/// Serves the control port on `listener`, answering each command line with `handle`, until
/// the listener fails. Blocking: run it on its own thread.
pub(crate) fn serve_with(listener: TcpListener, handle: impl Fn(&str) -> String) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let mut line = String::new();
        let mut reader = BufReader::new(match stream.try_clone() {
            Ok(s) => s,
            Err(_) => continue,
        });
        if reader.read_line(&mut line).is_err() {
            continue;
        }
        let reply = handle(line.trim());
        let mut stream = stream;
        let _ = stream.write_all(reply.as_bytes());
        let _ = stream.write_all(b"\n");
    }
}

fn handle(command: &str, server: &Arc<RunningServer>) -> String {
    let mut words = command.split_whitespace();
    match (words.next(), words.next()) {
        (Some("relist"), None) => {
            let pods = match templates(server) {
                Ok(p) => p,
                Err(e) => return format!("error: {e}"),
            };
            server.faults().pause_watches();
            for pod in &pods {
                if let Err(e) = pod.write(server) {
                    server.faults().resume_watches();
                    return format!("error: touch: {e}");
                }
            }
            server.faults().compact_now();
            server.faults().drop_watches();
            server.faults().resume_watches();
            "ok".into()
        }
        (Some("drop"), None) => {
            server.faults().drop_watches();
            "ok".into()
        }
        (Some("compact"), None) => {
            server.faults().compact_now();
            server.faults().drop_watches();
            "ok".into()
        }
        (Some("fail"), Some(code)) => {
            let count = words.next().and_then(|c| c.parse::<u32>().ok());
            match (code.parse::<u16>(), count) {
                (Ok(code), Some(count)) => {
                    for verb in [Verb::List, Verb::Watch] {
                        server
                            .faults()
                            .fail_next(FailureRule::new(code, count).verb(verb).resource("pods"));
                    }
                    "ok".into()
                }
                _ => "error: usage: fail CODE COUNT".into(),
            }
        }
        (Some("update"), Some(count)) => match count.parse::<usize>() {
            Ok(count) => match start_updates(server.clone(), count) {
                Ok(()) => "ok".into(),
                Err(e) => format!("error: {e}"),
            },
            Err(e) => format!("error: count: {e}"),
        },
        _ => format!("error: unknown command {command:?}"),
    }
}

/// Placeholders spliced out of a pod's JSON by [`Template`].
const RV_MARK: &str = "KINFORMER_BENCH_RV_PLACEHOLDER";
const TS_MARK: &str = "KINFORMER_BENCH_TS_PLACEHOLDER";

/// One pod's JSON pre-serialized around its two changing values. `serde_json` writes a
/// `Value`'s keys in order, so a pod's JSON starts with `apiVersion` and `kind`, as the server
/// keeps it ([`RunningServer::put_encoded`] refuses JSON that does not).
struct Template {
    namespace: String,
    name: String,
    /// The JSON split at the placeholders: `pieces[0] X pieces[1] Y pieces[2]`, where X and Y
    /// are the resourceVersion and the timestamp in the order they appear (`rv_first`).
    pieces: [Vec<u8>; 3],
    rv_first: bool,
}

impl Template {
    fn new(namespace: String, mut obj: Value) -> Result<Self, String> {
        let meta = obj
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or("pod without metadata")?;
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .ok_or("pod without name")?
            .to_string();
        meta.insert("resourceVersion".into(), Value::String(RV_MARK.into()));
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(ann) = ann.as_object_mut() {
            ann.insert(TS_ANNOTATION.into(), Value::String(TS_MARK.into()));
        }
        let bytes = serde_json::to_vec(&obj).map_err(|e| e.to_string())?;
        let find = |mark: &str| {
            bytes
                .windows(mark.len())
                .position(|w| w == mark.as_bytes())
                .ok_or_else(|| format!("placeholder {mark} not found"))
        };
        let (rv_at, ts_at) = (find(RV_MARK)?, find(TS_MARK)?);
        let rv_first = rv_at < ts_at;
        let (a, b) = if rv_first {
            (rv_at, ts_at)
        } else {
            (ts_at, rv_at)
        };
        let a_len = if rv_first {
            RV_MARK.len()
        } else {
            TS_MARK.len()
        };
        let b_len = if rv_first {
            TS_MARK.len()
        } else {
            RV_MARK.len()
        };
        Ok(Self {
            namespace,
            name,
            pieces: [
                bytes[..a].to_vec(),
                bytes[a + a_len..b].to_vec(),
                bytes[b + b_len..].to_vec(),
            ],
            rv_first,
        })
    }

    /// The pod's JSON at revision `rev`, stamped with the time now.
    fn render(&self, rev: u64) -> Vec<u8> {
        let rv = rev.to_string();
        let ts = now_nanos().to_string();
        let (x, y) = if self.rv_first {
            (&rv, &ts)
        } else {
            (&ts, &rv)
        };
        let mut out = Vec::with_capacity(self.pieces.iter().map(Vec::len).sum::<usize>() + 64);
        out.extend_from_slice(&self.pieces[0]);
        out.extend_from_slice(x.as_bytes());
        out.extend_from_slice(&self.pieces[1]);
        out.extend_from_slice(y.as_bytes());
        out.extend_from_slice(&self.pieces[2]);
        out
    }

    /// Writes the pod at the storage layer with [`TS_ANNOTATION`] set to now.
    fn write(&self, server: &RunningServer) -> Result<(), String> {
        server
            .put_encoded("pods", Some(&self.namespace), &self.name, |rev| {
                self.render(rev)
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// A template for every pod on the server.
fn templates(server: &RunningServer) -> Result<Vec<Template>, String> {
    let state = server.state("pods", None).map_err(|e| e.to_string())?;
    if state.objects.is_empty() {
        return Err("no pods to update".into());
    }
    state
        .objects
        .into_iter()
        .map(|o| Template::new(o.namespace, o.object))
        .collect()
}

/// Loads the pods and starts the writer thread.
fn start_updates(server: Arc<RunningServer>, count: usize) -> Result<(), String> {
    let pods = templates(&server)?;
    std::thread::spawn(move || {
        for i in 0..count {
            if let Err(e) = pods[i % pods.len()].write(&server) {
                eprintln!("bench server: update {i} failed: {e}");
                return;
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_renders_the_pod_with_its_revision_and_a_fresh_timestamp() {
        let pod = kinformer_apiserver::seed::pod("ns", "p", 3);
        let t = Template::new("ns".into(), pod.clone()).unwrap();
        let out: Value = serde_json::from_slice(&t.render(42)).unwrap();
        assert_eq!(out["metadata"]["resourceVersion"], "42");
        let ts: u128 = out["metadata"]["annotations"][TS_ANNOTATION]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(ts > 0 && ts <= now_nanos());
        let mut expected = pod.clone();
        expected["metadata"]["resourceVersion"] = Value::String("42".into());
        expected["metadata"]["annotations"][TS_ANNOTATION] = Value::String(ts.to_string());
        assert_eq!(out, expected, "nothing else changes");
        assert!(
            t.render(1)
                .starts_with(b"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",")
        );
    }
}
