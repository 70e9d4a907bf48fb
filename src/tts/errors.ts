/**
 * Why a local engine could not speak, with a stable code (the service wraps it in a HubError
 * TtsFailed whose `cause` is this, and logs the code).
 */
export type TtsEngineErrorCode =
  /** The program is not installed (or not where tts.<provider>.binaryPath says). */
  | 'TtsEngineMissing'
  /** The program runs but the voice asked for is not installed. */
  | 'TtsVoiceMissing'
  /** The voice is not a name the engine accepts (refused before anything runs). */
  | 'TtsVoiceInvalid'
  /** The program failed, overran its time, wrote too much, or wrote no audio. */
  | 'TtsEngineFailed'
  /** The synthesis was stopped because the hub is stopping. */
  | 'TtsAborted';

export class TtsEngineError extends Error {
  constructor(
    readonly code: TtsEngineErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TtsEngineError';
  }
}
