"""`make bench`: run every bench/bench_*.py, print the table, write bench/results.json."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main(selected: list[str]) -> None:
    # A selection updates its rows of results.json and keeps the others.
    saved = HERE / "results.json"
    results: dict[str, dict[str, object]] = (
        json.loads(saved.read_text()) if selected and saved.exists() else {}
    )
    for module in sorted(m.name for m in pkgutil.iter_modules([str(HERE)])):
        if not module.startswith("bench_") or (selected and module not in selected):
            continue
        print(f"running {module} ...", file=sys.stderr, flush=True)
        results.update(importlib.import_module(f"bench.{module}").run())
    saved.write_text(json.dumps(results, indent=2) + "\n")
    print("| name | ours | anchor | ratio |")
    print("|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| `{name}` | {r['value']:,} {r['unit']} | {r['anchor_value']:,} ({r['anchor']}) "
            f"| {r['ratio']} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
