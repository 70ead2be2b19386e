"""charts/saltq through Helm's own engine: lint, render every scenario, validate each object
against the Kubernetes API schemas, and check what a deployment depends on."""

from __future__ import annotations

import copy
import json
import pathlib
import shutil

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml

from conftest import (
    CHART,
    CUSTOM_KINDS,
    KUBE_VERSIONS,
    NAMESPACE,
    REPO,
    SCENARIOS,
    Rendered,
    render,
    rust_config_keys,
)

MASTER = "demo-saltq-master"
MINION = "demo-saltq-minion"
PKI_DIR = "/srv/saltq/cluster-pki"
CLUSTER_KEYS = {"cluster_id", "cluster_nats", "cluster_pki_dir"}
PKI_FILES = {"ca.crt", "ca.key", "master.crt", "master.key", "admin.crt", "admin.key"}
SCHEMA = json.loads((CHART / "values.schema.json").read_text())


def containers(pod_spec: dict, init: bool = True) -> list[dict]:
    return pod_spec["containers"] + (pod_spec.get("initContainers", []) if init else [])


def pod_specs(r: Rendered) -> list[dict]:
    return [o["spec"]["template"]["spec"] for o in r.objects if o["kind"] in ("StatefulSet", "DaemonSet", "Deployment")]


def shared_pki_files(r: Rendered) -> dict[str, tuple[str, str]]:
    """cluster_pki_dir as the master pod sees it: file -> (Secret, key), checked on the way to
    be a read-only file over a writable folder."""
    spec = r.one("StatefulSet")["spec"]["template"]["spec"]
    mounts = spec["containers"][0]["volumeMounts"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    folder = [m for m in mounts if m["mountPath"] == PKI_DIR]
    if not folder:
        return {}
    # The folder itself is writable (the master's lock file, `saltq pki issue`), and per pod.
    (folder,) = folder
    assert not folder.get("readOnly") and "emptyDir" in volumes[folder["name"]]
    sources = {}
    files = {}
    for m in mounts:
        if not m["mountPath"].startswith(PKI_DIR + "/"):
            continue
        name = m["mountPath"][len(PKI_DIR) + 1 :]
        assert m["readOnly"] is True and m["subPath"] == name, m
        if not sources:
            for src in volumes[m["name"]]["projected"]["sources"]:
                for item in src["secret"]["items"]:
                    sources[item["path"]] = (src["secret"]["name"], item["key"])
        files[name] = sources[m["subPath"]]
    return files


def checksum(r: Rendered, kind: str) -> str:
    return r.one(kind)["spec"]["template"]["metadata"]["annotations"]["checksum/config"]


# --- Helm: lint and schema ---------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_lint_has_no_errors_or_warnings(scenario: str, version: str) -> None:
    report = helm.lint(CHART, SCENARIOS[scenario], strict=True, namespace=NAMESPACE, kube_version=f"v{version}.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"master": {"replicas": "two"}}, "/master/replicas"),
        ({"master": {"config": {"prot": 4506}}}, "'prot' not allowed"),
        ({"master": {"config": {"port": 70000}}}, "/master/config/port"),
        ({"master": {"config": {"job_cache": "mysql"}}}, "/master/config/job_cache"),
        ({"certificates": {"mode": "letsEncrypt"}}, "/certificates/mode"),
        ({"certificates": {"masterFinger": "AB:CD"}}, "/certificates/masterFinger"),
        ({"minion": {"transport": "udp"}}, "/minion/transport"),
        ({"minion": {"config": {"mastr": "x"}}}, "'mastr' not allowed"),
        ({"minion": {"updateStrategy": {"maxUnavailable": "ten"}}}, "/minion/updateStrategy/maxUnavailable"),
        ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ({"master": {"enabled": False}}, "/minion/master"),
        ({"certificates": {"mode": "existingSecret"}}, "/certificates/existingSecret/name"),
        ({"imagePullSecret": []}, "'imagePullSecret' not allowed"),
        ({"master": {"cluster": {"nats": {"url": "http://nats:4222"}}}}, "/master/cluster/nats/url"),
        ({"master": {"cluster": {"id": "a b"}}}, "/master/cluster/id"),
        ({"master": {"cluster": {"enabled": "yes"}}}, "/master/cluster/enabled"),
        ({"master": {"cluster": {"pki": {"secret": 1}}}}, "/master/cluster/pki/secret"),
    ],
)
def test_schema_rejects_wrong_values(values: dict, where: str) -> None:
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert where in str(err.value)


def without_schema(tmp_path) -> "pathlib.Path":
    """A copy of the chart without its schema: what the templates alone refuse
    (helm template --skip-schema-validation, or a schema lifted)."""
    copy = tmp_path / "saltq"
    shutil.copytree(CHART, copy)
    (copy / "values.schema.json").unlink()
    return copy


def test_three_replicas_with_sqlite_fail_with_a_clear_message(tmp_path) -> None:
    values = {"master": {"replicas": 3}}
    # The schema stops `helm install` first, naming the key to change.
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert "/master/config/job_cache': value must be 'postgres'" in str(err.value)
    # The templates refuse it too.
    copy = without_schema(tmp_path)
    with helm.Chart.load(copy) as chart, pytest.raises(helm.HelmRenderError) as err:
        chart.render(values=values, name="demo", namespace=NAMESPACE)
    assert "master.replicas=3 needs the PostgreSQL job cache" in str(err.value)
    with helm.Chart.load(copy) as chart, pytest.raises(helm.HelmRenderError) as err:
        chart.render(
            values={"master": {"replicas": 3, "config": {"job_cache": "postgres", "job_cache_postgres": "host=pg"}}},
            name="demo",
            namespace=NAMESPACE,
        )
    assert "needs one server certificate for every replica" in str(err.value)


# A cluster with everything it needs; each case below takes one part away.
CLUSTER = SCENARIOS["cluster-3-replicas"]


def cluster_without(path: str, value) -> dict:
    """CLUSTER with the value at a dotted path replaced."""
    values = copy.deepcopy(CLUSTER)
    *parents, last = path.split(".")
    node = values
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return values


@pytest.mark.parametrize(
    ("path", "value", "schema_says", "templates_say"),
    [
        (
            "master.cluster.nats.url",
            "",
            "/master/cluster/nats/url",
            "master.replicas=3 makes the masters a cluster, which talks through NATS: set master.cluster.nats.url",
        ),
        (
            "master.config.job_cache",
            "sqlite",
            "/master/config/job_cache': value must be 'postgres'",
            "master.replicas=3 needs the PostgreSQL job cache: set master.config.job_cache=postgres",
        ),
        (
            "certificates.mode",
            "selfSigned",
            "/certificates/mode",
            "master.replicas=3 needs one server certificate for every replica: set certificates.mode",
        ),
        (
            "master.cluster.enabled",
            False,
            "/master/cluster/enabled",
            "master.replicas=3 makes the masters a cluster, but master.cluster.enabled=false",
        ),
    ],
)
def test_a_cluster_missing_a_part_is_refused_naming_the_value(
    tmp_path, path: str, value, schema_says: str, templates_say: str
) -> None:
    values = cluster_without(path, value)
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert schema_says in str(err.value)
    with helm.Chart.load(without_schema(tmp_path)) as chart, pytest.raises(helm.HelmRenderError) as err:
        chart.render(values=values, name="demo", namespace=NAMESPACE)
    assert templates_say in str(err.value)


def test_a_cluster_refuses_a_ca_whose_key_the_chart_cannot_read() -> None:
    # An external issuer's CA key is not in the namespace: the replicas need a PKI Secret then.
    values = cluster_without("certificates.certManager", {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}})
    with pytest.raises(helm.HelmRenderError) as err:
        render(values)
    assert "certificates.certManager.issuerRef.name=corp-ca needs master.cluster.pki.secret" in str(err.value)
    values["master"]["cluster"]["pki"] = {"secret": "saltq-cluster-pki"}
    r = render(values)
    files = shared_pki_files(r)
    for f in ("ca.crt", "ca.key", "admin.crt", "admin.key"):
        assert files[f] == ("saltq-cluster-pki", f)
    assert files["master.crt"] == ("demo-saltq-master-tls", "tls.crt")
    # No admin Certificate and no chart CA: the Secret has them.
    assert {c["metadata"]["name"] for c in r.all("Certificate")} == {"demo-saltq-master"}


def test_a_one_replica_cluster_when_asked(tmp_path) -> None:
    values = cluster_without("master.replicas", 1)
    values["master"]["cluster"]["enabled"] = True
    r = render(values)
    cfg = r.configmap_file(MASTER, "master")
    assert cfg["cluster_id"] == "demo-saltq" and cfg["cluster_pki_dir"] == PKI_DIR
    assert shared_pki_files(r)
    assert r.one("PodDisruptionBudget")["spec"] == {
        "maxUnavailable": 1,
        "selector": r.one("PodDisruptionBudget")["spec"]["selector"],
    }
    values["master"]["cluster"]["nats"] = {"url": ""}
    with pytest.raises(helm.HelmRenderError) as err:
        render(values)
    assert "master.cluster.enabled=true makes the masters a cluster, which talks through NATS" in str(err.value)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"master": {"enabled": False, "replicas": 1}, "minion": {"enabled": False}}, "nothing to install"),
        ({"master": {"config": {"job_cache": "postgres"}}}, "needs a connection string"),
        (
            {"master": {"enabled": False}, "minion": {"master": "m.example"}, "certificates": {"mode": "certManager"}},
            "certificates.mode=certManager issues the master's certificate",
        ),
        (
            {"certificates": {"mode": "certManager", "certManager": {"clients": ["bob"], "issuerRef": {"name": "corp"}}}},
            "needs the chart's own CA",
        ),
        ({"minion": {"transport": "h2"}, "master": {"config": {"h2_enabled": False}}}, "the master's h2 listener is off"),
    ],
)
def test_templates_refuse_values_that_cannot_work(values: dict, message: str) -> None:
    with pytest.raises(helm.HelmRenderError) as err:
        render(values)
    assert message in str(err.value)


# --- Kubernetes: every object against the API schemas -----------------------------------------


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_object_is_valid_kubernetes(rendered: dict[str, Rendered], scenario: str, version: str) -> None:
    checked = 0
    for obj in rendered[scenario].objects:
        if (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} against {version}: {path}: {e.message}")
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ports_are_unique_where_the_api_server_wants_them_unique(rendered: dict[str, Rendered], scenario: str) -> None:
    # List-map keys the JSON schemas cannot express: the API server refuses duplicates.
    for svc in rendered[scenario].all("Service"):
        ports = svc["spec"]["ports"]
        assert len({(p["port"], p["protocol"]) for p in ports}) == len(ports), svc["metadata"]["name"]
        assert len({p["name"] for p in ports}) == len(ports), svc["metadata"]["name"]
    for spec in pod_specs(rendered[scenario]):
        for c in containers(spec):
            ports = c.get("ports", [])
            assert len({(p["containerPort"], p["protocol"]) for p in ports}) == len(ports), c["name"]
            assert len({p["name"] for p in ports}) == len(ports), c["name"]
        names = [v["name"] for v in spec["volumes"]]
        assert len(set(names)) == len(names)


def test_each_scenario_renders_what_it_should(rendered: dict[str, Rendered]) -> None:
    kinds = {name: sorted({o["kind"] for o in r.objects}) for name, r in rendered.items()}
    assert kinds["default"] == [
        "ConfigMap", "DaemonSet", "PodDisruptionBudget", "PriorityClass", "Service", "ServiceAccount", "StatefulSet",
    ]
    assert "DaemonSet" not in kinds["master-only"] and "StatefulSet" in kinds["master-only"]
    assert "StatefulSet" not in kinds["minion-only-external-master"]
    assert "Service" not in kinds["minion-only-external-master"]
    assert {"Issuer", "Certificate"} <= set(kinds["cert-manager"])
    assert {"NetworkPolicy", "ServiceMonitor"} <= set(kinds["everything-optional"])
    assert "PriorityClass" not in kinds["everything-optional"]


# --- What matters ------------------------------------------------------------------------------


def test_grpc_port_on_udp_and_tcp_in_separate_services(rendered: dict[str, Rendered]) -> None:
    r = rendered["default"]
    quic = r.one("Service", f"{MASTER}-quic")["spec"]["ports"]
    h2 = r.one("Service", f"{MASTER}-h2")["spec"]["ports"]
    assert [(p["port"], p["protocol"], p["targetPort"]) for p in quic] == [(4506, "UDP", "quic")]
    assert [(p["port"], p["protocol"], p["targetPort"]) for p in h2] == [(4506, "TCP", "h2")]
    ports = {p["name"]: p for p in r.one("StatefulSet")["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert (ports["quic"]["containerPort"], ports["quic"]["protocol"]) == (4506, "UDP")
    assert (ports["h2"]["containerPort"], ports["h2"]["protocol"]) == (4506, "TCP")
    assert (ports["http"]["containerPort"], ports["http"]["protocol"]) == (8080, "TCP")
    headless = r.one("Service", f"{MASTER}-headless")
    assert headless["spec"]["clusterIP"] == "None"
    assert sorted((p["port"], p["protocol"]) for p in headless["spec"]["ports"]) == [
        (4506, "TCP"), (4506, "UDP"), (8080, "TCP"),
    ]
    assert r.one("StatefulSet")["spec"]["serviceName"] == f"{MASTER}-headless"


def test_one_mixed_protocol_service_when_asked(rendered: dict[str, Rendered]) -> None:
    r = rendered["everything-optional"]
    svc = r.one("Service", MASTER)
    assert svc["spec"]["type"] == "LoadBalancer"
    assert sorted((p["port"], p["protocol"]) for p in svc["spec"]["ports"]) == [(4506, "TCP"), (4506, "UDP")]
    assert not [s for s in r.all("Service") if s["metadata"]["name"].endswith(("-quic", "-h2"))]


def test_master_probes_use_the_http_port(rendered: dict[str, Rendered]) -> None:
    for name in ("default", "cluster-3-replicas", "everything-optional"):
        c = rendered[name].one("StatefulSet")["spec"]["template"]["spec"]["containers"][0]
        http = next(p for p in c["ports"] if p["name"] == "http")
        assert http["containerPort"] == 8080
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_a_moved_http_port_moves_probes_and_services() -> None:
    r = render({"master": {"config": {"http_port": 9090, "port": 4600}}})
    c = r.one("StatefulSet")["spec"]["template"]["spec"]["containers"][0]
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"quic": 4600, "h2": 4600, "http": 9090}
    assert r.one("Service", f"{MASTER}-quic")["spec"]["ports"][0]["port"] == 4600
    assert r.configmap_file(MINION, "minion")["master_port"] == 4600


def test_minion_id_is_the_node_name(rendered: dict[str, Rendered]) -> None:
    for name in ("default", "minion-only-external-master", "host-access"):
        c = rendered[name].one("DaemonSet")["spec"]["template"]["spec"]["containers"][0]
        node = next(e for e in c["env"] if e["name"] == "NODE_NAME")
        assert node["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
        args = c["args"]
        assert args[args.index("--id") + 1] == "$(NODE_NAME)"
        assert args[:2] == ["-c", "/etc/saltq"]


def test_no_privileged_pod_unless_asked(rendered: dict[str, Rendered]) -> None:
    for name, r in rendered.items():
        if name == "host-access":
            continue
        for spec in pod_specs(r):
            assert not spec.get("hostPID") and not spec.get("hostNetwork") and not spec.get("hostIPC"), name
            assert spec["securityContext"]["runAsNonRoot"] is True
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            assert all(v.get("hostPath", {}).get("path") != "/" for v in spec["volumes"]), name
            for c in containers(spec):
                sc = c["securityContext"]
                assert not sc.get("privileged") and sc["allowPrivilegeEscalation"] is False, (name, c["name"])
                assert sc["readOnlyRootFilesystem"] is True and "ALL" in sc["capabilities"]["drop"]
            for c in containers(spec, init=False):
                assert c["securityContext"]["runAsNonRoot"] is True
            # The one root container hands the node's key directory over, with two capabilities.
            for c in spec.get("initContainers", []):
                assert c["name"] == "pki-owner"
                assert sorted(c["securityContext"]["capabilities"]["add"]) == ["CHOWN", "FOWNER"]


def test_host_access_when_asked(rendered: dict[str, Rendered]) -> None:
    spec = rendered["host-access"].one("DaemonSet")["spec"]["template"]["spec"]
    assert spec["hostPID"] is True and spec["hostNetwork"] is True
    assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    minion = spec["containers"][0]
    assert minion["securityContext"]["privileged"] is True
    host = next(v for v in spec["volumes"] if v["name"] == "host")
    assert host["hostPath"]["path"] == "/"
    assert {"name": "host", "mountPath": "/host", "readOnly": False, "mountPropagation": "HostToContainer"} in minion[
        "volumeMounts"
    ]
    assert "WARNING: minion.hostAccess.enabled=true" in rendered["host-access"].notes
    # The master is untouched.
    master = rendered["host-access"].one("StatefulSet")["spec"]["template"]["spec"]
    assert not master.get("hostNetwork") and not master["containers"][0]["securityContext"]["privileged"]


def test_minion_key_stays_on_the_node(rendered: dict[str, Rendered]) -> None:
    spec = rendered["default"].one("DaemonSet")["spec"]["template"]["spec"]
    pki = next(v for v in spec["volumes"] if v["name"] == "pki")
    assert pki["hostPath"] == {"path": "/var/lib/saltq/salt-demo/minion-pki", "type": "DirectoryOrCreate"}
    mount = next(m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "pki")
    cfg = rendered["default"].configmap_file(MINION, "minion")
    assert mount["mountPath"] == cfg["pki_dir"] == "/var/lib/saltq/minion-pki"


def test_minion_runs_everywhere_and_rolls_gradually(rendered: dict[str, Rendered]) -> None:
    ds = rendered["default"].one("DaemonSet")
    assert ds["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}
    pc = rendered["default"].one("PriorityClass")
    assert ds["spec"]["template"]["spec"]["priorityClassName"] == pc["metadata"]["name"]
    other = rendered["everything-optional"].one("DaemonSet")["spec"]["template"]["spec"]
    assert other["priorityClassName"] == "system-node-critical"


def test_minion_health_port_only_when_enabled(rendered: dict[str, Rendered]) -> None:
    assert "health_port" not in rendered["default"].configmap_file(MINION, "minion")
    c = rendered["default"].one("DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    assert "readinessProbe" not in c and "ports" not in c
    r = rendered["host-access"]
    assert r.configmap_file(MINION, "minion")["health_port"] == 8081
    c = r.one("DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    assert c["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert "livenessProbe" not in c


def test_checksum_annotation_follows_the_config() -> None:
    base = render()
    assert checksum(base, "StatefulSet") == checksum(render(), "StatefulSet")
    master_changed = render({"master": {"config": {"log_level": "debug"}}})
    assert checksum(master_changed, "StatefulSet") != checksum(base, "StatefulSet")
    assert checksum(master_changed, "DaemonSet") == checksum(base, "DaemonSet")
    autosign = render({"master": {"autosign": ["web*"]}})
    assert checksum(autosign, "StatefulSet") != checksum(base, "StatefulSet")
    minion_changed = render({"minion": {"config": {"log_level": "debug"}}})
    assert checksum(minion_changed, "DaemonSet") != checksum(base, "DaemonSet")
    assert checksum(minion_changed, "StatefulSet") == checksum(base, "StatefulSet")


def test_master_config_holds_only_keys_the_master_knows(rendered: dict[str, Rendered]) -> None:
    known = rust_config_keys(REPO / "master" / "src" / "config.rs")
    for name, r in rendered.items():
        if not any(o["kind"] == "StatefulSet" for o in r.objects):
            continue
        cfg = r.configmap_file(MASTER, "master")
        assert set(cfg) <= known, (name, set(cfg) - known)
        assert cfg["interface"] == "0.0.0.0" and cfg["port"] == 4506 and cfg["http_port"] == 8080
        assert cfg["pki_dir"] == "/var/lib/saltq/pki" and cfg["cachedir"] == "/var/lib/saltq/cache"
        assert cfg["auto_accept"] is False
        assert f"{MASTER}-headless.{NAMESPACE}.svc.cluster.local" in cfg["cert_sans"]


def test_minion_config_holds_only_keys_the_minion_knows(rendered: dict[str, Rendered]) -> None:
    known = rust_config_keys(REPO / "minion" / "src" / "config.rs")
    for name, r in rendered.items():
        if any(o["kind"] == "DaemonSet" for o in r.objects):
            cfg = r.configmap_file(MINION, "minion")
            assert set(cfg) <= known, (name, set(cfg) - known)


def test_schema_lists_exactly_the_config_keys_of_the_binaries() -> None:
    master = SCHEMA["properties"]["master"]["properties"]["config"]["properties"]
    minion = SCHEMA["properties"]["minion"]["properties"]["config"]["properties"]
    assert set(master) == rust_config_keys(REPO / "master" / "src" / "config.rs")
    assert set(minion) == rust_config_keys(REPO / "minion" / "src" / "config.rs")


def test_master_data_on_a_volume_per_replica(rendered: dict[str, Rendered]) -> None:
    sts = rendered["default"].one("StatefulSet")
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data" and claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
    mount = next(m for m in sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] if m["name"] == "data")
    assert mount["mountPath"] == "/var/lib/saltq"
    assert rendered["default"].one("PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    no_pvc = rendered["everything-optional"].one("StatefulSet")
    assert "volumeClaimTemplates" not in no_pvc["spec"]
    assert "WARNING: master.persistence.enabled=false" in rendered["everything-optional"].notes


def test_self_signed_minions_pin_or_check_the_fingerprint(rendered: dict[str, Rendered]) -> None:
    cfg = rendered["default"].configmap_file(MINION, "minion")
    assert "ca_file" not in cfg and "master_finger" not in cfg
    assert cfg["master"] == f"{MASTER}-quic.{NAMESPACE}.svc.cluster.local" and cfg["transport"] == "quic"
    assert "master_cert_file" not in rendered["default"].configmap_file(MASTER, "master")


def test_minion_only_dials_the_external_master(rendered: dict[str, Rendered]) -> None:
    r = rendered["minion-only-external-master"]
    cfg = r.configmap_file(MINION, "minion")
    assert (cfg["master"], cfg["master_port"]) == ("salt.example.com", 4506)
    assert cfg["master_finger"] == ":".join(["ab"] * 32)
    assert not [o for o in r.objects if o["metadata"]["name"].startswith(MASTER)]


def test_cert_manager_issues_the_master_certificate_and_shares_only_the_ca(rendered: dict[str, Rendered]) -> None:
    r = rendered["cert-manager"]
    certs = {c["metadata"]["name"]: c["spec"] for c in r.all("Certificate")}
    assert certs["demo-saltq-ca"]["isCA"] is True
    master = certs["demo-saltq-master"]
    assert master["secretName"] == "demo-saltq-master-tls"
    assert master["issuerRef"] == {"name": "demo-saltq-ca", "kind": "Issuer", "group": "cert-manager.io"}
    assert f"{MASTER}-quic.{NAMESPACE}.svc.cluster.local" in master["dnsNames"]
    assert "localhost" in master["dnsNames"] and "127.0.0.1" in master["ipAddresses"]  # port-forward
    assert "server auth" in master["usages"]
    client = certs["demo-saltq-client-alice"]
    assert client["commonName"] == "alice" and client["usages"][0] == "client auth"
    assert client["subject"]["organizationalUnits"] == ["saltq-client"]
    issuers = {i["metadata"]["name"]: i["spec"] for i in r.all("Issuer")}
    assert issuers["demo-saltq-ca"] == {"ca": {"secretName": "demo-saltq-ca"}}
    assert issuers["demo-saltq-selfsigned"] == {"selfSigned": {}}

    cfg = r.configmap_file(MASTER, "master")
    assert cfg["master_cert_file"] == "/etc/saltq/tls/tls.crt" and cfg["master_key_file"] == "/etc/saltq/tls/tls.key"
    assert cfg["client_ca_files"] == ["/etc/saltq/tls/ca.crt"]
    master_secret = next(
        s["secret"]
        for s in r.one("StatefulSet")["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"]
        if "secret" in s
    )
    assert master_secret["name"] == "demo-saltq-master-tls"
    assert [i["path"] for i in master_secret["items"]] == ["tls/tls.crt", "tls/tls.key", "tls/ca.crt"]

    minion_cfg = r.configmap_file(MINION, "minion")
    assert minion_cfg["ca_file"] == "/etc/saltq/ca/ca.crt" and "master_finger" not in minion_cfg
    minion_secret = next(
        s["secret"]
        for s in r.one("DaemonSet")["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"]
        if "secret" in s
    )
    # Minions see the CA and never the master's key.
    assert minion_secret["items"] == [{"key": "ca.crt", "path": "ca/ca.crt"}]


def test_postgres_in_a_cluster_of_three(rendered: dict[str, Rendered]) -> None:
    r = rendered["cluster-3-replicas"]
    sts = r.one("StatefulSet")
    assert sts["spec"]["replicas"] == 3
    cfg = r.configmap_file(MASTER, "master")
    assert cfg["job_cache"] == "postgres" and "password" not in cfg["job_cache_postgres"]
    env = {e["name"]: e for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["SALTQ_JOB_CACHE_POSTGRES"]["valueFrom"] == {
        "secretKeyRef": {"name": "saltq-pg", "key": "connection"}
    }
    assert cfg["autosign_file"] == "/etc/saltq/autosign.conf"
    assert r.one("ConfigMap", MASTER)["data"]["autosign.conf"] == "node-*\n"
    assert "Keys are shared by the cluster: accept them on any pod, once." in r.notes


CLUSTERS = {"cluster-3-replicas": 3, "cluster-existing-secret": 5}


def test_cluster_keys_only_in_a_cluster(rendered: dict[str, Rendered]) -> None:
    for name, r in rendered.items():
        if not r.all("StatefulSet"):
            continue
        cfg = r.configmap_file(MASTER, "master")
        # Each replica names itself <pod name>_master: the chart sets no id.
        assert "id" not in cfg, name
        if name not in CLUSTERS:
            assert not CLUSTER_KEYS & set(cfg), (name, CLUSTER_KEYS & set(cfg))
            assert not shared_pki_files(r), name
            continue
        assert r.one("StatefulSet")["spec"]["replicas"] == CLUSTERS[name]
        assert cfg["cluster_pki_dir"] == PKI_DIR and cfg["job_cache"] == "postgres"
    three = rendered["cluster-3-replicas"].configmap_file(MASTER, "master")
    assert (three["cluster_id"], three["cluster_nats"]) == ("demo-saltq", "nats://nats.nats.svc:4222")
    five = rendered["cluster-existing-secret"].configmap_file(MASTER, "master")
    assert (five["cluster_id"], five["cluster_nats"]) == ("prod", ["nats://n1.nats:4222", "nats://n2.nats:4222"])
    assert "cluster_id demo-saltq" in rendered["cluster-3-replicas"].notes
    assert "cluster_id" not in rendered["default"].notes


@pytest.mark.parametrize("scenario", CLUSTERS)
def test_every_replica_mounts_the_same_shared_pki(rendered: dict[str, Rendered], scenario: str) -> None:
    r = rendered[scenario]
    sts = r.one("StatefulSet")
    # One pod template for every replica, and its PKI comes only from Secrets (nothing per pod).
    files = shared_pki_files(r)
    assert set(files) == PKI_FILES
    spec = sts["spec"]["template"]["spec"]
    pki = next(v for v in spec["volumes"] if v["name"] == "cluster-pki-files")
    assert all(set(src) == {"secret"} for src in pki["projected"]["sources"])
    assert pki["projected"]["defaultMode"] == 0o440
    # Postgres from the Secret, not in the ConfigMap.
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert env["SALTQ_JOB_CACHE_POSTGRES"]["valueFrom"]["secretKeyRef"]["name"] == "saltq-pg"


def test_cluster_pki_from_cert_manager(rendered: dict[str, Rendered]) -> None:
    r = rendered["cluster-3-replicas"]
    assert shared_pki_files(r) == {
        "ca.crt": ("demo-saltq-ca", "tls.crt"),
        "ca.key": ("demo-saltq-ca", "tls.key"),
        "master.crt": ("demo-saltq-master-tls", "tls.crt"),
        "master.key": ("demo-saltq-master-tls", "tls.key"),
        "admin.crt": ("demo-saltq-admin", "tls.crt"),
        "admin.key": ("demo-saltq-admin", "tls.key"),
    }
    certs = {c["metadata"]["name"]: c["spec"] for c in r.all("Certificate")}
    admin = certs["demo-saltq-admin"]
    assert admin["secretName"] == "demo-saltq-admin" and admin["commonName"] == "admin"
    assert admin["subject"]["organizationalUnits"] == ["saltq-client"] and admin["usages"][0] == "client auth"
    assert admin["issuerRef"]["name"] == "demo-saltq-ca"
    # The masters read their CA's key as PKCS#8; cert-manager writes PKCS#1/SEC1 unless asked.
    assert certs["demo-saltq-ca"]["privateKey"]["encoding"] == "PKCS8"
    single = {c["metadata"]["name"]: c["spec"] for c in rendered["cert-manager"].all("Certificate")}
    assert "encoding" not in single["demo-saltq-ca"]["privateKey"] and "demo-saltq-admin" not in single
    # The server certificate is still the one the minions trust.
    cfg = r.configmap_file(MASTER, "master")
    assert cfg["master_cert_file"] == "/etc/saltq/tls/tls.crt"


def test_cluster_pki_from_an_existing_secret(rendered: dict[str, Rendered]) -> None:
    assert shared_pki_files(rendered["cluster-existing-secret"]) == {
        "ca.crt": ("saltq-tls", "ca.crt"),
        "ca.key": ("saltq-tls", "ca.pem.key"),
        "master.crt": ("saltq-tls", "tls.crt"),
        "master.key": ("saltq-tls", "tls.key"),
        "admin.crt": ("saltq-tls", "admin.crt"),
        "admin.key": ("saltq-tls", "admin.key"),
    }
    assert not rendered["cluster-existing-secret"].all("Certificate")


@pytest.mark.parametrize(("replicas", "budget"), [
    (1, {"maxUnavailable": 1}),
    (2, {"minAvailable": 2}),
    (3, {"minAvailable": 2}),
    (4, {"minAvailable": 3}),
    (5, {"minAvailable": 3}),
    (7, {"minAvailable": 4}),
])
def test_disruption_budget_keeps_a_majority_of_a_cluster(replicas: int, budget: dict) -> None:
    values = cluster_without("master.replicas", replicas)
    if replicas == 1:
        values = {}
    spec = render(values).one("PodDisruptionBudget")["spec"]
    assert {k: v for k, v in spec.items() if k != "selector"} == budget


def test_network_policy_and_service_monitor(rendered: dict[str, Rendered]) -> None:
    r = rendered["everything-optional"]
    np = r.one("NetworkPolicy")["spec"]
    grpc, http = np["ingress"]
    assert sorted((p["port"], p["protocol"]) for p in grpc["ports"]) == [(4506, "TCP"), (4506, "UDP")]
    assert "from" not in grpc
    assert http["ports"] == [{"port": 8080, "protocol": "TCP"}] and http["from"]
    sm = r.one("ServiceMonitor")["spec"]
    assert sm["endpoints"][0]["port"] == "http" and sm["endpoints"][0]["path"] == "/metrics"
    headless = r.one("Service", f"{MASTER}-headless")
    assert all(headless["metadata"]["labels"][k] == v for k, v in sm["selector"]["matchLabels"].items())
    assert "http" in [p["name"] for p in headless["spec"]["ports"]]


def test_existing_secret_mode(rendered: dict[str, Rendered]) -> None:
    r = rendered["everything-optional"]
    assert not r.all("Certificate")
    sources = r.one("StatefulSet")["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"]
    assert any(s.get("secret", {}).get("name") == "saltq-tls" for s in sources)
    cfg = r.configmap_file(MINION, "minion")
    assert cfg["ca_file"] == "/etc/saltq/ca/ca.crt"
    assert cfg["master"] == f"{MASTER}.{NAMESPACE}.svc.cluster.local" and cfg["transport"] == "h2"


def test_notes_explain_port_forward_with_h2(rendered: dict[str, Rendered]) -> None:
    notes = rendered["default"].notes
    assert f"kubectl -n {NAMESPACE} port-forward svc/{MASTER}-h2 4506:4506" in notes
    assert "saltq --transport h2 --master 127.0.0.1:4506 --ca ca.crt --cert me.crt --key me.key" in notes
    assert f"exec {MASTER}-0 -- saltq pki issue me" in notes
    assert "jsonpath='{.data.ca\\.crt}'" in rendered["cert-manager"].notes
    assert "MASTER" not in rendered["minion-only-external-master"].notes


def test_values_yaml_documents_every_key_the_schema_knows() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def walk(schema: dict, data: dict, path: str) -> None:
        props = schema.get("properties", {})
        if path.endswith("config"):
            return  # open-ended: Salt's keys, a few shown
        for key, sub in props.items():
            if key == "global":
                continue
            assert key in data, f"{path}.{key} is in the schema but not in values.yaml"
            if isinstance(data[key], dict) and sub.get("type") == "object":
                walk(sub, data[key], f"{path}.{key}")

    walk(SCHEMA, values, "")


def test_minion_only_with_the_external_masters_ca() -> None:
    r = render(
        {
            "master": {"enabled": False},
            "minion": {"master": "salt.corp.example", "masterPort": 4600},
            "certificates": {"mode": "existingSecret", "existingSecret": {"name": "corp-salt-ca", "caKey": "root.pem"}},
        }
    )
    cfg = r.configmap_file(MINION, "minion")
    assert (cfg["master"], cfg["master_port"]) == ("salt.corp.example", 4600)
    assert cfg["ca_file"] == "/etc/saltq/ca/ca.crt"
    sources = r.one("DaemonSet")["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"]
    assert {"secret": {"name": "corp-salt-ca", "items": [{"key": "root.pem", "path": "ca/ca.crt"}]}} in sources


@pytest.mark.parametrize("scenario", ["default", "cert-manager", "cluster-3-replicas", "everything-optional"])
def test_the_name_minions_dial_is_in_the_masters_certificate(rendered: dict[str, Rendered], scenario: str) -> None:
    r = rendered[scenario]
    dialled = r.configmap_file(MINION, "minion")["master"] if r.all("DaemonSet") else None
    cert_sans = r.configmap_file(MASTER, "master")["cert_sans"]
    # Both Service layouts, so a later switch of master.service.mixedProtocol keeps working.
    for svc in ("master-quic", "master-h2", "master"):
        assert f"demo-saltq-{svc}.{NAMESPACE}.svc.cluster.local" in cert_sans
    if dialled:
        assert dialled in cert_sans
    for cert in r.all("Certificate"):
        if cert["metadata"]["name"] == "demo-saltq-master":
            assert set(cert_sans) <= set(cert["spec"]["dnsNames"])


def test_the_schema_is_a_valid_draft_7_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
