//! Just enough of CEL's parser for `shardSelector`: kube-apiserver parses the selector as a
//! CEL expression (cel-go's parser, no macros) and then walks the tree, so what matters is the
//! tree's shape (call, identifier, select, literal...) and each node's kind, which the
//! walker's error messages name. This parser builds the same tree for CEL's expression
//! grammar (ternary, `||`, `&&`, relations, arithmetic, unary, member and index access, calls,
//! lists, maps, messages and literals).
//!
//! Deliberate difference: a *syntax* error is reported as `Syntax error: ...` with this
//! parser's own description; cel-go's come from an ANTLR grammar (`mismatched input 'x'
//! expecting {...}`) whose expected-token sets are not reproduced.

/// cel-go's `ast.ExprKind`, printed by kube-apiserver as its number (`%v` of an int type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExprKind {
    Call = 1,
    Ident = 3,
    List = 4,
    Literal = 5,
    Map = 6,
    Select = 7,
    Struct = 8,
}

/// A literal's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lit {
    Str(String),
    Int(i64),
    Uint(u64),
    Double(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    Null,
}

impl Lit {
    /// Go's `%T` of the literal's `Value()` (cel-go's native values).
    pub(crate) fn go_type(&self) -> &'static str {
        match self {
            Lit::Str(_) => "string",
            Lit::Int(_) => "int64",
            Lit::Uint(_) => "uint64",
            Lit::Double(_) => "float64",
            Lit::Bool(_) => "bool",
            Lit::Bytes(_) => "[]uint8",
            Lit::Null => "structpb.NullValue",
        }
    }
}

/// A CEL expression tree node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    /// A call: a function (`shardRange`) or an operator (`_||_`, `_&&_`, `_[_]`...).
    Call {
        function: String,
        args: Vec<Expr>,
    },
    Ident(String),
    Select {
        operand: Box<Expr>,
        field: String,
    },
    Literal(Lit),
    List,
    Map,
    Struct,
}

impl Expr {
    pub(crate) fn kind(&self) -> ExprKind {
        match self {
            Expr::Call { .. } => ExprKind::Call,
            Expr::Ident(_) => ExprKind::Ident,
            Expr::Select { .. } => ExprKind::Select,
            Expr::Literal(_) => ExprKind::Literal,
            Expr::List => ExprKind::List,
            Expr::Map => ExprKind::Map,
            Expr::Struct => ExprKind::Struct,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Lit(Lit),
    Op(&'static str),
}

/// Parses `src` as a CEL expression; `Err` holds a syntax error message.
pub(crate) fn parse(src: &str) -> Result<Expr, String> {
    let toks = lex(src)?;
    let mut p = Parser { toks, pos: 0 };
    let e = p.expr()?;
    match p.toks.get(p.pos) {
        None => Ok(e),
        Some(t) => Err(format!(
            "Syntax error: extraneous input {}",
            describe(Some(t))
        )),
    }
}

fn describe(t: Option<&Tok>) -> String {
    match t {
        None => "'<EOF>'".into(),
        Some(Tok::Ident(s)) => format!("'{s}'"),
        Some(Tok::Op(o)) => format!("'{o}'"),
        Some(Tok::Lit(l)) => format!("'{l:?}'"),
    }
}

const OPS: [&str; 24] = [
    "||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", ".", ",",
    "(", ")", "[", "]", "{", "}",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        // string and bytes literals, with an optional r/b prefix
        let (raw, bytes, q) = match (c, chars.get(i + 1), chars.get(i + 2)) {
            ('\'' | '"', _, _) => (false, false, i),
            ('r' | 'R', Some('\'' | '"'), _) => (true, false, i + 1),
            ('b' | 'B', Some('\'' | '"'), _) => (false, true, i + 1),
            ('r' | 'R', Some('b' | 'B'), Some('\'' | '"'))
            | ('b' | 'B', Some('r' | 'R'), Some('\'' | '"')) => (true, true, i + 2),
            _ => (false, false, usize::MAX),
        };
        if q != usize::MAX {
            let (s, next) = string_lit(&chars, q, raw)?;
            out.push(Tok::Lit(if bytes {
                Lit::Bytes(s.into_bytes())
            } else {
                Lit::Str(s)
            }));
            i = next;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let (lit, next) = number(&chars, i)?;
            out.push(Tok::Lit(lit));
            i = next;
            continue;
        }
        if c == '_' || c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i] == '_' || chars[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(match word.as_str() {
                "true" => Tok::Lit(Lit::Bool(true)),
                "false" => Tok::Lit(Lit::Bool(false)),
                "null" => Tok::Lit(Lit::Null),
                "in" => Tok::Op("in"),
                _ => Tok::Ident(word),
            });
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        match OPS.iter().find(|op| rest.starts_with(**op)) {
            Some(op) => {
                out.push(Tok::Op(op));
                i += op.len();
            }
            None => return Err(format!("Syntax error: token recognition error at: '{c}'")),
        }
    }
    Ok(out)
}

fn string_lit(chars: &[char], q: usize, raw: bool) -> Result<(String, usize), String> {
    let quote = chars[q];
    let triple = chars.get(q + 1) == Some(&quote) && chars.get(q + 2) == Some(&quote);
    let mut i = q + if triple { 3 } else { 1 };
    let mut s = String::new();
    loop {
        let Some(&c) = chars.get(i) else {
            return Err("Syntax error: token recognition error at: unterminated string".into());
        };
        if triple {
            if c == quote && chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote) {
                return Ok((s, i + 3));
            }
        } else if c == quote {
            return Ok((s, i + 1));
        } else if c == '\n' || c == '\r' {
            return Err("Syntax error: token recognition error at: newline in string".into());
        }
        if c == '\\' && !raw {
            let e = chars
                .get(i + 1)
                .copied()
                .ok_or("Syntax error: bad escape")?;
            i += 2;
            match e {
                'n' => s.push('\n'),
                't' => s.push('\t'),
                'r' => s.push('\r'),
                'a' => s.push('\u{7}'),
                'b' => s.push('\u{8}'),
                'f' => s.push('\u{c}'),
                'v' => s.push('\u{b}'),
                '\\' | '\'' | '"' | '`' | '?' => s.push(e),
                'x' | 'X' | 'u' | 'U' => {
                    let n = match e {
                        'x' | 'X' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = chars
                        .get(i..i + n)
                        .ok_or("Syntax error: bad escape")?
                        .iter()
                        .collect();
                    let v =
                        u32::from_str_radix(&hex, 16).map_err(|_| "Syntax error: bad escape")?;
                    s.push(char::from_u32(v).ok_or("Syntax error: bad escape")?);
                    i += n;
                }
                '0'..='3' => {
                    let oct: String = chars
                        .get(i - 1..i + 2)
                        .ok_or("Syntax error: bad escape")?
                        .iter()
                        .collect();
                    let v = u32::from_str_radix(&oct, 8).map_err(|_| "Syntax error: bad escape")?;
                    s.push(char::from_u32(v).ok_or("Syntax error: bad escape")?);
                    i += 2;
                }
                _ => return Err(format!("Syntax error: invalid escape sequence \\{e}")),
            }
            continue;
        }
        s.push(c);
        i += 1;
    }
}

fn number(chars: &[char], mut i: usize) -> Result<(Lit, usize), String> {
    let start = i;
    if chars[i] == '0' && matches!(chars.get(i + 1), Some('x' | 'X')) {
        i += 2;
        let h = i;
        while i < chars.len() && chars[i].is_ascii_hexdigit() {
            i += 1;
        }
        let digits: String = chars[h..i].iter().collect();
        let unsigned = matches!(chars.get(i), Some('u' | 'U'));
        let v =
            u64::from_str_radix(&digits, 16).map_err(|_| "Syntax error: invalid int literal")?;
        return Ok(if unsigned {
            (Lit::Uint(v), i + 1)
        } else {
            (
                Lit::Int(i64::try_from(v).map_err(|_| "Syntax error: invalid int literal")?),
                i,
            )
        });
    }
    while i < chars.len() && chars[i].is_ascii_digit() {
        i += 1;
    }
    let mut float = false;
    if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
        float = true;
        i += 1;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        float = true;
        i += 1;
        if matches!(chars.get(i), Some('+' | '-')) {
            i += 1;
        }
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
    }
    let text: String = chars[start..i].iter().collect();
    if float {
        let v = text
            .parse::<f64>()
            .map_err(|_| "Syntax error: invalid double literal")?;
        return Ok((Lit::Double(v), i));
    }
    if matches!(chars.get(i), Some('u' | 'U')) {
        let v = text
            .parse::<u64>()
            .map_err(|_| "Syntax error: invalid uint literal")?;
        return Ok((Lit::Uint(v), i + 1));
    }
    let v = text
        .parse::<i64>()
        .map_err(|_| "Syntax error: invalid int literal")?;
    Ok((Lit::Int(v), i))
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

/// A call of `function` (a function or an operator such as `_||_`) on `args`.
pub(crate) fn call(function: &str, args: Vec<Expr>) -> Expr {
    Expr::Call {
        function: function.to_owned(),
        args,
    }
}

impl Parser {
    fn peek_op(&self, op: &str) -> bool {
        matches!(self.toks.get(self.pos), Some(Tok::Op(o)) if *o == op)
    }

    fn eat(&mut self, op: &str) -> bool {
        let yes = self.peek_op(op);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(format!(
                "Syntax error: mismatched input {} expecting '{op}'",
                describe(self.toks.get(self.pos))
            ))
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let cond = self.binary(0)?;
        if self.eat("?") {
            let a = self.binary(0)?;
            self.expect(":")?;
            let b = self.expr()?;
            return Ok(call("_?_:_", vec![cond, a, b]));
        }
        Ok(cond)
    }

    /// Binary operators by precedence level: `||`, `&&`, relations, `+ -`, `* / %`.
    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        const LEVELS: [&[(&str, &str)]; 5] = [
            &[("||", "_||_")],
            &[("&&", "_&&_")],
            &[
                ("==", "_==_"),
                ("!=", "_!=_"),
                ("<=", "_<=_"),
                (">=", "_>=_"),
                ("<", "_<_"),
                (">", "_>_"),
                ("in", "@in"),
            ],
            &[("+", "_+_"), ("-", "_-_")],
            &[("*", "_*_"), ("/", "_/_"), ("%", "_%_")],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        'more: loop {
            for (op, name) in LEVELS[level] {
                if self.eat(op) {
                    let right = self.binary(level + 1)?;
                    left = call(name, vec![left, right]);
                    continue 'more;
                }
            }
            return Ok(left);
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("!") {
            return Ok(call("!_", vec![self.unary()?]));
        }
        if self.eat("-") {
            return Ok(match self.unary()? {
                Expr::Literal(Lit::Int(v)) => Expr::Literal(Lit::Int(-v)),
                Expr::Literal(Lit::Double(v)) => Expr::Literal(Lit::Double(-v)),
                e => call("-_", vec![e]),
            });
        }
        self.member()
    }

    fn member(&mut self) -> Result<Expr, String> {
        let mut e = self.primary()?;
        loop {
            if self.eat(".") {
                let field = match self.toks.get(self.pos) {
                    Some(Tok::Ident(f)) => f.clone(),
                    t => {
                        return Err(format!(
                            "Syntax error: mismatched input {} expecting IDENTIFIER",
                            describe(t)
                        ));
                    }
                };
                self.pos += 1;
                if self.eat("(") {
                    let mut args = vec![e];
                    args.extend(self.args(")")?);
                    e = call(&field, args);
                } else {
                    e = Expr::Select {
                        operand: Box::new(e),
                        field,
                    };
                }
            } else if self.eat("[") {
                let index = self.expr()?;
                self.expect("]")?;
                e = call("_[_]", vec![e, index]);
            } else if self.peek_op("{") && matches!(e, Expr::Ident(_) | Expr::Select { .. }) {
                self.pos += 1;
                self.entries("}")?;
                e = Expr::Struct;
            } else {
                return Ok(e);
            }
        }
    }

    fn args(&mut self, close: &str) -> Result<Vec<Expr>, String> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(close) {
                return Ok(args);
            }
            if self.pos >= self.toks.len() {
                // ANTLR's single-token insertion: the input ends where only the closing
                // token could complete the list (kube-apiserver 1.36.3, e2e/diff
                // shard-invalid).
                return Err(format!(
                    "Syntax error: missing '{close}' at {}",
                    describe(None)
                ));
            }
            self.expect(",")?;
            if self.eat(close) {
                return Ok(args);
            }
        }
    }

    fn entries(&mut self, close: &str) -> Result<(), String> {
        if self.eat(close) {
            return Ok(());
        }
        loop {
            self.expr()?;
            self.expect(":")?;
            self.expr()?;
            if self.eat(close) {
                return Ok(());
            }
            self.expect(",")?;
            if self.eat(close) {
                return Ok(());
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        match t {
            Some(Tok::Lit(l)) => Ok(Expr::Literal(l)),
            Some(Tok::Ident(name)) => {
                if self.eat("(") {
                    Ok(call(&name, self.args(")")?))
                } else {
                    Ok(Expr::Ident(name))
                }
            }
            Some(Tok::Op("(")) => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Op("[")) => {
                self.args("]")?;
                Ok(Expr::List)
            }
            Some(Tok::Op("{")) => {
                self.entries("}")?;
                Ok(Expr::Map)
            }
            Some(Tok::Op(".")) => match self.toks.get(self.pos).cloned() {
                // a leading dot: a fully qualified name
                Some(Tok::Ident(name)) => {
                    self.pos += 1;
                    if self.eat("(") {
                        Ok(call(&name, self.args(")")?))
                    } else {
                        Ok(Expr::Ident(format!(".{name}")))
                    }
                }
                t => Err(format!(
                    "Syntax error: mismatched input {} expecting IDENTIFIER",
                    describe(t.as_ref())
                )),
            },
            t => {
                self.pos -= 1;
                Err(format!(
                    "Syntax error: mismatched input {} expecting an expression",
                    describe(t.as_ref())
                ))
            }
        }
    }
}
