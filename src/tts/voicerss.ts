import { writeFile } from 'node:fs/promises';
import type { TtsProvider } from './provider';

export type VoiceRssCodec = 'MP3' | 'WAV' | 'AAC' | 'OGG' | 'CAF';

const FORMATS: Record<VoiceRssCodec, { ext: string; contentType: string }> = {
  MP3: { ext: 'mp3', contentType: 'audio/mpeg' },
  WAV: { ext: 'wav', contentType: 'audio/wav' },
  AAC: { ext: 'aac', contentType: 'audio/aac' },
  OGG: { ext: 'ogg', contentType: 'audio/ogg' },
  CAF: { ext: 'caf', contentType: 'audio/x-caf' },
};

export interface VoiceRssOptions {
  /** The application key. Without it synthesize() rejects, so a hub without one still starts. */
  key?: string;
  baseUrl?: string;
  codec?: VoiceRssCodec;
  /** VoiceRSS audio format, e.g. '44khz_16bit_stereo'. */
  format?: string;
  /** The hl used for the voice '' or 'en' (the hub's generic default). Default 'en-us'. */
  language?: string;
  /** Speech rate, -10 … 10. Default 0. */
  rate?: number;
  timeoutMs?: number;
}

const MAX_AUDIO_BYTES = 50 * 1024 * 1024;

/** Why synthesize() fails when no key is configured. */
export const VOICERSS_NO_KEY = 'VoiceRSS needs an application key (tts.voicerss.key)';

/**
 * VoiceRSS (https://www.voicerss.org/api/). A voice is written `hl` or `hl:VoiceName`,
 * e.g. 'en-us' or 'en-us:Linda'.
 */
export class VoiceRssProvider implements TtsProvider {
  readonly name = 'voicerss';
  readonly format: { ext: string; contentType: string };

  private readonly key?: string;
  private readonly baseUrl: string;
  private readonly codec: VoiceRssCodec;
  private readonly audioFormat: string;
  private readonly language: string;
  private readonly rate: number;
  private readonly timeoutMs: number;

  constructor(options: VoiceRssOptions = {}) {
    this.key = options.key || undefined;
    this.baseUrl = options.baseUrl ?? 'https://api.voicerss.org/';
    this.codec = options.codec ?? 'MP3';
    this.format = FORMATS[this.codec];
    this.audioFormat = options.format ?? '44khz_16bit_stereo';
    this.language = options.language ?? 'en-us';
    this.rate = options.rate ?? 0;
    this.timeoutMs = options.timeoutMs ?? 20_000;
  }

  async synthesize(text: string, voice: string, outFile: string): Promise<void> {
    if (!this.key) throw new Error(VOICERSS_NO_KEY);
    const { hl, v } = this.parseVoice(voice);
    const form = new URLSearchParams({ key: this.key, src: text, hl, r: String(this.rate), c: this.codec, f: this.audioFormat });
    if (v) form.set('v', v);

    // POST keeps the key and the text out of URLs, and so out of proxy and server logs.
    const response = await fetch(this.baseUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      signal: AbortSignal.timeout(this.timeoutMs),
    }).catch((e: unknown) => {
      throw new Error(`VoiceRSS unreachable: ${describeFetchError(e)}`);
    });

    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > MAX_AUDIO_BYTES) throw new Error(`VoiceRSS announced ${declared} bytes; refusing more than ${MAX_AUDIO_BYTES}`);
    const body = Buffer.from(
      await response.arrayBuffer().catch((e: unknown) => {
        throw new Error(`VoiceRSS answer broke off: ${describeFetchError(e)}`);
      }),
    );
    if (!response.ok) throw new Error(`VoiceRSS answered HTTP ${response.status}${textSnippet(body)}`);
    // VoiceRSS reports every failure as HTTP 200 with a text body 'ERROR: …'.
    const contentType = response.headers.get('content-type') ?? '';
    const head = body.subarray(0, 6).toString('latin1');
    if (contentType.startsWith('text/') || head.toUpperCase() === 'ERROR:') {
      throw new Error(body.subarray(0, 500).toString('utf8').trim() || 'VoiceRSS answered text instead of audio');
    }
    if (body.length === 0) throw new Error('VoiceRSS answered no audio');
    await writeFile(outFile, body);
  }

  private parseVoice(voice: string): { hl: string; v?: string } {
    const [lang = '', name = ''] = voice.split(':', 2).map((s) => s.trim());
    // 'en' is the hub-wide default voice; VoiceRSS wants a region ('en-us', 'en-gb').
    const hl = !lang || lang.toLowerCase() === 'en' ? this.language : lang.toLowerCase();
    return name ? { hl, v: name } : { hl };
  }
}

/** fetch() says only 'fetch failed'; the reason (ECONNREFUSED, certificate, DNS) is in its cause. */
function describeFetchError(e: unknown): string {
  // Duck-typed: errors from undici can come from another realm (jest), failing instanceof Error.
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } } | undefined;
  if (err?.name === 'TimeoutError') return 'no answer in time';
  const message = err?.message ?? String(e);
  const cause = err?.cause?.code ?? err?.cause?.message;
  return cause ? `${message} (${cause})` : message;
}

function textSnippet(body: Buffer): string {
  const text = body.subarray(0, 200).toString('utf8').trim();
  return text ? `: ${text}` : '';
}
