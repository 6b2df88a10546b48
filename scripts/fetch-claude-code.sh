#!/usr/bin/env bash
# Fetches the real Claude Code CLI for the end-to-end test (tests/integration/e2e_claude.rs).
#
# Why npm: the machines this project is tested on reach only package registries. The CLI ships
# as a self-contained native binary in @anthropic-ai/claude-code-linux-x64; `npm pack` downloads
# that package without running any installer. The version is pinned (the hook payloads in
# shared/claude-code/ were recorded with it) and so is the tarball's sha512.
#
# Usage: scripts/fetch-claude-code.sh [--print-path]
#   (no argument)  download, verify and cache the binary unless a working copy is cached
#   --print-path   print the cached binary's path (no network); exit 1 when it is not installed
#
# Environment:
#   AI_SMARTNESS_CACHE_DIR  cache parent (default: ${XDG_CACHE_HOME:-~/.cache}/ai-smartness);
#                           the binary is kept at claude-code/VERSION/claude in it
#
# Idempotent: when the cached binary prints the pinned version, it does nothing.
set -euo pipefail

readonly PACKAGE=@anthropic-ai/claude-code-linux-x64
readonly VERSION=2.1.328
# `dist.integrity` of $PACKAGE@$VERSION on registry.npmjs.org (npm view ... dist.integrity).
readonly INTEGRITY='sha512-KuzL+dBHgDCFTHJxwW+xuBJdVKfBsesGx2BBcTOG9sYDGoAD7b1hUV8rsTS4xjoJsB2SmeGraGjBiFuhrYuC9w=='

say() { printf 'fetch-claude-code: %s\n' "$*" >&2; }
die() {
    printf 'fetch-claude-code: error: %s\n' "$*" >&2
    exit 1
}

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

mode=install
for arg in "$@"; do
    case "$arg" in
    --print-path) mode=print ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) die "unknown argument '$arg' (try --help)" ;;
    esac
done

# Same cache convention as scripts/fetch-assets.sh (a relative XDG value is invalid: ignored),
# and as the test, which looks for the binary there when AI_SMARTNESS_CLAUDE_BIN is unset.
home="${HOME:?HOME is not set}"
xdg_cache="${XDG_CACHE_HOME:-}"
[[ "$xdg_cache" == /* ]] || xdg_cache="$home/.cache"
cache_dir="${AI_SMARTNESS_CACHE_DIR:-$xdg_cache/ai-smartness}"
install_dir="$cache_dir/claude-code/$VERSION"
bin="$install_dir/claude"

# True when $bin runs and reports the pinned version ("2.1.328 (Claude Code)").
installed_ok() {
    [[ -x "$bin" ]] || return 1
    local v
    v=$("$bin" --version 2>/dev/null) || return 1
    [[ "$v" == "$VERSION "* || "$v" == "$VERSION" ]]
}

if [[ "$mode" == print ]]; then
    installed_ok || die "Claude Code $VERSION is not installed at $bin (run scripts/fetch-claude-code.sh)"
    printf '%s\n' "$bin"
    exit 0
fi

if installed_ok; then
    say "Claude Code $VERSION already cached at $bin"
    exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm not found: it is needed to fetch $PACKAGE@$VERSION"
command -v node >/dev/null 2>&1 || die "node not found: it is needed to verify the tarball"
command -v tar >/dev/null 2>&1 || die "tar not found"

mkdir -p "$install_dir" || die "cannot create $install_dir"
# Work next to the destination so the final rename is atomic (same file system).
work=$(mktemp -d "$install_dir/.fetch.XXXXXX") || die "cannot create a temporary folder in $install_dir"
trap 'rm -rf -- "$work"' EXIT

say "downloading $PACKAGE@$VERSION from the npm registry (about 170 MB)"
(cd "$work" && npm pack --silent "$PACKAGE@$VERSION" >pack.out 2>pack.err) || {
    cat "$work/pack.err" >&2 || true
    die "npm pack $PACKAGE@$VERSION failed"
}
tgz=$(find "$work" -maxdepth 1 -name '*.tgz' -print -quit)
[[ -n "$tgz" ]] || die "npm pack produced no tarball"

# npm checks the registry's integrity while downloading; check the file against our own pin too,
# so a changed registry entry cannot slip through.
actual=$(node -e '
    const c = require("crypto"), fs = require("fs");
    const h = c.createHash("sha512");
    h.update(fs.readFileSync(process.argv[1]));
    process.stdout.write("sha512-" + h.digest("base64"));
' "$tgz") || die "cannot hash $tgz"
[[ "$actual" == "$INTEGRITY" ]] ||
    die "integrity mismatch for $PACKAGE@$VERSION: expected $INTEGRITY, got $actual"

tar -xzf "$tgz" -C "$work" package/claude || die "cannot extract package/claude from $tgz"
chmod 0755 "$work/package/claude"
v=$("$work/package/claude" --version 2>&1) || die "the downloaded binary does not run: $v"
[[ "$v" == "$VERSION "* || "$v" == "$VERSION" ]] ||
    die "the downloaded binary reports '$v', expected $VERSION"

mv -f -- "$work/package/claude" "$bin" || die "cannot install $bin"
say "installed Claude Code $VERSION at $bin"
