#!/usr/bin/env bash
# Writes docs/plugins/<name>.md for every built-in component from its schema
# (`yoloflow describe NAME --markdown`) and docs/plugins/README.md, the index.
# tests/integration/plugin_docs_test.cpp fails when a page differs from its schema: rerun this.
# Usage: scripts/generate-plugin-docs.sh [path/to/yoloflow]   (default build/bin/yoloflow)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build/bin/yoloflow}"
OUT=docs/plugins
mkdir -p "$OUT"
rm -f "$OUT"/*.md
{
  echo "# Built-in components"
  echo
  echo "Generated from each component's parameter schema by \`scripts/generate-plugin-docs.sh\`"
  echo "(\`yoloflow describe NAME --markdown\`); \`yoloflow describe NAME\` prints the same in a terminal."
  echo
  echo "| component | kind |"
  echo "|---|---|"
} >"$OUT/README.md"
"$BIN" plugins | awk 'NR > 1 && NF >= 4 { print $1, $2 }' | while read -r name kind; do
  "$BIN" describe "$name" --kind "$kind" --markdown >"$OUT/$name.md"
  echo "| [\`$name\`]($name.md) | $kind |" >>"$OUT/README.md"
done
echo "wrote $(ls "$OUT" | wc -l) files in $OUT"
