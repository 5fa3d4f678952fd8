import { readFileSync } from 'node:fs';
import { Connection, type Publisher } from 'rabbitmq-client';
import { type BusTls, type RabbitmqSettings, rabbitmqBrokerKey } from '../core/config/bus-schema.ts';
import type { Logger } from '../core/logging.ts';
import { fillTemplate } from './bus-address.ts';
import type { DestinationSend } from './destination-http.ts';
import { failedSend, type OutgoingMessage, type Transport } from './destination-transport.ts';

// `type: rabbitmq` (AMQP 0-9-1): each delivery published persistent, `mandatory`, with
// `message_id` = its webhook-id, on a channel in confirm mode: `delivered` only once the broker
// acknowledged it. An unroutable message comes back (basic.return, before the ack) and is a failed
// attempt, retried, not a silent drop. A worker process opens one connection, with one channel,
// per broker it publishes to (the destinations naming the same URL and credentials share it); the
// client reconnects with a backoff (1 s steps up to 30 s) and opens the channel anew.

/** A broker connection and its confirm-mode channel, shared by the destinations naming it. */
interface Broker {
  readonly connection: Connection;
  readonly publisher: Publisher;
  /** message ids the broker returned unroutable, not yet seen by their sender. */
  readonly returned: Map<string, string>;
  /** Resolves once connected, or after `timeoutMs` (one listener for every waiting attempt). */
  connected(timeoutMs: number): Promise<void>;
}

export interface RabbitmqBrokers {
  transport(settings: RabbitmqSettings): Transport;
}

function readTls(tls: true | BusTls | undefined, amqps: boolean) {
  if (tls === undefined) return amqps ? true : undefined;
  if (tls === true) return true;
  return {
    ...(tls.ca ? { ca: readFileSync(tls.ca, 'utf8') } : {}),
    ...(tls.cert ? { cert: readFileSync(tls.cert, 'utf8') } : {}),
    ...(tls.key ? { key: readFileSync(tls.key, 'utf8') } : {}),
  };
}

/** The vhost of an amqp URL: its path without the leading slash, `/` when it has none. */
export function vhostOf(url: URL): string {
  const path = url.pathname.replace(/^\//, '');
  return path === '' ? '/' : decodeURIComponent(path);
}

const describe = (error: unknown): string => {
  const text = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
};

/** The longest routing key AMQP 0-9-1 carries (a short string). */
const ROUTING_KEY_BYTES = 255;

export function rabbitmqBrokers(logger: Logger): RabbitmqBrokers & { close(): Promise<void> } {
  const brokers = new Map<string, Broker>();

  function open(settings: RabbitmqSettings): Broker {
    const key = rabbitmqBrokerKey(settings);
    let broker = brokers.get(key);
    if (!broker) {
      const url = new URL(settings.url);
      const amqps = url.protocol === 'amqps:';
      const tls = readTls(settings.tls, amqps);
      const connection = new Connection({
        hostname: url.hostname,
        port: url.port === '' ? (amqps ? 5671 : 5672) : Number(url.port),
        vhost: vhostOf(url),
        ...(settings.username !== undefined
          ? { username: settings.username, password: settings.password }
          : {}),
        ...(tls ? { tls } : {}),
        connectionName: 'hookgate relay',
        retryLow: 1_000,
        retryHigh: 30_000,
      });
      const returned = new Map<string, string>();
      connection.on('error', (error: unknown) =>
        logger.warn({ broker: url.host, err: describe(error) }, 'destination rabbitmq: connection error'),
      );
      const publisher = connection.createPublisher({ confirm: true, maxAttempts: 1 });
      // (This client version hands returns to listeners only, not to an onReturn option.)
      publisher.on('basic.return', (message) => {
        if (message.messageId) returned.set(message.messageId, `${message.replyCode} ${message.replyText}`);
      });
      let reconnected: Promise<void> | null = null;
      const connected = (timeoutMs: number) => {
        reconnected ??= new Promise<void>((resolve) => {
          connection.once('connection', () => {
            reconnected = null;
            resolve();
          });
        });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        });
        return Promise.race([reconnected, late]).finally(() => clearTimeout(timer));
      };
      broker = { connection, publisher, returned, connected };
      brokers.set(key, broker);
    }
    return broker;
  }

  return {
    transport(settings) {
      const broker = open(settings);
      let closed = false;
      return {
        async send(message: OutgoingMessage): Promise<DestinationSend> {
          const routingKey = fillTemplate(settings.routingKey, message.values);
          const where = `exchange ${settings.exchange === '' ? '(default)' : settings.exchange} with routing key ${routingKey}`;
          const fail = (outcome: 'retry' | 'dead', error: string) => failedSend(message, outcome, error);
          if (closed) return fail('retry', 'aborted: the relay stopped');
          // Not connected (yet, or any more): wait for the connection up to the timeout, and then
          // fail rather than queue a publish in the client that would go out, late and unasked,
          // once it reconnects (behind whatever was sent since).
          if (!broker.connection.ready) await broker.connected(message.timeoutMs);
          if (!broker.connection.ready) {
            return fail('retry', `not connected to RabbitMQ (${where}): reconnecting`);
          }
          if (Buffer.byteLength(routingKey) > ROUTING_KEY_BYTES) {
            return fail(
              'dead',
              `the routing key is ${Buffer.byteLength(routingKey)} bytes; AMQP carries at most ${ROUTING_KEY_BYTES}`,
            );
          }
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<'late'>((resolve) => {
            timer = setTimeout(() => resolve('late'), message.timeoutMs);
          });
          const stopped = new Promise<'stopped'>((resolve) => {
            if (message.signal.aborted) resolve('stopped');
            message.signal.addEventListener('abort', () => resolve('stopped'), { once: true });
          });
          const published = broker.publisher
            .send(
              {
                exchange: settings.exchange,
                routingKey,
                mandatory: true,
                durable: true,
                messageId: message.webhookId,
                contentType: 'application/json',
                appId: 'hookgate',
                timestamp: Math.floor(message.nowMs / 1000),
                headers: { ...message.headers },
              },
              typeof message.body === 'string' ? Buffer.from(message.body) : message.body,
            )
            .then(
              () => null,
              (error: unknown) => describe(error),
            );
          try {
            const ended = await Promise.race([published, late, stopped]);
            if (ended === 'late') {
              return fail(
                'retry',
                `RabbitMQ did not confirm the publish to ${where} within ${message.timeoutMs} ms`,
              );
            }
            if (ended === 'stopped') return fail('retry', 'aborted: the relay stopped');
            if (ended !== null) return fail('retry', `RabbitMQ publish to ${where} failed: ${ended}`);
            // The client hands a return on a turn of its own (setImmediate), queued before the
            // ack's: one turn later it has been seen.
            await new Promise((resolve) => setImmediate(resolve));
            const refusal = broker.returned.get(message.webhookId);
            if (refusal !== undefined) {
              broker.returned.delete(message.webhookId);
              return fail(
                'retry',
                `RabbitMQ returned the message as unroutable (${refusal}): no queue is bound to ${where}`,
              );
            }
            return { outcome: 'delivered', status: null, note: `confirmed by the broker (${where})` };
          } finally {
            clearTimeout(timer);
          }
        },
        async close() {
          // The broker's connection is shared: it closes with the relay (the registry's close).
          closed = true;
        },
      };
    },
    async close() {
      const all = [...brokers.values()];
      brokers.clear();
      for (const broker of all) {
        await broker.publisher.close().catch(() => {});
        await broker.connection.close().catch(() => {});
      }
    },
  };
}
