//! The label selector grammar (apimachinery's `labels.Parse`), as a lexer and a recursive
//! descent parser over its tokens.
//!
//! ```text
//! selector    := "" | requirement ("," requirement)*
//! requirement := ["!"] KEY
//!              | KEY ("=" | "==" | "!=" | ">" | "<") [VALUE]
//!              | KEY ("in" | "notin") "(" [VALUE ("," VALUE)*] ")"
//! ```
//! Whitespace separates tokens and is otherwise ignored; `in` and `notin` are keywords only
//! where an operator is expected (`notin=in` is a valid equality).

use super::{LabelSelectorError, Operator, Requirement};

/// A token of the selector language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits `input` into tokens, ending with [`Token::EndOfString`]. Identifiers are runs of
/// anything that is neither whitespace nor special; special symbols take the longest operator
/// they spell (`!=` rather than `!`, then `=`).
pub(super) fn lex(input: &str) -> Vec<(Token, &str)> {
    let bytes = input.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos == bytes.len() {
            tokens.push((Token::EndOfString, ""));
            return tokens;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // Every single special symbol is a token; extend while the longer run still is one.
            let mut end = pos + 1;
            while end < bytes.len()
                && is_special(bytes[end])
                && keyword(&input[start..=end]).is_some()
            {
                end += 1;
            }
            let literal = &input[start..end];
            tokens.push((keyword(literal).unwrap_or(Token::Identifier), literal));
            pos = end;
        } else {
            while pos < bytes.len() && !is_whitespace(bytes[pos]) && !is_special(bytes[pos]) {
                pos += 1;
            }
            let literal = &input[start..pos];
            tokens.push((keyword(literal).unwrap_or(Token::Identifier), literal));
        }
    }
}

/// Where the parser is: `in`/`notin` are operators only after a key.
#[derive(Clone, Copy)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    tokens: Vec<(Token, &'a str)>,
    position: usize,
}

fn syntax(found: &str, expected: &str) -> LabelSelectorError {
    LabelSelectorError::Syntax(format!("found '{found}', expected: {expected}"))
}

impl<'a> Parser<'a> {
    fn adjust(token: Token, context: Context) -> Token {
        match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => token,
        }
    }

    fn lookahead(&self, context: Context) -> (Token, &'a str) {
        // The token list always ends with EndOfString and parsing stops there.
        let (token, literal) = self
            .tokens
            .get(self.position)
            .copied()
            .unwrap_or((Token::EndOfString, ""));
        (Self::adjust(token, context), literal)
    }

    fn consume(&mut self, context: Context) -> (Token, &'a str) {
        let item = self.lookahead(context);
        if self.position < self.tokens.len() {
            self.position += 1;
        }
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, LabelSelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    requirements.push(self.parse_requirement()?);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, next_literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(syntax(next_literal, "identifier after ','"));
                            }
                        }
                        _ => return Err(syntax(literal, "',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => return Err(syntax(literal, "!, identifier, or 'end of string'")),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, LabelSelectorError> {
        let (mut token, mut literal) = self.consume(Context::Values);
        let negated = token == Token::DoesNotExist;
        if negated {
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(syntax(literal, "identifier"));
        }
        let key = literal;
        super::validate_key(key)?;
        let (next, _) = self.lookahead(Context::Values);
        if negated {
            return Requirement::new(key, Operator::DoesNotExist, Vec::<String>::new());
        }
        if matches!(next, Token::EndOfString | Token::Comma) {
            return Requirement::new(key, Operator::Exists, Vec::<String>::new());
        }
        let operator = self.parse_operator()?;
        let mut values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        values.sort_unstable();
        values.dedup();
        Requirement::new(key, operator, values)
    }

    fn parse_operator(&mut self) -> Result<Operator, LabelSelectorError> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(syntax(literal, "in, notin, =, ==, !=, gt, lt")),
        })
    }

    /// `( v1, v2 )`; `()` and empty list items stand for the empty value.
    fn parse_values(&mut self) -> Result<Vec<String>, LabelSelectorError> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(LabelSelectorError::Syntax(format!(
                "found '{literal}' expected: '('"
            )));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (token, found) = self.consume(Context::Values);
                if token != Token::ClosedPar {
                    return Err(syntax(found, "')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(syntax(literal, "',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, LabelSelectorError> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.push(literal.to_owned());
                    let (next, next_literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(syntax(next_literal, "',' or ')'")),
                    }
                }
                Token::Comma => {
                    // "(," ",," and ",)" each contribute the empty value.
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            values.push(String::new());
                            return Ok(values);
                        }
                        Token::Comma => values.push(String::new()),
                        _ => {}
                    }
                }
                _ => return Err(syntax(literal, "',', or identifier")),
            }
        }
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; nothing at all means the empty value.
    fn parse_exact_value(&mut self) -> Result<Vec<String>, LabelSelectorError> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal.to_owned()])
        } else {
            Err(syntax(literal, "identifier"))
        }
    }
}

/// Parses a selector into its requirements, in the order written.
pub(super) fn parse(input: &str) -> Result<Vec<Requirement>, LabelSelectorError> {
    Parser {
        tokens: lex(input),
        position: 0,
    }
    .parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apimachinery's `TestLexer`: the longest valid token; non-special characters form
    /// identifiers.
    #[test]
    fn test_lexer() {
        let cases = [
            ("", Token::EndOfString),
            (",", Token::Comma),
            ("notin", Token::NotIn),
            ("in", Token::In),
            ("=", Token::Equals),
            ("==", Token::DoubleEquals),
            (">", Token::GreaterThan),
            ("<", Token::LessThan),
            ("!", Token::DoesNotExist),
            ("!=", Token::NotEquals),
            ("(", Token::OpenPar),
            (")", Token::ClosedPar),
            ("~", Token::Identifier),
            ("||", Token::Identifier),
        ];
        for (input, want) in cases {
            let (token, literal) = lex(input)[0];
            assert_eq!(token, want, "{input:?}");
            assert_eq!(literal, input);
        }
    }

    /// apimachinery's `TestLexerSequence` and `TestParserLookahead`.
    #[test]
    fn test_lexer_sequence() {
        use Token::*;
        let cases: [(&str, &[Token]); 10] = [
            (
                "key in ( value )",
                &[Identifier, In, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key notin ( value )",
                &[Identifier, NotIn, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key in ( value1, value2 )",
                &[
                    Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar,
                ],
            ),
            ("key", &[Identifier]),
            ("!key", &[DoesNotExist, Identifier]),
            ("()", &[OpenPar, ClosedPar]),
            (
                "x in (),y",
                &[Identifier, In, OpenPar, ClosedPar, Comma, Identifier],
            ),
            (
                "== != (), = notin",
                &[
                    DoubleEquals,
                    NotEquals,
                    OpenPar,
                    ClosedPar,
                    Comma,
                    Equals,
                    NotIn,
                ],
            ),
            ("key>2", &[Identifier, GreaterThan, Identifier]),
            ("key<1", &[Identifier, LessThan, Identifier]),
        ];
        for (input, want) in cases {
            let tokens: Vec<Token> = lex(input).into_iter().map(|(t, _)| t).collect();
            let (last, rest) = tokens.split_last().unwrap();
            assert_eq!(*last, EndOfString, "{input:?}");
            assert_eq!(rest, want, "{input:?}");
        }
    }
}
