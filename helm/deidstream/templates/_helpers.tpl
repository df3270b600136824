{{- define "deidstream.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Flatten .Values.settings into DEID_* env vars: nested maps join with "__"; lists and the free-form
     "options" map are passed as JSON; null values are left unset (the setting's default applies). */}}
{{- define "deidstream.env" -}}
{{- $prefix := .prefix -}}
{{- range $k, $v := .values }}
{{- $name := printf "%s%s" $prefix (upper $k) -}}
{{- if kindIs "invalid" $v }}
{{- else if and (kindIs "map" $v) (ne $k "options") }}
{{ include "deidstream.env" (dict "prefix" (printf "%s__" $name) "values" $v) }}
{{- else if or (kindIs "slice" $v) (kindIs "map" $v) }}
- name: {{ $name }}
  value: {{ toJson $v | quote }}
{{- else }}
- name: {{ $name }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}
{{- end -}}
