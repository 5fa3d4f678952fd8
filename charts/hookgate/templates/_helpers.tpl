{{/* Chart name, truncated to the 63 characters a label allows. */}}
{{- define "hookgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart, or the release name alone when it contains the chart name. */}}
{{- define "hookgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hookgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels. */}}
{{- define "hookgate.labels" -}}
helm.sh/chart: {{ include "hookgate.chart" . }}
{{ include "hookgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hookgate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels. */}}
{{- define "hookgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one component: call with (dict "ctx" $ "component" "gateway"). */}}
{{- define "hookgate.componentLabels" -}}
{{ include "hookgate.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "hookgate.componentSelectorLabels" -}}
{{ include "hookgate.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "hookgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hookgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "hookgate.image" -}}
{{- if not .Values.image.repository }}
{{- fail "image.repository is empty: no public hookgate image is published. Build one from the repository's Dockerfile (`make image` builds localhost/hookgate:dev with podman; or `docker build -t registry.example.com/hookgate:0.1.0 .`), push it to a registry your cluster pulls from, and set image.repository (and image.tag)." }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret every container reads: the user's existingSecret or the chart-created one. */}}
{{- define "hookgate.secretName" -}}
{{- default (include "hookgate.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{- define "hookgate.configMapName" -}}
{{- printf "%s-config" (include "hookgate.fullname" .) }}
{{- end }}

{{- define "hookgate.configPath" -}}/etc/hookgate/hookgate.yaml{{- end }}

{{/*
Why `helm test` has no endpoint to send its sample event to, or nothing: with several endpoints
it must be named rather than guessed (the test checks that endpoint's route, secret and
provider). tests/test-send.yaml refuses with it, lint included (hookgate.refuse).
*/}}
{{- define "hookgate.testEndpointProblem" -}}
{{- $names := keys (default dict .Values.config.endpoints) | sortAlpha }}
{{- if not $names }}
{{- include "hookgate.noEndpoints" . }}
{{- else if .Values.tests.endpoint }}
{{- if not (has .Values.tests.endpoint $names) }}
{{- printf "tests.endpoint %q is not one of config.endpoints (%s): name the endpoint `helm test` sends its sample event to." .Values.tests.endpoint (join ", " $names) }}
{{- end }}
{{- else if gt (len $names) 1 }}
{{- printf "tests.endpoint is empty and config.endpoints has %d endpoints (%s): name the one `helm test` sends its sample event to (signed with that endpoint's secret and verified by its provider; a worker settles it `ignored`, no handler sees it), e.g. --set tests.endpoint=%s, or set tests.enabled=false." (len $names) (join ", " $names) (first $names) }}
{{- end }}
{{- end }}

{{/* The endpoint `helm test` sends its sample event to: tests.endpoint, or the only endpoint. */}}
{{- define "hookgate.testEndpoint" -}}
{{- with include "hookgate.testEndpointProblem" . }}
{{- fail . }}
{{- end }}
{{- default (first (keys (default dict .Values.config.endpoints) | sortAlpha)) .Values.tests.endpoint }}
{{- end }}

{{/*
A render-time refusal: `helm template`, `install` and `upgrade` stop at `fail` with the sentence.
`helm lint` runs the templates with a `fail` that only logs the sentence and goes on, so lint
would pass what install refuses; past that `fail` (reached under lint only) this renders an
object named by the sentence, and lint's name check reports it with the sentence: `[WARNING]`,
which fails `helm lint --strict`. Include it where a template renders whole documents, never
inside one.
*/}}
{{- define "hookgate.refuse" }}
{{- fail . }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ . | quote }}
---
{{- end }}

{{/* The chart ships no endpoint (Helm would merge it into the user's): said where one is needed. */}}
{{- define "hookgate.noEndpoints" -}}
config.endpoints is empty: the chart ships no endpoint. Configure at least one (its name is the URL POST /webhooks/<name>), e.g. in your values: config: {endpoints: {stripe: {provider: stripe, secrets: ["${STRIPE_WEBHOOK_SECRET}"], handler: record}}} with STRIPE_WEBHOOK_SECRET a key of the Secret (examples: the chart's ci/*-values.yaml, docs/kubernetes.md).
{{- end }}

{{/* Seconds of a hookgate duration (ms, s, m, h), rounded up; used for render-time checks. */}}
{{- define "hookgate.durationSeconds" -}}
{{- $text := toString . }}
{{- if hasSuffix "ms" $text }}
{{- div (add (trimSuffix "ms" $text | atoi) 999) 1000 }}
{{- else if hasSuffix "s" $text }}
{{- trimSuffix "s" $text | atoi }}
{{- else if hasSuffix "m" $text }}
{{- mul (trimSuffix "m" $text | atoi) 60 }}
{{- else if hasSuffix "h" $text }}
{{- mul (trimSuffix "h" $text | atoi) 3600 }}
{{- else }}
{{- fail (printf "%q is not a duration; write a whole number and a unit, e.g. 15s" $text) }}
{{- end }}
{{- end }}

{{/* Environment of every hookgate container: the Secret (every key), DATABASE_URL, ports, OTEL_*. */}}
{{- define "hookgate.envFrom" -}}
- secretRef:
    name: {{ include "hookgate.secretName" . }}
{{- end }}

{{/*
Where a component's DATABASE_URL comes from: its own Secret when `secret.name` is set (the
migration login, KEDA's and `helm test`'s read-only login: docs/kubernetes.md, "Roles"), else
the pods' Secret. Call with (dict "ctx" $ "secret" .Values.migrations.databaseUrlSecret).
*/}}
{{- define "hookgate.databaseUrlRef" -}}
{{- if .secret.name -}}
name: {{ .secret.name }}
key: {{ .secret.key }}
{{- else -}}
name: {{ include "hookgate.secretName" .ctx }}
key: {{ .ctx.Values.secrets.databaseUrlKey }}
{{- end -}}
{{- end }}

{{/* Call with (dict "ctx" $ "component" "gateway"). */}}
{{- define "hookgate.env" -}}
{{- $ctx := .ctx }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- if eq .component "test" }}
      {{- include "hookgate.databaseUrlRef" (dict "ctx" $ctx "secret" $ctx.Values.tests.databaseUrlSecret) | nindent 6 }}
      {{- else if eq .component "console" }}
      {{- /* A hookgate_console login (docs/console.md, "Database role") when console.databaseUrlSecret names its Secret. */}}
      {{- include "hookgate.databaseUrlRef" (dict "ctx" $ctx "secret" $ctx.Values.console.databaseUrlSecret) | nindent 6 }}
      {{- else }}
      name: {{ include "hookgate.secretName" $ctx }}
      key: {{ $ctx.Values.secrets.databaseUrlKey }}
      {{- end }}
- name: LOG_LEVEL
  value: {{ $ctx.Values.logLevel | quote }}
- name: HOOKGATE_CONFIG
  value: {{ include "hookgate.configPath" $ctx }}
{{- with $ctx.Values.otel }}
{{- if .endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
{{- if .samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .samplerArg | quote }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ printf "hookgate-%s" $.component | quote }}
- name: K8S_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.pod.name=$(K8S_POD_NAME),k8s.namespace.name=%s,service.version=%s%s" $ctx.Release.Namespace $ctx.Chart.AppVersion (ternary (printf ",%s" .resourceAttributes) "" (ne .resourceAttributes "")) | quote }}
{{- end }}
{{- end }}
{{- with $ctx.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "hookgate.volumes" -}}
- name: config
  configMap:
    name: {{ include "hookgate.configMapName" . }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end }}

{{- define "hookgate.volumeMounts" -}}
- name: config
  mountPath: /etc/hookgate
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* Default spread across nodes and zones, unless the component sets its own constraints. */}}
{{- define "hookgate.topologySpread" -}}
{{- $values := index .ctx.Values .component }}
{{- if $values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml $values.topologySpreadConstraints | nindent 2 }}
{{- else if .ctx.Values.topologySpread.enabled }}
topologySpreadConstraints:
  {{- range list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
  - maxSkew: {{ $.ctx.Values.topologySpread.maxSkew }}
    topologyKey: {{ . }}
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "hookgate.componentSelectorLabels" $ | nindent 8 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* hookgate.yaml as the ConfigMap carries it (also what checksum/config hashes). */}}
{{- define "hookgate.configMapData" -}}
hookgate.yaml: |
  {{- toYaml .Values.config | nindent 2 }}
{{- end }}

{{/*
Render-time checks: values that would install something broken fail with a sentence. Each
check runs in the template of the object it is about, so Helm's error names that template.
These are about secrets and endpoints (configmap.yaml).
*/}}
{{- define "hookgate.validate" -}}
{{- if and (not .Values.secrets.existingSecret) (not .Values.secrets.databaseUrl) }}
{{- include "hookgate.refuse" "No secret source: set secrets.existingSecret to a Secret holding DATABASE_URL and the endpoints' signing secrets, or set secrets.databaseUrl and secrets.values to let the chart create one." }}
{{- end }}
{{- if and .Values.secrets.existingSecret (or .Values.secrets.databaseUrl .Values.secrets.values) }}
{{- include "hookgate.refuse" "secrets.existingSecret is set together with secrets.databaseUrl or secrets.values: use one source (the chart does not create a Secret when existingSecret is set)." }}
{{- end }}
{{- if not .Values.config.endpoints }}
{{- include "hookgate.refuse" (include "hookgate.noEndpoints" .) }}
{{- end }}
{{- range $name, $endpoint := .Values.config.endpoints }}
{{- range $endpoint.secrets }}
{{- if not (regexMatch "^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$" (toString .)) }}
{{- include "hookgate.refuse" (printf "config.endpoints.%s.secrets: every entry must be a ${NAME} reference to a key of the Secret, never a literal secret (a ConfigMap is not secret)." $name) }}
{{- end }}
{{- if and (not $.Values.secrets.existingSecret) (not (hasKey $.Values.secrets.values (trimPrefix "${" (trimSuffix "}" (toString .))))) }}
{{- include "hookgate.refuse" (printf "config.endpoints.%s.secrets: %s has no key in secrets.values; add it there (or use secrets.existingSecret)." $name (toString .)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The numbers the templates compute with, generated from hookgate's TypeScript (connections each
process holds beside its pools, the configuration's defaults): files/generated/arithmetic.json,
written by test/chart/chart-arithmetic.ts, which a test keeps current.
*/}}
{{- define "hookgate.arithmetic" -}}
{{- .Files.Get "files/generated/arithmetic.json" }}
{{- end }}

{{/*
Bytes of a hookgate size: a number of bytes, or a number and b, kb/kib, mb/mib, every unit
binary (services/core/config/duration.ts reads it so).
*/}}
{{- define "hookgate.sizeBytes" -}}
{{- if kindIs "string" . }}
{{- $text := . | trim | lower }}
{{- $amount := regexFind "^[0-9]+" $text }}
{{- $unit := trimPrefix $amount $text | trim }}
{{- $units := dict "b" 1 "kb" 1024 "kib" 1024 "mb" 1048576 "mib" 1048576 }}
{{- if or (not $amount) (not (hasKey $units $unit)) }}
{{- fail (printf "%q is not a size; write e.g. 1mib, 512kib or 65536" .) }}
{{- end }}
{{- mul (atoi $amount) (index $units $unit) }}
{{- else }}
{{- int64 . }}
{{- end }}
{{- end }}

{{/*
The largest body any endpoint accepts, in bytes, as hookgate decides each endpoint's limit
(services/core/config/body-limits.ts, endpointBodyLimit): its own bodyLimit, else its provider's
documented maximum (github, gitlab: 25 MiB), else server.bodyLimit. The Ingress lets that much
through (gateway-ingress.yaml); a test compares this with the TypeScript.
*/}}
{{- define "hookgate.largestBodyLimit" -}}
{{- $k := include "hookgate.arithmetic" . | fromJson }}
{{- $server := int64 $k.defaults.serverBodyLimit }}
{{- with dig "server" "bodyLimit" nil .Values.config }}
{{- $server = include "hookgate.sizeBytes" . | atoi }}
{{- end }}
{{- $largest := 0 }}
{{- range $name, $endpoint := .Values.config.endpoints }}
{{- $limit := $server }}
{{- if $endpoint.bodyLimit }}
{{- $limit = include "hookgate.sizeBytes" $endpoint.bodyLimit | atoi }}
{{- else if hasKey $k.providerBodyLimits (toString $endpoint.provider) }}
{{- $limit = index $k.providerBodyLimits (toString $endpoint.provider) | int64 }}
{{- end }}
{{- $largest = max $largest $limit }}
{{- end }}
{{- $largest }}
{{- end }}

{{/* A byte count as nginx writes sizes: whole MiB as `25m`, else KiB rounded up (`513k`). */}}
{{- define "hookgate.nginxSize" -}}
{{- $bytes := int64 . }}
{{- if eq (mod $bytes 1048576) 0 }}
{{- printf "%dm" (div $bytes 1048576) }}
{{- else }}
{{- printf "%dk" (div (add $bytes 1023) 1024) }}
{{- end }}
{{- end }}

{{/*
The environment variables the configuration's ${NAME} references need, sorted, as JSON: every
string of `config` read as hookgate reads it (services/core/config/interpolate.ts,
referencedVariables: `$${` is no reference, `${NAME:-fallback}` needs nothing, `sql:` statements
count), with hookgate's own pattern from files/generated/arithmetic.json. Rendered here, from the
values, because they are only known at install time; a test compares it with the TypeScript.
*/}}
{{- define "hookgate.referencedVariables" -}}
{{- $found := dict }}
{{- include "hookgate.collectReferences" (dict "node" .Values.config "found" $found "pattern" (include "hookgate.arithmetic" . | fromJson).referencePattern) }}
{{- keys $found | sortAlpha | toJson }}
{{- end }}

{{/* One node of that walk: (dict "node" x "found" <dict of names> "pattern" <REFERENCE>). */}}
{{- define "hookgate.collectReferences" -}}
{{- $walk := . }}
{{- if kindIs "string" .node }}
{{- range regexFindAll .pattern .node -1 }}
{{- if not (or (hasPrefix "$$" .) (contains ":-" .)) }}
{{- $_ := set $walk.found (trimSuffix "}" (trimPrefix "${" .)) true }}
{{- end }}
{{- end }}
{{- else if kindIs "map" .node }}
{{- range $key, $value := .node }}
{{- include "hookgate.collectReferences" (dict "node" $value "found" $walk.found "pattern" $walk.pattern) }}
{{- end }}
{{- else if kindIs "slice" .node }}
{{- range .node }}
{{- include "hookgate.collectReferences" (dict "node" . "found" $walk.found "pattern" $walk.pattern) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Seconds the longest drain takes: serve's last-resort exit waits for the longer shutdownTimeout. */}}
{{- define "hookgate.drainSeconds" -}}
{{- $defaults := (include "hookgate.arithmetic" . | fromJson).defaults }}
{{- $server := dig "server" "shutdownTimeout" "" .Values.config }}
{{- $worker := dig "worker" "shutdownTimeout" "" .Values.config }}
{{- $shutdown := ternary (include "hookgate.durationSeconds" $server | atoi) (int $defaults.serverShutdownSeconds) (ne (toString $server) "") }}
{{- $workerShutdown := ternary (include "hookgate.durationSeconds" $worker | atoi) (int $defaults.workerShutdownSeconds) (ne (toString $worker) "") }}
{{- max $shutdown $workerShutdown }}
{{- end }}

{{/* The gateway's grace period (gateway-deployment.yaml). */}}
{{- define "hookgate.validateGateway" -}}
{{- $gatewayNeeds := add .Values.gateway.preStopSleepSeconds (include "hookgate.drainSeconds" . | atoi) 10 }}
{{- if le (int .Values.gateway.terminationGracePeriodSeconds) (int $gatewayNeeds) }}
{{- include "hookgate.refuse" (printf "gateway.terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds + the longest shutdownTimeout + 10s (%d): the kubelet would kill pods mid-drain." (int .Values.gateway.terminationGracePeriodSeconds) (int $gatewayNeeds)) }}
{{- end }}
{{- end }}

{{/* The worker's grace period (worker-deployment.yaml). */}}
{{- define "hookgate.validateWorker" -}}
{{- $workerNeeds := add (include "hookgate.drainSeconds" . | atoi) 10 }}
{{- if le (int .Values.worker.terminationGracePeriodSeconds) (int $workerNeeds) }}
{{- include "hookgate.refuse" (printf "worker.terminationGracePeriodSeconds (%d) must exceed the longest shutdownTimeout + 10s (%d): the kubelet would kill pods mid-drain." (int .Values.worker.terminationGracePeriodSeconds) (int $workerNeeds)) }}
{{- end }}
{{- end }}

{{/*
The console (console-deployment.yaml): it refuses to start without a session key or a way to
sign in, so say so at render time where the chart can tell.
*/}}
{{- define "hookgate.validateConsole" -}}
{{- $c := default dict .Values.config.console }}
{{- if not (or .Values.console.usersSecret.name $c.users $c.tokens $c.proxyAuth) }}
{{- include "hookgate.refuse" "console.enabled needs a way to sign in: console.usersSecret.name (a Secret with name:hash lines from `hookgate console hash-password`), config.console.users, config.console.tokens or config.console.proxyAuth; hookgate never serves an open console outside its embedded demo." }}
{{- end }}
{{- if and (not .Values.secrets.existingSecret) (not $c.sessionSecret) (not (hasKey .Values.secrets.values "CONSOLE_SESSION_SECRET")) }}
{{- include "hookgate.refuse" "console.enabled needs CONSOLE_SESSION_SECRET (32+ random characters, shared by every console replica): add it to secrets.values (or to your existingSecret)." }}
{{- end }}
{{- end }}

{{/*
The most PostgreSQL connections the release may hold at once, as JSON (load/README.md,
"Connections"): every pod at its largest replica count plus the rolling update's surge (25 %,
rounded up), each with its pools at their maximum, plus the migration Job and KEDA's scaler.
Per pod, as `hookgate serve` sizes its pools (services/core/config/connections.ts; a test compares),
with the constants and defaults of files/generated/arithmetic.json: gateway:
config.database.poolSize + pg-boss's; worker: the larger of config.worker.poolSize and endpoints ×
worker.concurrency + 2 + the destination relay's (per
destination 1, plus its concurrency with a breaker; plus 1 for the records when there is any
destination), plus pg-boss's and its wake-up listener; console (when enabled):
config.console.poolSize + the role's own + pg-boss's.
*/}}
{{- define "hookgate.connections" -}}
{{- $k := include "hookgate.arithmetic" . | fromJson }}
{{- $n := $k.connections }}
{{- $d := $k.defaults }}
{{- $c := .Values.config }}
{{- $endpoints := len $c.endpoints }}
{{- $destinations := 0 }}
{{- $destinationConnections := 0 }}
{{- range $name, $endpoint := $c.endpoints }}
{{- range $destName, $dest := (default dict $endpoint.destinations) }}
{{- $destinations = add1 $destinations }}
{{- $destinationConnections = add $destinationConnections 1 (ternary (int (dig "concurrency" $d.destinationConcurrency $dest)) 0 (and (hasKey $dest "breaker") (not (empty $dest.breaker)))) }}
{{- end }}
{{- end }}
{{- if gt $destinations 0 }}{{- $destinationConnections = add1 $destinationConnections }}{{- end }}
{{- $loops := add (mul $endpoints (int (dig "worker" "concurrency" $d.workerConcurrency $c))) 2 $destinationConnections }}
{{- $gatewayPerPod := add (int (dig "database" "poolSize" $d.databasePoolSize $c)) $n.queueGateway }}
{{- $workerPerPod := add (max $loops (int (dig "worker" "poolSize" 0 $c))) $n.queueWorker $n.wakeupListener }}
{{- $gatewayReplicas := ternary .Values.gateway.autoscaling.maxReplicas .Values.gateway.replicaCount .Values.gateway.autoscaling.enabled | int }}
{{- $workerReplicas := .Values.worker.replicaCount | int }}
{{- if .Values.worker.keda.enabled }}
{{- $workerReplicas = .Values.worker.keda.maxReplicaCount | int }}
{{- else if .Values.worker.autoscaling.enabled }}
{{- $workerReplicas = .Values.worker.autoscaling.maxReplicas | int }}
{{- end }}
{{- $gatewayPods := add $gatewayReplicas (div (add $gatewayReplicas 3) 4) }}
{{- $workerPods := add $workerReplicas (div (add $workerReplicas 3) 4) }}
{{- $consolePerPod := add (int (dig "console" "poolSize" $d.consolePoolSize $c)) $n.consoleRole $n.queueGateway }}
{{- $consoleReplicas := ternary (int .Values.console.replicaCount) 0 .Values.console.enabled }}
{{- $consolePods := add $consoleReplicas (div (add $consoleReplicas 3) 4) }}
{{- $migrations := ternary (int $n.migration) 0 .Values.migrations.enabled }}
{{- $keda := ternary 1 0 .Values.worker.keda.enabled }}
{{- $total := add (mul $gatewayPods $gatewayPerPod) (mul $workerPods $workerPerPod) (mul $consolePods $consolePerPod) $migrations $keda }}
{{- dict "gatewayPods" $gatewayPods "gatewayPerPod" $gatewayPerPod "workerPods" $workerPods "workerPerPod" $workerPerPod "consolePods" $consolePods "consolePerPod" $consolePerPod "migrations" $migrations "keda" $keda "total" $total | toJson }}
{{- end }}
