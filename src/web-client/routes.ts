import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';

/**
 * The browser sample client (plain HTML/CSS/JS in the package's web/client folder, no build
 * step), served at `/` by the local hub and by the cloud. `/client/config.json` tells the
 * page which server it is on: the local hub (sign in with the API token or the pub/sub keys
 * over MQTT-over-WebSocket) or the cloud (authorization code + PKCE).
 */
const FILES: Record<string, string> = {
  '/': 'index.html',
  // The page's scripts, one file per part (index.html loads them in order): each adds what it holds to window.SpeakerHubPage.
  ...Object.fromEntries(
    [
      'page.js',
      'signin.js',
      'api.js',
      'views/model.js',
      'views/speakers.js',
      'views/now-playing.js',
      'views/announce.js',
      'events.js',
      'lifecycle.js',
      'app.js',
      'mqtt-transport.js',
    ].map((f) => [`/client/${f}`, f]),
  ),
  '/client/style.css': 'style.css',
  // Browsers ask for it on every page; answered (an SVG), not refused as a request without a token.
  '/favicon.ico': 'favicon.svg',
};
/** mqtt.js's browser bundle, served from the installed package (the page loads nothing from elsewhere). */
const MQTT_BUNDLE_PATH = '/client/mqtt.min.js';
/** The hub's read model (src/hub-client/read-model-state.ts) as the page loads it: window.SpeakerHubReadModel. */
export const READ_MODEL_PATH = '/client/read-model.js';
const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

/** Paths the client is served at; they need no token (the page holds no secret). */
export const BROWSER_CLIENT_PATHS: ReadonlySet<string> = new Set([...Object.keys(FILES), MQTT_BUNDLE_PATH, READ_MODEL_PATH, '/client/config.json']);

function clientDir(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, 'web', 'client');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    if (dirname(dir) === dir) throw new Error('the browser client files (web/client) are missing from the package');
  }
}

function mqttBundleFile(): string {
  return join(dirname(require.resolve('mqtt/package.json')), 'dist', 'mqtt.min.js');
}

/**
 * The read model's state module, compiled, wrapped for a plain <script>: the page runs the very
 * rules the hub's front ends run, with no bundler. The module has only type imports (erased),
 * so its CommonJS output needs nothing but an `exports` object. From the package it is the
 * file tsc emitted beside this one (dist/hub-client); run from the TypeScript sources (tests,
 * ts-node) it is compiled here, the same way.
 */
export async function readModelScript(): Promise<string> {
  const base = join(__dirname, '..', 'hub-client', 'read-model-state');
  let js: string;
  if (existsSync(`${base}.js`)) js = await readFile(`${base}.js`, 'utf8');
  else {
    const ts = await import('typescript');
    js = ts.transpileModule(await readFile(`${base}.ts`, 'utf8'), {
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS },
    }).outputText;
  }
  // Its source map is not served; a require() would mean a runtime import crept in, which no browser can load.
  js = js.replace(/^\/\/# sourceMappingURL=.*$/m, '');
  if (/\brequire\(/.test(js)) throw new Error('src/hub-client/read-model-state.ts must import types only: the browser page loads it as it is');
  return `// SpeakerHub's read model (src/hub-client/read-model-state.ts, compiled), for the browser page.\n(function () {\nvar exports = {};\n${js}\nwindow.SpeakerHubReadModel = exports;\n})();\n`;
}

export function registerBrowserClient(app: FastifyInstance, config: () => Record<string, unknown>): void {
  const dir = clientDir();
  const send = (path: string, type: string, body: () => Buffer | Promise<Buffer>) =>
    app.get(path, async (_req, reply) =>
      reply
        .header('content-type', type)
        .header('cache-control', 'no-cache')
        .header('x-content-type-options', 'nosniff')
        // 'self' in connect-src also allows ws:/wss: to this origin (MQTT over WebSocket at /mqtt).
        .header('content-security-policy', "default-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
        .send(await body()),
    );
  for (const [path, file] of Object.entries(FILES)) {
    const body = readFileSync(join(dir, file));
    send(path, TYPES[file.split('.').pop()!], () => body);
  }
  // ~370 KB: read on first use, not at every server start.
  let bundle: Buffer | undefined;
  send(MQTT_BUNDLE_PATH, TYPES.js, () => (bundle ??= readFileSync(mqttBundleFile())));
  let readModel: Promise<Buffer> | undefined;
  send(
    READ_MODEL_PATH,
    TYPES.js,
    () =>
      (readModel ??= readModelScript().then(
        (js) => Buffer.from(js),
        (e: unknown) => {
          readModel = undefined; // asked again next time, not failed for good
          throw e;
        },
      )),
  );
  app.get('/client/config.json', async (_req, reply) => reply.header('cache-control', 'no-store').send(config()));
}
