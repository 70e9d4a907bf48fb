import { responseShape } from '../docs/markdown';
import type { DriverDefinition } from '../drivers/definition';
import { DRIVERS } from '../drivers/registry';
import { OPERATIONS, type Operation } from '../operations/table';
import { UNIVERSAL_NODE } from './universal-node';
import { CATEGORY, generatedOperations, OPERATIONS_CATEGORY, operationNodeType } from './operation-nodes';
import { operationParams, stringPayloadParam } from './params';

/**
 * The editor side of the operation nodes, generated from the operation table (like the
 * docs/rest-api.md's tables; operations with a hand-written node, DEDICATED_NODES, are left out):
 * nodes/speakerhub-operations.html registers every type by a loop over
 * the table's names and holds one edit template per type; nodes/locales/en-US/
 * speakerhub-operations.html holds their help. `npm run nodered:gen` writes both;
 * test/nodered/editor.lab.test.ts fails when they are stale.
 */

const GENERATED = '<!-- Generated from src/operations/table.ts by scripts/gen-nodered.js (npm run nodered:gen): do not edit. -->';

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function optional(op: Operation, p: string): boolean {
  return op.params.shape[p].safeParse(undefined).success;
}

/** How the editor asks for a parameter: speaker and media dropdowns instead of 14/19-digit IDs. */
function input(op: Operation, p: string): string {
  const id = `node-input-${p}`;
  switch (p) {
    case 'DeviceID':
      return `<select id="${id}" data-speakerhub-options="speakers" style="width:70%"></select>`;
    case 'DeviceIDList':
      return `<select id="${id}" data-speakerhub-options="speakers" multiple size="4" style="width:70%"></select>`;
    case 'PersistentID':
      return `<select id="${id}" data-speakerhub-options="media" style="width:70%"></select>`;
    case 'Volume':
      return `<input type="number" id="${id}" min="0" max="50" step="1" placeholder="0–50" style="width:100px">`;
    case 'Priority':
      return `<input type="number" id="${id}" step="1" placeholder="100" style="width:100px">`;
    default:
      return `<input type="text" id="${id}" placeholder="${optional(op, p) ? '(optional)' : ''}" style="width:70%">`;
  }
}

function template(op: Operation): string {
  const rows = operationParams(op).map((p) => `  <div class="form-row"><label for="node-input-${p}">${p}</label>${input(op, p)}</div>`);
  return [
    `<script type="text/html" data-template-name="${operationNodeType(op)}">`,
    `  <div class="form-row"><label for="node-input-hub"><i class="fa fa-server"></i> Hub</label><input type="text" id="node-input-hub"></div>`,
    ...rows,
    `  <div class="form-row"><label for="node-input-name"><i class="fa fa-tag"></i> Name</label><input type="text" id="node-input-name" placeholder="${op.name}"></div>`,
    `  <div class="form-row"><label for="node-input-errorOutput">&nbsp;</label><input type="checkbox" id="node-input-errorOutput" style="width:auto; margin:0 6px 0 0"><label for="node-input-errorOutput" style="width:auto">Send failures to a second output</label></div>`,
    ...(rows.length
      ? [
          `  <div class="form-tips">msg.payload overrides these: an object by parameter name${stringPayloadParam(op) ? `, or a string for ${stringPayloadParam(op)}` : ''}.</div>`,
        ]
      : []),
    `</script>`,
  ].join('\n');
}

/** nodes/speakerhub-operations.html */
export function operationsEditorHtml(): string {
  const ops = generatedOperations().map((op) => ({ name: op.name, params: operationParams(op) }));
  return [
    GENERATED,
    '<script type="text/javascript">',
    '(function () {',
    `  var OPERATIONS = ${JSON.stringify(ops)};`,
    '  OPERATIONS.forEach(function (op) {',
    "    var defaults = { name: { value: '' }, hub: { value: '', type: 'speakerhub-config' }, errorOutput: { value: false }, outputs: { value: 1 } };",
    "    op.params.forEach(function (p) { defaults[p] = { value: p === 'DeviceIDList' ? [] : '' }; });",
    "    RED.nodes.registerType('speakerhub-' + op.name, {",
    `      category: ${JSON.stringify(OPERATIONS_CATEGORY)},`,
    "      color: '#8FC1E3',",
    '      defaults: defaults,',
    '      inputs: 1,',
    '      outputs: 1,',
    "      outputLabels: function (i) { return i === 0 ? 'response' : 'failure'; },",
    "      icon: 'speakerhub.svg',",
    "      paletteLabel: op.name.replace(/_/g, ' '),",
    '      label: function () { return this.name || op.name; },',
    "      labelStyle: function () { return this.name ? 'node_label_italic' : ''; },",
    '      oneditprepare: function () { window.SpeakerHubEditor.prepare(this, op.params); },',
    "      oneditsave: function () { this.outputs = $('#node-input-errorOutput').prop('checked') ? 2 : 1; }",
    '    });',
    '  });',
    '})();',
    '</script>',
    '',
    ...generatedOperations().map(template),
    '',
  ].join('\n');
}

function help(op: Operation): string {
  const params = operationParams(op);
  const text = stringPayloadParam(op);
  const props = params
    .map((p) => `    <dt${optional(op, p) ? ' class="optional"' : ''}>${p} <span class="property-type">string</span></dt>`)
    .join('\n');
  return [
    `<script type="text/html" data-help-name="${operationNodeType(op)}">`,
    `  <p>${esc(op.summary)}</p>`,
    `  <p>Runs the <code>${op.name}</code> operation on the hub of the selected config node (which owns the session).</p>`,
    '  <h3>Inputs</h3>',
    '  <dl class="message-properties">',
    params.length
      ? `    <dt class="optional">payload <span class="property-type">object${text ? ' | string' : ''}</span></dt>\n    <dd>Parameters by API name, overriding the node's settings${text ? `; a string is the ${text}` : ''}. An http-in node's query works as is.</dd>`
      : '    <dt class="optional">payload</dt><dd>Ignored: the operation takes no parameters.</dd>',
    '  </dl>',
    ...(params.length ? ['  <h3>Parameters</h3>', '  <dl class="message-properties">', props, '  </dl>'] : []),
    '  <h3>Outputs</h3>',
    '  <dl class="message-properties">',
    `    <dt>payload <span class="property-type">object</span></dt><dd>The response, exactly as REST answers: <code>${esc(responseShape(op))}</code></dd>`,
    '  </dl>',
    '  <h3>Errors</h3>',
    '  <p>A failure shows in a red status. With <i>Send failures to a second output</i> ticked, the message goes out of that output',
    "  with <code>msg.payload</code> the error as REST answers it (<code>{Result: 'false', ErrorCode, ErrorMessage}</code>) and <code>msg.error</code>",
    '  (<code>message</code>, <code>code</code>), so a flow can answer (e.g. <code>http in</code> → node → <code>http response</code> never hangs).',
    "  Otherwise nothing is sent and the node reports it to a catch node with <code>msg.error.code</code> set to the hub's error code",
    `  (e.g. <code>InvalidParameter</code>, <code>DeviceNotFound</code>; <code>HubUnreachable</code> when the hub cannot be reached).</p>`,
    '</script>',
  ].join('\n');
}

/** nodes/locales/en-US/speakerhub-operations.html */
export function operationsHelpHtml(): string {
  return [GENERATED, ...generatedOperations().map(help), ''].join('\n');
}

/** nodes/speakerhub.html: the universal node, its operation list from the table. */
export function universalEditorHtml(): string {
  const names = OPERATIONS.map((op) => op.name);
  return [
    GENERATED,
    '<script type="text/javascript">',
    '(function () {',
    `  var OPERATIONS = ${JSON.stringify(names)};`,
    `  RED.nodes.registerType('${UNIVERSAL_NODE}', {`,
    `    category: ${JSON.stringify(CATEGORY)},`,
    "    color: '#8FC1E3',",
    "    defaults: { name: { value: '' }, hub: { value: '', type: 'speakerhub-config' }, operation: { value: 'playback_status' }, errorOutput: { value: false }, outputs: { value: 1 } },",
    '    inputs: 1,',
    '    outputs: 1,',
    "    outputLabels: function (i) { return i === 0 ? 'response' : 'failure'; },",
    "    icon: 'speakerhub.svg',",
    "    paletteLabel: 'speakerhub',",
    "    label: function () { return this.name || this.operation || 'speakerhub'; },",
    "    labelStyle: function () { return this.name ? 'node_label_italic' : ''; },",
    '    oneditprepare: function () {',
    "      var select = $('#node-input-operation');",
    "      OPERATIONS.forEach(function (n) { select.append($('<option></option>').val(n).text(n.replace(/_/g, ' '))); });",
    '      select.val(this.operation);',
    '    },',
    "    oneditsave: function () { this.outputs = $('#node-input-errorOutput').prop('checked') ? 2 : 1; }",
    '  });',
    '})();',
    '</script>',
    '',
    `<script type="text/html" data-template-name="${UNIVERSAL_NODE}">`,
    '  <div class="form-row"><label for="node-input-hub"><i class="fa fa-server"></i> Hub</label><input type="text" id="node-input-hub"></div>',
    '  <div class="form-row"><label for="node-input-operation"><i class="fa fa-play"></i> Operation</label><select id="node-input-operation" style="width:70%"></select></div>',
    '  <div class="form-row"><label for="node-input-name"><i class="fa fa-tag"></i> Name</label><input type="text" id="node-input-name"></div>',
    '  <div class="form-row"><label for="node-input-errorOutput">&nbsp;</label><input type="checkbox" id="node-input-errorOutput" style="width:auto; margin:0 6px 0 0"><label for="node-input-errorOutput" style="width:auto">Send failures to a second output</label></div>',
    '  <div class="form-tips">msg.topic, when it names an operation, runs that one instead; msg.payload holds its parameters by API name (or a string for Text/MediaUrl).</div>',
    '</script>',
    '',
  ].join('\n');
}

/** nodes/locales/en-US/speakerhub.html */
export function universalHelpHtml(): string {
  return [
    GENERATED,
    `<script type="text/html" data-help-name="${UNIVERSAL_NODE}">`,
    '  <p>Runs any hub operation: the one named by <code>msg.topic</code>, else the one chosen in the editor.</p>',
    '  <h3>Inputs</h3>',
    '  <dl class="message-properties">',
    '    <dt class="optional">topic <span class="property-type">string</span></dt><dd>An operation name (<code>set_volume</code>, <code>play_tts_party_mode</code>, <code>announce</code> …) to run instead of the chosen one.</dd>',
    '    <dt class="optional">payload <span class="property-type">object | string</span></dt><dd>The parameters by API name (<code>{"Volume": 20}</code>); a string is the Text or MediaUrl. An http-in query works as is.</dd>',
    '  </dl>',
    '  <h3>Outputs</h3>',
    '  <dl class="message-properties">',
    '    <dt>payload <span class="property-type">object</span></dt><dd>The operation\'s response, exactly as REST answers it.</dd>',
    '  </dl>',
    '  <h3>Errors</h3>',
    '  <p>As the operation nodes: a red status; with <i>Send failures to a second output</i> the message goes out there with <code>msg.payload</code> the REST error body and <code>msg.error</code>, else catch nodes get it with <code>msg.error.code</code>. An unknown operation is <code>UnknownOperation</code>.</p>',
    '</script>',
    '',
  ].join('\n');
}

// ---- the config node's driver choice (nodes/speakerhub-config.html) ---------------------------

const DRIVERS_BLOCK = /<!-- generated:drivers[^>]*-->[\s\S]*?<!-- \/generated:drivers -->/;

/** What a driver is, for the choice list: its registry summary's first clause, without lists of examples when long. */
function driverLabel(summary: string): string {
  let text = summary.split(';')[0].trim();
  if (text.length > 60) text = text.replace(/\s*\([^)]*,[^)]*\)/g, '');
  if (text.length > 60) text = text.split(',')[0];
  return text.trim();
}

/**
 * The embedded hub's drivers as a list of ticks, one per driver of the registry (a new driver
 * is a new tick; nothing here is hand-written). The ticks write the comma list into the hidden
 * `drivers` input, the property the runtime reads (embedded-config.ts), as flows always stored it.
 */
export function driverChoicesHtml(): string {
  const rows = (DRIVERS as readonly DriverDefinition[]).map(
    (d) =>
      `      <label class="speakerhub-driver" style="display:block; width:auto; margin:0 0 4px 0"><input type="checkbox" value="${esc(d.name)}" style="width:auto; margin:0 6px 0 0; vertical-align:baseline"><b>${esc(d.name)}</b> <span style="opacity:.75">${esc(driverLabel(d.summary))}</span></label>`,
  );
  return [
    '<!-- generated:drivers (from src/drivers/registry.ts by npm run nodered:gen: do not edit) -->',
    '    <div class="form-row"><label>Drivers</label>',
    '      <div id="speakerhub-drivers" style="display:inline-block; width:calc(100% - 110px); vertical-align:top">',
    ...rows,
    '      </div><input type="hidden" id="node-config-input-drivers"></div>',
    '    <!-- /generated:drivers -->',
  ].join('\n');
}

/** nodes/speakerhub-config.html with its driver block regenerated (the rest of the file is hand-written). */
export function configEditorHtml(current: string): string {
  if (!DRIVERS_BLOCK.test(current)) throw new Error('nodes/speakerhub-config.html has no <!-- generated:drivers --> block');
  return current.replace(DRIVERS_BLOCK, () => driverChoicesHtml());
}
