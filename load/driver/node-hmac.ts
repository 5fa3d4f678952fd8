import { createHmac } from 'node:crypto';
import type { Hmac } from '../lib/sign.ts';

/** The signing modules' HMAC primitive on Node.js (k6 passes k6/crypto's instead). */
export const nodeHmac: Hmac = (key, message, encoding) =>
  createHmac('sha256', typeof key === 'string' ? key : Buffer.from(key))
    .update(message, 'utf8')
    .digest(encoding);
