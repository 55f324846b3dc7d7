"""Downloads (an export's archive) against a real (scripted) HTTP server: streamed into a file
or a path, never left half-written under the name asked for, errors raised as everywhere."""

import asyncio
import io
import os

import collab_client
import pytest
from collab_client import AsyncCollab, Collab
from scripted import Answer, ScriptedServer, error

ARCHIVE = os.urandom(3 * 65536 + 17)
PATH = "/v1/workspaces/3/exports/9/download"


def archive(**options) -> Answer:
    return Answer(raw=ARCHIVE, content_type="application/gzip", **options)


def test_a_download_streams_into_a_path(tmp_path):
    target = tmp_path / "acme.tar.gz"
    with ScriptedServer([archive()]) as server, Collab(server.url, api_key="clb_test") as client:
        written = client.exports.download(3, 9, to=str(target))
    assert written == len(ARCHIVE)
    assert target.read_bytes() == ARCHIVE
    assert [path.name for path in tmp_path.iterdir()] == ["acme.tar.gz"]
    [seen] = server.seen
    assert (seen.method, seen.path) == ("GET", PATH)
    assert seen.headers["authorization"] == "Bearer clb_test"


def test_a_download_writes_into_an_open_file(tmp_path):
    out = io.BytesIO()
    with ScriptedServer([archive()]) as server, Collab(server.url, api_key="clb_test") as client:
        assert client.exports.download(3, 9, to=out) == len(ARCHIVE)
    assert out.getvalue() == ARCHIVE
    assert not out.closed, "a file given stays the caller's to close"


def test_an_error_raises_and_writes_nothing(tmp_path):
    target = tmp_path / "early.tar.gz"
    answers = [error(409, "CONFLICT", "Export 9 is running.")]
    with (
        ScriptedServer(answers) as server,
        Collab(server.url, api_key="clb_test") as client,
        pytest.raises(collab_client.Conflict) as refused,
    ):
        client.exports.download(3, 9, to=target)
    assert refused.value.status == 409 and "running" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_download_cut_off_leaves_no_file(tmp_path):
    target = tmp_path / "cut.tar.gz"
    with (
        ScriptedServer([archive(cut=1000)]) as server,
        Collab(server.url, api_key="clb_test") as client,
        pytest.raises(collab_client.APIConnectionError),
    ):
        client.exports.download(3, 9, to=target)
    assert list(tmp_path.iterdir()) == []


def test_the_async_client_downloads_too(tmp_path):
    target = tmp_path / "async.tar.gz"

    async def scenario(url: str) -> int:
        async with AsyncCollab(url, api_key="clb_test") as client:
            return await client.exports.download(3, 9, to=target)

    with ScriptedServer([archive()]) as server:
        assert asyncio.run(scenario(server.url)) == len(ARCHIVE)
    assert target.read_bytes() == ARCHIVE
