// The delivery mix, as a pure function of (run, arrival index): unique events, duplicates
// re-sent later (a provider's retry), duplicates sent twice at once (two retries racing), and
// per-entity version sequences delivered out of order. Re-sending an event rebuilds it from
// its index, byte for byte, so k6's VUs need no shared memory to send true duplicates.
import { hashString, mix32, permutation, unit } from './hash.ts';
import { type Headers, type Hmac, signGithub, signStandardWebhooks, signStripe } from './sign.ts';

export const PROVIDERS = ['standard-webhooks', 'stripe', 'github'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface MixSettings {
  /** Share of arrivals that re-send an event sent earlier, as a provider's retry would. */
  readonly laterDuplicates: number;
  /** Share of arrivals sent twice at the same moment, on two connections. */
  readonly concurrentDuplicates: number;
  /** How many arrivals back a later duplicate may reach. */
  readonly maxLag: number;
  /** Versions per entity (Standard Webhooks endpoints), delivered in shuffled order. */
  readonly versionsPerEntity: number;
  /**
   * Ids (events, invoices, entities) begin with 8 hex digits hashed from their index, then the run
   * id, so a run's keys land all over an index as providers' random ids do, instead of in one
   * narrow range after the run id. For measuring write costs on large tables (bench/wal.ts).
   */
  readonly spreadIds: boolean;
}

export const DEFAULT_MIX: MixSettings = {
  laterDuplicates: 0.1,
  concurrentDuplicates: 0.05,
  maxLag: 200,
  versionsPerEntity: 4,
  spreadIds: false,
};

/** `a1b2c3d4_` for spread ids, else nothing: the same for the same (run, kind, n). */
function spread(settings: MixSettings, run: Run, kind: string, n: number): string {
  if (!settings.spreadIds) return '';
  return `${mix32(hashString(`${run.id}/${kind}`), n)
    .toString(16)
    .padStart(8, '0')}_`;
}

/** A run: its id is in every event id, so runs never collide; its start dates the bodies. */
export interface Run {
  readonly id: string;
  readonly startedAt: number;
}

export interface PlannedEvent {
  readonly id: string;
  readonly type: string;
  readonly body: string;
  /** Versioned entity and version (Standard Webhooks endpoints), for reading a run afterwards. */
  readonly entity: string | null;
  readonly version: number | null;
  /** The invoice whose payment this event reports (Stripe `invoice.paid`). */
  readonly invoice: string | null;
}

export type StepKind = 'unique' | 'later-duplicate' | 'concurrent-duplicate';

export interface Step {
  readonly kind: StepKind;
  /** The arrival index whose event is sent (earlier than `index` for a later duplicate). */
  readonly original: number;
  readonly event: PlannedEvent;
  readonly copies: 1 | 2;
}

/** Checks shares and bounds; the k6 scripts and the driver read them from their environment. */
export function mixSettings(partial: Partial<MixSettings>): MixSettings {
  const settings = { ...DEFAULT_MIX, ...partial };
  const share = (value: number) => Number.isFinite(value) && value >= 0 && value <= 1;
  if (!share(settings.laterDuplicates) || !share(settings.concurrentDuplicates)) {
    throw new Error('duplicate shares must be between 0 and 1');
  }
  if (settings.laterDuplicates + settings.concurrentDuplicates > 0.9) {
    throw new Error('duplicate shares must leave at least 10% unique arrivals');
  }
  if (!Number.isInteger(settings.maxLag) || settings.maxLag < 1) throw new Error('maxLag must be >= 1');
  if (!Number.isInteger(settings.versionsPerEntity) || settings.versionsPerEntity < 1) {
    throw new Error('versionsPerEntity must be >= 1');
  }
  return settings;
}

function kindAt(seed: number, index: number, settings: MixSettings): StepKind {
  if (index === 0) return 'unique';
  const u = unit(seed, index, 1);
  if (u < settings.laterDuplicates) return 'later-duplicate';
  if (u < settings.laterDuplicates + settings.concurrentDuplicates) return 'concurrent-duplicate';
  return 'unique';
}

/** Where a run's arrivals go: an endpoint and the provider scheme it verifies. */
export interface Target {
  readonly endpoint: string;
  readonly provider: ProviderName;
}

/**
 * Arrival `index` of a run over several targets (one run, several providers): round-robin, each
 * target with its own sequence of the mix, so every target gets its shares of duplicates.
 */
export function planArrival<T extends Target>(
  targets: readonly T[],
  run: Run,
  index: number,
  settings: MixSettings,
): { readonly target: T; readonly step: Step } {
  if (targets.length === 0) throw new Error('a run needs at least one target');
  const target = targets[index % targets.length]!;
  return { target, step: planStep(target.provider, run, Math.floor(index / targets.length), settings) };
}

/** What arrival `index` sends. */
export function planStep(provider: ProviderName, run: Run, index: number, settings: MixSettings): Step {
  const seed = hashString(`${run.id}/${provider}`);
  const kind = kindAt(seed, index, settings);
  if (kind !== 'later-duplicate') {
    return {
      kind,
      original: index,
      event: eventAt(provider, run, index, settings),
      copies: kind === 'unique' ? 1 : 2,
    };
  }
  // Reach back to an arrival that sent its own event, so this really is a re-send.
  let original = index - 1 - Math.floor(unit(seed, index, 2) * Math.min(settings.maxLag, index));
  while (original > 0 && kindAt(seed, original, settings) === 'later-duplicate') original -= 1;
  return { kind, original, event: eventAt(provider, run, original, settings), copies: 1 };
}

/** The event that arrival `index` owns, rebuilt identically whenever it is asked for. */
export function eventAt(
  provider: ProviderName,
  run: Run,
  index: number,
  settings: MixSettings,
): PlannedEvent {
  switch (provider) {
    case 'standard-webhooks':
      return versionedEntityEvent(run, index, settings);
    case 'stripe':
      return billingEvent(run, index, settings);
    case 'github':
      return githubEvent(run, index, settings);
  }
}

/** Entity `index / V` gets versions 1..V, in an order shuffled per entity. */
function versionedEntityEvent(run: Run, index: number, settings: MixSettings): PlannedEvent {
  const perEntity = settings.versionsPerEntity;
  const entityNumber = Math.floor(index / perEntity);
  const order = permutation(hashString(`${run.id}/versions`), entityNumber, perEntity);
  const version = order[index % perEntity]! + 1;
  const entity = `thing_${spread(settings, run, 'entity', entityNumber)}${run.id}_${entityNumber}`;
  const id = `msg_${spread(settings, run, 'event', index)}${run.id}_${index}`;
  const body = JSON.stringify({
    type: 'thing.updated',
    timestamp: new Date((run.startedAt + Math.floor(index / 1000)) * 1000).toISOString(),
    data: { object: 'thing', id: entity, version, name: `thing ${entityNumber} v${version}` },
  });
  return { id, type: 'thing.updated', body, entity, version, invoice: null };
}

const BILLING_SLOTS = ['created:paid', 'paid:paid', 'created:void', 'voided:void'] as const;

/**
 * Per group of 4 arrivals: one invoice created and paid, another created and voided, in an
 * order shuffled per group, so `invoice.paid` sometimes arrives before `invoice.created`.
 * A paid invoice is never voided, so every payment sent must end in the ledger.
 */
function billingEvent(run: Run, index: number, settings: MixSettings): PlannedEvent {
  const group = Math.floor(index / BILLING_SLOTS.length);
  const order = permutation(hashString(`${run.id}/billing`), group, BILLING_SLOTS.length);
  const slot = BILLING_SLOTS[order[index % BILLING_SLOTS.length]!]!;
  const [action, fate] = slot.split(':') as [string, 'paid' | 'void'];
  const invoiceId = `in_${spread(settings, run, 'invoice', group)}${run.id}_${group}_${fate}`;
  const amount = 1000 + (group % 9000);
  const created = run.startedAt + Math.floor(index / 1000);
  const status = action === 'paid' ? 'paid' : action === 'voided' ? 'void' : 'open';
  const type = `invoice.${action}`;
  const id = `evt_${spread(settings, run, 'event', index)}${run.id}_${index}`;
  const body = JSON.stringify({
    id,
    object: 'event',
    api_version: '2025-01-27.acacia',
    created,
    livemode: false,
    pending_webhooks: 1,
    type,
    data: {
      object: {
        id: invoiceId,
        object: 'invoice',
        customer: `cus_${run.id}_${group % 97}`,
        status,
        currency: 'eur',
        amount_due: amount,
        amount_paid: status === 'paid' ? amount : 0,
        status_transitions: {
          paid_at: status === 'paid' ? created : null,
          voided_at: status === 'void' ? created : null,
        },
      },
    },
  });
  return { id, type, body, entity: null, version: null, invoice: action === 'paid' ? invoiceId : null };
}

function githubEvent(run: Run, index: number, settings: MixSettings): PlannedEvent {
  const id = `${spread(settings, run, 'event', index)}${run.id}-${index}`;
  const body = JSON.stringify({
    action: 'edited',
    // The run id is in the body too: GitHub signs only the body, and hookgate deduplicates such
    // providers on the body's digest, so two runs' bodies must differ as their ids do.
    issue: { id: index + 1, number: (index % 500) + 1, title: `issue ${run.id}-${index}`, state: 'open' },
    repository: { id: 1, full_name: 'example/hookgate-load' },
    sender: { login: 'hookgate-load' },
  });
  return { id, type: 'issues.edited', body, entity: null, version: null, invoice: null };
}

/** The delivery's headers, signed at send time as a provider signs each attempt. */
export function signEvent(
  provider: ProviderName,
  hmac: Hmac,
  secret: string,
  event: PlannedEvent,
  nowSeconds: number,
): Headers {
  switch (provider) {
    case 'standard-webhooks':
      return signStandardWebhooks(hmac, secret, event.id, nowSeconds, event.body);
    case 'stripe':
      return signStripe(hmac, secret, nowSeconds, event.body);
    case 'github':
      return signGithub(hmac, secret, event.id, 'issues', event.body);
  }
}

/** One line of the acknowledged-deliveries file that `hookgate verify --sent` reads. */
export interface AckRecord {
  readonly endpoint: string;
  readonly event_id: string;
  readonly provider: ProviderName;
  readonly kind: StepKind;
  readonly status: number;
  readonly entity?: string;
  readonly version?: number;
  readonly invoice?: string;
}

export function ackRecord(endpoint: string, provider: ProviderName, step: Step, status: number): AckRecord {
  return {
    endpoint,
    event_id: step.event.id,
    provider,
    kind: step.kind,
    status,
    ...(step.event.entity === null ? {} : { entity: step.event.entity }),
    ...(step.event.version === null ? {} : { version: step.event.version }),
    ...(step.event.invoice === null ? {} : { invoice: step.event.invoice }),
  };
}
