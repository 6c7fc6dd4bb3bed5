//! Error texts in Go's words (encoding/json, strconv, encoding/hex, fmt's `%v`), where
//! kube-apiserver passes them to clients verbatim and reproducing them is cheap.

use serde_json::Value;

/// Go's `quoteChar` of encoding/json: how a byte is shown in a syntax error.
fn go_quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x07 => "'\\a'".into(),
        0x08 => "'\\b'".into(),
        0x0c => "'\\f'".into(),
        b'\n' => "'\\n'".into(),
        b'\r' => "'\\r'".into(),
        b'\t' => "'\\t'".into(),
        0x0b => "'\\v'".into(),
        c if c < 0x20 || c == 0x7f => format!("'\\x{c:02x}'"),
        c if (0x80..0xa0).contains(&c) => format!("'\\u{:04x}'", c),
        c => format!("'{}'", c as char),
    }
}

/// Go's `%q` of a string (`strconv.Quote`): printable characters as they are, the usual
/// escapes, others as `\x`, `\u` or `\U`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32))
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON decoding error in encoding/json's words where the difference is cheap to bridge (an
/// invalid first character); serde_json's text otherwise.
pub(crate) fn go_json_error(raw: &[u8], e: &serde_json::Error) -> String {
    let first = raw.iter().copied().find(|b| !b.is_ascii_whitespace());
    match first {
        None => "unexpected end of JSON input".to_string(),
        Some(c)
            if !matches!(
                c,
                b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
            ) =>
        {
            format!(
                "invalid character {} looking for beginning of value",
                go_quote_char(c)
            )
        }
        _ => e.to_string(),
    }
}

/// Go's `strconv` error text for a failed integer parse (`strconv.ParseInt: parsing "abc":
/// invalid syntax`), which kube-apiserver returns verbatim for bad `limit` and
/// `resourceVersion` parameters.
pub(crate) fn go_parse_error(func: &str, input: &str, e: &std::num::ParseIntError) -> String {
    use std::num::IntErrorKind;
    let why = match e.kind() {
        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => "value out of range",
        _ => "invalid syntax",
    };
    format!("strconv.{func}: parsing {input:?}: {why}")
}

/// apimachinery's `summarizeData` (at most 30 bytes): the body as text when it starts with
/// `{`, else hex, with ` ...` when cut; `<empty>` for no body.
pub(crate) fn summarize_data(data: &[u8]) -> String {
    const MAX: usize = 30;
    let cut = data.len() > MAX;
    let head = &data[..data.len().min(MAX)];
    let mut s = match data.first() {
        None => return "<empty>".to_string(),
        Some(b'{') => String::from_utf8_lossy(head).into_owned(),
        Some(_) => head.iter().map(|b| format!("{b:02x}")).collect(),
    };
    if cut {
        s.push_str(" ...");
    }
    s
}

/// A `float64` as Go's `%v` writes it: the shortest decimal that reads back, in exponent form
/// (`1e+21`, `1.5e-07`) below 1e-4 and from 1e21.
pub(crate) fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..21).contains(&exp) {
        return f.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// A decoded JSON value as Go's `%v` prints an `interface{}` holding it: `map[a:1 b:[x y]]`.
pub(crate) fn go_map_text(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) => go_float(f),
            None => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_map_text).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_map_text(v)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_go() {
        assert_eq!(go_quote_char(b'x'), "'x'");
        assert_eq!(go_quote_char(0x9e), "'\\u009e'");
        assert_eq!(go_quote_char(0x01), "'\\x01'");
        // A valid first character: serde_json's own text.
        let e = serde_json::from_slice::<serde_json::Value>(b"nope").unwrap_err();
        assert_eq!(go_json_error(b"nope", &e), e.to_string());
        let e = serde_json::from_slice::<serde_json::Value>(b"%x").unwrap_err();
        assert_eq!(
            go_json_error(b"%x", &e),
            "invalid character '%' looking for beginning of value"
        );
        assert_eq!(summarize_data(b""), "<empty>");
        assert_eq!(summarize_data(b"\"ab\""), "22616222");
        assert_eq!(summarize_data(b"{\"a\":1}"), "{\"a\":1}");
        assert_eq!(
            summarize_data(&[b'x'; 31]),
            format!("{} ...", "78".repeat(30))
        );
    }

    #[test]
    fn floats_are_written_as_go_writes_them() {
        for (f, go) in [
            (0.5, "0.5"),
            (10.0, "10"),
            (-0.5, "-0.5"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (123456789.25, "123456789.25"),
            (1e20, "100000000000000000000"),
        ] {
            assert_eq!(go_float(f), go, "{f}");
        }
    }
}
