{{/*
The namespace of every object: the CCM's Lease (kube-system/ccm) and the
ServiceAccounts it mints per-controller tokens for are in kube-system, so the
chart does not follow the release namespace.
*/}}
{{- define "ccm.namespace" -}}kube-system{{- end }}

{{/* The fixed name of deploy/'s objects, so that either can take over from the other. */}}
{{- define "ccm.name" -}}cloud-controller-manager{{- end }}

{{/* Selector labels: deploy/'s, since a Deployment's selector cannot change. */}}
{{- define "ccm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ccm.name" . }}
{{- end }}

{{/* Labels of every object: deploy/'s plus Helm's standard ones. */}}
{{- define "ccm.labels" -}}
{{ include "ccm.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
The ServiceAccounts the running controllers act as with
--use-service-account-credentials (their client names): node-controller for
the cloud-node and lifecycle controllers, and cloud-node-controller always
(the cloud provider's own event client).
*/}}
{{- define "ccm.controllerIdentities" -}}
{{- $ids := list -}}
{{- if or .Values.controllers.cloudNode .Values.controllers.cloudNodeLifecycle }}{{ $ids = append $ids "node-controller" }}{{ end -}}
{{- if .Values.controllers.service }}{{ $ids = append $ids "service-controller" }}{{ end -}}
{{- if .Values.controllers.route }}{{ $ids = append $ids "route-controller" }}{{ end -}}
{{- $ids = append $ids "cloud-node-controller" -}}
{{- toJson $ids -}}
{{- end }}

{{/* --controllers when some are off (the default "*" otherwise). */}}
{{- define "ccm.controllersFlag" -}}
{{- $c := .Values.controllers -}}
{{- if not (and $c.cloudNode $c.cloudNodeLifecycle $c.service $c.route) -}}
{{- $on := list -}}
{{- if $c.cloudNode }}{{ $on = append $on "cloud-node" }}{{ end -}}
{{- if $c.cloudNodeLifecycle }}{{ $on = append $on "cloud-node-lifecycle" }}{{ end -}}
{{- if $c.service }}{{ $on = append $on "service" }}{{ end -}}
{{- if $c.route }}{{ $on = append $on "route" }}{{ end -}}
{{- if not $on }}{{ fail "controllers: every controller is off; enable at least one" }}{{ end -}}
--controllers={{ join "," $on }}
{{- end -}}
{{- end }}

{{/* The cloud-config file: the existing CCM's Global section. */}}
{{- define "ccm.cloudConfig" -}}
{{- if and (not .Values.clusterID) (not .Values.legacyDefaultClusterID) -}}
{{- fail "clusterID is required: set it to the cluster's id (--set clusterID=...), keeping the existing CCM's value when migrating; a cluster whose CCM never set one sets legacyDefaultClusterID=true instead" -}}
{{- end -}}
{{- $g := dict -}}
{{- with .Values.clusterID }}{{ $_ := set $g "clusterID" . }}{{ end -}}
{{- with .Values.region }}{{ $_ := set $g "region" . }}{{ end -}}
{{- with .Values.vpcID }}{{ $_ := set $g "vpcid" . }}{{ end -}}
{{- with .Values.vswitches }}{{ $_ := set $g "vswitchid" (join "," .) }}{{ end -}}
{{- with .Values.routeTableIDs }}{{ $_ := set $g "routeTableIDs" (join "," .) }}{{ end -}}
{{- with .Values.resourceGroupID }}{{ $_ := set $g "resourceGroupID" . }}{{ end -}}
{{- if .Values.disablePublicSLB }}{{ $_ := set $g "disablePublicSLB" true }}{{ end -}}
{{- with .Values.loadBalancerReuse }}{{ $_ := set $g "loadBalancerReuse" . }}{{ end -}}
{{- range $id, $_ := .Values.certificateGrants }}{{ if not (regexMatch "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$" $id) }}{{ fail (printf "certificateGrants: %q is not a certificate id (letters, digits, '.', '_' and '-', at most 128)" $id) }}{{ end }}{{ end -}}
{{- with .Values.certificateGrants }}{{ $_ := set $g "certificateGrants" . }}{{ end -}}
{{- with .Values.credentials.ramRoleName }}{{ $_ := set $g "ramRoleName" . }}{{ end -}}
{{- range $k, $v := .Values.extraCloudConfig }}
{{- if has (lower $k) (list "accesskeyid" "accesskeysecret") }}{{ fail (printf "extraCloudConfig.%s: credentials do not belong in the cloud-config ConfigMap; use credentials.secretName" $k) }}{{ end -}}
{{- $_ := set $g $k $v -}}
{{- end -}}
{{- toYaml (dict "Global" $g) -}}
{{- end }}
