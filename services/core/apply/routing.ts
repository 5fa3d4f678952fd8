import type { Route } from '../destinations/routes.ts';
import { HookgateError } from '../errors.ts';
import { EventUnusable, type InboxEvent, type RouteEvent } from '../handlers/types.ts';

// What a handler's route() does: it writes nothing itself. Each call is checked against the
// endpoint's loaded destinations and kept beside its event; the engine writes the deliveries of
// the events that applied, in the apply's transaction, so a route exists only if its event's
// apply commits (a savepoint rolled back, or a batch rerun event by event, drops it with the
// event's other writes). A route names a destination of the configuration, never a URL: what
// the payload says cannot choose where anything is sent.

/** Names shown in an error are the handler's (perhaps the payload's) text: bounded. */
const SHOWN = 100;
const shown = (text: string): string =>
  JSON.stringify(text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text);

/** The destinations a handler may route to: those with `routedBy: handler`. */
export function routableNames(routes: readonly Route[] | undefined): string[] {
  return (routes ?? []).filter((route) => route.settings.routedBy === 'handler').map((route) => route.name);
}

function refusal(
  endpoint: string,
  routes: readonly Route[] | undefined,
  destination: unknown,
): EventUnusable {
  const routable = routableNames(routes);
  const choices =
    routable.length === 0
      ? 'it has none (a destination with routedBy: handler)'
      : `they are ${routable.join(', ')}`;
  const name = typeof destination === 'string' ? shown(destination) : `a ${typeof destination}`;
  const filtered = routes?.some((route) => route.name === destination);
  return new EventUnusable(
    'route_destination_unknown',
    filtered
      ? `the handler routed the event to destination ${name} of endpoint ${endpoint}, which receives events through its filter (routedBy: filter), not from a handler; the destinations a handler routes to say routedBy: handler, and ${choices}`
      : `the handler routed the event to destination ${name}, which endpoint ${endpoint} does not have; a handler routes only to the endpoint's destinations with routedBy: handler, and ${choices}`,
  );
}

/**
 * The route() a handler gets for a pass over `events`: each call records, for its event, a
 * destination of `routes` that is routed by the handler (`into[n]` for the n-th event).
 */
export function collectingRouter(
  endpoint: string,
  routes: readonly Route[] | undefined,
  events: readonly InboxEvent[],
  into: string[][],
): RouteEvent {
  const position = new Map(events.map((event, n) => [event.eventId, n]));
  const routable = new Set(routableNames(routes));
  return (event, destination) => {
    const n = position.get(event?.eventId);
    if (n === undefined) {
      throw new HookgateError(
        'route_event_unknown',
        `the handler routed event ${shown(String(event?.eventId))}, which is not being applied here: a handler routes only the events it was given`,
      );
    }
    if (typeof destination !== 'string' || !routable.has(destination))
      throw refusal(endpoint, routes, destination);
    const routed = into[n]!;
    if (!routed.includes(destination)) routed.push(destination);
  };
}
