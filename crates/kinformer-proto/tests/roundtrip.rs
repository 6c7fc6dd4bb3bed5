//! Go's own encodings, for every kind client-go registers, in every Kubernetes version with a
//! table: objects filled by apimachinery's API fuzzer, encoded to protobuf by Go, and the JSON
//! Go writes for the object it decodes from those bytes (`gen/generate.sh`, one
//! `tests/fixtures/v1_NN.json` per version). Decoding with that version's table must give
//! Go's JSON; encoding that JSON and decoding again must give it once more.
//!
//! The tables of every version are compiled in for these tests (the crate's dev-dependency on
//! itself enables `every-version`).

use base64::Engine;
use kinformer_proto::{
    Envelope, KUBERNETES_VERSIONS, MessageRef, envelope, message_from_json, typed_message_to_json,
};
use serde_json::Value;

#[derive(serde::Deserialize)]
struct Fixture {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    proto: String,
    json: String,
}

/// The fixtures of Kubernetes `version` (`1.35`).
fn fixtures(version: &str) -> Vec<Fixture> {
    let path = format!(
        "{}/tests/fixtures/v1_{}.json",
        env!("CARGO_MANIFEST_DIR"),
        version.trim_start_matches("1.")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let all: Vec<Fixture> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    // two fuzzed objects for each of about 300 kinds
    assert!(
        all.len() > 500,
        "Kubernetes {version}: only {} fixtures",
        all.len()
    );
    all
}

/// `object_to_json` with the table of Kubernetes `version`.
fn to_json(version: &str, body: &[u8]) -> Result<Value, String> {
    let env = Envelope::parse(body).map_err(|e| e.to_string())?;
    let msg = MessageRef::for_kind_in(version, env.api_version, env.kind)
        .ok_or_else(|| format!("no message for {} {}", env.api_version, env.kind))?;
    assert_eq!(msg.kubernetes_version(), version);
    let json = typed_message_to_json(env.api_version, env.kind, msg, env.raw)
        .map_err(|e| e.to_string())?;
    Ok(serde_json::from_slice(&json).expect("valid JSON"))
}

/// `object_from_json` with the table of Kubernetes `version`.
fn from_json(version: &str, api_version: &str, kind: &str, obj: &Value) -> Result<Vec<u8>, String> {
    let msg = MessageRef::for_kind_in(version, api_version, kind)
        .ok_or_else(|| format!("no message for {api_version} {kind}"))?;
    let raw = message_from_json(msg, obj).map_err(|e| e.to_string())?;
    Ok(envelope(api_version, kind, &raw))
}

/// Runs `check` on every fixture of every version; fails naming the version and kind of each
/// fixture (the first few) that `check` says differs.
fn for_every_fixture(check: impl Fn(&str, &Fixture) -> Result<(), String>) {
    assert_eq!(KUBERNETES_VERSIONS.len(), 5);
    let mut failures = Vec::new();
    let mut total = 0;
    for &version in KUBERNETES_VERSIONS {
        let all = fixtures(version);
        total += all.len();
        for f in &all {
            if let Err(e) = check(version, f) {
                failures.push(format!(
                    "Kubernetes {version}, {} {}: {e}",
                    f.api_version, f.kind
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} differ:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

#[test]
fn decoding_go_bytes_gives_go_json_for_every_kind() {
    for_every_fixture(|version, f| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&f.proto)
            .map_err(|e| format!("fixture: {e}"))?;
        let want: Value = serde_json::from_str(&f.json).map_err(|e| format!("fixture: {e}"))?;
        let got = to_json(version, &bytes)?;
        if got != want {
            return Err(format!("\n  go:   {want}\n  ours: {got}"));
        }
        Ok(())
    });
}

#[test]
fn encoding_go_json_and_decoding_again_gives_it_back() {
    for_every_fixture(|version, f| {
        let want: Value = serde_json::from_str(&f.json).map_err(|e| format!("fixture: {e}"))?;
        let bytes = from_json(version, &f.api_version, &f.kind, &want)
            .map_err(|e| format!("encode: {e}"))?;
        let env = Envelope::parse(&bytes).map_err(|e| e.to_string())?;
        if (env.api_version, env.kind) != (f.api_version.as_str(), f.kind.as_str()) {
            return Err(format!("envelope {} {}", env.api_version, env.kind));
        }
        let got = to_json(version, &bytes).map_err(|e| format!("decode: {e}"))?;
        if got != want {
            return Err(format!("\n  go:   {want}\n  ours: {got}"));
        }
        Ok(())
    });
}

/// The selected table is the one of the Kubernetes version k8s-openapi's feature names.
#[test]
fn the_table_follows_k8s_openapis_version_feature() {
    let mut selected = [None; 5];
    k8s_openapi::k8s_if_1_33! { selected[0] = Some("1.33"); }
    k8s_openapi::k8s_if_1_34! { selected[1] = Some("1.34"); }
    k8s_openapi::k8s_if_1_35! { selected[2] = Some("1.35"); }
    k8s_openapi::k8s_if_1_36! { selected[3] = Some("1.36"); }
    k8s_openapi::k8s_if_1_37! { selected[4] = Some("1.37"); }
    let selected: Vec<&str> = selected.into_iter().flatten().collect();
    assert_eq!(selected, [kinformer_proto::kubernetes_version()]);
    let pod = MessageRef::for_kind("v1", "Pod").unwrap();
    assert_eq!(
        pod.kubernetes_version(),
        kinformer_proto::kubernetes_version()
    );
    assert_eq!(
        MessageRef::for_kind_in(pod.kubernetes_version(), "v1", "Pod"),
        Some(pod)
    );
    // the same message of another version's table is another MessageRef
    let other = KUBERNETES_VERSIONS
        .iter()
        .find(|&&v| v != pod.kubernetes_version())
        .unwrap();
    let their_pod = MessageRef::for_kind_in(other, "v1", "Pod").unwrap();
    assert_eq!(their_pod.name(), pod.name());
    assert_ne!(their_pod, pod);
    assert_eq!(MessageRef::for_kind_in("1.20", "v1", "Pod"), None);
}

/// A `map[string][]byte` entry without a value (Go writes none for a nil `[]byte`) decodes in
/// Go as an empty, non-nil `[]byte`, which its JSON writes as `""`.
#[test]
fn an_absent_bytes_map_value_is_an_empty_string() {
    let secret = MessageRef::for_kind("v1", "Secret").unwrap();
    // field 2 (data), one entry holding only its key (field 1, "k")
    let raw = [0x12, 0x03, 0x0a, 0x01, b'k'];
    let json = kinformer_proto::message_to_json(secret, &raw).unwrap();
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["data"], serde_json::json!({"k": ""}));
}
