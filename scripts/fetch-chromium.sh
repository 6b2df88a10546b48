#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver server from Debian's packages, for the
# dashboard's browser test (tests/integration/dashboard.rs).
#
# Why Debian's packages: the machines this project is tested on reach only package
# registries; `chromium` and `chromium-driver` come from the same Debian source package, so the
# browser and its driver always match, and apt checks them against Debian's signed archive.
# apt keeps the downloaded .deb files in its own cache.
#
# Usage: scripts/fetch-chromium.sh [--print-path]
#   (no argument)  install both unless they are there (needs root, or both already installed)
#   --print-path   print the driver's path (no install); exit 1 when it is not installed
#
# Exit status: 0 installed (or already there); 1 failed; 3 cannot install here (not root and
# not installed): the caller reports the browser test as skipped, which CI does not accept.
set -euo pipefail

say() { printf 'fetch-chromium: %s\n' "$*" >&2; }

driver() { command -v chromedriver || { [[ -x /usr/bin/chromedriver ]] && echo /usr/bin/chromedriver; }; }
browser() { command -v chromium || { [[ -x /usr/bin/chromium ]] && echo /usr/bin/chromium; }; }

case "${1:-}" in
--print-path)
    driver || exit 1
    exit 0
    ;;
-h | --help)
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
"") ;;
*)
    say "unknown argument '$1' (try --help)"
    exit 1
    ;;
esac

if driver >/dev/null && browser >/dev/null; then
    say "already installed: $(browser) ($("$(browser)" --version 2>/dev/null || echo '?'))"
    exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    say "cannot install Chromium here (needs root and apt-get): the browser test will skip"
    exit 3
fi
say "installing chromium and chromium-driver from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
driver >/dev/null && browser >/dev/null || {
    say "apt-get finished but chromium or chromedriver is missing"
    exit 1
}
say "installed: $("$(browser)" --version 2>/dev/null || echo chromium)"
