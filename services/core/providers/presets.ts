import { asanaPreset } from './asana.ts';
import { discordPreset } from './discord.ts';
import { dropboxPreset } from './dropbox.ts';
import { mailgunPreset } from './mailgun.ts';
import { oktaPreset } from './okta.ts';
import { type Preset, schemePreset } from './preset.ts';
import type { ContentPart, SchemeSpec } from './scheme-spec.ts';
import { twilioPreset } from './twilio.ts';
import { twitchPreset } from './twitch.ts';
import { xeroPreset } from './xero.ts';
import { zoomPreset } from './zoom.ts';

const BODY: ContentPart = { part: 'body' };
const TIMESTAMP: ContentPart = { part: 'timestamp' };

/** Standard Webhooks under `svix-*` names, as Resend and Clerk send it. */
const SVIX_SCHEME = {
  algorithm: 'hmac-sha256',
  headers: ['svix-signature'],
  encoding: 'base64',
  list: { separator: ' ', assign: ',', versions: ['v1'] },
  content: [{ part: 'id' }, { literal: '.' }, TIMESTAMP, { literal: '.' }, BODY],
  secretFormat: 'whsec',
  timestamp: { from: { header: 'svix-timestamp' }, unit: 'seconds' },
  idHeader: 'svix-id',
} as const satisfies SchemeSpec;

/**
 * The presets a scheme and an identity spec can say. Providers that need code of their own
 * (an answer to a question, a body that is not JSON) live in their own files and are listed
 * here too. The hand-written providers (standard-webhooks, stripe, github, shopify, slack,
 * paddle) keep their files and are not in this table.
 */
export const PRESETS = {
  gitlab: schemePreset({
    title: 'GitLab',
    // A shared token, not a signature: it proves who sent the request, not what it says.
    scheme: { algorithm: 'token', headers: ['x-gitlab-token'], encoding: 'text', content: [] },
    identity: {
      // Idempotency-Key stays the same across retries (GitLab 17.4+); older GitLab sends only the event UUID.
      eventId: { first: [{ header: 'idempotency-key' }, { header: 'x-gitlab-event-uuid' }] },
      eventType: {
        join: [{ pointer: '/object_kind' }, { pointer: '/object_attributes/action' }],
        separator: '.',
      },
      keep: ['x-gitlab-event', 'x-gitlab-instance', 'x-gitlab-webhook-uuid'],
    },
    evidence: { kind: 'docs', source: 'https://docs.gitlab.com/user/project/integrations/webhooks/' },
  }),
  bitbucket: schemePreset({
    title: 'Bitbucket Cloud',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['x-hub-signature'],
      encoding: 'hex',
      prefix: 'sha256=',
      content: [BODY],
    },
    identity: {
      eventId: { header: 'x-request-uuid' },
      eventType: { header: 'x-event-key' },
      keep: ['x-event-key', 'x-hook-uuid', 'x-attempt-number'],
    },
    evidence: {
      kind: 'docs',
      source: 'https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/',
    },
  }),
  sendgrid: schemePreset({
    title: 'Twilio SendGrid (Event Webhook)',
    scheme: {
      algorithm: 'ecdsa-p256-sha256',
      headers: ['x-twilio-email-event-webhook-signature'],
      encoding: 'base64',
      content: [TIMESTAMP, BODY],
      timestamp: { from: { header: 'x-twilio-email-event-webhook-timestamp' }, unit: 'seconds' },
    },
    // The body is a batch of events with no delivery id: the batch is the event, keyed by its bytes.
    identity: { eventId: { digest: true }, eventType: { literal: 'events' } },
    evidence: { kind: 'sdk', source: '@sendgrid/eventwebhook' },
  }),
  hubspot: schemePreset({
    title: 'HubSpot (signature v3)',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['x-hubspot-signature-v3'],
      encoding: 'base64',
      content: [{ part: 'method' }, { part: 'url' }, BODY, TIMESTAMP],
      timestamp: { from: { header: 'x-hubspot-request-timestamp' }, unit: 'milliseconds' },
    },
    needsUrl: true,
    identity: { eventId: { digest: true }, eventType: { literal: 'events' } },
    evidence: { kind: 'sdk', source: '@hubspot/api-client' },
  }),
  square: schemePreset({
    title: 'Square',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['x-square-hmacsha256-signature'],
      encoding: 'base64',
      content: [{ part: 'url' }, BODY],
    },
    needsUrl: true,
    identity: {
      eventId: { pointer: '/event_id' },
      eventType: { pointer: '/type' },
      entityType: { pointer: '/data/type' },
      entityId: { pointer: '/data/id' },
    },
    evidence: { kind: 'sdk', source: 'square' },
  }),
  woocommerce: schemePreset({
    title: 'WooCommerce',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['x-wc-webhook-signature'],
      encoding: 'base64',
      content: [BODY],
    },
    identity: {
      eventId: { header: 'x-wc-webhook-delivery-id' },
      eventType: { header: 'x-wc-webhook-topic' },
      keep: ['x-wc-webhook-topic', 'x-wc-webhook-resource', 'x-wc-webhook-event', 'x-wc-webhook-id'],
    },
    evidence: {
      kind: 'docs',
      source: 'https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks',
    },
  }),
  typeform: schemePreset({
    title: 'Typeform',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['typeform-signature'],
      encoding: 'base64',
      prefix: 'sha256=',
      content: [BODY],
    },
    identity: { eventId: { pointer: '/event_id' }, eventType: { pointer: '/event_type' } },
    evidence: {
      kind: 'docs',
      source: 'https://www.typeform.com/developers/webhooks/secure-your-webhooks/',
    },
  }),
  linear: schemePreset({
    title: 'Linear',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['linear-signature'],
      encoding: 'hex',
      content: [BODY],
      // The signed body carries the time it was sent; the header of the same name is not signed.
      timestamp: { from: { pointer: '/webhookTimestamp' }, unit: 'milliseconds' },
    },
    identity: {
      eventId: { header: 'linear-delivery' },
      eventType: { join: [{ pointer: '/type' }, { pointer: '/action' }], separator: '.' },
      entityType: { pointer: '/type' },
      entityId: { pointer: '/data/id' },
      version: { pointer: '/data/updatedAt' },
      keep: ['linear-event'],
    },
    evidence: { kind: 'sdk', source: '@linear/sdk' },
  }),
  sentry: schemePreset({
    title: 'Sentry (integration platform)',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['sentry-hook-signature'],
      encoding: 'hex',
      content: [BODY],
    },
    identity: {
      eventId: { header: 'request-id' },
      eventType: { join: [{ header: 'sentry-hook-resource' }, { pointer: '/action' }], separator: '.' },
      keep: ['sentry-hook-resource', 'sentry-hook-timestamp'],
    },
    evidence: {
      kind: 'docs',
      source: 'https://docs.sentry.io/organization/integrations/integration-platform/webhooks/',
    },
  }),
  pagerduty: schemePreset({
    title: 'PagerDuty (webhooks v3)',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['x-pagerduty-signature'],
      encoding: 'hex',
      list: { separator: ',', assign: '=', versions: ['v1'] },
      content: [BODY],
    },
    identity: {
      eventId: { pointer: '/event/id' },
      eventType: { pointer: '/event/event_type' },
      entityType: { pointer: '/event/resource_type' },
      entityId: { pointer: '/event/data/id' },
    },
    evidence: {
      kind: 'docs',
      source: 'https://developer.pagerduty.com/docs/webhooks/webhook-signatures/',
    },
  }),
  intercom: schemePreset({
    title: 'Intercom',
    scheme: {
      algorithm: 'hmac-sha1',
      headers: ['x-hub-signature'],
      encoding: 'hex',
      prefix: 'sha1=',
      content: [BODY],
    },
    identity: {
      eventId: { pointer: '/id' },
      eventType: { pointer: '/topic' },
      entityType: { pointer: '/data/item/type' },
      entityId: { pointer: '/data/item/id' },
      version: { pointer: '/data/item/updated_at' },
    },
    evidence: {
      kind: 'docs',
      source: 'https://developers.intercom.com/docs/references/webhooks/webhook-models',
    },
  }),
  calendly: schemePreset({
    title: 'Calendly',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['calendly-webhook-signature'],
      encoding: 'hex',
      list: { separator: ',', assign: '=', versions: ['v1'], timestamp: 't' },
      content: [TIMESTAMP, { literal: '.' }, BODY],
      timestamp: { from: { list: true }, unit: 'seconds' },
    },
    identity: { eventId: { digest: true }, eventType: { pointer: '/event' } },
    evidence: {
      kind: 'docs',
      source: 'https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures',
    },
  }),
  postmark: schemePreset({
    title: 'Postmark (basic auth)',
    // Postmark authenticates with the user:password of the webhook URL; nothing is signed.
    scheme: {
      algorithm: 'token',
      headers: ['authorization'],
      encoding: 'base64',
      prefix: 'Basic ',
      content: [],
    },
    identity: { eventId: { digest: true }, eventType: { pointer: '/RecordType' } },
    evidence: { kind: 'docs', source: 'https://postmarkapp.com/developer/webhooks/webhooks-overview' },
  }),
  resend: schemePreset({
    title: 'Resend',
    scheme: SVIX_SCHEME,
    identity: { eventId: { header: 'svix-id' }, eventType: { pointer: '/type' } },
    evidence: { kind: 'sdk', source: 'resend' },
  }),
  clerk: schemePreset({
    title: 'Clerk',
    scheme: SVIX_SCHEME,
    identity: {
      eventId: { header: 'svix-id' },
      eventType: { pointer: '/type' },
      entityType: { pointer: '/data/object' },
      entityId: { pointer: '/data/id' },
      version: { pointer: '/data/updated_at' },
    },
    evidence: { kind: 'sdk', source: '@clerk/backend' },
  }),
  vercel: schemePreset({
    title: 'Vercel',
    scheme: { algorithm: 'hmac-sha1', headers: ['x-vercel-signature'], encoding: 'hex', content: [BODY] },
    identity: { eventId: { pointer: '/id' }, eventType: { pointer: '/type' } },
    evidence: { kind: 'docs', source: 'https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks' },
  }),
  'coinbase-commerce': schemePreset({
    title: 'Coinbase Commerce',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['x-cc-webhook-signature'],
      encoding: 'hex',
      content: [BODY],
    },
    identity: {
      eventId: { pointer: '/event/id' },
      eventType: { pointer: '/event/type' },
      entityType: { pointer: '/event/data/resource' },
      entityId: { pointer: '/event/data/id' },
    },
    evidence: { kind: 'sdk', source: 'coinbase-commerce-node' },
  }),
  razorpay: schemePreset({
    title: 'Razorpay',
    scheme: { algorithm: 'hmac-sha256', headers: ['x-razorpay-signature'], encoding: 'hex', content: [BODY] },
    identity: { eventId: { header: 'x-razorpay-event-id' }, eventType: { pointer: '/event' } },
    evidence: { kind: 'sdk', source: 'razorpay' },
  }),
  zendesk: schemePreset({
    title: 'Zendesk',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['x-zendesk-webhook-signature'],
      encoding: 'base64',
      content: [TIMESTAMP, BODY],
      timestamp: { from: { header: 'x-zendesk-webhook-signature-timestamp' }, unit: 'rfc3339' },
    },
    identity: {
      eventId: { header: 'x-zendesk-webhook-invocation-id' },
      // Event webhooks carry a type; trigger and automation webhooks send the payload you wrote.
      eventType: { pointer: '/type' },
      eventTypeFallback: 'webhook',
      keep: ['x-zendesk-webhook-id', 'x-zendesk-account-id'],
    },
    evidence: { kind: 'docs', source: 'https://developer.zendesk.com/documentation/webhooks/verifying/' },
  }),
  box: schemePreset({
    title: 'Box',
    scheme: {
      algorithm: 'hmac-sha256',
      // Each header is signed with its own key; any configured key may match either.
      headers: ['box-signature-primary', 'box-signature-secondary'],
      encoding: 'base64',
      content: [BODY, TIMESTAMP],
      timestamp: { from: { header: 'box-delivery-timestamp' }, unit: 'rfc3339' },
    },
    identity: {
      eventId: { pointer: '/id' },
      eventType: { pointer: '/trigger' },
      entityType: { pointer: '/source/type' },
      entityId: { pointer: '/source/id' },
      keep: ['box-delivery-id'],
    },
    evidence: { kind: 'sdk', source: 'box-node-sdk' },
  }),
  workos: schemePreset({
    title: 'WorkOS',
    scheme: {
      algorithm: 'hmac-sha256',
      headers: ['workos-signature'],
      encoding: 'hex',
      // WorkOS sends `t=<ms>, v1=<hex>`, a space after the comma (its SDKs' "t=…, v1=…" format).
      list: { separator: ', ', assign: '=', versions: ['v1'], timestamp: 't' },
      content: [TIMESTAMP, { literal: '.' }, BODY],
      timestamp: { from: { list: true }, unit: 'milliseconds' },
    },
    identity: { eventId: { pointer: '/id' }, eventType: { pointer: '/event' } },
    evidence: { kind: 'sdk', source: '@workos-inc/node' },
  }),
  twilio: twilioPreset,
  discord: discordPreset,
  zoom: zoomPreset,
  mailgun: mailgunPreset,
  twitch: twitchPreset,
  asana: asanaPreset,
  dropbox: dropboxPreset,
  xero: xeroPreset,
  okta: oktaPreset,
} as const satisfies Record<string, Preset>;

export type PresetName = keyof typeof PRESETS;

export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];
