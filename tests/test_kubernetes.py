"""The Kubernetes manifests (deploy/kubernetes): each overlay built, validated, and checked.

No cluster and no kustomize binary are needed. ``kustomize_build`` below builds an overlay
with the few kustomize features the manifests use (their kustomization files say so), and
refuses any other; where ``kubectl`` or ``kustomize`` is installed, its build is compared with
the real one. Every document is validated against the schemas of a fixed Kubernetes version
(kubernetes-validate bundles them: no network), strictly, so an unknown field fails too.
"""

import copy
import os
import secrets
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from django.http.request import validate_host

ROOT = Path(__file__).resolve().parent.parent
KUBERNETES = ROOT / "deploy" / "kubernetes"
BASE = KUBERNETES / "base"
OVERLAYS = {name: KUBERNETES / "overlays" / name for name in ("staging", "production")}
SECRET_EXAMPLE = KUBERNETES / "secret.example.yaml"
# The oldest Kubernetes the manifests are meant for; strict: unknown fields are errors.
KUBERNETES_VERSION = "1.30"

WORKER_COMMAND = (
    "celery -A collab worker -Q default,git,analytics,email,exports --loglevel INFO --concurrency 2"
)
WEBHOOK_WORKER_COMMAND = (
    "celery -A collab worker -Q webhooks --pool threads --concurrency 32 --loglevel INFO"
)
SECRET_KEYS = {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"}
DEPLOYMENTS = ("collab-web", "collab-worker", "collab-webhook-worker", "collab-beat")


# A kustomize of the features used -------------------------------------------------------

KUSTOMIZATION_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "namespace",
    "images",
    "replicas",
    "patches",
}
# Strategic merge: these lists merge item by item on "name" (their patchMergeKey in the API);
# every other list in a patch replaces the list it patches.
MERGED_BY_NAME = {"containers", "initContainers", "env", "volumes"}
CLUSTER_SCOPED = {"Namespace"}
REPLICATED = {"Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"}


def _load(path: Path) -> list[dict]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def _identity(document: dict) -> tuple[str, str]:
    return document["kind"], document["metadata"]["name"]


def strategic_merge(target, patch):
    if isinstance(target, dict) and isinstance(patch, dict):
        merged = dict(target)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged and key in MERGED_BY_NAME:
                merged[key] = _merge_by_name(merged[key], value)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    return copy.deepcopy(patch)


def _merge_by_name(target: list[dict], patch: list[dict]) -> list[dict]:
    merged = [dict(item) for item in target]
    names = [item["name"] for item in merged]
    for item in patch:
        if item["name"] in names:
            index = names.index(item["name"])
            merged[index] = strategic_merge(merged[index], item)
        else:
            merged.append(copy.deepcopy(item))
            names.append(item["name"])
    return merged


def _split_image(image: str) -> tuple[str, str]:
    """``registry:5000/name:tag`` -> (``registry:5000/name``, ``tag``); no digests here."""
    assert "@" not in image, "the loader does not rewrite digests"
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:
        return image, ""
    return name, tag


def _set_images(node, images: list[dict]) -> None:
    if isinstance(node, list):
        for item in node:
            _set_images(item, images)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers"):
                for container in value:
                    name, tag = _split_image(container["image"])
                    for image in images:
                        if image["name"] == name:
                            name = image.get("newName", name)
                            tag = image.get("newTag", tag)
                            container["image"] = f"{name}:{tag}" if tag else name
            _set_images(value, images)


def kustomize_build(directory: Path) -> list[dict]:
    """``kustomize build directory`` for resources, namespace, images (newName, newTag),
    replicas and whole-resource strategic-merge patches; anything else raises."""
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(spec) - KUSTOMIZATION_FIELDS
    if unsupported:
        raise NotImplementedError(f"{directory}: the test's loader has no {sorted(unsupported)}")
    documents: list[dict] = []
    for entry in spec.get("resources", []):
        path = directory / entry
        documents += kustomize_build(path) if path.is_dir() else _load(path)
    identities = [_identity(document) for document in documents]
    assert len(identities) == len(set(identities)), f"{directory}: a resource twice"

    for entry in spec.get("patches", []):
        if set(entry) != {"path"}:
            raise NotImplementedError(f"{directory}: patches other than a file: {entry}")
        for patch in _load(directory / entry["path"]):
            index = identities.index(_identity(patch))  # ValueError: patches nothing
            documents[index] = strategic_merge(documents[index], patch)

    if "namespace" in spec:
        for document in documents:
            if document["kind"] not in CLUSTER_SCOPED:
                document["metadata"]["namespace"] = spec["namespace"]
    for image in spec.get("images", []):
        if set(image) - {"name", "newName", "newTag"}:
            raise NotImplementedError(f"{directory}: image fields {sorted(image)}")
    _set_images(documents, spec.get("images", []))
    for replicas in spec.get("replicas", []):
        targets = [
            document
            for document in documents
            if document["kind"] in REPLICATED and document["metadata"]["name"] == replicas["name"]
        ]
        assert targets, f"{directory}: replicas for {replicas['name']}, which is not there"
        for document in targets:
            document["spec"]["replicas"] = replicas["count"]
    return documents


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def overlay(request) -> tuple[str, list[dict]]:
    return request.param, kustomize_build(OVERLAYS[request.param])


def _one(documents: list[dict], kind: str, name: str) -> dict:
    (found,) = [d for d in documents if _identity(d) == (kind, name)]
    return found


def _pod_spec(document: dict) -> dict:
    return document["spec"]["template"]["spec"]


def _pod_templates(documents: list[dict]) -> list[tuple[dict, dict]]:
    return [(d, d["spec"]["template"]) for d in documents if d["kind"] in ("Deployment", "Job")]


def _containers(pod_spec: dict) -> list[dict]:
    return pod_spec.get("initContainers", []) + pod_spec["containers"]


def _command(container: dict) -> list[str]:
    """The container's command and args, ``--option=value`` split as the shell would not."""
    words = []
    for word in container.get("command", []) + container.get("args", []):
        words += word.split("=", 1) if word.startswith("--") and "=" in word else [word]
    return words


def _selects(selector: dict, labels: dict) -> bool:
    assert set(selector) <= {"matchLabels"}, "only matchLabels here"
    return selector["matchLabels"].items() <= labels.items()


# The loader against the real thing ------------------------------------------------------


def _kustomize_command() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


@pytest.mark.skipif(_kustomize_command() is None, reason="neither kustomize nor kubectl here")
@pytest.mark.parametrize("name", sorted(OVERLAYS))
def test_the_loader_builds_what_kustomize_builds(name):
    result = subprocess.run(
        [*_kustomize_command(), str(OVERLAYS[name])], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    real = {_identity(d): d for d in yaml.safe_load_all(result.stdout) if d}
    ours = {_identity(d): d for d in kustomize_build(OVERLAYS[name])}
    assert ours.keys() == real.keys()
    for identity, document in real.items():
        assert ours[identity] == document, identity


def test_the_loader_refuses_what_it_does_not_do(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("configMapGenerator: []\n")
    with pytest.raises(NotImplementedError, match="configMapGenerator"):
        kustomize_build(tmp_path)


def test_a_strategic_merge_patch_merges_containers_by_name():
    target = {"spec": {"containers": [{"name": "a", "image": "x", "args": ["1", "2"]}]}}
    patch = {"spec": {"containers": [{"name": "a", "args": ["3"]}, {"name": "b"}]}}
    assert strategic_merge(target, patch) == {
        "spec": {"containers": [{"name": "a", "image": "x", "args": ["3"]}, {"name": "b"}]}
    }


# Schemas --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["base", *sorted(OVERLAYS)])
def test_every_document_is_valid_for_the_kubernetes_version(name):
    documents = kustomize_build(BASE if name == "base" else OVERLAYS[name])
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_secret_example_is_valid_and_holds_nothing_real():
    (secret,) = _load(SECRET_EXAMPLE)
    kubernetes_validate.validate(secret, KUBERNETES_VERSION, strict=True)
    assert secret["metadata"]["name"] == "collab-secrets"
    assert set(secret["stringData"]) >= SECRET_KEYS
    for key, value in secret["stringData"].items():
        assert "REPLACE_ME" in value, key
    # Never applied by kustomize, so applying the manifests cannot overwrite the real one.
    for directory in (BASE, *OVERLAYS.values()):
        assert not [d for d in kustomize_build(directory) if d["kind"] == "Secret"], directory


def test_the_validator_needs_no_network_and_rejects_unknown_fields():
    deployment = copy.deepcopy(_one(kustomize_build(BASE), "Deployment", "collab-web"))
    _pod_spec(deployment)["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


# What each environment runs -------------------------------------------------------------


def test_everything_lives_in_the_environment_namespace(overlay):
    name, documents = overlay
    namespace = f"collab-{name}"
    assert _one(documents, "Namespace", namespace)
    for document in documents:
        if document["kind"] != "Namespace":
            assert document["metadata"]["namespace"] == namespace, _identity(document)


def test_every_container_runs_the_release_image(overlay):
    _, documents = overlay
    for document, template in _pod_templates(documents):
        for container in _containers(template["spec"]):
            name, tag = _split_image(container["image"])
            assert name == "registry.example.com/collab", _identity(document)
            assert tag and tag != "latest", _identity(document)


def test_replicas_two_or_more_web_and_workers_and_exactly_one_beat(overlay):
    name, documents = overlay
    web, worker, sender, beat = (_one(documents, "Deployment", n) for n in DEPLOYMENTS)
    assert web["spec"]["replicas"] >= 2 and worker["spec"]["replicas"] >= 2
    assert sender["spec"]["replicas"] >= 2
    if name == "production":
        assert web["spec"]["replicas"] > 2
    assert beat["spec"]["replicas"] == 1
    # The old beat is gone before the new one starts.
    assert beat["spec"]["strategy"] == {"type": "Recreate"}


def test_selectors_match_their_pods_and_no_other(overlay):
    """A Deployment's selector, its PDB's, its spread constraint's and the Service's pick that
    Deployment's pods, and no other Deployment's."""
    _, documents = overlay
    pods = {
        d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"]
        for d in documents
        if d["kind"] == "Deployment"
    }

    def picked(selector: dict) -> set[str]:
        return {name for name, labels in pods.items() if _selects(selector, labels)}

    for name in pods:
        deployment = _one(documents, "Deployment", name)
        assert picked(deployment["spec"]["selector"]) == {name}
        for constraint in _pod_spec(deployment).get("topologySpreadConstraints", []):
            assert picked(constraint["labelSelector"]) == {name}
    budgets = [d for d in documents if d["kind"] == "PodDisruptionBudget"]
    assert {b["metadata"]["name"] for b in budgets} == {
        "collab-web",
        "collab-worker",
        "collab-webhook-worker",
    }
    for budget in budgets:
        assert budget["spec"]["minAvailable"] == 1
        assert picked(budget["spec"]["selector"]) == {budget["metadata"]["name"]}
    service = _one(documents, "Service", "collab-web")
    assert picked({"matchLabels": service["spec"]["selector"]}) == {"collab-web"}


def test_the_web_service_sends_port_80_to_gunicorn(overlay):
    _, documents = overlay
    service = _one(documents, "Service", "collab-web")
    assert service["spec"]["type"] == "ClusterIP"
    (port,) = service["spec"]["ports"]
    (container,) = _pod_spec(_one(documents, "Deployment", "collab-web"))["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port["port"] == 80
    assert ports.get(port["targetPort"], port["targetPort"]) == 8000
    assert _command(container)[_command(container).index("--bind") + 1] == "0.0.0.0:8000"


def test_web_is_probed_on_readyz_and_healthz_with_a_host_it_accepts(overlay):
    _, documents = overlay
    (web,) = _pod_spec(_one(documents, "Deployment", "collab-web"))["containers"]
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    allowed = _one(documents, "ConfigMap", "collab-config")["data"]["ALLOWED_HOSTS"].split(",")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        if probe in web:
            headers = {h["name"]: h["value"] for h in web[probe]["httpGet"]["httpHeaders"]}
            assert validate_host(headers["Host"], allowed), (probe, headers, allowed)


def test_the_processes_run_the_shipped_commands(overlay):
    """The same commands as docker-compose.yml's web, worker and beat (and the image's CMD)."""
    _, documents = overlay
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    web, worker, sender, beat = (
        _pod_spec(_one(documents, "Deployment", n))["containers"] for n in DEPLOYMENTS
    )
    compose_web = shlex.split(compose["web"]["command"])
    assert _command(web[0]) == compose_web
    assert compose_web[:2] == ["gunicorn", "collab.asgi"]
    assert compose_web[compose_web.index("--worker-class") + 1] == "collab.serving.UvicornWorker"
    assert _command(worker[0]) == shlex.split(WORKER_COMMAND) == compose["worker"]["command"]
    assert (
        _command(sender[0])
        == shlex.split(WEBHOOK_WORKER_COMMAND)
        == compose["webhook-worker"]["command"]
    )
    assert _command(beat[0]) == ["celery", "-A", "collab", "beat", "--loglevel", "INFO"]
    assert _command(beat[0]) == compose["beat"]["command"]


def test_migrations_run_in_the_job_and_every_deployment_waits_for_them(overlay):
    _, documents = overlay
    job = _one(documents, "Job", "collab-migrate")
    (migrate,) = _pod_spec(job)["containers"]
    assert _command(migrate) == ["python", "manage.py", "migrate", "--noinput"]
    assert _pod_spec(job)["restartPolicy"] == "Never"
    for name in DEPLOYMENTS:
        spec = _pod_spec(_one(documents, "Deployment", name))
        (wait,) = spec["initContainers"]
        assert "manage.py migrate --check" in " ".join(_command(wait)), name
        for container in spec["containers"]:
            assert "migrate" not in _command(container), name


@pytest.mark.parametrize("name", ["collab-worker", "collab-webhook-worker"])
def test_worker_liveness_pings_its_own_node(overlay, name):
    _, documents = overlay
    (worker,) = _pod_spec(_one(documents, "Deployment", name))["containers"]
    probe = " ".join(worker["livenessProbe"]["exec"]["command"])
    assert "celery -A collab inspect ping" in probe
    assert "celery@$HOSTNAME" in probe


def test_settings_and_secrets_are_referenced_by_names_that_exist(overlay):
    _, documents = overlay
    config_maps = {d["metadata"]["name"] for d in documents if d["kind"] == "ConfigMap"}
    (example,) = _load(SECRET_EXAMPLE)
    secrets_known = {example["metadata"]["name"]}
    for document, template in _pod_templates(documents):
        spec = template["spec"]
        for container in _containers(spec):
            sources = container.get("envFrom", [])
            assert {"configMapRef": {"name": "collab-config"}} in sources, _identity(document)
            assert {"secretRef": {"name": "collab-secrets"}} in sources, _identity(document)
            for source in sources:
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets_known
            for variable in container.get("env", []):
                reference = variable.get("valueFrom", {})
                if "configMapKeyRef" in reference:
                    assert reference["configMapKeyRef"]["name"] in config_maps
                if "secretKeyRef" in reference:
                    assert reference["secretKeyRef"]["name"] in secrets_known
                    assert reference["secretKeyRef"]["key"] in example["stringData"]
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in config_maps
            if "secret" in volume:
                assert volume["secret"]["secretName"] in secrets_known


def test_the_configuration_is_production_and_each_pod_keeps_its_own_git_mirrors(overlay):
    name, documents = overlay
    data = _one(documents, "ConfigMap", "collab-config")["data"]
    assert data["DJANGO_SETTINGS_MODULE"] == "collab.settings.production"
    assert data["WEBHOOK_ALLOW_PRIVATE_NETWORKS"] == "0"
    assert data["GIT_ALLOW_LOCAL_REPOSITORIES"] == "0"
    assert data["RATE_LIMIT_TRUSTED_PROXIES"] == "1"
    domain = "example.com" if name == "production" else "example.test"
    assert data["PUBLIC_BASE_URL"].startswith("https://")
    assert data["PUBLIC_BASE_URL"].endswith(domain)
    assert data["ALLOWED_HOSTS"].split(",")[0].endswith(domain)
    assert not ({"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "EMAIL_URL"} & set(data))
    storage = Path(data["GIT_STORAGE_DIR"])
    for deployment in ("collab-web", "collab-worker"):
        spec = _pod_spec(_one(documents, "Deployment", deployment))
        volumes = {v["name"]: v for v in spec["volumes"]}
        (container,) = spec["containers"]
        (mount,) = [m for m in container["volumeMounts"] if storage.is_relative_to(m["mountPath"])]
        assert set(volumes[mount["name"]]) == {"name", "emptyDir"}, deployment


def test_pods_run_unprivileged_without_host_paths(overlay):
    """The "restricted" Pod Security Standard, which each namespace enforces."""
    name, documents = overlay
    labels = _one(documents, "Namespace", f"collab-{name}")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    for document, template in _pod_templates(documents):
        spec = template["spec"]
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True, _identity(document)
        # The image's user is a name, which the kubelet cannot check: a number is needed.
        assert context["runAsUser"] == 10001, _identity(document)
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        assert not spec.get("hostNetwork") and not spec.get("hostPID")
        for volume in spec.get("volumes", []):
            assert "hostPath" not in volume, _identity(document)
        for container in _containers(spec):
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
            assert container["securityContext"].get("runAsUser", 10001) != 0
            assert container["resources"]["requests"] and container["resources"]["limits"]
    # The user the image creates.
    assert "--uid 10001" in (ROOT / "Dockerfile").read_text()


def test_production_settings_start_from_the_environment_configuration(overlay):
    """The ConfigMap plus the secret keys, read by collab.settings.production."""
    _, documents = overlay
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    env.pop("DEBUG", None)
    env.update(_one(documents, "ConfigMap", "collab-config")["data"])
    env.update(
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL="postgres://collab:x@postgres.example.internal:5432/collab",
        REDIS_URL="redis://redis.example.internal:6379/0",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
