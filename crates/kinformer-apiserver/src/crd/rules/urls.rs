//! Kubernetes' URL library for CEL (`k8s.io/apiserver/pkg/cel/library/urls.go`), as CRD rules
//! call it: `isURL(s)`, `url(s)`, and on a URL `getScheme()`, `getHost()`, `getHostname()`,
//! `getPort()`, `getEscapedPath()`, `getQuery()`.
//!
//! A string is a URL when Go's `url.ParseRequestURI` accepts it (an absolute URL, or an
//! absolute path), and a URL's parts are what Go's `net/url` makes of it; parse errors are in
//! its words (`URL parse error during conversion from string: parse "x": invalid URI for
//! request`). The parser here follows `net/url`'s for what the library reads: scheme, opaque
//! part, authority (user information, host, port), path, query and fragment.

use std::collections::HashMap;

use cel::common::types::{CelBool, CelList, CelMap, CelMapKey, CelString, Type};
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};

use crate::go_text::go_quote;

static URL: Type = Type::new_unspecified_type("kubernetes.URL");

/// A URL, as Go's `net/url` parses it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Url {
    scheme: String,
    opaque: String,
    host: String,
    /// The path, unescaped.
    path: String,
    /// The path as written, when it is not what escaping `path` gives.
    raw_path: String,
    raw_query: String,
}

opaque!(Url, URL);

/// Go's `url.Error` text: `parse "<raw>": <why>`.
fn parse_error(raw: &str, why: &str) -> String {
    format!("parse {}: {why}", go_quote(raw))
}

/// How a part of a URL is escaped (Go's `encoding` modes that matter here).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Path,
    Host,
    Query,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, part: Part) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if part == Part::Host {
        return !matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
                | b'-'
                | b'.'
                | b'_'
                | b'~'
        );
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match part {
            Part::Path => c == b'?',
            Part::Query => true,
            Part::Fragment => false,
            Part::Host => false,
        },
        _ => !(part == Part::Fragment && matches!(c, b'!' | b'(' | b')' | b'*')),
    }
}

/// Go's `unescape`: `%XX` sequences decoded (`+` as a space in a query); `None` with the
/// error's words when one is malformed or, in a host, a character is not allowed.
fn unescape(s: &str, part: Part) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (
                    b.get(i + 1).copied().and_then(hex),
                    b.get(i + 2).copied().and_then(hex),
                ) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                    }
                    _ => {
                        let bad: String = s[i..].chars().take(3).collect();
                        return Err(format!("invalid URL escape {}", go_quote(&bad)));
                    }
                }
            }
            b'+' if part == Part::Query => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if part == Part::Host && c < 0x80 && should_escape(c, Part::Host) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&(c as char).to_string())
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `escape` in path mode.
fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, Part::Path) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `validEncoded` in path mode.
fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, Part::Path)
    })
}

/// Go's `getScheme`: the scheme and the rest, when the text before the first `:` is one.
fn split_scheme(raw: &str) -> Result<(String, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((raw[..i].to_ascii_lowercase(), &raw[i + 1..])),
            _ => return Ok((String::new(), raw)),
        }
    }
    Ok((String::new(), raw))
}

/// Go's `validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|c| c.is_ascii_digit()))
}

/// Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let port = &host[i + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    } else if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    unescape(host, Part::Host)
}

/// Go's `parseAuthority` (the user information is checked, not kept).
fn parse_authority(authority: &str) -> Result<String, String> {
    let Some(i) = authority.rfind('@') else {
        return parse_host(authority);
    };
    let user = &authority[..i];
    let valid_user = user.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    });
    if !valid_user {
        return Err("net/url: invalid userinfo".into());
    }
    parse_host(&authority[i + 1..])
}

/// Go's `url.parse`: `via_request` as `ParseRequestURI` (no fragment, an absolute URL or path).
fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|c| c < 0x20 || c == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut u = Url::default();
    if raw == "*" {
        u.path = "*".into();
        return Ok(u);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    u.scheme = scheme;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        u.raw_query = query.to_string();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest.to_string();
            return Ok(u);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        if rest.split('/').next().is_some_and(|s| s.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    let mut path = rest;
    if (!u.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//")
    {
        let authority = &rest[2..];
        let (authority, p) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        u.host = parse_authority(authority)?;
        path = p;
    }
    u.path = unescape(path, Part::Path)?;
    if escape_path(&u.path) != path && valid_encoded(path) {
        u.raw_path = path.to_string();
    }
    Ok(u)
}

/// The words of Go's `url.ParseRequestURI(raw)` error (`parse "foo": invalid URI for
/// request`), `None` when it parses.
pub(super) fn request_uri_error(raw: &str) -> Option<String> {
    parse(raw, true).err().map(|why| parse_error(raw, &why))
}

/// `url.ParseRequestURI`, then `url.Parse` for the URL kept (as the library does).
fn parse_url(raw: &str) -> Result<Url, String> {
    let wrap = |why: String| {
        format!(
            "URL parse error during conversion from string: {}",
            parse_error(raw, &why)
        )
    };
    parse(raw, true).map_err(wrap)?;
    let (before, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let u = parse(before, false).map_err(wrap)?;
    unescape(fragment, Part::Fragment).map_err(wrap)?;
    Ok(u)
}

impl Url {
    /// Go's `URL.Hostname`.
    fn hostname(&self) -> &str {
        let (host, _) = split_host_port(&self.host);
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
    }

    /// Go's `URL.EscapedPath`.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(&self.raw_path, Part::Path).as_deref() == Ok(self.path.as_str())
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".into();
        }
        escape_path(&self.path)
    }

    /// Go's `URL.Query`: `ParseQuery` of the raw query, malformed pairs left out.
    fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(k), Ok(v)) = (unescape(k, Part::Query), unescape(v, Part::Query)) else {
                continue;
            };
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, values)) => values.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

/// Go's `splitHostPort` of a URL's host: the host and the digits after its last `:`.
fn split_host_port(host: &str) -> (&str, &str) {
    if let Some(i) = host.rfind(':')
        && valid_optional_port(&host[i..])
    {
        return (&host[..i], &host[i + 1..]);
    }
    (host, "")
}

fn url(s: &CelString<'_>) -> Result<Url, ExecutionError> {
    parse_url(s.inner()).map_err(|e| ExecutionError::function_error("url", e))
}

fn is_url(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse(s.inner(), true).is_ok())
}

fn get_scheme(u: &Url) -> CelString<'static> {
    CelString::from(u.scheme.clone())
}

fn get_host(u: &Url) -> CelString<'static> {
    CelString::from(u.host.clone())
}

fn get_hostname(u: &Url) -> CelString<'static> {
    CelString::from(u.hostname().to_string())
}

fn get_port(u: &Url) -> CelString<'static> {
    CelString::from(split_host_port(&u.host).1.to_string())
}

fn get_escaped_path(u: &Url) -> CelString<'static> {
    CelString::from(u.escaped_path())
}

fn get_query(u: &Url) -> CelMap<'static> {
    let entries: HashMap<CelMapKey<'static>, Box<dyn Val + 'static>> = u
        .query()
        .into_iter()
        .map(|(k, values)| {
            let list: Vec<Box<dyn Val + 'static>> = values
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val + 'static>)
                .collect();
            (
                CelMapKey::String(CelString::from(k)),
                Box::new(CelList::from(list)) as Box<dyn Val + 'static>,
            )
        })
        .collect();
    CelMap::from(entries)
}

/// Registers the library on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(URL.to_owned())?;
    cel::add_overload!(env, fn url: (CelString) -> Result<Url>)?;
    cel::add_overload!(env, fn is_url: (CelString) -> CelBool, name = "isURL")?;
    cel::add_member_overload!(env, fn get_scheme: (Url) -> CelString, name = "getScheme")?;
    cel::add_member_overload!(env, fn get_host: (Url) -> CelString, name = "getHost")?;
    cel::add_member_overload!(env, fn get_hostname: (Url) -> CelString, name = "getHostname")?;
    cel::add_member_overload!(env, fn get_port: (Url) -> CelString, name = "getPort")?;
    cel::add_member_overload!(env, fn get_escaped_path: (Url) -> CelString, name = "getEscapedPath")?;
    cel::add_member_overload!(env, fn get_query: (Url) -> CelMap, name = "getQuery")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{parse, parse_url};

    #[test]
    fn urls_are_parsed_as_gos_net_url_parses_them() {
        let u = parse_url("https://user:pw@example.com:8443/a%2Fb/c?x=1&x=2&y=a+b#frag").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(u.hostname(), "example.com");
        assert_eq!(u.path, "/a/b/c");
        assert_eq!(u.escaped_path(), "/a%2Fb/c");
        assert_eq!(
            u.query(),
            vec![
                ("x".to_string(), vec!["1".to_string(), "2".to_string()]),
                ("y".to_string(), vec!["a b".to_string()])
            ]
        );
        let v6 = parse_url("http://[::1]:80/").unwrap();
        assert_eq!(v6.hostname(), "::1");
        assert_eq!(parse_url("/just/a/path").unwrap().path, "/just/a/path");
        assert_eq!(parse_url("mailto:a@b").unwrap().opaque, "a@b");
        assert_eq!(
            parse_url("example.com").unwrap_err(),
            "URL parse error during conversion from string: parse \"example.com\": invalid URI for request"
        );
        assert_eq!(
            parse_url("https://a b/").unwrap_err(),
            "URL parse error during conversion from string: parse \"https://a b/\": invalid character \" \" in host name"
        );
        assert_eq!(
            parse_url("https://h:x/").unwrap_err(),
            "URL parse error during conversion from string: parse \"https://h:x/\": invalid port \":x\" after host"
        );
        assert_eq!(
            parse_url("/a%zz").unwrap_err(),
            "URL parse error during conversion from string: parse \"/a%zz\": invalid URL escape \"%zz\""
        );
        assert_eq!(
            parse_url(":x").unwrap_err(),
            "URL parse error during conversion from string: parse \":x\": missing protocol scheme"
        );
        assert!(parse("", true).is_err());
    }
}
