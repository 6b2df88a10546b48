#!/usr/bin/env bash
# Builds ai-smartness for its Claude Code plugin, once: `cargo build --release --workspace
# --bins` in the plugin's folder, then the embedding model (scripts/fetch-assets.sh). The
# plugin's session-start hook runs this in the background on first use; run it by hand to see
# it work. A second run while one is under way waits for it; a finished build is kept.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
xdg_data=${XDG_DATA_HOME:-}
[[ "$xdg_data" == /* ]] || xdg_data="$HOME/.local/share"
data_dir=${AI_SMARTNESS_DATA_DIR:-$xdg_data/ai-smartness}
mkdir -p "$data_dir"
exec 9>"$data_dir/plugin-setup.lock"
flock 9
echo "ai-smartness plugin setup: $(date -u +%FT%TZ) in $root"
if [[ -x "$root/target/release/ai" && -x "$root/target/release/ai-inject" ]]; then
    echo "already built: $root/target/release"
else
    cargo=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
    [[ -x "$cargo" ]] || {
        echo "cargo not found: install the Rust toolchain (https://rustup.rs), then run $0" >&2
        exit 1
    }
    locked=()
    [[ -f "$root/Cargo.lock" ]] && locked=(--locked)
    (cd "$root" && "$cargo" build --release ${locked[@]+"${locked[@]}"} --workspace --bins)
fi
"$root/scripts/fetch-assets.sh" || echo "the model could not be fetched: embeddings run degraded until $root/scripts/fetch-assets.sh succeeds" >&2
echo "ai-smartness plugin setup: done; the memory works from the next session"
