#!/usr/bin/env bash
# Installs Debian's chromium (used headless by test/docs-page.test.ts) when /usr/bin/chromium is
# missing. Idempotent: exits 0 at once when it is there. Needs root (apt-get), as on our machines
# and in CI; without root it says what to run and exits non-zero.
set -euo pipefail
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "[chromium] $CHROMIUM is missing; run as root: apt-get update && apt-get install -y chromium" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "[chromium] installing Debian's chromium package" >&2
# the package lists may be absent or stale on a fresh machine: refresh them once, then retry
if ! apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; then
  apt-get update -qq >&2
  apt-get install -y --no-install-recommends chromium >&2
fi
if [ ! -x "$CHROMIUM" ]; then
  echo "[chromium] the package installed but $CHROMIUM is still missing" >&2
  exit 1
fi
echo "[chromium] $("$CHROMIUM" --version 2>/dev/null || echo installed)" >&2
