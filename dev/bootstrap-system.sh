#!/usr/bin/env bash
# Installs the Debian packages the project needs when they are missing: redis-server (tests and
# make dev), chromium (browser tests), node and npm (the dev identity provider), wrk and iproute2's ss
# (make bench: the load and who holds each connection).
set -euo pipefail

want=()
command -v redis-server >/dev/null || want+=(redis-server)
command -v node >/dev/null || want+=(nodejs)
command -v npm >/dev/null || want+=(npm)
for package in "$@"; do
  case "$package" in
    chromium) [ -x /usr/bin/chromium ] || want+=(chromium) ;;
    wrk)
      command -v wrk >/dev/null || want+=(wrk)
      command -v ss >/dev/null || want+=(iproute2)
      ;;
  esac
done
[ ${#want[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "missing packages: ${want[*]} (run as root or install them)" >&2; exit 1; }
  sudo=sudo
fi
echo "installing Debian packages: ${want[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
