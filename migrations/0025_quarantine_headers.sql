-- Quarantined deliveries keep an allow-list of headers (services/core/providers/headers.ts,
-- quarantineHeaders): the provider's id, type, timestamp and delivery headers, never its signature
-- or token header. Until now every header but four credentials was kept, so a GitLab endpoint's
-- X-Gitlab-Token (its shared secret, not a signature) was stored with each quarantined delivery
-- and shown by `hookgate quarantine show`, the console and to every role with SELECT.
--
-- Rows stored before keep only the headers a built-in provider names for identifying or reading a
-- delivery (this list is every built-in provider's, at this version). A migration cannot read the
-- configuration, so an `hmac` or `scheme` endpoint's own id or type header is removed from rows
-- already held too (docs/providers.md, "Headers kept"): such a row still shows its body and can be
-- dropped, and releases only if its id and type can be read from the body.
UPDATE hookgate.quarantine AS q
   SET headers = (SELECT coalesce(jsonb_object_agg(h.key, h.value), '{}'::jsonb)
                    FROM jsonb_each(q.headers) AS h
                   WHERE h.key = ANY (ARRAY[
                     'box-delivery-id', 'box-delivery-timestamp', 'i-twilio-idempotency-token',
                     'idempotency-key', 'linear-delivery', 'linear-event', 'request-id',
                     'sentry-hook-resource', 'sentry-hook-timestamp', 'shopify-api-version',
                     'shopify-event-id', 'shopify-shop-domain', 'shopify-topic', 'shopify-triggered-at',
                     'shopify-webhook-id', 'svix-id', 'svix-timestamp', 'twitch-eventsub-message-id',
                     'twitch-eventsub-message-retry', 'twitch-eventsub-message-timestamp',
                     'twitch-eventsub-subscription-version', 'webhook-id', 'webhook-timestamp',
                     'x-attempt-number', 'x-event-key', 'x-github-delivery', 'x-github-event',
                     'x-github-hook-id', 'x-gitlab-event', 'x-gitlab-event-uuid', 'x-gitlab-instance',
                     'x-gitlab-webhook-uuid', 'x-hook-uuid', 'x-hubspot-request-timestamp',
                     'x-razorpay-event-id', 'x-request-uuid', 'x-shopify-api-version',
                     'x-shopify-event-id', 'x-shopify-shop-domain', 'x-shopify-topic',
                     'x-shopify-triggered-at', 'x-shopify-webhook-id', 'x-signature-timestamp',
                     'x-slack-request-timestamp', 'x-slack-retry-num', 'x-slack-retry-reason',
                     'x-twilio-email-event-webhook-timestamp', 'x-wc-webhook-delivery-id',
                     'x-wc-webhook-event', 'x-wc-webhook-id', 'x-wc-webhook-resource',
                     'x-wc-webhook-topic', 'x-zendesk-account-id', 'x-zendesk-webhook-id',
                     'x-zendesk-webhook-invocation-id', 'x-zendesk-webhook-signature-timestamp',
                     'x-zm-request-timestamp']::text[]))
 WHERE headers <> '{}'::jsonb;

-- During a rolling upgrade the previous release's gateways still store every header. Until they
-- are gone (and after, at no cost worth naming: a quarantine insert is rare), an insert loses the
-- signature and token headers of every built-in provider and the request's credentials. The new
-- gateways never send them; this catches the old ones.
CREATE FUNCTION hookgate.quarantine_strip_secret_headers() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  NEW.headers := NEW.headers - ARRAY[
    'authorization', 'proxy-authorization', 'cookie', 'x-hookgate-replay-token',
    'box-signature-primary', 'box-signature-secondary', 'calendly-webhook-signature',
    'linear-signature', 'paddle-signature', 'sentry-hook-signature', 'shopify-hmac-sha256',
    'stripe-signature', 'svix-signature', 'twitch-eventsub-message-signature', 'typeform-signature',
    'webhook-signature', 'workos-signature', 'x-cc-webhook-signature', 'x-dropbox-signature',
    'x-gitlab-token', 'x-hook-signature', 'x-hook-secret', 'x-hub-signature', 'x-hub-signature-256',
    'x-hubspot-signature-v3', 'x-pagerduty-signature', 'x-razorpay-signature',
    'x-shopify-hmac-sha256', 'x-signature-ed25519', 'x-slack-signature',
    'x-square-hmacsha256-signature', 'x-twilio-email-event-webhook-signature', 'x-twilio-signature',
    'x-vercel-signature', 'x-wc-webhook-signature', 'x-xero-signature',
    'x-zendesk-webhook-signature', 'x-zm-signature']::text[];
  RETURN NEW;
END
$$;

CREATE TRIGGER quarantine_strip_secret_headers
  BEFORE INSERT OR UPDATE OF headers ON hookgate.quarantine
  FOR EACH ROW EXECUTE FUNCTION hookgate.quarantine_strip_secret_headers();
