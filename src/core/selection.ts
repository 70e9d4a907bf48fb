import { HubError } from './errors';
import type { HubEventBus } from './events';
import type { SpeakerRegistry } from './speaker-registry';

/**
 * The playback session: the speakers selected for session-target plays. It is hub-wide
 * (the original hub had one), empty at start, and independent of SessionTokens.
 */
export class Selection {
  private readonly ids = new Set<string>();

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly events: HubEventBus,
  ) {}

  list(): string[] {
    return [...this.ids];
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(id: string): void {
    const speaker = this.registry.get(id);
    if (!speaker.available) throw new HubError('DeviceUnavailable', `Speaker ${id} is not available.`, { parameter: 'DeviceID' });
    if (this.ids.has(id)) return;
    this.ids.add(id);
    this.changed();
  }

  remove(id: string): void {
    this.registry.get(id);
    if (this.ids.delete(id)) this.changed();
  }

  /** Adds every available speaker; returns the ones that were not selected before. */
  addAll(): string[] {
    const added = this.registry
      .available()
      .map((s) => s.id)
      .filter((id) => !this.ids.has(id));
    for (const id of added) this.ids.add(id);
    if (added.length) this.changed();
    return added;
  }

  private changed(): void {
    this.events.emit('selection', { deviceIds: this.list() });
  }
}
