/**
 * ffmpeg as the tests' audio workshop and reference meter: files made from its lavfi sources
 * (sines, noise, silence) and loudness read back by its ebur128 filter, so that what the hub
 * computes in process is checked against a well-known implementation, not against itself.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface LavfiOutput {
  /** Output sample rate (-ar); ffmpeg's default: the source's. */
  rate?: number;
  /** Output channels (-ac). */
  channels?: number;
  /** An audio filter chain (-af), e.g. volume=0.8. */
  filter?: string;
  /** 16-bit PCM (-c:a pcm_s16le), whatever ffmpeg would pick for the file's extension. */
  pcm16?: boolean;
}

/** Writes `file` (its extension picks the container: .wav, .mp3 …) from a lavfi source such as `sine=frequency=1000:duration=5`. */
export async function lavfiFile(file: string, source: string, out: LavfiOutput = {}): Promise<string> {
  const args = ['-v', 'error', '-y', '-f', 'lavfi', '-i', source];
  if (out.filter) args.push('-af', out.filter);
  if (out.rate) args.push('-ar', String(out.rate));
  if (out.channels) args.push('-ac', String(out.channels));
  if (out.pcm16) args.push('-c:a', 'pcm_s16le');
  await run('ffmpeg', [...args, file]);
  return file;
}

/** ffmpeg's ebur128 summary of a file: integrated loudness (-Infinity when it reports -70, i.e. gated) and true peak (dBFS). */
export async function ffmpegLoudness(file: string): Promise<{ integrated: number; truePeak: number }> {
  const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostats', '-i', file, '-af', 'ebur128=peak=true', '-f', 'null', '-']);
  const summary = stderr.slice(stderr.lastIndexOf('Summary:'));
  const integrated = Number(/I:\s+(-?[\d.]+|-inf) LUFS/.exec(summary)![1]);
  const peak = Number(/Peak:\s+(-?[\d.]+|-inf) dBFS/.exec(summary)![1]);
  return { integrated: integrated <= -70 ? -Infinity : integrated, truePeak: peak };
}
