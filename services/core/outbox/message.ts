import { z } from 'zod';

// The one message an outbox job carries, from the apply that queued it (services/core/apply/
// outbox.ts) to the relay that sends it (services/worker/relay.ts): built only by
// `outboxEnvelope`, read only by `readOutboxEnvelope`. It says its version (`v: 1`); the relay
// still reads the envelope the previous version wrote (no `v`), for one version, so jobs queued
// before an upgrade are delivered after it.

export const OUTBOX_ENVELOPE_VERSION = 1;

export interface OutboxEnvelope {
  readonly v: typeof OUTBOX_ENVELOPE_VERSION;
  /** The relay that consumes it: `forward` or `notify`. */
  readonly kind: string;
  /** Unique per effect (the job's id derives from it); also the request's Idempotency-Key. */
  readonly key: string;
  /** The event whose apply queued the effect. */
  readonly endpoint: string;
  readonly eventId: string;
  /** What the handler asked the relay to send (its URL, body, timeout: see relay.ts). */
  readonly payload: Readonly<Record<string, unknown>>;
  /** The apply span's traceparent (tracing on), so the relay's webhook.forward joins the trace. */
  readonly traceparent?: string;
}

export function outboxEnvelope(fields: {
  readonly kind: string;
  readonly key: string;
  readonly endpoint: string;
  readonly eventId: string;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly traceparent?: string | null;
}): OutboxEnvelope {
  const { traceparent, ...rest } = fields;
  return { v: OUTBOX_ENVELOPE_VERSION, ...rest, ...(traceparent ? { traceparent } : {}) };
}

const current = z.strictObject({
  v: z.literal(OUTBOX_ENVELOPE_VERSION),
  kind: z.string().min(1),
  key: z.string().min(1),
  endpoint: z.string().min(1),
  eventId: z.string().min(1),
  payload: z.record(z.string(), z.unknown()),
  traceparent: z.string().optional(),
});

/** The previous version's envelope: no `v`, and endpoint and event id not always there. */
const previous = z.looseObject({
  kind: z.string().optional(),
  key: z.string().min(1),
  endpoint: z.string().optional(),
  eventId: z.string().optional(),
  payload: z.record(z.string(), z.unknown()),
  traceparent: z.string().optional(),
});

/** What the relay reads off a job: the effect's key, its event, and what to send. */
export interface OutboxMessageRead {
  readonly key: string;
  readonly endpoint: string | undefined;
  readonly eventId: string | undefined;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly traceparent: string | undefined;
}

export type ReadEnvelope =
  | { readonly ok: true; readonly message: OutboxMessageRead }
  | { readonly ok: false; readonly error: string };

/** Reads a job's data as this version's envelope, or the previous version's; says what is wrong otherwise. */
export function readOutboxEnvelope(data: unknown): ReadEnvelope {
  const versioned = typeof data === 'object' && data !== null && 'v' in data;
  const parsed = versioned ? current.safeParse(data) : previous.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, error: `outbox envelope is malformed at /${issue.path.join('/')}: ${issue.message}` };
  }
  const { key, endpoint, eventId, payload, traceparent } = parsed.data;
  return { ok: true, message: { key, endpoint, eventId, payload, traceparent } };
}

/** The traceparent a job's envelope carries, if any (read before the rest, to open its span). */
export function envelopeTraceparent(data: unknown): string | null {
  const value = (data as { traceparent?: unknown } | null)?.traceparent;
  return typeof value === 'string' ? value : null;
}
