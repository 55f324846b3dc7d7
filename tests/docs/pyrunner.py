"""Runs the python examples of one page as a notebook would: in order, in one namespace.

    python -m tests.docs.pyrunner BLOCKS_JSON PROGRESS

BLOCKS_JSON lists the blocks (``file``, ``line`` of the fence, ``text``). Each is compiled under
its page's name, its lines numbered as in the page, so a traceback points into the page (and
shows its line, the process running from the repository's root, which is on sys.path as
the current folder is in an interactive session). A line is appended to
PROGRESS after each block that ran to its end; the first that raises stops the run.
"""

import json
import sys
import traceback
from pathlib import Path


def main(given: str, progress: str) -> int:
    blocks = json.loads(Path(given).read_text())
    namespace: dict = {"__name__": "__main__"}
    for block in blocks:
        where = f"{block['file']}:{block['line']}"
        # Blank lines first: the block's first line keeps its line number in the page.
        code = compile("\n" * block["line"] + block["text"], block["file"], "exec")
        try:
            exec(code, namespace)  # noqa: S102 - the page's own example, which is the point
        except BaseException:
            traceback.print_exc()
            print(f"The python block at {where} raised.", file=sys.stderr)
            return 1
        sys.stdout.flush()
        with open(progress, "a") as done:
            done.write(where + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
