{{- define "gpunode.labels" -}}
app.kubernetes.io/name: gpunode
{{- end -}}
{{- define "gpunode.agentLabels" -}}
app.kubernetes.io/name: gpunode
app.kubernetes.io/component: agent
{{- end -}}
