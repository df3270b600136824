"""Render the Helm chart through real Helm (the ``helm-sdkpy`` wheel's Go library) with no cluster.

helm-sdkpy 0.1.32 has Lint (renders every template, checks values.schema.json) but no ``template`` or
dry-run; its Install needs a Kubernetes API server. :class:`FakeKube` is the smallest API server Helm's
install path uses: version and discovery (legacy ``/api`` and ``/apis`` documents listing the kinds the
chart uses), and create / get / list / update of namespaced objects, kept in memory. What Helm creates is
exactly what it rendered, so :func:`render` returns the chart's manifests as Helm would apply them.
Helm's release records are Secrets it sends as protobuf: the server echoes those bytes back (a created
object as sent) and keeps nothing of them.
Nothing here checks objects against Kubernetes schemas (kubernetes-validate does that in the tests).
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

#: (group, version) -> [(plural, kind, namespaced)]
RESOURCES: dict[tuple[str, str], list[tuple[str, str, bool]]] = {
    ("", "v1"): [("configmaps", "ConfigMap", True), ("secrets", "Secret", True), ("services", "Service", True),
                 ("serviceaccounts", "ServiceAccount", True), ("pods", "Pod", True),
                 ("persistentvolumeclaims", "PersistentVolumeClaim", True), ("namespaces", "Namespace", False)],
    ("apps", "v1"): [("deployments", "Deployment", True), ("statefulsets", "StatefulSet", True)],
    ("batch", "v1"): [("jobs", "Job", True)],
    ("policy", "v1"): [("poddisruptionbudgets", "PodDisruptionBudget", True)],
    ("networking.k8s.io", "v1"): [("networkpolicies", "NetworkPolicy", True)],
    ("autoscaling", "v2"): [("horizontalpodautoscalers", "HorizontalPodAutoscaler", True)],
    ("keda.sh", "v1alpha1"): [("scaledobjects", "ScaledObject", True),
                              ("triggerauthentications", "TriggerAuthentication", True)],
}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _gv(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


class FakeKube:
    """An in-memory API server on 127.0.0.1 (plain HTTP, any token)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}  # (gv, plural, ns, name) -> object
        self.requests: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, namespace: str) -> str:
        return (f"apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: \"{self.url}\"}}}}]\n"
                f"users: [{{name: fake, user: {{token: fake}}}}]\n"
                f"contexts: [{{name: fake, context: {{cluster: fake, user: fake, namespace: {namespace}}}}}]\n"
                "current-context: fake\n")

    def start(self) -> FakeKube:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def created(self) -> list[dict[str, Any]]:
        """Objects created, minus Helm's own release records."""
        with self._lock:
            return [o for (_, plural, _, name), o in self.objects.items()
                    if not (plural == "secrets" and name.startswith("sh.helm.release."))]

    # -- HTTP --------------------------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        kube = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, code: int, body: Mapping[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict[str, Any]:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n)) if n else {}

            def _handle(self) -> None:
                url = urlparse(self.path)
                kube.requests.append((self.command, url.path))
                ctype = self.headers.get("Content-Type") or ""
                if "protobuf" in ctype and self.command in ("POST", "PUT"):
                    data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    self.send_response(201 if self.command == "POST" else 200)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                try:
                    code, body = kube.answer(self.command, url.path, parse_qs(url.query),
                                             self._body() if self.command in ("POST", "PUT", "PATCH") else {})
                except Exception as exc:  # noqa: BLE001 - answer, and keep the reason for the test's message
                    kube.errors.append(f"{self.command} {url.path}: {type(exc).__name__}: {exc}")
                    code, body = 500, _status(500, "InternalError")
                self._send(code, body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        return Handler

    def answer(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        parts = [p for p in path.split("/") if p]
        if parts == ["version"]:
            return 200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0", "platform": "linux/amd64"}
        if parts == ["api"]:
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["apis"]:
            groups = sorted({g for g, _ in RESOURCES if g})
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": _gv(g, v), "version": v} for gg, v in RESOURCES if gg == g],
                 "preferredVersion": next({"groupVersion": _gv(g, v), "version": v} for gg, v in RESOURCES if gg == g)}
                for g in groups]}
        if parts[:1] == ["api"]:
            group, version, rest = "", parts[1] if len(parts) > 1 else "", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return 404, _status(404, "NotFound")
        if (group, version) not in RESOURCES:
            return 404, _status(404, "NotFound")
        if not rest:
            return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": _gv(group, version),
                         "resources": [{"name": p, "singularName": "", "namespaced": ns, "kind": k, "verbs": VERBS}
                                       for p, k, ns in RESOURCES[(group, version)]]}
        ns = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural, name = rest[0], (rest[1] if len(rest) > 1 else None)
        kinds = {p: k for p, k, _ in RESOURCES[(group, version)]}
        if plural not in kinds:
            return 404, _status(404, "NotFound")
        gv = _gv(group, version)
        with self._lock:
            if method == "GET" and name is None:
                selector = dict(kv.split("=", 1) for kv in (query.get("labelSelector", [""])[0].split(",")) if "=" in kv)
                items = [o for (g, p, n, _), o in self.objects.items() if g == gv and p == plural and n == ns and
                         all((o.get("metadata", {}).get("labels") or {}).get(k) == v for k, v in selector.items())]
                return 200, {"kind": f"{kinds[plural]}List", "apiVersion": gv, "metadata": {"resourceVersion": "1"},
                             "items": items}
            key = (gv, plural, ns, name or body.get("metadata", {}).get("name", ""))
            if method == "GET":
                return (200, self.objects[key]) if key in self.objects else (404, _status(404, "NotFound"))
            if method == "POST":
                if key in self.objects:
                    return 409, _status(409, "AlreadyExists")
                meta = body.setdefault("metadata", {})
                meta.setdefault("namespace", ns) if ns else None
                meta.update(uid=str(uuid.uuid4()), resourceVersion="1", creationTimestamp="2026-01-01T00:00:00Z")
                self.objects[key] = body
                return 201, body
            if method in ("PUT", "PATCH"):
                if method == "PATCH" or key not in self.objects:
                    return (404, _status(404, "NotFound")) if key not in self.objects else (200, self.objects[key])
                self.objects[key] = body
                return 200, body
            if method == "DELETE":
                return (200, self.objects.pop(key)) if key in self.objects else (404, _status(404, "NotFound"))
        return 405, _status(405, "MethodNotAllowed")


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code,
            "message": reason}


@contextmanager
def fake_kube() -> Iterator[FakeKube]:
    kube = FakeKube().start()
    try:
        yield kube
    finally:
        kube.stop()


def render(chart: Path, values: Mapping[str, Any] | None = None, *, release: str = "deid",
           namespace: str = "deid") -> list[dict[str, Any]]:
    """The chart's manifests as real Helm installs them (values merged over the chart's values.yaml;
    values.schema.json is enforced). Raises helm_sdkpy's InstallError on a template or schema error."""
    import helm_sdkpy

    with fake_kube() as kube:
        cfg = helm_sdkpy.Configuration(namespace=namespace, kubeconfig=kube.kubeconfig(namespace))
        try:
            asyncio.run(helm_sdkpy.Install(cfg).run(release, str(chart), values=dict(values or {}), wait=False,
                                                    timeout=60))
        except helm_sdkpy.HelmError as exc:
            if kube.errors:  # the fake server's own failure, not the chart's
                raise RuntimeError(f"fake API server: {kube.errors}") from exc
            raise
        return kube.created()


def lint(chart: Path) -> dict[str, Any]:
    """helm lint of a chart folder (its own values.yaml)."""
    import helm_sdkpy

    with fake_kube() as kube:
        cfg = helm_sdkpy.Configuration(namespace="deid", kubeconfig=kube.kubeconfig("deid"))
        result: dict[str, Any] = asyncio.run(helm_sdkpy.Lint(cfg).run(str(chart)))
        return result
