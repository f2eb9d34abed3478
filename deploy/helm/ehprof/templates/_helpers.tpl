{{/* The selector labels: stable across upgrades (a DaemonSet's selector cannot change). */}}
{{- define "ehprof.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* All labels. Neither helm.sh/chart nor app.kubernetes.io/managed-by: the
     plain manifest (deploy/kubernetes/) is this chart rendered, and says
     nothing false when applied with kubectl. */}}
{{- define "ehprof.labels" -}}
{{ include "ehprof.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: profiler
{{- end -}}

{{- define "ehprof.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
