{{/*
The pod template of the gateway, worker and console Deployments: one place for their labels,
checksums, ServiceAccount, security contexts, command, environment, probes, volumes and
scheduling, as prometheus-community's charts share theirs. What differs is passed in:
  (dict "ctx" $ "component" "gateway"|"worker"|"console"
        "probePort" the named port the probes use ("http" or "metrics")
        "ports" the container's ports before `metrics`, "env" its variables before the common ones
        "lifecycle" the container's lifecycle (or nothing)
        "volumeMounts" / "volumes" beyond the config and /tmp)
*/}}
{{- define "hookgate.podTemplate" -}}
{{- $ctx := .ctx }}
{{- $values := index $ctx.Values .component }}
{{- $component := dict "ctx" $ctx "component" .component }}
metadata:
  labels:
    {{- include "hookgate.componentLabels" $component | nindent 4 }}
    {{- with $values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "hookgate.configMapData" $ctx | sha256sum }}
    {{- if not $ctx.Values.secrets.existingSecret }}
    checksum/secret: {{ include (print $ctx.Template.BasePath "/secret.yaml") $ctx | sha256sum }}
    {{- end }}
    {{- with $values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "hookgate.serviceAccountName" $ctx }}
  automountServiceAccountToken: {{ $ctx.Values.serviceAccount.automountServiceAccountToken }}
  {{- with $ctx.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $ctx.Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ $values.terminationGracePeriodSeconds }}
  {{- with include "hookgate.topologySpread" $component | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  containers:
    - name: {{ .component }}
      image: {{ include "hookgate.image" $ctx }}
      imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
      command: ["node", "services/cli/main.ts"]
      args:
        - serve
        - --role
        - {{ .component }}
        - --config
        - {{ include "hookgate.configPath" $ctx }}
        {{- with $values.extraArgs }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      envFrom:
        {{- include "hookgate.envFrom" $ctx | nindent 8 }}
      env:
        {{- with .env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        - name: METRICS_PORT
          value: {{ $ctx.Values.metricsPort | quote }}
        # hookgate's own default is loopback; the kubelet's probes and Prometheus need the pod IP.
        - name: METRICS_LISTEN_ADDRESS
          value: "0.0.0.0"
        {{- include "hookgate.env" $component | trim | nindent 8 }}
      ports:
        {{- with .ports }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        - name: metrics
          containerPort: {{ $ctx.Values.metricsPort }}
          protocol: TCP
      startupProbe:
        httpGet:
          path: /readyz
          port: {{ .probePort }}
        periodSeconds: 1
        timeoutSeconds: {{ $ctx.Values.probes.timeoutSeconds }}
        failureThreshold: {{ $ctx.Values.probes.startupFailureThreshold }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: {{ .probePort }}
        periodSeconds: {{ $ctx.Values.probes.readinessPeriodSeconds }}
        timeoutSeconds: {{ $ctx.Values.probes.timeoutSeconds }}
        failureThreshold: 2
      livenessProbe:
        httpGet:
          path: /healthz
          port: {{ .probePort }}
        periodSeconds: {{ $ctx.Values.probes.livenessPeriodSeconds }}
        timeoutSeconds: {{ $ctx.Values.probes.timeoutSeconds }}
        failureThreshold: 3
      {{- with .lifecycle }}
      lifecycle:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      resources:
        {{- toYaml $values.resources | nindent 8 }}
      securityContext:
        {{- toYaml $ctx.Values.securityContext | nindent 8 }}
      volumeMounts:
        {{- include "hookgate.volumeMounts" $ctx | nindent 8 }}
        {{- with .volumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    {{- include "hookgate.volumes" $ctx | nindent 4 }}
    {{- with .volumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
