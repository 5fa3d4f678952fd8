import { z } from 'zod';

/** Options of the generic `hmac` provider; lives apart so the config schema can import it alone. */
export const hmacOptionsSchema = z.strictObject({
  /** Header carrying the signature, e.g. `X-Signature`. */
  header: z.string().min(1),
  algorithm: z.enum(['sha256', 'sha512']).default('sha256'),
  encoding: z.enum(['hex', 'base64']).default('hex'),
  /** Text before the signature in the header, e.g. `sha256=`. */
  prefix: z.string().default(''),
  /** Header carrying the event id; otherwise `extract.eventId` (a JSON pointer) must be set. */
  eventIdHeader: z.string().min(1).optional(),
  /** Header carrying the event type; otherwise `extract.eventType`, else the type is `unknown`. */
  eventTypeHeader: z.string().min(1).optional(),
});

export type HmacOptions = z.infer<typeof hmacOptionsSchema>;
