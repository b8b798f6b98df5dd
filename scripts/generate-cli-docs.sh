#!/usr/bin/env bash
# Writes docs/cli.md, the command-line reference, from the CLI's own help: `yoloflow --help` and
# `yoloflow COMMAND --help` for every command it lists.
# tests/integration/cli_docs_test.cpp fails when the page differs from the help: rerun this.
# Usage: scripts/generate-cli-docs.sh [path/to/yoloflow [OUTPUT]]   (default build/bin/yoloflow, docs/cli.md)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(realpath "${1:-build/bin/yoloflow}")"
OUT="${2:-docs/cli.md}"
# Run as `yoloflow` so the usage lines read as a user types them.
yoloflow() { PATH="$(dirname "$BIN"):$PATH" command yoloflow "$@"; }
commands=$(yoloflow --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }')
{
  echo "# Command line"
  echo
  echo "Generated from the CLI's help by \`scripts/generate-cli-docs.sh\`; \`yoloflow COMMAND --help\`"
  echo "prints the same. Exit codes: [troubleshooting.md](troubleshooting.md#exit-codes-of-yoloflow)."
  echo "Pipeline files and \`path=value\` overrides: [pipeline-format.md](pipeline-format.md)."
  echo
  for c in $commands; do echo "- [\`yoloflow $c\`](#yoloflow-$c)"; done
  echo
  echo "## yoloflow"
  echo
  echo '```'
  yoloflow --help
  echo '```'
  for c in $commands; do
    echo
    echo "## yoloflow $c"
    echo
    echo '```'
    yoloflow "$c" --help
    echo '```'
    # A command's own subcommands (weights import|export).
    for s in $(yoloflow "$c" --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }'); do
      echo
      echo "### yoloflow $c $s"
      echo
      echo '```'
      yoloflow "$c" "$s" --help
      echo '```'
    done
  done
} >"$OUT"
echo "wrote $OUT ($(echo $commands | wc -w) commands)"
