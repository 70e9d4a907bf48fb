import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** Why mosquitto cannot run here (undefined when it can). */
export function mosquittoUnavailable(): string | undefined {
  for (const cmd of ['mosquitto', 'mosquitto_passwd', 'openssl']) {
    try {
      execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    } catch {
      return `${cmd} is not installed (Debian package mosquitto)`;
    }
  }
  return undefined;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** docs/mqtt.md's example (a copy of its ACL): the hub, a controller that commands, a viewer that only reads. */
export const USERS = {
  speakerhub: 'hub-password-0123456789',
  controller: 'controller-password-0123',
  viewer: 'viewer-password-01234567',
  homeassistant: 'ha-password-0123456789ab',
};
export const ACL = `# the hub: everything under its base topic, the channel, Home Assistant discovery
user speakerhub
topic readwrite speakerhub/#
topic readwrite homeassistant/#

# a client that commands: the channel, bridge requests, speaker set/get; reads everything
user controller
topic readwrite speakerhub/channel
topic write speakerhub/bridge/request/#
topic write speakerhub/+/set
topic write speakerhub/+/get
topic read speakerhub/#

# a client that only watches
user viewer
topic read speakerhub/#

# Home Assistant: discovery configs and its birth message, speaker states, set and bridge requests
user homeassistant
topic read homeassistant/#
topic write homeassistant/status
topic read speakerhub/#
topic write speakerhub/+/set
topic write speakerhub/bridge/request/#
`;

/**
 * A private mosquitto on a loopback port with a password file, an ACL and persistence (so the
 * hub's persistent session survives a restart), started and stopped by the test.
 */
export class Mosquitto {
  readonly dir = mkdtempSync(join(tmpdir(), 'speakerhub-mosquitto-'));
  private proc?: ChildProcess;
  port = 0;

  /** tls: an mqtts listener with a certificate for 127.0.0.1 signed by a CA made here (`caFile`). */
  constructor(private readonly options: { tls?: boolean } = {}) {}

  get caFile(): string {
    return join(this.dir, 'ca.crt');
  }

  /** A throwaway CA and a server certificate for IP 127.0.0.1 (openssl). */
  private makeCertificates(): string[] {
    const d = this.dir;
    const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=SpeakerHub test CA',
      '-keyout',
      join(d, 'ca.key'),
      '-out',
      join(d, 'ca.crt'),
    );
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', join(d, 'server.key'), '-out', join(d, 'server.csr'));
    writeFileSync(join(d, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
    ssl(
      'x509',
      '-req',
      '-in',
      join(d, 'server.csr'),
      '-CA',
      join(d, 'ca.crt'),
      '-CAkey',
      join(d, 'ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      join(d, 'san.ext'),
      '-out',
      join(d, 'server.crt'),
    );
    return [`cafile ${join(d, 'ca.crt')}`, `certfile ${join(d, 'server.crt')}`, `keyfile ${join(d, 'server.key')}`];
  }

  async start(): Promise<void> {
    if (!this.port) {
      this.port = await freePort();
      const passwd = join(this.dir, 'passwd');
      writeFileSync(passwd, '');
      for (const [user, pass] of Object.entries(USERS)) execFileSync('mosquitto_passwd', ['-b', passwd, user, pass]);
      writeFileSync(join(this.dir, 'acl'), ACL);
      writeFileSync(
        join(this.dir, 'mosquitto.conf'),
        [
          'per_listener_settings false',
          'allow_anonymous false',
          `password_file ${passwd}`,
          `acl_file ${join(this.dir, 'acl')}`,
          'persistence true',
          `persistence_location ${this.dir}/`,
          'autosave_interval 1',
          'set_tcp_nodelay true',
          'max_packet_size 262144',
          'max_queued_messages 1000',
          `log_dest file ${join(this.dir, 'mosquitto.log')}`,
          'log_type error',
          'log_type warning',
          `listener ${this.port} 127.0.0.1`,
          ...(this.options.tls ? this.makeCertificates() : []),
          '',
        ].join('\n'),
      );
      // As root, mosquitto drops to its own user: it must read its files and write persistence.
      if (userInfo().uid === 0) {
        const uid = Number(execFileSync('id', ['-u', 'mosquitto']).toString());
        const gid = Number(execFileSync('id', ['-g', 'mosquitto']).toString());
        chownSync(this.dir, uid, gid);
        for (const f of readdirSync(this.dir)) chownSync(join(this.dir, f), uid, gid);
      }
    }
    this.proc = spawn('mosquitto', ['-c', join(this.dir, 'mosquitto.conf')], { stdio: 'ignore' });
    await this.waitListening();
  }

  /** SIGSTOP: the broker keeps its sockets open and answers nothing (a stalled broker). */
  pause(): void {
    if (this.running) this.proc!.kill('SIGSTOP');
  }

  resume(): void {
    if (this.running) this.proc!.kill('SIGCONT');
  }

  /** Started and not exited (a process killed by a signal has a signalCode, not an exitCode). */
  private get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** SIGKILL: no clean shutdown, no goodbye to clients. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || !this.running) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (p && this.running) {
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async waitListening(): Promise<void> {
    const end = Date.now() + 5000;
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => {
        const s = createConnection({ host: '127.0.0.1', port: this.port }, () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      if (ok) return;
      if (this.proc?.exitCode !== null && this.proc?.exitCode !== undefined) throw new Error(`mosquitto exited with ${this.proc.exitCode}`);
      if (Date.now() > end) throw new Error('mosquitto did not listen');
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
