"""The private-address guard (collab/netguard.py) and git's pinning to what it checked.

A test of the guard never connects to what it judges: it resolves and decides only. IP
literals are decoded by the guard itself (the tests check that no resolver is asked), names go
to a fake ``getaddrinfo`` holding the answers below, and every way out of the process (a TCP
connection by urllib3 or socket, a git subprocess) raises for the whole module.
"""

import socket
import subprocess
from urllib.parse import urlsplit

import pytest
import urllib3.util.connection

from collab import netguard
from gitintegration import git
from gitintegration.mirrors import clone_url_check
from gitintegration.models import Repository
from gitintegration.services import repository_sync
from notifications.models import Delivery, DeliveryAttempt, Webhook
from tests.conftest import assert_error, assert_ok

# What the fake resolver answers; other *.example.test names do not resolve.
DNS = {
    "public.example.test": ["8.8.8.8", "2606:4700:4700::1111"],
    "intranet.example.test": ["10.1.2.3"],
    "metadata.example.test": ["169.254.169.254"],
    "loopback6.example.test": ["::1"],
    "mapped.example.test": ["::ffff:127.0.0.1"],
    "nat64.example.test": ["64:ff9b::a9fe:a9fe"],
    "scoped.example.test": ["fe80::1%eth0"],
    "mixed.example.test": ["8.8.8.8", "2606:4700:4700::1111", "10.0.0.1"],
}
RESOLVER_DETAIL = "resolver-detail-that-must-not-leak"


class FakeDNS:
    """``socket.getaddrinfo`` for *.example.test names; other hosts (the test's own Redis)
    go to the real one. ``asked`` lists every host asked about, in order."""

    def __init__(self, real):
        self.real = real
        self.answers = {name: list(addresses) for name, addresses in DNS.items()}
        self.asked: list[str] = []

    def __call__(self, host, port, *args, **kwargs):
        self.asked.append(host)
        if not str(host).endswith((".example.test", ".example.test.")):
            return self.real(host, port, *args, **kwargs)
        addresses = self.answers.get(str(host).rstrip("."))
        if addresses is None:
            raise socket.gaierror(socket.EAI_NONAME, RESOLVER_DETAIL)
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port or 0, 0, 0))
            if ":" in address
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port or 0))
            for address in addresses
        ]


def _must_not_run(*args, **kwargs):
    raise AssertionError(f"the guard's tests connect nowhere and run nothing: {args!r}")


@pytest.fixture(autouse=True)
def dns(monkeypatch):
    fake = FakeDNS(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return fake


@pytest.fixture(autouse=True)
def no_way_out(monkeypatch):
    monkeypatch.setattr(socket, "create_connection", _must_not_run)
    monkeypatch.setattr(urllib3.util.connection, "create_connection", _must_not_run)
    monkeypatch.setattr(subprocess, "run", _must_not_run)


@pytest.fixture
def guarded(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = False
    return settings


# The three refusals, written out: they say the host is not allowed, never what it resolved to.


def literal_refused(host: str) -> str:
    return (
        f"The host {host!r} is not allowed: it is a loopback, private, link-local or "
        "otherwise non-public address."
    )


def name_refused(host: str) -> str:
    return (
        f"The host {host!r} is not allowed: it resolves to a loopback, private, link-local or "
        "otherwise non-public address, or does not resolve."
    )


def invalid(host: str) -> str:
    return (
        f"The host {host!r} is not allowed: give a host name (ASCII letters, digits, '-', '.'; "
        "international names in their xn-- form) or a plain IP address."
    )


LITERAL, NAME, INVALID = "literal", "name", "invalid"
REFUSALS = {LITERAL: literal_refused, NAME: name_refused, INVALID: invalid}

# (webhook-shaped URL, verdict): a refusal kind, or the addresses it passes with.
FORMS = [
    # IPv4 loopback in every spelling a resolver or URL parser accepts.
    ("http://127.0.0.1/", LITERAL),
    ("http://2130706433/", LITERAL),  # decimal
    ("http://0177.0.0.1/", LITERAL),  # octal
    ("http://017700000001/", LITERAL),  # octal, one number
    ("http://0x7f.0.0.1/", LITERAL),  # hex label
    ("http://0x7f000001/", LITERAL),  # hex, one number
    ("http://0x7f.1/", LITERAL),  # hex, short
    ("http://127.1/", LITERAL),  # short
    ("http://127.0.0.1./", LITERAL),  # final dot
    ("http://10.1/", LITERAL),  # short private (10.0.0.1)
    # IPv4 ranges that are not public.
    ("http://0.0.0.0/", LITERAL),
    ("http://0/", LITERAL),
    ("http://10.0.0.5/", LITERAL),
    ("http://172.16.0.1/", LITERAL),
    ("http://172.31.255.254/", LITERAL),
    ("http://192.168.1.1/", LITERAL),
    ("http://169.254.169.254/latest/meta-data", LITERAL),  # cloud metadata
    ("http://100.64.0.1/", LITERAL),  # carrier-grade NAT
    ("http://100.127.255.254/", LITERAL),
    ("http://255.255.255.255/", LITERAL),  # broadcast
    ("http://224.0.0.1/", LITERAL),  # multicast
    ("http://239.255.255.250/", LITERAL),
    ("http://192.0.2.1/", LITERAL),  # documentation
    ("http://198.51.100.7/", LITERAL),
    ("http://203.0.113.9/", LITERAL),
    ("http://198.18.0.1/", LITERAL),  # benchmarking
    ("http://198.19.255.255/", LITERAL),
    ("http://240.0.0.1/", LITERAL),  # reserved
    ("http://192.0.0.8/", LITERAL),  # IETF protocol assignments
    # IPv6, bracketed, and the IPv4 addresses it can carry.
    ("http://[::1]/", LITERAL),
    ("http://[::]/", LITERAL),
    ("http://[::ffff:127.0.0.1]/", LITERAL),  # mapped
    ("http://[::ffff:7f00:1]/", LITERAL),
    ("http://[::ffff:169.254.169.254]/", LITERAL),
    ("http://[::127.0.0.1]:9/", LITERAL),  # compatible (deprecated)
    ("http://[::7f00:1]/", LITERAL),
    ("http://[::a9fe:a9fe]/", LITERAL),
    ("http://[::8.8.8.8]/", LITERAL),  # all of ::/96, even with a public IPv4
    ("http://[::ffff:0:7f00:1]/", LITERAL),  # IPv4-translated
    ("http://[64:ff9b::7f00:1]/", LITERAL),  # NAT64
    ("http://[64:ff9b::a9fe:a9fe]/", LITERAL),
    ("http://[64:ff9b:1::a9fe:a9fe]/", LITERAL),  # local-use NAT64
    ("http://[64:ff9b:1::808:808]/", LITERAL),  # ... refused whatever it carries
    ("http://[2002:7f00:1::1]/", LITERAL),  # 6to4
    ("http://[2002:a9fe:a9fe::1]/", LITERAL),
    ("http://[2002:a00:1::]/", LITERAL),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", LITERAL),  # Teredo client 127.0.0.1
    ("http://[2001:0:4136:e378:8000:63bf:5601:5601]/", LITERAL),  # client 169.254.169.254
    ("http://[2001:0:a00:1:8000:63bf:f7f7:f7f7]/", LITERAL),  # Teredo server 10.0.0.1
    ("http://[fe80::1]/", LITERAL),  # link-local
    ("http://[fc00::1]/", LITERAL),  # unique local
    ("http://[fd12:3456:789a::1]/", LITERAL),
    ("http://[fec0::1]/", LITERAL),  # site-local
    ("http://[ff02::1]/", LITERAL),  # multicast
    ("http://[ff0e::1]/", LITERAL),
    ("http://[2001:db8::1]/", LITERAL),  # documentation
    ("http://[3fff::1]/", LITERAL),
    ("http://[100::1]/", LITERAL),  # discard-only
    # Hosts no parser may read two ways.
    ("http://[fe80::1%25eth0]/", INVALID),  # zone-scoped
    ("http://[2606:4700:4700::1111%25eth0]/", INVALID),
    ("http://1.2.3.256/", INVALID),
    ("http://1.2.3.4.5/", INVALID),
    ("http://08.0.0.1/", INVALID),  # not octal
    ("http://intranet.example.123/", INVALID),  # a numeric last label is an IPv4 literal
    ("http://ex%61mple.test/", INVALID),  # percent-encoded
    ("http://b\u00fccher.example/", INVALID),  # not in its xn-- form
    ("http://a..example.test/", INVALID),
    ("http://-x.example.test/", INVALID),
    # Names: refused with one message, whatever the resolver answered.
    ("http://localhost/", NAME),
    ("http://LOCALHOST./", NAME),
    ("http://api.localhost/", NAME),
    ("http://intranet.example.test/", NAME),
    ("http://metadata.example.test/", NAME),
    ("http://loopback6.example.test/", NAME),
    ("http://mapped.example.test/", NAME),
    ("http://nat64.example.test/", NAME),
    ("http://scoped.example.test/", NAME),
    ("http://mixed.example.test/", NAME),  # one private address among public ones
    ("http://nowhere.example.test/", NAME),  # does not resolve
    # Public: these pass (decided only; nothing is contacted).
    ("http://8.8.8.8/", ["8.8.8.8"]),
    ("http://134744072/", ["8.8.8.8"]),
    ("http://1.1/", ["1.0.0.1"]),
    ("https://[2606:4700:4700::1111]/", ["2606:4700:4700::1111"]),
    ("http://[::ffff:8.8.8.8]/", ["::ffff:808:808"]),
    ("http://[64:ff9b::808:808]/", ["64:ff9b::808:808"]),
    ("http://[2002:808:808::1]/", ["2002:808:808::1"]),
    ("http://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/", ["2001:0:4136:e378:8000:63bf:f7f7:f7f7"]),
    ("http://public.example.test/", ["8.8.8.8", "2606:4700:4700::1111"]),
    ("http://PUBLIC.example.test./", ["8.8.8.8", "2606:4700:4700::1111"]),
]


def host_and_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def test_the_table_is_large_and_has_no_repeats():
    urls = [url for url, _ in FORMS]
    assert len(set(urls)) == len(urls) >= 40


@pytest.mark.parametrize("url, verdict", FORMS)
def test_the_guard_decides_every_form(guarded, dns, url, verdict):
    host, port = host_and_port(url)
    if isinstance(verdict, list):
        assert netguard.resolve(host, port) == verdict
    else:
        with pytest.raises(netguard.UnsafeAddress) as caught:
            netguard.resolve(host, port)
        assert str(caught.value) == REFUSALS[verdict](host)
        assert RESOLVER_DETAIL not in str(caught.value)
    # Literals, malformed hosts and localhost are decided without asking any resolver.
    is_dns_name = host.rstrip(".").endswith(".example.test") and verdict != INVALID
    assert dns.asked == ([host] if is_dns_name else [])
    if isinstance(verdict, list):
        assert netguard.pin(host, port) == verdict[0]


@pytest.mark.parametrize("url, verdict", FORMS)
def test_webhook_registration_answers_422_naming_the_field(api, world, guarded, url, verdict):
    body = {"url": url, "events": ["issue.created"], "secret": "s3cret-value"}
    response = api.owner.post(f"/v1/projects/{world.project.pk}/webhooks", body, format="json")
    if isinstance(verdict, list):
        assert_ok(response, 201)
        assert Webhook.objects.get().url == url
        return
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert error["details"] == {"url": [REFUSALS[verdict](host_and_port(url)[0])]}
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("::ffff:8.8.8.8", True),
        ("64:ff9b::808:808", True),
        ("2002:808:808::1", True),
        ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", True),
        ("127.0.0.1", False),
        ("::ffff:127.0.0.1", False),
        ("fe80::1%eth0", False),  # as getaddrinfo spells a scoped answer
        ("2606:4700:4700::1111%eth0", False),
        ("127.1", False),  # not an address's standard notation: unparseable, refused
        ("0x7f000001", False),
        ("8.8.8.8.8", False),
        ("not-an-address", False),
        ("", False),
    ],
)
def test_is_public_refuses_what_it_cannot_parse(address, public):
    assert netguard.is_public(address) is public


def test_without_the_guard_addresses_pass_but_malformed_hosts_do_not(settings, dns):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    assert netguard.resolve("0x7f.1", 80) == ["127.0.0.1"]
    assert netguard.resolve("::ffff:7f00:1", 80) == ["::ffff:7f00:1"]
    assert netguard.resolve("intranet.example.test", 80) == ["10.1.2.3"]
    with pytest.raises(netguard.UnsafeAddress) as caught:
        netguard.resolve("nowhere.example.test", 80)
    # Nothing to hide from a developer, but the resolver's text is never shown.
    assert str(caught.value) == "The host 'nowhere.example.test' does not resolve."
    with pytest.raises(netguard.UnsafeAddress) as caught:
        netguard.resolve("fe80::1%eth0", 80)
    assert str(caught.value) == invalid("fe80::1%eth0")


# Git remotes ------------------------------------------------------------------------------

# (clone URL, host the guard judges, verdict)
GIT_FORMS = [
    ("https://127.0.0.1/r.git", "127.0.0.1", LITERAL),
    ("https://[::127.0.0.1]/r.git", "::127.0.0.1", LITERAL),
    ("ssh://[::127.0.0.1]/x.git", "::127.0.0.1", LITERAL),
    ("ssh://git@[::ffff:7f00:1]:2222/x.git", "::ffff:7f00:1", LITERAL),
    ("ssh://git@[64:ff9b::a9fe:a9fe]/x.git", "64:ff9b::a9fe:a9fe", LITERAL),
    ("git@[2002:a9fe:a9fe::1]:team/r.git", "2002:a9fe:a9fe::1", LITERAL),
    ("git@127.1:r.git", "127.1", LITERAL),
    ("git://0x7f.1/r.git", "0x7f.1", LITERAL),
    ("git://2130706433/r.git", "2130706433", LITERAL),
    ("https://bot:token@169.254.169.254/r.git", "169.254.169.254", LITERAL),
    ("ssh://git@intranet.example.test/r.git", "intranet.example.test", NAME),
    ("git@metadata.example.test:r.git", "metadata.example.test", NAME),
    ("https://nowhere.example.test/r.git", "nowhere.example.test", NAME),
    ("git://localhost/r.git", "localhost", NAME),
    ("https://ex%61mple.test/r.git", "ex%61mple.test", INVALID),
]


@pytest.mark.parametrize("url, host, verdict", GIT_FORMS)
def test_repository_registration_answers_422_naming_the_field(
    api, world, guarded, url, host, verdict
):
    body = {"name": "r", "clone_url": url}
    response = api.owner.post(f"/v1/projects/{world.project.pk}/repositories", body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert error["details"] == {"clone_url": [REFUSALS[verdict](host)]}
    assert not Repository.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://public.example.test/r.git",
        "ssh://git@public.example.test:2222/r.git",
        "git@public.example.test:team/r.git",
        "git://[2606:4700:4700::1111]/r.git",
        "https://[2002:808:808::1]/r.git",
    ],
)
def test_public_remotes_pass_the_check(guarded, url):
    assert clone_url_check(clone_url=url) == url


@pytest.mark.parametrize(
    "url",
    [
        "ssh://a%2fb@public.example.test/r.git",  # git decodes it: host "a"
        "git://public.example.test%2f@127.0.0.1/r.git",
        "https://a@b@public.example.test/r.git",  # two "@": parsers disagree on the host
        "https://public.example.test\\@127.0.0.1/r.git",
        "git://user@public.example.test/r.git",
        "ext::sh -c touch% /tmp/pwned",
        "public.example.test::r.git",
        "git+ssh://public.example.test/r.git",
        "HTTPS://public.example.test/r.git",  # git reads schemes case-sensitively
        "http://public.example.test/r.git",
        "https:///no-host",
    ],
)
def test_urls_git_could_read_differently_are_refused(guarded, dns, url):
    with pytest.raises(ValueError):
        git.remote_parse(url)
    with pytest.raises(git.RemoteRefused):
        git.remote_pin(url)
    assert dns.asked == []


# Pinning: what git is told, for each scheme (built only; git is not run).

SSH_BASE = "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new"


@pytest.mark.parametrize(
    "url, pinned",
    [
        (
            "https://public.example.test/team/r.git",
            git.Pinned(
                "https://public.example.test/team/r.git",
                config=(
                    "-c",
                    "http.curloptResolve=public.example.test:443:8.8.8.8,[2606:4700:4700::1111]",
                    "-c",
                    "http.followRedirects=false",
                ),
            ),
        ),
        (
            "https://bot:t%40ken@public.example.test:8443/r.git",
            git.Pinned(
                "https://bot:t%40ken@public.example.test:8443/r.git",
                config=(
                    "-c",
                    "http.curloptResolve=public.example.test:8443:8.8.8.8,[2606:4700:4700::1111]",
                    "-c",
                    "http.followRedirects=false",
                ),
            ),
        ),
        (
            "https://public.example.test./r.git",
            git.Pinned(
                "https://public.example.test./r.git",
                config=(
                    "-c",
                    "http.curloptResolve=public.example.test.:443:8.8.8.8,[2606:4700:4700::1111]",
                    "-c",
                    "http.curloptResolve=public.example.test:443:8.8.8.8,[2606:4700:4700::1111]",
                    "-c",
                    "http.followRedirects=false",
                ),
            ),
        ),
        # A literal in any spelling is given to git in its standard one.
        ("https://bot:pw@134744072/r.git", git.Pinned("https://bot:pw@8.8.8.8/r.git")),
        (
            "https://[2606:4700:4700:0::1111]:8443/r.git",
            git.Pinned("https://[2606:4700:4700::1111]:8443/r.git"),
        ),
        (
            "ssh://git@public.example.test/team/r.git",
            git.Pinned(
                "ssh://git@public.example.test/team/r.git",
                env={
                    "GIT_SSH_COMMAND": f"{SSH_BASE} -o HostName=8.8.8.8 "
                    "-o HostKeyAlias=public.example.test"
                },
            ),
        ),
        (
            "ssh://git@public.example.test:2222/r.git",
            git.Pinned(
                "ssh://git@public.example.test:2222/r.git",
                env={
                    "GIT_SSH_COMMAND": f"{SSH_BASE} -o HostName=8.8.8.8 "
                    "-o 'HostKeyAlias=[public.example.test]:2222'"
                },
            ),
        ),
        (
            "git@public.example.test:team/r.git",
            git.Pinned(
                "git@public.example.test:team/r.git",
                env={
                    "GIT_SSH_COMMAND": f"{SSH_BASE} -o HostName=8.8.8.8 "
                    "-o HostKeyAlias=public.example.test"
                },
            ),
        ),
        ("git://public.example.test/r.git", git.Pinned("git://8.8.8.8/r.git")),
        ("git://public.example.test:9419/r.git", git.Pinned("git://8.8.8.8:9419/r.git")),
        ("git://[::ffff:8.8.8.8]/r.git", git.Pinned("git://[::ffff:808:808]/r.git")),
    ],
)
def test_git_is_pinned_to_the_checked_addresses(guarded, monkeypatch, url, pinned):
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    assert git.remote_pin(url) == pinned


def test_ssh_pinning_keeps_the_operators_ssh_command(guarded, monkeypatch):
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i deploy_key -o IdentitiesOnly=yes")
    pinned = git.remote_pin("git@public.example.test:r.git")
    assert pinned.env == {
        "GIT_SSH_COMMAND": "ssh -i deploy_key -o IdentitiesOnly=yes -o HostName=8.8.8.8 "
        "-o HostKeyAlias=public.example.test"
    }


def test_an_ipv6_answer_is_pinned_for_ssh_and_git(guarded, dns):
    dns.answers["public.example.test"] = ["2606:4700:4700::1111", "8.8.8.8"]
    ssh = git.remote_pin("ssh://public.example.test/r.git")
    assert ssh.env["GIT_SSH_COMMAND"].endswith(
        "-o HostName=2606:4700:4700::1111 -o HostKeyAlias=public.example.test"
    )
    assert git.remote_pin("git://public.example.test/r.git").url == (
        "git://[2606:4700:4700::1111]/r.git"
    )


@pytest.mark.parametrize("url", ["file:///srv/git/r.git", "/srv/git/r.git", "./r.git"])
def test_local_repositories_are_not_pinned(settings, dns, url):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = True
    assert git.remote_pin(url) == git.Pinned(url)
    assert dns.asked == []


def test_pinning_refuses_what_the_guard_refuses(guarded, dns):
    with pytest.raises(git.RemoteRefused) as caught:
        git.remote_pin("ssh://git@intranet.example.test/r.git")
    assert str(caught.value) == name_refused("intranet.example.test")


def test_every_git_command_that_reaches_the_remote_is_pinned(
    guarded, settings, tmp_path, monkeypatch
):
    """fetch, ls-remote and push run with the pin; the local commands around them need none."""
    settings.GIT_STORAGE_DIR = tmp_path
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    url = "ssh://git@public.example.test/r.git"
    calls = []

    def record(argv, **kwargs):
        calls.append((argv[1:], kwargs["env"]))
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(subprocess, "run", record)
    git.mirror_fetch(repository_id=1, url=url)
    git.push_branch(tmp_path, url=url, branch="main", new_sha="b" * 40, expected_sha="a" * 40)
    pinned_command = f"{SSH_BASE} -o HostName=8.8.8.8 -o HostKeyAlias=public.example.test"
    remote_commands = [args[0] for args, env in calls if url in args]
    assert remote_commands == ["fetch", "ls-remote", "push"]
    for args, env in calls:
        if url in args:
            assert env["GIT_SSH_COMMAND"] == pinned_command, args
        else:
            assert env["GIT_SSH_COMMAND"] == SSH_BASE, args

    calls.clear()
    git.remote_default_branch(url="https://public.example.test/r.git")
    [(args, _env)] = calls
    assert args[:4] == [
        "-c",
        "http.curloptResolve=public.example.test:443:8.8.8.8,[2606:4700:4700::1111]",
        "-c",
        "http.followRedirects=false",
    ]
    assert args[4:] == ["ls-remote", "--symref", "--", "https://public.example.test/r.git", "HEAD"]


# At connect time, in the worker ------------------------------------------------------------


def test_a_sync_refuses_a_name_that_now_resolves_privately(world, guarded, dns, tmp_path):
    """Registered while the name was public; by the sync it points inside: git never runs."""
    guarded.GIT_STORAGE_DIR = tmp_path
    url = "https://public.example.test/r.git"
    assert clone_url_check(clone_url=url) == url
    repository = Repository.objects.create(project=world.project, name="r", clone_url=url)
    dns.answers["public.example.test"] = ["10.0.0.7"]
    repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    assert repository.sync_status == "failed"
    assert repository.sync_error == name_refused("public.example.test")


def test_git_rechecks_when_it_connects_after_the_services_check(
    world, guarded, dns, tmp_path, monkeypatch
):
    """DNS rebinding between the service's check and git's own connection: the answer git
    would get is checked again, and git does not run."""
    guarded.GIT_STORAGE_DIR = tmp_path
    url = "ssh://git@public.example.test/r.git"
    repository = Repository.objects.create(project=world.project, name="r", clone_url=url)
    answers = iter([["8.8.8.8"], ["169.254.169.254"]])
    real = dns.real

    def rebinding(host, port, *args, **kwargs):
        if host != "public.example.test":
            return real(host, port, *args, **kwargs)
        dns.answers[host] = next(answers)
        return FakeDNS.__call__(dns, host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    assert repository.sync_status == "failed"
    assert repository.sync_error == name_refused("public.example.test")
    assert next(answers, None) is None  # both looked up: the service's check, then git's pin


def test_a_delivery_refuses_a_name_that_now_resolves_privately(
    api, world, guarded, dns, django_capture_on_commit_callbacks
):
    """The webhook was registered while its name was public; at delivery, in the worker, the
    name points inside: nothing is connected, and the attempt logs the guard's refusal."""
    body = {"url": "https://public.example.test/hook", "events": ["issue.created"]}
    response = api.owner.post(f"/v1/projects/{world.project.pk}/webhooks", body, format="json")
    assert_ok(response, 201)
    dns.answers["public.example.test"] = ["8.8.8.8", "127.0.0.1"]
    issue = {"title": "Login fails"}
    with django_capture_on_commit_callbacks(execute=True):
        assert_ok(
            api.owner.post(f"/v1/projects/{world.project.pk}/issues", issue, format="json"), 201
        )
    delivery = Delivery.objects.get()
    expected = "refused: " + name_refused("public.example.test")
    assert delivery.status == Delivery.Status.FAILED
    assert delivery.last_error == expected
    attempt = DeliveryAttempt.objects.get(delivery=delivery)
    assert attempt.status_code is None and attempt.error == expected
