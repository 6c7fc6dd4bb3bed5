//! `anyOf`, `oneOf`, `allOf` and `not` in a custom resource's schema, as kube-apiserver's
//! schema validator (go-openapi's) checks them: each branch validated on a copy of the value,
//! nothing pruned or defaulted, the failures reported without a field (`<nil>`).

use serde_json::{Map, Value};

use super::Cause;

/// The most `allOf`/`anyOf`/`oneOf`/`not` branches one object's validation walks: nested
/// branches multiply, and the schema is a client's input. Past it, branches pass (logged).
const MAX_BRANCHES: u32 = 10_000;

thread_local! {
    static BRANCHES_LEFT: std::cell::Cell<u32> = const { std::cell::Cell::new(MAX_BRANCHES) };
}

/// Takes one branch from the budget of the validation under way; false once it is spent.
fn branch_budget() -> bool {
    BRANCHES_LEFT.with(|left| match left.get() {
        0 => false,
        1 => {
            left.set(0);
            tracing::warn!("a custom resource's schema nests allOf/anyOf/oneOf/not past {MAX_BRANCHES} branches: the rest pass unchecked");
            false
        }
        n => {
            left.set(n - 1);
            true
        }
    })
}

/// `anyOf`, `oneOf`, `allOf` and `not` (in go-openapi's order), as go-openapi checks and words them (its causes have no
/// field); each branch is validated on a copy, nothing pruned or defaulted. Of the branches
/// that fail an `anyOf` or `oneOf`, the first one's causes are reported.
pub(super) fn check(
    sch: &Map<String, Value>,
    v: &Value,
    path: &str,
    depth: usize,
    causes: &mut Vec<Cause>,
) {
    let check = |branch: &Value| {
        if !branch_budget() {
            return Vec::new();
        }
        let mut copy = v.clone();
        let mut found = Vec::new();
        super::walk(branch, &mut copy, None, path, depth + 1, &mut found, false);
        found
    };
    let branches = |key: &str| {
        sch.get(key)
            .and_then(Value::as_array)
            .filter(|b| !b.is_empty())
    };
    let unfielded = |detail: String| {
        (
            "<nil>".to_string(),
            "FieldValueInvalid".to_string(),
            format!("Invalid value: \"\": {detail}"),
        )
    };
    let quoted = format!("{path:?}");
    if let Some(any) = branches("anyOf") {
        let results: Vec<Vec<Cause>> = any.iter().map(check).collect();
        if results.iter().all(|r| !r.is_empty()) {
            causes.push(unfielded(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
            causes.extend(results.into_iter().next().unwrap_or_default());
        }
    }
    if let Some(one) = branches("oneOf") {
        let results: Vec<Vec<Cause>> = one.iter().map(check).collect();
        match results.iter().filter(|r| r.is_empty()).count() {
            1 => {}
            0 => {
                causes.push(unfielded(format!(
                    "{quoted} must validate one and only one schema (oneOf). Found none valid"
                )));
                causes.extend(results.into_iter().next().unwrap_or_default());
            }
            n => causes.push(unfielded(format!(
                "{quoted} must validate one and only one schema (oneOf). Found {n} valid alternatives"
            ))),
        }
    }
    if let Some(all) = branches("allOf") {
        let results: Vec<Vec<Cause>> = all.iter().map(check).collect();
        let failed = results.iter().filter(|r| !r.is_empty()).count();
        if failed > 0 {
            causes.extend(results.into_iter().flatten());
            let none = if failed == all.len() {
                ". None validated"
            } else {
                ""
            };
            causes.push(unfielded(format!(
                "{quoted} must validate all the schemas (allOf){none}"
            )));
        }
    }
    if let Some(not) = sch.get("not")
        && check(not).is_empty()
    {
        causes.push(unfielded(format!(
            "{quoted} must not validate the schema (not)"
        )));
    }
}

/// Restores the branch budget at the start of one object's validation.
pub(super) fn reset_budget() {
    BRANCHES_LEFT.with(|left| left.set(MAX_BRANCHES));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_branches_stop_at_the_budget() {
        reset_budget();
        assert!((0..MAX_BRANCHES - 1).all(|_| branch_budget()));
        assert!(!branch_budget(), "the last one is spent");
        assert!(!branch_budget());
        reset_budget();
        assert!(branch_budget(), "the next object starts afresh");
        // a schema nesting anyOf 14 deep (32,766 branches) is validated within the budget
        let mut schema = serde_json::json!({"pattern": "^z"});
        for _ in 0..14 {
            schema = serde_json::json!({"anyOf": [schema.clone(), schema]});
        }
        reset_budget();
        let mut causes = Vec::new();
        check(
            schema.as_object().unwrap(),
            &Value::String("a".into()),
            "spec.x",
            0,
            &mut causes,
        );
        assert!(!branch_budget(), "the budget was spent, not exceeded");
    }
}
