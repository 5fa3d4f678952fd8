// What every hookgate k6 script shares: settings from __ENV (scenarios, thresholds and targets
// are built in ../lib/settings.ts, tested under Node), and the iteration that sends one arrival
// of the mix and records each acknowledged delivery as a console line for `hookgate verify --sent`.
// Runs on k6 >= 0.57 (TypeScript without a build step); see load/README.md.
import crypto from 'k6/crypto';
import exec from 'k6/execution';
import http, { type ObjectBatchRequest, type RefinedResponse, type ResponseType } from 'k6/http';
import { Counter, Trend } from 'k6/metrics';
import type { Options } from 'k6/options';
import { classifyAnswer } from '../lib/answer.ts';
import { ackRecord, planArrival, type Run, signEvent } from '../lib/mix.ts';
import type { ScriptSettings } from '../lib/settings.ts';
import type { Hmac } from '../lib/sign.ts';

const k6Hmac: Hmac = (key, message, encoding) => crypto.hmac('sha256', key, message, encoding);

const non2xx = new Counter('hookgate_non_2xx');
const acked = new Counter('hookgate_acked');
const backpressure = new Counter('hookgate_backpressure');
const ackMs = new Trend('hookgate_ack_ms', true);

export interface Script {
  readonly options: Options;
  setup(): Run;
  iteration(run: Run): void;
}

/** A k6 script over `settings.targets`; the entry files export its three parts. */
export function makeScript(settings: ScriptSettings): Script {
  const { options, targets, mix, backpressureExpected } = settings;
  // Only 2xx counts as success (k6 counts 3xx as success by default); in a spike, 503 too, and
  // the body then says whether it was the documented back-pressure or a failure.
  http.setResponseCallback(http.expectedStatuses(...settings.expectedStatuses));

  return {
    options,
    setup(): Run {
      for (const target of targets) {
        if (target.secret === '')
          throw new Error(
            `${target.secretVariable} is not set: export it (or pass -e ${target.secretVariable}=...) with the signing secret of endpoint ${target.endpoint}`,
          );
      }
      return {
        id: __ENV.RUN_ID || `k6${Date.now().toString(36)}`,
        startedAt: Math.floor(Date.now() / 1000),
      };
    },
    iteration(run: Run): void {
      const { target, step } = planArrival(targets, run, exec.scenario.iterationInTest, mix);
      const tags = { delivery: step.kind, endpoint: target.endpoint };
      const request = (): ObjectBatchRequest => ({
        method: 'POST',
        url: target.url,
        body: step.event.body,
        params: {
          headers: signEvent(
            target.provider,
            k6Hmac,
            target.secret,
            step.event,
            Math.floor(Date.now() / 1000),
          ),
          tags,
        },
      });
      // Both copies of a concurrent duplicate leave at once, on separate connections.
      const responses: RefinedResponse<ResponseType | undefined>[] =
        step.copies === 2
          ? http.batch([request(), request()])
          : [http.request('POST', target.url, step.event.body, request().params)];
      for (const response of responses) {
        const body = typeof response.body === 'string' ? response.body : null;
        const kind = classifyAnswer(response.status, body, backpressureExpected);
        if (kind === 'acked') {
          ackMs.add(response.timings.duration, tags);
          acked.add(1, tags);
          // One JSON line per acknowledged delivery: `k6 run --console-output FILE` collects them.
          console.log(JSON.stringify(ackRecord(target.endpoint, target.provider, step, response.status)));
        } else if (kind === 'backpressure') {
          backpressure.add(1, tags);
        } else {
          non2xx.add(1, { ...tags, status: String(response.status) });
          console.warn(
            `${target.endpoint} ${step.event.id}: HTTP ${response.status} ${(body ?? '').slice(0, 200)}`,
          );
        }
      }
    },
  };
}
