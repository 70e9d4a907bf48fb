/** The bridge's topic layout under the base topic (zigbee2mqtt's conventions). */
export class Topics {
  constructor(
    readonly base: string,
    readonly haPrefix: string,
  ) {}

  get state(): string {
    return `${this.base}/bridge/state`;
  }
  get info(): string {
    return `${this.base}/bridge/info`;
  }
  get devices(): string {
    return `${this.base}/bridge/devices`;
  }
  get event(): string {
    return `${this.base}/bridge/event`;
  }
  /** The last announcement's outcome (retained): state, reason, speakers. */
  get announcement(): string {
    return `${this.base}/bridge/announcement`;
  }
  /** Every failed MQTT command (not retained): HA's "Command error" event entity of the hub (command-errors.ts). */
  get error(): string {
    return `${this.base}/bridge/error`;
  }
  /** What plays on every available speaker (retained): the "Play on all speakers" select's state. */
  get party(): string {
    return `${this.base}/bridge/party`;
  }
  get requests(): string {
    return `${this.base}/bridge/request/+`;
  }
  request(op: string): string {
    return `${this.base}/bridge/request/${op}`;
  }
  response(op: string): string {
    return `${this.base}/bridge/response/${op}`;
  }
  speaker(name: string): string {
    return `${this.base}/${name}`;
  }
  availability(name: string): string {
    return `${this.base}/${name}/availability`;
  }
  set(name: string): string {
    return `${this.base}/${name}/set`;
  }
  get(name: string): string {
    return `${this.base}/${name}/get`;
  }
  /** Failed commands that named this speaker (not retained): its "Command error" event entity. */
  speakerError(name: string): string {
    return `${this.base}/${name}/error`;
  }
  /** Where a set is answered (beyond zigbee2mqtt, which only logs): ok or the error. */
  setResponse(name: string): string {
    return `${this.base}/${name}/response`;
  }
  get haStatus(): string {
    return `${this.haPrefix}/status`;
  }

  /** What an incoming message on the bridge is, from its topic. */
  classify(topic: string): { kind: 'request'; op: string } | { kind: 'set' | 'get'; speaker: string } | { kind: 'ha-status' } | undefined {
    if (topic === this.haStatus) return { kind: 'ha-status' };
    if (!topic.startsWith(`${this.base}/`)) return undefined;
    const rest = topic.slice(this.base.length + 1).split('/');
    if (rest.length === 3 && rest[0] === 'bridge' && rest[1] === 'request') return { kind: 'request', op: rest[2] };
    if (rest.length === 2 && rest[0] !== 'bridge' && (rest[1] === 'set' || rest[1] === 'get')) return { kind: rest[1], speaker: rest[0] };
    return undefined;
  }

  /** Topics only the hub publishes on (clients of the embedded broker are refused there). */
  isHubTopic(topic: string): boolean {
    if (topic.startsWith(`${this.haPrefix}/`)) return topic.includes('/speakerhub_');
    if (!topic.startsWith(`${this.base}/`)) return false;
    const c = this.classify(topic);
    return !c || c.kind === 'ha-status';
  }
}
