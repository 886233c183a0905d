{{/*
holdfast.name is the application's name, for app.kubernetes.io/name.
*/}}
{{- define "holdfast.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
holdfast.fullname prefixes every object the chart names: the release name, unless it
already says holdfast. Cluster-scoped objects carry it too, so that two releases in one
cluster do not fight over one ClusterRole.
*/}}
{{- define "holdfast.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
holdfast.operatorName names the operator's Deployment, ClusterRole, bindings and budget.
*/}}
{{- define "holdfast.operatorName" -}}
{{- printf "%s-operator" (include "holdfast.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
holdfast.serviceAccountName is the operator's ServiceAccount, made by the chart or not.
*/}}
{{- define "holdfast.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "holdfast.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "holdfast.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
holdfast.selectorLabels select the operator's pods; they never change on upgrade.
*/}}
{{- define "holdfast.selectorLabels" -}}
app.kubernetes.io/name: {{ include "holdfast.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/*
holdfast.labels go on every object the chart makes.
*/}}
{{- define "holdfast.labels" -}}
helm.sh/chart: {{ include "holdfast.chart" . }}
{{ include "holdfast.selectorLabels" . }}
app.kubernetes.io/version: {{ include "holdfast.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: holdfast
{{- end -}}

{{/*
holdfast.imageTag is the operator's image tag: the chart's appVersion unless set.
*/}}
{{- define "holdfast.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{/*
holdfast.image is the operator's image reference; a digest pins it exactly.
*/}}
{{- define "holdfast.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (include "holdfast.imageTag" .) -}}
{{- end -}}
{{- end -}}


{{/*
holdfast.metricsTLSSecret names the Secret of the metrics endpoint's certificate, empty
when the operator serves a self-signed one.
*/}}
{{- define "holdfast.metricsTLSSecret" -}}
{{- $tls := .Values.metrics.tls -}}
{{- if $tls.certManager.enabled -}}
{{- default (printf "%s-metrics-tls" (include "holdfast.fullname" .)) $tls.secretName -}}
{{- else -}}
{{- $tls.secretName -}}
{{- end -}}
{{- end -}}

{{/*
holdfast.metricsServerName is the name the metrics certificate is for and Prometheus
checks: the metrics Service's, in the cluster.
*/}}
{{- define "holdfast.metricsServerName" -}}
{{- printf "%s-metrics.%s.svc" (include "holdfast.operatorName" .) .Release.Namespace -}}
{{- end -}}

{{/*
holdfast.podSecurityLabels hold a namespace to the restricted pod security level, which
the operator's pod meets (non-root, no privilege escalation, no capabilities, the
runtime's seccomp profile).
*/}}
{{- define "holdfast.podSecurityLabels" -}}
pod-security.kubernetes.io/enforce: restricted
pod-security.kubernetes.io/audit: restricted
pod-security.kubernetes.io/warn: restricted
{{- end -}}
