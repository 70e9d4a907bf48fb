/**
 * The architecture rule in eslint.config.js: the hub core imports no front end (REST server,
 * MQTT, cloud, Node-RED, HomeKit, CLI, client) and no front-end library; front ends may
 * import the core.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..');
const ESLINT = path.join(ROOT, 'node_modules/eslint/bin/eslint.js');

/** Lints `code` as if it were `file`, with the project's config (eslint runs as the CLI: it loads its config as ESM). */
function problems(file: string, code: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [ESLINT, '--stdin', '--stdin-filename', file, '--format', 'json'],
      { cwd: ROOT, timeout: 60_000 },
      (err, stdout, stderr) => {
        try {
          const [result] = JSON.parse(stdout) as { messages: { ruleId: string; message: string }[] }[];
          resolve(result.messages.map((m) => `${m.ruleId}: ${m.message}`));
        } catch {
          reject(new Error(`eslint failed: ${err?.message ?? ''} ${stderr}`));
        }
      },
    );
    child.stdin!.end(code);
  });
}

const FORBIDDEN = [
  "import { RestServer } from '../server/rest-server';",
  "import { b } from '../mqtt/bridge';",
  "import { c } from '../cloud';",
  "import { d } from '../../nodes/speaker';",
  "import { e } from '../homebridge/platform';",
  "import { f } from '../extensions/extension';",
  "import Fastify from 'fastify';",
  "import * as mqtt from 'mqtt';",
];

test('src/core refuses every front-end import', async () => {
  const code = `${FORBIDDEN.join('\n')}\nexport const all = [RestServer, b, c, d, e, f, Fastify, mqtt];\n`;
  const found = await problems('src/core/probe.ts', code);
  for (const line of FORBIDDEN) {
    const spec = /from '([^']+)'/.exec(line)![1];
    expect(found.filter((p) => p.startsWith(`no-restricted-imports: '${spec}'`)).length).toBeGreaterThan(0);
  }
});

test('the core may import the core; a front end may import the core and the shared modules', async () => {
  expect(await problems('src/core/probe.ts', "import { HubError } from './errors';\nexport const y = HubError;\n")).toEqual([]);
  const shared = [
    "import { HubError } from '../core/errors';",
    "import { SpeakerHubClient } from '../rest-client/client';",
    "import { operationRoutes } from '../http/operation-routes';",
    "import { LINK_PATH } from '../protocols/cloud-link';",
    "import { lazyExtension } from '../extensions/lazy';",
    "import Fastify from 'fastify';",
  ];
  const names = shared.map((l) => /import \{? ?(\w+)/.exec(l)![1]);
  expect(await problems('src/server/probe.ts', `${shared.join('\n')}\nexport const all = [${names.join(', ')}];\n`)).toEqual([]);
});

test('front ends are siblings: none imports another (their CLI registrars compose and may)', async () => {
  const others = [
    "import { b } from '../mqtt/bridge';",
    "import { c } from '../cloud/server';",
    "import { e } from '../homebridge/platform';",
    "import { n } from '../nodered/config-node';",
  ];
  const found = await problems('src/server/probe.ts', `${others.join('\n')}\nexport const all = [b, c, e, n];\n`);
  for (const line of others) {
    const spec = /from '([^']+)'/.exec(line)![1];
    expect(found.filter((p) => p.startsWith(`no-restricted-imports: '${spec}'`)).length).toBeGreaterThan(0);
  }
  expect(await problems('src/cloud-link/probe.ts', "import { CloudServer } from '../cloud/server';\nexport const x = CloudServer;\n")).not.toEqual(
    [],
  );
  expect(await problems('src/mqtt/cli-options.ts', "import { CloudServer } from '../cloud/server';\nexport const x = CloudServer;\n")).toEqual([]);
});

/** The other layers' boundaries (eslint.config.js `layer(...)`): each rule fails on a violating import. */
const LAYER_CASES: { file: string; bad: string[]; good: string[] }[] = [
  {
    file: 'src/operations/probe.ts',
    bad: ["import { a } from '../drivers/upnp/driver';", "import { b } from '../mqtt/bridge';", "import { c } from '../hub';"],
    good: ["import { HubError } from '../core/errors';", "import { unquote } from '../util/values';"],
  },
  {
    file: 'src/drivers/squeezebox/probe.ts',
    bad: [
      "import { a } from '../../operations/table';",
      "import { b } from '../../server/rest-server';",
      "import { c } from '../upnp/soap';",
      "import { d } from '../../hub-config';",
    ],
    good: [
      "import { BaseSpeaker } from '../base-speaker';",
      "import { defineDriver } from '../definition';",
      "import { digitId } from '../driver';",
      "import { clampVolume } from '../../core/volume-range';",
      "import { frame } from './frames';",
    ],
  },
  {
    file: 'src/hub-client/probe.ts',
    bad: ["import { a } from '../mqtt/bridge';", "import { b } from '../homebridge/platform';", "import { c } from '../dlna/extension';"],
    good: [
      "import { SpeakerHubClient } from '../rest-client/client';",
      "import { OPERATIONS } from '../operations/table';",
      "import { Backoff } from '../util/backoff';",
    ],
  },
  {
    file: 'src/media/probe.ts',
    bad: ["import { a } from '../server/rest-server';", "import { b } from '../drivers/driver';", "import { c } from '../operations/table';"],
    good: ["import { LimitedLog } from '../logging/limited-log';", "import { isLoopback } from '../net/connection-limits';"],
  },
  {
    // src/util: nothing of the hub, only node: modules and npm packages.
    file: 'src/util/probe.ts',
    bad: [
      "import { a } from '../core/errors';",
      "import { b } from '../net/port';",
      "import { c } from '../logger';",
      "import { d } from '../../test/helpers/docs';",
    ],
    good: ["import { Backoff } from './backoff';", "import { randomBytes } from 'node:crypto';", "import { z } from 'zod';"],
  },
  {
    // src/net: util and the logger only.
    file: 'src/net/probe.ts',
    bad: [
      "import { a } from '../core/errors';",
      "import { b } from '../media/cache-trimmer';",
      "import { c } from '../server/rest-server';",
      "import { d } from '../hub';",
    ],
    good: [
      "import { Backoff } from '../util/backoff';",
      "import { LimitedLog } from '../logging/limited-log';",
      "import { createLogger } from '../logger';",
      "import { freePort } from './port';",
    ],
  },
  {
    // src/tts: util, net, media, the logger and the hub's typed errors; no core beyond them, no driver, no front end.
    file: 'src/tts/probe.ts',
    bad: [
      "import { a } from '../core/hub-core';",
      "import { b } from '../drivers/driver';",
      "import { c } from '../server/rest-server';",
      "import { d } from '../operations/table';",
      "import { e } from '../hub-config';",
    ],
    good: [
      "import { HubError } from '../core/errors';",
      "import { audioDuration } from '../media/duration';",
      "import { messageOf } from '../util/error-message';",
      "import { isLoopback } from '../net/connection-limits';",
      "import { createLogger } from '../logger';",
      "import { EspeakProvider } from './espeak';",
    ],
  },
  {
    // src/audio: audio processing apart from the library: util, the logger and redact only.
    file: 'src/audio/probe.ts',
    bad: [
      "import { a } from '../media/library';",
      "import { b } from '../core/errors';",
      "import { c } from '../drivers/driver';",
      "import { d } from '../tts/service';",
    ],
    good: [
      "import { messageOf } from '../util/error-message';",
      "import { createLogger } from '../logger';",
      "import { redactUrl } from '../redact';",
      "import { decodeWav } from './pcm-wav';",
    ],
  },
  {
    // src/protocols, one folder down: its siblings, other protocols, util, net and the logger; nothing of the hub.
    file: 'src/protocols/upnp/probe.ts',
    bad: [
      "import { a } from '../../core/clock';",
      "import { b } from '../../drivers/driver';",
      "import { c } from '../../dlna/extension';",
      "import { d } from '../../server/rest-server';",
      "import { e } from '../../hub-config';",
      "import { f } from '../../../test/helpers/wait';",
    ],
    good: [
      "import { parseXml } from './xml';",
      "import { LINK_PATH } from '../cloud-link';",
      "import { createLogger } from '../../logger';",
      "import { LimitedLog } from '../../logging/limited-log';",
      "import { TokenBucket } from '../../net/token-bucket';",
      "import { Backoff } from '../../util/backoff';",
    ],
  },
  {
    // src/protocols, top level: the same leaves.
    file: 'src/protocols/probe.ts',
    bad: ["import { a } from '../core/errors';", "import { b } from '../drivers/driver';", "import { c } from '../mqtt/bridge';"],
    good: [
      "import { createLogger } from '../logger';",
      "import { TokenBucket } from '../net/token-bucket';",
      "import { parseXml } from './upnp/xml';",
    ],
  },
  {
    // src/http: the REST helpers the HTTP front ends share; no front end, no driver.
    file: 'src/http/probe.ts',
    bad: [
      "import { a } from '../server/rest-server';",
      "import { b } from '../cloud/server';",
      "import { c } from '../drivers/driver';",
      "import { d } from '../hub-config';",
    ],
    good: [
      "import { HubError } from '../core/errors';",
      "import { OPERATIONS } from '../operations/table';",
      "import { clip } from '../redact';",
      "import { isLoopback } from '../net/connection-limits';",
    ],
  },
];

test.each(LAYER_CASES)('$file: the layer refuses what it must not know and takes what it may', async ({ file, bad, good }) => {
  const names = (lines: string[]) => lines.map((l) => /import \{ (\w+) \}/.exec(l)![1]);
  const found = await problems(file, `${bad.join('\n')}\nexport const all = [${names(bad).join(', ')}];\n`);
  for (const line of bad) {
    const spec = /from '([^']+)'/.exec(line)![1];
    expect(found.filter((p) => p.startsWith(`no-restricted-imports: '${spec}'`)).length).toBeGreaterThan(0);
  }
  expect(await problems(file, `${good.join('\n')}\nexport const all = [${names(good).join(', ')}];\n`)).toEqual([]);
});

test('`any` is an error in src/ (tests may read untyped JSON with it)', async () => {
  const code = 'export function f(x: any): unknown {\n  return x;\n}\n';
  expect((await problems('src/core/probe.ts', code)).some((p) => p.startsWith('@typescript-eslint/no-explicit-any'))).toBe(true);
  expect(await problems('test/probe.test.ts', code)).toEqual([]);
});

test('no file over 500 lines', async () => {
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `export const v${i} = ${i};`).join('\n') + '\n';
  expect((await problems('src/util/probe.ts', lines(501))).filter((p) => p.startsWith('max-lines:'))).toHaveLength(1);
  expect((await problems('src/util/probe.ts', lines(500))).filter((p) => p.startsWith('max-lines:'))).toHaveLength(0);
});
