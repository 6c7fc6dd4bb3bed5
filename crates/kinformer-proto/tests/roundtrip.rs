//! Go's own encodings, for every kind client-go registers: objects filled by apimachinery's
//! API fuzzer, encoded to protobuf by Go, and the JSON Go writes for the object it decodes from
//! those bytes (`gen/generate.sh`, 1.35's). Decoding must give Go's JSON; encoding that JSON
//! and decoding again must give it once more.

use base64::Engine;
use kinformer_proto::{Envelope, object_from_json, object_to_json};
use serde_json::Value;

#[derive(serde::Deserialize)]
struct Fixture {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    proto: String,
    json: String,
}

fn fixtures() -> Vec<Fixture> {
    serde_json::from_str(include_str!("fixtures/v1_35.json")).expect("fixtures")
}

#[test]
fn decoding_go_bytes_gives_go_json_for_every_kind() {
    let all = fixtures();
    assert!(all.len() > 500, "only {} fixtures", all.len());
    let mut failures = Vec::new();
    for f in &all {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&f.proto)
            .unwrap();
        let want: Value = serde_json::from_str(&f.json).unwrap();
        match object_to_json(&bytes) {
            Ok(got) => {
                let got: Value = serde_json::from_slice(&got).expect("valid JSON");
                if got != want {
                    failures.push(format!(
                        "{} {}:\n  go:   {want}\n  ours: {got}",
                        f.api_version, f.kind
                    ));
                }
            }
            Err(e) => failures.push(format!("{} {}: {e}", f.api_version, f.kind)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        all.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

#[test]
fn encoding_go_json_and_decoding_again_gives_it_back() {
    let all = fixtures();
    let mut failures = Vec::new();
    for f in &all {
        let want: Value = serde_json::from_str(&f.json).unwrap();
        let bytes = match object_from_json(&want) {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{} {}: encode: {e}", f.api_version, f.kind));
                continue;
            }
        };
        let env = Envelope::parse(&bytes).unwrap();
        assert_eq!(
            (env.api_version, env.kind),
            (f.api_version.as_str(), f.kind.as_str())
        );
        let got: Value = serde_json::from_slice(&object_to_json(&bytes).unwrap()).unwrap();
        if got != want {
            failures.push(format!(
                "{} {}:\n  go:   {want}\n  ours: {got}",
                f.api_version, f.kind
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        all.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

/// A `map[string][]byte` entry without a value (Go writes none for a nil `[]byte`) decodes in
/// Go as an empty, non-nil `[]byte`, which its JSON writes as `""`.
#[test]
fn an_absent_bytes_map_value_is_an_empty_string() {
    let secret = kinformer_proto::MessageRef::for_kind("v1", "Secret").unwrap();
    // field 2 (data), one entry holding only its key (field 1, "k")
    let raw = [0x12, 0x03, 0x0a, 0x01, b'k'];
    let json = kinformer_proto::message_to_json(secret, &raw).unwrap();
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["data"], serde_json::json!({"k": ""}));
}
