import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import {
  type Attributes,
  type Context,
  context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import { tracingConfigured } from './tracing-env.ts';

/**
 * OpenTelemetry tracing, configured only by the standard `OTEL_*` variables. Nothing is started
 * (the API stays a no-op, spans cost a function call) unless a trace exporter is configured:
 * `OTEL_TRACES_EXPORTER` (other than `none`), `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true` wins over all of them.
 * Metrics stay with prom-client and logs with pino unless `OTEL_METRICS_EXPORTER` /
 * `OTEL_LOGS_EXPORTER` ask for OpenTelemetry's too.
 *
 * The instrumentations hook modules as they load, so `startTracingFromEnv` must run before `pg`,
 * `express` and `http` are first imported: `services/core/tracing-init.ts` does that as the CLI's
 * first import. The SDK itself (seconds to load) is only loaded when tracing is on.
 */

const TRACER = 'hookgate';
const requireHere = createRequire(import.meta.url);

export interface TracingOptions {
  /** Span processors to use instead of the exporter named by the environment (tests). */
  readonly spanProcessors?: SpanProcessor[];
  readonly env?: NodeJS.ProcessEnv;
}

export interface Tracing {
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

let active: NodeSDK | null = null;

/** True once a tracer provider is registered (spans are recorded). */
export function tracingEnabled(): boolean {
  return active !== null;
}

/**
 * Starts the OpenTelemetry Node SDK with HTTP, Express and pg instrumentation, if the
 * environment (or `spanProcessors`) asks for it; otherwise does nothing. Idempotent.
 */
export function startTracing(options: TracingOptions = {}): Tracing {
  const env = options.env ?? process.env;
  if (active) return { shutdown: stopTracing };
  if (!options.spanProcessors && !tracingConfigured(env)) return { shutdown: async () => {} };
  const { NodeSDK } = requireHere('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = requireHere(
    '@opentelemetry/instrumentation-http',
  ) as typeof import('@opentelemetry/instrumentation-http');
  const { ExpressInstrumentation } = requireHere(
    '@opentelemetry/instrumentation-express',
  ) as typeof import('@opentelemetry/instrumentation-express');
  const { PgInstrumentation } = requireHere(
    '@opentelemetry/instrumentation-pg',
  ) as typeof import('@opentelemetry/instrumentation-pg');
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: 'hookgate' }),
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes are not worth a trace each.
        ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)\b/.test(req.url ?? ''),
      }),
      new ExpressInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true }),
    ],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
    ...(env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
  });
  sdk.start();
  active = sdk;
  // Express is imported from ESM, which the require hook does not see; requiring it once here
  // (the ESM import then reuses this patched instance) lets its instrumentation apply.
  try {
    requireHere('express');
  } catch {
    // Not installed where only the worker runs: nothing to instrument.
  }
  return { shutdown: stopTracing };
}

export async function stopTracing(): Promise<void> {
  const sdk = active;
  active = null;
  await sdk?.shutdown();
}

function tracer() {
  return trace.getTracer(TRACER);
}

/** `hookgate.*` span attributes from plain values; undefined and null are left out. */
export function spanAttributes(values: Record<string, string | number | undefined | null>): Attributes {
  const attributes: Attributes = {};
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && value !== null) attributes[`hookgate.${key}`] = value;
  }
  return attributes;
}

/** Runs `fn` inside a new active span (child of `parent`, else of the active context), ending it after. */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  const span = tracer().startSpan(name, { attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/** Starts a span the caller ends (for work that covers several spans at once, e.g. a set-based batch). */
export function startSpan(name: string, attributes: Attributes, parent: Context): Span {
  return tracer().startSpan(name, { attributes }, parent);
}

/** Runs `fn` with `span` (started by startSpan) as the active span, so work inside it nests under it. */
export function withSpan<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** The synchronous form of `inSpan`. */
export function inSpanSync<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => T,
  parent: Context = context.active(),
): T {
  const span = tracer().startSpan(name, { attributes }, parent);
  try {
    return context.with(trace.setSpan(parent, span), () => fn(span));
  } finally {
    span.end();
  }
}

/** Marks a span's outcome (attribute `hookgate.outcome`; `error` outcomes set the span status). */
export function setOutcome(span: Span, outcome: string, error?: string): void {
  span.setAttribute('hookgate.outcome', outcome);
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
}

/**
 * Runs `serve` (a request the gateway handles without Express) inside the HTTP server span of
 * `route`: the HTTP instrumentation's, renamed as Express's instrumentation names the requests it
 * routes, or, where that instrumentation sees no request (ESM imports of `node:http`), a SERVER
 * span of its own that continues the request's `traceparent` and ends with the response. Tracing
 * off: `serve` alone.
 */
export function serveInSpan(
  req: IncomingMessage,
  res: ServerResponse,
  route: string,
  serve: () => Promise<void>,
): Promise<void> {
  if (!active) return serve();
  const name = `${req.method ?? 'GET'} ${route}`;
  const current = trace.getActiveSpan();
  if (current?.isRecording()) {
    current.updateName(name);
    current.setAttribute('http.route', route);
    return serve();
  }
  const header = req.headers.traceparent;
  const parent = contextFromTraceparent(typeof header === 'string' ? header : null);
  const span = tracer().startSpan(
    name,
    {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': req.method ?? '', 'http.route': route, 'url.path': req.url ?? '' },
    },
    parent,
  );
  res.once('close', () => {
    span.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500 || !res.writableFinished) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  return context.with(trace.setSpan(parent, span), serve);
}

/** The W3C `traceparent` (version 00) of a recording span, or null when tracing is off. */
export function traceparentOf(span: Span): string | null {
  if (!span.isRecording()) return null;
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A context whose remote parent is the given `traceparent` (a row's), or the root context. */
export function contextFromTraceparent(traceparent: string | null): Context {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match || match[1] === 'ff') return ROOT_CONTEXT;
  const spanContext = {
    traceId: match[2]!,
    spanId: match[3]!,
    traceFlags: Number.parseInt(match[4]!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  if (!trace.isSpanContextValid(spanContext)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, spanContext);
}

/**
 * The parent for a span about a delivery: the active span (the HTTP server span, which already
 * continued the request's trace context), else the delivery's own `traceparent` header, so the
 * provider's trace is continued even where HTTP instrumentation is not active.
 */
export function deliveryParent(traceparent: string | null | undefined): Context {
  return trace.getActiveSpan() ? context.active() : contextFromTraceparent(traceparent ?? null);
}

/** The trace id of the active span, if one is recording. */
export function activeTraceId(): string | undefined {
  // Without tracing no span records: skip the context lookup on every delivery's log line.
  if (!active) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}

/** The trace id carried by a `traceparent` value. */
export function traceIdOf(traceparent: string | null | undefined): string | undefined {
  return traceparent?.split('-')[1];
}
