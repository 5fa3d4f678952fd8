import type { Dispatcher } from 'undici';
import type { Route } from '../core/destinations/routes.ts';
import type { Logger } from '../core/logging.ts';
import { sendToDestination } from './destination-http.ts';
import { natsTransport } from './destination-nats.ts';
import { rabbitmqBrokers } from './destination-rabbitmq.ts';
import type { Transport } from './destination-transport.ts';

// One relay's transports: one per destination, made when first used and closed with the relay.
// HTTP's is the POST it always was; the brokers' connections live here, one set per worker
// process (the relay's).

export interface Transports {
  of(route: Route): Transport;
  close(): Promise<void>;
}

function httpTransport(url: string, dispatcher: Dispatcher | undefined): Transport {
  return {
    send: (message) =>
      sendToDestination({
        url,
        headers: message.headers,
        body: message.body,
        timeoutMs: message.timeoutMs,
        redactor: message.redactor,
        signal: message.signal,
        nowMs: message.nowMs,
        ...(dispatcher ? { dispatcher } : {}),
      }),
    async close() {},
  };
}

export function createTransports(logger: Logger, dispatcher: Dispatcher | undefined): Transports {
  const made = new Map<Route, Transport>();
  let rabbitmq: ReturnType<typeof rabbitmqBrokers> | null = null;
  return {
    of(route) {
      let transport = made.get(route);
      if (transport) return transport;
      const { settings } = route;
      const name = `${route.endpoint}/${route.name}`;
      if (settings.type === 'nats' && settings.nats) transport = natsTransport(settings.nats, name, logger);
      else if (settings.type === 'rabbitmq' && settings.rabbitmq) {
        rabbitmq ??= rabbitmqBrokers(logger);
        transport = rabbitmq.transport(settings.rabbitmq);
      } else if (settings.url !== undefined) transport = httpTransport(settings.url, dispatcher);
      else throw new Error(`destination ${name} has neither a url nor a broker (the schema requires one)`);
      made.set(route, transport);
      return transport;
    },
    async close() {
      const all = [...made.values()];
      made.clear();
      await Promise.allSettled(all.map((transport) => transport.close()));
      await rabbitmq?.close();
    },
  };
}
