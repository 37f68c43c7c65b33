#!/usr/bin/env bash
# Mutation testing: plant small bugs (mutmut) in every module with logic ([tool.mutmut] in
# pyproject.toml), run the fast tests that reach each one, then print the score and every bug the
# tests let through. Not part of CI: from nothing it takes many hours on two cores, so run it by
# module (`.venv/bin/mutmut run --max-children 2 "xferbench.core.numa*"`) and resume.
#
#   scripts/mutation.sh            resume where the last run stopped (only changed code is redone)
#   scripts/mutation.sh --fresh    start again from nothing
#   scripts/mutation.sh --report   print the score and the survivors of the last run only
#   scripts/mutation.sh --recheck MODULE TESTFILE...
#                                  after a run: switch on, one per core at a time, each of MODULE's mutants the
#                                  run did not catch (survived, reached by no fast test, or not yet run) and run
#                                  the TESTFILEs alone against it; print those they still let through, the
#                                  count, and the module's score with the run's catches.
#                                  For a module whose mutants take the whole suite an hour, or new tests.
#                                  MODULE as mutmut names it (xferbench.core.numa), TESTFILE under tests/.
source "$(dirname "$0")/setup.sh" "torch,tf,jax,nvml,dev"
case "${1:-}" in
    --fresh) rm -rf mutants ;;
    --report | "") ;;
    --recheck)
        module="${2:-}"
        tests=("${@:3}")
        if [ -z "$module" ] || [ "${#tests[@]}" -eq 0 ] || [ ! -d mutants/tests ]; then
            echo "error: give --recheck MODULE TESTFILE... (e.g. xferbench.core.numa tests/test_numa_rules.py), after a run made mutants/" >&2
            exit 2
        fi
        for file in "${tests[@]}"; do
            [ -f "$file" ] || { echo "error: $file: no such test file" >&2; exit 2; }
            cp "$file" mutants/tests/
        done
        .venv/bin/mutmut results --all true >mutants/results.txt 2>&1 || { cat mutants/results.txt >&2; exit 1; }
        # Each mutated module is many times its source's size: compiled once here and kept, not
        # compiled again by every test run (which a PYTHONDONTWRITEBYTECODE environment would do,
        # at several seconds a run).
        unset PYTHONDONTWRITEBYTECODE
        .venv/bin/python -m compileall -q -j 0 mutants/xferbench >/dev/null
        pattern="^ *${module//./\\.}\.x.*: "
        all=$(grep -cE "$pattern" mutants/results.txt || true)
        caught=$(grep -cE "$pattern(killed|timeout)$" mutants/results.txt || true)
        todo=$(grep -E "$pattern(survived|no tests|not checked)$" mutants/results.txt | sed -E 's/^ *//; s/: [a-z ]+$//' || true)
        total=$(printf '%s\n' $todo | grep -c . || true)
        names=()
        for file in "${tests[@]}"; do names+=("tests/$(basename "$file")"); done
        # One mutant per core at a time; a mutant whose test run passes (exit 0) still survives.
        left=$(printf '%s\n' $todo | grep . | (cd mutants && PYTHONPATH="$PWD" xargs -P "$(nproc)" -I{} sh -c \
            'MUTANT_UNDER_TEST={} timeout 120 ../.venv/bin/python -m pytest -x -q -m "not slow" -p no:cacheprovider "$@" >/dev/null 2>&1 \
             && echo "still survives: {}"' sh "${names[@]}") | sort | tee /dev/stderr | grep -c . || true)
        echo "recheck: $((total - left)) of the $total mutants of $module the run did not catch are caught by ${tests[*]}; $left left"
        echo "$module: $all mutants, $((caught + total - left)) caught ($caught by the run), $left left"
        exit 0 ;;
    *) echo "error: unknown argument '$1'; give --fresh, --report, --recheck MODULE TESTFILE or nothing" >&2; exit 2 ;;
esac
if [ "${1:-}" != "--report" ]; then
    mkdir -p mutants
    echo "mutation: running mutmut on $(nproc) cores; its progress is in mutants/run.log" >&2
    started=$(date +%s)
    # mutmut's progress is a spinner: a terminal shows it, a log gets one line a minute instead.
    # One child per core: mutmut's time-outs are wall-clock, and more children than cores turn slow
    # survivors into false time-outs (counted as caught).
    .venv/bin/mutmut run --max-children "$(nproc)" >mutants/run.log 2>&1 &
    run=$!
    trap 'kill "$run" 2>/dev/null; exit 130' INT TERM
    while kill -0 "$run" 2>/dev/null; do
        sleep 60
        last=$(tr '\r⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏' '\n' <mutants/run.log | grep -a '/' | tail -1)
        echo "mutation: $(( ($(date +%s) - started) / 60 )) min: ${last:-starting}" >&2
    done
    if ! wait "$run"; then
        echo "error: mutmut stopped; the end of mutants/run.log:" >&2
        tr '\r' '\n' <mutants/run.log | tail -20 >&2
        exit 1
    fi
fi
.venv/bin/mutmut results --all true >mutants/results.txt 2>&1 || { cat mutants/results.txt >&2; exit 1; }
.venv/bin/python - <<'EOF'
"""The score from `mutmut results --all true` (a line 'name: status' per mutant) and each survivor's change."""
import collections
import subprocess

statuses = {}
for line in open("mutants/results.txt"):
    name, sep, status = line.strip().rpartition(": ")
    if sep and name.startswith("xferbench."):
        statuses[name] = status
counts = collections.Counter(statuses.values())
caught = counts["killed"] + counts["timeout"]
judged = caught + counts["survived"]
if not judged:
    raise SystemExit("error: no mutant was tested; see mutants/run.log")
survivors = sorted(name for name, status in statuses.items() if status == "survived")
by_module = collections.Counter(name.split(".")[1] for name in survivors)
for name in survivors:
    shown = subprocess.run([".venv/bin/mutmut", "show", name], capture_output=True, text=True).stdout
    change = [line for line in shown.splitlines() if line[:2] in ("- ", "+ ")]
    print(f"survived {name}")
    for line in change[:4]:
        print(f"    {line}")
print()
print(f"mutants: {len(statuses)}; caught {caught} (killed {counts['killed']}, timed out {counts['timeout']}),"
      f" survived {counts['survived']}, reached by no fast test {counts['no tests']}, other {len(statuses) - judged - counts['no tests']}")
print("survivors by module: " + (", ".join(f"{m} {n}" for m, n in by_module.most_common()) or "none"))
print(f"score: {caught / judged:.1%} of the mutants a test reaches are caught")
EOF
