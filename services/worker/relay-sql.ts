/**
 * SQL of the relay's delivery record (hookgate.outbox_deliveries), one row per (kind, key).
 * Each statement autocommits: the record must survive whatever happens to the job afterwards.
 */

/**
 * Starts an attempt: creates the record or takes it over, unless it is settled (`delivered`,
 * `nowhere`) or another attempt holds an unexpired lease. Returns a row only when this caller
 * may send.
 */
export const BEGIN_ATTEMPT = `
  INSERT INTO hookgate.outbox_deliveries AS d
    (kind, key, endpoint, url, status, attempts, lease_until)
  VALUES ($1, $2, $3, $4, 'sending', 1, now() + make_interval(secs => $5::double precision))
  ON CONFLICT (kind, key) DO UPDATE
    SET status = 'sending',
        attempts = d.attempts + 1,
        url = EXCLUDED.url,
        endpoint = coalesce(EXCLUDED.endpoint, d.endpoint),
        lease_until = EXCLUDED.lease_until,
        last_attempt_at = now(),
        settled_at = NULL
    WHERE d.status NOT IN ('delivered', 'nowhere')
      AND NOT (d.status = 'sending' AND d.lease_until > now())
  RETURNING attempts`;

export const DELIVERY_STATUS = `
  SELECT status
    FROM hookgate.outbox_deliveries WHERE kind = $1 AND key = $2`;

/**
 * Ends an attempt with its result; `delivered` and `dead` are settled. Fenced by the attempt
 * number BEGIN_ATTEMPT returned: an attempt that outlived its lease (a stalled process, a
 * starved pool) while another took the record over changes nothing, so it cannot turn
 * `delivered` back into `retrying` and have a later replay send again. A 2xx is the one result
 * that lands whichever attempt saw it: the effect did happen downstream. Returns a row only if
 * the record was written.
 */
export const FINISH_ATTEMPT = `
  UPDATE hookgate.outbox_deliveries
     SET status = $3::text,
         http_status = $4,
         last_error = $5,
         lease_until = NULL,
         settled_at = CASE WHEN $3::text IN ('delivered', 'dead') THEN now() END
   WHERE kind = $1 AND key = $2
     AND ((status = 'sending' AND attempts = $6)
          OR ($3::text = 'delivered' AND status NOT IN ('delivered', 'nowhere')))
  RETURNING status`;

/**
 * A message with no URL configured is settled as delivered nowhere (a key already delivered
 * keeps its record, and one that another attempt holds under an unexpired lease is left to it).
 */
export const RECORD_NOWHERE = `
  INSERT INTO hookgate.outbox_deliveries AS d
    (kind, key, endpoint, url, status, attempts, settled_at)
  VALUES ($1, $2, $3, NULL, 'nowhere', 0, now())
  ON CONFLICT (kind, key) DO UPDATE
    SET status = 'nowhere', url = NULL, lease_until = NULL, settled_at = now()
    WHERE d.status NOT IN ('delivered', 'nowhere')
      AND NOT (d.status = 'sending' AND d.lease_until > now())
  RETURNING status`;
