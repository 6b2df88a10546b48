//! Secret redaction: secrets must never reach a file (the journal, the memory, a log) nor an
//! embedding.
//!
//! Everything captured is tool output from a developer's machine: `.env` dumps,
//! `git remote -v`, `curl -H "Authorization: ..."`, config files, commands typed with their
//! passwords. Each recognised secret is replaced by `[REDACTED:kind]`, keeping enough context
//! (the key name, the URL's user and host, the command) for the memory to stay useful.
//! `<private>...</private>` spans are dropped entirely: that is the user's explicit "do not
//! remember this".
//!
//! A secret is found by its form or by its context:
//! - **form**: the token formats of the common providers, JWTs, private key blocks, passwords
//!   in URLs, anywhere;
//! - **context**: a value whose name says it is a secret (`DB_PWD=`, `TARGET_PASS=`,
//!   `password: x` on a line of a config file, `"token": "..."`), a command's password option
//!   (`sshpass -p`, `mysql -pX`, `docker login -p`, `curl -u user:pass`, `--password X`), a
//!   credential file's line (`.netrc`, `.pgpass`) and a table's column or row named like a
//!   secret.
//!
//! The rules favour precision on ordinary code: a coding agent's memory is mostly code, and
//! `fn parse(token: &str)`, `let password = form.password;` or `max_tokens = 4096` must survive
//! intact. A bare word after a name is a secret only where it cannot be code: in a shell or
//! `.env` assignment, a command's option, or alone on a config file's line.

mod assignments;
mod commands;
mod files;
mod keys;
mod tables;

use regex::{Captures, Regex};
use std::sync::{LazyLock, OnceLock};

/// Result of [`redact`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Redacted {
    /// The text with secrets replaced and private spans removed.
    pub text: String,
    /// Number of replacements made, `<private>` spans included.
    pub count: usize,
}

/// The placeholder written in place of a secret.
pub fn placeholder(kind: &str) -> String {
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

/// A rule found by a regex. The regex has a `val` group (the secret); optional `pre` and
/// `post` groups are kept around the placeholder, and so are the quotes of a quoted value.
///
/// A rule is tried only on a text that holds one of its triggers, and compiled the first time
/// it is tried: most texts (and most of the hooks' log lines) need few of the rules, and
/// compiling them all costs milliseconds.
pub(crate) struct Rule {
    kind: &'static str,
    pattern: &'static str,
    /// What the text must hold for the rule to be tried.
    trigger: Trigger,
    /// Extra check on the `val` text; false keeps the match untouched.
    accept: fn(&str) -> bool,
    re: OnceLock<Regex>,
}

impl Rule {
    pub(crate) const fn new(
        kind: &'static str,
        pattern: &'static str,
        triggers: &'static [&'static str],
        accept: fn(&str) -> bool,
    ) -> Rule {
        Rule {
            kind,
            pattern,
            trigger: Trigger::Words(triggers),
            accept,
            re: OnceLock::new(),
        }
    }

    /// A rule tried on the texts `test` lets through.
    pub(crate) const fn tested(
        kind: &'static str,
        pattern: &'static str,
        test: fn(&str) -> bool,
        accept: fn(&str) -> bool,
    ) -> Rule {
        Rule {
            kind,
            pattern,
            trigger: Trigger::Test(test),
            accept,
            re: OnceLock::new(),
        }
    }

    fn regex(&self) -> &Regex {
        self.re
            .get_or_init(|| Regex::new(self.pattern).expect("valid redaction rule regex"))
    }

    /// Whether the text (also given lowercased) may hold what this rule finds.
    fn triggered_by(&self, text: &str, lower: &str) -> bool {
        match self.trigger {
            Trigger::Words(words) => words.iter().any(|w| lower.contains(w)),
            Trigger::Test(test) => test(text),
        }
    }
}

/// When a rule is worth trying.
enum Trigger {
    /// The lowercased text holds one of these.
    Words(&'static [&'static str]),
    /// This says so.
    Test(fn(&str) -> bool),
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
        || (s.len() >= 24 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A value quoted after "token is", "password:" in a sentence: machine-made (long and
/// random) or password-like (letters with digits or signs), not a word nor a name
/// (`the token is "Bearer"`, `password: "required"`).
fn looks_like_a_given_secret(s: &str) -> bool {
    if is_placeholder(s)
        || s.contains("://")
        || s.contains(['(', ')'])
        || s.starts_with(['/', '.', '~', '-'])
    {
        return false;
    }
    let letters = s.bytes().any(|b| b.is_ascii_alphabetic());
    let digits = s.bytes().any(|b| b.is_ascii_digit());
    let signs = s
        .bytes()
        .any(|b| b.is_ascii_punctuation() && !matches!(b, b'_' | b'-' | b'.'));
    (s.len() >= 16 && looks_random(s)) || (letters && (digits || signs) && !s.contains('.'))
}

pub(crate) fn not_placeholder(s: &str) -> bool {
    !is_placeholder(s)
}

/// Token formats, recognised wherever they appear.
static SHAPES: [Rule; 20] = [
    // Whole PEM blocks, also when JSON-escaped (`\n` stays literal).
    Rule::new(
        "private_key",
        r"(?s)(?P<val>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)",
        &["private key"],
        always,
    ),
    // Truncated PEM block: redact the base64 body that follows.
    Rule::new(
        "private_key",
        r"(?P<val>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\\[rn]|[A-Za-z0-9+/=\s:,\-])*)",
        &["private key"],
        always,
    ),
    Rule::new(
        "anthropic_key",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>sk-ant-[A-Za-z0-9_\-]{20,})",
        &["sk-ant-"],
        always,
    ),
    Rule::new(
        "openai_key",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})",
        &["sk-"],
        has_letter_and_digit,
    ),
    Rule::new(
        "github_token",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        always,
    ),
    Rule::new(
        "gitlab_token",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>glpat-[A-Za-z0-9_\-]{20,})",
        &["glpat-"],
        always,
    ),
    Rule::new(
        "huggingface_token",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>hf_[A-Za-z0-9]{30,})",
        &["hf_"],
        has_letter_and_digit,
    ),
    Rule::new(
        "npm_token",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>npm_[A-Za-z0-9]{36,})",
        &["npm_"],
        has_letter_and_digit,
    ),
    Rule::new(
        "pypi_token",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>pypi-AgE[A-Za-z0-9_\-]{50,})",
        &["pypi-"],
        always,
    ),
    Rule::new(
        "slack_token",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>xox[abprs]-[A-Za-z0-9\-]{10,})",
        &["xox"],
        has_letter_and_digit,
    ),
    Rule::new(
        "aws_access_key_id",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>(?:AKIA|ASIA)[A-Z0-9]{16})\b",
        &["akia", "asia"],
        always,
    ),
    Rule::new(
        "google_api_key",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>AIza[0-9A-Za-z_\-]{35})",
        &["aiza"],
        always,
    ),
    Rule::new(
        "stripe_key",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,})",
        &["_live_", "_test_"],
        always,
    ),
    Rule::new(
        "jwt",
        r"(?P<pre>^|[^A-Za-z0-9])(?P<val>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})",
        &["eyj"],
        always,
    ),
    Rule::new(
        "aws_secret_access_key",
        r#"(?i)(?P<pre>\baws_?secret_?access_?key\\?["']?[ \t]*[=:][ \t]*\\?["']?)(?P<val>[A-Za-z0-9/+=]{30,})"#,
        &["secret"],
        always,
    ),
    // In an Authorization header, whatever follows `Bearer` is the credential.
    Rule::new(
        "bearer_token",
        r#"(?i)(?P<pre>\bauthorization\\?["']?[ \t]*[:=][ \t]*\\?["']?bearer[ \t]+)(?P<val>[A-Za-z0-9\-._~+/]{6,}=*)"#,
        &["bearer"],
        not_placeholder,
    ),
    Rule::new(
        "bearer_token",
        r"(?i)(?P<pre>\bbearer[ \t]+)(?P<val>[A-Za-z0-9\-._~+/]{16,}=*)",
        &["bearer"],
        looks_random,
    ),
    // Given in a sentence: `my token is "3f9a..."`, `the password: 'hunter2x'`.
    Rule::new(
        "secret",
        r#"(?i)(?P<pre>\b(?:token|password|passwd|passphrase|secret|api[ _\-]?key)\b[^\n"'`=:]{0,20}?(?:\bis\b|\bit's\b|\bwas\b|:)[ \t]*["'`])(?P<val>[^\s"'`]{6,200})(?P<post>["'`])"#,
        &["token", "passw", "passphrase", "secret", "key"],
        looks_like_a_given_secret,
    ),
    Rule::new(
        "basic_auth",
        r#"(?i)(?P<pre>\bauthorization\\?["']?[ \t]*[:=][ \t]*\\?["']?basic[ \t]+)(?P<val>[A-Za-z0-9+/]{8,}={0,2})"#,
        &["basic"],
        always,
    ),
    // scheme://user:PASSWORD@host; the user may be empty (redis://:pw@host).
    Rule::new(
        "password",
        r#"(?P<pre>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'"]*:)(?P<val>[^\s@/'"]+)(?P<post>@)"#,
        &["://"],
        not_placeholder,
    ),
];

/// Redacts secrets in `text` (see the module docs for what is covered).
///
/// Idempotent: placeholders are never redacted again, so running it twice
/// (before and after JSON extraction) does not double count.
pub fn redact(text: &str) -> Redacted {
    let (mut current, mut count) = drop_private(text);
    let lower = current.to_ascii_lowercase();
    for rule in SHAPES
        .iter()
        .chain(commands::RULES.iter())
        .chain(files::RULES.iter())
    {
        if rule.triggered_by(&current, &lower) {
            current = apply_rule(&current, rule, &mut count);
        }
    }
    current = commands::redact_long_options(&current, &mut count);
    current = tables::redact(&current, &lower, &mut count);
    current = assignments::redact(&current, &lower, &mut count);
    Redacted {
        text: current,
        count,
    }
}

fn apply_rule(text: &str, rule: &Rule, count: &mut usize) -> String {
    rule.regex()
        .replace_all(text, |caps: &Captures| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            let val = caps.name("val").map_or("", |m| m.as_str());
            let (open, inner, close) = split_quotes(val);
            if inner.starts_with("[REDACTED") || !(rule.accept)(inner) {
                return whole.to_string();
            }
            *count += 1;
            let pre = caps.name("pre").map_or("", |m| m.as_str());
            let post = caps.name("post").map_or("", |m| m.as_str());
            format!("{pre}{open}{}{close}{post}", placeholder(rule.kind))
        })
        .into_owned()
}

/// The redaction kind for a structured field (a JSON key and its string value) whose key names
/// a secret holder (`"password": "..."`, `"api_key": "..."`), unless the value is a placeholder.
pub fn secret_field(key: &str, value: &str) -> Option<&'static str> {
    if key.len() > 64 || is_placeholder(value) {
        return None;
    }
    let usage = if key.starts_with('-') {
        keys::NameUse::Option
    } else {
        keys::NameUse::Code
    };
    keys::secret_kind(key.trim_start_matches('-'), usage)
}

/// Splits surrounding quotes off a value: `"x"`, `'x'`, `\"x\"` or bare.
pub(crate) fn split_quotes(val: &str) -> (&str, &str, &str) {
    for q in ["\\\"", "\"", "'"] {
        if val.len() >= 2 * q.len() && val.starts_with(q) && val.ends_with(q) {
            return (q, &val[q.len()..val.len() - q.len()], q);
        }
    }
    ("", val, "")
}

/// Values that are obviously not secrets: empty, `${VAR}` / `$VAR`,
/// `%VAR%`, `{{ var }}`, `<your-token>`, `***`, `xxxx`, `your_api_key`,
/// or an existing placeholder.
pub(crate) fn is_placeholder(v: &str) -> bool {
    let v = v.trim();
    if v.is_empty() || v.starts_with("[REDACTED") {
        return true;
    }
    if v.starts_with('$') || v.contains("${") || v.starts_with("{{") {
        return true;
    }
    // `%VAR%`, `<your-token>`, and a tokenizer's special tokens (`[PAD]`, `<unk>`).
    if (v.starts_with('%') && v.ends_with('%') && v.len() > 2)
        || (v.starts_with('<') && v.ends_with('>'))
        || (v.starts_with('[') && v.ends_with(']'))
    {
        return true;
    }
    if v.chars()
        .all(|c| matches!(c, '*' | '.' | '…' | '-' | 'x' | 'X'))
    {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    // The words documentation writes where a value goes (`KEY=VALUE`, `user:password@host`).
    const STAND_INS: &[&str] = &[
        "value", "values", "val", "secret", "password", "passwd", "pass", "pwd", "token", "key",
        "changeme", "example", "redacted", "hidden", "masked", "none", "null",
    ];
    lower.starts_with("your")
        || lower.starts_with("<your")
        || STAND_INS.contains(&lower.trim_end_matches([':', '.', ',', ';']))
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

    /// Every secret listed is gone from the output, and every kept string is still there.
    fn check(text: &str, secrets: &[&str], kept: &[&str]) -> Redacted {
        let out = r(text);
        for secret in secrets {
            assert!(!out.text.contains(secret), "{secret} leaked:\n{}", out.text);
        }
        for k in kept {
            assert!(out.text.contains(k), "{k} lost:\n{}", out.text);
        }
        out
    }

    #[test]
    fn shell_variables_named_like_a_secret() {
        let out = check(
            "export TARGET_PASS=\"Kx9!vault\"\nDB_PWD=tr0ub4dor\nSIGNING_KEY=9af1c3e07b\n\
             ADMIN_PASS=letmein DEPLOY_TOKEN='deploy-abc'\nSSH_KEY=~/.ssh/id_ed25519\nBYPASS_CACHE=1\n",
            &["Kx9!vault", "tr0ub4dor", "9af1c3e07b", "letmein", "deploy-abc"],
            &[
                "TARGET_PASS=\"[REDACTED:password]\"",
                "DB_PWD=[REDACTED:password]",
                "SIGNING_KEY=[REDACTED:key]",
                "SSH_KEY=~/.ssh/id_ed25519",
                "BYPASS_CACHE=1",
            ],
        );
        assert_eq!(out.count, 5, "{}", out.text);
    }

    #[test]
    fn password_options_of_common_commands() {
        let text = "sshpass -p 'Sup3r$ecret' ssh root@10.0.0.5\n\
                    sshpass -pplainpw scp a b\n\
                    mysql -u root -p'MyPa55' appdb\n\
                    mysqldump -uroot -phunter22 shop > dump.sql\n\
                    mysql -u root -p appdb\n\
                    docker login -u bot -p dckr_pat_abc123 registry.example.com\n\
                    docker login --password-stdin -u bot < pw.txt\n\
                    curl -u admin:adm1nPass https://api.example.com\n\
                    curl --user 'ci:ciPass99' https://x\n\
                    redis-cli -h cache -a r3disPw ping\n\
                    app deploy --password s3cretValue --verbose\n\
                    psql --db-pass dbpass42 -h db\n\
                    PGPASSWORD=pgpw psql -h db -U app\n\
                    tar --password-file pw.txt\n\
                    mkdir -p build && ssh -p 2222 host";
        check(
            text,
            &[
                "Sup3r$ecret",
                "plainpw",
                "MyPa55",
                "hunter22",
                "dckr_pat_abc123",
                "adm1nPass",
                "ciPass99",
                "r3disPw",
                "s3cretValue",
                "dbpass42",
                "pgpw",
            ],
            &[
                "sshpass -p '[REDACTED:password]' ssh root@10.0.0.5",
                "mysql -u root -p'[REDACTED:password]' appdb",
                "mysql -u root -p appdb",
                "--password-stdin -u bot < pw.txt",
                "curl -u admin:[REDACTED:password] https://api.example.com",
                "--password [REDACTED:password] --verbose",
                "tar --password-file pw.txt",
                "mkdir -p build && ssh -p 2222 host",
            ],
        );
    }

    #[test]
    fn config_files_of_every_kind() {
        let yaml = "database:\n  user: app\n  password: opensesame\n  pass: letmein\n  token_type: bearer\n";
        check(
            yaml,
            &["opensesame", "letmein"],
            &["token_type: bearer", "user: app"],
        );
        let ini = "[db]\nuser = app\npassword = swordfish\n";
        check(ini, &["swordfish"], &["user = app"]);
        let toml = "[auth]\ntoken = \"tok_live_829\"\nsecret = 'shh-its-me'\n";
        check(toml, &["tok_live_829", "shh-its-me"], &[]);
        let netrc = "machine api.example.com login bot password n3trcPw\nmachine other\n  login me\n  password multiLinePw\n";
        check(
            netrc,
            &["n3trcPw", "multiLinePw"],
            &["login bot password [REDACTED:password]"],
        );
        let pgpass = "db.internal:5432:app:app_user:pgPassW0rd\n*:*:*:replica:rep!pw\n";
        check(
            pgpass,
            &["pgPassW0rd", "rep!pw"],
            &["db.internal:5432:app:app_user:[REDACTED:password]"],
        );
        let json = r#"{"db": {"password": "jsonPw"}, "secret_file": "/run/s", "x": 1}"#;
        check(json, &["jsonPw"], &[r#""secret_file": "/run/s""#]);
    }

    #[test]
    fn table_columns_named_like_a_secret() {
        let md = "| Host | User | Password |\n|------|------|----------|\n| db1 | admin | Adm!n2024 |\n| db2 | ro | readonly |\n| db3 | x | - |";
        check(
            md,
            &["Adm!n2024", "readonly"],
            &[
                "| db1 | admin | [REDACTED:password] |",
                "| db3 | x | - |",
                "| Host | User | Password |",
            ],
        );
        let kv = "| Field | Value |\n|---|---|\n| Username | root |\n| Password | toor |\n| API Key | k3y-abcdef123 |";
        check(kv, &["toor", "k3y-abcdef123"], &["| Username | root |"]);
        let plain = "NAME      USER    PASSWORD     HOST\nprod      app     Pr0dPass!    db.prod\nstaging   app     st4ging      db.stg\n\nafter the table";
        check(
            plain,
            &["Pr0dPass!", "st4ging"],
            &[
                "prod      app     [REDACTED:password]    db.prod",
                "after the table",
            ],
        );
        // A tokenizer's table and a test report are not secrets.
        let tokens = "| Token | Kind |\n|---|---|\n| fn | keyword |\n| identifier | name |";
        assert_eq!(r(tokens).text, tokens);
        let report = "| Test | Pass | Fail |\n|---|---|---|\n| parser | 12 | 0 |";
        assert_eq!(r(report).text, report);
    }

    #[test]
    fn a_harmless_key_does_not_hide_what_follows_it() {
        check(
            "secret_file: x DB_PASSWORD=hunter2\ntoken_type: DB_PASSWORD=hunter3\ntoken_type=API_TOKEN=abc123def",
            &["hunter2", "hunter3", "abc123def"],
            &["secret_file: x", "token_type: DB_PASSWORD=[REDACTED:password]"],
        );
    }

    #[test]
    fn secrets_given_in_a_sentence_or_a_header() {
        check(
            "I give you token it's \"deadbeefdeadbeefdeadbeefdeadbeef\"\n\
             -H \"Authorization: Bearer deadbeefdeadbeefdeadbeefdeadbeef\"\n\
             my password is 'Winter2024!'",
            &["deadbeef", "Winter2024!"],
            &["token it's \"[REDACTED:secret]\""],
        );
        let kept = "the token is \"Bearer\", the password field is 'required', see `token.rs`";
        assert_eq!(r(kept).text, kept);
    }

    #[test]
    fn more_token_shapes() {
        check(
            "HF: hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\nnpm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
            &["hf_AbCd", "npm_a1B2"],
            &["[REDACTED:huggingface_token]", "[REDACTED:npm_token]"],
        );
    }

    #[test]
    fn ordinary_code_with_secret_words_is_kept() {
        let code = r#"let password = form.password;
fn get_token(&self) -> Option<&str> { self.token.as_deref() }
password = user_password
token = nextToken
key = "user_id"
pass
KEY_COUNT=3
class Login:
    password: str
    token: Optional[str] = None
const { password } = req.body;
if (password === confirmPassword) { save(password); }
self.password = password
--password-stdin
secret: Secret
"#;
        let out = r(code);
        assert_eq!(out.text, code);
        assert_eq!(out.count, 0);
    }
}
