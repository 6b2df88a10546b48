//! Whether a name (a variable, a key, an option, a column) says that its value is a secret.

/// Where a name was written: the same word means a secret in one place and not in another
/// (`KEY=...` in a shell is a key, `key = ...` in code is usually a map's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameUse {
    /// A variable, field or key in code or in a structured file (`password = ...`,
    /// `"token": ...`).
    Code,
    /// A shell or `.env` variable in capitals (`TARGET_PASS=`, `SIGNING_KEY=`): there `PASS`
    /// and `KEY` name secrets too.
    Env,
    /// A command's long option (`--db-pass VALUE`): `pass` names a secret when it ends the
    /// option's name.
    Option,
    /// A key alone on a line of a config file (`pass: x` in YAML, `pass = x` in INI): `pass`
    /// names a secret there too.
    ConfigLine,
    /// A table's column or a key-value table's label ("Password", "API key"). `pass` alone
    /// is left out: "Pass" and "Fail" are a test report's columns.
    Label,
}

/// Splits a name into lowercase words: `DB_PASSWORD` → [db, password], `apiKey` → [api, key],
/// `X-Api-Key` → [x, api, key], `API key` → [api, key].
pub(crate) fn segments(name: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
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

/// Words that make a name *about* a secret (its size, type, address, file...) rather than the
/// secret itself: `max_tokens`, `token_count`, `token_type`, `password_file`, `secret_name`,
/// `tokenUrl`, `KEY_ID`.
const ABOUT_A_SECRET: &[&str] = &[
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
    "id",
    "ids",
    "stdin",
    "reset",
    "strength",
    "rotation",
    "store",
    "manager",
    "command",
    "cmd",
    "helper",
    "source",
    // A tokenizer's special tokens (`pad_token`, `eos_token`).
    "pad",
    "eos",
    "bos",
    "unk",
    "cls",
    "sep",
    "mask",
];

/// The redaction kind for a name, or None when the name does not hold a secret where it is
/// used. `PWD` and `OLDPWD` are the shell's working folders.
pub(crate) fn secret_kind(name: &str, usage: NameUse) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    if upper == "PWD" || upper == "OLDPWD" {
        return None;
    }
    let segments = segments(name);
    if segments
        .iter()
        .any(|s| ABOUT_A_SECRET.contains(&s.as_str()))
    {
        return None;
    }
    // `--no-password`, `--skip-token`: a switch, not a value.
    if usage == NameUse::Option
        && matches!(
            segments.first().map(String::as_str),
            Some("no" | "skip" | "with" | "without" | "ask" | "prompt")
        )
    {
        return None;
    }
    let last = segments.len().saturating_sub(1);
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
        if s == "pass"
            && (matches!(usage, NameUse::Env | NameUse::ConfigLine)
                || (usage == NameUse::Option && i == last))
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
        if s == "key" && usage == NameUse::Env {
            return Some("key");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_by_where_they_are_used() {
        assert_eq!(segments("X-Api-Key"), ["x", "api", "key"]);
        assert_eq!(segments("apiKey"), ["api", "key"]);
        assert_eq!(secret_kind("TARGET_PASS", NameUse::Env), Some("password"));
        assert_eq!(secret_kind("pass", NameUse::Code), None);
        assert_eq!(secret_kind("SIGNING_KEY", NameUse::Env), Some("key"));
        assert_eq!(secret_kind("key", NameUse::Code), None);
        assert_eq!(secret_kind("GPG_KEY_ID", NameUse::Env), None);
        assert_eq!(secret_kind("db-pass", NameUse::Option), Some("password"));
        assert_eq!(secret_kind("pass-through", NameUse::Option), None);
        assert_eq!(secret_kind("no-password", NameUse::Option), None);
        assert_eq!(secret_kind("password-stdin", NameUse::Option), None);
        assert_eq!(secret_kind("Pass", NameUse::Label), None);
        assert_eq!(secret_kind("API key", NameUse::Label), Some("api_key"));
        assert_eq!(secret_kind("token_type", NameUse::Code), None);
        assert_eq!(secret_kind("PWD", NameUse::Env), None);
        assert_eq!(secret_kind("MYSQL_PWD", NameUse::Env), Some("password"));
    }
}
