import { describe, expect, it } from 'vitest';
import { identifyEvent, toIdentifier } from '../../../services/core/providers/extract.ts';

const body = { id: 'e1', type: 't', entity: { kind: 'k', id: 5, v: '2024-04-12T10:18:49.621022Z' } };

describe('toIdentifier', () => {
  it('keeps non-empty strings and turns safe integers into decimal strings', () => {
    expect(toIdentifier('a')).toBe('a');
    expect(toIdentifier(5461508341832)).toBe('5461508341832');
    expect(toIdentifier(0)).toBe('0');
  });
  it('refuses empty strings, fractions, unsafe integers and non-scalars', () => {
    for (const value of ['', 1.5, 2 ** 53, null, undefined, true, {}, []])
      expect(toIdentifier(value)).toBeNull();
  });
});

describe('identifyEvent', () => {
  const defaults = {
    eventId: { label: 'the body field /id', read: () => body.id },
    eventType: { label: 'the body field /type', read: () => body.type },
    headers: {},
  };

  it('drops a half entity: type without id keys nothing', () => {
    const result = identifyEvent(body, { entityType: '/entity/kind', version: '/entity/v' }, defaults);
    expect(result).toMatchObject({
      ok: true,
      event: { entityType: null, entityId: null, entityVersion: null },
    });
  });

  it('reads a version only for an entity and normalises it', () => {
    const result = identifyEvent(
      body,
      { entityType: '/entity/kind', entityId: '/entity/id', version: '/entity/v' },
      defaults,
    );
    expect(result).toMatchObject({
      ok: true,
      event: { entityType: 'k', entityId: '5', entityVersion: '1712917129621022' },
    });
  });

  it('uses the fallback type only when the type is missing', () => {
    expect(
      identifyEvent(body, { eventType: '/nope' }, { ...defaults, eventTypeFallback: 'unknown' }),
    ).toMatchObject({
      event: { eventType: 'unknown' },
    });
    expect(identifyEvent(body, undefined, { ...defaults, eventTypeFallback: 'unknown' })).toMatchObject({
      event: { eventType: 't' },
    });
  });

  it('names the pointer it looked at when an override finds nothing', () => {
    const result = identifyEvent(body, { eventId: '/missing' }, defaults);
    expect(result).toMatchObject({ ok: false, code: 'event_id_missing' });
    if (!result.ok) expect(result.message).toContain('"/missing" (extract.eventId)');
  });

  it('refuses an empty-string id', () => {
    expect(identifyEvent({ id: '' }, { eventId: '/id' }, defaults)).toMatchObject({
      code: 'event_id_missing',
    });
  });
});
