import { clampVolume } from '../../core/volume-range';
import type { SpeakerSnapshot } from '../driver';
import { fetchVolumeRange, type RendererDescription } from '../../protocols/upnp/description-parse';
import type { RendererControl } from './renderer-control';
import { SoapFault } from '../../protocols/upnp/soap-client';
import { VolumeScale } from './volume';

/**
 * A renderer's volume and mute (RenderingControl): the hub's 0–50 level mapped onto the range
 * its SCPD declares, kept in step with what the renderer reports (GENA LastChange and reads).
 * The hub's volume of a muted renderer is 0. `onChange` hears every change of that volume
 * after the first reading.
 */
export class RendererVolume {
  private level = 0;
  private known = false;
  /** The last volume we set, so the renderer's echo of it reads back as what was asked. */
  private lastSet?: { hub: number; raw: number };
  private muted = false;
  private scale = new VolumeScale();

  constructor(
    private readonly control: RendererControl,
    private readonly onChange: (volume: number) => void,
  ) {}

  /** 0–50 as the hub reports it: 0 while muted. */
  get hub(): number {
    return this.muted ? 0 : this.level;
  }

  get isMuted(): boolean {
    return this.muted;
  }

  /** On (re)connect: the renderer's range from its SCPD, and its current level. */
  async attach(description: RendererDescription): Promise<void> {
    if (!description.renderingControl) return;
    const range = await fetchVolumeRange(description.renderingControl.scpdUrl, this.control.requestOptions());
    if (range) this.scale = new VolumeScale(range);
    const r = await this.control.rc('GetVolume').catch((e) => {
      if (e instanceof SoapFault) return undefined;
      throw e;
    });
    const current = Number(r?.CurrentVolume);
    if (r && Number.isFinite(current)) this.onRendererVolume(current);
  }

  async set(volume: number): Promise<void> {
    const v = clampVolume(volume);
    const target = this.scale.toRenderer(v);
    await this.control.rc('SetVolume', { DesiredVolume: target });
    this.lastSet = { hub: v, raw: target };
    // A volume above 0 is meant to be heard: lift a mute set elsewhere (the hub's own mute is volume 0).
    if (this.muted && v > 0) {
      await this.control.rc('SetMute', { DesiredMute: 0 }).catch((e) => {
        if (!(e instanceof SoapFault)) throw e;
      });
      this.muted = false;
    }
    this.apply(v);
  }

  async setMute(muted: boolean): Promise<void> {
    await this.control.rc('SetMute', { DesiredMute: muted ? 1 : 0 });
    this.applyMute(muted);
  }

  /** RenderingControl's LastChange variables. */
  onEvent(vars: Record<string, string>): void {
    if (vars.Mute !== undefined) this.applyMute(vars.Mute === '1' || vars.Mute.toLowerCase() === 'true');
    if (vars.Volume !== undefined && Number.isFinite(Number(vars.Volume))) this.onRendererVolume(Number(vars.Volume));
  }

  /** The renderer's own level and mute, read now (for a snapshot); undefined parts it would not say. */
  async read(): Promise<{ raw?: number; muted: boolean; volume: number }> {
    let raw: number | undefined;
    let muted = this.muted;
    if (this.control.hasRenderingControl) {
      // Both at once: a snapshot before an announcement waits for them.
      const [v, m] = await Promise.all([this.control.rc('GetVolume').catch(() => undefined), this.control.rc('GetMute').catch(() => undefined)]);
      if (v && v.CurrentVolume !== undefined && Number.isFinite(Number(v.CurrentVolume))) raw = Number(v.CurrentVolume);
      if (m?.CurrentMute !== undefined) muted = m.CurrentMute === '1' || m.CurrentMute.toLowerCase() === 'true';
    }
    return { raw, muted, volume: raw !== undefined ? this.scale.toHub(raw) : this.level };
  }

  /** Puts a snapshot's level back exactly (the renderer's own raw level, no rounding through 0–50), and its mute. */
  async restore(snap: SpeakerSnapshot): Promise<void> {
    if (!this.control.hasRenderingControl) return;
    const raw = (snap.driver as { rawVolume?: number } | undefined)?.rawVolume ?? this.scale.toRenderer(snap.volume);
    await this.control.rc('SetVolume', { DesiredVolume: raw });
    this.lastSet = { hub: snap.volume, raw };
    await this.control.rc('SetMute', { DesiredMute: snap.muted ? 1 : 0 }).catch((e) => {
      if (!(e instanceof SoapFault)) throw e;
    });
    this.muted = !!snap.muted;
    this.apply(snap.volume);
  }

  private onRendererVolume(raw: number): void {
    this.apply(this.lastSet?.raw === raw ? this.lastSet.hub : this.scale.toHub(raw));
  }

  private applyMute(muted: boolean): void {
    if (muted === this.muted) return;
    const before = this.hub;
    this.muted = muted;
    if (this.hub !== before) this.onChange(this.hub);
  }

  private apply(v: number): void {
    const before = this.hub;
    this.level = v;
    const first = !this.known;
    this.known = true;
    if (!first && this.hub !== before) this.onChange(this.hub);
  }
}
