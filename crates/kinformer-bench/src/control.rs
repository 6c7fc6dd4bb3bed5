//! The bench server's control port: one text line per TCP connection, one line back.
//!
//! Commands (the same for every peer, so the Go peer speaks it too):
//!
//! * `relist` — pauses watch delivery, touches every pod (sets [`TS_ANNOTATION`]; the watchers
//!   never see these events), compacts the history up to the current revision, drops every
//!   watch and resumes delivery: each informer's re-watch from its last resourceVersion gets
//!   410 Gone and relists, and the relist brings N changed objects, so every informer (client-go
//!   included, which hides unchanged objects of a relist from handlers) delivers N updates.
//!   Replies `ok` once the watches are dropped.
//! * `update COUNT` — starts COUNT pod updates, round-robin over the seeded pods, written as
//!   fast as the storage takes them (no HTTP) on a background thread. Each update sets the
//!   annotation [`TS_ANNOTATION`] to the wall-clock write time in nanoseconds since the Unix
//!   epoch. Replies `ok` once started (not when done).
//!
//! Anything else replies `error: ...`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kinformer_apiserver::RunningServer;
use serde_json::Value;

/// Annotation carrying the server's write time (ns since the Unix epoch) in W2 updates.
pub const TS_ANNOTATION: &str = "kinformer.bench/ts";

/// Nanoseconds since the Unix epoch, now.
pub fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Sends one command to the control port at `addr` and returns the reply line (trimmed).
///
/// # Errors
/// Connection or I/O errors.
pub fn send(addr: &str, command: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr)?;
    stream.write_all(command.as_bytes())?;
    stream.write_all(b"\n")?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply)?;
    Ok(reply.trim().to_string())
}

/// Serves the control port on `listener` for `server` until the listener fails. Blocking: run
/// it on its own thread.
pub fn serve(listener: TcpListener, server: Arc<RunningServer>) {
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
        let reply = handle(line.trim(), &server);
        let mut stream = stream;
        let _ = stream.write_all(reply.as_bytes());
        let _ = stream.write_all(b"\n");
    }
}

fn handle(command: &str, server: &Arc<RunningServer>) -> String {
    let mut words = command.split_whitespace();
    match (words.next(), words.next()) {
        (Some("relist"), None) => {
            let pods = match load_pods(server) {
                Ok(p) => p,
                Err(e) => return format!("error: {e}"),
            };
            server.faults().pause_watches();
            for (ns, pod) in &pods {
                if let Err(e) = touch(server, ns, pod) {
                    server.faults().resume_watches();
                    return format!("error: touch: {e}");
                }
            }
            server.faults().compact_now();
            server.faults().drop_watches();
            server.faults().resume_watches();
            "ok".into()
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

/// The current pods (namespace, object) without resourceVersions (unconditional updates).
fn load_pods(server: &RunningServer) -> Result<Vec<(String, Value)>, String> {
    let state = server.state("pods", None).map_err(|e| e.to_string())?;
    let mut pods: Vec<(String, Value)> = state
        .objects
        .into_iter()
        .map(|o| (o.namespace, o.object))
        .collect();
    if pods.is_empty() {
        return Err("no pods to update".into());
    }
    for (_, pod) in &mut pods {
        if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
    }
    Ok(pods)
}

/// Writes `pod` with [`TS_ANNOTATION`] set to now.
fn touch(server: &RunningServer, ns: &str, pod: &Value) -> Result<(), String> {
    let mut obj = pod.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(ann) = ann.as_object_mut() {
            ann.insert(TS_ANNOTATION.into(), Value::String(now_nanos().to_string()));
        }
    }
    server
        .update_value("pods", Some(ns), obj)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Loads the pods and starts the writer thread.
fn start_updates(server: Arc<RunningServer>, count: usize) -> Result<(), String> {
    let pods = load_pods(&server)?;
    std::thread::spawn(move || {
        for i in 0..count {
            let (ns, pod) = &pods[i % pods.len()];
            if let Err(e) = touch(&server, ns, pod) {
                eprintln!("bench server: update {i} failed: {e}");
                return;
            }
        }
    });
    Ok(())
}
