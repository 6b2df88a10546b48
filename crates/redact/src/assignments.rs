//! `NAME=value`, `key: value`, `"key": "value"`, `key => value` where the name says the value
//! is a secret: in code, in shells and `.env` files, in YAML, TOML and INI files, in JSON.

use crate::keys::{self, NameUse};
use crate::{is_placeholder, placeholder, split_quotes};
use regex::{Captures, Regex};
use std::sync::LazyLock;

/// The name may be quoted, also JSON-escaped (`\"password\"`); the value is double-,
/// single-, escaped-double-quoted or bare. A bare value may hold `=` after its first
/// character (base64 padding, a second assignment: see [`redact`]).
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?P<key>(?:\\?["'])?[A-Za-z0-9_.\-]*(?:passw|passphrase|pwd|pass|secret|token|key|credential)[A-Za-z0-9_.\-]*(?:\\?["'])?)(?P<sep>[ \t]*(?:=>|:=|[:=])[ \t]*)(?P<val>\\"[^"\\\n]*\\"|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"'`,;&()\[\]{}<>=\\][^\s"'`,;&()\[\]{}<>\\]*)"#,
    )
    .expect("valid ASSIGNMENT regex")
});

/// Redacts every assignment of a secret. A match judged harmless (`token_type: bearer`,
/// `secret_file: x`) is passed over from its value on, not from its end: what follows on the
/// line (`token_type: DB_PASSWORD=hunter2`) is still looked at.
pub(crate) fn redact(text: &str, lower: &str, count: &mut usize) -> String {
    if !["pass", "pwd", "secret", "token", "key", "credential"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return text.to_string();
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        let Some(caps) = ASSIGNMENT.captures_at(text, at) else {
            break;
        };
        let (Some(whole), Some(val)) = (caps.get(0), caps.name("val")) else {
            break;
        };
        match replacement(&caps, text, whole.start(), whole.end()) {
            Some(r) => {
                out.push_str(&text[copied..whole.start()]);
                out.push_str(&r);
                copied = whole.end();
                at = whole.end();
                *count += 1;
            }
            None => at = val.start().max(whole.start() + 1),
        }
    }
    if copied == 0 {
        return text.to_string();
    }
    out.push_str(&text[copied..]);
    out
}

/// Decides whether one `key <sep> value` match is a secret and builds the replacement, keeping
/// key, separator and quotes.
fn replacement(caps: &Captures, text: &str, start: usize, end: usize) -> Option<String> {
    let key_raw = caps.name("key")?.as_str();
    let sep = caps.name("sep")?.as_str();
    let val_raw = caps.name("val")?.as_str();
    let before = &text[..start];
    let after = &text[end..];

    let mut key = key_raw.trim_matches(|c| matches!(c, '"' | '\'' | '\\'));
    // In JSON-escaped text `\nDB_PASSWORD=x` the key starts at the `n` of the escape: drop it
    // so the key is judged as written.
    if before.ends_with('\\') && key.starts_with(['n', 't', 'r']) {
        key = &key[1..];
    }
    if key.len() > 64 {
        return None;
    }
    let env = is_env_name(key, sep);
    let usage = if key.starts_with('-') {
        NameUse::Option
    } else if env {
        NameUse::Env
    } else if alone_on_line(before, after) {
        NameUse::ConfigLine
    } else {
        NameUse::Code
    };
    let kind = keys::secret_kind(key.trim_start_matches('-'), usage)?;

    let (open, inner, close) = split_quotes(val_raw);
    if is_placeholder(inner) || looks_like_a_path(inner) || is_number(inner, kind) {
        return None;
    }
    // `${AUTH_TOKEN:0:5}`: a shell expansion; `Error::Token => ...`: a path in code.
    if before.ends_with("${") || before.ends_with('$') || before.ends_with("::") {
        return None;
    }
    // `"invalid token"`: words, not a machine's value; a passphrase may have spaces.
    if kind != "password" && inner.contains(' ') {
        return None;
    }
    // `TRUNCATE_TOKEN = "truncate_token"`: a name, not a value.
    if keys::segments(inner) == keys::segments(key.trim_start_matches('-')) {
        return None;
    }
    if open.is_empty() {
        // `token = next_token(...)`, `x = cfg[...]`, `t: Option<...>`.
        if matches!(after.chars().next(), Some('(' | '[' | '<' | '{')) {
            return None;
        }
        // `BAD_KEY: u128 = 5` and `token: &str = x` declare a type; `PrivateKey::new` is a
        // path; `{token:?}` formats.
        // `password: *const u8`, `token: i32`: a type.
        if sep.trim() == ":" {
            let rest = after.trim_start_matches([' ', '\t']);
            if (rest.starts_with('=') && !rest.starts_with("==") && !rest.starts_with("=>"))
                || inner.starts_with([':', '*', '&'])
                || is_primitive_type(inner)
            {
                return None;
            }
        }
        if !inner.chars().any(char::is_alphanumeric) || (!env && inner.chars().count() < 3) {
            return None;
        }
        if !env
            && !key.starts_with('-')
            && !literal_on_its_line(key, sep, inner, kind, before, after)
        {
            return None;
        }
    }
    Some(format!("{key_raw}{sep}{open}{}{close}", placeholder(kind)))
}

/// `.env`, shell and YAML-with-capitals style (`DB_PASSWORD=x`, `API_KEY: x`), or a command's
/// option (`--password=x`): there a bare value is the literal secret, not code.
fn is_env_name(key: &str, sep: &str) -> bool {
    if key.starts_with('-') {
        return true;
    }
    let capitals = key.bytes().any(|b| b.is_ascii_alphabetic())
        && key
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
    if !capitals {
        return false;
    }
    let op = sep.trim();
    op == ":" || (op == "=" && sep == "=")
}

/// Whether a bare value is a literal: on a line of a config file (YAML, INI, `.properties`)
/// that holds this one entry and nothing else, a word is the value itself; in code it is a
/// variable (`password = user_password`, `token: str`).
fn literal_on_its_line(
    key: &str,
    sep: &str,
    value: &str,
    kind: &str,
    before: &str,
    after: &str,
) -> bool {
    if !looks_like_code_reference(value) {
        return true;
    }
    if !alone_on_line(before, after) {
        return false;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // A PIN or a numeric password; a number next to a token or secret is a setting.
        return kind == "password" && value.len() >= 4;
    }
    if value.contains(['.', ':']) || is_type_or_keyword(value) {
        return false;
    }
    let same_as_key = keys::segments(value) == keys::segments(key.trim_start_matches('-'));
    if same_as_key {
        return false;
    }
    // `password = user_password` or `token = nextToken`: with `=` a word in code's own shape
    // is a variable. With `:` (YAML, `.properties`) it is the value.
    let code_shaped = value.contains('_')
        || value.chars().skip(1).any(|c| c.is_ascii_uppercase())
            && value.chars().any(|c| c.is_ascii_lowercase());
    sep.trim() == ":" || !code_shaped
}

/// Whether the entry is alone on its line (after an optional `- `, `export ` or `#`, before
/// an optional comment): a line of a config file, not code.
fn alone_on_line(before: &str, after: &str) -> bool {
    let line_start = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    let line_end = &after[..after.find('\n').unwrap_or(after.len())];
    matches!(line_start.trim(), "" | "-" | "#" | "export" | "set")
        && (line_end.trim().is_empty() || line_end.trim_start().starts_with('#'))
}

/// Type names and keywords a field or argument is declared with (`password: str`,
/// `token: String`, `secret = None`).
fn is_type_or_keyword(v: &str) -> bool {
    const WORDS: &[&str] = &[
        "str",
        "string",
        "bytes",
        "int",
        "integer",
        "bool",
        "boolean",
        "number",
        "any",
        "unknown",
        "object",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "undefined",
        "required",
        "optional",
        "secret",
        "secretstr",
        "secretstring",
        "void",
        "self",
        "this",
        "char",
        "text",
        "varchar",
        "uuid",
        "password",
        "token",
        "hidden",
        "masked",
        "redacted",
        "empty",
        "default",
        "changeme",
        "todo",
        "tbd",
        "pass",
        "omitted",
        "unset",
        "sensitive",
    ];
    WORDS.contains(&v.to_ascii_lowercase().as_str())
}

/// `i32`, `u8`, `f64`, `usize`: a number type, in Rust and in many languages' FFI.
fn is_primitive_type(v: &str) -> bool {
    let Some(width) = v.strip_prefix(['i', 'u', 'f']) else {
        return false;
    };
    matches!(width, "8" | "16" | "32" | "64" | "128" | "size")
}

/// Bare values that are code, not secrets: numbers, plain identifiers (`token_from_env`,
/// `String`, `None`), dotted paths (`os.environ`, `settings.SECRET_KEY`, `std::env`).
fn looks_like_code_reference(v: &str) -> bool {
    // `process.env.API_KEY!`, `config?.token`: TypeScript's assertions and optional chains.
    let v = &v.replace(['!', '?'], "");
    if v.is_empty() {
        return false;
    }
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    if v.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
        return true;
    }
    let segments: Vec<&str> = v.split(['.', ':']).filter(|s| !s.is_empty()).collect();
    segments.len() > 1
        && segments.iter().all(|s| {
            s.len() <= 30
                && s.bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

/// `SSH_KEY=~/.ssh/id_ed25519`, `CREDENTIALS=/run/secrets/gcp.json`: a secret's file, not the
/// secret.
fn looks_like_a_path(v: &str) -> bool {
    (v.starts_with('/') || v.starts_with("~/") || v.starts_with("./") || v.starts_with("../"))
        && v.len() >= 3
        && !v.contains(char::is_whitespace)
}

/// A number is a setting (`"Secrets": -1.0`, `TOKEN_BUDGET=4096`), unless it is long enough
/// to be a PIN given as a password.
fn is_number(v: &str, kind: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    let numeric = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && digits.bytes().any(|b| b.is_ascii_digit());
    numeric && !(kind == "password" && digits.len() >= 4 && !v.starts_with('-'))
}
