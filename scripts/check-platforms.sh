#!/usr/bin/env bash
# Type-checks the whole workspace, tests and benches included, for macOS (aarch64 and x86_64),
# on this Linux machine, and runs clippy with -D warnings for aarch64-apple-darwin. For Windows
# (x86_64-pc-windows-gnu): clippy with -D warnings on the workspace, the binaries linked with
# Debian's mingw-w64 and run under Debian's wine, end to end (init, daemon, capture, inject,
# status, stop), with proto's tests (the pipe's access checks). And shellcheck over the
# scripts a user runs.
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
# security suite), clang for ring's C, mingw-w64 and wine for Windows, and shellcheck for the
# scripts a user runs.
packages=(rustc-web cargo-web rust-web-src rust-web-clippy clang mingw-w64 wine64 shellcheck)
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

# The scripts a user runs on their own machine, macOS's bash 3.2 included: shellcheck finds
# what parses or expands differently from what it looks like (the bash 4 features themselves
# are looked for by tests/integration/scripts.rs).
start=$SECONDS
shellcheck --shell=bash --severity=info install.sh scripts/fetch-assets.sh plugin/scripts/run.sh \
    plugin/scripts/setup.sh
say "the scripts a user runs passed shellcheck in $((SECONDS - start)) s"

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

# Windows: the whole workspace checked with clippy (the integration tests and benches of the
# root package aside: they drive Unix processes, sockets and signals), and the binaries linked
# with Debian's mingw-w64. The socket is a named pipe there, this user's alone, trusted only when
# the process serving it runs as this user (proto's windows_user); subprocesses go in a job
# object (process); the daemon detaches as a new process (daemon's lifecycle).
win=x86_64-pc-windows-gnu
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
start=$SECONDS
cargo clippy -Z build-std --target "$win" --workspace --exclude ai-smartness --all-targets --quiet -- -D warnings
cargo clippy -Z build-std --target "$win" -p ai-smartness --lib --bins --quiet -- -D warnings
say "$win: clippy -D warnings in $((SECONDS - start)) s"
start=$SECONDS
cargo build -Z build-std --target "$win" -p ai-smartness -p ai-smartness-hooks --bins --quiet
proto_tests=$(cargo test -Z build-std --target "$win" -p ai-smartness-proto --lib --no-run --message-format json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
bin="$CARGO_TARGET_DIR/$win/debug"
for exe in ai ai-inject ai-capture ai-compact; do
    [[ -s "$bin/$exe.exe" ]] || { say "$exe.exe was not linked"; exit 1; }
done
[[ -s $proto_tests ]] || { say "proto's tests were not linked for $win"; exit 1; }
say "$win: ai.exe, the hooks and proto's tests linked in $((SECONDS - start)) s"

# And run, under Debian's wine. Wine 8 lacks bcryptprimitives.dll, where Rust's std asks for
# random bytes: a ten-line stand-in built with mingw (scripts/cross/wine) fills in for it in
# the test prefix only.
start=$SECONDS
repo=$PWD
target_abs=$(cd "$CARGO_TARGET_DIR" && pwd)
bin="$target_abs/$win/debug"
wine_dir="$target_abs/wine"
export WINEPREFIX="$wine_dir/prefix" WINEDEBUG=-all
# Wine creates the prefix but not its parent: on a fresh machine nothing else has made it yet.
mkdir -p "$wine_dir"
timeout 300 /usr/lib/wine/wine64 wineboot --init >"$wine_dir/wineboot.log" 2>&1 || {
    say "wineboot could not create the prefix $WINEPREFIX"; cat "$wine_dir/wineboot.log" >&2; exit 1; }
[[ -d $WINEPREFIX/drive_c/windows/system32 ]] || {
    say "wineboot left no system32 in $WINEPREFIX"; cat "$wine_dir/wineboot.log" >&2; exit 1; }
x86_64-w64-mingw32-gcc -shared -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
    scripts/cross/wine/bcryptprimitives.c scripts/cross/wine/bcryptprimitives.def -ladvapi32
# Output goes to files: a daemon started under wine may hold a pipe to its starter's output.
run() { timeout 120 /usr/lib/wine/wine64 "$@" >"$wine_dir/out" 2>&1 </dev/null; }
runin() { local input=$1; shift; timeout 120 /usr/lib/wine/wine64 "$@" >"$wine_dir/out" 2>&1 <"$input"; }
said() { cat "$wine_dir/out"; }
fail() { say "under wine: $*"; said >&2; /usr/lib/wine/wineserver64 -k 2>/dev/null || true; exit 1; }

# proto's tests, among them the pipe checks: a pipe that other users may open is refused.
run "$(cd "$(dirname "$proto_tests")" && pwd)/$(basename "$proto_tests")" || fail "proto's tests failed"
grep -q "a_pipe_other_users_may_open_is_refused_and_a_private_one_is_not ... ok" "$wine_dir/out" \
    || fail "the pipe check's test did not run"

# ai-inject.exe in a project whose daemon is down must fail open (exit 0, nothing printed) and
# record why in .ai/hooks/ai-inject.json.
rm -rf "$wine_dir/project"
mkdir -p "$wine_dir/project/.ai"
cd "$wine_dir/project"
echo '{"prompt": "what port does the dev server use?", "session_id": "s", "hook_event_name": "UserPromptSubmit"}' >"$wine_dir/prompt.json"
runin "$wine_dir/prompt.json" "$bin/ai-inject.exe" || fail "ai-inject.exe did not exit 0 with no daemon"
[[ ! -s $wine_dir/out ]] || fail "ai-inject.exe printed something with no daemon"
grep -q '"errors": 1' .ai/hooks/ai-inject.json || fail "ai-inject.exe recorded no error"

# End to end: init, the daemon in the background, a capture, a prompt that gets the captured
# fact back, status, stop. ONNX Runtime is not installed in the prefix: the daemon runs on its
# fallback embedder (hashed TF-IDF), which status reports.
rm -rf "$wine_dir/project"
mkdir -p "$wine_dir/project"
cd "$wine_dir/project"
run "$bin/ai.exe" init || fail "ai init failed"
run "$bin/ai.exe" daemon start || fail "ai daemon start failed"
grep -q "daemon started" "$wine_dir/out" || fail "ai daemon start did not say it started"
cat >"$wine_dir/capture.json" <<'JSON'
{"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "cat config/dev.toml"}, "tool_response": {"stdout": "[server]\n# the dev server listens here\nport = 4817\n", "stderr": "", "interrupted": false}}
JSON
runin "$wine_dir/capture.json" "$bin/ai-capture.exe" || fail "ai-capture.exe did not exit 0"
run "$bin/ai.exe" sync || fail "ai sync failed"
runin "$wine_dir/prompt.json" "$bin/ai-inject.exe" || fail "ai-inject.exe did not exit 0"
grep -q "port = 4817" "$wine_dir/out" || fail "the prompt did not get the captured fact"
run "$bin/ai.exe" status || fail "ai status failed"
grep -q "Captures: 1 received, 1 stored" "$wine_dir/out" || fail "ai status does not count the capture"
run "$bin/ai.exe" daemon stop || fail "ai daemon stop failed"
run "$bin/ai.exe" daemon status && fail "the daemon still answers after ai daemon stop"
grep -q "daemon not running" "$wine_dir/out" || fail "ai daemon status did not say it stopped"
cd "$repo"
/usr/lib/wine/wineserver64 -k 2>/dev/null || true
say "$win: under wine, proto's pipe checks passed, ai-inject.exe failed open with no daemon, and init, daemon start, a capture, a prompt that got it back, status and stop worked, in $((SECONDS - start)) s"

# The ONNX Runtime pinned for macOS (arm64; the release has no Intel macOS wheel): downloaded
# from PyPI by the fetch script as a Mac would, every file checked against its pin.
start=$SECONDS
AI_SMARTNESS_ASSET_PLATFORM=darwin-arm64 AI_SMARTNESS_DATA_DIR="$CARGO_TARGET_DIR/assets-darwin-arm64" \
    PATH="$HOME/.cargo/bin:$PATH" scripts/fetch-assets.sh >/dev/null
say "darwin-arm64 assets fetched and verified against their pins in $((SECONDS - start)) s"
