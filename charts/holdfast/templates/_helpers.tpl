{{- define "holdfast.labels" -}}
app.kubernetes.io/name: holdfast-operator
{{- end -}}
