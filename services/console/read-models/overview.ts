import type { Queryable } from '../../core/db/pool.ts';
import { BACKLOG_BY_ENDPOINT } from '../../core/read-models/backlog.ts';
import { DELIVERIES_PER_MINUTE, LATENCY_SAMPLE } from './overview-sql.ts';

export interface MinuteCount {
  readonly minute: Date;
  readonly accepted: number;
  readonly duplicate: number;
}

export interface EndpointOverview {
  readonly endpoint: string;
  readonly provider: string | null;
  readonly handler: string | null;
  readonly mode: string | null;
  readonly pending: number;
  readonly oldestPendingSeconds: number | null;
  readonly parked: number;
  readonly dead: number;
  /** Deliveries answered 200 in the window: new, and already stored. */
  readonly accepted: number;
  readonly duplicate: number;
  readonly duplicateRate: number | null;
  readonly minutes: readonly MinuteCount[];
  readonly latency: { readonly sample: number; readonly p50: number | null; readonly p99: number | null };
}

export interface Overview {
  readonly since: Date;
  readonly until: Date;
  readonly sampleLimit: number;
  readonly endpoints: readonly EndpointOverview[];
}

export interface EndpointInfo {
  readonly provider: string;
  readonly handler: string;
  readonly mode: string;
}

const WINDOW_MS = 3_600_000;

/** Per configured endpoint: backlog now, and the last hour's deliveries and latency. */
export async function loadOverview(
  db: Queryable,
  endpoints: Readonly<Record<string, EndpointInfo>>,
  sampleLimit: number,
  now = new Date(),
): Promise<Overview> {
  const names = Object.keys(endpoints).sort();
  const since = new Date(Math.floor((now.getTime() - WINDOW_MS) / 60_000) * 60_000 + 60_000);
  const [backlog, minutes, latency] = await Promise.all([
    db.query<{ endpoint: string; status: string; events: string; oldest_age_seconds: number }>(
      BACKLOG_BY_ENDPOINT,
    ),
    db.query<{ endpoint: string; minute: Date; accepted: string; duplicate: string }>(DELIVERIES_PER_MINUTE, [
      names,
      since,
    ]),
    db.query<{ endpoint: string; settled: string; p50: number | null; p99: number | null }>(LATENCY_SAMPLE, [
      since,
      sampleLimit,
    ]),
  ]);
  const overview = names.map((name): EndpointOverview => {
    const stuck = (status: string) =>
      backlog.rows.find((row) => row.endpoint === name && row.status === status);
    const pending = stuck('pending');
    const perMinute = minutes.rows
      .filter((row) => row.endpoint === name)
      .map((row) => ({
        minute: row.minute,
        accepted: Number(row.accepted),
        duplicate: Number(row.duplicate),
      }))
      .sort((a, b) => a.minute.getTime() - b.minute.getTime());
    const accepted = perMinute.reduce((sum, row) => sum + row.accepted, 0);
    const duplicate = perMinute.reduce((sum, row) => sum + row.duplicate, 0);
    const lat = latency.rows.find((row) => row.endpoint === name);
    const info = endpoints[name];
    return {
      endpoint: name,
      provider: info?.provider ?? null,
      handler: info?.handler ?? null,
      mode: info?.mode ?? null,
      pending: Number(pending?.events ?? 0),
      oldestPendingSeconds: pending ? pending.oldest_age_seconds : null,
      parked: Number(stuck('parked')?.events ?? 0),
      dead: Number(stuck('dead')?.events ?? 0),
      accepted,
      duplicate,
      duplicateRate: accepted + duplicate > 0 ? duplicate / (accepted + duplicate) : null,
      minutes: perMinute,
      latency: { sample: Number(lat?.settled ?? 0), p50: lat?.p50 ?? null, p99: lat?.p99 ?? null },
    };
  });
  return { since, until: now, sampleLimit, endpoints: overview };
}
