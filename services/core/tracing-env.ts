// Whether the standard OTEL_* variables ask for traces, decided without loading OpenTelemetry:
// the CLI asks before anything else, and loads the API, the SDK and their instrumentations only
// when the answer is yes (services/cli/main.ts).

/** True when the environment asks for traces to be exported. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporters !== '') return exporters.split(',').some((name) => name.trim() !== 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}
