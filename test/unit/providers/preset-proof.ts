import { describe, expect, it, vi } from 'vitest';
import { createProvider, type ProviderName } from '../../../services/core/providers/index.ts';
import { PRESETS, type PresetName } from '../../../services/core/providers/presets.ts';
import type { EventIdentity, VerifyRequest } from '../../../services/core/providers/types.ts';
import { NOW_MS, NOW_S, TOLERANCE_S } from './fixtures.ts';

export type Headers = Record<string, string>;
export type Which = 'good' | 'other';

/** What proves one provider: how its deliveries are signed, and what the evidence says of them. */
export interface Proof {
  readonly provider: ProviderName;
  readonly url?: string;
  /** Configured entries (secrets, or public keys) for the signer `good` and for someone else. */
  readonly secrets: Readonly<Record<Which, string>>;
  readonly body: string;
  /** A delivery of `body` signed by `which` at `timestampS` (the provider's library does it where it can). */
  sign(body: string, which: Which, timestampS: number): Headers | Promise<Headers>;
  /** Where the provider's own library (or its published example) says whether the delivery is authentic. */
  readonly oracle?: (body: string, headers: Headers) => boolean | Promise<boolean>;
  /** The body sent at another time, when the timestamp is inside it (Linear). */
  readonly bodyAt?: (timestampS: number) => string;
  /** The signed timestamp's granularity; absent, the scheme has none. */
  readonly timestamp?: 'seconds' | 'milliseconds';
  readonly identity: Partial<EventIdentity>;
  /** A shared-token scheme: the body is not signed, so a changed body still passes (documented). */
  readonly tokenOnly?: boolean;
}

function lower(headers: Headers): Headers {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

export function verifyRequest(
  body: string | Buffer,
  headers: Headers,
  secrets: readonly string[],
  nowMs = NOW_MS,
): VerifyRequest {
  return {
    rawBody: typeof body === 'string' ? Buffer.from(body) : body,
    headers: lower(headers),
    secrets,
    nowMs,
    toleranceSeconds: TOLERANCE_S,
  };
}

/** Runs `fn` with Date.now() pinned to the test clock: the libraries read the real one. */
export async function atTestClock<T>(fn: () => T | Promise<T>, nowMs = NOW_MS): Promise<T> {
  vi.useFakeTimers({ now: nowMs, toFake: ['Date'] });
  try {
    return await fn();
  } finally {
    vi.useRealTimers();
  }
}

function signatureHeaders(provider: ProviderName): readonly string[] {
  return Object.hasOwn(PRESETS, provider) ? (PRESETS[provider as PresetName].scheme?.headers ?? []) : [];
}

/** The properties every provider must have, on deliveries its own evidence signed. */
export function prove(title: string, proof: Proof): void {
  const provider = createProvider({ provider: proof.provider, ...(proof.url ? { url: proof.url } : {}) });
  const { good, other } = proof.secrets;
  const verdict = (body: string, headers: Headers, secrets: readonly string[], nowMs = NOW_MS) => {
    const result = provider.verify(verifyRequest(body, headers, secrets, nowMs));
    return result.ok ? 'ok' : result.code;
  };

  describe(title, () => {
    it('accepts a delivery signed as the provider signs it, and the evidence agrees', async () => {
      const headers = await proof.sign(proof.body, 'good', NOW_S);
      expect(verdict(proof.body, headers, [good])).toBe('ok');
      if (proof.oracle) expect(await atTestClock(() => proof.oracle?.(proof.body, headers))).toBe(true);
    });

    it('refuses a tampered body, and the evidence agrees', async () => {
      const headers = await proof.sign(proof.body, 'good', NOW_S);
      const tampered = proof.body.replace(/.$/s, (c) => ` ${c}`);
      // A token proves who sent the request, not what it says: docs/providers.md says so.
      expect(verdict(tampered, headers, [good])).toBe(proof.tokenOnly ? 'ok' : 'signature_invalid');
      if (proof.oracle) expect(await atTestClock(() => proof.oracle?.(tampered, headers))).toBe(false);
    });

    it("refuses someone else's signature, and accepts it once that key is also configured (rotation)", async () => {
      const headers = await proof.sign(proof.body, 'other', NOW_S);
      expect(verdict(proof.body, headers, [good])).toBe('signature_invalid');
      expect(verdict(proof.body, headers, [good, other])).toBe('ok');
      expect(verdict(proof.body, await proof.sign(proof.body, 'good', NOW_S), [other, good])).toBe('ok');
    });

    it('refuses a delivery without its signature header', async () => {
      const headers = await proof.sign(proof.body, 'good', NOW_S);
      const names = signatureHeaders(proof.provider);
      if (names.length === 0) return;
      const stripped = Object.fromEntries(
        Object.entries(headers).filter(([name]) => !names.includes(name.toLowerCase())),
      );
      expect(verdict(proof.body, stripped, [good])).toBe('signature_missing');
    });

    if (proof.timestamp) {
      it('accepts a timestamp exactly at the tolerance in both directions, whatever the clock fraction', async () => {
        const oldBody = proof.bodyAt?.(NOW_S - TOLERANCE_S) ?? proof.body;
        const earlyBody = proof.bodyAt?.(NOW_S + TOLERANCE_S) ?? proof.body;
        const old = await proof.sign(oldBody, 'good', NOW_S - TOLERANCE_S);
        const early = await proof.sign(earlyBody, 'good', NOW_S + TOLERANCE_S);
        // Seconds: the clock just before its next second, which a whole-second comparison still
        // accepts (as the providers' libraries do). Milliseconds are compared as milliseconds.
        const late = proof.timestamp === 'seconds' ? NOW_MS + 999 : NOW_MS;
        expect(verdict(oldBody, old, [good], late)).toBe('ok');
        expect(verdict(earlyBody, early, [good], NOW_MS)).toBe('ok');
      });

      it('refuses a timestamp past the tolerance in either direction, naming the skew', async () => {
        const past = TOLERANCE_S + 1;
        const oldBody = proof.bodyAt?.(NOW_S - past) ?? proof.body;
        const earlyBody = proof.bodyAt?.(NOW_S + past) ?? proof.body;
        const old = await proof.sign(oldBody, 'good', NOW_S - past);
        const early = await proof.sign(earlyBody, 'good', NOW_S + past);
        const refusal = provider.verify(verifyRequest(oldBody, old, [good]));
        expect(refusal).toMatchObject({
          code: 'timestamp_out_of_tolerance',
          message: expect.stringMatching(
            new RegExp(`${past} s older than the clock, beyond the ${TOLERANCE_S} s tolerance`),
          ),
        });
        expect(verdict(earlyBody, early, [good])).toBe('timestamp_out_of_tolerance');
      });
    }

    it('identifies the event', async () => {
      const headers = await proof.sign(proof.body, 'good', NOW_S);
      const request = verifyRequest(proof.body, headers, [good]);
      expect(provider.verify(request)).toEqual({ ok: true });
      const decoded = provider.decodeBody ? provider.decodeBody(proof.body) : JSON.parse(proof.body);
      const identity = provider.identify({
        headers: request.headers,
        body: decoded,
        rawBody: request.rawBody,
        secrets: [good],
      });
      expect(identity).toMatchObject({ ok: true, event: proof.identity });
    });
  });
}
