"""The observability files of deploy/: the alert rules, the Grafana dashboard, the scrape
configuration, and docker-compose.yml's "observability" profile.

``promtool`` (Debian's ``prometheus`` package; ./test installs it where it may) checks the
rules and runs their unit tests (deploy/prometheus/alerts.test.yml), checks prometheus.yml, and
parses every PromQL expression of the dashboard, each wrapped in a recording rule. Without
promtool those tests skip; the rest reads the files as data. Every metric an expression names
must be one Collab exports: the table of docs/operations/metrics.md when it lists them, else
the names below (the shared list the metrics were built to).
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS / "alerts.yml"
RULE_TESTS = PROMETHEUS / "alerts.test.yml"
SCRAPE_CONFIG = PROMETHEUS / "prometheus.yml"
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD = GRAFANA / "collab.json"
ALERTS_PAGE = ROOT / "docs" / "operations" / "alerts.md"
METRICS_PAGE = ROOT / "docs" / "operations" / "metrics.md"
KUBERNETES = ROOT / "deploy" / "kubernetes" / "base"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")

# The metrics Collab exports, by type, until docs/operations/metrics.md's table lists them.
METRICS = {
    "http_server_request_duration_seconds": "histogram",
    "http_server_active_requests": "gauge",
    "collab_http_request_db_queries": "histogram",
    "collab_rate_limit_refusals_total": "counter",
    "collab_task_duration_seconds": "histogram",
    "collab_queue_length": "gauge",
    "collab_webhook_deliveries_total": "counter",
    "collab_webhook_delivery_lag_seconds": "histogram",
    "collab_webhook_receivers_deferred_total": "counter",
    "collab_stream_subscribers": "gauge",
    "collab_stream_frames_sent_total": "counter",
    "collab_event_hub_lag_events": "gauge",
    "collab_git_sync_duration_seconds": "histogram",
    "collab_git_sync_failures_total": "counter",
    "collab_beat_last_tick_timestamp_seconds": "gauge",
    "collab_build_info": "gauge",
}
# What Prometheus itself and the blackbox exporter give the rules.
SCRAPE_METRICS = {"up", "probe_success"}
# The scrape jobs the rules name, as prometheus.yml defines them.
JOBS = {"collab-web", "collab-worker", "collab-webhook-worker", "collab-readyz"}
WORKER_METRICS_PORT = "9808"

# Grafana's variables, replaced by what they stand for when Grafana runs a query.
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "6h",
    "${datasource}": "prometheus",
}
# PromQL words that are not metric names where a name could stand.
KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
}


def _promtool(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603
        [PROMTOOL, *arguments], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def _yaml(path: Path):
    return yaml.safe_load(path.read_text())


def _rules() -> list[dict]:
    return [rule for group in _yaml(RULES)["groups"] for rule in group["rules"]]


def _alerts() -> list[dict]:
    return [rule for rule in _rules() if "alert" in rule]


def _panels(panels: list[dict]) -> list[dict]:
    """Every panel, those inside collapsed rows included."""
    found = []
    for panel in panels:
        found.append(panel)
        found += _panels(panel.get("panels", []))
    return found


def _dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _dashboard_expressions() -> list[str]:
    expressions = []
    for panel in _panels(_dashboard()["panels"]):
        for target in panel.get("targets", []):
            expression = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expression = expression.replace(variable, value)
            expressions.append(expression)
    return expressions


def metric_names(expression: str) -> set[str]:
    """The metric names a PromQL expression selects: what is left once strings, label
    matchers, ranges, groupings and function calls are taken out."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expression)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        name = match.group()
        follows = text[match.end() :].lstrip()[:1]
        before = text[: match.start()].rstrip()[-1:]
        if follows == "(" or name.lower() in KEYWORDS:
            continue
        if before.isdigit() or before == ".":  # a duration or a number's exponent: 5m, 1e3
            continue
        names.add(name)
    return names


def known_metrics() -> dict[str, str]:
    """The exported metrics and their types: the metrics page's table, else METRICS."""
    table = {}
    if METRICS_PAGE.exists():
        for line in METRICS_PAGE.read_text().splitlines():
            if not line.startswith("|"):
                continue
            cells = line.split("|")[1:-1]
            name = re.match(r"\s*`([a-z_:][a-z0-9_:]*)", cells[0]) if cells else None
            kind = re.search(r"\b(counter|gauge|histogram|summary|info)\b", line)
            if name and kind:
                table[name.group(1)] = kind.group(1)
    return table or METRICS


def series_names(metrics: dict[str, str]) -> set[str]:
    names = set()
    for name, kind in metrics.items():
        names.add(name)
        if kind in ("histogram", "summary"):
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return names


# The helpers themselves ------------------------------------------------------------------


def test_metric_names_finds_the_names_and_only_them():
    expression = (
        'histogram_quantile(0.99, sum by (http_route, le) (rate(a_bucket{http_route!~"x|y"}'
        "[5m]))) > 2.5 and on (queue) time() - max(b) > 1e3 unless sum without (le) "
        '(increase(c_total[1h] offset 5m)) or absent(up{job="j"} == 1)'
    )
    assert metric_names(expression) == {"a_bucket", "b", "c_total", "up"}


def test_the_known_metrics_are_the_shared_names():
    metrics = known_metrics()
    assert set(METRICS) <= set(metrics), "the metrics page lacks names the dashboard uses"
    for name, kind in METRICS.items():
        assert metrics[name] == kind, name


# Alert rules ------------------------------------------------------------------------------


@needs_promtool
def test_promtool_accepts_the_rules():
    result = _promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_the_rules_pass_their_unit_tests():
    result = _promtool("test", "rules", RULE_TESTS.name, cwd=PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_severity_and_a_runbook_entry():
    page = ALERTS_PAGE.read_text()
    anchors = set(re.findall(r"\{\s*#([a-z0-9-]+)\s*\}", page))
    alerts = _alerts()
    assert len({rule["alert"] for rule in alerts}) >= 9
    for rule in alerts:
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], rule["alert"]
        path, _, anchor = annotations["runbook_url"].partition("#")
        assert path == "docs/operations/alerts.md", rule["alert"]
        assert anchor in anchors, f"{rule['alert']}: no heading {{ #{anchor} }} in {path}"
        # The page names the alert it documents.
        assert rule["alert"] in page, rule["alert"]


def test_the_brief_s_alerts_are_there():
    """What the rules were asked to watch, each in its own alert."""
    expressions = {rule["alert"]: rule["expr"] for rule in _alerts()}
    watched = {
        "CollabHighErrorRatio": 'http_response_status_code=~"5.."',
        "CollabHighLatency": "histogram_quantile(0.99",
        "CollabQueueBackingUp": "collab_queue_length",
        "CollabWebhookDeliveryLagHigh": "collab_webhook_delivery_lag_seconds_bucket",
        "CollabQueueNotConsumed": "collab_task_duration_seconds_count",
        "CollabWorkersUnreachable": "absent(up{",
        "CollabBeatNotTicking": "time() - max(collab_beat_last_tick_timestamp_seconds)",
        "CollabNotReady": "probe_success",
    }
    for alert, fragment in watched.items():
        assert fragment in expressions[alert], alert


def test_every_alert_is_tested_firing_and_quiet():
    firing, quiet = set(), set()
    for case in _yaml(RULE_TESTS)["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in _alerts()}
    assert names - firing == set(), "never seen firing"
    assert names - quiet == set(), "never seen quiet"


def test_the_rules_name_only_exported_metrics_and_known_jobs():
    exported = series_names(known_metrics()) | SCRAPE_METRICS
    for rule in _rules():
        assert metric_names(rule["expr"]) <= exported, (rule.get("alert"), rule["expr"])
        for job in re.findall(r'job="([^"]+)"', rule["expr"]):
            assert job in JOBS, (rule["alert"], job)


# The dashboard ----------------------------------------------------------------------------


def test_the_dashboard_queries_the_chosen_prometheus():
    dashboard = _dashboard()
    (variable,) = dashboard["templating"]["list"]
    assert (variable["type"], variable["query"], variable["name"]) == (
        "datasource",
        "prometheus",
        "datasource",
    )
    panels = [panel for panel in _panels(dashboard["panels"]) if panel["type"] != "row"]
    ids = [panel["id"] for panel in _panels(dashboard["panels"])]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"], panel["title"]
    rows = [panel["title"] for panel in dashboard["panels"] if panel["type"] == "row"]
    assert rows == [
        "Overview",
        "Traffic",
        "Errors",
        "Latency",
        "Queues and tasks",
        "Webhooks",
        "Event streams",
        "Git",
    ]


def test_the_dashboard_shows_every_exported_metric():
    used = set().union(*(metric_names(e) for e in _dashboard_expressions()))
    for name, kind in known_metrics().items():
        series = {name, f"{name}_bucket", f"{name}_count", f"{name}_sum"}
        assert used & series, f"{name} ({kind}) is on no panel"


def test_the_dashboard_names_only_exported_metrics():
    exported = series_names(known_metrics())
    for expression in _dashboard_expressions():
        assert metric_names(expression) <= exported, expression


@needs_promtool
def test_every_dashboard_expression_parses(tmp_path):
    expressions = _dashboard_expressions()
    assert len(expressions) >= 25
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:expression_{index}", "expr": expression}
                    for index, expression in enumerate(expressions)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(rules))
    result = _promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(expressions)} rules found" in result.stdout


# Scraping ---------------------------------------------------------------------------------


@needs_promtool
def test_promtool_accepts_the_scrape_configuration(tmp_path):
    """prometheus.yml as the container reads it: its rules and token file where compose
    mounts them (here, copies in a temporary folder)."""
    shutil.copy(RULES, tmp_path / "alerts.yml")
    (tmp_path / "metrics-token").write_text("a-token")
    text = SCRAPE_CONFIG.read_text().replace("/etc/prometheus/", f"{tmp_path}/")
    (tmp_path / "prometheus.yml").write_text(text)
    result = _promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_scrape_jobs_are_those_the_rules_name():
    config = _yaml(SCRAPE_CONFIG)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == JOBS
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    targets = {
        name: [(sd["names"], sd["port"]) for sd in job.get("dns_sd_configs", [])]
        for name, job in jobs.items()
    }
    assert targets["collab-web"] == [(["web"], 8000)]
    assert targets["collab-worker"] == [(["worker"], int(WORKER_METRICS_PORT))]
    assert targets["collab-webhook-worker"] == [(["webhook-worker"], int(WORKER_METRICS_PORT))]
    assert jobs["collab-web"]["authorization"] == {
        "credentials_file": "/etc/prometheus/metrics-token"
    }
    readyz = jobs["collab-readyz"]
    assert readyz["static_configs"] == [{"targets": ["http://nginx/readyz"]}]
    assert readyz["params"] == {"module": ["http_2xx"]}
    blackbox = _yaml(PROMETHEUS / "blackbox.yml")["modules"]["http_2xx"]
    # A Host that ALLOWED_HOSTS lists by default (docker-compose.yml).
    assert blackbox["http"]["headers"] == {"Host": "localhost"}


@pytest.mark.parametrize(
    ("manifest", "port"),
    [("web.yaml", "8000"), ("worker.yaml", WORKER_METRICS_PORT), ("webhook-worker.yaml", "9808")],
)
def test_the_kubernetes_pods_ask_to_be_scraped(manifest, port):
    (deployment,) = [
        d
        for d in yaml.safe_load_all((KUBERNETES / manifest).read_text())
        if d["kind"] == "Deployment"
    ]
    template = deployment["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": port,
        "prometheus.io/path": "/metrics",
    }
    (container,) = template["spec"]["containers"]
    assert int(port) in [p["containerPort"] for p in container["ports"]]
    env = {variable["name"]: variable.get("value") for variable in container.get("env", [])}
    if manifest == "web.yaml":
        assert "WORKER_METRICS_PORT" not in env
    else:
        assert env["WORKER_METRICS_PORT"] == port


# docker-compose.yml's "observability" profile ---------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict:
    return _yaml(ROOT / "docker-compose.yml")


def _mounts(service: dict) -> dict[str, str]:
    """``{container path: repository path}`` of a service's bind mounts, all read-only."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target, mode = volume.split(":")
        assert mode == "ro", volume
        assert source.startswith("./"), volume
        assert (ROOT / source).exists(), volume
        mounts[target] = source[2:]
    return mounts


def test_the_profile_runs_prometheus_blackbox_and_grafana_only_when_asked(compose):
    services = compose["services"]
    profiled = {name for name, service in services.items() if "profiles" in service}
    assert profiled == {"prometheus", "blackbox", "grafana"}
    for name in profiled:
        service = services[name]
        assert service["profiles"] == ["observability"], name
        image, _, tag = service["image"].partition(":")
        assert tag and tag != "latest", name
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
    # Nothing of the profile is a dependency of what starts without it.
    for name, service in services.items():
        if name not in profiled:
            assert not profiled & set(service.get("depends_on", {})), name


def test_prometheus_reads_the_repository_s_configuration_and_rules(compose):
    prometheus = compose["services"]["prometheus"]
    assert _mounts(prometheus) == {
        "/etc/prometheus/prometheus.yml": "deploy/prometheus/prometheus.yml",
        "/etc/prometheus/alerts.yml": "deploy/prometheus/alerts.yml",
    }
    assert prometheus["configs"] == [
        {"source": "metrics-token", "target": "/etc/prometheus/metrics-token"}
    ]
    assert compose["configs"]["metrics-token"] == {"environment": "METRICS_TOKEN"}
    assert compose["services"]["web"]["environment"]["METRICS_TOKEN"] == "${METRICS_TOKEN:-}"
    assert _mounts(compose["services"]["blackbox"]) == {
        "/etc/blackbox_exporter/config.yml": "deploy/prometheus/blackbox.yml"
    }


def test_the_workers_serve_their_metrics_where_prometheus_looks(compose):
    for name in ("worker", "webhook-worker"):
        environment = compose["services"][name]["environment"]
        assert environment["WORKER_METRICS_PORT"] == WORKER_METRICS_PORT, name
        # The shared production environment, and the port added to it.
        assert environment["DJANGO_SETTINGS_MODULE"] == "collab.settings.production", name


def test_grafana_is_provisioned_with_the_datasource_and_the_dashboard(compose):
    grafana = compose["services"]["grafana"]
    mounts = _mounts(grafana)
    assert mounts["/etc/grafana/provisioning"] == "deploy/grafana/provisioning"
    assert mounts["/var/lib/grafana/dashboards/collab.json"] == "deploy/grafana/collab.json"
    provisioning = GRAFANA / "provisioning"
    (datasource,) = _yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    assert datasource["type"] == "prometheus"
    prometheus_port = compose["services"]["prometheus"]["ports"][0].rsplit(":", 1)[1]
    assert datasource["url"] == f"http://prometheus:{prometheus_port}"
    assert datasource["isDefault"] is True
    (provider,) = _yaml(provisioning / "dashboards" / "collab.yml")["providers"]
    assert provider["type"] == "file"
    dashboards = Path(provider["options"]["path"])
    assert any(Path(target).parent == dashboards for target in mounts)
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert mounts[home] == "deploy/grafana/collab.json"


@needs_promtool
def test_the_documented_kubernetes_scrape_configuration_is_valid(tmp_path):
    """The page's scrape configuration for Kubernetes, under ``promtool check config``, with
    the job names the rules expect. Debian's Prometheus is built without Kubernetes service
    discovery: there the discovery is swapped for a static target (the relabelling, the
    authorization and the rest are still checked), and its own fields are checked here."""
    blocks = re.findall(r"```yaml\n(.*?)```", ALERTS_PAGE.read_text(), flags=re.DOTALL)
    (block,) = [b for b in blocks if "kubernetes_sd_configs" in b]
    config = yaml.safe_load(block)
    token = tmp_path / "token"
    token.write_text("a-token")
    for job in config["scrape_configs"]:
        if "authorization" in job:
            job["authorization"]["credentials_file"] = str(token)
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    result = _promtool("check", "config", str(path))
    pods, readyz = config["scrape_configs"]
    if "field kubernetes_sd_configs not found" in result.stdout + result.stderr:
        (discovery,) = pods.pop("kubernetes_sd_configs")
        assert discovery == {"role": "pod", "namespaces": {"names": ["collab-production"]}}
        pods["static_configs"] = [{"targets": ["10.0.0.1:8000"]}]
        path.write_text(yaml.safe_dump(config))
        result = _promtool("check", "config", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert readyz["job_name"] == "collab-readyz"
    (job_label,) = [r for r in pods["relabel_configs"] if r.get("target_label") == "job"]
    components = {"web", "worker", "webhook-worker"}
    assert {job_label["replacement"].replace("$1", c) for c in components} == JOBS - {
        "collab-readyz"
    }
