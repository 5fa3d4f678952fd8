import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { runHookgate } from '../support/process.ts';
import { workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// Text a sender controls reaches the operator's terminal through the CLI: event types and ids
// stored before the gateway refused control characters in them, last errors (a handler's or a
// downstream's words), header values, payloads. None of it may act on the terminal: ESC
// sequences recolour, retitle or clear it, CR and newlines forge lines, bidirectional overrides
// reorder what it shows.
let db: TestDatabase;
let configFile: string;

const HOSTILE_TYPE = 'invoice.paid\u001b[2J\u001b]0;owned\u0007';
const HOSTILE_ERROR = 'boom\r\nstatus     processed\u001b[31m\u009b31m';
const HOSTILE_ID = 'evt_\u202egnp.exe\u200b';
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding raw control characters is the point
const RAW_CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

beforeAll(async () => {
  db = await createTestDatabase();
  configFile = writeConfigFile(workerConfigDocument({ ops: {} }));
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, headers, status, attempts,
                                 last_error)
     VALUES ('ops', $1, 'standard-webhooks', $2, $3::jsonb, $4::jsonb, 'dead', 3, $5)`,
    [
      HOSTILE_ID,
      HOSTILE_TYPE,
      JSON.stringify({ note: 'payload \u001b[5m\u009bblink \u202e' }),
      JSON.stringify({ 'x-note': 'header \u001b[1m\u202e' }),
      HOSTILE_ERROR,
    ],
  );
});

afterAll(async () => {
  await db?.drop();
});

const run = (args: string[]) =>
  runHookgate([...args, '--config', configFile], { env: { DATABASE_URL: db.url, LOG_LEVEL: 'warn' } });

describe('CLI output never carries control characters to the terminal', () => {
  it('events list: the row stays one row, every control printed as an escape', async () => {
    const { code, output } = await run(['events', 'list', '--endpoint', 'ops']);
    expect(code, output).toBe(0);
    expect(output).not.toMatch(RAW_CONTROLS);
    expect(output).toContain('invoice.paid\\x1b[2J\\x1b]0;owned\\x07');
    expect(output).toContain('evt_\\u202egnp.exe\\u200b');
    // A header line and one row: the CR/LF in the last error did not add a line.
    expect(
      output
        .trim()
        .split('\n')
        .filter((line) => line.startsWith('ops')),
    ).toHaveLength(1);
  });

  it('events show: every field, the headers and the payload escaped; no forged line', async () => {
    const { code, output } = await run(['events', 'show', HOSTILE_ID, '--endpoint', 'ops']);
    expect(code, output).toBe(0);
    expect(output).not.toMatch(RAW_CONTROLS);
    expect(output).toContain('last error boom\\r\\nstatus     processed\\x1b[31m\\x9b31m');
    expect(output.split('\n').filter((line) => line.startsWith('status'))).toEqual(['status     dead']);
    expect(output).toContain('x-note: header \\x1b[1m\\u202e');
  });

  it('--json stays exact JSON: the same strings, with C1 and bidirectional controls as \\u escapes', async () => {
    const { code, output } = await run(['events', 'show', HOSTILE_ID, '--endpoint', 'ops', '--json']);
    expect(code, output).toBe(0);
    expect(output).not.toMatch(RAW_CONTROLS);
    const shown = JSON.parse(output.slice(output.indexOf('{')));
    expect([shown.event_id, shown.event_type, shown.last_error]).toEqual([
      HOSTILE_ID,
      HOSTILE_TYPE,
      HOSTILE_ERROR,
    ]);
  });

  it('errors that echo what the operator typed are escaped too', async () => {
    const { code, output } = await run(['events', 'show', 'evt_\u001b[2Jmissing', '--endpoint', 'ops']);
    expect(code).toBe(2);
    expect(output).not.toMatch(RAW_CONTROLS);
    expect(output).toContain('evt_\\x1b[2Jmissing');
  });
});
