//! Secret redaction: secrets must never reach the store (or an embedding).
//!
//! Everything captured is tool output from a developer's machine: `.env`
//! dumps, `git remote -v`, `curl -H "Authorization: ..."`, config files.
//! Each recognised secret is replaced by `[REDACTED:kind]`, keeping enough
//! context (the key name, the URL's user and host) for the memory to stay
//! useful. `<private>...</private>` spans are dropped entirely: that is the
//! user's explicit "do not remember this".
//!
//! The patterns favour precision on ordinary code: a coding agent's memory
//! is mostly code, and `fn parse(token: &str)` or `max_tokens = 4096` must
//! survive intact. Known token formats are matched by shape anywhere;
//! generic `KEY=value` assignments are matched by key name and filtered
//! with value heuristics (placeholders, code references).

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Result of [`redact`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Redacted {
    /// The text with secrets replaced and private spans removed.
    pub text: String,
    /// Number of replacements made, `<private>` spans included.
    pub count: usize,
}

/// The placeholder written in place of a secret.
fn placeholder(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

static PRIVATE_CLOSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<private(?:\s[^>]*)?>.*?</private\s*>").expect("valid PRIVATE_CLOSED regex")
});

static PRIVATE_UNCLOSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<private(?:\s[^>]*)?>.*\z").expect("valid PRIVATE_UNCLOSED regex")
});

/// Removes `<private>...</private>` spans (multi-line, case-insensitive).
/// An unclosed `<private>` removes everything to the end: when in doubt,
/// forget. Returns the text and the number of spans removed.
pub fn drop_private(text: &str) -> (String, usize) {
    if !text.to_ascii_lowercase().contains("<private") {
        return (text.to_string(), 0);
    }
    let mut count = 0;
    let closed = PRIVATE_CLOSED.replace_all(text, |_: &Captures| {
        count += 1;
        ""
    });
    let rest = PRIVATE_UNCLOSED.replace_all(&closed, |_: &Captures| {
        count += 1;
        ""
    });
    (rest.into_owned(), count)
}

/// A shape-based rule. The regex must have a `val` group (the secret);
/// optional `pre`/`post` groups are kept around the placeholder.
struct Rule {
    kind: &'static str,
    re: Regex,
    /// Extra check on the `val` text; false keeps the match untouched.
    accept: fn(&str) -> bool,
}

fn always(_: &str) -> bool {
    true
}

/// Random-looking tokens mix letters and digits; this keeps prose such as
/// `sk-learn-style-pipelines` from matching key shapes.
fn has_letter_and_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Bearer tokens are random; `Bearer authentication-scheme` is prose.
fn looks_random(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
        || (s.bytes().any(|b| b.is_ascii_uppercase()) && s.bytes().any(|b| b.is_ascii_lowercase()))
}

fn not_placeholder(s: &str) -> bool {
    !is_placeholder(s)
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |kind: &'static str, pattern: &str, accept: fn(&str) -> bool| Rule {
        kind,
        re: Regex::new(pattern).expect("valid redaction rule regex"),
        accept,
    };
    vec![
        // Whole PEM blocks, also when JSON-escaped (`\n` stays literal).
        rule(
            "private_key",
            r"(?s)(?P<val>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)",
            always,
        ),
        // Truncated PEM block: redact the base64 body that follows.
        rule(
            "private_key",
            r"(?P<val>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\\[rn]|[A-Za-z0-9+/=\s:,\-])*)",
            always,
        ),
        rule(
            "anthropic_key",
            r"\b(?P<val>sk-ant-[A-Za-z0-9_\-]{20,})",
            always,
        ),
        rule(
            "openai_key",
            r"\b(?P<val>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})",
            has_letter_and_digit,
        ),
        rule(
            "github_token",
            r"\b(?P<val>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
            always,
        ),
        rule(
            "gitlab_token",
            r"\b(?P<val>glpat-[A-Za-z0-9_\-]{20,})",
            always,
        ),
        rule(
            "slack_token",
            r"\b(?P<val>xox[abprs]-[A-Za-z0-9\-]{10,})",
            has_letter_and_digit,
        ),
        rule(
            "aws_access_key_id",
            r"\b(?P<val>(?:AKIA|ASIA)[A-Z0-9]{16})\b",
            always,
        ),
        rule(
            "google_api_key",
            r"\b(?P<val>AIza[0-9A-Za-z_\-]{35})",
            always,
        ),
        rule(
            "stripe_key",
            r"\b(?P<val>(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,})",
            always,
        ),
        rule(
            "jwt",
            r"\b(?P<val>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})",
            always,
        ),
        rule(
            "aws_secret_access_key",
            r#"(?i)(?P<pre>\baws_?secret_?access_?key\\?["']?[ \t]*[=:][ \t]*\\?["']?)(?P<val>[A-Za-z0-9/+=]{30,})"#,
            always,
        ),
        rule(
            "bearer_token",
            r"(?i)(?P<pre>\bbearer[ \t]+)(?P<val>[A-Za-z0-9\-._~+/]{16,}=*)",
            looks_random,
        ),
        rule(
            "basic_auth",
            r#"(?i)(?P<pre>\bauthorization\\?["']?[ \t]*[:=][ \t]*\\?["']?basic[ \t]+)(?P<val>[A-Za-z0-9+/]{8,}={0,2})"#,
            always,
        ),
        // scheme://user:PASSWORD@host; the user may be empty (redis://:pw@host).
        rule(
            "password",
            r#"(?P<pre>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'"]*:)(?P<val>[^\s@/'"]+)(?P<post>@)"#,
            not_placeholder,
        ),
    ]
});

/// `key = value` / `key: value` / `"key": "value"` / `key => value` where
/// the key mentions a secret. The key may be quoted, also JSON-escaped
/// (`\"password\"`); the value is double-, single-, escaped-double-quoted
/// or bare. Key names are validated further by [`secret_kind_for_key`].
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?P<key>(?:\\?["'])?[A-Za-z0-9_.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credential|passphrase)[A-Za-z0-9_.\-]*(?:\\?["'])?)(?P<sep>[ \t]*(?:=>|:=|[:=])[ \t]*)(?P<val>\\"[^"\\\n]*\\"|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"'`,;&()\[\]{}<>=\\][^\s"'`,;&()\[\]{}<>\\]*)"#,
    )
    .expect("valid ASSIGNMENT regex")
});

/// Redacts secrets in `text` (see the module docs for what is covered).
///
/// Idempotent: placeholders are never redacted again, so running it twice
/// (before and after JSON extraction) does not double count.
pub fn redact(text: &str) -> Redacted {
    let (mut current, mut count) = drop_private(text);
    for rule in RULES.iter() {
        current = apply_rule(&current, rule, &mut count);
    }
    current = redact_assignments(&current, &mut count);
    Redacted {
        text: current,
        count,
    }
}

fn apply_rule(text: &str, rule: &Rule, count: &mut usize) -> String {
    rule.re
        .replace_all(text, |caps: &Captures| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            let val = caps.name("val").map_or("", |m| m.as_str());
            if val.starts_with("[REDACTED") || !(rule.accept)(val) {
                return whole.to_string();
            }
            *count += 1;
            let pre = caps.name("pre").map_or("", |m| m.as_str());
            let post = caps.name("post").map_or("", |m| m.as_str());
            format!("{pre}{}{post}", placeholder(rule.kind))
        })
        .into_owned()
}

fn redact_assignments(text: &str, count: &mut usize) -> String {
    ASSIGNMENT
        .replace_all(text, |caps: &Captures| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            let (start, end) = caps
                .get(0)
                .map_or((0, text.len()), |m| (m.start(), m.end()));
            match assignment_replacement(caps, &text[..start], &text[end..]) {
                Some(replacement) => {
                    *count += 1;
                    replacement
                }
                None => whole.to_string(),
            }
        })
        .into_owned()
}

/// Decides whether one `key <sep> value` match is a secret and builds the
/// replacement, keeping key, separator and quotes. `before`/`after` are the
/// text around the match.
fn assignment_replacement(caps: &Captures, before: &str, after: &str) -> Option<String> {
    let key_raw = caps.name("key")?.as_str();
    let sep = caps.name("sep")?.as_str();
    let val_raw = caps.name("val")?.as_str();

    let mut key = key_raw.trim_matches(|c| matches!(c, '"' | '\'' | '\\'));
    // In JSON-escaped text `\nDB_PASSWORD=x` the key regex starts at the
    // `n` of the escape: drop it so the key is judged as written.
    if before.ends_with('\\') && key.starts_with(['n', 't', 'r']) {
        key = &key[1..];
    }
    if key.len() > 64 {
        return None;
    }
    let kind = secret_kind_for_key(key)?;

    let (open, inner, close) = split_quotes(val_raw);
    if is_placeholder(inner) {
        return None;
    }
    let quoted = !open.is_empty();
    if !quoted {
        // `token = next_token(...)`, `x = cfg[...]`, `t: Option<...>`.
        if matches!(after.chars().next(), Some('(' | '[' | '<' | '{')) {
            return None;
        }
        if !is_env_style(key, sep) && looks_like_code_reference(inner) {
            return None;
        }
    }
    Some(format!("{key_raw}{sep}{open}{}{close}", placeholder(kind)))
}

/// The redaction kind for a structured field (a JSON key and its string value) whose key names
/// a secret holder (`"password": "..."`, `"api_key": "..."`), unless the value is a placeholder.
pub fn secret_field(key: &str, value: &str) -> Option<&'static str> {
    if key.len() > 64 || is_placeholder(value) {
        return None;
    }
    secret_kind_for_key(key)
}

/// Splits surrounding quotes off a value: `"x"`, `'x'`, `\"x\"` or bare.
fn split_quotes(val: &str) -> (&str, &str, &str) {
    for q in ["\\\"", "\"", "'"] {
        if val.len() >= 2 * q.len() && val.starts_with(q) && val.ends_with(q) {
            return (q, &val[q.len()..val.len() - q.len()], q);
        }
    }
    ("", val, "")
}

/// `.env` / shell / YAML-with-CONSTANT-keys / CLI flag style: here a bare
/// value is the literal secret, not a code expression.
fn is_env_style(key: &str, sep: &str) -> bool {
    if key.starts_with('-') {
        return true; // --password=hunter2
    }
    let constant_key = key.bytes().any(|b| b.is_ascii_alphabetic())
        && key
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
    if !constant_key {
        return false;
    }
    let op = sep.trim();
    op == ":" || (op == "=" && sep == "=")
}

/// Bare values that are code, not secrets: numbers, plain identifiers
/// (`token_from_env`, `String`, `None`), dotted paths (`os.environ`,
/// `settings.SECRET_KEY`, `std::env`).
fn looks_like_code_reference(v: &str) -> bool {
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

/// Values that are obviously not secrets: empty, `${VAR}` / `$VAR`,
/// `%VAR%`, `{{ var }}`, `<your-token>`, `***`, `xxxx`, `your_api_key`,
/// or an existing placeholder.
fn is_placeholder(v: &str) -> bool {
    let v = v.trim();
    if v.is_empty() || v.starts_with("[REDACTED") {
        return true;
    }
    if v.starts_with('$') || v.contains("${") || v.starts_with("{{") {
        return true;
    }
    if (v.starts_with('%') && v.ends_with('%') && v.len() > 2)
        || (v.starts_with('<') && v.ends_with('>'))
    {
        return true;
    }
    if v.chars()
        .all(|c| matches!(c, '*' | '.' | '…' | '-' | 'x' | 'X'))
    {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    lower.starts_with("your") || lower.starts_with("<your")
}

/// Splits a key into lowercase words: `DB_PASSWORD` → [db, password],
/// `apiKey` → [api, key], `X-Api-Key` → [x, api, key].
fn key_segments(key: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                segments.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !current.is_empty() {
            segments.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// Key words that mean the value is *about* a secret (its size, type, URL,
/// file...) rather than the secret itself: `max_tokens`, `token_count`,
/// `token_type`, `password_file`, `secret_name`, `tokenUrl`.
const NON_SECRET_SEGMENTS: &[&str] = &[
    "count",
    "counts",
    "max",
    "min",
    "limit",
    "limits",
    "len",
    "length",
    "size",
    "type",
    "types",
    "kind",
    "url",
    "uri",
    "urls",
    "endpoint",
    "path",
    "file",
    "filename",
    "dir",
    "name",
    "names",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "usage",
    "budget",
    "header",
    "field",
    "prefix",
    "format",
    "env",
    "var",
    "hint",
    "label",
    "placeholder",
    "mode",
    "regex",
    "pattern",
    "policy",
    "timeout",
    "enabled",
    "required",
    "index",
    "offset",
    "position",
];

/// Returns the redaction kind for a key name, or None when the key is not
/// a secret holder (see [`NON_SECRET_SEGMENTS`]; `PWD`/`OLDPWD` are the
/// shell's working directories).
fn secret_kind_for_key(key: &str) -> Option<&'static str> {
    let upper = key.to_ascii_uppercase();
    if upper == "PWD" || upper == "OLDPWD" {
        return None;
    }
    let segments = key_segments(key);
    if segments
        .iter()
        .any(|s| NON_SECRET_SEGMENTS.contains(&s.as_str()))
    {
        return None;
    }
    for (i, seg) in segments.iter().enumerate() {
        let next = segments.get(i + 1).map(String::as_str);
        let s = seg.as_str();
        if s.ends_with("password")
            || s.ends_with("passwords")
            || s.ends_with("passwd")
            || s.ends_with("pwd")
            || s == "passphrase"
        {
            return Some("password");
        }
        if s.ends_with("privatekey") || (s == "private" && next == Some("key")) {
            return Some("private_key");
        }
        if s.ends_with("accesskey") || (s == "access" && next == Some("key")) {
            return Some("access_key");
        }
        if s.ends_with("apikey") || (s == "api" && next == Some("key")) {
            return Some("api_key");
        }
        if s.ends_with("secret") || s.ends_with("secrets") {
            return Some("secret");
        }
        if s.ends_with("token") {
            return Some("token");
        }
        if s.starts_with("credential") {
            return Some("credential");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Redacted {
        redact(text)
    }

    #[test]
    fn env_file_dump() {
        let env = "\
# Local development settings
DATABASE_URL=postgres://app:S3cr3tPass!@localhost:5432/app_dev
REDIS_URL=redis://:r3dis-pw@127.0.0.1:6379/0
DB_PASSWORD=hunter2
POSTGRES_PASSWORD=postgres
JWT_SECRET=9f86d081884c7d659a2feaa0c55ad015
STRIPE_SECRET_KEY=sk_live_51HqLyjWDarjtT1zdp7dcXRs2
ANTHROPIC_API_KEY=sk-ant-api03-Xq9vB2kLmN4pR7sT1uW3yZ5aC8dE0fG2hJ4kL6mN8pQ
OPENAI_API_KEY=sk-proj-4fGh7JkL9mNpQr2StUvWx3YzAb5CdEf6GhIj
GITHUB_TOKEN=ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R
AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE
AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
EMPTY_TOKEN=
API_KEY=${SECRET_FROM_VAULT}
LOG_LEVEL=debug
MAX_TOKENS=4096
PWD=/home/dev/project
";
        let out = r(env);
        let t = &out.text;
        for secret in [
            "S3cr3tPass!",
            "r3dis-pw",
            "hunter2",
            "PASSWORD=postgres",
            "9f86d081884c7d659a2feaa0c55ad015",
            "sk_live_51HqLyjWDarjtT1zdp7dcXRs2",
            "sk-ant-api03",
            "sk-proj-4fGh",
            "ghp_1a2B",
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI",
        ] {
            assert!(!t.contains(secret), "{secret} leaked:\n{t}");
        }
        assert!(
            t.contains("DATABASE_URL=postgres://app:[REDACTED:password]@localhost:5432/app_dev"),
            "{t}"
        );
        assert!(t.contains("REDIS_URL=redis://:[REDACTED:password]@127.0.0.1:6379/0"));
        assert!(t.contains("DB_PASSWORD=[REDACTED:password]"));
        assert!(t.contains("STRIPE_SECRET_KEY=[REDACTED:stripe_key]"));
        assert!(t.contains("ANTHROPIC_API_KEY=[REDACTED:anthropic_key]"));
        assert!(t.contains("OPENAI_API_KEY=[REDACTED:openai_key]"));
        assert!(t.contains("GITHUB_TOKEN=[REDACTED:github_token]"));
        assert!(t.contains("AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]"));
        assert!(t.contains("AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key]"));
        // Left alone: empty values, references, non-secrets.
        assert!(t.contains("EMPTY_TOKEN=\n"));
        assert!(t.contains("API_KEY=${SECRET_FROM_VAULT}"));
        assert!(t.contains("LOG_LEVEL=debug"));
        assert!(t.contains("MAX_TOKENS=4096"));
        assert!(t.contains("PWD=/home/dev/project"));
        assert!(t.contains("# Local development settings"));
        assert_eq!(out.count, 11, "{t}");
    }

    #[test]
    fn git_remote_with_token() {
        let text = "origin\thttps://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/acme/api.git (fetch)\n\
upstream\thttps://oauth2:glpat-xK9mP2qR7sT4vW8yZ1aB@gitlab.com/acme/api.git (push)\n\
mirror\thttps://deploy:pl4inPassw0rd@git.example.com/acme/api.git (fetch)";
        let out = r(text);
        assert_eq!(
            out.text,
            "origin\thttps://x-access-token:[REDACTED:github_token]@github.com/acme/api.git (fetch)\n\
upstream\thttps://oauth2:[REDACTED:gitlab_token]@gitlab.com/acme/api.git (push)\n\
mirror\thttps://deploy:[REDACTED:password]@git.example.com/acme/api.git (fetch)"
        );
        assert_eq!(out.count, 3);
    }

    #[test]
    fn curl_with_bearer_and_api_key_headers() {
        let text = r#"curl -sS https://api.example.com/v1/projects \
  -H "Authorization: Bearer 8f4b2c1d9e7a6b5c4d3e2f1a0b9c8d7e" \
  -H "X-Api-Key: a1b2c3d4e5f6g7h8" \
  -H "Content-Type: application/json""#;
        let out = r(text);
        assert!(
            out.text
                .contains("Authorization: Bearer [REDACTED:bearer_token]"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains("X-Api-Key: [REDACTED:api_key]\""),
            "{}",
            out.text
        );
        assert!(out.text.contains("Content-Type: application/json"));
        assert_eq!(out.count, 2);
    }

    #[test]
    fn bearer_jwt_and_basic_auth() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
        let text = format!("Authorization: Bearer {jwt}\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\nThe API uses Bearer authentication-scheme tokens.");
        let out = r(&text);
        assert_eq!(
            out.text,
            "Authorization: Bearer [REDACTED:jwt]\nAuthorization: Basic [REDACTED:basic_auth]\nThe API uses Bearer authentication-scheme tokens."
        );
        assert_eq!(out.count, 2);
    }

    #[test]
    fn pem_blocks() {
        let pem = "Here is the deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBJxSzGW3Vd0hVq1uH1fZ5QqJ3vVp0rDm2Z1QnlR9pE8wAAAJi1t3c1tt3\n-----END OPENSSH PRIVATE KEY-----\nand the public part is fine.";
        let out = r(pem);
        assert_eq!(
            out.text,
            "Here is the deploy key:\n[REDACTED:private_key]\nand the public part is fine."
        );
        // JSON-escaped, as found inside a raw tool response.
        let escaped = r#"{"content":"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----\n"}"#;
        let out = r(escaped);
        assert_eq!(out.text, r#"{"content":"[REDACTED:private_key]\n"}"#);
        // Truncated block (no END line).
        let cut =
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7";
        assert_eq!(r(cut).text, "[REDACTED:private_key]");
        // Public keys and certificates are not secrets.
        let public = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----";
        assert_eq!(r(public).text, public);
    }

    #[test]
    fn json_config() {
        let json = r#"{
  "database": {"host": "db.internal", "user": "app", "password": "Tr0ub4dor&3"},
  "apiKey": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
  "client_secret": "GOCSPX-1a2b3c4d5e6f",
  "token_type": "bearer",
  "max_tokens": 4096,
  "refreshToken": "",
  "secret": true
}"#;
        let out = r(json);
        let t = &out.text;
        assert!(t.contains(r#""password": "[REDACTED:password]""#), "{t}");
        assert!(
            t.contains(r#""apiKey": "[REDACTED:google_api_key]""#),
            "{t}"
        );
        assert!(t.contains(r#""client_secret": "[REDACTED:secret]""#), "{t}");
        assert!(t.contains(r#""token_type": "bearer""#));
        assert!(t.contains(r#""max_tokens": 4096"#));
        assert!(t.contains(r#""refreshToken": """#));
        assert!(t.contains(r#""secret": true"#));
        assert_eq!(out.count, 3);
        // Still valid JSON after redaction.
        assert!(serde_json::from_str::<serde_json::Value>(t).is_ok());
    }

    #[test]
    fn json_escaped_assignment_inside_string() {
        let raw = r#"{"stdout":"{\"password\": \"hunter22\", \"user\": \"bob\"}\nDB_PASSWORD=x9\nAPI_KEY=abc123"}"#;
        let out = r(raw);
        assert!(!out.text.contains("hunter22"), "{}", out.text);
        assert!(!out.text.contains("x9"), "{}", out.text);
        assert!(!out.text.contains("abc123"), "{}", out.text);
        assert!(out.text.contains("bob"));
    }

    #[test]
    fn other_token_shapes() {
        let text = "slack xoxb-2345678901-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx\n\
stripe test rk_test_4eC39HqLyjWDarjtT1zdp7dc\n\
pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH\n\
--password=hunter2 mysql -u root";
        let out = r(text);
        assert_eq!(
            out.text,
            "slack [REDACTED:slack_token]\nstripe test [REDACTED:stripe_key]\npat [REDACTED:github_token]\n--password=[REDACTED:password] mysql -u root"
        );
    }

    #[test]
    fn private_spans() {
        let text = "keep this\n<private>my bank PIN is 1234\nand more</private>\nkeep that <PRIVATE note=\"x\">hidden</Private > end";
        let out = r(text);
        assert_eq!(out.text, "keep this\n\nkeep that  end");
        assert_eq!(out.count, 2);
        let unclosed = "visible <private>everything after\nis gone";
        assert_eq!(r(unclosed).text, "visible ");
    }

    #[test]
    fn idempotent() {
        let text =
            "GITHUB_TOKEN=ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R and https://u:pw123@h.com";
        let once = r(text);
        let twice = r(&once.text);
        assert_eq!(once.text, twice.text);
        assert_eq!(twice.count, 0);
    }

    #[test]
    fn ordinary_code_is_untouched() {
        let code = r#"pub fn next_token(&mut self, token: &str) -> Option<Token> {
    let token = self.lexer.next_token();
    let password: String = prompt_password()?;
    let api_key = std::env::var("API_KEY").unwrap_or_default();
    let secret = settings.SECRET_KEY;
    if token == expected { return None; }
    let cfg = Config { password: password.clone(), token_count: 3 };
    let max_tokens = 4096;
    self.tokens.push(token);
}
def login(user, password=password):
    api_key = os.environ["API_KEY"]
    token: str = None
    headers = {"Authorization": f"Bearer {token}"}
"#;
        let out = r(code);
        assert_eq!(out.text, code);
        assert_eq!(out.count, 0);
    }

    #[test]
    fn prose_hashes_uuids_and_images_are_untouched() {
        let text = "The token bucket refills every second. Use a Bearer token for auth; the secret: keep it short.\n\
commit 9fceb02d0ae598e95dc970b74767f19372d61af8\n\
Merge: 1a2b3c4 5d6e7f8\n\
request id 550e8400-e29b-41d4-a716-446655440000\n\
sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\n\
See https://docs.rs/regex/1.10.0/regex/ and http://localhost:8080/health\n\
ssh://git@github.com:22/acme/api.git and git@github.com:acme/api.git\n\
Password reset flow: the user receives a link.\n\
tokenizer = \"cl100k_base\"\n";
        let out = r(text);
        assert_eq!(out.text, text);
        assert_eq!(out.count, 0);
    }
}
