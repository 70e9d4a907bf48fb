/**
 * The one gate to a speaker's optional parts (src/drivers/capabilities.ts): the core reaches
 * mute, snapshot/restore and overlays only through what a speaker declares, and a driver whose
 * declarations and methods disagree is named when its speaker is added.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { capabilityProblems, isMuted, mixesOverlays, muteOf, snapshotsOf } from '../../src/drivers/capabilities';
import { BaseSpeaker } from '../../src/drivers/base-speaker';
import type { DriverEvents, SpeakerCapabilities, SpeakerDriver } from '../../src/drivers/driver';
import { SpeakerRegistry } from '../../src/core/speaker-registry';
import { HubEventBus } from '../../src/core/events';
import { createLogger } from '../../src/logger';

class Plain extends BaseSpeaker {
  capabilities?: SpeakerCapabilities;
  constructor(id: string, caps?: SpeakerCapabilities) {
    super(id, 'test', {
      name: id,
      groupName: '',
      groupId: '1',
      modelName: '',
      version: '',
      role: 21,
      macAddress: '',
      ipAddress: '',
      port: 0,
      wifiSignalStrength: 0,
    });
    this.capabilities = caps;
  }
  async play(): Promise<void> {}
  async pause(): Promise<void> {}
  async resume(): Promise<void> {}
  async stop(): Promise<void> {}
  position(): number | undefined {
    return undefined;
  }
  async setVolume(): Promise<void> {}
}

class Muting extends Plain {
  muted = true;
  isMuted(): boolean {
    return this.muted;
  }
  async setMute(m: boolean): Promise<void> {
    this.muted = m;
  }
}

const caps = (c: Partial<SpeakerCapabilities>): SpeakerCapabilities => ({ mute: false, snapshot: false, seek: false, syncGroup: false, ...c });

class Driver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'test';
  constructor(private readonly list: Plain[]) {
    super();
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  speakers(): Plain[] {
    return this.list;
  }
}

describe('the capability gate', () => {
  test('a declared capability without its methods is a named problem and reads as absent', () => {
    const s = new Plain('1', caps({ mute: true, snapshot: true, duck: true }));
    const problems = capabilityProblems(s, new Driver([s]));
    expect(problems).toHaveLength(3);
    expect(problems.join('\n')).toMatch(/capabilities\.mute but lacks speaker\.isMuted\(\), speaker\.setMute\(\)/);
    expect(problems.join('\n')).toMatch(/capabilities\.duck but lacks driver\.overlay\(\)/);
    expect(muteOf(s)).toBeUndefined();
    expect(snapshotsOf(s)).toBeUndefined();
    expect(mixesOverlays(s, new Driver([s]))).toBe(false);
  });

  test('methods a speaker has but does not declare are never called', () => {
    const s = new Muting('2', caps({}));
    expect(capabilityProblems(s)).toEqual([
      expect.stringMatching(/has speaker\.isMuted\(\), speaker\.setMute\(\) but does not declare capabilities\.mute/),
    ]);
    expect(muteOf(s)).toBeUndefined();
    expect(isMuted(s)).toBe(false);
    const declared = new Muting('3', caps({ mute: true }));
    expect(capabilityProblems(declared)).toEqual([]);
    expect(isMuted(declared)).toBe(true);
  });

  test('the registry names a driver whose speakers disagree with their declarations, and the hub still takes the speaker', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', stream: new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }) });
    const registry = new SpeakerRegistry(new HubEventBus(), logger);
    registry.attachDriver(new Driver([new Plain('4', caps({ mute: true })), new Muting('5', caps({ mute: true }))]));
    expect(registry.size).toBe(2);
    const bugs = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'driver bug: capabilities and methods disagree');
    expect(bugs.map((b) => b.deviceId)).toEqual(['4']);
  });
});
