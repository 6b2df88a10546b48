//! Vocabulary: stopwords, action verbs, code words and the patterns that find tokens.

use super::*;

/// Words too vague to name a subject, per language (fillers, weak verbs, politeness), on top
/// of the function words every text tool skips ([`ai_smartness_text`]).
#[rustfmt::skip]
pub(super) const VAGUE_EN: &[&str] = &[
    "actually", "almost", "already", "although", "always", "among", "another", "anything",
    "around", "back", "basically", "currently", "everything", "getting", "go", "goes", "going",
    "gone", "hasn", "haven", "instead", "know", "last", "least", "less", "lets", "lot", "lots",
    "many", "maybe", "need", "needs", "neither", "never", "next", "nothing", "often", "ok", "okay",
    "one", "onto", "others", "per", "perhaps", "please", "probably", "quite", "rather", "really",
    "right", "see", "seem", "seems", "simply", "since", "something", "sometimes", "still", "stuff",
    "sure", "thank", "thanks", "thing", "things", "think", "though", "three", "two", "use", "used",
    "uses", "using", "usually", "via", "want", "wants", "way", "well", "whatever", "yeah", "yes",
    "able", "across", "along", "seen", "says", "said", "tell", "told", "give", "gives", "take",
    "takes", "put", "keep", "keeps", "kept", "find", "found", "work", "works", "worked", "working",
    "decide", "decided", "decision", "chose", "chosen", "choose",
];

#[rustfmt::skip]
pub(super) const VAGUE_FR: &[&str] = &[
    "afin", "ai", "ainsi", "as", "aucun", "autre", "autres", "avant", "avez", "avons", "bien",
    "celle", "celles", "celui", "cependant", "ceux", "chaque", "chose", "choses", "comment",
    "depuis", "doit", "doivent", "dois", "dont", "entre", "es", "eux", "faut", "jamais", "juste",
    "là", "lequel", "lorsque", "maintenant", "merci", "moins", "non", "oui", "parce", "pendant",
    "peut", "peuvent", "peux", "pourquoi", "pourrais", "pourrait", "pouvez", "puis", "qu",
    "quelque", "quelques", "rien", "son", "stp", "svp", "toujours", "vers", "veux", "voici",
    "voilà", "voudrais", "voulez", "vraiment", "faire", "fais", "sommes", "êtes", "après",
    "aujourd", "hui", "bonjour", "salut", "aide", "aider",
];

#[rustfmt::skip]
pub(super) const VAGUE_ES: &[&str] = &[
    "alguna", "algunas", "alguno", "ahora", "ahí", "así", "aunque", "aún", "bien", "cosa", "cosas",
    "cuál", "cuándo", "después", "durante", "entonces", "estas", "estoy", "favor", "gracias", "he",
    "hemos", "hola", "mientras", "mucho", "necesito", "nunca", "os", "otras", "podrías", "puede",
    "pueden", "puedes", "quiero", "quieres", "sin", "solo", "sólo", "tan", "tanto", "tengo",
    "tienen", "todavía", "vez", "veces", "hace", "hacer", "haz", "ayuda", "ayudar", "usar", "uso",
];

/// Action verbs and their common forms: a title must describe a subject,
/// not a task ("Fixing the pool" → "Connection pool timeouts").
#[rustfmt::skip]
pub(super) const ACTION_VERBS: &[&str] = &[
    // English
    "fix", "fixes", "fixed", "fixing", "add", "adds", "added", "adding", "implement",
    "implements", "implemented", "implementing", "run", "runs", "ran", "running", "create",
    "creates", "created", "creating", "update", "updates", "updated", "updating", "make",
    "makes", "made", "making", "remove", "removes", "removed", "removing", "delete", "deletes",
    "deleted", "deleting", "change", "changed", "changing", "modify", "modifies", "modified",
    "modifying", "improve", "improves", "improved", "improving", "refactor", "refactors",
    "refactored", "refactoring", "check", "checks", "checked", "checking", "try", "tries",
    "tried", "trying", "help", "helps", "helping", "show", "shows", "showed", "showing",
    "explain", "explains", "explaining", "investigate", "investigating", "look", "looks",
    "looked", "looking", "review", "reviewing", "write", "writing", "wrote", "install",
    "installing", "move", "moving", "rename", "renaming", "debug", "debugging", "resolve",
    "resolving",
    // French
    "corriger", "corrige", "corrigez", "corrigé", "ajouter", "ajoute", "ajoutez", "ajouté",
    "implémenter", "implémente", "implémentez", "créer", "crée", "créez", "mettre", "mets",
    "mettez", "lancer", "lance", "lancez", "exécuter", "exécute", "exécutez", "vérifier",
    "vérifie", "vérifiez", "regarder", "regarde", "regardez", "modifier", "modifie",
    "modifiez", "supprimer", "supprime", "supprimez", "changer", "améliorer", "améliore",
    "réparer", "répare", "essayer", "essaie", "expliquer", "explique", "expliquez", "trouver",
    "trouve", "écrire", "écris", "refactoriser", "déboguer", "installer", "renommer", "gérer",
    // Spanish
    "arreglar", "arregla", "arreglame", "arréglame", "corregir", "corrige", "corrija", "añadir",
    "añade", "agregar", "agrega", "implementar", "implementa", "crear", "crea", "actualizar",
    "actualiza", "ejecutar", "ejecuta", "revisar", "revisa", "cambiar", "cambia", "eliminar",
    "elimina", "borrar", "borra", "mejorar", "mejora", "explicar", "explica", "escribir",
    "escribe", "buscar", "busca", "instalar", "depurar", "renombrar",
];

/// Programming-language keywords and ubiquitous std names: frequent in code
/// captures, meaningless as topics.
#[rustfmt::skip]
pub(super) const CODE_WORDS: &[&str] = &[
    "fn", "pub", "let", "mut", "impl", "self", "struct", "enum", "match", "return", "mod",
    "crate", "super", "where", "trait", "type", "const", "static", "async", "await", "move",
    "ref", "dyn", "loop", "while", "true", "false", "none", "some", "err", "unwrap", "expect",
    "def", "class", "import", "function", "var", "this", "new", "null", "nil", "undefined",
    "void", "int", "bool", "string", "str", "u8", "u16", "u32", "u64", "usize", "i32", "i64",
    "f32", "f64", "vec", "option", "box", "arc", "clone", "into", "iter", "map", "collect",
    "println", "format", "assert", "assert_eq", "cfg", "derive", "default", "result", "elif",
    "lambda", "pass", "yield", "except", "raise", "try", "catch", "throw", "throws", "public",
    "private", "protected", "package", "export", "require", "module", "interface", "extends",
    "implements", "echo", "then", "done", "esac", "local", "sudo", "args", "arg", "len",
    "stdout", "stderr", "stdin", "todo", "fixme", "http", "https", "www", "com", "org", "html",
    "redacted", "truncated", "chars", "line", "lines", "file", "files", "fichier", "fichiers",
    "archivo", "archivos", "bytes", "output", "input", "value", "values", "data", "info",
    "main", "lib", "path", "paths", "std", "tmp", "unwrap_or", "unwrap_or_default", "unwrap_or_else",
    "to_string", "to_owned", "as_str", "as_ref", "into_iter", "iter_mut", "is_some", "is_none",
    "is_empty", "push_str", "ok_or", "ok_or_else", "map_err", "and_then", "to_vec", "as_bytes",
];

/// Directory names too generic to be topics or locations.
#[rustfmt::skip]
pub(super) const GENERIC_DIRS: &[&str] = &[
    "src", "lib", "bin", "home", "usr", "tmp", "var", "etc", "opt", "dev", "users", "user",
    "project", "projects", "app", "code", "repo", "repos", "work", "workspace", "target",
    "debug", "release", "node_modules", "dist", "build", "out", "pkg", "internal", "cmd",
    "root", "mnt", "local", "share", "include", "vendor", "packages", "github.com",
];

/// File stems too generic to say what a file is about.
#[rustfmt::skip]
pub(super) const GENERIC_STEMS: &[&str] = &[
    "mod", "main", "lib", "index", "init", "__init__", "utils", "util", "helpers", "common",
    "readme", "license", "setup", "package", "cargo", "makefile", "dockerfile",
];

/// Extensions that make a dotted token a file name.
#[rustfmt::skip]
pub(super) const FILE_EXTENSIONS: &[&str] = &[
    "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "rb", "php", "c",
    "h", "cc", "cpp", "hpp", "cs", "swift", "scala", "sh", "bash", "zsh", "fish", "ps1",
    "toml", "json", "jsonl", "yaml", "yml", "xml", "md", "mdx", "rst", "txt", "csv", "sql",
    "html", "css", "scss", "vue", "svelte", "lock", "cfg", "ini", "conf", "env", "proto",
    "graphql", "tf", "nix", "lua", "ex", "exs", "erl", "hs", "ml", "zig", "dart", "r", "ipynb",
    "log", "pem", "dockerfile", "mk",
];

/// Sentence fragments that mark a decision.
pub(super) const DECISION_MARKERS: &[&str] = &[
    // English
    "decided",
    "decision:",
    "we'll use",
    "we will use",
    "we'll go with",
    "let's go with",
    "let's use",
    "going with",
    "go with",
    "chose",
    "chosen",
    "switch to",
    "switched to",
    "switching to",
    "settled on",
    "opted for",
    "we'll keep",
    "we will keep",
    // French
    "décidé",
    "décision",
    "on garde",
    "on utilise",
    "on part sur",
    "on va utiliser",
    "on passe à",
    "on passe sur",
    "nous utiliserons",
    "choisi",
    "opté",
    // Spanish
    "decidimos",
    "decidido",
    "decisión",
    "vamos a usar",
    "usaremos",
    "elegimos",
    "elegido",
    "nos quedamos con",
    "cambiamos a",
    "optamos",
];

/// All decision markers as one case-insensitive alternation, delimited by
/// non-word characters (so "go with" matches neither "algo with" nor
/// "go without"); `'` also matches the typographic `’`.
pub(super) static DECISION: LazyLock<Regex> = LazyLock::new(|| {
    let alternation = DECISION_MARKERS
        .iter()
        .map(|m| regex::escape(m).replace('\'', "['’]"))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&format!(
        r"(?i)(?:^|[^\p{{L}}\p{{N}}_])(?:{alternation})(?:[^\p{{L}}\p{{N}}_]|$)"
    ))
    .expect("valid DECISION regex")
});

pub(super) static STOPWORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    ai_smartness_text::LANGUAGES
        .iter()
        .flat_map(|l| l.iter())
        .chain(VAGUE_EN)
        .chain(VAGUE_FR)
        .chain(VAGUE_ES)
        .chain(ACTION_VERBS)
        .chain(CODE_WORDS)
        .copied()
        .collect()
});

pub(super) static ACTION_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| ACTION_VERBS.iter().copied().collect());

/// Words, identifiers, dotted names, `a::b` paths and `a/b/c.ext` paths.
pub(super) static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[\p{L}\p{N}_]+(?:(?:\.|::|/|-)[\p{L}\p{N}_]+)*").expect("valid TOKEN regex")
});

/// Placeholders and markers our own pipeline inserts.
pub(super) static PIPELINE_MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[REDACTED:[a-z_]+\]|\[\.\.\. \d+ chars truncated \.\.\.\]")
        .expect("valid PIPELINE_MARKERS regex")
});

/// Hex literals (`0x1f`), hashes (7+ hex digits) and UUID-like runs of
/// hex groups: unique strings, never topics. (Hand-written instead of a
/// regex: it runs on every token.)
pub(super) fn is_hexish(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' && (bytes[1] | 0x20) == b'x' {
        return bytes[2..].iter().all(u8::is_ascii_hexdigit);
    }
    let mut groups = 0usize;
    for group in s.split('-') {
        if group.is_empty() || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        groups += 1;
    }
    groups >= 3 || (groups == 1 && s.len() >= 7)
}
