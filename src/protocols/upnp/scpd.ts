import { at, child, children, escapeXml, parseXml, text } from './xml';

/**
 * A UPnP service as data (its actions and state variables): the SCPD document is written from
 * it, and a device's SOAP dispatcher checks every action and its input arguments against it
 * (401 for an action the service does not have, 402 for a missing argument). Shared by the
 * DLNA renderers and the DLNA MediaServer. The upnp driver reads one thing of a renderer's
 * SCPD: the Volume range (parseVolumeRange).
 */

export interface StateVariable {
  name: string;
  type: 'string' | 'ui4' | 'i4' | 'ui2' | 'boolean';
  events?: boolean;
  allowed?: readonly string[];
  range?: { min: number; max: number; step: number };
}

export interface Action {
  name: string;
  /** Argument name → related state variable. */
  in: Record<string, string>;
  out: Record<string, string>;
}

export interface ServiceSpec<Name extends string = string> {
  name: Name;
  type: string;
  id: string;
  actions: Action[];
  variables: StateVariable[];
}

/** The SCPD document of a service. */
export function buildScpd(s: ServiceSpec): string {
  const args = (a: Action) =>
    [...Object.entries(a.in).map(([n, v]) => ({ n, v, dir: 'in' })), ...Object.entries(a.out).map(([n, v]) => ({ n, v, dir: 'out' }))]
      .map((x) => `<argument><name>${x.n}</name><direction>${x.dir}</direction><relatedStateVariable>${x.v}</relatedStateVariable></argument>`)
      .join('');
  const actions = s.actions
    .map(
      (a) =>
        `<action><name>${a.name}</name>${Object.keys(a.in).length + Object.keys(a.out).length ? `<argumentList>${args(a)}</argumentList>` : ''}</action>`,
    )
    .join('\n');
  const variables = s.variables
    .map((v) => {
      const allowed = v.allowed
        ? `<allowedValueList>${v.allowed.map((x) => `<allowedValue>${escapeXml(x)}</allowedValue>`).join('')}</allowedValueList>`
        : '';
      const range = v.range
        ? `<allowedValueRange><minimum>${v.range.min}</minimum><maximum>${v.range.max}</maximum><step>${v.range.step}</step></allowedValueRange>`
        : '';
      return `<stateVariable sendEvents="${v.events ? 'yes' : 'no'}"><name>${v.name}</name><dataType>${v.type}</dataType>${allowed}${range}</stateVariable>`;
    })
    .join('\n');
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    '<scpd xmlns="urn:schemas-upnp-org:service-1-0"><specVersion><major>1</major><minor>0</minor></specVersion>\n' +
    `<actionList>\n${actions}\n</actionList>\n<serviceStateTable>\n${variables}\n</serviceStateTable></scpd>\n`
  );
}

/** The service's action of that name (undefined: the caller answers 401 Invalid Action). */
export function findAction(spec: ServiceSpec, name: string): Action | undefined {
  return spec.actions.find((a) => a.name === name);
}

/** The Volume state variable's range from a RenderingControl SCPD; most renderers say 0–100. */
export function parseVolumeRange(scpd: string): { min: number; max: number } | undefined {
  const vars = children(at(parseXml(scpd), 'scpd', 'serviceStateTable'), 'stateVariable');
  const volume = vars.find((v) => text(child(v, 'name')) === 'Volume');
  const range = child(volume, 'allowedValueRange');
  const min = Number(text(child(range, 'minimum')));
  const max = Number(text(child(range, 'maximum')));
  if (!range || !Number.isFinite(min) || !Number.isFinite(max) || max <= min) return undefined;
  return { min, max };
}
