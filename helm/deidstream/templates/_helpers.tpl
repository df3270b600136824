{{- define "deidstream.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "deidstream.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: worker
{{- end -}}

{{- define "deidstream.labels" -}}
{{ include "deidstream.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "deidstream.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "deidstream.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* repository:tag, or repository@digest when a digest is given. */}}
{{- define "deidstream.image" -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}
{{- end -}}

{{/* Flatten .Values.settings into DEID_* ConfigMap entries: nested maps join with "__"; lists and the
     free-form "options" map are JSON; null values are left out (the setting's default applies). */}}
{{- define "deidstream.settingsData" -}}
{{- $prefix := .prefix -}}
{{- range $k, $v := .values }}
{{- $name := printf "%s%s" $prefix (upper $k) -}}
{{- if kindIs "invalid" $v }}
{{- else if and (kindIs "map" $v) (ne $k "options") }}
{{ include "deidstream.settingsData" (dict "prefix" (printf "%s__" $name) "values" $v) }}
{{- else if or (kindIs "slice" $v) (kindIs "map" $v) }}
{{ $name }}: {{ toJson $v | quote }}
{{- else if and (kindIs "float64" $v) (eq $v (floor $v)) }}
{{- /* YAML numbers arrive as float64: 16777216 would print as 1.6777216e+07 */}}
{{ $name }}: {{ int64 $v | toString | quote }}
{{- else }}
{{ $name }}: {{ $v | toString | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Consistency checks that the schema cannot express. */}}
{{- define "deidstream.validate" -}}
{{- $s := .Values.settings -}}
{{- $proto := $s.kafka.security_protocol -}}
{{- if and .Values.kafkaAuth.tls.enabled (not (has $proto (list "SSL" "SASL_SSL"))) -}}
{{- fail "kafkaAuth.tls.enabled needs settings.kafka.security_protocol SSL or SASL_SSL" -}}
{{- end -}}
{{- if and .Values.kafkaAuth.sasl.enabled (not (has $proto (list "SASL_PLAINTEXT" "SASL_SSL"))) -}}
{{- fail "kafkaAuth.sasl.enabled needs settings.kafka.security_protocol SASL_PLAINTEXT or SASL_SSL" -}}
{{- end -}}
{{- if and (hasPrefix "SASL" $proto) (not .Values.kafkaAuth.sasl.enabled) -}}
{{- fail "settings.kafka.security_protocol SASL_* needs kafkaAuth.sasl (credentials come from a Secret)" -}}
{{- end -}}
{{- if le (float64 .Values.terminationGracePeriodSeconds) (float64 $s.health.stuck_after_s) -}}
{{- fail "terminationGracePeriodSeconds must be longer than settings.health.stuck_after_s (a batch in hand finishes before exit)" -}}
{{- end -}}
{{- if and .Values.keda.enabled (gt (int .Values.keda.maxReplicas) (int $s.topics.partitions)) -}}
{{- fail "keda.maxReplicas must not exceed settings.topics.partitions (a worker without a partition idles)" -}}
{{- end -}}
{{- if and .Values.keda.enabled (gt (int .Values.keda.minReplicas) (int .Values.keda.maxReplicas)) -}}
{{- fail "keda.minReplicas must not exceed keda.maxReplicas" -}}
{{- end -}}
{{- if and .Values.vllm.enabled (not .Values.llm.enabled) -}}
{{- fail "vllm.enabled needs llm.enabled (the worker is wired to the vLLM server through llm.*)" -}}
{{- end -}}
{{- if and .Values.llm.enabled (not .Values.vllm.enabled) (not .Values.llm.url) -}}
{{- fail "llm.enabled needs llm.url, or vllm.enabled for the chart's own vLLM server" -}}
{{- end -}}
{{- if and .Values.llm.enabled (not .Values.vllm.enabled) (not .Values.llm.model) -}}
{{- fail "llm.enabled needs llm.model (the name the server serves), or vllm.enabled" -}}
{{- end -}}
{{- if and .Values.gpu.enabled (not (contains "cuda" .Values.image.tag)) (not .Values.image.digest) -}}
{{- fail "gpu.enabled needs the CUDA image (an image.tag with \"cuda\", e.g. 0.1.0-cuda, or a digest)" -}}
{{- end -}}
{{- end -}}

{{/* Pod and container security contexts shared by the worker and the topics Job. */}}
{{- define "deidstream.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "deidstream.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 10001
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Environment from Secrets (never inlined) and the TLS file paths; shared by the worker and the Job. */}}
{{- define "deidstream.secretEnv" -}}
- name: DEID_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secret.existingSecret }}
      key: {{ .Values.secret.key }}
{{- with .Values.kafkaAuth.tls }}
{{- if .enabled }}
- name: DEID_KAFKA__SSL_CAFILE
  value: /etc/deidstream/kafka-tls/{{ .caKey }}
{{- if .certKey }}
- name: DEID_KAFKA__SSL_CERTFILE
  value: /etc/deidstream/kafka-tls/{{ .certKey }}
{{- end }}
{{- if .keyKey }}
- name: DEID_KAFKA__SSL_KEYFILE
  value: /etc/deidstream/kafka-tls/{{ .keyKey }}
{{- end }}
{{- if .passwordKey }}
- name: DEID_KAFKA__SSL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.kafkaAuth.sasl }}
{{- if .enabled }}
- name: DEID_KAFKA__SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .usernameKey }}
- name: DEID_KAFKA__SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- if .Values.telemetryAuth.existingSecret }}
- name: DEID_TELEMETRY__OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ .Values.telemetryAuth.existingSecret }}
      key: {{ .Values.telemetryAuth.otlpHeadersKey }}
{{- end }}
{{- range .Values.extraSecretEnv }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .key }}
{{- end }}
{{- end -}}

{{- define "deidstream.kafkaVolumeMounts" -}}
{{- if .Values.kafkaAuth.tls.enabled }}
- name: kafka-tls
  mountPath: /etc/deidstream/kafka-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "deidstream.kafkaVolumes" -}}
{{- if .Values.kafkaAuth.tls.enabled }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafkaAuth.tls.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- end -}}
