"""How ``pytest -n N`` deals the suite to its workers: the tests that start processes, in lanes.

The tests marked ``live`` start a server, a worker or a browser and mostly wait on them; the
others compute. xdist's ``load`` gives each worker a quarter of its share up front, in the
collection's order, and the slow tests come first: with ``-n 2`` every live test landed in the
first worker's share, one after the other (about 500 s), while the second worker ran out of
work and both cores idled through the waits.

Here, with N workers, the live tests are dealt to N // 2 lanes: whole modules (their
module-scoped servers start once), longest first, each to the least loaded lane, by the
``slow(seconds=...)`` marks. Worker k runs lane k first; every other test goes, as xdist's
``load`` sends them, to whichever worker runs short. With ``-n 4`` on two cores, two workers
wait on their processes while the other two keep the cores busy.

Each worker collects on its own, and only the controller schedules: the first worker writes
its lanes (test id to lane) to a file the controller named (``workerinput``), which the
scheduler reads once every worker has collected. Without the file, xdist's ``load`` as is.
"""

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from xdist.scheduler import LoadScheduling

KEY = "collab_lanes"
_path = pytest.StashKey[Path]()


def seconds(item: pytest.Item) -> float:
    """What the test takes on two loaded cores, by its ``slow`` mark (3 s unless it says)."""
    mark = item.get_closest_marker("slow")
    return 0.0 if mark is None else float(mark.kwargs.get("seconds", 3))


def module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def deal(items: list[pytest.Item], lanes: int) -> dict[str, int]:
    """The live tests' lanes: modules, heaviest first, each to the least loaded lane."""
    live: dict[str, list[str]] = defaultdict(list)
    weight: dict[str, float] = defaultdict(float)
    for item in items:
        if item.get_closest_marker("live"):
            live[module(item)].append(item.nodeid)
            weight[module(item)] += max(seconds(item), 1.0)
    loads = [0.0] * lanes
    dealt = {}
    for name in sorted(live, key=lambda name: -weight[name]):
        lane = loads.index(min(loads))
        loads[lane] += weight[name]
        dealt.update(dict.fromkeys(live[name], lane))
    return dealt


def configure(config: pytest.Config) -> None:
    """In the controller of ``-n N``: name the file the lanes are written to."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    if config.getvalue("dist") != "load":
        return
    handle, name = tempfile.mkstemp(prefix="collab-lanes-", suffix=".json")
    os.close(handle)
    os.unlink(name)  # written whole by the first worker, when it has collected
    config.stash[_path] = Path(name)


def unconfigure(config: pytest.Config) -> None:
    if _path in config.stash:
        config.stash[_path].unlink(missing_ok=True)


def configure_node(node) -> None:
    """Tell each worker where its lanes go."""
    if _path in node.config.stash:
        node.workerinput[KEY] = str(node.config.stash[_path])


def write(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the first worker, once collected (and deselected): the lanes, to the file."""
    workerinput = getattr(config, "workerinput", {})
    if KEY not in workerinput or workerinput.get("workerid") != "gw0":
        return
    lanes = int(workerinput["workercount"]) // 2
    if lanes < 1:
        return
    path = Path(workerinput[KEY])
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(deal(items, lanes)))
    partial.replace(path)


class LaneScheduling(LoadScheduling):
    """xdist's ``load``, but for the lanes: worker k is sent lane k's tests first."""

    def __init__(self, config: pytest.Config, log=None):
        super().__init__(config, log)
        self.lanes_path = config.stash[_path]
        self.lane_items: set[int] = set()

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None or not self._check_nodes_have_same_collection():
            super().schedule()
            return
        try:
            lanes = json.loads(self.lanes_path.read_text())
        except (OSError, ValueError):
            lanes = {}
        collection = next(iter(self.node2collection.values()))
        if not lanes or not collection:
            super().schedule()
            return
        self.collection = collection
        if self.maxschedchunk is None:
            self.maxschedchunk = len(collection)
        dealt: dict[int, list[int]] = defaultdict(list)
        rest = []
        for index, nodeid in enumerate(collection):
            lane = lanes.get(nodeid)
            if lane is not None and lane < len(self.nodes):
                dealt[lane].append(index)
            else:
                rest.append(index)
        self.pending[:] = rest
        for lane, node in enumerate(self.nodes):
            if dealt[lane]:
                self.lane_items.update(dealt[lane])
                self.node2pending[node].extend(dealt[lane])
                node.send_runtest_some(dealt[lane])
        for node in self.nodes:
            self.check_schedule(node)

    def check_schedule(self, node, duration: float = 0) -> None:
        """A worker in its lane gets nothing more until the lane is nearly run."""
        if sum(index in self.lane_items for index in self.node2pending[node]) > 2:
            return
        super().check_schedule(node, duration)


def make_scheduler(config: pytest.Config, log):
    if _path in config.stash and config.getvalue("dist") == "load":
        return LaneScheduling(config, log)
    return None
