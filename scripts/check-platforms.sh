#!/usr/bin/env bash
# Type-checks the whole workspace, tests and benches included, for macOS (aarch64 and x86_64),
# on this Linux machine, and runs clippy with -D warnings for aarch64-apple-darwin. For Windows
# (x86_64-pc-windows-gnu), the crates that already port (the hooks and what they build on) pass
# clippy with -D warnings and the hook binaries are built and linked with Debian's mingw-w64.
#
# How, without a Mac: Debian's rustc-web, cargo-web and rust-web-src give a compiler with the
# standard library's source, so `cargo check -Z build-std` builds the standard library for a
# target whose prebuilt one is not installed (RUSTC_BOOTSTRAP=1 allows that unstable flag, in
# this script only). The workspace's only C is ring's (the TLS provider): it is compiled by
# Debian's clang for the Apple target, freestanding, with three small headers standing in for
# the Apple SDK's (scripts/cross/include). Nothing is linked or run: this proves that the code
# and every `cfg` path for macOS type-check and pass clippy, not that they behave (see the
# README's platform section for what is verified how).
#
# Usage: scripts/check-platforms.sh
# Environment:
#   AI_SMARTNESS_CROSS_TARGET_DIR   build folder (default: target/cross)
#
# Exit status: 0 checked; 1 an error or warning; 3 the tools are missing and cannot be
# installed here (not root): CI does not accept that.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf 'check-platforms: %s\n' "$*" >&2; }

# The compiler, Cargo, clippy and the standard library's source of one release (1.96, Debian's
# security suite), and clang for ring's C.
packages=(rustc-web cargo-web rust-web-src rust-web-clippy clang mingw-w64 wine64)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
        say "cannot install ${missing[*]} here (needs root and apt-get)"
        exit 3
    fi
    say "installing ${missing[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's tools first: rustup's would be found otherwise, and they have no standard library
# source for build-std.
export PATH="/usr/bin:$PATH"
export RUSTC=/usr/bin/rustc
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${AI_SMARTNESS_CROSS_TARGET_DIR:-target/cross}"
# The developer's own flags (a linker, a CPU) are for this machine, not for the targets.
unset RUSTFLAGS CARGO_BUILD_RUSTFLAGS
shims="$PWD/scripts/cross/include"

targets=(aarch64-apple-darwin x86_64-apple-darwin)
for target in "${targets[@]}"; do
    var=${target//-/_}
    export "CC_$var=clang"
    # -nostdlibinc: the Linux headers are not the Apple SDK's; ring's own switch for that case
    # (RING_CORE_NOSTDLIBINC) replaces <assert.h>.
    export "CFLAGS_$var=-ffreestanding -nostdlibinc -isystem $shims -DRING_CORE_NOSTDLIBINC"
done

for target in "${targets[@]}"; do
    start=$SECONDS
    if [[ $target == "${targets[0]}" ]]; then
        # Clippy type-checks too: one pass gives both.
        cargo clippy -Z build-std --target "$target" --workspace --all-targets --quiet -- -D warnings
        say "$target: type-checked with clippy -D warnings in $((SECONDS - start)) s"
    else
        cargo check -Z build-std --target "$target" --workspace --all-targets --quiet
        say "$target: type-checked in $((SECONDS - start)) s"
    fi
done

# Windows: every crate but the daemon and the CLI (not ported yet: detaching, the pipe's
# listener, resource limits) checked with clippy, and the hooks linked into .exe files. Their
# socket is a named pipe there, trusted only when the process serving it runs as this user
# (proto's windows_user); subprocesses go in a job object (process).
win=x86_64-pc-windows-gnu
windows_crates=(--workspace --exclude ai-smartness-daemon --exclude ai-smartness-cli --exclude ai-smartness)
start=$SECONDS
cargo clippy -Z build-std --target "$win" "${windows_crates[@]}" --all-targets --quiet -- -D warnings
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
    cargo build -Z build-std --target "$win" -p ai-smartness-hooks --quiet
for exe in ai-inject ai-capture ai-compact; do
    [[ -s "$CARGO_TARGET_DIR/$win/debug/$exe.exe" ]] || { say "$exe.exe was not linked"; exit 1; }
done
say "$win: all crates but daemon and cli checked with clippy -D warnings, hooks linked, in $((SECONDS - start)) s"

# And run: ai-inject.exe under Debian's wine, in a project whose daemon is down, must fail open
# (exit 0, nothing printed) and record why in .ai/hooks/ai-inject.json. Wine 8 lacks
# bcryptprimitives.dll, where Rust's std asks for random bytes: a ten-line stand-in built with
# mingw (scripts/cross/wine) fills in for it in the test prefix only.
start=$SECONDS
target_abs=$(cd "$CARGO_TARGET_DIR" && pwd)
wine_dir="$target_abs/wine"
rm -rf "$wine_dir/project"
mkdir -p "$wine_dir/project/.ai"
export WINEPREFIX="$wine_dir/prefix" WINEDEBUG=-all
/usr/lib/wine/wine64 wineboot --init >/dev/null 2>&1 || true
x86_64-w64-mingw32-gcc -shared -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
    scripts/cross/wine/bcryptprimitives.c scripts/cross/wine/bcryptprimitives.def -ladvapi32
said=$(cd "$wine_dir/project" && echo '{"prompt": "what port does the dev server use?", "session_id": "s", "hook_event_name": "UserPromptSubmit"}' \
    | timeout 120 /usr/lib/wine/wine64 "$target_abs/$win/debug/ai-inject.exe" 2>/dev/null) \
    || { say "ai-inject.exe did not exit 0 under wine"; exit 1; }
[[ -z $said ]] || { say "ai-inject.exe printed something with no daemon: $said"; exit 1; }
grep -q '"errors": 1' "$wine_dir/project/.ai/hooks/ai-inject.json" \
    || { say "ai-inject.exe recorded no error under wine"; exit 1; }
say "$win: ai-inject.exe ran under wine with the daemon down: exit 0, failure recorded, in $((SECONDS - start)) s"

# The ONNX Runtime pinned for macOS (arm64; the release has no Intel macOS wheel): downloaded
# from PyPI by the fetch script as a Mac would, every file checked against its pin.
start=$SECONDS
AI_SMARTNESS_ASSET_PLATFORM=darwin-arm64 AI_SMARTNESS_DATA_DIR="$CARGO_TARGET_DIR/assets-darwin-arm64" \
    PATH="$HOME/.cargo/bin:$PATH" scripts/fetch-assets.sh >/dev/null
say "darwin-arm64 assets fetched and verified against their pins in $((SECONDS - start)) s"
