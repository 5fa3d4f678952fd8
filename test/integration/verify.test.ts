import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type EndpointRoles, type VerifyReport, verifyRun } from '../../services/cli/verify/checks.ts';
import { readSentFile } from '../../services/cli/verify/sent-file.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { runHookgate } from '../support/process.ts';

let db: TestDatabase;
let dir: string;
let sentFile: string;
let configFile: string;

const CONFIG_ROLES: EndpointRoles = {
  billing: new Set(['billing']),
  project: new Map([['things', 'entity']]),
};
const INFERRED: EndpointRoles = { billing: null, project: null };

type Row = [
  endpoint: string,
  eventId: string,
  type: string,
  status: string,
  entity?: [string, string, number],
];

/** A drained run's state, as the worker leaves it: every event settled, ledger and projection written. */
const ROWS: Row[] = [
  ['things', 'msg_1', 'thing.updated', 'processed', ['thing', 'thing_1', 2]],
  ['things', 'msg_2', 'thing.updated', 'stale', ['thing', 'thing_1', 1]],
  ['things', 'msg_3', 'thing.updated', 'processed', ['thing', 'thing_1', 3]],
  ['things', 'msg_4', 'thing.updated', 'processed', ['thing', 'thing_2', 1]],
  ['billing', 'evt_c1', 'invoice.created', 'ignored'],
  ['billing', 'evt_p1', 'invoice.paid', 'processed'],
  ['billing', 'evt_p2', 'invoice.paid', 'processed'],
  ['billing', 'evt_v3', 'invoice.voided', 'processed'],
  ['billing', 'evt_p3', 'invoice.paid', 'ignored'],
  ['gh', 'gh-1', 'issues.edited', 'processed'],
  ['gh', 'gh-2', 'issues.edited', 'processed'],
];
const INVOICE_OF: Record<string, string> = {
  evt_c1: 'in_1',
  evt_p1: 'in_1',
  evt_p2: 'in_2',
  evt_v3: 'in_3',
  evt_p3: 'in_3',
};

async function seedCleanRun(): Promise<void> {
  await db.pool.query(
    'TRUNCATE hookgate.inbox, hookgate.entity_state, billing.ledger_entries, billing.invoices CASCADE',
  );
  for (const [endpoint, eventId, type, status, entity] of ROWS) {
    const payload =
      endpoint === 'billing'
        ? { id: eventId, type, data: { object: { id: INVOICE_OF[eventId], object: 'invoice' } } }
        : { type, data: { id: entity?.[1] ?? eventId, version: entity?.[2] ?? null } };
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, entity_type, entity_id,
                                   entity_version, payload, status, attempts, processed_at)
       VALUES ($1, $2, 'test', $3, $4, $5, $6, $7, $8, 1, now())`,
      [
        endpoint,
        eventId,
        type,
        entity?.[0] ?? null,
        entity?.[1] ?? null,
        entity?.[2] ?? null,
        payload,
        status,
      ],
    );
  }
  await db.pool.query(`
    INSERT INTO hookgate.entity_state (endpoint, entity_type, entity_id, version, state, event_id) VALUES
      ('things', 'thing', 'thing_1', 3, '{}', 'msg_3'),
      ('things', 'thing', 'thing_2', 1, '{}', 'msg_4')`);
  await db.pool.query(`
    INSERT INTO billing.invoices (id, status, created_by, updated_by) VALUES
      ('in_1', 'paid', 'billing:evt_p1', 'billing:evt_p1'),
      ('in_2', 'paid', 'billing:evt_p2', 'billing:evt_p2'),
      ('in_3', 'void', 'billing:evt_v3', 'billing:evt_v3')`);
  await db.pool.query(`
    INSERT INTO billing.ledger_entries (invoice_id, kind, amount, endpoint, event_id) VALUES
      ('in_1', 'payment', 100, 'billing', 'evt_p1'),
      ('in_2', 'payment', 200, 'billing', 'evt_p2')`);
}

/** Every row acknowledged once, some twice (duplicates answered 200 too). */
function writeSent(
  lines: string[] = ROWS.map(([endpoint, eventId]) => JSON.stringify({ endpoint, event_id: eventId })),
) {
  writeFileSync(sentFile, `${[...lines, lines[0], lines[5]].join('\n')}\n`);
}

async function verify(roles: EndpointRoles = CONFIG_ROLES): Promise<VerifyReport> {
  return verifyRun(db.pool, await readSentFile(sentFile), roles);
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'hookgate-verify-'));
  sentFile = join(dir, 'sent.jsonl');
  configFile = join(dir, 'hookgate.yaml');
  writeFileSync(
    configFile,
    `endpoints:
  billing: { provider: stripe, secrets: [whsec_verify_test], handler: billing }
  things:
    provider: standard-webhooks
    secrets: [whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]
    handler: project
    extract: { entityType: /data/object, entityId: /data/id, version: /data/version }
  gh: { provider: github, secrets: [gh_verify_test], handler: record }
`,
  );
});

beforeEach(async () => {
  await seedCleanRun();
  writeSent();
});

afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('hookgate verify', () => {
  it('a clean drained run passes, with the counts it checked', async () => {
    for (const roles of [CONFIG_ROLES, INFERRED]) {
      const report = await verify(roles);
      expect(report.violations).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.deliveries).toBe(ROWS.length + 2);
      expect(report.events).toBe(ROWS.length);
      expect(report.payments).toEqual({ endpoints: ['billing'], unique: 3, booked: 2, paidAfterVoid: 1 });
      expect(report.versions).toMatchObject({ endpoints: ['things'], entities: 2, behind: 0, missing: 0 });
    }
  });

  it('catches a deleted ledger row (a payment sent but not booked)', async () => {
    await db.pool.query(`DELETE FROM billing.ledger_entries WHERE invoice_id = 'in_2'`);
    for (const roles of [CONFIG_ROLES, INFERRED]) {
      const report = await verify(roles);
      expect(report.ok).toBe(false);
      expect(report.violations).toEqual([
        {
          kind: 'payment_not_booked',
          endpoint: 'billing',
          event_id: 'evt_p2',
          detail: 'invoice in_2 was paid but has no ledger entry',
        },
      ]);
    }
  });

  it('catches a row set back to pending, and a pending row the file does not name', async () => {
    await db.pool.query(`UPDATE hookgate.inbox SET status = 'pending' WHERE event_id IN ('gh-2', 'msg_4')`);
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload) VALUES ('gh', 'gh-unsent', 'github', 'issues.edited', '{}')`,
    );
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(report.violations.map((v) => [v.kind, v.event_id]).sort()).toEqual([
      ['pending', 'gh-2'],
      ['pending', 'msg_4'],
      ['pending_not_sent', 'gh-unsent'],
    ]);
    expect(report.endpoints.find((e) => e.endpoint === 'gh')).toMatchObject({ pendingNotSent: 1 });
    expect(report.violationCount).toBe(3);
  });

  it('counts every pending row the file does not name, beyond the listed examples', async () => {
    // Older acknowledged pending rows must not crowd the unsent ones out of the count.
    await db.pool.query(
      `UPDATE hookgate.inbox SET status = 'pending', received_at = now() - interval '1 hour'`,
    );
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload)
       SELECT 'gh', 'gh-unsent-' || n, 'github', 'issues.edited', '{}' FROM generate_series(1, 30) AS n`,
    );
    const report = await verify();
    const unsent = report.violations.filter((v) => v.kind === 'pending_not_sent');
    expect(unsent).toHaveLength(20);
    expect(unsent.every((v) => v.event_id?.startsWith('gh-unsent-'))).toBe(true);
    expect(report.violationCount).toBe(ROWS.length + 30);
    expect(report.endpoints.find((e) => e.endpoint === 'gh')).toMatchObject({ pendingNotSent: 30 });
  });

  it('catches an entity moved to an older version, and one whose state is gone', async () => {
    await db.pool.query(`UPDATE hookgate.entity_state SET version = 2 WHERE entity_id = 'thing_1'`);
    await db.pool.query(`DELETE FROM hookgate.entity_state WHERE entity_id = 'thing_2'`);
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(report.violations).toEqual([
      expect.objectContaining({ kind: 'entity_behind', endpoint: 'things', event_id: 'msg_3' }),
      expect.objectContaining({ kind: 'entity_missing', endpoint: 'things', event_id: 'msg_4' }),
    ]);
    expect(report.versions).toMatchObject({ behind: 1, missing: 1 });
  });

  it('reports parked and dead events and acknowledged events missing from the inbox', async () => {
    await db.pool.query(`UPDATE hookgate.inbox SET status = 'parked' WHERE event_id = 'gh-1'`);
    await db.pool.query(
      `UPDATE hookgate.inbox SET status = 'dead', last_error = 'boom' WHERE event_id = 'evt_c1'`,
    );
    await db.pool.query(`DELETE FROM hookgate.inbox WHERE event_id = 'msg_2'`);
    const report = await verify();
    expect(report.violations.map((v) => [v.kind, v.event_id]).sort()).toEqual([
      ['dead', 'evt_c1'],
      ['missing', 'msg_2'],
      ['parked', 'gh-1'],
    ]);
  });

  it('reports discarded events in their own column, beside the other statuses', async () => {
    await db.pool.query(
      `UPDATE hookgate.inbox SET status = 'discarded', discarded_by = 'sre', discard_reason = 'test leftover', discarded_at = now()
        WHERE event_id = 'gh-2'`,
    );
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(report.violations.map((v) => [v.kind, v.event_id])).toEqual([['discarded', 'gh-2']]);
    expect(report.endpoints.find((e) => e.endpoint === 'gh')?.statuses).toMatchObject({
      processed: 1,
      discarded: 1,
    });
    const run = await runCliInProcess(['verify', '--sent', sentFile], { DATABASE_URL: db.url });
    expect(run.code, run.output).toBe(1);
    const lines = run.stdout.split('\n');
    const header = lines.find((line) => line.startsWith('endpoint'))!;
    const columns = header.trim().split(/\s+/);
    expect(columns).toContain('discarded');
    const gh = lines
      .find((line) => line.startsWith('gh '))!
      .trim()
      .split(/\s+/);
    expect(gh[columns.indexOf('discarded')]).toBe('1');
    expect(gh[columns.indexOf('dead')]).toBe('0');
  });

  it('names only the endpoints the sent file has, whatever else the configuration holds', async () => {
    // A run against gh alone, with billing and things configured (and their data present).
    writeSent(
      ROWS.filter(([endpoint]) => endpoint === 'gh').map(([endpoint, eventId]) =>
        JSON.stringify({ endpoint, event_id: eventId }),
      ),
    );
    const report = await verify(CONFIG_ROLES);
    expect(report.ok).toBe(true);
    expect(report.endpoints.map((e) => e.endpoint)).toEqual(['gh']);
    expect(report.payments.endpoints).toEqual([]);
    expect(report.versions.endpoints).toEqual([]);
    const run = await runCliInProcess(['verify', '--sent', sentFile, '--config', configFile], {
      DATABASE_URL: db.url,
    });
    expect(run.code, run.output).toBe(0);
    expect(run.stdout).toContain('payments: no billing endpoint in this run');
    expect(run.stdout).toContain('versions: no projecting endpoint in this run');
    expect(run.stdout).not.toContain('things');
    expect(run.stdout).not.toMatch(/^billing\s/m);
  });

  it('the CLI: exit 0 on a clean run, 1 naming the offending event, 2 on bad usage', async () => {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' };
    const clean = await runHookgate(['verify', '--sent', sentFile, '--config', configFile], { env });
    expect(clean.output).toContain('OK: every acknowledged delivery');
    expect(clean.output).toMatch(/things\s+5\s+4\s+3\s+0\s+1\s/);
    expect(clean.code).toBe(0);

    await db.pool.query(`DELETE FROM billing.ledger_entries WHERE invoice_id = 'in_1'`);
    await db.pool.query(`UPDATE hookgate.inbox SET status = 'pending' WHERE event_id = 'gh-1'`);
    const text = await runHookgate(['verify', '--sent', sentFile, '--config', configFile], { env });
    expect(text.code).toBe(1);
    expect(text.output).toContain('FAILED: 2 violations');
    expect(text.output).toMatch(
      /payment_not_booked\s+billing evt_p1: invoice in_1 was paid but has no ledger entry/,
    );
    expect(text.output).toMatch(/pending\s+gh gh-1: status pending/);

    const json = await runHookgate(['verify', '--sent', sentFile, '--json'], { env });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.output.trim().split('\n').at(-1)!) as VerifyReport;
    expect(report.ok).toBe(false);
    expect(report.violationCount).toBe(2);

    writeFileSync(join(dir, 'bad.jsonl'), '{"endpoint":"gh","event_id":"gh-1"}\nnot a record\n');
    const bad = await runHookgate(['verify', '--sent', join(dir, 'bad.jsonl')], { env });
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('sent_file_invalid');
    expect(bad.output).toContain('line 2');
    const none = await runHookgate(['verify'], { env });
    expect(none.code).toBe(2);
    // An operational failure (no database to check against) is 1, like a violation: not proven.
    const port = await freePort();
    const down = await runHookgate(['verify', '--sent', sentFile], {
      env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres`, LOG_LEVEL: 'warn' },
    });
    expect(down.code).toBe(1);
    expect(down.output).toMatch(/ECONNREFUSED|connect/);
  });
});
