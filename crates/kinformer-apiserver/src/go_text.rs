//! Error texts in Go's words (encoding/json, strconv, encoding/hex), where kube-apiserver passes
//! them to clients verbatim and reproducing them is cheap.

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
}
