#!/usr/bin/env bash
# The README's "test" command: set up, build, run every test (lit suites,
# GoogleTest through ctest, the formatter check) and end with one summary
# line. Exits non-zero if anything failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPH_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh" || exit 1
"$root/scripts/build.sh" || exit 1

passed=0 failed=0 skipped=0

echo "== lit"
lit_log="$build/lit.log"
/usr/lib/llvm-22/bin/lit -sv "$build/test" 2>&1 | tee "$lit_log"
# lit pads the names to one width when it prints several ("Passed     :").
count() { grep -E "^ +$1( Tests)? *: +[0-9]+" "$lit_log" | grep -oE ': +[0-9]+' | grep -oE '[0-9]+' | head -1; }
lp=$(count Passed); lf=$(count Failed); lu=$(count Unsupported)
lbad=$(( $(count 'Timed Out' || true) + $(count Unresolved || true) + $(count 'Unexpectedly Passed' || true) + 0 ))
passed=$((passed + ${lp:-0}))
failed=$((failed + ${lf:-0} + lbad))
skipped=$((skipped + ${lu:-0}))
[[ -n "$lp$lf" ]] || { echo "lit ran no test"; failed=$((failed + 1)); }
# The two-host test needs root and network namespaces; say when it could not run.
note=""
if grep -q "UNSUPPORTED: GRAPH :: tools/graphrun/multi-worker/two-hosts.test" "$lit_log"; then
  note=" (the two-host TCP test was skipped: no network namespaces here)"
fi

echo "== ctest"
ctest_log="$build/ctest.log"
(cd "$build" && ctest --output-on-failure 2>&1) | tee "$ctest_log"
total=$(grep -oE 'tests failed out of [0-9]+' "$ctest_log" | grep -oE '[0-9]+$')
cfail=$(grep -oE '[0-9]+ tests failed out of' "$ctest_log" | grep -oE '^[0-9]+')
cskip=$(grep -cE '\*\*\*Skipped|Not Run' "$ctest_log" || true)
if [[ -z "$total" ]]; then
  echo "ctest ran no test"
  failed=$((failed + 1))
else
  failed=$((failed + cfail))
  passed=$((passed + total - cfail - cskip))
  skipped=$((skipped + cskip))
fi

echo "== pytest (the Python module)"
# Installed into the test venv as `pip install .` installs it, from this
# build (scikit-build-core over build/: only the module relinks), then its
# suite runs against real Keras.
py="$("$root/scripts/test-venv.sh")"
pytest_log="$build/pytest.log"
if "$py" -m pip install -q --disable-pip-version-check --no-build-isolation \
     --no-deps --config-settings=build-dir="$build" "$root" >"$build/pip-install.log" 2>&1; then
  (cd "$root/test/python" && "$py" -m pytest -q -p no:cacheprovider 2>&1) | tee "$pytest_log"
  pytest_status=${PIPESTATUS[0]}
  pp=$(grep -oE '[0-9]+ passed' "$pytest_log" | grep -oE '[0-9]+' | tail -1)
  pf=$(grep -oE '[0-9]+ (failed|errors?)' "$pytest_log" | awk '{n += $1} END {print n + 0}')
  ps=$(grep -oE '[0-9]+ skipped' "$pytest_log" | grep -oE '[0-9]+' | tail -1)
  passed=$((passed + ${pp:-0})); failed=$((failed + pf)); skipped=$((skipped + ${ps:-0}))
  # A crash (an abort in the module) prints no counts: pytest's status says it.
  if [[ -z "$pp" && $pf -eq 0 ]] || [[ $pytest_status -ne 0 && $pf -eq 0 ]]; then
    echo "pytest did not finish (exit status $pytest_status)"
    failed=$((failed + 1))
  fi
else
  cat "$build/pip-install.log"
  echo "pip install . failed"
  failed=$((failed + 1))
fi

echo "== clang-format"
# Tracked and new (untracked, not ignored) files: what CI's clone will hold.
mapfile -t sources < <(cd "$root" && git ls-files -co --exclude-standard '*.cpp' '*.h' '*.cu' '*.cuh')
if (cd "$root" && clang-format --dry-run --Werror "${sources[@]}"); then
  echo "clang-format: ${#sources[@]} files clean"
  passed=$((passed + 1))
else
  echo "clang-format: run 'clang-format -i' on the files above"
  failed=$((failed + 1))
fi

echo
echo "summary: $passed passed, $failed failed, $skipped skipped$note"
[[ $failed -eq 0 ]]
