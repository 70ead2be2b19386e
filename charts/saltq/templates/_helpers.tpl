{{/*
Names, labels, the rendered master and minion configs, and the checks that refuse values which
cannot work. Every template takes its names and ports from here, so a name or a port is decided
once.
*/}}

{{/* The chart's name. */}}
{{- define "saltq.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/*
The release's base name. 40 characters at most, so that "-master-headless" still fits a DNS label
and a StatefulSet pod's controller-revision-hash label stays under 63.
*/}}
{{- define "saltq.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "saltq.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; call with (dict "root" $ "component" "master"). */}}
{{- define "saltq.labels" -}}
helm.sh/chart: {{ include "saltq.chart" .root }}
{{ include "saltq.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: saltq
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The labels a selector uses: stable across upgrades. */}}
{{- define "saltq.selectorLabels" -}}
app.kubernetes.io/name: {{ include "saltq.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "saltq.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Object names. */}}
{{- define "saltq.master.fullname" -}}{{ include "saltq.fullname" . }}-master{{- end -}}
{{- define "saltq.master.headless" -}}{{ include "saltq.fullname" . }}-master-headless{{- end -}}
{{- define "saltq.master.quicService" -}}{{ include "saltq.fullname" . }}-master-quic{{- end -}}
{{- define "saltq.master.h2Service" -}}{{ include "saltq.fullname" . }}-master-h2{{- end -}}
{{- define "saltq.master.mixedService" -}}{{ include "saltq.fullname" . }}-master{{- end -}}
{{- define "saltq.minion.fullname" -}}{{ include "saltq.fullname" . }}-minion{{- end -}}
{{/* The PriorityClass the chart creates: cluster-scoped, so the namespace is part of its name. */}}
{{- define "saltq.minion.priorityClassName" -}}
{{- printf "%s-%s" (include "saltq.minion.fullname" .) .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "saltq.tlsSecret" -}}
{{- if eq .Values.certificates.mode "existingSecret" -}}
{{- .Values.certificates.existingSecret.name -}}
{{- else -}}
{{- include "saltq.fullname" . }}-master-tls
{{- end -}}
{{- end -}}
{{- define "saltq.tlsCaKey" -}}
{{- if eq .Values.certificates.mode "existingSecret" -}}
{{- .Values.certificates.existingSecret.caKey -}}
{{- else -}}
ca.crt
{{- end -}}
{{- end -}}

{{/* "true" when the masters are a cluster (cluster_id): master.cluster.enabled, else replicas > 1. */}}
{{- define "saltq.master.cluster" -}}
{{- $on := .Values.master.cluster.enabled -}}
{{- if kindIs "invalid" $on -}}
{{- $on = gt (int .Values.master.replicas) 1 -}}
{{- end -}}
{{- if and .Values.master.enabled $on -}}true{{- end -}}
{{- end -}}

{{/* Where every replica finds the shared CA, server and admin certificates (cluster_pki_dir). */}}
{{- define "saltq.master.clusterPkiDir" -}}/srv/saltq/cluster-pki{{- end -}}

{{/*
The files of cluster_pki_dir and the Secrets they come from, as a list of
{secret, key, file}: the same Secrets on every replica, so every replica reads the same CA, server
and admin certificates and none creates its own.
*/}}
{{- define "saltq.master.clusterPkiFiles" -}}
{{- $v := .Values -}}
{{- $fullname := include "saltq.fullname" . -}}
{{- $es := $v.certificates.existingSecret -}}
{{- $existing := eq $v.certificates.mode "existingSecret" -}}
{{- $tls := include "saltq.tlsSecret" . -}}
{{- $out := list
  (dict "secret" $tls "key" (ternary $es.certKey "tls.crt" $existing) "file" "master.crt")
  (dict "secret" $tls "key" (ternary $es.keyKey "tls.key" $existing) "file" "master.key") -}}
{{- $own := $v.master.cluster.pki.secret -}}
{{- if $own -}}
{{- range list "ca.crt" "ca.key" "admin.crt" "admin.key" -}}
{{- $out = append $out (dict "secret" $own "key" . "file" .) -}}
{{- end -}}
{{- else if $existing -}}
{{- $out = concat $out (list
  (dict "secret" $tls "key" $es.caKey "file" "ca.crt")
  (dict "secret" $tls "key" $es.caKeyKey "file" "ca.key")
  (dict "secret" $tls "key" $es.adminCertKey "file" "admin.crt")
  (dict "secret" $tls "key" $es.adminKeyKey "file" "admin.key")) -}}
{{- else -}}
{{- $out = concat $out (list
  (dict "secret" (printf "%s-ca" $fullname) "key" "tls.crt" "file" "ca.crt")
  (dict "secret" (printf "%s-ca" $fullname) "key" "tls.key" "file" "ca.key")
  (dict "secret" (printf "%s-admin" $fullname) "key" "tls.crt" "file" "admin.crt")
  (dict "secret" (printf "%s-admin" $fullname) "key" "tls.key" "file" "admin.key")) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{- define "saltq.master.serviceAccountName" -}}
{{- if .Values.master.serviceAccount.create -}}
{{- default (include "saltq.master.fullname" .) .Values.master.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.master.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "saltq.minion.serviceAccountName" -}}
{{- if .Values.minion.serviceAccount.create -}}
{{- default (include "saltq.minion.fullname" .) .Values.minion.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.minion.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The names of the master's Services, those of both service layouts (separate and mixed): the
master issues its own certificate once, on first start, so it names every Service it may be
reached through after a later `helm upgrade` switches master.service.mixedProtocol.
*/}}
{{- define "saltq.master.serviceNames" -}}
{{- toYaml (list (include "saltq.master.headless" .) (include "saltq.master.quicService" .) (include "saltq.master.h2Service" .) (include "saltq.master.mixedService" .)) -}}
{{- end -}}

{{/* Every DNS name of those Services, for the master's certificate (cert_sans or cert-manager). */}}
{{- define "saltq.master.dnsNames" -}}
{{- $ns := .Release.Namespace -}}
{{- $domain := .Values.clusterDomain -}}
{{- $out := list -}}
{{- range (include "saltq.master.serviceNames" . | fromYamlArray) -}}
{{- $out = concat $out (list . (printf "%s.%s" . $ns) (printf "%s.%s.svc" . $ns) (printf "%s.%s.svc.%s" . $ns $domain)) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
The master's config file (/etc/saltq/master) as YAML: the chart's keys, then every key of
master.config over them; cert_sans and client_ca_files add the user's entries to the chart's.
*/}}
{{- define "saltq.master.config" -}}
{{- $v := .Values -}}
{{- $user := $v.master.config | default dict -}}
{{- $cfg := dict "interface" "0.0.0.0" "port" 4506 "pki_dir" "/var/lib/saltq/pki" "cachedir" "/var/lib/saltq/cache" "http_interface" "0.0.0.0" "http_port" 8080 "job_cache" "sqlite" -}}
{{- if ne $v.certificates.mode "selfSigned" -}}
{{- $_ := set $cfg "master_cert_file" "/etc/saltq/tls/tls.crt" -}}
{{- $_ := set $cfg "master_key_file" "/etc/saltq/tls/tls.key" -}}
{{- end -}}
{{- if $v.master.autosign -}}
{{- $_ := set $cfg "autosign_file" "/etc/saltq/autosign.conf" -}}
{{- end -}}
{{- if include "saltq.master.cluster" . -}}
{{- $_ := set $cfg "cluster_id" (default (include "saltq.fullname" .) $v.master.cluster.id) -}}
{{- with $v.master.cluster.nats.url -}}
{{- $_ := set $cfg "cluster_nats" . -}}
{{- end -}}
{{- $_ := set $cfg "cluster_pki_dir" (include "saltq.master.clusterPkiDir" .) -}}
{{- end -}}
{{- range $k, $val := $user -}}
{{- $_ := set $cfg $k $val -}}
{{- end -}}
{{- $_ := set $cfg "cert_sans" (concat (include "saltq.master.dnsNames" . | fromYamlArray) ($user.cert_sans | default list) | uniq) -}}
{{- if and (eq $v.certificates.mode "certManager") $v.certificates.certManager.clients -}}
{{- $_ := set $cfg "client_ca_files" (concat (list "/etc/saltq/tls/ca.crt") ($user.client_ca_files | default list) | uniq) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* The master's ports, from its config: quic, h2, http (0 when that listener is off). */}}
{{- define "saltq.master.ports" -}}
{{- $c := include "saltq.master.config" . | fromYaml -}}
{{- $port := int $c.port -}}
quic: {{ if eq (toString $c.quic_enabled) "false" }}0{{ else }}{{ int (default $port $c.quic_port) }}{{ end }}
h2: {{ if eq (toString $c.h2_enabled) "false" }}0{{ else }}{{ int (default $port $c.h2_port) }}{{ end }}
http: {{ int $c.http_port }}
{{- end -}}

{{/* The master's address as the minions dial it: this release's Service, or minion.master. */}}
{{- define "saltq.minion.masterHost" -}}
{{- if .Values.minion.master -}}
{{- .Values.minion.master -}}
{{- else -}}
{{- $svc := include "saltq.master.quicService" . -}}
{{- if .Values.master.service.mixedProtocol -}}
{{- $svc = include "saltq.master.mixedService" . -}}
{{- else if eq .Values.minion.transport "h2" -}}
{{- $svc = include "saltq.master.h2Service" . -}}
{{- end -}}
{{- printf "%s.%s.svc.%s" $svc .Release.Namespace .Values.clusterDomain -}}
{{- end -}}
{{- end -}}

{{/* The minion's config file (/etc/saltq/minion) as YAML, minion.config over the chart's keys. */}}
{{- define "saltq.minion.config" -}}
{{- $v := .Values -}}
{{- $port := $v.minion.masterPort -}}
{{- if not $v.minion.master -}}
{{- $ports := include "saltq.master.ports" . | fromYaml -}}
{{- $port = ternary $ports.h2 $ports.quic (eq $v.minion.transport "h2") -}}
{{- end -}}
{{- $cfg := dict "master" (include "saltq.minion.masterHost" .) "master_port" (int $port) "transport" $v.minion.transport "pki_dir" "/var/lib/saltq/minion-pki" -}}
{{- if ne $v.certificates.mode "selfSigned" -}}
{{- $_ := set $cfg "ca_file" "/etc/saltq/ca/ca.crt" -}}
{{- else if $v.certificates.masterFinger -}}
{{- $_ := set $cfg "master_finger" $v.certificates.masterFinger -}}
{{- end -}}
{{- if $v.minion.health.enabled -}}
{{- $_ := set $cfg "health_port" (int $v.minion.health.port) -}}
{{- end -}}
{{- range $k, $val := ($v.minion.config | default dict) -}}
{{- $_ := set $cfg $k $val -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* Where the minion's key lives on the node. */}}
{{- define "saltq.minion.pkiHostPath" -}}
{{- default (printf "/var/lib/saltq/%s-%s/minion-pki" .Release.Namespace .Release.Name) .Values.minion.pki.hostPath -}}
{{- end -}}

{{/*
Values that the schema cannot judge alone, refused with what to change. values.schema.json
repeats the replica rules so `helm install` stops before rendering; this is the message a user
sees from `helm template` and the rule for anything the schema lets through.
*/}}
{{- define "saltq.validate" -}}
{{- $v := .Values -}}
{{- if not (or $v.master.enabled $v.minion.enabled) -}}
{{- fail "nothing to install: master.enabled and minion.enabled are both false" -}}
{{- end -}}
{{- if $v.master.enabled -}}
{{- $c := include "saltq.master.config" . | fromYaml -}}
{{- $replicas := int $v.master.replicas -}}
{{- $cluster := include "saltq.master.cluster" . -}}
{{- if and (gt $replicas 1) (not $cluster) -}}
{{- fail (printf "master.replicas=%d makes the masters a cluster, but master.cluster.enabled=false: leave it null (or true), or set master.replicas=1" $replicas) -}}
{{- end -}}
{{- $why := ternary (printf "master.replicas=%d" $replicas) "master.cluster.enabled=true" (gt $replicas 1) -}}
{{- if and $cluster (ne (toString $c.job_cache) "postgres") -}}
{{- fail (printf "%s needs the PostgreSQL job cache: set master.config.job_cache=postgres and master.config.job_cache_postgres (or master.jobCache.postgresSecret.name); the embedded SQLite cache (job_cache=%s) lives on one pod's volume and cannot be shared" $why (toString $c.job_cache)) -}}
{{- end -}}
{{- if and $cluster (eq $v.certificates.mode "selfSigned") -}}
{{- fail (printf "%s needs one server certificate for every replica: set certificates.mode to certManager or existingSecret (with selfSigned each replica makes its own CA, and a minion pinned to one is refused by the others)" $why) -}}
{{- end -}}
{{- if and $cluster (not $v.master.cluster.nats.url) -}}
{{- fail (printf "%s makes the masters a cluster, which talks through NATS: set master.cluster.nats.url (e.g. nats://nats.nats.svc:4222, a NATS installed from the official chart, see README \"Kubernetes\")" $why) -}}
{{- end -}}
{{- if and $cluster (eq $v.certificates.mode "certManager") $v.certificates.certManager.issuerRef.name (not $v.master.cluster.pki.secret) -}}
{{- fail (printf "%s with certificates.certManager.issuerRef.name=%s needs master.cluster.pki.secret: the replicas share a CA whose key signs minion and client certificates, and the chart can read only its own CA's key (leave issuerRef.name empty, or name a Secret holding ca.crt, ca.key, admin.crt, admin.key)" $why $v.certificates.certManager.issuerRef.name) -}}
{{- end -}}
{{- if and (eq (toString $c.job_cache) "postgres") (not $c.job_cache_postgres) (not $v.master.jobCache.postgresSecret.name) -}}
{{- fail "master.config.job_cache=postgres needs a connection string: master.config.job_cache_postgres, or master.jobCache.postgresSecret.name (a Secret holding the whole libpq string, for a password)" -}}
{{- end -}}
{{- if eq (toString $c.http_enabled) "false" -}}
{{- fail "master.config.http_enabled=false turns off the HTTP port the chart's probes use (/healthz, /readyz): leave it on" -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.certificates.mode "certManager") (not $v.master.enabled) -}}
{{- fail "certificates.mode=certManager issues the master's certificate, but master.enabled=false: for minions of an external master use certificates.mode=existingSecret (a Secret with the master's ca.crt) or selfSigned with certificates.masterFinger" -}}
{{- end -}}
{{- if and (eq $v.certificates.mode "existingSecret") (not $v.certificates.existingSecret.name) -}}
{{- fail "certificates.mode=existingSecret needs certificates.existingSecret.name" -}}
{{- end -}}
{{- if and $v.certificates.certManager.clients $v.certificates.certManager.issuerRef.name -}}
{{- fail "certificates.certManager.clients needs the chart's own CA (certificates.certManager.issuerRef.name empty): trusting an external issuer for client certificates would make every certificate it issues an admin of the master" -}}
{{- end -}}
{{- if $v.minion.enabled -}}
{{- if and (not $v.master.enabled) (not $v.minion.master) -}}
{{- fail "master.enabled=false: set minion.master to the host name or address of the master the minions should dial" -}}
{{- end -}}
{{- if and $v.master.enabled (not $v.minion.master) -}}
{{- $ports := include "saltq.master.ports" . | fromYaml -}}
{{- if eq (int (get $ports $v.minion.transport)) 0 -}}
{{- fail (printf "minion.transport=%s but the master's %s listener is off (master.config.%s_enabled=false)" $v.minion.transport $v.minion.transport $v.minion.transport) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
