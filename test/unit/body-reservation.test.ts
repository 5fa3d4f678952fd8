import { describe, expect, it } from 'vitest';
import { BodyBudget } from '../../services/gateway/body-budget.ts';
import { reserveBody } from '../../services/gateway/body-reservation.ts';

const LIMIT = 1_000;

describe('reserveBody', () => {
  it('reserves a declared length up front and gives it back only when both holders let go', () => {
    const budget = new BodyBudget(2_000);
    const seen: number[] = [];
    const reservation = reserveBody(budget, '600', LIMIT, (held) => seen.push(held));
    expect(reservation?.grow).toBeUndefined();
    expect(budget.held).toBe(600);
    reservation!.letGo();
    // The answer is out but the claim still holds the body (or the reverse).
    expect(budget.held).toBe(600);
    reservation!.letGo();
    expect(budget.held).toBe(0);
    expect(seen).toEqual([600, 0]);
  });

  it('refuses a declared length that does not fit beside what is held, leaving the budget as it was', () => {
    const budget = new BodyBudget(1_000);
    const first = reserveBody(budget, '800', LIMIT, () => {});
    expect(budget.held).toBe(800);
    expect(reserveBody(budget, '300', LIMIT, () => {})).toBeNull();
    expect(budget.held).toBe(800);
    first!.letGo();
    first!.letGo();
    expect(reserveBody(budget, '300', LIMIT, () => {})).not.toBeNull();
    expect(budget.held).toBe(300);
  });

  it('lets one delivery in when nothing is held, whatever its size within the limit', () => {
    const budget = new BodyBudget(100);
    expect(reserveBody(budget, '900', LIMIT, () => {})).not.toBeNull();
    expect(budget.held).toBe(900);
  });

  it('reserves nothing for a declared length over the endpoint limit (readBody refuses it unread)', () => {
    const budget = new BodyBudget(100);
    const reservation = reserveBody(budget, '5000', LIMIT, () => {});
    expect(reservation?.grow).toBeUndefined();
    expect(budget.held).toBe(0);
    reservation!.letGo();
    reservation!.letGo();
    expect(budget.held).toBe(0);
  });

  it('reserves a chunked body as it arrives and stops at the budget', () => {
    const budget = new BodyBudget(1_000);
    const other = reserveBody(budget, '400', LIMIT, () => {});
    const chunked = reserveBody(budget, undefined, LIMIT, () => {});
    expect(budget.held).toBe(400);
    expect(chunked!.grow!(300)).toBe(true);
    expect(chunked!.grow!(200)).toBe(true);
    expect(budget.held).toBe(900);
    expect(chunked!.grow!(200)).toBe(false);
    expect(budget.held).toBe(900);
    chunked!.letGo();
    chunked!.letGo();
    expect(budget.held).toBe(400);
    other!.letGo();
    other!.letGo();
    expect(budget.held).toBe(0);
  });

  it('is a no-op without a budget', () => {
    const reservation = reserveBody(undefined, '5', LIMIT, () => {
      throw new Error('no gauge without a budget');
    });
    expect(reservation?.grow).toBeUndefined();
    reservation!.letGo();
    reservation!.letGo();
  });
});
