#!/usr/bin/env bash
# What a third party does: install the SDK to a prefix, build each project of examples/ out
# of tree against it, check the installed CLI loads it, and run the example's own test
# (examples/<name>/check.sh) with that CLI. Prints the seconds each step took (CI time).
# Usage: scripts/test-sdk-example.sh BUILD_DIR [EXAMPLE...]   (default: every example)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
shift || true
examples=("$@")
[ "${#examples[@]}" -gt 0 ] || examples=(custom_augmentation custom_monitor custom_source custom_optimizer custom_callback custom_loss)
coco="${YOLOFLOW_SHARED_DIR:-$src/../shared}/datasets/coco128"
work="$(mktemp -d /tmp/yoloflow-sdk-example.XXXXXX)"
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cli="$work/prefix/bin/yoloflow"
echo "install: $(( $(date +%s) - t0 )) s"
# The plugin guide, what its errors mean, the ABI history and the components' reference come with
# the SDK, and so does every example project the guide cites.
docs="$work/prefix/share/doc/yoloflow"
for doc in plugin-guide.md pipeline-format.md troubleshooting.md CHANGELOG.md plugins/train.md; do
  [ -f "$docs/$doc" ] || { echo "the install lacks share/doc/yoloflow/$doc"; exit 1; }
done
for cited in $(grep -o 'examples/[a-z_]*/' "$docs/plugin-guide.md" | sort -u); do
  [ -d "$docs/$cited" ] || { echo "plugin-guide.md cites $cited, which the install lacks"; exit 1; }
done
# The installed CLI finds the installed built-in plugins too.
# The whole listing first: a grep -q that quits at its first match could end the CLI with SIGPIPE.
listing=$("$cli" plugins)
grep -q "lib/yoloflow/plugins" <<<"$listing" || { echo "installed CLI did not load installed plugins"; exit 1; }

for ex in "${examples[@]}"; do
  # Built from the installed copy: what a plugin author who has only the SDK starts from.
  [ -d "$docs/examples/$ex" ] || { echo "the install lacks the example $ex"; exit 1; }
  t0=$(date +%s)
  # Quiet unless it fails (Ninja prints compiler errors on stdout).
  { cmake -S "$docs/examples/$ex" -B "$work/$ex/build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" &&
    cmake --build "$work/$ex/build"; } > "$work/$ex.build.log" 2>&1 || {
    cat "$work/$ex.build.log"; echo "$ex: the example does not build against the installed SDK"; exit 1; }
  t1=$(date +%s)
  # Every plugin the example built must load: no refusal in `yoloflow plugins`.
  listing="$("$cli" --plugin-path "$work/$ex/build" plugins 2>&1)"
  if echo "$listing" | grep -qi "refused"; then echo "$listing"; exit 1; fi
  "$docs/examples/$ex/check.sh" "$cli" "$work/$ex/build" "$coco" "$work/$ex/check"
  echo "$ex: build $(( t1 - t0 )) s, test $(( $(date +%s) - t1 )) s"
done
echo "sdk examples: OK"
