//! `shardSelector` (KEP-5866, Kubernetes 1.36 alpha, feature gate `ShardedListAndWatch`):
//! kube-apiserver's `k8s.io/apiserver/pkg/sharding.Parse` and
//! `k8s.io/apimachinery/pkg/sharding`'s selector, with their error messages word for word
//! (apiserver v0.36.3).
//!
//! `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`, joined with
//! `||`: an object matches when the 64-bit FNV-1a hash of its uid (or namespace) is in
//! `[start, end)` of any range. Bounds are `0x` and exactly 16 lowercase hex digits, or
//! `0x10000000000000000` (2^64) as an end. Every range must hash the same field.

use super::cel::{self, Expr, Lit};
use crate::go_text::go_quote;

/// The field a selector hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardField {
    Uid,
    Namespace,
}

impl ShardField {
    fn path(self) -> &'static str {
        match self {
            Self::Uid => "object.metadata.uid",
            Self::Namespace => "object.metadata.namespace",
        }
    }
}

/// One `[start, end)` range, with its bounds as written (canonical, validated).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Range {
    start: String,
    end: String,
}

/// A parsed, non-empty shard selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardSelector {
    field: ShardField,
    ranges: Vec<Range>,
}

/// Go's `fnv.New64a` over `value`.
pub(crate) fn fnv1a_64(value: &[u8]) -> u64 {
    value.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// apimachinery's `sharding.HexLess`: lengths first, then the digits.
fn hex_less(a: &str, b: &str) -> bool {
    if a.len() != b.len() {
        return a.len() < b.len();
    }
    a < b
}

impl ShardSelector {
    /// Parses a `shardSelector` query value; `Err` is the message kube-apiserver puts after
    /// `invalid shard selector: `.
    pub(crate) fn parse(expr: &str) -> Result<Self, String> {
        let expr = expr.trim();
        if expr.is_empty() {
            return Err(
                "empty shard selector is not allowed; omit the parameter for unfiltered lists"
                    .into(),
            );
        }
        let tree = cel::parse(expr).map_err(|e| format!("CEL parse error: {e}"))?;
        let mut ranges = Vec::new();
        walk(&tree, &mut ranges)?;
        let field = ranges[0].0;
        if let Some((other, _)) = ranges.iter().find(|(f, _)| *f != field) {
            return Err(format!(
                "all shard ranges must use the same field, got {} and {}",
                go_quote(field.path()),
                go_quote(other.path())
            ));
        }
        Ok(Self {
            field,
            ranges: ranges.into_iter().map(|(_, r)| r).collect(),
        })
    }

    /// The selector as kube writes it back in `shardInfo.selector` (`String()`).
    pub(crate) fn canonical(&self) -> String {
        self.ranges
            .iter()
            .map(|r| {
                format!(
                    "shardRange({}, '{}', '{}')",
                    self.field.path(),
                    r.start,
                    r.end
                )
            })
            .collect::<Vec<_>>()
            .join(" || ")
    }

    /// Whether an object with this uid and namespace is selected.
    pub(crate) fn matches(&self, uid: &str, namespace: &str) -> bool {
        let value = match self.field {
            ShardField::Uid => uid,
            ShardField::Namespace => namespace,
        };
        let hash = format!("0x{:016x}", fnv1a_64(value.as_bytes()));
        self.ranges
            .iter()
            .any(|r| !hex_less(&hash, &r.start) && hex_less(&hash, &r.end))
    }
}

fn walk(e: &Expr, out: &mut Vec<(ShardField, Range)>) -> Result<(), String> {
    match e {
        Expr::Call { function, args } if function == "_||_" => {
            if args.len() != 2 {
                return Err("|| operator requires exactly 2 arguments".into());
            }
            walk(&args[0], out)?;
            walk(&args[1], out)
        }
        Expr::Call { function, args } if function == "shardRange" => {
            out.push(shard_range(args)?);
            Ok(())
        }
        Expr::Call { function, .. } => Err(format!(
            "unsupported function {}; only shardRange() and || are allowed",
            go_quote(function)
        )),
        other => Err(format!(
            "unexpected expression kind {}; expected shardRange() call or || operator",
            other.kind() as u8
        )),
    }
}

fn shard_range(args: &[Expr]) -> Result<(ShardField, Range), String> {
    if args.len() != 3 {
        return Err(format!(
            "shardRange() requires exactly 3 arguments, got {}",
            args.len()
        ));
    }
    let path = field_path(&args[0]).map_err(|e| format!("shardRange() first argument: {e}"))?;
    let field = match path.as_str() {
        "object.metadata.uid" => ShardField::Uid,
        "object.metadata.namespace" => ShardField::Namespace,
        _ => {
            return Err(format!(
                "unsupported field path {}; supported: object.metadata.uid, object.metadata.namespace",
                go_quote(&path)
            ));
        }
    };
    let start = hex_literal(&args[1], "hexStart")?;
    let end = hex_literal(&args[2], "hexEnd")?;
    if !hex_less(&start, &end) {
        return Err(format!(
            "shard range start {start} must be less than end {end}"
        ));
    }
    Ok((field, Range { start, end }))
}

fn field_path(e: &Expr) -> Result<String, String> {
    match e {
        Expr::Ident(name) => Ok(name.clone()),
        Expr::Select { operand, field } => Ok(format!("{}.{field}", field_path(operand)?)),
        other => Err(format!(
            "expected field path (e.g. object.metadata.uid), got expression kind {}",
            other.kind() as u8
        )),
    }
}

fn hex_literal(e: &Expr, name: &str) -> Result<String, String> {
    let Expr::Literal(lit) = e else {
        return Err(format!(
            "{name} must be a string literal (e.g. '0xff'), got expression kind {}",
            e.kind() as u8
        ));
    };
    let Lit::Str(s) = lit else {
        return Err(format!(
            "{name} must be a string literal, got {}",
            lit.go_type()
        ));
    };
    let Some(hex) = s.strip_prefix("0x") else {
        return Err(format!("{name} must have '0x' prefix, got {}", go_quote(s)));
    };
    if hex.is_empty() {
        return Err(format!("{name}: hex value is required after '0x'"));
    }
    if hex.len() > 17 {
        return Err(format!(
            "{name}: hex value too long ({} chars, max 17): {}",
            hex.len(),
            go_quote(hex)
        ));
    }
    if let Some(c) = hex
        .chars()
        .find(|c| !c.is_ascii_digit() && !('a'..='f').contains(c))
    {
        return Err(format!(
            "{name}: invalid hex character {} in {}",
            go_quote(&c.to_string()),
            go_quote(s)
        ));
    }
    if hex.len() == 17 {
        if s != "0x10000000000000000" {
            return Err(format!(
                "{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got {}",
                go_quote(s)
            ));
        }
    } else if hex.len() != 16 {
        let padded = format!("0x{}{hex}", "0".repeat(16 - hex.len()));
        return Err(format!(
            "{name} must be a 0x-prefixed 16-digit hex value, got {} (did you mean {}?)",
            go_quote(s),
            go_quote(&padded)
        ));
    }
    Ok(s.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF: &str =
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";

    #[test]
    fn parses_and_writes_back_kubes_canonical_form() {
        let s = ShardSelector::parse(&format!(
            "  shardRange( object.metadata.uid,\"0x8000000000000000\" , '0x10000000000000000')||{HALF} "
        ))
        .unwrap();
        assert_eq!(
            s.canonical(),
            format!(
                "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000') || {HALF}"
            )
        );
        // the FNV-1a of "" is 0xcbf29ce484222325: in the upper half
        assert!(s.matches("", "x"));
        let lower = ShardSelector::parse(HALF).unwrap();
        assert!(!lower.matches("", "x"));
        let by_ns = ShardSelector::parse(
            "shardRange(object.metadata.namespace, '0xc000000000000000', '0xd000000000000000')",
        )
        .unwrap();
        assert!(by_ns.matches("any", ""), "hash of \"\" is 0xcbf2...");
    }

    #[test]
    fn errors_carry_kube_apiservers_messages() {
        let cases: &[(&str, &str)] = &[
            (
                "   ",
                "empty shard selector is not allowed; omit the parameter for unfiltered lists",
            ),
            (
                "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
                "hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean \"0x0000000000000000\"?)",
            ),
            (
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
                "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), got \"0x20000000000000000\"",
            ),
            (
                "shardRange(object.metadata.uid, '0x000000000000000000', '0x1')",
                "hexStart: hex value too long (18 chars, max 17): \"000000000000000000\"",
            ),
            (
                "shardRange(object.metadata.uid, '0x', '0x1')",
                "hexStart: hex value is required after '0x'",
            ),
            (
                "shardRange(object.metadata.uid, 'ff', '0x1')",
                "hexStart must have '0x' prefix, got \"ff\"",
            ),
            (
                "shardRange(object.metadata.uid, '0x000000000000000A', '0x1')",
                "hexStart: invalid hex character \"A\" in \"0x000000000000000A\"",
            ),
            (
                "shardRange(object.metadata.uid, 0, '0x1')",
                "hexStart must be a string literal, got int64",
            ),
            (
                "shardRange(object.metadata.uid, x, '0x1')",
                "hexStart must be a string literal (e.g. '0xff'), got expression kind 3",
            ),
            (
                "shardRange(object.metadata.name, '0x0000000000000000', '0x1')",
                "unsupported field path \"object.metadata.name\"; supported: object.metadata.uid, object.metadata.namespace",
            ),
            (
                "shardRange('uid', '0x0000000000000000', '0x1')",
                "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind 5",
            ),
            (
                "shardRange(object.metadata.uid, '0x0000000000000000')",
                "shardRange() requires exactly 3 arguments, got 2",
            ),
            (
                "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
                "shard range start 0x8000000000000000 must be less than end 0x8000000000000000",
            ),
            (
                "shardRange(object.metadata.uid, '0x10000000000000000', '0x8000000000000000')",
                "shard range start 0x10000000000000000 must be less than end 0x8000000000000000",
            ),
            (
                "object.metadata.uid",
                "unexpected expression kind 7; expected shardRange() call or || operator",
            ),
            (
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
                "unsupported function \"_&&_\"; only shardRange() and || are allowed",
            ),
            (
                "has(object.metadata.uid)",
                "unsupported function \"has\"; only shardRange() and || are allowed",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(ShardSelector::parse(input).unwrap_err(), *want, "{input}");
        }
        let mixed = format!(
            "{HALF} || shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"
        );
        assert_eq!(
            ShardSelector::parse(&mixed).unwrap_err(),
            "all shard ranges must use the same field, got \"object.metadata.uid\" and \"object.metadata.namespace\""
        );
        assert!(
            ShardSelector::parse("shardRange(")
                .unwrap_err()
                .starts_with("CEL parse error: Syntax error: ")
        );
        // kube-apiserver v1.36.3's answer, recorded by e2e/diff shard-invalid
        assert_eq!(
            ShardSelector::parse("shardRange(object.metadata.uid, '0x0000000000000000'")
                .unwrap_err(),
            "CEL parse error: Syntax error: missing ')' at '<EOF>'"
        );
    }
}

#[cfg(test)]
mod cel_tests {
    use super::super::cel::*;

    #[test]
    fn builds_cels_tree_shapes() {
        let e = parse("shardRange(object.metadata.uid, '0x1', \"0x2\") || f(1u, -2, 1.5)").unwrap();
        let Expr::Call { function, args } = e else {
            panic!("not a call")
        };
        assert_eq!(function, "_||_");
        assert_eq!(args.len(), 2);
        assert_eq!(
            args[0],
            call(
                "shardRange",
                vec![
                    Expr::Select {
                        operand: Box::new(Expr::Select {
                            operand: Box::new(Expr::Ident("object".into())),
                            field: "metadata".into()
                        }),
                        field: "uid".into()
                    },
                    Expr::Literal(Lit::Str("0x1".into())),
                    Expr::Literal(Lit::Str("0x2".into())),
                ]
            )
        );
        assert_eq!(
            args[1],
            call(
                "f",
                vec![
                    Expr::Literal(Lit::Uint(1)),
                    Expr::Literal(Lit::Int(-2)),
                    Expr::Literal(Lit::Double(1.5))
                ]
            )
        );
        assert_eq!(parse("a && b").unwrap().kind(), ExprKind::Call);
        assert_eq!(parse("x[1]").unwrap().kind(), ExprKind::Call);
        assert_eq!(parse("[1, 2]").unwrap().kind(), ExprKind::List);
        assert_eq!(parse("{'a': 1}").unwrap().kind(), ExprKind::Map);
        assert_eq!(parse("a.B{f: 1}").unwrap().kind(), ExprKind::Struct);
        assert_eq!(parse("(a)").unwrap(), Expr::Ident("a".into()));
        assert_eq!(
            parse("b'x'").unwrap(),
            Expr::Literal(Lit::Bytes(b"x".to_vec()))
        );
    }

    #[test]
    fn syntax_errors_are_errors_not_panics() {
        for bad in [
            "shardRange(",
            "a ||",
            "'unterminated",
            "#",
            "a b",
            "f(,)",
            "x.",
            "0xZZ",
            "99999999999999999999",
            "'\\q'",
            "'\\x4'",
            ")",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }
}
