#!/usr/bin/env bash
# Real consumers of the export formats, for the export tests (npm, pinned, into .cache/export-consumers):
#   junit2json 4.0.0          a JUnit XML report parser (CLI: junit2json FILE prints the parsed JSON)
#   ajv-cli 5.0.0 + ajv-formats 3.0.1   a JSON Schema validator, with the "uri" and "date-time" formats
#   sarif-schema-2.1.0.json   the official OASIS SARIF 2.1.0 schema, as shipped (unchanged) inside
#                             the npm package @datadog/datadog-ci 2.48.0, whose `sarif upload` validates
#                             SARIF files with it; taken with `npm pack` (no install of that package)
# Offline-tolerant: nothing is fetched when everything is already there.
#   scripts/export-consumers.sh install
#   scripts/export-consumers.sh dir      prints the directory
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.cache/export-consumers"
schema="$dest/sarif-schema-2.1.0.json"
case "${1:-}" in
  install)
    if [ -x "$dest/node_modules/.bin/junit2json" ] && [ -x "$dest/node_modules/.bin/ajv" ] && [ -d "$dest/node_modules/ajv-formats" ] && [ -s "$schema" ]; then
      exit 0
    fi
    if ! command -v npm >/dev/null; then
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
    fi
    mkdir -p "$dest"
    (cd "$dest" && { [ -f package.json ] || npm init -y >/dev/null; } &&
      npm install --no-audit --no-fund --silent junit2json@4.0.0 ajv-cli@5.0.0 ajv-formats@3.0.1)
    if [ ! -s "$schema" ]; then
      tmp="$(mktemp -d)"
      (cd "$tmp" && npm pack --silent @datadog/datadog-ci@2.48.0 >/dev/null &&
        tar xzf datadog-datadog-ci-2.48.0.tgz package/dist/commands/sarif/json-schema/sarif-schema-2.1.0.json)
      mv "$tmp/package/dist/commands/sarif/json-schema/sarif-schema-2.1.0.json" "$schema"
      rm -rf "$tmp"
    fi
    ;;
  dir) echo "$dest" ;;
  *) echo "usage: $0 install | dir" >&2; exit 1 ;;
esac
