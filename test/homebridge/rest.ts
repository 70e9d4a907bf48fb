import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeWav } from '../../src/audio/wav';

/** A minimal REST caller for the hub the test talks to (embedded in Homebridge or in this process). */
export class Rest {
  private session?: string;
  constructor(
    readonly base: string,
    private readonly token: string,
  ) {}

  async op(name: string, params: Record<string, string> = {}): Promise<any> {
    this.session ??= (await this.raw('init_session', {})).SessionToken;
    const body = await this.raw(name, { SessionToken: this.session!, ...params });
    if (body.ErrorCode !== 'SessionNotFound') return body;
    this.session = (await this.raw('init_session', {})).SessionToken; // the hub restarted
    return this.raw(name, { SessionToken: this.session!, ...params });
  }

  private async raw(name: string, params: Record<string, string>): Promise<any> {
    const res = await fetch(`${this.base}/api/v1/${name}?${new URLSearchParams(params)}`, { headers: { Authorization: `Bearer ${this.token}` } });
    return res.json();
  }

  async devices(): Promise<{ DeviceID: string; DeviceName: string; IsPlaying: boolean; Volume: number; Active: boolean }[]> {
    return (await this.op('device_list')).DeviceList;
  }

  async idOf(name: string): Promise<string> {
    const d = (await this.devices()).find((x) => x.DeviceName === name);
    if (!d) throw new Error(`no speaker named ${name}`);
    return d.DeviceID;
  }
}

/** A folder with one 5-minute WAV (silence), so a playback outlives any test step. */
export async function longMediaFolder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'speakerhub-hb-media-'));
  const rate = 4000;
  await writeFile(
    join(dir, 'long-tone.wav'),
    encodeWav(new Int16Array(rate * 300), rate, { title: 'Long Test Tone', artist: 'Test', album: 'Test' }),
  );
  return dir;
}
