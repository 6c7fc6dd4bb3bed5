//! The child processes of a report or a soak: the bench server (`kinformer-bench server`),
//! the client-go peer's build, and running one peer process to read its JSON report.
//! What to run and in which order is [`crate::report`]'s business.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::error::ReportError;
use crate::result::PeerReport;

/// A bench server child process; killed on drop.
pub(crate) struct ServerProcess {
    child: Child,
    /// Base URL of the API server.
    pub url: String,
    /// The control port address.
    pub control: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `kinformer-bench server` (this executable) seeded with `pods` pods.
///
/// # Errors
/// [`ReportError`] when it cannot start or does not print its addresses.
pub(crate) fn start_server(exe: &Path, pods: u64) -> Result<ServerProcess, ReportError> {
    let mut child = Command::new(exe)
        .args([
            "server",
            "--seed-pods",
            &pods.to_string(),
            "--seed-namespaces",
            "10",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| ReportError::Io("spawn server".into(), e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| ReportError::Server("no stdout".into()))?;
    let mut lines = BufReader::new(stdout).lines();
    let mut url = None;
    let mut control = None;
    while url.is_none() || control.is_none() {
        let Some(Ok(line)) = lines.next() else {
            return Err(ReportError::Server(
                "exited before printing its addresses".into(),
            ));
        };
        if let Some(u) = line.strip_prefix("listening on ") {
            url = Some(u.trim().to_string());
        } else if let Some(c) = line.strip_prefix("control on ") {
            control = Some(c.trim().to_string());
        }
    }
    Ok(ServerProcess {
        child,
        url: url.unwrap_or_default(),
        control: control.unwrap_or_default(),
    })
}

/// The client-go peer's directory in the source tree.
pub(crate) fn go_peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers/client-go")
}

/// Builds the client-go peer (into its gitignored `bin/`); `None` with a message on stderr
/// when Go is missing or the build fails.
pub(crate) fn build_go_peer() -> Option<PathBuf> {
    let dir = go_peer_dir();
    let bin = dir.join("bin/client-go-peer");
    let status = Command::new("go")
        .args(["build", "-o", "bin/client-go-peer", "."])
        .current_dir(&dir)
        .status();
    match status {
        Ok(s) if s.success() => Some(bin),
        other => {
            eprintln!("client-go peer not built ({other:?}); it is left out of the report");
            None
        }
    }
}

/// Parses a peer's stdout: the last line that is a JSON object.
pub(crate) fn parse_peer_output(stdout: &str) -> Result<PeerReport, String> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or("no JSON on stdout")?;
    serde_json::from_str::<PeerReport>(line).map_err(|e| format!("bad JSON {line:?}: {e}"))
}

/// Runs one peer process and parses its JSON report.
pub(crate) fn run_peer(cmd: &mut Command, what: &str) -> Option<PeerReport> {
    let out = match cmd.stderr(Stdio::inherit()).output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{what}: could not run: {e}");
            return None;
        }
    };
    if !out.status.success() {
        eprintln!("{what}: exited with {}", out.status);
        return None;
    }
    match parse_peer_output(&String::from_utf8_lossy(&out.stdout)) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("{what}: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Peer;

    #[test]
    fn peer_output_is_the_last_json_line() {
        let out = "log line\n{\"peer\":\"kinformer\",\"workload\":\"w1\",\"n\":3,\"objects\":3,\"baseline_rss_kib\":1,\"sync_ms\":2.5,\"peak_rss_kib\":null,\"steady_rss_kib\":null,\"bytes_per_object\":null,\"events_per_sec\":null,\"events\":null,\"latency_p50_us\":null,\"latency_p99_us\":null,\"relist_ms\":null,\"relist_peak_rss_kib\":null}\n";
        let r = parse_peer_output(out).unwrap();
        assert_eq!((r.peer, r.n, r.sync_ms), (Peer::Kinformer, 3, Some(2.5)));
        assert!(parse_peer_output("no json here").is_err());
        assert!(parse_peer_output("{not json").is_err());
    }
}
