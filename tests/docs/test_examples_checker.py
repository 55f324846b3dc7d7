"""The examples' test checked in turn: its reading of Markdown, its split of bash blocks into
steps, and its check of shown output, on small inline samples (no server)."""

import json
from pathlib import Path

import pytest

from tests.docs.blocks import Block, language_of, parse
from tests.docs.sessions import bash_script, split_steps
from tests.docs.shapes import (
    Elided,
    Shown,
    ShownSyntaxError,
    check,
    json_values,
    mismatches,
    parse_shown,
)

PAGE = """\
# Title

<!-- not-run: needs a GitHub account -->
```bash
curl -s https://api.github.com/user
```

- In a list:

    ~~~python title="x.py"
    print(1)
    ~~~

  ```sh
  echo two
  ```

````markdown
```bash
curl inside a sample of Markdown
```
````

<!-- not-run -->
```py
pass
```

<!-- not-run: this marks nothing -->

```json
{"id": 1}
```

    indented code

```
plain
```
"""


def test_the_parser_reads_fences_as_markdown_does():
    page = parse(PAGE, "page.md")
    found = [(b.line, b.language, b.kind, b.not_run, b.text) for b in page.blocks]
    assert found == [
        (4, "bash", "bash", "needs a GitHub account", "curl -s https://api.github.com/user\n"),
        (10, "python", "python", None, "print(1)\n"),
        (14, "sh", "bash", None, "echo two\n"),
        (18, "markdown", None, None, "```bash\ncurl inside a sample of Markdown\n```\n"),
        (25, "py", "python", "", "pass\n"),
        (31, "json", None, None, '{"id": 1}\n'),
        (35, "", None, None, "indented code\n"),
        (37, "", None, None, "plain\n"),
    ]
    assert page.stray_markers == [29]
    assert [b.runs for b in page.blocks][:3] == [False, True, True]


@pytest.mark.parametrize(
    ("info", "language"),
    [
        ("bash", "bash"),
        ("Python title='x'", "python"),
        ("{.python .copy}", "python"),
        ("sh{linenums='1'}", "sh"),
        ("", ""),
    ],
)
def test_a_language_is_the_first_word_of_the_info_string(info, language):
    assert language_of(info) == language


def block(text: str, line: int = 10) -> Block:
    return Block("page.md", line, "bash", text, None)


def test_a_bash_block_splits_into_steps_at_its_shown_output():
    steps = split_steps(
        block(
            "A=1\n"
            "curl -s http://127.0.0.1:8000/v1/projects \\\n"
            "    -H 'X: y'\n"
            '# 201 {"success": true, "data": [...],\n'
            '#      "meta": {...}}\n'
            "# prose, not output\n"
            "echo done\n"
        )
    )
    assert [(s.line, s.text, s.shown and s.shown.line) for s in steps] == [
        (11, "A=1\ncurl -s http://127.0.0.1:8000/v1/projects \\\n    -H 'X: y'", 14),
        (16, "# prose, not output\necho done", None),
    ]
    assert steps[0].shown.status == 201
    script = bash_script(steps, "http://127.0.0.1:5555", Path("/t"))
    assert script.startswith("set -euo pipefail\n")
    assert "curl -s http://127.0.0.1:5555/v1/projects" in script
    assert '>"$__docs/0.out" 2>"$__docs/0.err"' in script
    assert script.endswith("printf '%s\\n' done >\"$__docs/at\"\n")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('# {"success": true}\n', "page.md:11: output shown after no command"),
        ('curl x\n# {"success": true,\necho\n', "page.md:12: the shown output ends with"),
        ("curl x\n# {success: true}\n", "page.md:12: the shown output is not JSON"),
        ('curl x\n# {"a": 1} and more\n', "page.md:12: the shown output is not JSON"),
    ],
)
def test_malformed_shown_output_is_refused_at_its_line(text, error):
    with pytest.raises(ShownSyntaxError, match=error):
        split_steps(block(text))


def test_shown_output_reads_with_elisions():
    shape = parse_shown(
        '{"success":true,"data":[...50 issues...],"meta":{"total":1,...,"next":null},'
        '"token":"eyJ...", "x": ..., "...": "...", "items": [{"id": 1}, ...],\n'
        ' "text": "over\n   two lines"}'
    )
    assert set(shape.keys) == {"success", "data", "meta", "token", "x", "items", "text"}
    assert shape.keys["data"].items == []
    assert set(shape.keys["meta"].keys) == {"total", "next"}
    assert isinstance(shape.keys["x"], Elided)
    assert len(shape.keys["items"].items) == 1


ANSWER = {
    "success": True,
    "data": {"id": 7, "name": "Rocket", "labels": ["bug"], "team": None},
    "meta": {"total": 1},
}


def shown(text: str, status: int | None = None):
    return Shown(1, status, parse_shown(text), text)


def test_an_answer_with_the_shape_shown_passes():
    output = "noise\n" + json.dumps({"first": 1}) + json.dumps(ANSWER)
    assert check(shown('{"success": true, "data": {"id": 1, ...}}', 201), output, 201) == []
    # Values differ, extra keys are fine, null matches anything, ... elides.
    assert check(shown('{"data": {"name": "x", "team": {}, "labels": [...]}}'), output, 200) == []
    assert check(shown('{"data": {"labels": ["feature"]}, "meta": {...}}'), output, None) == []


@pytest.mark.parametrize(
    ("text", "status", "got", "problem"),
    [
        ('{"data": {"id": 1, "colour": "red"}}', None, 200, "data: no key 'colour'"),
        ('{"success": true}', 201, 200, "shown status 201, got status 200"),
        ('{"success": true}', 201, None, "shown status 201, got no curl status"),
        ('{"success": false, "data": {...}}', None, 200, 'shown "success": false, got true'),
        ('{"data": {"id": "7"}}', None, 200, "data.id: shown a string, got a number"),
        ('{"data": [...]}', None, 200, "data: shown a list, got an object"),
        ('{"data": {"labels": [{"id": 1}]}}', None, 200, "data.labels: no item has the shape"),
        ('{"meta": {"total": 1, "page": 1}}', None, 200, "meta: no key 'page'"),
    ],
)
def test_drift_from_the_shape_shown_fails(text, status, got, problem):
    problems = check(shown(text, status), json.dumps(ANSWER), got)
    assert any(problem in found for found in problems), problems


def test_output_that_is_not_json_fails_a_shown_output():
    assert check(shown('{"success": true}'), "HTTP/1.1 200 OK\n", 200) == [
        "the command printed no JSON to compare with the output shown"
    ]


def test_json_values_are_found_among_headers_and_back_to_back():
    output = 'HTTP/1.1 200 OK\r\nEtag: "x"\r\n\r\n{"a": 1}{"b": [2]}\n[3]\nnot { json\n'
    assert json_values(output) == [{"a": 1}, {"b": [2]}, [3]]


def test_an_empty_list_answer_lacks_the_items_shown():
    assert mismatches(parse_shown('[{"id": 1}]'), []) == [
        "the answer: shown with items, got an empty list"
    ]


def test_a_shown_status_or_failure_means_an_error_is_expected():
    assert shown('{"success": true}', 404).shows_error
    assert shown('{"success": false, "error": {...}}').shows_error
    assert not shown('{"success": true, "data": {...}}').shows_error
