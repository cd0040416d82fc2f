#!/usr/bin/env bash
# Fails when a file of the checkout outside bench/ names the development
# machines' shared folder: the project reads only what it carries (data/) or
# fetches (scripts/fetch_data.py), never a folder beside the clone.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pattern is assembled so that this file does not match itself.
dir="shared"
pattern="\.\./${dir}|/work/${dir}|${dir}/data|\"${dir}\" */ *\"data\"|${dir}/(DESIGN|STYLE|seeds|research)"
hits=$(git ls-files --cached --others --exclude-standard -z | grep -zv '^bench/' |
  xargs -0 grep -InE "$pattern" -- 2>/dev/null || true)
if [ -n "$hits" ]; then
  echo "files outside bench/ read or name the development machines' shared folder:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "self-contained: no file outside bench/ names the shared folder"
