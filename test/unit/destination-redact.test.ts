import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createRedactor, destinationRedactor, spellingsOf } from '../../services/core/destinations/redact.ts';

// A destination's secrets in every spelling a receiver or a library echoes them in, replaced in
// every error text and in the kept bytes of an answer.

const TOKEN = 'ab+Cd/Ef+gh=';
const SIGNING = `whsec_${Buffer.from('a destination signing secret, 32b').toString('base64')}`;

function destination(url: string, extra: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const config = parseConfig(
    {
      endpoints: {
        pay: {
          provider: 'standard-webhooks',
          secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
          destinations: { ledger: { url, ...extra } },
        },
      },
    },
    env,
  );
  return config.endpoints.pay!.destinations!.ledger!;
}

describe('the spellings of a secret', () => {
  it('are as written, percent-decoded, + as a space, percent-encoded and JSON-escaped', () => {
    const spellings = spellingsOf(TOKEN);
    for (const spelling of [
      'ab+Cd/Ef+gh=', // as written
      'ab Cd/Ef gh=', // + as a space (a form-decoded query)
      'ab%2BCd%2FEf%2Bgh%3D', // percent-encoded
      'ab%20Cd%2FEf%20gh%3D', // the decoded form encoded again
      'ab+Cd%2FEf+gh%3D', // form-encoded
      'ab+Cd\\/Ef+gh=', // JSON with escaped slashes
    ]) {
      expect(spellings, spelling).toContain(spelling);
    }
    expect(spellingsOf('s%3Dcret')).toContain('s=cret');
    // A value that does not decode is still looked for as written.
    expect(spellingsOf('100%')).toContain('100%');
  });
});

describe('a redactor', () => {
  const redactor = createRedactor([{ value: TOKEN, shownAs: '${LEDGER_TOKEN}' }]);

  it('replaces every spelling in a text, percent escapes in either case', () => {
    expect(redactor.text('HTTP 404: no route /hooks?token=ab Cd/Ef gh= here')).toBe(
      'HTTP 404: no route /hooks?token=${LEDGER_TOKEN} here',
    );
    expect(redactor.text('GET /hooks?token=ab%2bCd%2fEf%2bgh%3d failed')).toBe(
      'GET /hooks?token=${LEDGER_TOKEN} failed',
    );
    expect(redactor.text('{"token":"ab+Cd\\/Ef+gh="}')).toBe('{"token":"${LEDGER_TOKEN}"}');
    expect(redactor.text('nothing to hide')).toBe('nothing to hide');
  });

  it('replaces it in the kept bytes, as UTF-8 and as UTF-16 either way round', () => {
    const utf8 = redactor.bytes(Buffer.from('echo: ab Cd/Ef gh= end'));
    expect(utf8.toString('utf8')).toBe('echo: ${LEDGER_TOKEN} end');
    const le = redactor.bytes(Buffer.from('echo: ab+Cd/Ef+gh=', 'utf16le'));
    expect(le.toString('utf16le')).toBe('echo: ${LEDGER_TOKEN}');
    const be = redactor.bytes(Buffer.from('echo: ab+Cd/Ef+gh=', 'utf16le').swap16());
    expect(Buffer.from(be).swap16().toString('utf16le')).toBe('echo: ${LEDGER_TOKEN}');
  });

  it('leaves values too short to be told from ordinary text alone', () => {
    expect(createRedactor([{ value: '503', shownAs: '${CODE}' }]).text('HTTP 503')).toBe('HTTP 503');
  });
});

describe("a destination's secrets", () => {
  it('are the values its URL and headers took from the environment, shown as their references', () => {
    const settings = destination(
      'https://hooks.example.com/in?token=${LEDGER_TOKEN}',
      { headers: { Authorization: 'Bearer ${LEDGER_API_KEY}', 'X-Team': 'payments' } },
      { LEDGER_TOKEN: TOKEN, LEDGER_API_KEY: 'key-0123456789' },
    );
    const redactor = destinationRedactor(settings);
    expect(redactor.text('HTTP 401: bad token ab Cd/Ef gh= for Bearer key-0123456789 (payments)')).toBe(
      'HTTP 401: bad token ${LEDGER_TOKEN} for Bearer ${LEDGER_API_KEY} (payments)',
    );
  });

  it('are its signing secrets', () => {
    const settings = destination(
      'https://hooks.example.com/in',
      { signing: { secrets: ['${LEDGER_SIGNING_SECRET}'] } },
      { LEDGER_SIGNING_SECRET: SIGNING },
    );
    const redactor = destinationRedactor(settings);
    expect(redactor.text(`leaked ${SIGNING}`)).toBe('leaked [redacted]');
  });
});
