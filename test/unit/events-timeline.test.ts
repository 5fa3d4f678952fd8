import { describe, expect, it } from 'vitest';
import type { ApplyJobTimes } from '../../services/core/queue/job-rows.ts';
import { timeline } from '../../services/core/read-models/event-detail.ts';
import type { ShownEvent } from '../../services/core/read-models/events-sql.ts';

const at = (seconds: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, seconds));

function event(overrides: Partial<ShownEvent>): ShownEvent {
  return {
    endpoint: 'stripe',
    event_id: 'evt_1',
    provider: 'stripe',
    event_type: 'invoice.paid',
    entity_type: null,
    entity_id: null,
    entity_version: null,
    status: 'pending',
    attempts: 0,
    requeued_attempts: 0,
    dispatched_attempts: 0,
    dispatch_job: null,
    next_attempt_at: null,
    last_error: null,
    received_at: at(0),
    processed_at: null,
    received_via: null,
    traceparent: null,
    discarded_at: null,
    discarded_by: null,
    discard_reason: null,
    headers: {},
    payload: {},
    ...overrides,
  };
}

const job = (overrides: Partial<ApplyJobTimes>): ApplyJobTimes => ({
  state: 'completed',
  retry_count: 0,
  created_on: at(0),
  started_on: at(1),
  completed_on: at(2),
  start_after: at(0),
  ...overrides,
});

describe('events show: the timeline', () => {
  it('a failing event waiting for its next attempt says when it is due and why the last failed', () => {
    const entries = timeline(
      event({ attempts: 2, last_error: 'handler_error: downstream timed out' }),
      job({ state: 'retry', retry_count: 1, started_on: at(30), completed_on: null, start_after: at(90) }),
    );
    expect(entries).toEqual([
      { at: at(0).toISOString(), what: 'received' },
      { at: at(30).toISOString(), what: 'attempt 2 started' },
      {
        at: at(90).toISOString(),
        what: 'attempt 3 due (attempt 2 failed: handler_error: downstream timed out)',
      },
    ]);
  });

  it('once pg-boss has deleted the job, the facts stay, their times marked as not kept', () => {
    const entries = timeline(
      event({ status: 'dead', attempts: 4, requeued_attempts: 3, last_error: 'option_missing: set it' }),
      null,
    );
    expect(entries).toEqual([
      { at: at(0).toISOString(), what: 'received' },
      { at: null, what: 'requeued after 3 attempt(s), with a fresh job' },
      { at: null, what: 'ended dead after 4 attempt(s): option_missing: set it' },
    ]);
  });

  it('a processed event: received, its attempt, settled', () => {
    expect(
      timeline(event({ status: 'processed', attempts: 1, processed_at: at(2) }), job({})).map((e) => e.what),
    ).toEqual(['received', 'attempt 1 started', 'settled processed after 1 attempt(s)']);
  });

  it('a requeue the audit trail has tells the fresh budget at its own time, not apart as a time not kept', () => {
    const requeued = at(120);
    const entries = timeline(
      event({ status: 'pending', attempts: 6, requeued_attempts: 6, dispatched_attempts: 6 }),
      null,
      [{ at: requeued, actor: 'alice', command: 'requeue', reason: 'fixed the handler' }],
    );
    expect(entries).toEqual([
      { at: at(0).toISOString(), what: 'received' },
      {
        at: requeued.toISOString(),
        what: 'requeued by alice after 6 attempt(s), with a fresh job: fixed the handler',
      },
    ]);
  });

  it('a discarded event keeps the line saying how it ended before the discard', () => {
    const entries = timeline(
      event({
        status: 'discarded',
        attempts: 3,
        last_error: 'handler_error: bad payload',
        processed_at: at(300),
      }),
      null,
      [{ at: at(300), actor: 'bob', command: 'discard', reason: 'test data' }],
      [
        {
          attempt: 3,
          at: at(60),
          worker: 'w1',
          outcome: 'dead',
          error_code: 'handler_error',
          error_message: 'bad payload',
          duration_ms: 4,
        },
      ],
    );
    expect(entries.map((entry) => entry.what)).toEqual([
      'received',
      'attempt 3 by w1: dead, handler_error: bad payload (4 ms)',
      'ended dead after 3 attempt(s): handler_error: bad payload',
      'discarded by bob: test data',
      'settled discarded after 3 attempt(s)',
    ]);
  });
});
