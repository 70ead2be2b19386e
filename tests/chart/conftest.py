"""Helpers for the chart tests: render charts/saltq with Helm's own engine and pick objects out."""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass

import helm_python as helm
import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "saltq"
RELEASE = "demo"
NAMESPACE = "salt"

# The oldest and the newest Kubernetes minor the upstream project supports (November 2026), and the
# floor the chart declares in Chart.yaml (kubeVersion). kubernetes-validate ships 1.25 to 1.37.
KUBE_VERSIONS = ("1.29", "1.35", "1.37")

# Objects of custom resources: kubernetes-validate has no schema for them, so the tests check
# their fields one by one.
CUSTOM_KINDS = {
    ("cert-manager.io/v1", "Issuer"),
    ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
}

# The scenarios of issue 8, plus one that turns on every optional object.
SCENARIOS: dict[str, dict] = {
    "default": {},
    "master-only": {"minion": {"enabled": False}},
    "minion-only-external-master": {
        "master": {"enabled": False},
        "minion": {"master": "salt.example.com", "masterPort": 4506},
        "certificates": {"masterFinger": ":".join(["ab"] * 32)},
    },
    "cert-manager": {
        "certificates": {"mode": "certManager", "certManager": {"clients": ["alice"]}},
    },
    # A cluster of masters: NATS by URL, PostgreSQL from a Secret, the PKI from cert-manager.
    "cluster-3-replicas": {
        "certificates": {"mode": "certManager"},
        "master": {
            "replicas": 3,
            "cluster": {"nats": {"url": "nats://nats.nats.svc:4222"}},
            "config": {"job_cache": "postgres", "job_cache_postgres": "host=pg.db user=saltq dbname=saltq"},
            "jobCache": {"postgresSecret": {"name": "saltq-pg", "key": "connection"}},
            "autosign": ["node-*"],
        },
    },
    # The same from a Secret of the user's, with its own cluster name and several NATS servers.
    "cluster-existing-secret": {
        "certificates": {"mode": "existingSecret", "existingSecret": {"name": "saltq-tls", "caKeyKey": "ca.pem.key"}},
        "master": {
            "replicas": 5,
            "cluster": {"id": "prod", "nats": {"url": ["nats://n1.nats:4222", "nats://n2.nats:4222"]}},
            "config": {"job_cache": "postgres"},
            "jobCache": {"postgresSecret": {"name": "saltq-pg"}},
        },
        "minion": {"enabled": False},
    },
    "host-access": {"minion": {"hostAccess": {"enabled": True}, "health": {"enabled": True}}},
    "everything-optional": {
        "certificates": {"mode": "existingSecret", "existingSecret": {"name": "saltq-tls"}},
        "master": {
            "service": {
                "mixedProtocol": True,
                "type": "LoadBalancer",
                "externalTrafficPolicy": "Local",
                "loadBalancerSourceRanges": ["10.0.0.0/8"],
            },
            "networkPolicy": {
                "enabled": True,
                "httpFrom": [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}],
            },
            "metrics": {"serviceMonitor": {"enabled": True}},
            "persistence": {"enabled": False},
            "logJson": True,
        },
        "minion": {"transport": "h2", "health": {"enabled": True}, "priorityClass": {"create": False, "name": "system-node-critical"}},
    },
}


@dataclass
class Rendered:
    """One render: the manifests as objects, and NOTES.txt."""

    objects: list[dict]
    notes: str

    def all(self, kind: str) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict:
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, found {[o['metadata']['name'] for o in found]}"
        return found[0]

    def configmap_file(self, name: str, key: str) -> dict:
        """A file of a ConfigMap, parsed as YAML."""
        text = self.one("ConfigMap", name)["data"][key]
        parsed = yaml.safe_load(text)
        assert isinstance(parsed, dict), f"{name}/{key} is not a YAML map: {text!r}"
        return parsed


def render(values: dict | None = None) -> Rendered:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(values=values, name=RELEASE, namespace=NAMESPACE)
    objects: list[dict] = []
    notes = ""
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                objects.append(doc)
    return Rendered(objects, notes)


@pytest.fixture(scope="session")
def rendered() -> dict[str, Rendered]:
    """Every scenario rendered once."""
    return {name: render(values) for name, values in SCENARIOS.items()}


def rust_config_keys(path: pathlib.Path) -> set[str]:
    """The keys a binary accepts: the fields of `RawConfig` in its config.rs (deny_unknown_fields)."""
    source = path.read_text()
    block = re.search(r"pub struct RawConfig \{(.*?)\n\}", source, re.S)
    assert block, f"no RawConfig in {path}"
    keys, rename = set(), None
    for line in block.group(1).splitlines():
        m = re.match(r'\s*#\[serde\(rename = "([^"]+)"\)\]', line)
        if m:
            rename = m.group(1)
            continue
        m = re.match(r"\s*pub (?:r#)?(\w+):", line)
        if m:
            keys.add(rename or m.group(1))
            rename = None
    return keys
