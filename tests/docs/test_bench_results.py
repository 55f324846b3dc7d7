"""The benchmark results kept in bench/results/, and the table of bench/README.md that shows
the latest run's figures against their targets.

Each kept file names its tool, its date (the one in its name), the commit measured and the
machine. The table's rows name a key of the latest ``bench/run`` file (a ratio or figure of its
``bench:`` line, or a dotted path such as ``stream.open_seconds``): a figure shown in bold must
be that file's value, and a row without one must be a figure that file does not record, so a
newer run kept without updating the table fails here.
"""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "bench" / "results"
README = ROOT / "bench" / "README.md"
NAME = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-(?P<tool>[a-z-]+?)(-(?P<n>\d+))?\.json")
ROW = re.compile(r"^\| [^|]+ \| `(?P<key>[^`]+)` \| [^|]* \| (?P<latest>[^|]+) \|$")


def kept() -> dict[Path, dict]:
    # The files kept, as .gitignore keeps them: a run's own output (run.json) stays beside them
    # uncommitted until it is copied under a dated name.
    kept_files = sorted(RESULTS.glob("20??-??-??-*.json"))
    return {path: json.loads(path.read_text()) for path in kept_files}


def latest_run() -> tuple[Path, dict]:
    runs = [
        (NAME.fullmatch(path.name), path, document)
        for path, document in kept().items()
        if document["tool"] == "bench/run"
    ]
    match, path, document = max(runs, key=lambda run: (run[0]["date"], int(run[0]["n"] or 1)))
    return path, document


def value(document: dict, key: str):
    for part in ("ratios", "figures"):
        if key in document.get(part, {}):
            return document[part][key]
    found = document
    for step in key.split("."):
        if not isinstance(found, dict) or step not in found:
            return None
        found = found[step]
    return found


def test_every_kept_result_says_what_was_measured_where():
    results = kept()
    assert results, "bench/results/ keeps no run"
    for path, document in results.items():
        match = NAME.fullmatch(path.name)
        assert match, f"{path.name}: name it <date>-<tool>-<n>.json"
        assert document["ran_on"] == match["date"], path.name
        assert document["tool"], path.name
        assert re.fullmatch(r"[0-9a-f]{40}", document["commit"]), path.name
        assert re.fullmatch(r"[0-9a-f]{40}", document["recorded_in"]), path.name
        assert document["machine"]["cpus"] >= 1, path.name
        if document["tool"] == "bench/run":
            line = document["summary_line"]
            for key, figure in re.findall(r"(\S+)=([\d.]+)", line):
                assert value(document, key) == float(figure), f"{path.name}: {key}"


def test_the_readme_table_shows_the_latest_runs_figures():
    path, document = latest_run()
    text = README.read_text()
    assert f"bench/results/{path.name}" in text, "the table names the file it comes from"
    rows = [ROW.match(line) for line in text.splitlines()]
    rows = [row for row in rows if row]
    assert len(rows) >= 10
    for row in rows:
        key, latest = row["key"], row["latest"].strip()
        shown = re.match(r"\*\*([\d,.]+)\*\*", latest)
        recorded = value(document, key)
        if shown:
            assert recorded is not None, f"{key}: not in {path.name}"
            assert float(shown[1].replace(",", "")) == recorded, (
                f"{key}: {path.name} has {recorded}"
            )
        else:
            assert recorded is None, f"{key}: {path.name} records {recorded}; show it in bold"
