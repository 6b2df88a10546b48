#!/usr/bin/env bash
# Runs one of ai-smartness's binaries for the Claude Code plugin (hooks/hooks.json, .mcp.json):
#   run.sh ai-inject [--session-start] | ai-capture | ai-compact | ai mcp
#
# Where the binaries are, first found: $AI_SMARTNESS_BIN_DIR; the folder install.sh recorded
# (DATA_DIR/plugin-bin-dir); the release build of the source this plugin came from (see
# setup.sh); `ai` on PATH; ~/.local/bin. Hooks fail open: with no binary they exit 0 and print
# nothing, except the session-start hook, which starts setup.sh in the background (a one-time
# `cargo build --release`, logged) and says so. At session start a project without .ai/ gets
# one with the defaults (`ai init`). A project whose own settings register our hooks
# (install.sh without --plugin) is left to them: the plugin's hooks stand aside, so nothing
# runs twice. Windows needs no counterpart: Claude Code runs hook commands with Git Bash there,
# which runs this script, and finds `ai-inject.exe` when asked for `ai-inject`.
set -u

name=${1:-}
[[ -n "$name" ]] || {
    echo "usage: run.sh BINARY [ARGS...]" >&2
    exit 2
}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
xdg_data=${XDG_DATA_HOME:-}
[[ "$xdg_data" == /* ]] || xdg_data="${HOME:-/nonexistent}/.local/share"
data_dir=${AI_SMARTNESS_DATA_DIR:-$xdg_data/ai-smartness}

find_dir() {
    local dir recorded="" source=""
    [[ -f "$data_dir/plugin-bin-dir" ]] && recorded=$(head -n 1 "$data_dir/plugin-bin-dir")
    source=$("$here/setup.sh" --source 2>/dev/null) || source=""
    for dir in "${AI_SMARTNESS_BIN_DIR:-}" "$recorded" "${source:+$source/target/release}" \
        "$(dirname "$(command -v ai 2>/dev/null || echo /nonexistent/ai)")" "${HOME:-/nonexistent}/.local/bin"; do
        if [[ -n "$dir" && -x "$dir/$name" && -x "$dir/ai" ]]; then
            printf '%s' "$dir"
            return 0
        fi
    done
    return 1
}

is_hook=yes
[[ "$name" == ai ]] && is_hook=no
project=${CLAUDE_PROJECT_DIR:-$PWD}
# Windows: Claude Code runs this through Git Bash and may name the project with backslashes,
# which Git Bash's own tools (dirname) do not split on; it takes forward slashes too.
project=${project//\\//}

if [[ "$is_hook" == yes ]]; then
    for settings in "$project/.claude/settings.json" "$project/.claude/settings.local.json"; do
        if [[ -f "$settings" ]] && grep -q -e '/ai-inject' -e '/ai-capture' "$settings" 2>/dev/null; then
            exit 0 # the project registers our hooks itself
        fi
    done
fi

if ! dir=$(find_dir); then
    if [[ "$is_hook" == no ]]; then
        echo "ai-smartness: its binaries are not built yet. Run $here/setup.sh (or install.sh" \
            "--plugin from a clone), then restart Claude Code." >&2
        exit 1
    fi
    if [[ "${1:-}" == --session-start ]] && command -v cargo >/dev/null 2>&1 &&
        "$here/setup.sh" --source >/dev/null 2>&1; then
        mkdir -p "$data_dir" 2>/dev/null
        log="$data_dir/plugin-setup.log"
        nohup "$here/setup.sh" >>"$log" 2>&1 </dev/null &
        echo "ai-smartness (memory plugin): first use, building its binaries in the background" \
            "(cargo build --release; log: $log). Memory starts once the build is done."
    fi
    exit 0
fi

if [[ "${1:-}" == --session-start ]] && [[ -d "$project" ]]; then
    found=""
    d=$project
    while [[ -n "$d" ]]; do
        if [[ -d "$d/.ai" ]]; then
            found=$d
            break
        fi
        parent=$(dirname "$d")
        # The root (`/`, or `C:` on Windows) is its own parent.
        [[ "$parent" == "$d" || "$d" == / ]] && break
        d=$parent
    done
    [[ -n "$found" ]] || "$dir/ai" init --project "$project" >/dev/null 2>&1
fi
exec "$dir/$name" "$@"
