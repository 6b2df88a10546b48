#!/usr/bin/env bash
# Installs a PostgreSQL server built with TLS, and openssl, from Debian's packages, for the test
# of encrypted connections to the team store (tests/integration/team.rs).
#
# Why a second server: the one scripts/fetch-postgres.sh unpacks (with pgvector) is built
# without OpenSSL, so it cannot speak TLS; Debian's `postgresql` package can. The test makes
# its own certificate authority with openssl. apt checks both against Debian's signed archive
# and keeps the downloaded .deb files in its cache.
#
# Usage: scripts/fetch-postgres-tls.sh [--print-path]
#   (no argument)  install both unless they are there (needs root, or both already installed)
#   --print-path   print the folder holding the server's `bin/` (no install); exit 1 if absent
#
# Exit status: 0 installed (or already there); 1 failed; 3 cannot install here (not root and
# not installed): the caller reports the TLS test as skipped, which CI does not accept.
set -euo pipefail

say() { printf 'fetch-postgres-tls: %s\n' "$*" >&2; }

# The newest Debian server installed: /usr/lib/postgresql/VERSION.
server() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/ 2>/dev/null | sort -V | tail -1)
    [[ -n "$dir" && -x "${dir}bin/postgres" && -x "${dir}bin/initdb" ]] && echo "${dir%/}"
}

case "${1:-}" in
--print-path)
    command -v openssl >/dev/null || exit 1
    server || exit 1
    exit 0
    ;;
-h | --help)
    sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
"") ;;
*)
    say "unknown argument '$1' (try --help)"
    exit 1
    ;;
esac

if server >/dev/null && command -v openssl >/dev/null; then
    say "already installed: $("$(server)/bin/postgres" --version)"
    exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    say "cannot install PostgreSQL here (needs root and apt-get): the TLS test will skip"
    exit 3
fi
say "installing postgresql and openssl from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql openssl >/dev/null
# The package starts a cluster of its own: these tests start theirs, and need none running.
service postgresql stop >/dev/null 2>&1 || true
server >/dev/null && command -v openssl >/dev/null || {
    say "apt-get finished but the server or openssl is missing"
    exit 1
}
say "installed: $("$(server)/bin/postgres" --version)"
