{{/* The one image of the three server components: by digest when given. */}}
{{- define "breakglass.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "breakglass.labels" -}}
app.kubernetes.io/part-of: breakglass
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The evidence store's credentials and the signing key's password, for the sweeper and the relay. */}}
{{- define "breakglass.evidenceEnv" -}}
{{- with .Values.evidence.credentialsSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom: {secretKeyRef: {name: {{ . }}, key: AWS_ACCESS_KEY_ID}}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom: {secretKeyRef: {name: {{ . }}, key: AWS_SECRET_ACCESS_KEY}}
{{- end }}
{{- with .Values.evidence.rekor.keySecret }}
- name: BREAKGLASS_REKOR_KEY_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ . }}, key: password, optional: true}}
{{- end }}
{{- end -}}

{{/* Refuses evidence settings that cannot work. */}}
{{- define "breakglass.checkEvidence" -}}
{{- if and .Values.evidence.s3.bucket (not .Values.evidence.cluster) }}
{{- fail "evidence.cluster: required with evidence.s3: recordings are kept under the cluster's name, as the relay's config names it" }}
{{- end }}
{{- if and .Values.evidence.rekor.url (not .Values.evidence.rekor.keySecret) }}
{{- fail "evidence.rekor.keySecret: a Secret with the signing key (cosign.key) is required with evidence.rekor.url" }}
{{- end }}
{{- end -}}

{{/* Every component runs as a non-root user on a read-only root, without privilege. */}}
{{- define "breakglass.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "breakglass.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Where a component's pods go, and how they pull the image: call with (list $ .Values.<component>). */}}
{{- define "breakglass.placement" -}}
{{- $root := index . 0 }}{{- $c := index . 1 }}
{{- with $root.Values.image.pullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
