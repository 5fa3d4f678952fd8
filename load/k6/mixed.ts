// One run over several endpoints and providers: arrivals go round-robin over TARGETS, each an
// `endpoint,provider,SECRET_VARIABLE` entry whose secret is read from the variable it names
// (default: the three endpoints of load/README.md, stripe, things and github).
// STRIPE_SECRET=... THINGS_SECRET=... GITHUB_SECRET=... k6 run -e SCENARIO=steady -e RATE=300 load/k6/mixed.ts
import { mixedScriptSettings } from '../lib/settings.ts';
import { makeScript } from './common.ts';

const script = makeScript(mixedScriptSettings(__ENV));
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
