import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseLine, readSentFile } from '../../../services/cli/verify/sent-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'hookgate-sent-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = { endpoint: 'stripe', event_id: 'evt_1', provider: 'stripe', kind: 'unique', status: 200 };

describe('the sent file of hookgate verify', () => {
  it('reads driver records and k6 console lines in the text and JSON log formats', () => {
    const json = JSON.stringify(record);
    expect(parseLine(json)).toEqual({ record });
    // k6 run --console-output FILE (default text format: logrus quotes the message with %q).
    const text = `time="2026-11-30T14:00:00Z" level=info msg=${JSON.stringify(json)} source=console`;
    expect(parseLine(text)).toEqual({ record });
    // k6 run --log-format json --console-output FILE
    const k6Json = JSON.stringify({ level: 'info', msg: json, time: '2026-11-30T14:00:00Z' });
    expect(parseLine(k6Json)).toEqual({ record });
    // A script's own warnings are not records: skipped, not fatal.
    expect(parseLine('time="x" level=warning msg="evt_9: HTTP 503 overloaded"')).toEqual({ other: true });
    expect(parseLine('{"level":"warning","msg":"evt_9: HTTP 503"}')).toEqual({ other: true });
    // Anything else is refused with a reason.
    expect(parseLine('{"endpoint":"Bad Name","event_id":"e"}')).toHaveProperty('invalid');
    expect(parseLine('{"foo":1}')).toHaveProperty('invalid');
    expect(parseLine('hello')).toHaveProperty('invalid');
  });

  it('counts deliveries and distinct events; an empty or unreadable file is refused', async () => {
    const file = join(dir, 'sent.jsonl');
    const line = (id: string) => JSON.stringify({ endpoint: 'gh', event_id: id });
    writeFileSync(file, `${line('a')}\n${line('b')}\n\n${line('a')}\ntime="t" level=warning msg="late"\n`);
    const sent = await readSentFile(file);
    expect(sent.deliveries).toBe(3);
    expect(sent.events.size).toBe(2);
    expect(sent.otherLines).toBe(1);
    expect(sent.events.get('gh\u0000a')?.deliveries).toBe(2);
    writeFileSync(file, '\n');
    await expect(readSentFile(file)).rejects.toThrow(/records no acknowledged delivery/);
    await expect(readSentFile(join(dir, 'absent.jsonl'))).rejects.toThrow(/Cannot read the sent file/);
  });
});
