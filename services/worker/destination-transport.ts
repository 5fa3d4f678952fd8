import { storableError } from '../core/destinations/answer.ts';
import type { Redactor } from '../core/destinations/redact.ts';
import type { TemplateValues } from './bus-address.ts';
import type { DestinationSend } from './destination-http.ts';

// The one thing a destination's type changes: how one attempt leaves. The relay claims, orders,
// rate-limits, breaks, retries and records the same way for every type; a transport only sends
// one message and says how it ended, as a DestinationSend (delivered only once the receiver or
// the broker acknowledged it; `retry` for what may go better later; `dead` for what never will).

export interface OutgoingMessage {
  /** The relay's headers (Standard Webhooks, idempotency key, the event's id and type …). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
  /** The delivery's webhook-id: a broker's message id, the same on every attempt and redelivery. */
  readonly webhookId: string;
  /** What a subject or routing-key template may name. */
  readonly values: TemplateValues;
  readonly timeoutMs: number;
  readonly redactor: Redactor;
  /** Aborts the attempt when the relay stops. */
  readonly signal: AbortSignal;
  /** The clock a Retry-After date is read against (HTTP). */
  readonly nowMs: number;
}

export interface Transport {
  /** Never throws: every ending is a DestinationSend, its texts redacted and storable. */
  send(message: OutgoingMessage): Promise<DestinationSend>;
  close(): Promise<void>;
}

/** An attempt that ended without the broker's acknowledgement: its error redacted and storable. */
export function failedSend(
  message: OutgoingMessage,
  outcome: 'retry' | 'dead',
  error: string,
): DestinationSend {
  return { outcome, status: null, error: storableError(message.redactor.text(error)), answer: null };
}
