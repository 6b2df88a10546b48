#!/usr/bin/env bash
# Builds ai-smartness for its Claude Code plugin, once: `cargo build --release --workspace
# --bins` in the source the plugin came from, then the embedding model (scripts/fetch-assets.sh).
# The plugin's session-start hook runs this in the background on first use; run it by hand to
# see it work. A second run while one is under way waits for it; a finished build is kept.
#
# The source: the repository holding this plugin folder (a marketplace added from a clone
# loads the plugin in place), else the marketplace's own clone that Claude Code keeps
# (~/.claude/plugins/marketplaces/ai-smartness). `setup.sh --source` only prints it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)

is_source() { [[ -f "$1/Cargo.toml" && -d "$1/hooks" && -x "$1/scripts/fetch-assets.sh" ]]; }
source_dir=""
for candidate in "$here/../.." "${HOME:-/nonexistent}/.claude/plugins/marketplaces/ai-smartness"; do
    if is_source "$candidate"; then
        source_dir=$(cd "$candidate" && pwd -P)
        break
    fi
done
if [[ "${1:-}" == --source ]]; then
    [[ -n "$source_dir" ]] || exit 1
    printf '%s\n' "$source_dir"
    exit 0
fi
[[ -n "$source_dir" ]] || {
    echo "ai-smartness plugin setup: no source to build from here; install with install.sh --plugin from a clone of ai-smartness" >&2
    exit 1
}

xdg_data=${XDG_DATA_HOME:-}
[[ "$xdg_data" == /* ]] || xdg_data="$HOME/.local/share"
data_dir=${AI_SMARTNESS_DATA_DIR:-$xdg_data/ai-smartness}
mkdir -p "$data_dir"
exec 9>"$data_dir/plugin-setup.lock"
flock 9
echo "ai-smartness plugin setup: $(date -u +%FT%TZ) in $source_dir"
if [[ -x "$source_dir/target/release/ai" && -x "$source_dir/target/release/ai-inject" ]]; then
    echo "already built: $source_dir/target/release"
else
    cargo=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
    [[ -x "$cargo" ]] || {
        echo "cargo not found: install the Rust toolchain (https://rustup.rs), then run $0" >&2
        exit 1
    }
    locked=()
    [[ -f "$source_dir/Cargo.lock" ]] && locked=(--locked)
    (cd "$source_dir" && "$cargo" build --release ${locked[@]+"${locked[@]}"} --workspace --bins)
fi
"$source_dir/scripts/fetch-assets.sh" || echo "the model could not be fetched: embeddings run degraded until $source_dir/scripts/fetch-assets.sh succeeds" >&2
echo "ai-smartness plugin setup: done; the memory works from the next session"
