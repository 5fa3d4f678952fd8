// What every hookgate k6 script shares: settings from __ENV (scenarios and thresholds are built
// in ../lib/settings.ts, tested under Node), and the iteration that sends one arrival of the
// mix and records each acknowledged delivery as a console line for `hookgate verify --sent`.
// Runs on k6 >= 0.57 (TypeScript without a build step); see load/README.md.
import crypto from 'k6/crypto';
import exec from 'k6/execution';
import http, { type ObjectBatchRequest, type RefinedResponse, type ResponseType } from 'k6/http';
import { Counter, Trend } from 'k6/metrics';
import type { Options } from 'k6/options';
import { ackRecord, type ProviderName, planStep, type Run, signEvent } from '../lib/mix.ts';
import { scriptSettings } from '../lib/settings.ts';
import type { Hmac } from '../lib/sign.ts';

const k6Hmac: Hmac = (key, message, encoding) => crypto.hmac('sha256', key, message, encoding);

const non2xx = new Counter('hookgate_non_2xx');
const acked = new Counter('hookgate_acked');
const ackMs = new Trend('hookgate_ack_ms', true);

export interface Script {
  readonly options: Options;
  setup(): Run;
  iteration(run: Run): void;
}

/** A k6 script for one endpoint of `provider`; the entry files export its three parts. */
export function makeScript(provider: ProviderName, defaultEndpoint: string): Script {
  const { options, url, endpoint, secret, mix } = scriptSettings(__ENV, defaultEndpoint);
  // Only 2xx counts as success (k6 counts 3xx as success by default).
  http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }));

  return {
    options,
    setup(): Run {
      if (secret === '')
        throw new Error(
          'SECRET is not set: export it (or pass -e SECRET=...) with the endpoint signing secret',
        );
      return {
        id: __ENV.RUN_ID || `k6${Date.now().toString(36)}`,
        startedAt: Math.floor(Date.now() / 1000),
      };
    },
    iteration(run: Run): void {
      const step = planStep(provider, run, exec.scenario.iterationInTest, mix);
      const request = (): ObjectBatchRequest => ({
        method: 'POST',
        url,
        body: step.event.body,
        params: {
          headers: signEvent(provider, k6Hmac, secret, step.event, Math.floor(Date.now() / 1000)),
          tags: { delivery: step.kind },
        },
      });
      // Both copies of a concurrent duplicate leave at once, on separate connections.
      const responses: RefinedResponse<ResponseType | undefined>[] =
        step.copies === 2
          ? http.batch([request(), request()])
          : [http.request('POST', url, step.event.body, request().params)];
      for (const response of responses) {
        ackMs.add(response.timings.duration, { delivery: step.kind });
        if (response.status >= 200 && response.status < 300) {
          acked.add(1, { delivery: step.kind });
          // One JSON line per acknowledged delivery: `k6 run --console-output FILE` collects them.
          console.log(JSON.stringify(ackRecord(endpoint, provider, step, response.status)));
        } else {
          non2xx.add(1, { status: String(response.status), delivery: step.kind });
          console.warn(
            `${step.event.id}: HTTP ${response.status} ${String(response.body ?? '').slice(0, 200)}`,
          );
        }
      }
    },
  };
}
