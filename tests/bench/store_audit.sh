#!/bin/sh
# store_audit.sh - how many audit challenges catch a holder that silently
# drops 10% of its shares, against the model 1 - 0.9^c.
#
# Runs weft-sim on tests/bench/store_audit.json (n = 4; node 1 runs the
# store_drop strategy with permille 100: it acknowledges every share and
# keeps 90%; the other nodes audit every 20 ms of virtual time), one run
# per seed.  For each seed it takes the challenges sent to node 1 in time
# order and counts how many were answered before the first "missing";
# it prints, for several c, the share of seeds caught within c challenges
# beside 1 - 0.9^c, and with --write puts the table into
# docs/performance.md between the store-audit markers.
#
# Usage: tests/bench/store_audit.sh [SEEDS] [--write]     (default 300 seeds)
set -eu
cd "$(dirname "$0")/../.."
SEEDS=${1:-300}
WRITE=${2:-}
SIM=${WEFT_BIN:-build/bin}/weft-sim
[ -x "$SIM" ] || make -s all
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
"$SIM" --verbose --seeds "1..$SEEDS" --out /dev/null tests/bench/store_audit.json 2>"$OUT" || true
TABLE=$(python3 - "$OUT" "$SEEDS" <<'PY'
import re, sys
path, seeds = sys.argv[1], int(sys.argv[2])
runs, cur = [], None
for line in open(path):
    if line.startswith("weft-sim: ") or "store.audit " not in line:
        # weft-sim writes a summary per run only at the end; runs are told
        # apart by virtual time going back to the start
        pass
    m = re.match(r"t=([0-9.]+)ms node=\d+ debug store\.audit peer=1 share=\d+ result=(\w+)", line)
    if not m:
        continue
    t = float(m.group(1))
    if cur is None or t < cur[-1][0]:
        cur = []
        runs.append(cur)
    cur.append((t, m.group(2)))
first = []
for r in runs:
    r.sort()
    k = next((i + 1 for i, (_, res) in enumerate(r) if res == "missing"), None)
    first.append(k)
caught = [k for k in first if k is not None]
print("| challenges c | caught within c (measured) | 1 - 0.9^c (model) |")
print("|---:|---:|---:|")
for c in (1, 2, 5, 10, 20, 30, 44, 60):
    got = sum(1 for k in caught if k <= c) / len(first)
    print(f"| {c} | {got:.3f} | {1 - 0.9 ** c:.3f} |")
mean = sum(caught) / len(caught) if caught else float("nan")
print()
print(f"{len(first)} runs ({seeds} seeds); caught in {len(caught)}; mean challenges to the first "
      f"detection {mean:.1f} (model: 1 / 0.1 = 10)")
PY
)
echo "$TABLE"
if [ "$WRITE" = "--write" ]; then
	python3 - "$TABLE" "$SEEDS" <<'PY'
import platform, subprocess, sys
table, seeds = sys.argv[1], sys.argv[2]
doc = "docs/performance.md"
text = open(doc).read()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
block = (f"<!-- store-audit -->\n## Encrypted storage: audits catch a holder that drops 10% of its shares (issue 15)\n\n"
         f"Machine: {subprocess.getoutput('nproc')} cores, {cpu}, Linux {platform.release()}.  "
         f"Command: `tests/bench/store_audit.sh {seeds} --write` (weft-sim, virtual time: the figure is a count "
         f"of challenges, not a timing).\n\n"
         "Node 1 runs `store_drop` with permille 100: it acknowledges every share and silently keeps 90%. "
         "The other three nodes audit on their randomised schedule; each challenge names a random chunk "
         "the auditor holds a record of and a random other holder.  For each run, c is the number of "
         "challenges node 1 answered up to and including its first signed \"missing\".  The model assumes "
         "each challenge independently hits a dropped share with probability 0.1.\n\n"
         + table + "\n<!-- /store-audit -->")
if "<!-- store-audit -->" in text:
    a = text.index("<!-- store-audit -->")
    b = text.index("<!-- /store-audit -->") + len("<!-- /store-audit -->")
    text = text[:a] + block + text[b:]
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
open(doc, "w").write(text)
PY
fi
