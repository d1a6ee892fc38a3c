#!/bin/sh
# Make sure Chromium is on PATH for the end-to-end test; install Debian's package when possible.
set -eu
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Chromium (Debian's chromium package) for the browser test..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "make test needs Chromium for its browser test: install it (e.g. 'sudo apt-get install chromium') and run make test again" >&2
exit 1
