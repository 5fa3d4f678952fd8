import { readFileSync } from 'node:fs';
import { type JetStreamClient, jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection, headers as natsHeaders, RequestError } from '@nats-io/transport-node';
import type { BusTls, NatsSettings } from '../core/config/bus-schema.ts';
import type { Logger } from '../core/logging.ts';
import { fillTemplate } from './bus-address.ts';
import type { DestinationSend } from './destination-http.ts';
import { failedSend, type OutgoingMessage, type Transport } from './destination-transport.ts';

// `type: nats`: each delivery published to a JetStream stream, `delivered` only once the stream's
// publish acknowledgement came back. `Nats-Msg-Id` is the delivery's webhook-id, so a re-send
// within the stream's duplicate window (a retry after a lost acknowledgement, a redeliver soon
// after) is dropped by the stream and acknowledged as a duplicate; outside the window it is a
// second message, and consumers dedupe on the header (docs/destinations.md). One connection per
// destination per worker process, reconnected by the client.

/** Reconnect attempts never stop; between them the client's own wait and jitter. */
const RECONNECT_WAIT_MS = 1_000;

function natsTls(tls: true | BusTls | undefined, tlsServers: boolean) {
  if (tls === undefined) return tlsServers ? {} : undefined;
  if (tls === true) return {};
  return {
    ...(tls.ca ? { ca: readFileSync(tls.ca, 'utf8') } : {}),
    ...(tls.cert ? { cert: readFileSync(tls.cert, 'utf8') } : {}),
    ...(tls.key ? { key: readFileSync(tls.key, 'utf8') } : {}),
  };
}

const messageOf = (error: unknown): string => {
  const text = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
};

/** The publish reached no stream (the client wraps that as "jetstream is not enabled"). */
function noResponders(error: unknown): boolean {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof RequestError && cause.isNoResponders();
}

/** Failures no retry mends: the message is larger than the server takes. */
const NEVER = /max(imum)?[ _]payload|message size exceeds|payload too large/i;

export function natsTransport(settings: NatsSettings, name: string, logger: Logger): Transport {
  let opening: Promise<{ nc: NatsConnection; js: JetStreamClient }> | null = null;
  let closed = false;

  function open(timeoutMs: number) {
    if (!opening) {
      const tls = natsTls(
        settings.tls,
        settings.servers.some((server) => server.startsWith('tls:')),
      );
      opening = connect({
        servers: settings.servers,
        name: `hookgate ${name}`,
        timeout: timeoutMs,
        maxReconnectAttempts: -1,
        reconnectTimeWait: RECONNECT_WAIT_MS,
        ...(settings.username !== undefined ? { user: settings.username, pass: settings.password } : {}),
        ...(settings.token !== undefined ? { token: settings.token } : {}),
        ...(tls ? { tls } : {}),
      }).then(
        (nc) => {
          void (async () => {
            for await (const status of nc.status()) {
              if (status.type === 'disconnect' || status.type === 'reconnect')
                logger.warn({ destination: name, nats: status.type }, `destination nats: ${status.type}`);
            }
          })().catch(() => {});
          return { nc, js: jetstream(nc) };
        },
        (error: unknown) => {
          // The next attempt connects anew (after its retry's backoff).
          opening = null;
          throw error;
        },
      );
    }
    return opening;
  }

  return {
    async send(message: OutgoingMessage): Promise<DestinationSend> {
      const subject = fillTemplate(settings.subject, message.values);
      const fail = (outcome: 'retry' | 'dead', error: string) => failedSend(message, outcome, error);
      if (closed) return fail('retry', 'aborted: the relay stopped');
      try {
        const { js } = await open(message.timeoutMs);
        const hdrs = natsHeaders();
        for (const [key, value] of Object.entries(message.headers)) hdrs.set(key, value);
        const ack = await js.publish(subject, message.body, {
          msgID: message.webhookId,
          headers: hdrs,
          timeout: message.timeoutMs,
        });
        return {
          outcome: 'delivered',
          status: null,
          note: `${ack.duplicate ? 'duplicate, already in' : 'stored in'} stream ${ack.stream} at sequence ${ack.seq} (subject ${subject})`,
        };
      } catch (error) {
        // The client names a publish nothing answered "jetstream is not enabled"; what it means
        // here is that no stream takes the subject (or the server has no JetStream).
        const text = noResponders(error)
          ? `NATS publish to ${subject} failed: no responders: no JetStream stream takes this subject (or JetStream is not enabled on the server)`
          : `NATS publish to ${subject} failed: ${messageOf(error)}`;
        return fail(NEVER.test(text) ? 'dead' : 'retry', text);
      }
    },
    async close() {
      closed = true;
      const was = opening;
      opening = null;
      const connection = await was?.catch(() => null);
      await connection?.nc.close().catch(() => {});
    },
  };
}
