//! What kube-apiserver checks of a CRD's `x-kubernetes-validations` when the CRD is written
//! (`apiextensions-apiserver`'s `validation.go`), in its order and words. For each node with
//! rules, after its children: each rule's own fields (a rule given, a message without line
//! breaks, a known reason, a `fieldPath` that names a field); then, only where none of those
//! failed at the node or below it, what compiling the rules finds: syntax errors, a field the
//! schema does not declare, a name nothing declares, an operator between types it has no
//! overload for, a rule that is not a bool or a message expression that is not a string, a
//! rule too costly for where it sits ([`cost`](super::cost)), `oldSelf` where no old value pairs
//! with a new one, and `optionalOldSelf` on a rule without `oldSelf`. After the walk, the
//! schema's total cost.

use cel::Program;
use serde_json::{Map, Value};

use super::cost::{self, Node, Outcome};
use super::{Cause, MAX_DEPTH, rules, s};

/// The reasons a rule may give (kube-apiserver's `supportedValidationReason`).
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// A string as Go's `encoding/json` writes it (`<`, `>` and `&` escaped).
fn go_json(s: &str) -> String {
    serde_json::to_string(s)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A rule as kube-apiserver writes the value of an error about it: its internal
/// `ValidationRule` struct in JSON.
fn rule_value(rule: &Value) -> String {
    let opt = |k: &str| {
        rule.get(k)
            .and_then(Value::as_str)
            .map_or_else(|| "null".to_string(), go_json)
    };
    format!(
        "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{},\"FieldPath\":{},\"OptionalOldSelf\":{}}}",
        go_json(s(rule, &["rule"])),
        go_json(s(rule, &["message"])),
        go_json(s(rule, &["messageExpression"])),
        opt("reason"),
        go_json(s(rule, &["fieldPath"])),
        rule.get("optionalOldSelf")
            .and_then(Value::as_bool)
            .map_or("null".to_string(), |b| b.to_string()),
    )
}

/// cel-go's display of errors at nodes of `program`: `ERROR: <input>:line:column: message`,
/// then the line and a caret under the column.
fn display(program: &Program, errors: &[(u64, String)]) -> String {
    let source = &program.source_info().source;
    let mut found: Vec<(usize, &str)> = errors
        .iter()
        .map(|(id, m)| {
            let at = program
                .source_info()
                .offset_for(*id)
                .map_or(0, |(start, _)| start as usize);
            (at.min(source.len()), m.as_str())
        })
        .collect();
    found.sort_by_key(|(at, _)| *at);
    let shown: Vec<String> = found
        .iter()
        .map(|(at, m)| {
            let before = source.get(..*at).unwrap_or(source);
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let line = before.matches('\n').count() + 1;
            let column = before[line_start..].chars().count() + 1;
            let text = source[line_start..].lines().next().unwrap_or("");
            format!(
                "ERROR: <input>:{line}:{column}: {m}\n | {text}\n | {}^",
                ".".repeat(column - 1)
            )
        })
        .collect();
    shown.join("\n")
}

/// The `cel` crate's words for a syntax error, as cel-go lays them out.
fn syntax_error(e: &str) -> String {
    e.replace("\n| ", "\n | ")
}

/// Whether `path` (`.spec.x`, `['a.b']`) names a field under `schema` (kube-apiserver's
/// `ValidFieldPath`: properties by name, a map's values by any key, no list indices).
fn valid_field_path(schema: &Value, path: &str) -> bool {
    let Some(names) = rules::field_path_segments(path) else {
        return false;
    };
    let mut at = schema;
    for name in names {
        at = match (at.get("properties"), at.get("additionalProperties")) {
            (Some(Value::Object(props)), _) => match props.get(name) {
                Some(p) => p,
                None => return false,
            },
            (None, Some(v @ Value::Object(_))) => v,
            _ => return false,
        };
    }
    true
}

/// Checks the rules of one schema (a CRD version's, or the one all its versions share) whose
/// place in the CRD is `path` (`spec.validation.openAPIV3Schema` or
/// `spec.versions[i].schema.openAPIV3Schema`).
pub(super) fn check(schema: &Value, path: &str) -> Vec<Cause> {
    let mut walk = Walk {
        causes: Vec::new(),
        total: 0,
        most_expensive: Vec::new(),
    };
    walk.node(schema, true, path, Some(1), None, 0);
    if walk.total > cost::TOTAL_LIMIT {
        for (at, _) in std::mem::take(&mut walk.most_expensive) {
            walk.forbidden(
                at,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".into(),
            );
        }
        let total = walk.total;
        walk.forbidden(
            path.to_string(),
            cost::over_budget(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                cost::TOTAL_LIMIT,
            ),
        );
    }
    walk.causes
}

struct Walk {
    causes: Vec<Cause>,
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Walk {
    fn observe(&mut self, path: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost >= cost::TOTAL_LIMIT / 100 {
            self.most_expensive.push((path.to_string(), cost));
            self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
            self.most_expensive.truncate(cost::MOST_EXPENSIVE);
        }
    }

    fn forbidden(&mut self, path: String, message: String) {
        self.causes.push((
            path,
            "FieldValueForbidden".into(),
            format!("Forbidden: {message}"),
        ));
    }

    fn invalid(&mut self, path: String, value: String, detail: &str) {
        self.causes.push((
            path,
            "FieldValueInvalid".into(),
            format!("Invalid value: {value}: {detail}"),
        ));
    }

    fn required(&mut self, path: String, detail: &str) {
        self.causes.push((
            path,
            "FieldValueRequired".into(),
            format!("Required value: {detail}"),
        ));
    }

    /// Walks a node and its children; whether a rule's own fields were wrong at it or below.
    fn node(
        &mut self,
        schema: &Value,
        root: bool,
        path: &str,
        card: Option<u64>,
        uncorrelatable: Option<&str>,
        depth: usize,
    ) -> bool {
        let Value::Object(m) = schema else {
            return false;
        };
        if depth > MAX_DEPTH {
            return false;
        }
        let mut broken = false;
        let children = cost::child_cardinality(schema, card);
        if let Some(Value::Object(props)) = m.get("properties") {
            for (k, p) in props {
                let at = format!("{path}.properties[{k}]");
                broken |= self.node(p, false, &at, children, uncorrelatable, depth + 1);
            }
        }
        if let Some(v @ Value::Object(_)) = m.get("additionalProperties") {
            let at = format!("{path}.additionalProperties");
            broken |= self.node(v, false, &at, children, uncorrelatable, depth + 1);
        }
        if let Some(v @ Value::Object(_)) = m.get("items") {
            let at = format!("{path}.items");
            let keyed = s(schema, &["x-kubernetes-list-type"]) == "map";
            let unc = uncorrelatable.or((!keyed).then_some(path));
            broken |= self.node(v, false, &at, children, unc, depth + 1);
        }
        let Some(Value::Array(list)) = m.get("x-kubernetes-validations") else {
            return broken;
        };
        for (i, rule) in list.iter().enumerate() {
            broken |= self.rule_fields(
                schema,
                &format!("{path}.x-kubernetes-validations[{i}]"),
                rule,
            );
        }
        let node = Node::new(schema, root || Node::is_embedded(schema));
        if !broken && node.kind().is_some() {
            self.compiled_rules(m, node, path, card, uncorrelatable);
        }
        broken
    }

    /// A rule's own fields; whether one was wrong.
    fn rule_fields(&mut self, schema: &Value, at: &str, rule: &Value) -> bool {
        let before = self.causes.len();
        let text = s(rule, &["rule"]).trim();
        let message = s(rule, &["message"]);
        let quoted = |s: &str| format!("{s:?}");
        if text.is_empty() {
            self.required(format!("{at}.rule"), "rule is not specified");
        } else if !message.is_empty() && message.trim().is_empty() {
            self.invalid(
                format!("{at}.message"),
                quoted(message),
                "must be non-empty if specified",
            );
        } else if has_newlines(message.trim()) {
            self.invalid(
                format!("{at}.message"),
                quoted(message),
                "must not contain line breaks",
            );
        } else if has_newlines(text) && message.trim().is_empty() {
            self.required(
                format!("{at}.message"),
                "message must be specified if rule contains line breaks",
            );
        }
        let expression = s(rule, &["messageExpression"]);
        if !expression.is_empty() && expression.trim().is_empty() {
            self.required(
                format!("{at}.messageExpression"),
                "messageExpression must be non-empty if specified",
            );
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            let supported: Vec<String> = REASONS.iter().map(|r| format!("{r:?}")).collect();
            self.causes.push((
                format!("{at}.reason"),
                "FieldValueNotSupported".into(),
                format!(
                    "Unsupported value: {reason:?}: supported values: {}",
                    supported.join(", ")
                ),
            ));
        }
        let field_path = s(rule, &["fieldPath"]);
        if !field_path.is_empty() && field_path.trim().is_empty() {
            self.invalid(
                format!("{at}.fieldPath"),
                quoted(field_path),
                "must be non-empty if specified",
            );
        }
        if has_newlines(field_path) {
            self.invalid(
                format!("{at}.fieldPath"),
                quoted(field_path),
                "must not contain line breaks",
            );
        }
        if !field_path.is_empty() && !valid_field_path(schema, field_path) {
            self.invalid(
                format!("{at}.fieldPath"),
                quoted(field_path),
                "must be a valid path",
            );
        }
        self.causes.len() > before
    }

    /// What compiling a node's rules finds, and their cost.
    fn compiled_rules(
        &mut self,
        m: &Map<String, Value>,
        node: Node<'_>,
        path: &str,
        card: Option<u64>,
        uncorrelatable: Option<&str>,
    ) {
        let Some(Value::Array(list)) = m.get("x-kubernetes-validations") else {
            return;
        };
        let card = card.unwrap_or_else(|| cost::fallback_cardinality(node));
        for (i, rule) in list.iter().enumerate() {
            let at = format!("{path}.x-kubernetes-validations[{i}]");
            let (program, outcome) = match compile(s(rule, &["rule"]), node) {
                Ok(x) => x,
                Err(e) => {
                    self.observe(&format!("{at}.rule"), 0);
                    let detail = format!("compilation failed: {e}");
                    self.invalid(format!("{at}.rule"), rule_value(rule), &detail);
                    self.optional_old_self(&at, rule);
                    continue;
                }
            };
            let cost = outcome.cost.saturating_mul(card);
            if cost > cost::RULE_LIMIT {
                self.forbidden(
                    format!("{at}.rule"),
                    cost::over_budget("estimated rule cost", cost, cost::RULE_LIMIT),
                );
            }
            self.observe(&format!("{at}.rule"), cost);
            if outcome.ty.is_some_and(|t| t != "bool") {
                self.invalid(
                    format!("{at}.rule"),
                    rule_value(rule),
                    "cel expression must evaluate to a bool",
                );
            }
            let expression = s(rule, &["messageExpression"]);
            if !expression.trim().is_empty() {
                match compile(expression, node) {
                    Err(e) => {
                        let detail = format!("messageExpression compilation failed: {e}");
                        self.invalid(format!("{at}.messageExpression"), rule_value(rule), &detail);
                    }
                    Ok((_, message)) if message.ty.is_some_and(|t| t != "string") => {
                        self.invalid(
                            format!("{at}.messageExpression"),
                            rule_value(rule),
                            "messageExpression must evaluate to a string",
                        );
                    }
                    Ok((_, message)) => {
                        if message.cost > cost::RULE_LIMIT {
                            self.forbidden(
                                format!("{at}.messageExpression"),
                                cost::over_budget(
                                    "estimated messageExpression cost",
                                    message.cost,
                                    cost::RULE_LIMIT,
                                ),
                            );
                        }
                        self.observe(&format!("{at}.messageExpression"), message.cost);
                    }
                }
            }
            // as the rules' evaluation decides it (`rules::validate`)
            if program.references().has_variable("oldSelf") {
                if let Some(within) = uncorrelatable {
                    self.invalid(
                        format!("{at}.rule"),
                        format!("{:?}", s(rule, &["rule"])),
                        &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"),
                    );
                }
            } else {
                self.optional_old_self(&at, rule);
            }
        }
    }

    /// `optionalOldSelf` on a rule that does not use `oldSelf` (or did not compile).
    fn optional_old_self(&mut self, at: &str, rule: &Value) {
        if let Some(b) = rule.get("optionalOldSelf").and_then(Value::as_bool) {
            self.invalid(
                format!("{at}.optionalOldSelf"),
                b.to_string(),
                "may not be set if oldSelf is not used in rule",
            );
        }
    }
}

/// Parses and checks an expression written on `node`: the program and what the check found,
/// or the errors in cel-go's words.
fn compile(text: &str, node: Node<'_>) -> Result<(std::sync::Arc<rules::Rule>, Outcome), String> {
    let program = rules::parsed(text).map_err(|e| syntax_error(&e))?;
    let outcome = cost::Estimator::new(node).run(program.expression());
    if outcome.errors.is_empty() {
        Ok((program, outcome))
    } else {
        Err(display(&program, &outcome.errors))
    }
}

#[cfg(test)]
mod tests;
