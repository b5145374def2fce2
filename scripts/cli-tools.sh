#!/usr/bin/env bash
# Installs the command-line tools the README's walkthrough uses (curl, jq) from Debian's packages
# when missing; test/readme-walkthrough.test.ts runs the walkthrough with them. Idempotent: exits 0
# at once when both are there. Needs root (apt-get), as on our machines and in CI; without root it
# says what to run and exits non-zero.
set -euo pipefail
missing=()
for tool in curl jq; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "[tools] missing: ${missing[*]}; run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "[tools] installing Debian's ${missing[*]}" >&2
# the package lists may be absent or stale on a fresh machine: refresh them once, then retry
if ! apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq >&2
  apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi
