"""charts/saltq through Helm's own engine: lint, render every scenario, validate each object
against the Kubernetes API schemas, and check what a deployment depends on."""

from __future__ import annotations

import json
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
SCHEMA = json.loads((CHART / "values.schema.json").read_text())


def containers(pod_spec: dict, init: bool = True) -> list[dict]:
    return pod_spec["containers"] + (pod_spec.get("initContainers", []) if init else [])


def pod_specs(r: Rendered) -> list[dict]:
    return [o["spec"]["template"]["spec"] for o in r.objects if o["kind"] in ("StatefulSet", "DaemonSet", "Deployment")]


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
    ],
)
def test_schema_rejects_wrong_values(values: dict, where: str) -> None:
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert where in str(err.value)


def test_three_replicas_with_sqlite_fail_with_a_clear_message(tmp_path) -> None:
    values = {"master": {"replicas": 3}}
    # The schema stops `helm install` first, naming the key to change.
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert "/master/config/job_cache': value must be 'postgres'" in str(err.value)
    # The templates refuse it too (helm template --skip-schema-validation, or a schema lifted):
    # render a copy of the chart without its schema.
    copy = tmp_path / "saltq"
    shutil.copytree(CHART, copy)
    (copy / "values.schema.json").unlink()
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
    for name in ("default", "postgres-3-replicas", "everything-optional"):
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


def test_postgres_with_three_replicas(rendered: dict[str, Rendered]) -> None:
    r = rendered["postgres-3-replicas"]
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
    assert "accept keys on every pod" in r.notes


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


@pytest.mark.parametrize("scenario", ["default", "cert-manager", "postgres-3-replicas", "everything-optional"])
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
