"""The fenced blocks of the documentation, as the examples' test sees them.

The pages are README.md, docs/**/*.md and the root pages the site includes (SECURITY.md,
CONTRIBUTING.md, CHANGELOG.md, bench/README.md, and any Markdown file a docs page includes
whole with a ``--8<-- "path"`` line), those that exist. They are parsed as CommonMark
(markdown-it-py), so fences of backticks or tildes, fences indented inside lists or quotes,
fences holding shorter fences and info strings such as ``python title="x"`` are read as a
Markdown renderer reads them; indented code blocks are blocks too (of no language).

A block's language is the first word of its info string (or the first ``.class`` of an
attribute list ``{.python ...}``), in lower case. ``bash``, ``sh`` and ``shell`` blocks run in
the page's bash session, ``python`` and ``py`` blocks in its Python namespace; the others
never run. A runnable block that cannot run says why on the line right before its fence:
``<!-- not-run: the reason -->``; so may a block of another language that holds a curl command
or uses the client (a transcript, a listing), which the test refuses otherwise.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

# The kind of session each runnable language runs in.
RUNNABLE = {
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
    "python": "python",
    "py": "python",
    "python3": "python",
}

ROOT_PAGES = ("README.md", "SECURITY.md", "CONTRIBUTING.md", "CHANGELOG.md", "bench/README.md")

# `<!-- not-run: reason -->`, maybe indented or quoted like the fence it precedes. A marker
# without a reason matches with an empty one, so that it can be refused.
NOT_RUN = re.compile(r"^[\s>]*<!--\s*not-run\b:?(.*?)-->\s*$")
SNIPPET = re.compile(r"""^\s*-{1,}8<-{1,}\s+["']([^"']+?\.md)["']\s*$""")

_markdown = MarkdownIt("commonmark")


@dataclass(frozen=True)
class Block:
    file: str  # the page, relative to the repository's root
    line: int  # the line of the opening fence (of an indented block: its first), from 1
    language: str  # "" when the fence names none
    text: str
    not_run: str | None  # the marker's reason ("" when it gives none); None: no marker

    @property
    def kind(self) -> str | None:
        """``"bash"`` or ``"python"``: the session the block runs in; None: never run."""
        return RUNNABLE.get(self.language)

    @property
    def runs(self) -> bool:
        return self.kind is not None and self.not_run is None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def line_of(self, index: int) -> int:
        """The page's line number of a fenced block's ``index``-th line (from 0)."""
        return self.line + 1 + index


@dataclass(frozen=True)
class Page:
    file: str
    blocks: list[Block]
    stray_markers: list[int]  # lines of not-run markers that precede no fence


def language_of(info: str) -> str:
    info = info.strip()
    if info.startswith("{"):
        found = re.search(r"(?:^|\s)\.([\w+-]+)", info[1:])
        return found.group(1).lower() if found else ""
    word = re.match(r"[^\s{]*", info)
    return word.group().lower() if word else ""


def parse(text: str, file: str) -> Page:
    lines = text.splitlines()
    blocks: list[Block] = []
    inside: set[int] = set()  # lines (from 0) of every code block, fences included
    openings: set[int] = set()
    for token in _markdown.parse(text):
        if token.type not in ("fence", "code_block") or token.map is None:
            continue
        start, end = token.map
        inside.update(range(start, end))
        language = language_of(token.info) if token.type == "fence" else ""
        not_run = None
        if token.type == "fence" and start > 0:
            marker = NOT_RUN.match(lines[start - 1])
            if marker:
                not_run = marker.group(1).strip()
                openings.add(start)
        blocks.append(Block(file, start + 1, language, token.content, not_run))
    stray = [
        number + 1
        for number, content in enumerate(lines)
        if number not in inside and NOT_RUN.match(content) and number + 1 not in openings
    ]
    return Page(file, blocks, stray)


def page_files(root: Path) -> list[str]:
    """Every page whose examples are collected, relative to ``root``, in a stable order."""
    docs = sorted(path.relative_to(root).as_posix() for path in (root / "docs").rglob("*.md"))
    found = [name for name in ROOT_PAGES if (root / name).is_file()] + docs
    for name in docs:
        for content in (root / name).read_text(encoding="utf-8").splitlines():
            included = SNIPPET.match(content)
            if included and (root / included.group(1)).is_file():
                path = (root / included.group(1)).resolve().relative_to(root.resolve())
                if path.as_posix() not in found:
                    found.append(path.as_posix())
    return found


def collect(root: Path) -> list[Page]:
    return [parse((root / name).read_text(encoding="utf-8"), name) for name in page_files(root)]
