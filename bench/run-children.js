'use strict';
/**
 * bench/run.js's children and CPU accounting: hub and baseline servers forked on 127.0.0.1
 * (bench/hub-server.js, bench/bare-server.js, or the CLI itself), their IPC, clean-up, and
 * who used how much CPU during a step (Linux /proc).
 */
const { fork, execFileSync } = require('node:child_process');
const { mkdtempSync, rmSync, mkdirSync, readFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, resolve } = require('node:path');
const { performance } = require('node:perf_hooks');

const TOKEN = 'bench-token-0123456789abcdefghij';
const HUB_SCRIPT = join(__dirname, 'hub-server.js');
const BARE_SCRIPT = join(__dirname, 'bare-server.js');
const CPU_PROF = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : null;
const PIN = process.env.BENCH_PIN === '1';
// The CLI's flags, its start-only ones included (bench/hub-server.js turns those off once started, as the CLI does).
const HUB_V8_FLAGS =
  process.env.SPEAKERHUB_V8_DEFAULTS === '1' ? [] : [...require('../dist/cli/heap').HEAP_FLAGS, ...require('../dist/cli/heap').START_FLAGS];

// ---- CPU accounting (Linux /proc; silently absent elsewhere) -------------------------------

let CLK_TCK = 100;
try {
  CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  /* keep 100 */
}

/** CPU seconds used by the whole machine (all CPUs) so far, or null off Linux. */
function machineCpuS() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: busy = all but idle and iowait (and steal,
    // which is time the hypervisor gave to someone else, not to this machine's processes).
    return (f[0] + f[1] + f[2] + f[5] + f[6]) / CLK_TCK;
  } catch {
    return null;
  }
}

/** CPU seconds used by a process (utime + stime), or 0 when unknown. */
function processCpuS(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** Starts a CPU meter over this process and the given children; stop() says who used what. */
function cpuMeter(...kids) {
  const ours = () => processCpuS(process.pid) + kids.reduce((a, c) => a + (c ? processCpuS(c.proc.pid) : 0), 0);
  const m0 = machineCpuS();
  const o0 = ours();
  const t0 = performance.now();
  return () => {
    const wallS = (performance.now() - t0) / 1000;
    const m1 = machineCpuS();
    if (m0 === null || m1 === null) return null;
    const own = ours() - o0;
    return { wallS, ownCores: own / wallS, otherCores: Math.max(0, (m1 - m0 - own) / wallS) };
  };
}

function pin(pid, cpu) {
  if (!PIN) return;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
  } catch (e) {
    log(`taskset failed (${e.message}); running unpinned`);
  }
}

// ---- children -----------------------------------------------------------------------------

const children = new Set();
const dataDirs = new Set();

function log(msg) {
  process.stderr.write(`[bench ${(performance.now() / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);
}

class Child {
  constructor(name, script, args, execArgv = []) {
    this.name = name;
    this.output = '';
    this.stopping = false;
    this.exit = null;
    this.waiters = [];
    this.proc = fork(script, args, { execArgv, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    pin(this.proc.pid, 1);
    const keep = (d) => {
      this.output = (this.output + d).slice(-20_000);
    };
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.proc.on('message', (m) => {
      const i = this.waiters.findIndex((w) => w.type === m.type || m.type === 'error');
      if (i >= 0) {
        const [w] = this.waiters.splice(i, 1);
        clearTimeout(w.timer);
        if (m.type === 'error' && w.type !== 'error') w.reject(new Error(`${this.name}: ${m.error}`));
        else w.resolve(m);
      }
    });
    this.exited = new Promise((res) => {
      this.proc.on('exit', (code, signal) => {
        this.exit = { code, signal };
        children.delete(this);
        for (const w of this.waiters.splice(0)) {
          clearTimeout(w.timer);
          w.reject(new Error(`${this.name} exited (code ${code}, signal ${signal}) while we waited for '${w.type}'\n${this.tail()}`));
        }
        res(this.exit);
      });
    });
    children.add(this);
  }

  tail() {
    const t = this.output.trim();
    return t ? `--- ${this.name} output ---\n${t.slice(-3000)}` : '';
  }

  get crashed() {
    return this.exit !== null && !this.stopping;
  }

  waitFor(type, timeoutMs = 30_000) {
    if (this.exit) return Promise.reject(new Error(`${this.name} already exited (code ${this.exit.code})\n${this.tail()}`));
    return new Promise((resolve, reject) => {
      const w = { type, resolve, reject };
      w.timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`${this.name}: no '${type}' within ${timeoutMs} ms\n${this.tail()}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  call(msg, replyType, timeoutMs) {
    const p = this.waitFor(replyType, timeoutMs);
    this.proc.send(msg);
    return p;
  }

  async stop() {
    if (this.exit) return this.exit;
    this.stopping = true;
    try {
      this.proc.send({ cmd: 'stop' });
    } catch {
      /* channel already gone */
    }
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 6000);
    const r = await this.exited;
    clearTimeout(t);
    return r;
  }
}

async function startHub(name, speakers, { session = true, execArgv = [] } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-'));
  dataDirs.add(dataDir);
  // With the V8 flags `speakerhub hub` sets for itself (src/cli/heap.ts): the figures are those users get.
  const argv = [...HUB_V8_FLAGS, ...(process.env.BENCH_EXTRA_FLAGS ? process.env.BENCH_EXTRA_FLAGS.split(' ') : []), ...execArgv];
  if (CPU_PROF) {
    mkdirSync(CPU_PROF, { recursive: true });
    argv.push('--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`);
  }
  const child = new Child(name, HUB_SCRIPT, [JSON.stringify({ dataDir, speakers, token: TOKEN, session })], argv);
  child.dataDir = dataDir;
  child.info = await child.waitFor('ready', 60_000);
  return child;
}

async function stopHub(child) {
  if (!child) return;
  await child.stop();
  rmSync(child.dataDir, { recursive: true, force: true });
  dataDirs.delete(child.dataDir);
}

/** `node dist/cli.js hub` itself (its flags, front ends and heap settings), with a preload that reports to us. */
async function startCliHub(name, speakers) {
  const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-'));
  dataDirs.add(dataDir);
  const args = [
    'hub',
    '--virtual-speakers',
    String(speakers),
    '-d',
    dataDir,
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--mqtt-port',
    '0',
    '--log-level',
    'warn',
  ];
  const child = new Child(name, join(__dirname, '..', 'dist', 'cli.js'), args, ['--expose-gc', '-r', join(__dirname, 'cli-hub-preload.js')]);
  child.dataDir = dataDir;
  child.info = await child.waitFor('ready', 60_000);
  return child;
}

async function startBare(name, routes, execArgv = []) {
  const argv = [...execArgv];
  // Profiled like the hubs, so a hub profile can be read against the baseline's.
  if (CPU_PROF) argv.push('--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`);
  const child = new Child(name, BARE_SCRIPT, [], argv);
  child.info = await child.waitFor('ready', 15_000);
  if (routes) await child.call({ cmd: 'routes', routes }, 'routes-set', 15_000);
  return child;
}

function killAll() {
  for (const c of children) {
    try {
      c.stopping = true;
      c.proc.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
  dataDirs.clear();
}

function assertAlive(...cs) {
  for (const c of cs) if (c && c.crashed) throw new Error(`${c.name} crashed (code ${c.exit.code}, signal ${c.exit.signal})\n${c.tail()}`);
}

module.exports = { TOKEN, PIN, CPU_PROF, processCpuS, log, cpuMeter, pin, startHub, stopHub, startCliHub, startBare, killAll, assertAlive };
