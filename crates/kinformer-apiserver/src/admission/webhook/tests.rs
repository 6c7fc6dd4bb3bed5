use serde_json::{Value, json};

use super::call::Endpoint;
use super::{Hook, Review, Verdict};
use crate::admission::policy::Operation;
use crate::resource::{ResourceInfo, builtin_resources};

fn res(plural: &str) -> ResourceInfo {
    builtin_resources()
        .into_iter()
        .find(|r| r.plural == plural)
        .unwrap()
}

fn hook(mutating: bool) -> Hook {
    Hook {
        configuration: "c".into(),
        mutating,
        spec: json!({"name": "w.example.com", "admissionReviewVersions": ["v1beta1", "v1"],
                     "sideEffects": "None"}),
    }
}

fn review<'a>(res: &'a ResourceInfo, user: &'a Value, options: &'a Value) -> Review<'a> {
    Review {
        res,
        subresource: None,
        namespace: "ns",
        name: "n",
        operation: Operation::Create,
        object: None,
        old: None,
        dry_run: false,
        user,
        options,
        uid: "u-1".into(),
        version: "v1",
        scale: false,
    }
}

fn answer(response: Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "response": response}),
    )
    .unwrap()
}

#[test]
fn answers_are_checked_as_kube_apiserver_checks_them() {
    let (r, u, o) = (res("configmaps"), json!({}), json!({}));
    let rv = review(&r, &u, &o);
    let h = hook(false);
    let ok = h
        .verdict(&rv, &answer(json!({"uid": "u-1", "allowed": true})))
        .unwrap();
    assert!(matches!(ok, Verdict::Allowed { patch: None, .. }));
    let wrong_uid = h.verdict(&rv, &answer(json!({"uid": "x", "allowed": true})));
    assert_eq!(
        wrong_uid.unwrap_err(),
        "received invalid webhook response: expected response.uid=\"u-1\", got \"x\""
    );
    let absent = h.verdict(&rv, &answer(Value::Null));
    assert!(absent.unwrap_err().ends_with("webhook response was absent"));
    let kind = br#"{"apiVersion": "v1", "kind": "Status", "response": {"uid": "u-1"}}"#;
    assert!(
        h.verdict(&rv, kind)
            .unwrap_err()
            .contains("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview")
    );
    assert!(h.verdict(&rv, b"not json").is_err());
    // a validating webhook may not patch
    let patched = answer(
        json!({"uid": "u-1", "allowed": true, "patchType": "JSONPatch",
                                "patch": "W10="}),
    );
    assert!(
        h.verdict(&rv, &patched)
            .unwrap_err()
            .contains("may not return response.patch")
    );
}

#[test]
fn patches_come_as_base64_or_as_byte_arrays() {
    let (r, u, o) = (res("configmaps"), json!({}), json!({}));
    let rv = review(&r, &u, &o);
    let h = hook(true);
    let ops = br#"[{"op":"add","path":"/a","value":1}]"#;
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(ops);
    let bytes: Vec<Value> = ops.iter().map(|b| json!(b)).collect();
    for patch in [json!(b64), Value::Array(bytes)] {
        let a = answer(
            json!({"uid": "u-1", "allowed": true, "patchType": "JSONPatch",
                              "patch": patch, "warnings": ["w\u{7}1"]}),
        );
        let Verdict::Allowed {
            patch: Some(p),
            warnings,
        } = h.verdict(&rv, &a).unwrap()
        else {
            panic!("expected a patch");
        };
        assert_eq!(p.0.len(), 1);
        assert_eq!(warnings, vec!["w1".to_string()]);
    }
    // v1 wants the patch type
    let a = answer(json!({"uid": "u-1", "allowed": true, "patch": b64}));
    assert!(
        h.verdict(&rv, &a)
            .unwrap_err()
            .contains("but not response.patchType")
    );
    let a = answer(json!({"uid": "u-1", "allowed": true, "patch": [300]}));
    assert!(h.verdict(&rv, &a).is_err());
}

#[test]
fn denials_read_as_kube_apiserver_words_them() {
    let h = hook(false);
    let e = h.denial(Some(&json!({"message": "no"})));
    assert_eq!(e.code, 400, "no code: 400");
    assert_eq!(e.reason, "");
    assert_eq!(
        e.message,
        "admission webhook \"w.example.com\" denied the request: no"
    );
    assert_eq!(e.details, None);
    let e = h.denial(Some(
        &json!({"code": 403, "reason": "Forbidden", "details": {"name": "x"}}),
    ));
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert!(e.message.ends_with("denied the request: Forbidden"));
    assert_eq!(e.details, Some(json!({"name": "x"})));
    let e = h.denial(Some(&json!({"code": 200})));
    assert_eq!(e.code, 400, "a refusal is never under 400");
    let e = h.denial(None);
    assert!(
        e.message
            .ends_with("denied the request without explanation")
    );
}

#[test]
fn the_review_names_the_write() {
    let r = res("deployments");
    let (u, o) = (json!({"username": "me"}), json!({"kind": "UpdateOptions"}));
    let obj = json!({"metadata": {"name": "d"}});
    let mut rv = review(&r, &u, &o);
    rv.subresource = Some("status");
    rv.operation = Operation::Update;
    rv.object = Some(&obj);
    rv.name = "";
    let b = rv.body();
    assert_eq!(b["apiVersion"], "admission.k8s.io/v1");
    let req = &b["request"];
    assert_eq!(req["uid"], "u-1");
    assert_eq!(
        req["kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(req["resource"]["resource"], "deployments");
    assert_eq!(req["subResource"], "status");
    assert_eq!(req["requestSubResource"], "status");
    assert!(req.get("name").is_none(), "no name yet: left out");
    assert_eq!(req["operation"], "UPDATE");
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["userInfo"]["username"], "me");
    // the first version the webhook accepts that the server speaks
    assert_eq!(hook(false).review_version(), Some("v1beta1"));
}

#[test]
fn urls_must_be_https_and_carry_the_timeout() {
    let e = Endpoint::of_url("https://127.0.0.1:8443/v?x=1").unwrap();
    assert_eq!(e.base, "https://127.0.0.1:8443");
    assert_eq!(
        e.url(std::time::Duration::from_secs(10)),
        "https://127.0.0.1:8443/v?x=1&timeout=10s"
    );
    let e = Endpoint::of_url("https://hooks.example.com").unwrap();
    assert_eq!(
        e.url(std::time::Duration::from_secs(3)),
        "https://hooks.example.com/?timeout=3s"
    );
    assert!(
        Endpoint::of_url("http://127.0.0.1/v")
            .unwrap_err()
            .contains("'https' is the only allowed URL scheme")
    );
}

#[test]
fn timeouts_and_policies_default_as_kube_apiserver_defaults_them() {
    let h = hook(false);
    assert_eq!(h.timeout(), std::time::Duration::from_secs(10));
    assert!(h.fails_closed());
    assert!(h.dry_run_safe());
    let mut h = hook(false);
    h.spec["timeoutSeconds"] = json!(99);
    h.spec["failurePolicy"] = json!("Ignore");
    h.spec["sideEffects"] = json!("Some");
    assert_eq!(h.timeout(), std::time::Duration::from_secs(30));
    assert!(!h.fails_closed());
    assert!(!h.dry_run_safe());
}
