import type { Rejection, RejectionCode } from './types.ts';

export function reject(code: RejectionCode, message: string): Rejection {
  return { ok: false, code, message };
}
